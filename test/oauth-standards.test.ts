/**
 * Client authentication and token standards (product brief; issue 21), in the Workers runtime:
 * private_key_jwt client assertions (RFC 7523), DPoP-bound tokens (RFC 9449), scopes (RFC 6749
 * 3.3, RFC 6750 3.1), revocation (RFC 7009) and introspection (RFC 7662). Every JWT here is made
 * with jose, the client side's library, independently of how keyway verifies; each refusal the
 * issue names has its own case, next to the same request made right.
 */

import { env } from "cloudflare:workers";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { beforeAll, describe, expect, it, vi } from "vitest";
import {
  ADMIN_TOKEN,
  admin,
  adminCall,
  athOf,
  authed,
  BASE,
  body,
  call,
  callAt,
  counting,
  createTenant,
  dpopProof,
  issueToken,
  type KeyPair,
  type Tenant,
  tokenRequest,
} from "./helpers";

const JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const now = () => Math.floor(Date.now() / 1000);

const es256 = () => generateKeyPair("ES256", { extractable: true });
const publicJwk = async (pair: KeyPair, kid: string): Promise<JWK> => ({
  ...(await exportJWK(pair.publicKey)),
  kid,
  alg: "ES256",
  use: "sig",
});

/** A client assertion (RFC 7523 3), overridable claim by claim. */
async function assertion(pair: KeyPair, clientId: string, claims: Record<string, unknown> = {}, kid = "k1"): Promise<string> {
  return new SignJWT({ jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: "ES256", kid })
    .setIssuer(typeof claims.iss === "string" ? claims.iss : clientId)
    .setSubject(typeof claims.sub === "string" ? claims.sub : clientId)
    .setAudience((claims.aud as string | string[] | undefined) ?? BASE)
    .setIssuedAt()
    .setExpirationTime(typeof claims.exp === "number" ? claims.exp : now() + 60)
    .sign(pair.privateKey);
}

/** A DPoP proof (RFC 9449 4.2), issued now. */
const proof = (pair: KeyPair, htm: string, htu: string, extra: Record<string, unknown> = {}) => dpopProof(pair, htm, htu, extra);

const form = (t: Tenant, fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey, ...headers },
  body: new URLSearchParams(fields).toString(),
});

async function plainJson(res: Response) {
  return (await res.json()) as Record<string, unknown>;
}

/** Registers a private_key_jwt credential for the tenant's user with these public keys. */
async function jwtClient(t: Tenant, keys: JWK[], extra: Record<string, unknown> = {}) {
  return admin<{ client_id: string; client_secret?: string; token_endpoint_auth_method: string; jwks: { keys: JWK[] } }>(
    "POST",
    `/organizations/${t.orgId}/users/${t.userId}/client-credentials`,
    { token_endpoint_auth_method: "private_key_jwt", jwks: { keys }, ...extra },
  );
}

const tokenWithAssertion = (t: Tenant, clientId: string, signed: string, extra: Record<string, string> = {}) =>
  call(
    "/v1/oauth/token",
    form(t, {
      grant_type: "client_credentials",
      client_id: clientId,
      client_assertion_type: JWT_BEARER,
      client_assertion: signed,
      ...extra,
    }),
  );

