/**
 * API clients without shared secrets (issue 44), in the Workers runtime, with jose as the outside
 * library on every side keyway does not own: the workload issuer that signs JWTs, the
 * private_key_jwt client that publishes its keys at a URL, and the resource server that verifies
 * keyway's RFC 9068 access tokens against `/.well-known/jwks.json`. Issuers' and clients' key sets
 * are served by test/fake-network.ts, whose log counts every fetch keyway makes (the organization's
 * object's included); time moves with `callAt`, whose clock the Worker hands to the object.
 *
 * 1. Trusted issuers: registration (OIDC discovery, RFC 8414 fallback, explicit jwks_uri), its
 *    refusals, 409, list/get/delete, and deletion revoking the issuer's credentials.
 * 2. federated_jwt credentials: creation, a token with the issuer's JWT, each refusal, reuse.
 * 3. Key rotation at the issuer: the refetch on an unknown kid, at most once a minute, stale-if-error.
 * 4. jwks_uri private_key_jwt clients: a new key published and used with no call to keyway; PATCH.
 * 5. JWT access tokens: verified with jose, revocation, introspection, DPoP's cnf.jkt, forgeries.
 * 6. The hot path: a jwt-strategy client_secret credential costs what an opaque one does.
 * 7. A property: with assertion_reuse "once", each distinct JWT authenticates exactly once.
 * Each refusal sits next to the same request made right.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from "jose";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";
import { sha256Hex } from "../src/lib/crypto";
import { accessTokenKeys } from "../src/lib/token-keys";
import { fakeNetwork, type Handler, json, type Sent } from "./fake-network";
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
  type KeyPair,
  type Tenant,
} from "./helpers";

const JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const TOKEN_URL = `${BASE}/v1/oauth/token`;
const SUBJECT = "repo:octo-org/app:ref:refs/heads/main";
const nowS = (ms = Date.now()) => Math.floor(ms / 1000);

const es256 = () => generateKeyPair("ES256", { extractable: true });
const publicJwk = async (pair: KeyPair, kid: string): Promise<JWK> => ({
  ...(await exportJWK(pair.publicKey)),
  kid,
  alg: "ES256",
  use: "sig",
});

/**
 * A workload identity issuer as the fake network serves it: its OpenID Connect discovery document
 * and its JWK Set, which the test changes (`keys`) or breaks (`failing`) as the issuer would.
 */
class IssuerSite {
  keys: JWK[];
  failing = false;
  constructor(
    readonly issuer: string,
    keys: JWK[],
  ) {
    this.keys = keys;
  }
  get jwksUri(): string {
    return `${this.issuer}/jwks`;
  }
  routes(): Record<string, Handler> {
    return {
      [`${this.issuer}/.well-known/openid-configuration`]: () => json({ issuer: this.issuer, jwks_uri: this.jwksUri }),
      [this.jwksUri]: () => (this.failing ? json({ error: "unavailable" }, 503) : json({ keys: this.keys })),
    };
  }
  /** How many times keyway fetched the key set, by the log `sent`. */
  fetches(sent: Sent[]): number {
    return sent.filter((s) => s.url === this.jwksUri).length;
  }
}

interface WorkloadClaims {
  iss?: string;
  sub?: string;
  aud?: string | string[];
  /** The clock the JWT is made at, seconds (default: now). */
  at?: number;
  exp?: number;
  /** null: no iat. */
  iat?: number | null;
  /** null: no jti. */
  jti?: string | null;
  kid?: string;
  typ?: string;
}

/** A workload's JWT as its issuer signs it (a CI job's, a Kubernetes service account's). */
async function workloadJwt(pair: KeyPair, c: WorkloadClaims = {}): Promise<string> {
  const at = c.at ?? nowS();
  const payload: JWTPayload = { iss: c.iss ?? ISSUER, sub: c.sub ?? SUBJECT, aud: c.aud ?? BASE, exp: c.exp ?? at + 300 };
  if (c.iat !== null) payload.iat = c.iat ?? at;
  const jti = c.jti === undefined ? crypto.randomUUID() : c.jti;
  if (jti !== null) payload.jti = jti;
  return new SignJWT(payload)
    .setProtectedHeader({ alg: "ES256", kid: c.kid ?? "a1", ...(c.typ !== undefined ? { typ: c.typ } : {}) })
    .sign(pair.privateKey);
}

/** A private_key_jwt client assertion (RFC 7523 3) made at `at` seconds. */
async function clientAssertion(pair: KeyPair, clientId: string, kid: string, at = nowS()): Promise<string> {
  return new SignJWT({ jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: "ES256", kid })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(BASE)
    .setIssuedAt(at)
    .setExpirationTime(at + 60)
    .sign(pair.privateKey);
}

const form = (t: Tenant, fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey, ...headers },
  body: new URLSearchParams(fields).toString(),
});

const assertionFields = (clientId: string | undefined, jwt: string): Record<string, string> => ({
  grant_type: "client_credentials",
  ...(clientId !== undefined ? { client_id: clientId } : {}),
  client_assertion_type: JWT_BEARER,
  client_assertion: jwt,
});

/** POST /v1/oauth/token with a client assertion, now or at `atMs` (callAt's clock). */
function present(t: Tenant, clientId: string | undefined, jwt: string, atMs?: number): Promise<Response> {
  const init = form(t, assertionFields(clientId, jwt));
  return atMs === undefined ? call("/v1/oauth/token", init) : callAt(atMs, "/v1/oauth/token", init);
}

