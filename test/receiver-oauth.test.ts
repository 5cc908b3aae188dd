/**
 * The receiver's token endpoint as receivers run it (issue 31), both sides asserted with jose:
 * spec 4.3's default request unchanged byte for byte; client_secret_basic with the id and secret
 * form-urlencoded (RFC 6749 2.3.1); private_key_jwt assertions (RFC 7523) that verify with the
 * JWKS keyway publishes, across a key rotation; scope, resource and audience in the request;
 * DPoP-bound tokens (RFC 9449): a proof with the token request, a nonce challenge answered once
 * at the token endpoint and at the webhook URL, the webhook sent as `DPoP <token>` with a proof
 * whose `ath`, `htu` and key match; and the connection test's answers (a token, a 401
 * invalid_client, a refused connection, a timeout, the SSRF guard on a redirect).
 */
import { env } from "cloudflare:workers";
import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, type JWK, jwtVerify } from "jose";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { base64UrlEncode, encodeUtf8 } from "../src/lib/encoding";
import type { ConnectionTestView, WebhookConfigurationView } from "../src/schemas/webhooks";
import { fakeNetwork, json, never, type Sent, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { BASE, body, call, callAt, createTenant, issueToken, type Tenant } from "./helpers";
import { api, attemptNow, createConfig, inEndpoint, inWebhooks, webhooksOf } from "./webhook-helpers";

let t: Tenant;
let token: string;

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  t = await createTenant();
  token = await issueToken(t);
});

const tokenOk =
  (type = "Bearer") =>
  () =>
    json({ access_token: `at-${type}`, token_type: type, expires_in: 300 });
const form = (s: Sent) => new URLSearchParams(s.body);
const tokenRequests = (sent: Sent[]) => sent.filter((s) => s.url === TOKEN_URL);
const webhooks = (sent: Sent[]) => sent.filter((s) => s.url === WEBHOOK_URL);

async function deliver(configId: string): Promise<void> {
  const res = await api(t, token, `/v1/webhook-configurations/${configId}/test`, "POST");
  const id = (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]?.id ?? "";
  await attemptNow(t, token, id);
}

async function view(configId: string): Promise<WebhookConfigurationView> {
  return (await body<WebhookConfigurationView>(await api(t, token, `/v1/webhook-configurations/${configId}`))).data;
}

