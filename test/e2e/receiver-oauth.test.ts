/**
 * The receiver's token endpoint as receivers run it (issue 31), against a real `npm start` and
 * node-oidc-provider on 127.0.0.1 as the receiver's OAuth server (test/e2e/oidc-receiver.ts), its
 * webhook receiver verifying each token and DPoP proof with jose:
 * - client_secret_basic: tokens are issued and the webhook arrives with them, `scope` and
 *   `resource` in the token request;
 * - private_key_jwt: node-oidc-provider fetches the configuration's own published keys (issue 42:
 *   its absolute `oauth.jwks_uri`, `/v1/receiver-jwks/{org}/{config_id}`) as the client's jwks_uri;
 *   that URL exists only once the configuration does, so the configuration is made first (its token
 *   URL a placeholder), node-oidc-provider started with its jwks_uri, and the token URL then moved
 *   to node-oidc-provider's token endpoint by the organization;
 * - DPoP: a DPoP-bound token (its `cnf.jkt` the configuration's `dpop_jkt`), each webhook's proof
 *   verified (`htm`, `htu`, `ath`, the key), a `use_dpop_nonce` challenge at the token endpoint
 *   and at the webhook URL each answered once;
 * - spec 4.3's default request, byte for byte;
 * - the connection test: a token, a 401 invalid_client, a refused connection, a timeout, the SSRF guard.
 * It starts its own npm start, not the shared one (server.ts): its attempt deadline is a setting
 * of the server.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OidcReceiver, PRIVATE_KEY_JWT_CLIENT_ID, RECEIVER_CLIENTS, startOidcReceiver } from "./oidc-receiver";
import { type E2eTenant, freePort, type Keyway, sleep, startKeyway, tenantOn } from "./server";

let keyway: Keyway;
let tenant: E2eTenant;
let receiver: OidcReceiver;
/** The private_key_jwt configuration, made before node-oidc-provider (which registers its jwks_uri). */
let jwtView: View;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  // A short deadline, so the connection test's timeout case takes seconds.
  keyway = await startKeyway({ vars: { WEBHOOK_TIMEOUT_SECONDS: "3" } });
  tenant = await tenantOn(keyway, "Receiver OAuth");
  // Issue 42: the client's jwks_uri is the configuration's own, so the configuration comes first,
  // at placeholder URLs (nothing is sent before the test moves them to node-oidc-provider).
  const placeholder = `http://127.0.0.1:${await freePort()}`;
  jwtView = await data<View>(
    await post("/v1/webhook-configurations", {
      url: `${placeholder}/jwt.sent`,
      events: ["jwt.sent"],
      oauth: { token_url: `${placeholder}/token`, client_id: PRIVATE_KEY_JWT_CLIENT_ID, auth_method: "private_key_jwt" },
    }),
  );
  receiver = await startOidcReceiver({ jwksUri: jwtView.oauth.jwks_uri ?? "" });
});

afterAll(async () => {
  await receiver?.close();
  for (const close of closers) await close();
  await keyway?.stop();
});