async function plainJson(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

/** The status and, for a refusal, the OAuth error of a token request. */
async function outcome(res: Response): Promise<string> {
  const answer = await plainJson(res);
  return res.status === 200 ? "200" : `${res.status} ${String(answer.error)}`;
}

const issuersPath = (t: Tenant) => `/organizations/${t.orgId}/trusted-issuers`;
const credentialsPath = (t: Tenant) => `/organizations/${t.orgId}/users/${t.userId}/client-credentials`;

interface IssuerView {
  id: string;
  issuer: string;
  jwks_uri: string;
  jwks_uri_source: "registered" | "discovered";
  assertion_reuse: "once" | "until_expiry";
  max_assertion_lifetime_seconds: number;
  key_set: { fetched_at: string; key_ids: (string | null)[] } | null;
}

interface CredentialView {
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method: string;
  jwks: { keys: JWK[] } | null;
  jwks_uri: string | null;
  federated: { issuer: string; subject: string } | null;
  access_token_strategy: "opaque" | "jwt";
  revoked_at: string | null;
}

const trust = (t: Tenant, input: Record<string, unknown>) => admin<IssuerView>("POST", issuersPath(t), input);
/** A federated credential; one per issuer and subject may be active (409 otherwise), so tests needing two name two subjects. */
const federatedClient = (t: Tenant, issuer: string, extra: Record<string, unknown> = {}, subject = SUBJECT) =>
  admin<CredentialView>("POST", credentialsPath(t), {
    token_endpoint_auth_method: "federated_jwt",
    federated: { issuer, subject },
    ...extra,
  });

const ISSUER = "https://issuer.example";
let keyA: KeyPair;
let keyB: KeyPair;
let stranger: KeyPair;
let jwkA: JWK;
let jwkB: JWK;

beforeAll(async () => {
  [keyA, keyB, stranger] = await Promise.all([es256(), es256(), es256()]);
  [jwkA, jwkB] = await Promise.all([publicJwk(keyA, "a1"), publicJwk(keyB, "b1")]);
});

describe("trusted issuers", () => {
  it("registers an issuer by OpenID Connect discovery, fetching its key set once", async () => {
    const site = new IssuerSite(ISSUER, [jwkA]);
    const sent = fakeNetwork(site.routes());
    const t = await createTenant();
    const res = await adminCall("POST", issuersPath(t), { issuer: ISSUER, name: "CI" });
    const created = await body<IssuerView>(res);
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(created.data).toMatchObject({
      issuer: ISSUER,
      jwks_uri: site.jwksUri,
      jwks_uri_source: "discovered",
      assertion_reuse: "once",
      max_assertion_lifetime_seconds: 3600,
      key_set: { key_ids: ["a1"] },
    });
    expect(res.headers.get("Location")).toContain(`/trusted-issuers/${created.data.id}`);
    expect(sent.map((s) => s.url)).toEqual([`${ISSUER}/.well-known/openid-configuration`, site.jwksUri]);
  });

  it("falls back to RFC 8414 metadata (the well-known suffix before the issuer's path) when there is no OpenID document", async () => {
    const issuer = "https://idp.example/tenants/blue";
    const jwks = "https://idp.example/keys/blue";
    const sent = fakeNetwork({
      [`${issuer}/.well-known/openid-configuration`]: () => json({ error: "not found" }, 404),
      "https://idp.example/.well-known/oauth-authorization-server/tenants/blue": () => json({ issuer, jwks_uri: jwks }),
      [jwks]: () => json({ keys: [jwkA] }),
    });
    const t = await createTenant();
    const created = await trust(t, { issuer });
    expect(created).toMatchObject({ issuer, jwks_uri: jwks, jwks_uri_source: "discovered", key_set: { key_ids: ["a1"] } });
    expect(sent.map((s) => s.url)).toEqual([
      `${issuer}/.well-known/openid-configuration`,
      "https://idp.example/.well-known/oauth-authorization-server/tenants/blue",
      jwks,
    ]);
  });

  it("takes an explicit jwks_uri without any discovery", async () => {
    const explicit = "https://keys.example/ci.json";
    const sent = fakeNetwork({ [explicit]: () => json({ keys: [jwkA, jwkB] }) });
    const t = await createTenant();
    const created = await trust(t, { issuer: "https://ci.example", jwks_uri: explicit, assertion_reuse: "until_expiry" });
    expect(created).toMatchObject({
      jwks_uri: explicit,
      jwks_uri_source: "registered",
      assertion_reuse: "until_expiry",
      key_set: { key_ids: ["a1", "b1"] },
    });
    expect(sent.map((s) => s.url)).toEqual([explicit]);
  });

  it("refuses (400) an issuer whose keys cannot be fetched, whose metadata names another issuer, or that is http; each next to the same made right", async () => {
    const t = await createTenant();
    const good = new IssuerSite("https://good.example", [jwkA]);
    fakeNetwork({
      ...good.routes(),
      // Discovery works but the key set is unreachable (no route: the connection fails).
      "https://nokeys.example/.well-known/openid-configuration": () =>
        json({ issuer: "https://nokeys.example", jwks_uri: "https://nokeys.example/jwks" }),
      // Metadata that names someone else (OIDC Discovery 4.3).
      "https://liar.example/.well-known/openid-configuration": () =>
        json({ issuer: "https://good.example", jwks_uri: "https://good.example/jwks" }),
      "http://127.0.0.1:8787/.well-known/openid-configuration": () =>
        json({ issuer: "http://127.0.0.1:8787", jwks_uri: "http://127.0.0.1:8787/jwks" }),
      "http://127.0.0.1:8787/jwks": () => json({ keys: [jwkA] }),
    });
    const refusals: [string, Record<string, unknown>, RegExp][] = [
      ["unreachable key set", { issuer: "https://nokeys.example" }, /issuer key set request failed/],
      [
        "unreachable explicit jwks_uri",
        { issuer: "https://good.example", jwks_uri: "https://good.example/gone" },
        /jwks_uri key set request failed/,
      ],
      ["metadata of another issuer", { issuer: "https://liar.example" }, /names another issuer/],
      ["http issuer", { issuer: "http://127.0.0.1:8787" }, /issuer url must use https/],
    ];
    for (const [name, input, message] of refusals) {
      const res = await adminCall("POST", issuersPath(t), input);
      const answer = await body(res);
      expect(res.status, name).toBe(400);
      expect(answer.developer_message, name).toMatch(message);
    }
    expect((await adminCall("GET", issuersPath(t)).then((r) => body<IssuerView[]>(r))).data).toEqual([]);
    // Made right: the same issuer with its keys reachable, one whose metadata is its own, and the
    // http loopback issuer where insecure targets are allowed (WEBHOOK_ALLOW_INSECURE_TARGETS, as for webhooks).
    expect((await trust(t, { issuer: "https://good.example" })).key_set?.key_ids).toEqual(["a1"]);
    const t2 = await createTenant();
    expect((await trust(t2, { issuer: "https://good.example", jwks_uri: good.jwksUri })).jwks_uri_source).toBe("registered");
    const local = await callAt(
      Date.now(),
      `/admin/v1${issuersPath(t)}`,
      {
        method: "POST",
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": "application/json" },
        body: JSON.stringify({ issuer: "http://127.0.0.1:8787" }),
      },
      { ...env, WEBHOOK_ALLOW_INSECURE_TARGETS: "true" },
    );
    expect(local.status, JSON.stringify(await local.clone().json())).toBe(201);
    expect((await body<IssuerView>(local)).data.jwks_uri).toBe("http://127.0.0.1:8787/jwks");
  });

  it("answers 409 for an issuer already trusted; lists, gets and deletes", async () => {
    const site = new IssuerSite(ISSUER, [jwkA]);
    const other = new IssuerSite("https://other.example", [jwkB]);
    fakeNetwork({ ...site.routes(), ...other.routes() });
    const t = await createTenant();
    const first = await trust(t, { issuer: ISSUER });
    const again = await adminCall("POST", issuersPath(t), { issuer: ISSUER, jwks_uri: site.jwksUri });
    expect(again.status).toBe(409);
    // Another organization may trust the same issuer.
    expect((await trust(await createTenant(), { issuer: ISSUER })).issuer).toBe(ISSUER);
    const second = await trust(t, { issuer: other.issuer });
    const listed = await admin<IssuerView[]>("GET", issuersPath(t));
    expect(listed.map((i) => i.id).sort()).toEqual([first.id, second.id].sort());
    expect(await admin<IssuerView>("GET", `${issuersPath(t)}/${first.id}`)).toEqual(first);
    expect((await adminCall("GET", `${issuersPath(t)}/iss_00000000000000000000000000`)).status).toBe(404);
    expect((await admin<IssuerView>("DELETE", `${issuersPath(t)}/${first.id}`)).id).toBe(first.id);
    expect((await adminCall("GET", `${issuersPath(t)}/${first.id}`)).status).toBe(404);
    expect((await adminCall("DELETE", `${issuersPath(t)}/${first.id}`)).status).toBe(404);
    expect((await admin<IssuerView[]>("GET", issuersPath(t))).map((i) => i.id)).toEqual([second.id]);
    // Once removed it may be registered again.
    expect((await trust(t, { issuer: ISSUER })).issuer).toBe(ISSUER);
  });

  it("holds at most 20 issuers per organization (409), and 404s for an unknown organization", async () => {
    const t = await createTenant();
    const routes: Record<string, Handler> = {};
    for (let i = 0; i < 21; i++) routes[`https://issuer-${i}.example/jwks`] = () => json({ keys: [jwkA] });
    fakeNetwork(routes);
    for (let i = 0; i < 20; i++) await trust(t, { issuer: `https://issuer-${i}.example`, jwks_uri: `https://issuer-${i}.example/jwks` });
    const over = await adminCall("POST", issuersPath(t), {
      issuer: "https://issuer-20.example",
      jwks_uri: "https://issuer-20.example/jwks",
    });
    expect(over.status).toBe(409);
    const unknown = await adminCall("POST", "/organizations/org_00000000000000000000000000/trusted-issuers", {
      issuer: "https://issuer-20.example",
      jwks_uri: "https://issuer-20.example/jwks",
    });
    expect(unknown.status).toBe(404);
  });

  it("deleting an issuer revokes its federated credentials: the token endpoint answers 401 and an existing token is refused on the next request", async () => {
    const site = new IssuerSite(ISSUER, [jwkA]);
    fakeNetwork(site.routes());
    const t = await createTenant();
    const issuer = await trust(t, { issuer: ISSUER });
    const cred = await federatedClient(t, ISSUER);
    const jwtSubject = `${SUBJECT}:jwt`;
    const jwtCred = await federatedClient(t, ISSUER, { access_token_strategy: "jwt" }, jwtSubject);
    const subjects = new Map([
      [cred.client_id, SUBJECT],
      [jwtCred.client_id, jwtSubject],
    ]);
    const tokens: string[] = [];
    for (const c of [cred, jwtCred]) {
      const res = await present(t, c.client_id, await workloadJwt(keyA, { sub: subjects.get(c.client_id) }));
      expect(res.status).toBe(200);
      tokens.push(String((await plainJson(res)).access_token));
    }
    expect(tokens[0]).toMatch(/^kw_at_/);
    expect(decodeProtectedHeader(tokens[1] as string).typ).toBe("at+jwt");
    for (const token of tokens) expect((await call("/v1/me", authed(t, token))).status).toBe(200);
    // The secret credential of the same organization is not touched.
    const untouched = await call(
      "/v1/oauth/token",
      form(t, { grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret }),
    );
    expect(untouched.status).toBe(200);

    await admin("DELETE", `${issuersPath(t)}/${issuer.id}`);
    for (const token of tokens) expect((await call("/v1/me", authed(t, token))).status).toBe(401);
    for (const c of [cred, jwtCred]) {
      const res = await present(t, c.client_id, await workloadJwt(keyA, { sub: subjects.get(c.client_id) }));
      expect(await outcome(res)).toBe("401 invalid_client");
      expect((await admin<CredentialView>("GET", `${credentialsPath(t)}/${c.client_id}`)).revoked_at).not.toBeNull();
    }
    const secretToken = String((await plainJson(untouched)).access_token);
    expect((await call("/v1/me", authed(t, secretToken))).status).toBe(200);
  });
});

describe("federated_jwt credentials", () => {
  const site = new IssuerSite(ISSUER, []);
  let t: Tenant;
  let cred: CredentialView;
  beforeAll(async () => {
    site.keys = [jwkA];
    fakeNetwork(site.routes());
    t = await createTenant();
    await trust(t, { issuer: ISSUER, max_assertion_lifetime_seconds: 600 });
    cred = await federatedClient(t, ISSUER);
  });
  beforeEach(() => {
    site.keys = [jwkA];
    fakeNetwork(site.routes());
  });

  it("is refused at creation (400) for an issuer not trusted or without federated; made right it has no secret", async () => {
    const untrusted = await adminCall("POST", credentialsPath(t), {
      token_endpoint_auth_method: "federated_jwt",
      federated: { issuer: "https://stranger.example", subject: SUBJECT },
    });
    expect(untrusted.status).toBe(400);
    expect((await body(untrusted)).developer_message).toMatch(/trusted issuers/);
    const missing = await adminCall("POST", credentialsPath(t), { token_endpoint_auth_method: "federated_jwt" });
    expect(missing.status).toBe(400);
    expect((await body(missing)).developer_message).toMatch(/federated/);
    const misplaced = await adminCall("POST", credentialsPath(t), { federated: { issuer: ISSUER, subject: SUBJECT } });
    expect(misplaced.status).toBe(400);

    const res = await adminCall("POST", credentialsPath(t), {
      token_endpoint_auth_method: "federated_jwt",
      federated: { issuer: ISSUER, subject: `${SUBJECT}:created` },
    });
    const created = await body<CredentialView>(res);
    expect(res.status).toBe(201);
    expect(created.data).toMatchObject({
      token_endpoint_auth_method: "federated_jwt",
      federated: { issuer: ISSUER, subject: `${SUBJECT}:created` },
      jwks: null,
      jwks_uri: null,
      access_token_strategy: "opaque",
    });
    expect(created.data).not.toHaveProperty("client_secret");
  });

  it("gets a token with its issuer's JWT, audience keyway's issuer or its token URL", async () => {
    for (const aud of [BASE, TOKEN_URL, [TOKEN_URL, "https://elsewhere.example"]]) {
      const res = await present(t, cred.client_id, await workloadJwt(keyA, { aud }));
      const answer = await plainJson(res);
      expect(res.status, JSON.stringify(answer)).toBe(200);
      expect(answer).toMatchObject({ token_type: "Bearer" });
      expect(String(answer.access_token)).toMatch(/^kw_at_/);
      const me = await call("/v1/me", authed(t, String(answer.access_token)));
      expect(me.status).toBe(200);
      expect((await body<{ client_id: string }>(me)).data.client_id).toBe(cred.client_id);
    }
  });

  it("answers 401 invalid_client for each fault, each next to the same JWT made right", async () => {
    const at = nowS();
    const hs256 = async () =>
      new SignJWT({ iss: ISSUER, sub: SUBJECT, aud: BASE, iat: at, exp: at + 300, jti: crypto.randomUUID() })
        .setProtectedHeader({ alg: "HS256", kid: "a1" })
        .sign(new Uint8Array(32).fill(7));
    const cases: [string, () => Promise<string>, string | undefined][] = [
      ["wrong sub", () => workloadJwt(keyA, { sub: "repo:octo-org/app:ref:refs/heads/feature" }), cred.client_id],
      ["wrong aud", () => workloadJwt(keyA, { aud: "https://elsewhere.example" }), cred.client_id],
      ["wrong iss", () => workloadJwt(keyA, { iss: "https://other.example" }), cred.client_id],
      ["a key not in the issuer's set (unknown kid)", () => workloadJwt(stranger, { kid: "zz" }), cred.client_id],
      ["a key not in the issuer's set (its kid)", () => workloadJwt(stranger), cred.client_id],
      ["expired", () => workloadJwt(keyA, { iat: at - 400, exp: at - 60 }), cred.client_id],
      ["exp beyond max_assertion_lifetime_seconds", () => workloadJwt(keyA, { exp: at + 900 }), cred.client_id],
      ["lifetime (exp - iat) beyond the maximum", () => workloadJwt(keyA, { iat: at - 500, exp: at + 200 }), cred.client_id],
      ["alg HS256", hs256, cred.client_id],
      ["typ at+jwt", () => workloadJwt(keyA, { typ: "at+jwt" }), cred.client_id],
      ["typ dpop+jwt", () => workloadJwt(keyA, { typ: "dpop+jwt" }), cred.client_id],
      ["no client_id", () => workloadJwt(keyA), undefined],
      ["another credential's client_id", () => workloadJwt(keyA), t.clientId],
    ];
    for (const [name, make, clientId] of cases) {
      expect(await outcome(await present(t, clientId, await make())), name).toBe("401 invalid_client");
      expect(await outcome(await present(t, cred.client_id, await workloadJwt(keyA))), `${name}, made right`).toBe("200");
    }
    // The types an assertion may carry, and exp just inside the maximum.
    for (const typ of ["JWT", "client-authentication+jwt"]) {
      expect(await outcome(await present(t, cred.client_id, await workloadJwt(keyA, { typ }))), typ).toBe("200");
    }
    expect(await outcome(await present(t, cred.client_id, await workloadJwt(keyA, { exp: at + 590 })))).toBe("200");
  });

  it("says which claim failed where that tells nothing about whether the client exists, and answers the same for an unknown client", async () => {
    const at = nowS();
    const hs256 = () =>
      new SignJWT({ iss: ISSUER, sub: SUBJECT, aud: BASE, iat: at, exp: at + 300, jti: crypto.randomUUID() })
        .setProtectedHeader({ alg: "HS256", kid: "a1" })
        .sign(new Uint8Array(32).fill(7));
    const said: [string, () => Promise<string>, RegExp][] = [
      [
        "wrong aud",
        () => workloadJwt(keyA, { aud: "https://elsewhere.example" }),
        /its aud names none of this deployment's audiences: use https:\/\//,
      ],
      ["expired", () => workloadJwt(keyA, { iat: at - 400, exp: at - 60 }), /it expired at \d{4}-.*keyway's clock/],
      ["alg HS256", hs256, /its alg HS256 is not one keyway verifies/],
      ["typ at+jwt", () => workloadJwt(keyA, { typ: "at+jwt" }), /its typ at\+jwt is not a client assertion's/],
      ["not a JWT", async () => "not.a-jwt", /client_assertion is not a JWT/],
    ];
    const unknown = "kw_client_AAAAAAAAAAAAAAAAAAAAAA";
    for (const [name, make, reason] of said) {
      const jwt = await make();
      const answers = [];
      for (const clientId of [cred.client_id, unknown]) {
        const res = await present(t, clientId, jwt);
        const answer = await plainJson(res);
        expect(res.status, name).toBe(401);
        expect(answer.error, name).toBe("invalid_client");
        expect(String(answer.error_description), name).toMatch(reason);
        answers.push(answer.error_description);
      }
      expect(answers[0], `${name}: the same words whether the client exists or not`).toBe(answers[1]);
    }
    // What depends on the client (its issuer and subject, its keys) stays the one generic answer.
    for (const [name, make] of [
      ["wrong sub", () => workloadJwt(keyA, { sub: "repo:octo-org/app:ref:refs/heads/feature" })],
      ["wrong iss", () => workloadJwt(keyA, { iss: "https://other.example" })],
      ["another key", () => workloadJwt(stranger)],
    ] as const) {
      const jwt = await make();
      const words = [];
      for (const clientId of [cred.client_id, unknown]) words.push((await plainJson(await present(t, clientId, jwt))).error_description);
      expect(words[0], name).toMatch(/^Client authentication failed: unknown client_id, wrong client_secret or client assertion/);
      expect(words[1], name).toBe(words[0]);
    }
  });

  it("verifies a JWT without kid against every key of the set", async () => {
    site.keys = [jwkB, jwkA];
    const t2 = await createTenant();
    fakeNetwork(site.routes());
    await trust(t2, { issuer: ISSUER });
    const c = await federatedClient(t2, ISSUER);
    const noKid = async (pair: KeyPair) => {
      const at = nowS();
      return new SignJWT({ iss: ISSUER, sub: SUBJECT, aud: BASE, iat: at, exp: at + 300, jti: crypto.randomUUID() })
        .setProtectedHeader({ alg: "ES256" })
        .sign(pair.privateKey);
    };
    expect(await outcome(await present(t2, c.client_id, await noKid(keyA))), "second key of the set").toBe("200");
    expect(await outcome(await present(t2, c.client_id, await noKid(keyB))), "first key of the set").toBe("200");
    expect(await outcome(await present(t2, c.client_id, await noKid(stranger))), "no key of the set").toBe("401 invalid_client");
  });

  it("authenticates with the held keys in the usual two calls, no fetch; DPoP-bound and as a JWT access token when asked", async () => {
    const sent = fakeNetwork(site.routes());
    const { bindings, calls } = counting();
    const res = await callAt(Date.now(), "/v1/oauth/token", form(t, assertionFields(cred.client_id, await workloadJwt(keyA))), bindings);
    expect(res.status).toBe(200);
    expect(calls).toEqual(["KEYS.admit", "ORGS.authenticateAssertion"]);
    expect(sent).toEqual([]);

    const boundSubject = `${SUBJECT}:bound`;
    const bound = await federatedClient(t, ISSUER, { access_token_strategy: "jwt", dpop_bound_access_tokens: true }, boundSubject);
    expect(await outcome(await present(t, bound.client_id, await workloadJwt(keyA, { sub: boundSubject })))).toBe("400 invalid_dpop_proof");
    const pair = await es256();
    const answer = await plainJson(
      await call(
        "/v1/oauth/token",
        form(t, assertionFields(bound.client_id, await workloadJwt(keyA, { sub: boundSubject })), {
          DPoP: await dpopProof(pair, "POST", TOKEN_URL),
        }),
      ),
    );
    expect(answer.token_type).toBe("DPoP");
    const claims = JSON.parse(
      new TextDecoder().decode(Uint8Array.fromBase64(String(answer.access_token).split(".")[1] as string, { alphabet: "base64url" })),
    );
    expect(claims).toMatchObject({
      client_id: bound.client_id,
      cnf: { jkt: await calculateJwkThumbprint(await exportJWK(pair.publicKey), "sha256") },
    });
  });

  it("authenticates at the envelope endpoint (JSON) and at introspection too, aud naming that endpoint", async () => {
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey },
      body: JSON.stringify(assertionFields(cred.client_id, await workloadJwt(keyA, { aud: `${BASE}/v1/oauth` }))),
    });
    const answer = await body<{ access_token: string }>(res);
    expect(res.status, JSON.stringify(answer)).toBe(200);
    const token = answer.data.access_token;
    const introspected = await plainJson(
      await call(
        "/v1/oauth/introspect",
        form(t, { token, ...assertionFields(cred.client_id, await workloadJwt(keyA, { aud: `${BASE}/v1/oauth/introspect` })) }),
      ),
    );
    expect(introspected).toMatchObject({ active: true, client_id: cred.client_id });
    const refused = await call(
      "/v1/oauth/introspect",
      form(t, { token, ...assertionFields(cred.client_id, await workloadJwt(keyA, { sub: "someone-else" })) }),
    );
    expect(refused.status).toBe(401);
  });

  it('with "once", a JWT used by one credential is refused for its successor of the same subject (the jti is the issuer\'s)', async () => {
    const subject = `${SUBJECT}:twin`;
    const first = await federatedClient(t, ISSUER, {}, subject);
    const jwt = await workloadJwt(keyA, { sub: subject });
    expect(await outcome(await present(t, first.client_id, jwt))).toBe("200");
    await admin("DELETE", `${credentialsPath(t)}/${first.client_id}`);
    const twin = await federatedClient(t, ISSUER, {}, subject);
    expect(await outcome(await present(t, twin.client_id, jwt))).toBe("401 invalid_client");
    expect(await outcome(await present(t, twin.client_id, await workloadJwt(keyA, { sub: subject })))).toBe("200");
  });

  it('with "once", a JWT used at one organization is refused at another that trusts the same issuer and subject (recorded per issuer, not per organization)', async () => {
    const subject = `${SUBJECT}:two-orgs`;
    const t2 = await createTenant();
    await trust(t2, { issuer: ISSUER, max_assertion_lifetime_seconds: 600 });
    const here = await federatedClient(t, ISSUER, {}, subject);
    const there = await federatedClient(t2, ISSUER, {}, subject);
    const jwt = await workloadJwt(keyA, { sub: subject });
    expect(await outcome(await present(t, here.client_id, jwt)), "first use, organization A").toBe("200");
    expect(await outcome(await present(t2, there.client_id, jwt)), "the same JWT at organization B").toBe("401 invalid_client");
    expect(await outcome(await present(t2, there.client_id, await workloadJwt(keyA, { sub: subject }))), "another jti at B").toBe("200");
    // And the other way round: first used at B, then refused at A.
    const other = await workloadJwt(keyA, { sub: subject });
    expect(await outcome(await present(t2, there.client_id, other))).toBe("200");
    expect(await outcome(await present(t, here.client_id, other))).toBe("401 invalid_client");
  });

  it("a JWT recorded in the organization's own ledger (where the release before the ProofObjects kept it) stays used until it expires", async () => {
    const subject = `${SUBJECT}:ledger`;
    const c = await federatedClient(t, ISSUER, {}, subject);
    const jti = crypto.randomUUID();
    const hash = await sha256Hex(`iss ${ISSUER} ${jti}`);
    await runInDurableObject(env.ORGS.get(env.ORGS.idFromName(t.orgId)), (_i, state) => {
      state.storage.sql.exec("INSERT INTO assertion_jtis (jti_hash, expires_ms) VALUES (?, ?)", hash, Date.now() + 360_000);
    });
    expect(await outcome(await present(t, c.client_id, await workloadJwt(keyA, { sub: subject, jti })))).toBe("401 invalid_client");
    expect(await outcome(await present(t, c.client_id, await workloadJwt(keyA, { sub: subject })))).toBe("200");
  });

  it('assertion_reuse "once" refuses the second use of a JWT and a JWT without jti; "until_expiry" accepts both', async () => {
    const once = await workloadJwt(keyA);
    expect(await outcome(await present(t, cred.client_id, once))).toBe("200");
    expect(await outcome(await present(t, cred.client_id, once))).toBe("401 invalid_client");
    expect(await outcome(await present(t, cred.client_id, await workloadJwt(keyA, { jti: null })))).toBe("401 invalid_client");
    expect(await outcome(await present(t, cred.client_id, await workloadJwt(keyA)))).toBe("200");

    const reusable = new IssuerSite("https://k8s.example", [jwkB]);
    fakeNetwork({ ...site.routes(), ...reusable.routes() });
    await trust(t, { issuer: reusable.issuer, assertion_reuse: "until_expiry" });
    const workload = await federatedClient(t, reusable.issuer);
    const projected = await workloadJwt(keyB, { iss: reusable.issuer, kid: "b1" });
    const noJti = await workloadJwt(keyB, { iss: reusable.issuer, kid: "b1", jti: null });
    for (let i = 0; i < 3; i++) {
      expect(await outcome(await present(t, workload.client_id, projected)), `use ${i + 1}`).toBe("200");
      expect(await outcome(await present(t, workload.client_id, noJti)), `no jti, use ${i + 1}`).toBe("200");
    }
    // The lifetime bound still holds: an expired one is refused however reusable.
    const at = nowS();
    const expired = await workloadJwt(keyB, { iss: reusable.issuer, kid: "b1", iat: at - 400, exp: at - 60 });
    expect(await outcome(await present(t, workload.client_id, expired))).toBe("401 invalid_client");
  });
});