async function jwks(orgId: string, configId?: string): Promise<{ keys: JWK[] }> {
  const res = await call(configId === undefined ? `/v1/receiver-jwks/${orgId}` : `/v1/receiver-jwks/${orgId}/${configId}`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/jwk-set+json");
  return (await res.json()) as { keys: JWK[] };
}

describe("the token request", () => {
  it("is spec 4.3's form, byte for byte, when no method is chosen", async () => {
    const sent = fakeNetwork({ [TOKEN_URL]: tokenOk(), [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const config = await createConfig(t, token, "plain secret+/=");
    await deliver(config.id);
    const [request] = tokenRequests(sent);
    expect(request?.body).toBe("client_id=keyway-at-receiver&client_secret=plain+secret%2B%2F%3D&grant_type=client_credentials");
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.headers.dpop).toBeUndefined();
    expect(webhooks(sent)[0]?.headers.authorization).toBe("Bearer at-Bearer");
    expect((await view(config.id)).oauth).toMatchObject({ auth_method: "client_secret_post", dpop: false, jwks_uri: null });
  });

  it("client_secret_basic: the id and secret form-urlencoded, then base64 (RFC 6749 2.3.1); scope, resource and audience in the form", async () => {
    const sent = fakeNetwork({ [TOKEN_URL]: tokenOk(), [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const config = await createConfig(t, token, "s3cr:t+ /é", {
      oauth: {
        token_url: TOKEN_URL,
        client_id: "id with:colon",
        client_secret: "s3cr:t+ /é",
        auth_method: "client_secret_basic",
        scope: "webhooks:receive orders.read",
        resource: ["https://api.receiver.example/", "https://other.receiver.example/"],
        audience: "https://receiver.example/api",
      },
    });
    await deliver(config.id);
    const [request] = tokenRequests(sent);
    const basic = atob((request?.headers.authorization ?? "").replace(/^Basic /, ""));
    expect(basic).toBe("id+with%3Acolon:s3cr%3At%2B+%2F%C3%A9");
    const f = form(request as Sent);
    expect([...f.keys()]).toEqual(["grant_type", "scope", "resource", "resource", "audience"]);
    expect(f.get("scope")).toBe("webhooks:receive orders.read");
    expect(f.getAll("resource")).toEqual(["https://api.receiver.example/", "https://other.receiver.example/"]);
    expect(f.get("audience")).toBe("https://receiver.example/api");
    expect(f.has("client_secret")).toBe(false);
  });

  it("private_key_jwt: an assertion that verifies with the configuration's own published keys, before and after a rotation", async () => {
    const sent = fakeNetwork({ [TOKEN_URL]: tokenOk(), [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const res = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: WEBHOOK_URL,
      oauth: { token_url: TOKEN_URL, client_id: "keyway-jwt", auth_method: "private_key_jwt" },
    });
    const config = (await body<WebhookConfigurationView & { signing_secret: string }>(res)).data;
    expect(res.status).toBe(201);
    expect(config.oauth).toMatchObject({ auth_method: "private_key_jwt", jwks_uri: `${BASE}/v1/receiver-jwks/${t.orgId}/${config.id}` });
    await deliver(config.id);
    const verify = async (s: Sent, keys: { keys: JWK[] }) => {
      const f = form(s);
      expect(f.get("client_assertion_type")).toBe("urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
      expect(f.has("client_secret")).toBe(false);
      const assertion = f.get("client_assertion") ?? "";
      const { payload, protectedHeader } = await jwtVerify(assertion, createLocalJWKSet(keys), {
        issuer: "keyway-jwt",
        subject: "keyway-jwt",
        audience: TOKEN_URL,
        algorithms: ["ES256"],
      });
      expect(payload.jti).toEqual(expect.any(String));
      expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeLessThanOrEqual(60);
      return protectedHeader.kid;
    };
    const before = await jwks(t.orgId, config.id);
    const firstKid = await verify(tokenRequests(sent)[0] as Sent, before);

    const rotated = await body<{ kid: string; activates_at: string; previous_kid: string }>(
      await api(t, token, `/v1/webhook-configurations/${config.id}/rotate-assertion-key`, "POST"),
    );
    expect(rotated.data.previous_kid).toBe(firstKid);
    expect(Date.parse(rotated.data.activates_at) - Date.now()).toBeGreaterThan(9 * 60_000);
    // Published at once, both of them; the old key still signs until the new one's activation.
    const after = await jwks(t.orgId, config.id);
    expect(after.keys.map((k) => k.kid).sort()).toEqual([rotated.data.kid, firstKid].sort());
    await deliver(config.id);
    expect(await verify(tokenRequests(sent)[1] as Sent, after)).toBe(firstKid);
    // Its time comes (moved here to now, in the endpoint's copy only): the endpoint switches by itself, with no new copy.
    await inEndpoint(
      config.id,
      "UPDATE endpoint SET config = json_set(config, '$.oauth.next_assertion_key.activates_ms', ?)",
      Date.now() - 1,
    );
    await deliver(config.id);
    expect(await verify(tokenRequests(sent)[2] as Sent, after)).toBe(rotated.data.kid);
    // Never a private key in the published set.
    for (const key of after.keys) expect(key.d).toBeUndefined();
    // A secret is refused with private_key_jwt, and another method needs one.
    const refused = await api(t, token, `/v1/webhook-configurations/${config.id}`, "PATCH", {
      oauth: { auth_method: "client_secret_basic" },
    });
    expect(refused.status).toBe(400);
    expect((await body(refused)).developer_message).toContain("client_secret");
  });
});

describe("keys per configuration (issue 42, finding 1: the confused deputy)", () => {
  const OTHER_TOKEN_URL = "https://other-receiver.example/oauth/token";
  const assertionOf = (s: Sent) => form(s).get("client_assertion") ?? "";
  const lastTo = (sent: Sent[], url: string) => sent.filter((x) => x.url === url).at(-1) as Sent;
  const jwtConfig = async (clientId: string, tokenUrl: string) => {
    const res = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: WEBHOOK_URL,
      oauth: { token_url: tokenUrl, client_id: clientId, auth_method: "private_key_jwt" },
    });
    expect(res.status).toBe(201);
    return (await body<WebhookConfigurationView>(res)).data;
  };

  it("an assertion for one configuration never verifies with another's key set, whatever its client id and audience are changed to", async () => {
    const sent = fakeNetwork({
      [TOKEN_URL]: tokenOk(),
      [OTHER_TOKEN_URL]: tokenOk(),
      [WEBHOOK_URL]: () => new Response(null, { status: 204 }),
    });
    const a = await jwtConfig("client-a", TOKEN_URL);
    const b = await jwtConfig("client-b", OTHER_TOKEN_URL);
    const [keysA, keysB] = await Promise.all([jwks(t.orgId, a.id), jwks(t.orgId, b.id)]);
    expect(keysA.keys.map((k) => k.kid)).not.toEqual(expect.arrayContaining(keysB.keys.map((k) => k.kid)));
    await deliver(b.id);
    // B's server (which registered B's jwks_uri) accepts B's assertion.
    await jwtVerify(assertionOf(lastTo(sent, OTHER_TOKEN_URL)), createLocalJWKSet(keysB), {
      issuer: "client-b",
      audience: OTHER_TOKEN_URL,
    });

    // A is pointed at B's server with B's client id (as the finding's portal user did, here with webhooks:write).
    const moved = await api(t, token, `/v1/webhook-configurations/${a.id}`, "PATCH", {
      oauth: { token_url: OTHER_TOKEN_URL, client_id: "client-b" },
    });
    expect(moved.status).toBe(200);
    await deliver(a.id);
    const forged = assertionOf(lastTo(sent, OTHER_TOKEN_URL));
    expect(decodeProtectedHeader(forged).kid).toBe(keysA.keys[0]?.kid);
    // It names client-b, but B's server holds only B's keys: refused.
    await expect(jwtVerify(forged, createLocalJWKSet(keysB), { issuer: "client-b", audience: OTHER_TOKEN_URL })).rejects.toThrow();
    // The second form: A's own token URL, the assertion's audience set to B's server.
    await api(t, token, `/v1/webhook-configurations/${a.id}`, "PATCH", {
      oauth: { token_url: TOKEN_URL, client_id: "client-b", assertion_audience: OTHER_TOKEN_URL },
    });
    await deliver(a.id);
    const captured = assertionOf(lastTo(sent, TOKEN_URL));
    await expect(jwtVerify(captured, createLocalJWKSet(keysB), { issuer: "client-b", audience: OTHER_TOKEN_URL })).rejects.toThrow();
    // The organization's key set of issue 31 holds none of these keys.
    const org = await call(`/v1/receiver-jwks/${t.orgId}`);
    const orgKids = org.status === 200 ? ((await org.json()) as { keys: JWK[] }).keys.map((k) => k.kid) : [];
    for (const k of [...keysA.keys, ...keysB.keys]) expect(orgKids).not.toContain(k.kid);
  });

  /**
   * A configuration as migration 7 leaves one of issue 31: the organization's key signs for it (made
   * here by the organization-wide rotation, its activation brought to now), its own key not made
   * yet, marked `organization_key`; its endpoint's copy pushed.
   */
  async function legacyConfig(clientId: string) {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const create = await api(tenant, bearer, "/v1/webhook-configurations", "POST", {
      url: WEBHOOK_URL,
      oauth: { token_url: TOKEN_URL, client_id: clientId, auth_method: "private_key_jwt" },
    });
    const config = (await body<WebhookConfigurationView>(create)).data;
    const orgKid = (await body<{ kid: string }>(await api(tenant, bearer, "/v1/webhook-settings/rotate-assertion-key", "POST"))).data.kid;
    await inWebhooks(tenant.orgId, "UPDATE assertion_keys SET activates_ms = ? WHERE config_id IS NULL", Date.now() - 1);
    await inWebhooks(tenant.orgId, "DELETE FROM assertion_keys WHERE config_id = ?", config.id);
    await inWebhooks(
      tenant.orgId,
      "UPDATE configurations SET receiver_auth = json_set(receiver_auth, '$.organization_key', json('true')), version = version + 1 WHERE id = ?",
      config.id,
    );
    await api(tenant, bearer, `/v1/webhook-configurations/${config.id}`, "PATCH", { description: "push the copy" });
    return { tenant, bearer, config, orgKid };
  }

  it("the move: a configuration on the organization's key keeps signing with it, lists it at its own URL, and moves on rotation without a gap", async () => {
    const sent = fakeNetwork({ [TOKEN_URL]: tokenOk(), [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const { tenant, bearer, config, orgKid } = await legacyConfig("legacy-jwt");
    const deliverTo = async () => {
      const res = await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/test`, "POST");
      await attemptNow(tenant, bearer, (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]?.id ?? "");
      return assertionOf(tokenRequests(sent).at(-1) as Sent);
    };
    // Before the move: the organization's key signs, and the configuration's URL already lists it,
    // so its receiver can register that URL first.
    const before = await deliverTo();
    expect(decodeProtectedHeader(before).kid).toBe(orgKid);
    const ownUrl = await jwks(tenant.orgId, config.id);
    expect(ownUrl.keys.map((k) => k.kid)).toEqual([orgKid]);
    await jwtVerify(before, createLocalJWKSet(ownUrl), { issuer: "legacy-jwt" });

    // The operator rotates: the move. Published at once at the configuration's URL, beside the
    // organization's key, which keeps signing until the new one's activation.
    const moved = await body<{ kid: string; previous_kid: string }>(
      await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/rotate-assertion-key`, "POST"),
    );
    expect(moved.data.previous_kid).toBe(orgKid);
    const during = await jwks(tenant.orgId, config.id);
    expect(during.keys.map((k) => k.kid).sort()).toEqual([moved.data.kid, orgKid].sort());
    expect(decodeProtectedHeader(await deliverTo()).kid).toBe(orgKid);
    await inEndpoint(
      config.id,
      "UPDATE endpoint SET config = json_set(config, '$.oauth.next_assertion_key.activates_ms', ?)",
      Date.now() - 1,
    );
    const after = await deliverTo();
    expect(decodeProtectedHeader(after).kid).toBe(moved.data.kid);
    await jwtVerify(after, createLocalJWKSet(during), { issuer: "legacy-jwt" });
    // The organization's URL never lists a configuration's key.
    expect((await jwks(tenant.orgId)).keys.map((k) => k.kid)).toEqual([orgKid]);
  });

  const OTHER_TENANT = `${TOKEN_URL}/other-tenant`;
  it.each([
    ["its client id", { client_id: "someone-else" }, "someone-else", TOKEN_URL],
    // One origin may serve several tenants' token endpoints, each trusting the organization's set.
    ["its token URL's path (a receiver may change it from the portal)", { token_url: OTHER_TENANT }, "legacy-a", OTHER_TENANT],
  ] as const)("a configuration on the organization's key moves to its own at once when %s changes", async (_what, change, issuer, to) => {
    const sent = fakeNetwork({
      [TOKEN_URL]: tokenOk(),
      [OTHER_TENANT]: tokenOk(),
      [WEBHOOK_URL]: () => new Response(null, { status: 204 }),
    });
    const { tenant, bearer, config, orgKid } = await legacyConfig("legacy-a");
    expect((await api(tenant, bearer, `/v1/webhook-configurations/${config.id}`, "PATCH", { oauth: change })).status).toBe(200);
    const res = await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/test`, "POST");
    await attemptNow(tenant, bearer, (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]?.id ?? "");
    const assertion = assertionOf(sent.filter((x) => x.url === to).at(-1) as Sent);
    // Signed with a key of its own (published only at its URL), never the organization's.
    expect(decodeProtectedHeader(assertion).kid).not.toBe(orgKid);
    await jwtVerify(assertion, createLocalJWKSet(await jwks(tenant.orgId, config.id)), { issuer });
    await expect(jwtVerify(assertion, createLocalJWKSet(await jwks(tenant.orgId)), { issuer })).rejects.toThrow();
  });

  it("within a move's first 10 minutes, a change of its token URL by its receiver activates its own key at once (the organization's never signs for it)", async () => {
    const sent = fakeNetwork({
      [TOKEN_URL]: tokenOk(),
      [OTHER_TENANT]: tokenOk(),
      [WEBHOOK_URL]: () => new Response(null, { status: 204 }),
    });
    const { tenant, bearer, config, orgKid } = await legacyConfig("legacy-window");
    const moved = await body<{ kid: string }>(
      await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/rotate-assertion-key`, "POST"),
    );
    // The receiver, seeing the new kid at the public URL, points the token URL at another tenant's path.
    const changed = await webhooksOf(tenant.orgId).updateConfiguration(
      config.id,
      { oauth: { token_url: OTHER_TENANT } },
      { type: "receiver", id: "pts_window", webhook_configuration_id: config.id },
      Date.now(),
      undefined,
      "receiver",
    );
    expect(changed.ok).toBe(true);
    const res = await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/test`, "POST");
    await attemptNow(tenant, bearer, (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]?.id ?? "");
    const assertion = assertionOf(sent.filter((x) => x.url === OTHER_TENANT).at(-1) as Sent);
    expect(decodeProtectedHeader(assertion).kid).toBe(moved.data.kid);
    expect(decodeProtectedHeader(assertion).kid).not.toBe(orgKid);
  });

  it("rotating a configuration that does not use private_key_jwt is 409; a deleted configuration's key set is 404", async () => {
    const plain = await createConfig(t, token, "s");
    expect((await api(t, token, `/v1/webhook-configurations/${plain.id}/rotate-assertion-key`, "POST")).status).toBe(409);
    expect((await call(`/v1/receiver-jwks/${t.orgId}/${plain.id}`)).status).toBe(404);
    const jwt = await jwtConfig("to-delete", TOKEN_URL);
    expect((await call(`/v1/receiver-jwks/${t.orgId}/${jwt.id}`)).status).toBe(200);
    await api(t, token, `/v1/webhook-configurations/${jwt.id}`, "DELETE");
    expect((await call(`/v1/receiver-jwks/${t.orgId}/${jwt.id}`)).status).toBe(404);
  });
});

describe("DPoP-bound webhooks (RFC 9449)", () => {
  it("proves the key at the token endpoint and with each webhook, answering each nonce challenge once", async () => {
    let tokenCalls = 0;
    let hookCalls = 0;
    const sent = fakeNetwork({
      [TOKEN_URL]: () =>
        ++tokenCalls === 1
          ? json({ error: "use_dpop_nonce" }, 400, { "DPoP-Nonce": "token-nonce-1" })
          : json({ access_token: "bound-token", token_type: "DPoP", expires_in: 300 }),
      [WEBHOOK_URL]: () =>
        ++hookCalls === 1
          ? new Response(null, {
              status: 401,
              headers: { "WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "hook-nonce-1" },
            })
          : new Response(null, { status: 204 }),
    });
    const config = await createConfig(t, token, "dpop-secret", {
      oauth: { token_url: TOKEN_URL, client_id: "keyway", client_secret: "dpop-secret", dpop: true },
    });
    const jkt = (await view(config.id)).oauth?.dpop_jkt;
    expect(jkt).toEqual(expect.any(String));
    await deliver(config.id);

    const proofOf = async (s: Sent) => {
      const proof = s.headers.dpop ?? "";
      const header = decodeProtectedHeader(proof);
      expect(header.typ).toBe("dpop+jwt");
      const { payload } = await jwtVerify(proof, async () => header.jwk as JWK as never, { typ: "dpop+jwt", algorithms: ["ES256"] });
      expect(await calculateJwkThumbprint(header.jwk as JWK)).toBe(jkt);
      return payload;
    };
    const [first, second] = tokenRequests(sent);
    expect(await proofOf(first as Sent)).toMatchObject({ htm: "POST", htu: TOKEN_URL });
    expect((await proofOf(first as Sent)).nonce).toBeUndefined();
    expect(await proofOf(second as Sent)).toMatchObject({ htm: "POST", htu: TOKEN_URL, nonce: "token-nonce-1" });

    const [hook1, hook2] = webhooks(sent);
    expect(hook2?.headers.authorization).toBe("DPoP bound-token");
    const ath = base64UrlEncode(new Uint8Array(await crypto.subtle.digest("SHA-256", encodeUtf8("bound-token"))));
    expect(await proofOf(hook1 as Sent)).toMatchObject({ htm: "POST", htu: WEBHOOK_URL, ath });
    expect(await proofOf(hook2 as Sent)).toMatchObject({ htm: "POST", htu: WEBHOOK_URL, ath, nonce: "hook-nonce-1" });
    expect(webhooks(sent)).toHaveLength(2);
  });

  it("keeps working with the shared token: one DPoP-bound token, a fresh proof per webhook, a new token after a 401", async () => {
    let tokens = 0;
    let refuse = false;
    const sent = fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: `shared-${++tokens}`, token_type: "DPoP", expires_in: 3600 }),
      [WEBHOOK_URL]: () => {
        const status = refuse ? 401 : 204;
        refuse = false;
        return new Response(null, { status });
      },
    });
    const config = await createConfig(t, token, "s", {
      token_cache: true,
      oauth: { token_url: TOKEN_URL, client_id: "k", client_secret: "s", dpop: true },
    });
    await deliver(config.id);
    await deliver(config.id);
    expect(tokenRequests(sent)).toHaveLength(1);
    const [a, b] = webhooks(sent);
    expect([a?.headers.authorization, b?.headers.authorization]).toEqual(["DPoP shared-1", "DPoP shared-1"]);
    const jti = (s: Sent) => (JSON.parse(atob((s.headers.dpop ?? "").split(".")[1] ?? "")) as { jti: string }).jti;
    expect(jti(a as Sent)).not.toBe(jti(b as Sent));
    // The receiver refuses the shared token: it is dropped, a new one fetched (with its own proof), the webhook sent again.
    refuse = true;
    await deliver(config.id);
    expect(tokenRequests(sent)).toHaveLength(2);
    expect(webhooks(sent).at(-1)?.headers.authorization).toBe("DPoP shared-2");
  });

  it("refuses a Bearer token when DPoP was asked for, in words", async () => {
    fakeNetwork({ [TOKEN_URL]: tokenOk("Bearer"), [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const config = await createConfig(t, token, "s", { oauth: { token_url: TOKEN_URL, client_id: "k", client_secret: "s", dpop: true } });
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/test-connection`, "POST");
    const answer = (await body<ConnectionTestView>(res)).data;
    expect(answer).toMatchObject({ ok: false, dpop: true, http_status: 200 });
    expect(answer.message).toContain("not a DPoP-bound one");
  });
});

describe("the shared token and the webhook's origin", () => {
  // A receiver token is minted for the resource it is sent to (RFC 8707 2; RFC 6750 5.2: a bearer
  // token is sent only to the resource it was issued for): one kept for the webhook's old origin
  // must not be sent to a new one, whatever the method that obtained it.
  const OTHER = "https://elsewhere.example/hooks";
  for (const [method, oauth] of [
    ["client_secret_post", { token_url: TOKEN_URL, client_id: "k", client_secret: "s" }],
    ["private_key_jwt", { token_url: TOKEN_URL, client_id: "keyway-jwt", auth_method: "private_key_jwt" }],
  ] as const) {
    it(`${method}: a new origin gets a new token, a new path on the same origin keeps it`, async () => {
      let minted = 0;
      const sent = fakeNetwork({
        [TOKEN_URL]: () => json({ access_token: `tok-${++minted}`, token_type: "Bearer", expires_in: 3600 }),
        [WEBHOOK_URL]: () => new Response(null, { status: 204 }),
        [`${WEBHOOK_URL}/v2`]: () => new Response(null, { status: 204 }),
        [OTHER]: () => new Response(null, { status: 204 }),
      });
      const res = await api(t, token, "/v1/webhook-configurations", "POST", { url: WEBHOOK_URL, token_cache: true, oauth });
      expect(res.status).toBe(201);
      const config = (await body<WebhookConfigurationView>(res)).data;
      await deliver(config.id);
      await deliver(config.id);
      expect(tokenRequests(sent)).toHaveLength(1);
      // Another path at the same origin is the same resource server: the token is kept.
      expect((await api(t, token, `/v1/webhook-configurations/${config.id}`, "PATCH", { url: `${WEBHOOK_URL}/v2` })).status).toBe(200);
      await deliver(config.id);
      expect(tokenRequests(sent)).toHaveLength(1);
      expect(sent.at(-1)).toMatchObject({ url: `${WEBHOOK_URL}/v2`, headers: { authorization: "Bearer tok-1" } });
      // Another origin: the token endpoint is asked again, and tok-1 never reaches it. (A secret
      // method must send its secret again for this move, which reseals it; private_key_jwt sends
      // nothing else, as a receiver moving `url` in the portal does.)
      const move = (url: string) =>
        api(t, token, `/v1/webhook-configurations/${config.id}`, "PATCH", {
          url,
          ...("client_secret" in oauth ? { oauth: { client_secret: oauth.client_secret } } : {}),
        });
      expect((await move(OTHER)).status).toBe(200);
      await deliver(config.id);
      expect(tokenRequests(sent)).toHaveLength(2);
      const there = sent.filter((s) => s.url === OTHER);
      expect(there.map((s) => s.headers.authorization)).toEqual(["Bearer tok-2"]);
      // And back: the token kept for the first origin is not used either (only one is kept).
      expect((await move(WEBHOOK_URL)).status).toBe(200);
      await deliver(config.id);
      expect(tokenRequests(sent)).toHaveLength(3);
      expect(sent.at(-1)).toMatchObject({ url: WEBHOOK_URL, headers: { authorization: "Bearer tok-3" } });
    });
  }
});

describe("the connection test", () => {
  const test = async (configId: string, bindings?: Env) => {
    const init = {
      method: "POST",
      headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${token}` },
    };
    const path = `/v1/webhook-configurations/${configId}/test-connection`;
    const res = bindings === undefined ? await call(path, init) : await callAt(Date.now(), path, init, bindings);
    expect(res.status).toBe(200);
    const text = await res.text();
    return { answer: (JSON.parse(text) as { data: ConnectionTestView }).data, text };
  };

  it("says a token came back, a 401 invalid_client, a refused connection, a timeout and the SSRF guard apart", async () => {
    const config = await createConfig(t, token, "connection-secret");
    fakeNetwork({ [TOKEN_URL]: () => json({ access_token: "the-token-itself", token_type: "Bearer", expires_in: 3600 }) });
    const ok = await test(config.id);
    expect(ok.answer).toMatchObject({ ok: true, outcome: "token_issued", reached: true, token_type: "Bearer", expires_in: 3600 });
    expect(ok.text).not.toContain("the-token-itself");

    fakeNetwork({ [TOKEN_URL]: () => json({ error: "invalid_client", error_description: "secret connection-secret is wrong" }, 401) });
    const refusedClient = await test(config.id);
    expect(refusedClient.answer).toMatchObject({
      ok: false,
      outcome: "http_error",
      http_status: 401,
      error: "invalid_client",
      reached: true,
    });
    expect(refusedClient.text).not.toContain("connection-secret");

    fakeNetwork({}); // nothing listens: the runtime's "Network connection lost."
    expect((await test(config.id)).answer).toMatchObject({ ok: false, outcome: "connection_refused", reached: false, http_status: null });

    fakeNetwork({ [TOKEN_URL]: never });
    const slow = await test(config.id, { ...env, WEBHOOK_TIMEOUT_SECONDS: "1" } as Env);
    expect(slow.answer).toMatchObject({ ok: false, outcome: "timeout", reached: false });

    // A 302 continues as a GET without the credentials, to a private address: the guard refuses the hop.
    fakeNetwork({ [TOKEN_URL]: () => new Response(null, { status: 302, headers: { Location: "https://10.0.0.1/token" } }) });
    const guarded = await test(config.id);
    expect(guarded.answer).toMatchObject({ ok: false, outcome: "refused_by_ssrf_guard" });
    expect(guarded.answer.message).toContain("refused");
  });

  it("is the organization's own: another organization's configuration is not found", async () => {
    const config = await createConfig(t, token, "mine");
    const other = await createTenant();
    const otherToken = await issueToken(other);
    const res = await api(other, otherToken, `/v1/webhook-configurations/${config.id}/test-connection`, "POST");
    expect(res.status).toBe(404);
  });
});
