/**
 * The receiver-side harness of issue 31 (test/e2e/oidc-receiver.ts) proven without keyway:
 * oauth4webapi plays the client against node-oidc-provider as the receiver's authorization server
 * and against the harness's webhook receiver. Covered: client_secret_basic with a secret that RFC
 * 6749 2.3.1 makes the client form-urlencode, client_secret_post, private_key_jwt (RFC 7523) with
 * the client's keys fetched from a local `jwks_uri` over plain http, a DPoP-bound token (RFC 9449)
 * after a `use_dpop_nonce` challenge (section 8), `scope`, `resource` (RFC 8707) and `audience`
 * reaching the token request, and the webhook receiver accepting a correct DPoP proof (including
 * after its own nonce challenge, section 9) and refusing a wrong `ath`, `htu`, key, scheme or a
 * replayed proof (sections 4.3, 7.1). Runs in Node ("node" project, vitest.config.ts).
 */
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_AUDIENCE,
  EXTRA_RESOURCE,
  type JwksServer,
  type OidcReceiver,
  PRIVATE_KEY_JWT_CLIENT_ID,
  RECEIVER_CLIENTS,
  startJwksServer,
  startOidcReceiver,
} from "./e2e/oidc-receiver";

const insecure = { [oauth.allowInsecureRequests]: true } as const;

let receiver: OidcReceiver;
let jwksServer: JwksServer;
let as: oauth.AuthorizationServer;
let clientKey: { privateKey: CryptoKey; publicJwk: JWK };

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: "client-1", alg: "ES256", use: "sig" };
  clientKey = { privateKey, publicJwk };
  jwksServer = await startJwksServer({ keys: [publicJwk] });
  receiver = await startOidcReceiver({ jwksUri: jwksServer.url });
  const issuer = new URL(receiver.issuer);
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }));
});

afterAll(async () => {
  await receiver?.close();
  await jwksServer?.close();
});

/** The records a block of code added. */
async function recorded<T>(run: () => Promise<T>): Promise<{ result: T; requests: OidcReceiver["tokenRequests"] }> {
  const before = receiver.tokenRequests.length;
  const result = await run();
  return { result, requests: receiver.tokenRequests.slice(before) };
}

async function secretToken(which: "basic" | "post", parameters: Record<string, string> | string[][] = {}) {
  const c = RECEIVER_CLIENTS[which];
  const auth = which === "basic" ? oauth.ClientSecretBasic(c.client_secret) : oauth.ClientSecretPost(c.client_secret);
  const client = { client_id: c.client_id };
  const res = await oauth.clientCredentialsGrantRequest(as, client, auth, parameters, insecure);
  return oauth.processClientCredentialsResponse(as, client, res);
}