describe("private_key_jwt (RFC 7523)", () => {
  let t: Tenant;
  let pair: KeyPair;
  let clientId: string;
  beforeAll(async () => {
    t = await createTenant();
    pair = await es256();
    const created = await jwtClient(t, [await publicJwk(pair, "k1")]);
    expect(created.client_secret).toBeUndefined();
    expect(created.token_endpoint_auth_method).toBe("private_key_jwt");
    clientId = created.client_id;
  });

  it("issues a token for an assertion signed by a registered key, with the issuer or the token endpoint as aud", async () => {
    for (const aud of [BASE, `${BASE}/v1/oauth/token`, [BASE, "https://elsewhere.example"]]) {
      const res = await tokenWithAssertion(t, clientId, await assertion(pair, clientId, { aud }));
      const json = await plainJson(res);
      expect(res.status, JSON.stringify(json)).toBe(200);
      expect(json.token_type).toBe("Bearer");
      const me = await call("/v1/me", authed(t, String(json.access_token)));
      expect((await body<{ client_id: string }>(me)).data.client_id).toBe(clientId);
    }
    // The enveloped endpoint and an assertion without client_id (the sub names the client) alike.
    const signed = await assertion(pair, clientId);
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey },
      body: JSON.stringify({ grant_type: "client_credentials", client_assertion_type: JWT_BEARER, client_assertion: signed }),
    });
    expect(res.status).toBe(200);
  });

  it("refuses, as 401 invalid_client: another key, too long-lived, iss or sub not the client, no jti as a wrong secret is; another aud and expired saying which", async () => {
    const stranger = await es256();
    const cases: [string, Promise<string>][] = [
      ["signed by an unregistered key", assertion(stranger, clientId)],
      ["exp more than 300 s ahead", assertion(pair, clientId, { exp: now() + 3600 })],
      ["iss another client", assertion(pair, clientId, { iss: t.clientId })],
      ["sub another client", assertion(pair, clientId, { sub: t.clientId })],
      [
        "no jti",
        new SignJWT({})
          .setProtectedHeader({ alg: "ES256" })
          .setIssuer(clientId)
          .setSubject(clientId)
          .setAudience(BASE)
          .setExpirationTime(now() + 60)
          .sign(pair.privateKey),
      ],
    ];
    const wrongSecret = await call(
      "/v1/oauth/token",
      form(t, { grant_type: "client_credentials", client_id: t.clientId, client_secret: "nope" }),
    );
    const expected = await plainJson(wrongSecret);
    for (const [name, signed] of cases) {
      const res = await tokenWithAssertion(t, clientId, await signed);
      expect(res.status, name).toBe(401);
      const json = await plainJson(res);
      expect(json.error, name).toBe("invalid_client");
      expect(json.error_description, name).toBe(expected.error_description);
    }
    // What is wrong whatever the client (lib/jwt.ts assertionClaimsProblem) is said: it tells
    // nothing about whether the client exists.
    const said: [string, Promise<string>, RegExp][] = [
      [
        "aud another server",
        assertion(pair, clientId, { aud: "https://other.example" }),
        /its aud names none of this deployment's audiences/,
      ],
      ["expired", assertion(pair, clientId, { exp: now() - 60 }), /it expired at /],
    ];
    for (const [name, signed, reason] of said) {
      const res = await tokenWithAssertion(t, clientId, await signed);
      expect(res.status, name).toBe(401);
      const json = await plainJson(res);
      expect(json.error, name).toBe("invalid_client");
      expect(String(json.error_description), name).toMatch(reason);
    }
    // Used once: the same assertion a second time is a replay.
    const once = await assertion(pair, clientId);
    expect((await tokenWithAssertion(t, clientId, once)).status).toBe(200);
    const replay = await tokenWithAssertion(t, clientId, once);
    expect(replay.status).toBe(401);
    expect((await plainJson(replay)).error).toBe("invalid_client");
    // A secret for a private_key_jwt client, or an assertion for a secret client: refused alike.
    const asSecret = await call(
      "/v1/oauth/token",
      form(t, { grant_type: "client_credentials", client_id: clientId, client_secret: "x".repeat(43) }),
    );
    expect(asSecret.status).toBe(401);
    const asJwt = await tokenWithAssertion(t, t.clientId, await assertion(pair, t.clientId));
    expect(asJwt.status).toBe(401);
  });

  it("with PUBLIC_BASE_URL, takes only that origin's audiences, not the origin of the request's Host (RFC 7523 3, point 3)", async () => {
    // The Host header is the sender's to choose: an assertion made for another server at another
    // origin is no assertion for keyway's configured one.
    const configured = { ...env, PUBLIC_BASE_URL: "https://api.example.com" };
    const present = async (aud: string, bindings: Env) => {
      const fields = {
        grant_type: "client_credentials",
        client_assertion_type: JWT_BEARER,
        client_assertion: await assertion(pair, clientId, { aud }),
      };
      const res = await callAt(Date.now(), "/v1/oauth/token", form(t, fields), bindings);
      return `${res.status}${res.status === 200 ? "" : ` ${String((await plainJson(res)).error)}`}`;
    };
    for (const aud of ["https://api.example.com", "https://api.example.com/v1/oauth/token", "https://api.example.com/v1/oauth"]) {
      expect(await present(aud, configured), aud).toBe("200");
    }
    for (const aud of [BASE, `${BASE}/v1/oauth/token`, `${BASE}/v1/oauth`]) {
      expect(await present(aud, configured), aud).toBe("401 invalid_client");
    }
    // Without PUBLIC_BASE_URL (local development) the request's origin is keyway's issuer.
    const unset = { ...env, PUBLIC_BASE_URL: "" };
    for (const aud of [BASE, `${BASE}/v1/oauth/token`, `${BASE}/v1/oauth`]) expect(await present(aud, unset), aud).toBe("200");
    expect(await present("https://api.example.com/v1/oauth/token", unset)).toBe("401 invalid_client");
  });

  it("refuses a replayed assertion through another API key of the organization too", async () => {
    const other = await admin<{ api_key: string }>("POST", `/organizations/${t.orgId}/api-keys`, {
      limits: { per_second: 100, per_day: 10_000 },
    });
    const signed = await assertion(pair, clientId);
    expect((await tokenWithAssertion(t, clientId, signed)).status).toBe(200);
    const replay = await tokenWithAssertion({ ...t, apiKey: other.api_key }, clientId, signed);
    expect(replay.status).toBe(401);
  });

  it("refuses private key material and symmetric keys at registration, and a key set for a secret client", async () => {
    const pathOf = `/organizations/${t.orgId}/users/${t.userId}/client-credentials`;
    const priv = await exportJWK(pair.privateKey);
    for (const [name, input] of [
      ["private EC key", { token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [priv] } }],
      ["symmetric key", { token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [{ kty: "oct", k: "c2VjcmV0" }] } }],
      ["no keys", { token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [] } }],
      ["private_key_jwt without jwks", { token_endpoint_auth_method: "private_key_jwt" }],
      ["jwks for a secret", { jwks: { keys: [await publicJwk(pair, "k1")] } }],
    ] as const) {
      const res = await adminCall("POST", pathOf, input);
      const json = await body(res);
      expect(res.status, name).toBe(400);
      expect(JSON.stringify(json), name).not.toContain(String(priv.d));
    }
  });

  it("rotates keys: old and new together, then the new alone, and the old stops at the next token request", async () => {
    const next = await es256();
    const path = `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${clientId}`;
    await admin("PATCH", path, { jwks: { keys: [await publicJwk(pair, "k1"), await publicJwk(next, "k2")] } });
    expect((await tokenWithAssertion(t, clientId, await assertion(pair, clientId))).status).toBe(200);
    expect((await tokenWithAssertion(t, clientId, await assertion(next, clientId, {}, "k2"))).status).toBe(200);
    await admin("PATCH", path, { jwks: { keys: [await publicJwk(next, "k2")] } });
    expect((await tokenWithAssertion(t, clientId, await assertion(pair, clientId))).status).toBe(401);
    expect((await tokenWithAssertion(t, clientId, await assertion(next, clientId, {}, "k2"))).status).toBe(200);
    // The rotation back so the other tests keep their key.
    await admin("PATCH", path, { jwks: { keys: [await publicJwk(pair, "k1")] } });
  });
});