describe("key rotation at the issuer", () => {
  it("accepts a new key after the refetch, refetches at most once a minute for unknown kids, and keeps the held keys when the set fails", async () => {
    const site = new IssuerSite(ISSUER, [jwkA]);
    const sent = fakeNetwork(site.routes());
    const t = await createTenant();
    const t0 = Date.now();
    const issuer = await trust(t, { issuer: ISSUER });
    const cred = await federatedClient(t, ISSUER);
    const at = (ms: number, pair: KeyPair, kid: string) => workloadJwt(pair, { kid, at: nowS(ms) });
    const tryAt = async (ms: number, pair: KeyPair, kid: string) => outcome(await present(t, cred.client_id, await at(ms, pair, kid), ms));
    expect(site.fetches(sent)).toBe(1);
    expect(await tryAt(t0 + 1_000, keyA, "a1")).toBe("200");
    expect(site.fetches(sent)).toBe(1);

    // The issuer rotates to B. Within a minute of the last fetch (the registration's) B is not fetched yet.
    site.keys = [jwkB];
    expect(await tryAt(t0 + 2_000, keyB, "b1")).toBe("401 invalid_client");
    expect(site.fetches(sent)).toBe(1);
    const t1 = t0 + 65_000;
    expect(await tryAt(t1, keyB, "b1")).toBe("200");
    expect(site.fetches(sent)).toBe(2);
    expect(await tryAt(t1 + 500, keyB, "b1")).toBe("200");
    expect(await tryAt(t1 + 600, keyA, "a1")).toBe("401 invalid_client");
    expect(site.fetches(sent)).toBe(2);
    expect((await admin<IssuerView>("GET", `/organizations/${t.orgId}/trusted-issuers/${issuer.id}`)).key_set?.key_ids).toEqual(["b1"]);

    // A burst of made-up kids a minute later: one refetch, and B still works beside it.
    const t2 = t1 + 61_000;
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => tryAt(t2 + i, stranger, `made-up-${i}`)));
    expect(burst).toEqual(Array(8).fill("401 invalid_client"));
    expect(await tryAt(t2 + 10, keyB, "b1")).toBe("200");
    expect(site.fetches(sent)).toBe(3);
    for (let i = 0; i < 5; i++) expect(await tryAt(t2 + 30_000 + i, stranger, `later-${i}`)).toBe("401 invalid_client");
    expect(site.fetches(sent)).toBe(3);
    // 60 s after the last attempt another refetch is allowed.
    const t3 = t2 + 60_000;
    expect(await tryAt(t3, stranger, "again")).toBe("401 invalid_client");
    expect(site.fetches(sent)).toBe(4);

    // Stale-if-error: the set is past its freshness (1 h without Cache-Control) and its URL fails:
    // the held key still verifies, after one attempt.
    site.failing = true;
    const stale = t3 + 2 * 3600_000;
    expect(await tryAt(stale, keyB, "b1")).toBe("200");
    expect(site.fetches(sent)).toBe(5);
    expect(await tryAt(stale + 1_000, keyB, "b1")).toBe("200");
    expect(site.fetches(sent)).toBe(5);
    // A day after the last good fetch, with the URL still failing, it fails closed.
    expect(await tryAt(t3 + 25 * 3600_000, keyB, "b1")).toBe("401 invalid_client");
    expect(site.fetches(sent)).toBe(6);
    // The issuer recovers: the next attempt, a minute later, fetches and accepts.
    site.failing = false;
    expect(await tryAt(t3 + 25 * 3600_000 + 61_000, keyB, "b1")).toBe("200");
    expect(site.fetches(sent)).toBe(7);
  });
});