describe("the receiver's authorization server (node-oidc-provider)", () => {
  it("publishes what a client needs: the token endpoint, the auth methods, DPoP algorithms", () => {
    expect(as.token_endpoint).toBe(receiver.tokenEndpoint);
    expect(as.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(["client_secret_basic", "client_secret_post", "private_key_jwt"]),
    );
    expect(as.dpop_signing_alg_values_supported).toContain("ES256");
  });

  it("client_secret_basic: a secret form-urlencoded into Basic (RFC 6749 2.3.1) gets a JWT access token", async () => {
    const { result, requests } = await recorded(() => secretToken("basic"));
    expect(result.token_type).toBe("bearer");
    const [req] = requests;
    expect(req).toMatchObject({
      method: "POST",
      authMethod: "client_secret_basic",
      clientId: "keyway-basic",
      grantType: "client_credentials",
      dpop: false,
      status: 200,
      tokenType: "Bearer",
    });
    expect(req!.contentType).toMatch(/^application\/x-www-form-urlencoded/);
    // The secret holds a space, "+", ":" and "%": Basic carries them form-urlencoded.
    const [user, password] = atob(req!.authorization!.slice(6)).split(":");
    const formDecode = (v: string) => decodeURIComponent(v.replaceAll("+", " "));
    expect(password).not.toMatch(/[ :]/);
    expect([formDecode(user!), formDecode(password!)]).toEqual(["keyway-basic", RECEIVER_CLIENTS.basic.client_secret]);
    const { claims, jkt } = await receiver.verifyAccessToken(result.access_token);
    expect(claims).toMatchObject({ iss: receiver.issuer, aud: receiver.defaultResource, client_id: "keyway-basic", sub: "keyway-basic" });
    expect(jkt).toBeNull();
  });

  it("client_secret_basic without the form-urlencoding step is refused", async () => {
    const basic = (secret: string) =>
      fetch(receiver.tokenEndpoint, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${btoa(`keyway-basic:${secret}`)}` },
        body: "grant_type=client_credentials",
      });
    // The raw secret: its "%ch" does not decode, so the header itself is malformed.
    const raw = await basic(RECEIVER_CLIENTS.basic.client_secret);
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ error: "invalid_request" });
    // Percent-encoded but with "+" left as is: it decodes to a space, so the secret is wrong.
    const half = await basic(encodeURIComponent(RECEIVER_CLIENTS.basic.client_secret).replaceAll("%2B", "+"));
    expect(half.status).toBe(401);
    expect(await half.json()).toMatchObject({ error: "invalid_client" });
    expect(receiver.tokenRequests.at(-1)).toMatchObject({
      authMethod: "client_secret_basic",
      clientId: "keyway-basic",
      status: 401,
      error: "invalid_client",
    });
  });

  it("client_secret_post: spec 4.3's form body gets a token, recorded byte for byte", async () => {
    const c = RECEIVER_CLIENTS.post;
    const body = new URLSearchParams({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_type: "client_credentials",
    }).toString();
    const res = await fetch(receiver.tokenEndpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { access_token: string; token_type: string };
    expect(json.token_type).toBe("Bearer");
    expect(receiver.tokenRequests.at(-1)).toMatchObject({
      rawBody: body,
      authMethod: "client_secret_post",
      clientId: "keyway-post",
      authorization: null,
    });
    await expect(receiver.verifyAccessToken(json.access_token)).resolves.toMatchObject({ claims: { client_id: "keyway-post" } });
    // oauth4webapi's client_secret_post is accepted the same way.
    await expect(secretToken("post")).resolves.toMatchObject({ token_type: "bearer" });
  });

  it("private_key_jwt: the server fetches the client's jwks_uri over http on 127.0.0.1 and accepts aud = issuer or token URL", async () => {
    const client = { client_id: PRIVATE_KEY_JWT_CLIENT_ID };
    const key = { key: clientKey.privateKey, kid: "client-1" };
    for (const aud of [receiver.issuer, receiver.tokenEndpoint]) {
      const auth = oauth.PrivateKeyJwt(key, {
        [oauth.modifyAssertion]: (_header, payload) => {
          payload.aud = aud;
        },
      });
      const { result, requests } = await recorded(async () =>
        oauth.processClientCredentialsResponse(
          as,
          client,
          await oauth.clientCredentialsGrantRequest(as, client, auth, { scope: "webhooks:write" }, insecure),
        ),
      );
      expect(result.scope).toBe("webhooks:write");
      expect(requests[0]).toMatchObject({
        authMethod: "private_key_jwt",
        clientId: PRIVATE_KEY_JWT_CLIENT_ID,
        scope: "webhooks:write",
        assertion: {
          header: { alg: "ES256", kid: "client-1" },
          claims: { iss: PRIVATE_KEY_JWT_CLIENT_ID, sub: PRIVATE_KEY_JWT_CLIENT_ID, aud },
        },
        status: 200,
      });
    }
    expect(receiver.jwksFetches).toContain(jwksServer.url);
    expect(jwksServer.fetches()).toBeGreaterThan(0);
  });

  it("private_key_jwt signed by a key the jwks_uri does not publish is invalid_client", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const client = { client_id: PRIVATE_KEY_JWT_CLIENT_ID };
    const res = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.PrivateKeyJwt({ key: privateKey, kid: "client-1" }),
      {},
      insecure,
    );
    await expect(oauth.processClientCredentialsResponse(as, client, res)).rejects.toMatchObject({ error: "invalid_client" });
  });

  it("scope, resource and audience reach the token request and shape the token", async () => {
    const params = [
      ["scope", "webhooks:write webhooks:read"],
      ["resource", EXTRA_RESOURCE],
      ["audience", DEFAULT_AUDIENCE],
    ];
    const { result, requests } = await recorded(() => secretToken("basic", params));
    expect(requests[0]).toMatchObject({
      scope: "webhooks:write webhooks:read",
      resource: [EXTRA_RESOURCE],
      audience: DEFAULT_AUDIENCE,
      status: 200,
    });
    const { claims } = await receiver.verifyAccessToken(result.access_token);
    expect(claims).toMatchObject({ aud: DEFAULT_AUDIENCE, scope: "webhooks:write webhooks:read" });

    const byResource = await secretToken("basic", { resource: EXTRA_RESOURCE, scope: "webhooks:read" });
    await expect(receiver.verifyAccessToken(byResource.access_token)).resolves.toMatchObject({
      claims: { aud: EXTRA_RESOURCE, scope: "webhooks:read" },
    });
  });

  it("an unknown resource or audience, or two resources at once, is invalid_target", async () => {
    await expect(secretToken("basic", { resource: "https://elsewhere.example/" })).rejects.toMatchObject({ error: "invalid_target" });
    await expect(secretToken("basic", { audience: "https://elsewhere.example" })).rejects.toMatchObject({ error: "invalid_target" });
    // node-oidc-provider: one resource per client-credentials token.
    const two = [
      ["resource", EXTRA_RESOURCE],
      ["resource", receiver.defaultResource],
    ];
    const { requests } = await recorded(() => expect(secretToken("basic", two)).rejects.toMatchObject({ error: "invalid_target" }));
    expect(requests[0]!.resource).toEqual([EXTRA_RESOURCE, receiver.defaultResource]);
  });
});

/** A DPoP-bound token for the dpop client, answering the token endpoint's nonce challenge once. */
async function dpopToken(keyPair: CryptoKeyPair) {
  const c = RECEIVER_CLIENTS.dpop;
  const client: oauth.Client = { client_id: c.client_id };
  const DPoP = oauth.DPoP(client, keyPair);
  const request = () =>
    oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(c.client_secret),
      { scope: "webhooks:write" },
      { DPoP, ...insecure },
    );
  try {
    return { DPoP, token: await oauth.processClientCredentialsResponse(as, client, await request()) };
  } catch (err) {
    if (!oauth.isDPoPNonceError(err)) throw err;
    return { DPoP, token: await oauth.processClientCredentialsResponse(as, client, await request()) };
  }
}

async function newKeyPair(): Promise<CryptoKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  return { privateKey, publicKey };
}

async function proof(
  keyPair: CryptoKeyPair,
  claims: { htm?: string; htu: string; accessToken: string; nonce?: string; iat?: number },
): Promise<string> {
  const jwk = await exportJWK(keyPair.publicKey);
  const ath = base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(claims.accessToken))));
  return new SignJWT({ htm: claims.htm ?? "POST", htu: claims.htu, ath, ...(claims.nonce ? { nonce: claims.nonce } : {}) })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk })
    .setJti(crypto.randomUUID())
    .setIssuedAt(claims.iat ?? Math.floor(Date.now() / 1000))
    .sign(keyPair.privateKey);
}

function webhook(token: string, dpopProof: string | null, scheme = "DPoP", url = receiver.webhookUrl): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `${scheme} ${token}`, "Content-Type": "application/json" };
  if (dpopProof !== null) headers.DPoP = dpopProof;
  return fetch(url, { method: "POST", headers, body: '{"type":"order.created"}' });
}

describe("DPoP (RFC 9449): the token and the webhook", () => {
  let keyPair: CryptoKeyPair;
  let token: string;
  let DPoP: oauth.DPoPHandle;

  beforeAll(async () => {
    keyPair = await newKeyPair();
    receiver.setRequireDpopNonce(true);
    const { requests, result } = await recorded(() => dpopToken(keyPair));
    receiver.setRequireDpopNonce(false);
    token = result.token.access_token;
    DPoP = result.DPoP;
    expect(result.token.token_type).toBe("dpop");
    // The nonce challenge (section 8) and its answer, as the server saw them.
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({ dpop: true, dpopNonce: null, status: 400, error: "use_dpop_nonce" });
    expect(requests[0]!.nonceIssued).toEqual(expect.any(String));
    expect(requests[1]).toMatchObject({ dpop: true, dpopNonce: requests[0]!.nonceIssued, status: 200, tokenType: "DPoP" });
  });

  it("the token is bound to the proof key (cnf.jkt) and verifies with the server's JWKS", async () => {
    const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
    const { claims } = await receiver.verifyAccessToken(token, { jkt });
    expect(claims.cnf?.jkt).toBe(jkt);
    expect(receiver.tokenRequests.at(-1)!.dpopJkt).toBe(jkt);
    await expect(receiver.verifyAccessToken(token, { jkt: "someone-else" })).rejects.toThrow(/cnf\.jkt/);
  });

  it("a client registered dpop_bound_access_tokens gets no token without a proof", async () => {
    await expect(
      (async () => {
        const c = RECEIVER_CLIENTS.dpop;
        const client = { client_id: c.client_id };
        const res = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(c.client_secret), {}, insecure);
        return oauth.processClientCredentialsResponse(as, client, res);
      })(),
    ).rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("the webhook receiver accepts a correct proof (oauth4webapi's) and records the verdict", async () => {
    const res = await oauth.protectedResourceRequest(
      token,
      "POST",
      new URL(receiver.webhookUrl),
      new Headers({ "content-type": "application/json" }),
      "{}",
      {
        DPoP,
        ...insecure,
      },
    );
    expect(res.status).toBe(204);
    const last = receiver.webhooks.at(-1)!;
    expect(last.verdict).toMatchObject({ ok: true, scheme: "DPoP", proof: { htm: "POST", htu: receiver.webhookUrl } });
    expect(last.headers.authorization).toBe(`DPoP ${token}`);
  });

  it("refuses a wrong ath, a wrong htu, a wrong htm, another key, a stale iat and a replayed proof", async () => {
    const cases: [string, Promise<string>, RegExp][] = [
      ["ath", proof(keyPair, { htu: receiver.webhookUrl, accessToken: `${token}x` }), /ath mismatch/],
      ["htu", proof(keyPair, { htu: `${receiver.webhookUrl}/other`, accessToken: token }), /htu mismatch/],
      ["htm", proof(keyPair, { htm: "PUT", htu: receiver.webhookUrl, accessToken: token }), /htm mismatch/],
      ["key", newKeyPair().then((other) => proof(other, { htu: receiver.webhookUrl, accessToken: token })), /cnf\.jkt/],
      ["iat", proof(keyPair, { htu: receiver.webhookUrl, accessToken: token, iat: Math.floor(Date.now() / 1000) - 600 }), /iat/],
    ];
    for (const [name, made, reason] of cases) {
      const res = await webhook(token, await made);
      expect(res.status, name).toBe(401);
      expect(res.headers.get("www-authenticate"), name).toMatch(/^DPoP error="invalid_dpop_proof"/);
      expect(receiver.webhooks.at(-1)!.verdict, name).toMatchObject({
        ok: false,
        error: "invalid_dpop_proof",
        reason: expect.stringMatching(reason),
      });
    }
    const good = await proof(keyPair, { htu: receiver.webhookUrl, accessToken: token });
    expect((await webhook(token, good)).status).toBe(204);
    expect((await webhook(token, good)).status).toBe(401);
    expect(receiver.webhooks.at(-1)!.verdict).toMatchObject({ ok: false, reason: "jti replayed" });
  });

  it("refuses the bound token as Bearer, and without a proof", async () => {
    expect((await webhook(token, null, "Bearer")).status).toBe(401);
    expect(receiver.webhooks.at(-1)!.verdict).toMatchObject({ ok: false, error: "invalid_token", reason: /as Bearer/ });
    expect((await webhook(token, null)).status).toBe(401);
    expect(receiver.webhooks.at(-1)!.verdict).toMatchObject({ ok: false, error: "invalid_dpop_proof", reason: "no DPoP header" });
  });

  it("answers a proof without its nonce with 401 use_dpop_nonce and DPoP-Nonce; the retry with it passes", async () => {
    receiver.setWebhookDpopNonce(true);
    try {
      const nonce = receiver.webhookNonce()!;
      const first = await webhook(token, await proof(keyPair, { htu: receiver.webhookUrl, accessToken: token }));
      expect(first.status).toBe(401);
      expect(first.headers.get("www-authenticate")).toMatch(/^DPoP error="use_dpop_nonce"/);
      expect(first.headers.get("dpop-nonce")).toBe(nonce);
      expect((await webhook(token, await proof(keyPair, { htu: receiver.webhookUrl, accessToken: token, nonce }))).status).toBe(204);
      expect(receiver.webhooks.at(-1)!.verdict).toMatchObject({ ok: true, proof: { nonce } });

      // oauth4webapi's own handling of the challenge: the handle caches the nonce, the retry passes.
      const send = () =>
        oauth.protectedResourceRequest(token, "POST", new URL(receiver.webhookUrl), new Headers(), "{}", { DPoP, ...insecure });
      const res = await send().catch(async (err: unknown) => {
        if (!oauth.isDPoPNonceError(err)) throw err;
        return send();
      });
      expect(res.status).toBe(204);
    } finally {
      receiver.setWebhookDpopNonce(false);
    }
  });

  it("a Bearer webhook with an unbound token passes; a forged or foreign token does not", async () => {
    const { access_token } = await secretToken("basic");
    expect((await webhook(access_token, null, "Bearer")).status).toBe(204);
    expect((await webhook(access_token, null, "DPoP")).status).toBe(401);
    const forged = `${access_token.slice(0, -4)}AAAA`;
    expect((await webhook(forged, null, "Bearer")).status).toBe(401);
    expect(receiver.webhooks.at(-1)!.verdict).toMatchObject({ ok: false, error: "invalid_token" });
    const res = await fetch(receiver.webhookUrl, { method: "POST", body: "{}" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer, DPoP/);
  });
});