describe("DPoP (RFC 9449)", () => {
  let t: Tenant;
  let pair: KeyPair;
  let token: string;
  const ME = `${BASE}/v1/me`;
  const dpopCall = async (path: string, init: { token?: string; proof?: string; method?: string; scheme?: string; apiKey?: string } = {}) =>
    call(path, {
      method: init.method ?? "GET",
      headers: {
        "x-api-key": init.apiKey ?? t.apiKey,
        ...(init.token ? { Authorization: `${init.scheme ?? "DPoP"} ${init.token}` } : {}),
        ...(init.proof ? { DPoP: init.proof } : {}),
      },
    });
  beforeAll(async () => {
    t = await createTenant();
    pair = await es256();
    const res = await call(
      "/v1/oauth/token",
      form(
        t,
        { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret },
        { DPoP: await proof(pair, "POST", `${BASE}/v1/oauth/token`) },
      ),
    );
    const json = await plainJson(res);
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.token_type).toBe("DPoP");
    token = String(json.access_token);
  });

  it("binds the token to the proof's key: DPoP scheme, a fresh proof for this method and URL with ath", async () => {
    const res = await dpopCall("/v1/me", { token, proof: await proof(pair, "GET", ME, { ath: await athOf(token) }) });
    expect(res.status).toBe(200);
    // The envelope endpoint says DPoP too, and introspection shows the thumbprint.
    const enveloped = await call("/v1/oauth", {
      ...tokenRequest(t),
      headers: { ...(tokenRequest(t).headers as Record<string, string>), DPoP: await proof(pair, "POST", `${BASE}/v1/oauth`) },
    });
    expect((await body<{ token_type: string }>(enveloped)).data.token_type).toBe("DPoP");
    const inspected = await plainJson(
      await call("/v1/oauth/introspect", form(t, { token, client_id: t.clientId, client_secret: t.clientSecret })),
    );
    expect(inspected).toMatchObject({
      active: true,
      token_type: "DPoP",
      cnf: { jkt: await calculateJwkThumbprint(await exportJWK(pair.publicKey)) },
    });
  });

  it("compares the token endpoint's htu with the request's URL without its query (RFC 9449 4.3)", async () => {
    const fields = { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret };
    // The proof names the endpoint without the query the request carries: accepted.
    const res = await call("/v1/oauth/token?from=cli", form(t, fields, { DPoP: await proof(pair, "POST", `${BASE}/v1/oauth/token`) }));
    const json = await plainJson(res);
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.token_type).toBe("DPoP");
    // One naming another endpoint is refused.
    const wrong = await call("/v1/oauth/token", form(t, fields, { DPoP: await proof(pair, "POST", `${BASE}/v1/oauth/revoke`) }));
    expect(wrong.status).toBe(400);
  });

  it("refuses a proof used once at the token endpoint whatever API key or endpoint it comes with next (RFC 9449 11.1)", async () => {
    const other = await admin<{ api_key: string }>("POST", `/organizations/${t.orgId}/api-keys`, {
      name: "second",
      limits: { per_second: 1000, per_day: 100_000 },
    });
    const fields = { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret };
    const used = await proof(pair, "POST", `${BASE}/v1/oauth/token`);
    const first = await call("/v1/oauth/token", form(t, fields, { DPoP: used }));
    expect(first.status).toBe(200);
    for (const [name, apiKey] of [
      ["the same API key", t.apiKey],
      ["another API key of the organization", other.api_key],
    ] as const) {
      const again = await call("/v1/oauth/token", form({ ...t, apiKey }, fields, { DPoP: used }));
      expect(again.status, name).toBe(400);
      expect(await plainJson(again), name).toMatchObject({
        error: "invalid_dpop_proof",
        error_description: "The DPoP proof was already used.",
      });
    }
    // A fresh proof used first with the other key is refused with the first.
    const fresh = await proof(pair, "POST", `${BASE}/v1/oauth/token`);
    expect((await call("/v1/oauth/token", form({ ...t, apiKey: other.api_key }, fields, { DPoP: fresh }))).status).toBe(200);
    const { bindings, calls } = counting();
    const replayed = await callAt(Date.now(), "/v1/oauth/token", form(t, fields, { DPoP: fresh }), bindings);
    expect(replayed.status).toBe(400);
    // The price: one call beside the key's, in parallel, to the ProofObject the proof's id names
    // (issue 41): none to the organization, whose one object would be on every DPoP token request.
    expect([...calls].sort()).toEqual(["KEYS.admit", "PROOFS.record"]);
  });

  it("refuses the token as Bearer, without a proof, with a proof for another method or URL, without ath, of another key, or replayed", async () => {
    const ath = await athOf(token);
    const stranger = await es256();
    const cases: [string, () => Promise<Response>, string][] = [
      [
        "as Bearer",
        async () => dpopCall("/v1/me", { token, scheme: "Bearer", proof: await proof(pair, "GET", ME, { ath }) }),
        "invalid_token",
      ],
      ["no proof", async () => dpopCall("/v1/me", { token }), "invalid_dpop_proof"],
      ["another method", async () => dpopCall("/v1/me", { token, proof: await proof(pair, "POST", ME, { ath }) }), "invalid_dpop_proof"],
      [
        "another URL",
        async () => dpopCall("/v1/me", { token, proof: await proof(pair, "GET", `${BASE}/v1/events`, { ath }) }),
        "invalid_dpop_proof",
      ],
      ["no ath", async () => dpopCall("/v1/me", { token, proof: await proof(pair, "GET", ME) }), "invalid_dpop_proof"],
      [
        "another token's ath",
        async () => dpopCall("/v1/me", { token, proof: await proof(pair, "GET", ME, { ath: await athOf("x") }) }),
        "invalid_dpop_proof",
      ],
      ["another key", async () => dpopCall("/v1/me", { token, proof: await proof(stranger, "GET", ME, { ath }) }), "invalid_dpop_proof"],
      [
        "iat too old",
        async () => dpopCall("/v1/me", { token, proof: await proof(pair, "GET", ME, { ath, iat: now() - 300 }) }),
        "invalid_dpop_proof",
      ],
    ];
    for (const [name, make, error] of cases) {
      const res = await make();
      expect(res.status, name).toBe(401);
      const json = await body(res);
      expect(json.error, name).toBe(error);
      expect(res.headers.get("www-authenticate"), name).toMatch(
        new RegExp(`^DPoP resource_metadata="[^"]+", realm="keyway", algs="[^"]+", error="${error}"`),
      );
    }
    const once = await proof(pair, "GET", ME, { ath });
    expect((await dpopCall("/v1/me", { token, proof: once })).status).toBe(200);
    const replayed = await dpopCall("/v1/me", { token, proof: once });
    expect(replayed.status).toBe(401);
    expect((await body(replayed)).error).toBe("invalid_dpop_proof");
  });

  it("refuses the token with another API key of the organization, and a Bearer token sent with the DPoP scheme", async () => {
    const other = await admin<{ api_key: string }>("POST", `/organizations/${t.orgId}/api-keys`, {
      limits: { per_second: 100, per_day: 10_000 },
    });
    const res = await dpopCall("/v1/me", {
      token,
      apiKey: other.api_key,
      proof: await proof(pair, "GET", ME, { ath: await athOf(token) }),
    });
    expect(res.status).toBe(401);
    expect((await body(res)).error).toBe("invalid_token");
    const bearer = await issueToken(t);
    const asDpop = await dpopCall("/v1/me", { token: bearer, proof: await proof(pair, "GET", ME, { ath: await athOf(bearer) }) });
    expect(asDpop.status).toBe(401);
  });

  it("answers a bad proof at the token endpoint with 400 invalid_dpop_proof, and requires a proof from a credential that must use DPoP", async () => {
    const bad = await call(
      "/v1/oauth/token",
      form(
        t,
        { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret },
        { DPoP: await proof(pair, "GET", `${BASE}/v1/oauth/token`) },
      ),
    );
    expect(bad.status).toBe(400);
    expect((await plainJson(bad)).error).toBe("invalid_dpop_proof");
    const path = `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${t.clientId}`;
    await admin("PATCH", path, { dpop_bound_access_tokens: true });
    const plain = await call(
      "/v1/oauth/token",
      form(t, { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret }),
    );
    expect(plain.status).toBe(400);
    expect((await plainJson(plain)).error).toBe("invalid_dpop_proof");
    const bound = await call(
      "/v1/oauth/token",
      form(
        t,
        { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret },
        { DPoP: await proof(pair, "POST", `${BASE}/v1/oauth/token`) },
      ),
    );
    expect((await plainJson(bound)).token_type).toBe("DPoP");
    await admin("PATCH", path, { dpop_bound_access_tokens: false });
  });
});