describe("key set freshness", () => {
  it("keeps a set for its max-age clamped to [5 min, 1 h] (5 min for no-store), then fetches it again even for a known kid", async () => {
    let cacheControl = "max-age=60";
    const jwksUrl = "https://fresh.example/jwks";
    const sent = fakeNetwork({ [jwksUrl]: () => json({ keys: [jwkA] }, 200, { "Cache-Control": cacheControl }) });
    const fetches = () => sent.filter((r) => r.url === jwksUrl).length;
    const t = await createTenant();
    const t0 = Date.now();
    await trust(t, { issuer: "https://fresh.example", jwks_uri: jwksUrl });
    const cred = await federatedClient(t, "https://fresh.example");
    const tryAt = async (ms: number) =>
      outcome(await present(t, cred.client_id, await workloadJwt(keyA, { iss: "https://fresh.example", at: nowS(ms) }), ms));
    // max-age=60 is read as 5 minutes: no fetch at 4 minutes, one after 5.
    expect(await tryAt(t0 + 240_000)).toBe("200");
    expect(fetches()).toBe(1);
    cacheControl = `max-age=${7 * 86_400}`;
    expect(await tryAt(t0 + 301_000)).toBe("200");
    expect(fetches()).toBe(2);
    // A week's max-age is read as one hour: a key the issuer withdrew stops within the hour.
    expect(await tryAt(t0 + 301_000 + 59 * 60_000)).toBe("200");
    expect(fetches()).toBe(2);
    cacheControl = "no-store";
    expect(await tryAt(t0 + 302_000 + 3600_000)).toBe("200");
    expect(fetches()).toBe(3);
    // no-store is read as the shortest, 5 minutes (not as "none said": an hour).
    expect(await tryAt(t0 + 303_000 + 3600_000 + 300_000)).toBe("200");
    expect(fetches()).toBe(4);
  });

  it("refreshes an issuer's set at the operator's request: a withdrawn key stops at once (404 for an unknown issuer, 400 when unreachable)", async () => {
    let published: JWK[] = [jwkA];
    let up = true;
    const jwksUrl = "https://refresh.example/jwks";
    fakeNetwork({ [jwksUrl]: () => (up ? json({ keys: published }) : new Response("down", { status: 503 })) });
    const t = await createTenant();
    const issuer = await trust(t, { issuer: "https://refresh.example", jwks_uri: jwksUrl });
    const cred = await federatedClient(t, "https://refresh.example");
    const jwt = () => workloadJwt(keyA, { iss: "https://refresh.example" });
    expect(await outcome(await present(t, cred.client_id, await jwt()))).toBe("200");
    published = [jwkB];
    // Still held: the set is fresh for an hour.
    expect(await outcome(await present(t, cred.client_id, await jwt()))).toBe("200");
    const path = `/organizations/${t.orgId}/trusted-issuers/${issuer.id}/refresh-keys`;
    const refreshed = await adminCall("POST", path);
    expect(refreshed.status).toBe(200);
    expect(((await refreshed.json()) as { data: { key_set: { key_ids: string[] } } }).data.key_set.key_ids).toEqual([jwkB.kid]);
    expect(await outcome(await present(t, cred.client_id, await jwt()))).toBe("401 invalid_client");
    up = false;
    expect((await adminCall("POST", path)).status).toBe(400);
    const unknown = await adminCall("POST", `/organizations/${t.orgId}/trusted-issuers/iss_00000000000000000000000000/refresh-keys`);
    expect(unknown.status).toBe(404);
  });

  it("refuses a second active credential for the same issuer and subject (409), and allows it once the first is revoked", async () => {
    const dup = "https://dup.example";
    fakeNetwork({ [`${dup}/jwks`]: () => json({ keys: [jwkA] }) });
    const t = await createTenant();
    await trust(t, { issuer: dup, jwks_uri: `${dup}/jwks` });
    const first = await federatedClient(t, dup);
    const again = await adminCall("POST", `/organizations/${t.orgId}/users/${t.userId}/client-credentials`, {
      token_endpoint_auth_method: "federated_jwt",
      federated: { issuer: dup, subject: SUBJECT },
    });
    expect(again.status).toBe(409);
    await adminCall("DELETE", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${first.client_id}`);
    const after = await adminCall("POST", `/organizations/${t.orgId}/users/${t.userId}/client-credentials`, {
      token_endpoint_auth_method: "federated_jwt",
      federated: { issuer: dup, subject: SUBJECT },
    });
    expect(after.status).toBe(201);
  });
});

describe("private_key_jwt with jwks_uri", () => {
  const KEYS_URL = "https://client.example/jwks.json";

  it("is fetched at creation (400 when unreachable), then accepts a key the client publishes with no call to keyway", async () => {
    const [k1, k2, k3] = await Promise.all([es256(), es256(), es256()]);
    const published: JWK[] = [await publicJwk(k1, "k1")];
    const sent = fakeNetwork({ [KEYS_URL]: () => json({ keys: published }) });
    const fetches = () => sent.filter((s) => s.url === KEYS_URL).length;
    const t = await createTenant();
    const unreachable = await adminCall("POST", credentialsPath(t), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks_uri: "https://client.example/missing.json",
    });
    expect(unreachable.status).toBe(400);
    expect((await body(unreachable)).developer_message).toMatch(/jwks_uri/);
    const both = await adminCall("POST", credentialsPath(t), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks_uri: KEYS_URL,
      jwks: { keys: published },
    });
    expect(both.status).toBe(400);

    const t0 = Date.now();
    const cred = await admin<CredentialView>("POST", credentialsPath(t), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks_uri: KEYS_URL,
    });
    expect(cred).toMatchObject({ token_endpoint_auth_method: "private_key_jwt", jwks_uri: KEYS_URL, jwks: null });
    expect(cred).not.toHaveProperty("client_secret");
    expect(fetches()).toBe(1);
    const tryAt = async (ms: number, pair: KeyPair, kid: string) =>
      outcome(await present(t, cred.client_id, await clientAssertion(pair, cred.client_id, kid, nowS(ms)), ms));
    expect(await tryAt(t0 + 1_000, k1, "k1")).toBe("200");

    // The client publishes k2 and signs with it: accepted once the once-a-minute bound allows the refetch.
    published.push(await publicJwk(k2, "k2"));
    expect(await tryAt(t0 + 2_000, k2, "k2")).toBe("401 invalid_client");
    expect(await tryAt(t0 + 65_000, k2, "k2")).toBe("200");
    expect(fetches()).toBe(2);
    published.splice(0, published.length, await publicJwk(k3, "k3"));
    expect(await tryAt(t0 + 130_000, k3, "k3")).toBe("200");
    expect(fetches()).toBe(3);
    // k1 and k2 are gone from the URL: refused (no refetch within the minute).
    expect(await tryAt(t0 + 131_000, k1, "k1")).toBe("401 invalid_client");
    expect(fetches()).toBe(3);
    // Another organization's client cannot use the URL-held keys of this one.
    const other = await createTenant();
    expect(await outcome(await present(other, cred.client_id, await clientAssertion(k3, cred.client_id, "k3")))).toBe("401 invalid_client");
  });

  it("moves by PATCH between jwks and jwks_uri", async () => {
    const [k1, k4] = await Promise.all([es256(), es256()]);
    const jwkOf1 = await publicJwk(k1, "k1");
    fakeNetwork({ [KEYS_URL]: () => json({ keys: [jwkOf1] }) });
    const t = await createTenant();
    const cred = await admin<CredentialView>("POST", credentialsPath(t), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks_uri: KEYS_URL,
    });
    const path = `${credentialsPath(t)}/${cred.client_id}`;
    const tryNow = async (pair: KeyPair, kid: string) =>
      outcome(await present(t, cred.client_id, await clientAssertion(pair, cred.client_id, kid)));
    expect(await tryNow(k1, "k1")).toBe("200");

    const toJwks = await admin<CredentialView>("PATCH", path, { jwks: { keys: [await publicJwk(k4, "k4")] } });
    expect(toJwks).toMatchObject({ jwks_uri: null, jwks: { keys: [expect.objectContaining({ kid: "k4" })] } });
    expect(await tryNow(k4, "k4")).toBe("200");
    expect(await tryNow(k1, "k1")).toBe("401 invalid_client");

    expect((await adminCall("PATCH", path, { jwks_uri: "https://client.example/missing.json" })).status).toBe(400);
    expect((await adminCall("PATCH", path, { jwks_uri: KEYS_URL, jwks: { keys: [jwkOf1] } })).status).toBe(400);
    expect(await tryNow(k4, "k4")).toBe("200");

    const toUri = await admin<CredentialView>("PATCH", path, { jwks_uri: KEYS_URL });
    expect(toUri).toMatchObject({ jwks_uri: KEYS_URL, jwks: null });
    expect(await tryNow(k1, "k1")).toBe("200");
    expect(await tryNow(k4, "k4")).toBe("401 invalid_client");

    // Neither is for a secret credential.
    const secretPath = `${credentialsPath(t)}/${t.clientId}`;
    expect((await adminCall("PATCH", secretPath, { jwks_uri: KEYS_URL })).status).toBe(400);
  });
});

describe("JWT access tokens (RFC 9068)", () => {
  let t: Tenant;
  let jt: Tenant;
  let keySet: JSONWebKeySet;
  beforeAll(async () => {
    t = await createTenant();
    const cred = await admin<CredentialView>("POST", credentialsPath(t), { access_token_strategy: "jwt" });
    expect(cred.access_token_strategy).toBe("jwt");
    jt = { ...t, clientId: cred.client_id, clientSecret: cred.client_secret as string };
    const res = await call("/.well-known/jwks.json");
    expect(res.status).toBe(200);
    keySet = (await res.json()) as JSONWebKeySet;
  });

  const tokenFor = async (c: Tenant, headers: Record<string, string> = {}) => {
    const res = await call(
      "/v1/oauth/token",
      form(c, { grant_type: "client_credentials", client_id: c.clientId, client_secret: c.clientSecret }, headers),
    );
    const answer = await plainJson(res);
    expect(res.status, JSON.stringify(answer)).toBe(200);
    return answer as { access_token: string; token_type: string; expires_in: number; scope: string };
  };
  const verifyAsResourceServer = (token: string) =>
    jwtVerify(token, createLocalJWKSet(keySet), { typ: "at+jwt", algorithms: ["ES256"], issuer: BASE, audience: BASE });
  const revoke = (c: Tenant, token: string) =>
    call("/v1/oauth/revoke", form(c, { token, client_id: c.clientId, client_secret: c.clientSecret }));
  const introspect = async (c: Tenant, token: string) =>
    plainJson(await call("/v1/oauth/introspect", form(c, { token, client_id: c.clientId, client_secret: c.clientSecret })));

  it("serves its key set at the metadata's jwks_uri, without an API key, cacheable", async () => {
    const metadata = await plainJson(await call("/.well-known/oauth-authorization-server"));
    expect(metadata.jwks_uri).toBe(`${BASE}/.well-known/jwks.json`);
    const res = await call(new URL(String(metadata.jwks_uri)).pathname);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toMatch(/max-age=\d+/);
    expect(await res.json()).toEqual(keySet);
  });

  it("publishes public ES256 keys named by their thumbprints, and the token verifies with jose against them, with RFC 9068 2.2's claims", async () => {
    expect(keySet.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of keySet.keys) {
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
      expect(key).not.toHaveProperty("d");
      expect(key.kid).toBe(await calculateJwkThumbprint(key, "sha256"));
    }
    const answer = await tokenFor(jt);
    expect(answer.token_type).toBe("Bearer");
    const { payload, protectedHeader } = await verifyAsResourceServer(answer.access_token);
    expect(protectedHeader).toMatchObject({ alg: "ES256", typ: "at+jwt" });
    expect(keySet.keys.map((k) => k.kid)).toContain(protectedHeader.kid);
    expect(payload).toMatchObject({
      iss: BASE,
      aud: [BASE, `urn:keyway:org:${t.orgId}`],
      sub: t.userId,
      client_id: jt.clientId,
      scope: answer.scope,
    });
    expect(typeof payload.jti).toBe("string");
    expect(payload.iat).toBeTypeOf("number");
    expect((payload.exp as number) - (payload.iat as number)).toBe(answer.expires_in);
    expect(Math.abs((payload.iat as number) - nowS())).toBeLessThanOrEqual(5);
    expect(payload).not.toHaveProperty("cnf");
    // Two tokens, two ids.
    expect((await verifyAsResourceServer((await tokenFor(jt)).access_token)).payload.jti).not.toBe(payload.jti);
  });

  it("is accepted by /v1/me, and refused on the request after its revocation (RFC 7009); introspection follows", async () => {
    const { access_token: token } = await tokenFor(jt);
    const me = await call("/v1/me", authed(t, token));
    expect(me.status).toBe(200);
    expect((await body<{ client_id: string }>(me)).data.client_id).toBe(jt.clientId);
    expect(await introspect(jt, token)).toMatchObject({ active: true, client_id: jt.clientId, sub: t.userId, token_type: "Bearer" });
    // Another client of the organization cannot revoke it.
    expect((await revoke(t, token)).status).toBe(200);
    expect((await call("/v1/me", authed(t, token))).status).toBe(200);
    expect((await revoke(jt, token)).status).toBe(200);
    const after = await call("/v1/me", authed(t, token));
    expect(after.status).toBe(401);
    expect((await body(after)).developer_message).toMatch(/revoked/);
    expect(await introspect(jt, token)).toEqual({ active: false });
    // A resource server that is not keyway still verifies its signature: revocation is keyway's to enforce.
    await expect(verifyAsResourceServer(token)).resolves.toBeDefined();
  });

  it("carries cnf.jkt of the DPoP key when DPoP-bound, and works only as DPoP", async () => {
    const pair = await es256();
    const answer = await tokenFor(jt, { DPoP: await dpopProof(pair, "POST", TOKEN_URL) });
    expect(answer.token_type).toBe("DPoP");
    const { payload } = await verifyAsResourceServer(answer.access_token);
    expect(payload.cnf).toEqual({ jkt: await calculateJwkThumbprint(await exportJWK(pair.publicKey), "sha256") });
    const ath = await athOf(answer.access_token);
    const asDpop = await call("/v1/me", {
      headers: {
        "x-api-key": t.apiKey,
        Authorization: `DPoP ${answer.access_token}`,
        DPoP: await dpopProof(pair, "GET", `${BASE}/v1/me`, { ath }),
      },
    });
    expect(asDpop.status).toBe(200);
    const asBearer = await call(
      "/v1/me",
      authed(t, answer.access_token, { headers: { DPoP: await dpopProof(pair, "GET", `${BASE}/v1/me`, { ath }) } }),
    );
    expect(asBearer.status).toBe(401);
    const otherKey = await call("/v1/me", {
      headers: {
        "x-api-key": t.apiKey,
        Authorization: `DPoP ${answer.access_token}`,
        DPoP: await dpopProof(await es256(), "GET", `${BASE}/v1/me`, { ath }),
      },
    });
    expect(otherKey.status).toBe(401);
    expect(await introspect(jt, answer.access_token)).toMatchObject({ active: true, token_type: "DPoP" });
  });

  it("leaves an opaque credential's tokens kw_at_, and refuses a JWT signed by another key under keyway's kid", async () => {
    const opaque = await tokenFor(t);
    expect(opaque.access_token).toMatch(/^kw_at_/);
    expect((await call("/v1/me", authed(t, opaque.access_token))).status).toBe(200);

    const { access_token: real } = await tokenFor(jt);
    const { payload } = await verifyAsResourceServer(real);
    const { kid } = decodeProtectedHeader(real);
    const forged = await new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: kid as string })
      .sign((await es256()).privateKey);
    expect((await call("/v1/me", authed(t, real))).status).toBe(200);
    expect((await call("/v1/me", authed(t, forged))).status).toBe(401);
    await expect(verifyAsResourceServer(forged)).rejects.toThrow();
    expect(await introspect(jt, forged)).toEqual({ active: false });
  });

  it("is refused with another organization's API key and once expired; a token of the keyring's retired key still verifies (rotation overlap)", async () => {
    const { access_token: token, expires_in } = await tokenFor(jt);
    const other = await createTenant();
    expect((await call("/v1/me", authed(other, token))).status).toBe(401);
    const issuedAt = (await verifyAsResourceServer(token)).payload.iat as number;
    expect((await callAt((issuedAt + expires_in - 1) * 1000, "/v1/me", authed(t, token))).status).toBe(200);
    expect((await callAt((issuedAt + expires_in + 1) * 1000, "/v1/me", authed(t, token))).status).toBe(401);
    // The keyring's second entry (retired: publishes, no longer signs) made this one.
    const keyring = loadConfig(env).signingKeys;
    expect(keySet.keys).toHaveLength(keyring.length);
    const retired = (await accessTokenKeys(keyring))[1];
    if (retired === undefined) throw new Error("the test keyring has a retired entry (vitest.config.ts)");
    const { payload } = await verifyAsResourceServer(token);
    const older = await new SignJWT({ ...payload, jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: retired.kid })
      .sign(retired.privateKey);
    await expect(verifyAsResourceServer(older)).resolves.toBeDefined();
    expect((await call("/v1/me", authed(t, older))).status).toBe(200);
    // The same claims without typ at+jwt are not an access token (RFC 9068 4).
    const untyped = await new SignJWT({ ...payload, jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: "ES256", kid: retired.kid })
      .sign(retired.privateKey);
    expect((await call("/v1/me", authed(t, untyped))).status).toBe(401);
  });

  it("is refused (401 invalid_token) when signed by keyway's own key but issued by, or for, another deployment (RFC 9068 4)", async () => {
    // Another deployment sharing TOKEN_SIGNING_KEYS (a staging copy, a restored backup) signs with
    // these very keys: only `iss` and `aud` tell its tokens from this one's.
    const { access_token: real } = await tokenFor(jt);
    const { payload } = await verifyAsResourceServer(real);
    const signing = (await accessTokenKeys(loadConfig(env).signingKeys))[0];
    if (signing === undefined) throw new Error("the test keyring has a signing key");
    const mint = (claims: JWTPayload) =>
      new SignJWT({ ...payload, jti: crypto.randomUUID(), ...claims })
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: signing.kid })
        .sign(signing.privateKey);
    const other = await createTenant();
    const staging = "https://staging.keyway.test";
    const cases: [string, string][] = [
      ["another issuer", await mint({ iss: staging })],
      ["another deployment's resource", await mint({ aud: [staging, `urn:keyway:org:${t.orgId}`] })],
      ["no resource at all", await mint({ aud: `urn:keyway:org:${t.orgId}` })],
      ["another organization's audience", await mint({ aud: [BASE, `urn:keyway:org:${other.orgId}`] })],
      ["only keyway's resource", await mint({ aud: BASE })],
    ];
    // The same answer as for a token whose signature is not keyway's.
    const forged = await new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: signing.kid })
      .sign((await es256()).privateKey);
    const refusal = async (res: Response) => ({
      status: res.status,
      challenge: res.headers.get("WWW-Authenticate"),
      ...(await body(res)),
    });
    const expected = await refusal(await call("/v1/me", authed(t, forged)));
    expect(expected).toMatchObject({ status: 401, error: "invalid_token" });
    for (const [why, token] of cases) {
      expect(await refusal(await call("/v1/me", authed(t, token))), why).toEqual(expected);
      expect(await introspect(jt, token), why).toEqual({ active: false });
    }
    // The same claims minted for this deployment pass.
    const right = await mint({ iss: BASE, aud: [BASE, `urn:keyway:org:${t.orgId}`] });
    expect((await call("/v1/me", authed(t, right))).status).toBe(200);
    expect(await introspect(jt, right)).toMatchObject({ active: true });
    // With PUBLIC_BASE_URL, that is the issuer: a token minted for the request's own origin is refused.
    const configured = { ...env, PUBLIC_BASE_URL: "https://api.example.com" };
    expect((await callAt(Date.now(), "/v1/me", authed(t, right), configured)).status).toBe(401);
    const forConfigured = await mint({ iss: "https://api.example.com", aud: ["https://api.example.com", `urn:keyway:org:${t.orgId}`] });
    expect((await callAt(Date.now(), "/v1/me", authed(t, forConfigured), configured)).status).toBe(200);
  });

  it("stops a revoked credential's JWT tokens at the next request", async () => {
    const cred = await admin<CredentialView>("POST", credentialsPath(t), { access_token_strategy: "jwt" });
    const c = { ...t, clientId: cred.client_id, clientSecret: cred.client_secret as string };
    const { access_token: token } = await tokenFor(c);
    expect((await call("/v1/me", authed(t, token))).status).toBe(200);
    await admin("DELETE", `${credentialsPath(t)}/${cred.client_id}`);
    expect((await call("/v1/me", authed(t, token))).status).toBe(401);
    expect(await introspect(jt, token)).toEqual({ active: false });
  });

  it("switches a credential's strategy by PATCH, in effect on its next token", async () => {
    const cred = await admin<CredentialView>("POST", credentialsPath(t), {});
    const c = { ...t, clientId: cred.client_id, clientSecret: cred.client_secret as string };
    const path = `${credentialsPath(t)}/${cred.client_id}`;
    const opaque = (await tokenFor(c)).access_token;
    expect(opaque).toMatch(/^kw_at_/);
    expect((await admin<CredentialView>("PATCH", path, { access_token_strategy: "jwt" })).access_token_strategy).toBe("jwt");
    const jwt = (await tokenFor(c)).access_token;
    await expect(verifyAsResourceServer(jwt)).resolves.toBeDefined();
    // Tokens already issued keep working.
    expect((await call("/v1/me", authed(t, opaque))).status).toBe(200);
    expect((await call("/v1/me", authed(t, jwt))).status).toBe(200);
    expect((await admin<CredentialView>("PATCH", path, { access_token_strategy: "opaque" })).access_token_strategy).toBe("opaque");
    expect((await tokenFor(c)).access_token).toMatch(/^kw_at_/);
  });

  it("costs the same object calls as an opaque token at the token endpoint and on /v1/me", async () => {
    const measure = async (c: Tenant) => {
      const fields = { grant_type: "client_credentials", client_id: c.clientId, client_secret: c.clientSecret };
      // Warm-up: per-isolate caches and the once-a-minute "last used" note are paid here.
      const warm = String((await plainJson(await callAt(Date.now(), "/v1/oauth/token", form(c, fields)))).access_token);
      await callAt(Date.now(), "/v1/me", authed(c, warm));
      const atToken = counting();
      const res = await callAt(Date.now(), "/v1/oauth/token", form(c, fields), atToken.bindings);
      expect(res.status).toBe(200);
      const token = String((await plainJson(res)).access_token);
      const atMe = counting();
      expect((await callAt(Date.now(), "/v1/me", authed(c, token), atMe.bindings)).status).toBe(200);
      return { token: atToken.calls, me: atMe.calls, format: token.startsWith("kw_at_") ? "opaque" : "jwt" };
    };
    const opaque = await measure(t);
    const jwt = await measure(jt);
    expect([opaque.format, jwt.format]).toEqual(["opaque", "jwt"]);
    expect(jwt.token).toEqual(opaque.token);
    expect(jwt.me).toEqual(opaque.me);
    expect(opaque.token).toEqual(["KEYS.admit"]);
    expect(opaque.me).toEqual(["KEYS.admit"]);
  });
});

describe("property", () => {
  const knobs = env as unknown as Record<string, string | undefined>;
  const RUNS = Number(knobs.KEYWAY_PROPERTY_RUNS || 12);
  const replay = knobs.KEYWAY_PROPERTY_SEED
    ? { seed: Number(knobs.KEYWAY_PROPERTY_SEED), path: knobs.KEYWAY_PROPERTY_PATH, endOnFailure: true }
    : {};

  it('with assertion_reuse "once", each distinct JWT authenticates exactly once, however its presentations repeat or overlap', async () => {
    const site = new IssuerSite(ISSUER, [jwkA]);
    fakeNetwork(site.routes());
    const t = await createTenant();
    await trust(t, { issuer: ISSUER });
    const cred = await federatedClient(t, ISSUER);
    // Batches of presentations (indexes of JWTs), each batch sent concurrently, the batches in order.
    const schedule = fc.array(fc.array(fc.nat(3), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(schedule, async (batches) => {
        const jwts = await Promise.all([0, 1, 2, 3].map(() => workloadJwt(keyA)));
        const accepted = [0, 0, 0, 0];
        const presented = new Set<number>();
        for (const batch of batches) {
          const outcomes = await Promise.all(batch.map(async (i) => outcome(await present(t, cred.client_id, jwts[i] as string))));
          batch.forEach((i, n) => {
            presented.add(i);
            if (outcomes[n] === "200") accepted[i] = (accepted[i] ?? 0) + 1;
            else expect(outcomes[n]).toBe("401 invalid_client");
          });
        }
        for (let i = 0; i < 4; i++) expect(accepted[i], `JWT ${i}`).toBe(presented.has(i) ? 1 : 0);
      }),
      { numRuns: RUNS, ...replay },
    );
  }, 120_000);
});

describe("a change while a key set is being fetched", () => {
  it("a credential revoked while its token request waits for its issuer's keys gets no token: decided again after the fetch", async () => {
    const slowIssuer = "https://slow.example";
    const url = `${slowIssuer}/jwks`;
    // Flags polled by the handler (it runs in the organization object's request, not this test's).
    const state = { slow: false, fetching: false, release: false };
    fakeNetwork({
      [url]: async () => {
        if (state.slow) {
          state.fetching = true;
          while (!state.release) await new Promise((done) => setTimeout(done, 5));
        }
        return json({ keys: state.slow ? [jwkA, jwkB] : [jwkA] });
      },
    });
    const t = await createTenant();
    await trust(t, { issuer: slowIssuer, jwks_uri: url });
    const cred = await federatedClient(t, slowIssuer);
    // A JWT signed with a key the held set lacks, past the minute: the object fetches the set, slowly.
    state.slow = true;
    const later = Date.now() + 61_000;
    const pending = present(
      t,
      cred.client_id,
      await workloadJwt(keyB, { iss: slowIssuer, kid: "b1", at: Math.floor(later / 1000) }),
      later,
    );
    for (let i = 0; i < 400 && !state.fetching; i++) await new Promise((done) => setTimeout(done, 5));
    expect(state.fetching).toBe(true);
    const revoked = await adminCall("DELETE", `${credentialsPath(t)}/${cred.client_id}`);
    expect(revoked.status).toBe(200);
    state.release = true;
    expect(await outcome(await pending)).toBe("401 invalid_client");
  });
});

describe("an attacker's assertion", () => {
  it("keyway's own JWT access token is no workload identity, even where an organization trusts keyway as an issuer", async () => {
    // Every claim a federated assertion needs is there (iss keyway, sub a user, aud keyway's
    // origin, an hour of life): only its `typ` (at+jwt, RFC 8725 3.11) says it is no assertion.
    const published = await (await call("/.well-known/jwks.json")).json();
    const jwksUrl = `${BASE}/.well-known/jwks.json`;
    fakeNetwork({ [jwksUrl]: () => json(published) });
    const t = await createTenant();
    await trust(t, { issuer: BASE, jwks_uri: jwksUrl });
    const jwtCred = await admin<CredentialView>("POST", credentialsPath(t), { access_token_strategy: "jwt" });
    const issued = await plainJson(
      await call(
        "/v1/oauth/token",
        form(t, {
          grant_type: "client_credentials",
          client_id: jwtCred.client_id,
          client_secret: jwtCred.client_secret ?? "",
        }),
      ),
    );
    const accessToken = String(issued.access_token);
    expect(decodeProtectedHeader(accessToken).typ).toBe("at+jwt");
    const workload = await federatedClient(t, BASE, {}, t.userId);
    expect(await outcome(await present(t, workload.client_id, accessToken))).toBe("401 invalid_client");
  });
});

describe("the refetch bound across a restart", () => {
  it("an object restarted within the minute fetches no more: the last attempt is stored, not remembered", async () => {
    const issuer = "https://restart.example";
    const url = `${issuer}/jwks`;
    const sent = fakeNetwork({ [url]: () => json({ keys: [jwkA] }) });
    const fetches = () => sent.filter((r) => r.url === url).length;
    const t = await createTenant();
    await trust(t, { issuer, jwks_uri: url });
    const cred = await federatedClient(t, issuer);
    const later = Date.now() + 61_000;
    const unknownKid = (kid: string) => workloadJwt(keyB, { iss: issuer, kid, at: Math.floor(later / 1000) });
    expect(await outcome(await present(t, cred.client_id, await unknownKid("x1"), later))).toBe("401 invalid_client");
    expect(fetches()).toBe(2);
    await evictDurableObject(env.ORGS.get(env.ORGS.idFromName(t.orgId)));
    expect(await outcome(await present(t, cred.client_id, await unknownKid("x2"), later + 1_000))).toBe("401 invalid_client");
    expect(fetches()).toBe(2);
    expect(await outcome(await present(t, cred.client_id, await unknownKid("x3"), later + 61_000))).toBe("401 invalid_client");
    expect(fetches()).toBe(3);
  });
});