async function data<T>(res: Response): Promise<T> {
  const body = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

const post = (path: string, body?: unknown) =>
  tenant.api(path, { method: "POST", ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

interface View {
  id: string;
  oauth: { auth_method: string; dpop_jkt: string | null; jwks_uri: string | null };
}

async function configure(type: string, oauth: Record<string, unknown>): Promise<View> {
  return data<View>(await post("/v1/webhook-configurations", { url: `${receiver.webhookUrl}/${type}`, events: [type], oauth }));
}

async function until<T>(read: () => T, done: (v: T) => boolean, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v).slice(0, 400)}`);
    await sleep(100);
  }
}

/** Publishes one event of `type`; waits for its webhook at the receiver; returns it. */
async function deliver(type: string) {
  const event = await data<{ id: string }>(await post("/v1/events", { type, data: { n: 1 } }));
  return until(
    () => receiver.webhooks.find((w) => w.body.includes(event.id) && w.verdict.ok),
    (w) => w !== undefined,
    `the ${type} webhook, verified`,
  );
}

describe("keyway at node-oidc-provider", () => {
  it("client_secret_basic: a token is issued and the webhook arrives with it, scope and resource in the request", async () => {
    const c = RECEIVER_CLIENTS.basic;
    await configure("basic.sent", {
      token_url: receiver.tokenEndpoint,
      client_id: c.client_id,
      client_secret: c.client_secret,
      auth_method: "client_secret_basic",
      scope: "webhooks:write",
      resource: [receiver.defaultResource],
    });
    const hook = await deliver("basic.sent");
    expect(hook.verdict).toMatchObject({ ok: true, scheme: "Bearer" });
    const request = receiver.tokenRequests.find((r) => r.clientId === c.client_id && r.status === 200);
    expect(request).toMatchObject({ authMethod: "client_secret_basic", scope: "webhooks:write", resource: [receiver.defaultResource] });
    expect(request?.rawBody).not.toContain("client_secret");
  });

  it("private_key_jwt: node-oidc-provider fetches the configuration's own keys as the client's jwks_uri and issues the token", async () => {
    // The configuration's own key set, at an absolute URL (issue 42), not the organization's.
    const jwksUri = `${keyway.baseUrl}/v1/receiver-jwks/${tenant.orgId}/${jwtView.id}`;
    expect(jwtView.oauth.jwks_uri).toBe(jwksUri);
    // The organization moves the token URL (and the webhook URL) to the receiver's servers.
    const moved = await data<View>(
      await tenant.api(`/v1/webhook-configurations/${jwtView.id}`, {
        method: "PATCH",
        body: JSON.stringify({ url: `${receiver.webhookUrl}/jwt.sent`, oauth: { token_url: receiver.tokenEndpoint } }),
      }),
    );
    expect(moved.oauth).toMatchObject({ auth_method: "private_key_jwt", jwks_uri: jwksUri });
    const published = (await (await fetch(jwksUri)).json()) as { keys: { kid: string }[] };
    expect(published.keys.length).toBeGreaterThan(0);
    const hook = await deliver("jwt.sent");
    expect(hook.verdict).toMatchObject({ ok: true });
    // node-oidc-provider fetched exactly the URL it registered, and nothing else.
    expect(receiver.jwksFetches.length).toBeGreaterThan(0);
    expect(new Set(receiver.jwksFetches)).toEqual(new Set([jwksUri]));
    const request = receiver.tokenRequests.find((r) => r.clientId === PRIVATE_KEY_JWT_CLIENT_ID && r.status === 200);
    expect(request?.authMethod).toBe("private_key_jwt");
    expect(request?.assertion?.claims).toMatchObject({
      iss: PRIVATE_KEY_JWT_CLIENT_ID,
      sub: PRIVATE_KEY_JWT_CLIENT_ID,
      aud: receiver.tokenEndpoint,
    });
    // Signed with a key of the configuration's own set.
    expect(published.keys.map((k) => k.kid)).toContain(request?.assertion?.header.kid);
  });

  it("DPoP: a bound token, each webhook's proof verified, a nonce challenge answered once at the token endpoint and at the webhook URL", async () => {
    receiver.setRequireDpopNonce(true);
    receiver.setWebhookDpopNonce(true);
    const c = RECEIVER_CLIENTS.dpop;
    const view = await configure("dpop.sent", {
      token_url: receiver.tokenEndpoint,
      client_id: c.client_id,
      client_secret: c.client_secret,
      auth_method: "client_secret_basic",
      dpop: true,
    });
    const hook = await deliver("dpop.sent");
    receiver.setRequireDpopNonce(false);
    receiver.setWebhookDpopNonce(false);
    expect(hook.verdict).toMatchObject({ ok: true, scheme: "DPoP" });
    if (hook.verdict.ok) {
      expect(hook.verdict.claims.cnf?.jkt).toBe(view.oauth.dpop_jkt);
      expect(hook.verdict.proof?.jkt).toBe(view.oauth.dpop_jkt);
      expect(hook.verdict.proof?.htm).toBe("POST");
      expect(hook.verdict.proof?.nonce).toEqual(expect.any(String));
    }
    // At the token endpoint: refused once for want of a nonce, then issued with it.
    const asked = receiver.tokenRequests.filter((r) => r.clientId === c.client_id);
    expect(asked.map((r) => [r.status, r.error, r.dpopNonce !== null])).toEqual([
      [400, "use_dpop_nonce", false],
      [200, null, true],
    ]);
    expect(asked[1]?.tokenType).toBe("DPoP");
    // At the webhook URL: one 401 use_dpop_nonce, then the webhook with the nonce.
    const attempts = receiver.webhooks.filter((w) => w.url.includes("/dpop.sent"));
    expect(attempts.map((w) => w.answered.status)).toEqual([401, 204]);
  });

  it("spec 4.3's default request is unchanged, byte for byte", async () => {
    const c = RECEIVER_CLIENTS.post;
    await configure("post.sent", { token_url: receiver.tokenEndpoint, client_id: c.client_id, client_secret: c.client_secret });
    await deliver("post.sent");
    const request = receiver.tokenRequests.find((r) => r.clientId === c.client_id && r.status === 200);
    expect(request?.rawBody).toBe(
      new URLSearchParams({ client_id: c.client_id, client_secret: c.client_secret, grant_type: "client_credentials" }).toString(),
    );
    expect(request?.authorization).toBeNull();
    expect(request?.contentType).toContain("application/x-www-form-urlencoded");
  });
});

describe("the connection test against npm start", () => {
  async function testConnection(oauth: Record<string, unknown>) {
    const view = await configure(`probe.${Math.random().toString(36).slice(2, 8)}`, oauth);
    return data<{
      ok: boolean;
      outcome: string;
      http_status: number | null;
      error: string | null;
      token_type: string | null;
      message: string;
    }>(await post(`/v1/webhook-configurations/${view.id}/test-connection`));
  }

  it("says a token, a 401 invalid_client, a refused connection, a timeout and the SSRF guard apart", async () => {
    const c = RECEIVER_CLIENTS.basic;
    expect(
      await testConnection({
        token_url: receiver.tokenEndpoint,
        client_id: c.client_id,
        client_secret: c.client_secret,
        auth_method: "client_secret_basic",
      }),
    ).toMatchObject({
      ok: true,
      outcome: "token_issued",
      token_type: "Bearer",
    });
    expect(
      await testConnection({
        token_url: receiver.tokenEndpoint,
        client_id: c.client_id,
        client_secret: "wrong",
        auth_method: "client_secret_basic",
      }),
    ).toMatchObject({
      ok: false,
      outcome: "http_error",
      http_status: 401,
      error: "invalid_client",
    });
    const closed = await freePort();
    expect(await testConnection({ token_url: `http://127.0.0.1:${closed}/token`, client_id: "x", client_secret: "y" })).toMatchObject({
      ok: false,
      outcome: "connection_refused",
      http_status: null,
    });
    // A token endpoint that never answers, and one that redirects to the cloud metadata address.
    const silent = createServer(() => {});
    const redirecting = createServer((_req, res) => res.writeHead(302, { Location: "http://169.254.169.254/latest/meta-data/" }).end());
    for (const server of [silent, redirecting]) {
      await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
      closers.push(
        () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      );
    }
    const portOf = (s: typeof silent) => (s.address() as { port: number }).port;
    expect(
      await testConnection({ token_url: `http://127.0.0.1:${portOf(silent)}/token`, client_id: "x", client_secret: "y" }),
    ).toMatchObject({
      ok: false,
      outcome: "timeout",
    });
    const guarded = await testConnection({
      token_url: `http://127.0.0.1:${portOf(redirecting)}/token`,
      client_id: "x",
      client_secret: "y",
    });
    expect(guarded).toMatchObject({ ok: false, outcome: "refused_by_ssrf_guard" });
  }, 60_000);
});