describe("scopes", () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await createTenant();
  });
  const tokenFor = async (scope?: string) => {
    const res = await call(
      "/v1/oauth/token",
      form(t, { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret, ...(scope ? { scope } : {}) }),
    );
    return { res, json: await plainJson(res) };
  };

  it("narrows a token to the scopes asked for, and says which it got", async () => {
    const { json } = await tokenFor("webhooks:read");
    expect(json.scope).toBe("webhooks:read");
    const token = String(json.access_token);
    expect((await call("/v1/webhook-configurations", authed(t, token))).status).toBe(200);
    const publish = await call(
      "/v1/events",
      authed(t, token, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ type: "a.b", data: {} }),
      }),
    );
    expect(publish.status).toBe(403);
    expect((await body(publish)).error).toBe("insufficient_scope");
    expect(publish.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource", realm="keyway", error="insufficient_scope", error_description="The access token lacks a needed scope", scope="events:write"`,
    );
    // GET /v1/me needs no scope.
    expect((await call("/v1/me", authed(t, token))).status).toBe(200);
  });

  it("refuses an unknown scope, and one the credential may not have, with 400 invalid_scope", async () => {
    const unknown = await tokenFor("webhooks:read admin:all");
    expect(unknown.res.status).toBe(400);
    expect(unknown.json.error).toBe("invalid_scope");
    const path = `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${t.clientId}`;
    await admin("PATCH", path, { scopes: ["webhooks:read"] });
    const escalated = await tokenFor("webhooks:write");
    expect(escalated.res.status).toBe(400);
    expect(escalated.json.error).toBe("invalid_scope");
    // Without scope: every scope the credential allows, now only that one.
    expect((await tokenFor()).json.scope).toBe("webhooks:read");
    await admin("PATCH", path, { scopes: null });
    expect((await tokenFor()).json.scope).toBe("webhooks:read webhooks:write events:write graphql:mutate");
  });

  it("checks GraphQL per field: a read token reads, and its mutations are refused field by field", async () => {
    const token = String((await tokenFor("webhooks:read events:write")).json.access_token);
    const gql = async (query: string) => {
      const res = await call(
        "/v1/graphql",
        authed(t, token, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query }) }),
      );
      return (await res.json()) as {
        data?: Record<string, unknown>;
        errors?: { message: string; path?: string[]; extensions: { code: string; status: number } }[];
      };
    };
    const read = await gql("{ viewer { organizationId } webhookConfigurations(first: 1) { nodes { id } } }");
    expect(read.errors).toBeUndefined();
    const write = await gql('mutation { publishEvent(type: "a.b", data: {}) { id } }');
    expect(write.errors?.[0]).toMatchObject({ path: ["publishEvent"], extensions: { code: "insufficient_scope", status: 403 } });
    expect(write.errors?.[0]?.message).toContain("graphql:mutate");
  });
});

describe("revocation (RFC 7009) and introspection (RFC 7662)", () => {
  let a: Tenant;
  let b: Tenant;
  beforeAll(async () => {
    [a, b] = [await createTenant(), await createTenant()];
  });
  const revoke = (t: Tenant, token: string) =>
    call("/v1/oauth/revoke", form(t, { token, client_id: t.clientId, client_secret: t.clientSecret }));
  const introspect = async (t: Tenant, token: string) =>
    plainJson(await call("/v1/oauth/introspect", form(t, { token, client_id: t.clientId, client_secret: t.clientSecret })));

  it("introspects the organization's token with its claims, and another organization's as inactive", async () => {
    const token = await issueToken(a);
    const active = await introspect(a, token);
    expect(active).toMatchObject({
      active: true,
      client_id: a.clientId,
      token_type: "Bearer",
      sub: a.userId,
      scope: "webhooks:read webhooks:write events:write graphql:mutate",
    });
    expect(typeof active.exp).toBe("number");
    expect(typeof active.iat).toBe("number");
    expect(await introspect(b, token)).toEqual({ active: false });
    expect(await introspect(a, "kw_at_not-a-token")).toEqual({ active: false });
  });

  it("revokes the owner's token on the very next request, answers 200 for unknown tokens, and revokes nothing of others", async () => {
    const token = await issueToken(a);
    expect((await call("/v1/me", authed(a, token))).status).toBe(200);
    // Another organization's client cannot revoke it (200, nothing done); nor can another client of the same organization.
    expect((await revoke(b, token)).status).toBe(200);
    const sibling = await admin<{ client_id: string; client_secret: string }>(
      "POST",
      `/organizations/${a.orgId}/users/${a.userId}/client-credentials`,
      {},
    );
    expect((await revoke({ ...a, clientId: sibling.client_id, clientSecret: sibling.client_secret }, token)).status).toBe(200);
    expect((await call("/v1/me", authed(a, token))).status).toBe(200);
    const res = await revoke(a, token);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    const after = await call("/v1/me", authed(a, token));
    expect(after.status).toBe(401);
    expect((await body(after)).developer_message).toMatch(/revoked/);
    expect(await introspect(a, token)).toEqual({ active: false });
    // Unknown tokens answer 200 (RFC 7009 2.2), and the caller must still authenticate.
    expect((await revoke(a, "kw_at_unknown")).status).toBe(200);
    const unauthenticated = await call("/v1/oauth/revoke", form(a, { token, client_id: a.clientId, client_secret: "wrong" }));
    expect(unauthenticated.status).toBe(401);
  });

  it("answers an expired token and a revoked credential's token as inactive", async () => {
    const token = await issueToken(a);
    const extra = await admin<{ client_id: string; client_secret: string }>(
      "POST",
      `/organizations/${a.orgId}/users/${a.userId}/client-credentials`,
      {},
    );
    const theirs = await issueToken({ ...a, clientId: extra.client_id, clientSecret: extra.client_secret });
    await admin("DELETE", `/organizations/${a.orgId}/users/${a.userId}/client-credentials/${extra.client_id}`);
    expect(await introspect(a, theirs)).toEqual({ active: false });
    expect((await introspect(a, token)).active).toBe(true);
  });
});

describe("the operator token is not an access token", () => {
  it("is refused by introspection as inactive", async () => {
    const t = await createTenant();
    expect(
      await plainJson(
        await call("/v1/oauth/introspect", form(t, { token: ADMIN_TOKEN, client_id: t.clientId, client_secret: t.clientSecret })),
      ),
    ).toEqual({ active: false });
  });
});

describe("the hot path", () => {
  it("takes one path for every failed client authentication: unknown id, wrong secret, revoked, wrong assertion (no client_id oracle)", async () => {
    const t = await createTenant();
    const revoked = await admin<{ client_id: string; client_secret: string }>(
      "POST",
      `/organizations/${t.orgId}/users/${t.userId}/client-credentials`,
      { name: "to revoke" },
    );
    expect((await adminCall("DELETE", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${revoked.client_id}`)).status).toBe(
      200,
    );
    const pair = await es256();
    const jwt = await jwtClient(t, [await publicJwk(pair, "k1")]);
    const other = await es256();
    const secretTry = (clientId: string, secret: string) => ({
      grant_type: "client_credentials",
      client_id: clientId,
      client_secret: secret,
    });
    const tries: [string, Record<string, string>, string][] = [
      ["unknown client_id", secretTry("kw_client_AAAAAAAAAAAAAAAAAAAAAA", "kw_live_cs_wrong"), "ORGS.authenticateClient"],
      ["known client_id, wrong secret", secretTry(t.clientId, `${t.clientSecret}x`), "ORGS.authenticateClient"],
      ["revoked credential, right secret", secretTry(revoked.client_id, revoked.client_secret), "ORGS.authenticateClient"],
      [
        "unknown client_id, an assertion",
        {
          grant_type: "client_credentials",
          client_assertion_type: JWT_BEARER,
          client_assertion: await assertion(pair, "kw_client_AAAAAAAAAAAAAAAAAAAAAA"),
        },
        "ORGS.authenticateAssertion",
      ],
      [
        "known client_id, an assertion by another key",
        { grant_type: "client_credentials", client_assertion_type: JWT_BEARER, client_assertion: await assertion(other, jwt.client_id) },
        "ORGS.authenticateAssertion",
      ],
    ];
    for (const [name, fields, decider] of tries) {
      const { bindings, calls } = counting();
      const res = await callAt(Date.now(), "/v1/oauth/token", form(t, fields), bindings);
      expect(res.status, name).toBe(401);
      expect((await plainJson(res)).error, name).toBe("invalid_client");
      // The key's object admits, then the organization's object decides: the same two calls.
      expect(calls, name).toEqual(["KEYS.admit", decider]);
    }
    // A success with a copy in KV stays one call.
    const { bindings, calls } = counting();
    const ok = await callAt(Date.now(), "/v1/oauth/token", form(t, secretTry(t.clientId, t.clientSecret)), bindings);
    expect(ok.status).toBe(200);
    expect(calls).toEqual(["KEYS.admit"]);
  });

  it("does the same work for an unknown client_id, new or seen, as for a client in use with a wrong secret: KV reads, object calls, digests, comparisons", async () => {
    const t = await createTenant();
    const secretTry = (clientId: string, secret: string) => ({
      grant_type: "client_credentials",
      client_id: clientId,
      client_secret: secret,
    });
    /** One request, with every KV read, object call and crypto.subtle digest and comparison it makes (the objects share these globals). */
    const measure = async (fields: Record<string, string>) => {
      const { bindings, calls } = counting();
      const kv: string[] = [];
      const realKv = bindings.KV;
      bindings.KV = new Proxy(realKv, {
        get(target, prop) {
          const value = Reflect.get(target, prop) as unknown;
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            kv.push(`KV.${String(prop)}`);
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const digest = vi.spyOn(crypto.subtle, "digest");
      const compare = vi.spyOn(crypto.subtle, "timingSafeEqual");
      try {
        const res = await callAt(Date.now(), "/v1/oauth/token", form(t, fields), bindings);
        return { status: res.status, kv, calls, digests: digest.mock.calls.length, comparisons: compare.mock.calls.length };
      } finally {
        digest.mockRestore();
        compare.mockRestore();
      }
    };
    // The client in use: its copy is held by this isolate (and its once-a-minute use noted).
    expect((await measure(secretTry(t.clientId, t.clientSecret))).status).toBe(200);
    const unknownId = `kw_client_${crypto.randomUUID().replaceAll("-", "").slice(0, 22)}`;
    const wrongSecret = await measure(secretTry(t.clientId, `${t.clientSecret}x`));
    const unknownNew = await measure(secretTry(unknownId, `${t.clientSecret}x`));
    const unknownSeen = await measure(secretTry(unknownId, `${t.clientSecret}x`));
    expect(wrongSecret).toMatchObject({ status: 401, kv: ["KV.get"], calls: ["KEYS.admit", "ORGS.authenticateClient"] });
    expect(unknownNew).toEqual(wrongSecret);
    expect(unknownSeen).toEqual(wrongSecret);
    // A success from the held copy still reads no KV and makes one call.
    expect(await measure(secretTry(t.clientId, t.clientSecret))).toMatchObject({ status: 200, kv: [], calls: ["KEYS.admit"] });
  });

  it("makes one call to the key's object for a /v1 request, Bearer or DPoP-bound, and for a DPoP proof one more beside it, to the ProofObject its id names (issue 41)", async () => {
    const t = await createTenant();
    const pair = await es256();
    const bearer = await issueToken(t);
    const res = await call(
      "/v1/oauth/token",
      form(
        t,
        { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret },
        { DPoP: await proof(pair, "POST", `${BASE}/v1/oauth/token`) },
      ),
    );
    const bound = String((await plainJson(res)).access_token);
    for (const [name, headers] of [
      ["Bearer", { "x-api-key": t.apiKey, Authorization: `Bearer ${bearer}` }],
      [
        "DPoP",
        {
          "x-api-key": t.apiKey,
          Authorization: `DPoP ${bound}`,
          DPoP: await proof(pair, "GET", `${BASE}/v1/me`, { ath: await athOf(bound) }),
        },
      ],
    ] as const) {
      const { bindings, calls } = counting();
      const answer = await callAt(Date.now(), "/v1/me", { headers }, bindings);
      expect(answer.status, name).toBe(200);
      // In parallel, so the request waits for the slower of the two, not for both in a row.
      expect([...calls].sort(), name).toEqual(name === "DPoP" ? ["KEYS.admit", "PROOFS.record"] : ["KEYS.admit"]);
    }
  });
});
