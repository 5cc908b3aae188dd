/**
 * Issue 44's "Done when", against a real `npm start` (which lets keyway fetch plain-http loopback
 * URLs) and local issuers on 127.0.0.1 (examples/local-issuer.mjs, the one docs/clients.md shows):
 * - a federated_jwt credential gets a token with its issuer's JWT; a wrong `sub`, `aud`, issuer
 *   (a second local issuer nobody trusts) or key (one the issuer does not publish), an expired JWT
 *   or one living longer than the issuer's maximum, each get 401 invalid_client; the issuer rotates
 *   its key and a JWT signed with the new key is accepted once keyway has fetched the set again
 *   (at most once a minute per URL, so the test waits for that minute); reuse is as documented
 *   (`once`, the default: the second use is refused; an `until_expiry` issuer: reuse works);
 * - a private_key_jwt client whose keys are at a `jwks_uri` (a tiny local server) signs with a new
 *   key and is accepted with no call to keyway;
 * - a JWT access token (`access_token_strategy: "jwt"`) verifies with jose against the metadata's
 *   `jwks_uri` (iss, aud, typ at+jwt), is refused by /v1/me on the request after its revocation,
 *   and carries `cnf.jkt` (the DPoP key's thumbprint) when DPoP-bound (oauth4webapi's DPoP);
 * - GET /.well-known/oauth-protected-resource and the `resource_metadata` parameter of a /v1 401.
 * It also prints, for the issue's closing note (not asserted), the median latency of 50 token
 * requests per client authentication method, in interleaved rounds.
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import {
  calculateJwkThumbprint,
  createRemoteJWKSet,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from "jose";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type JwksServer, startJwksServer } from "./oidc-receiver";
import { envelopeData, freePort, type Keyway, operatorCall, type Provisioned, provisionOn, ROOT, sharedKeyway, sleep } from "./server";

const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** keyway fetches a URL's key set again at most once a minute (objects/org/remote-keys.ts); a margin for a busy machine. */
const REFETCH_WAIT_MS = 90_000;

/** One examples/local-issuer.mjs process: its issuer URL, its log, and JWTs it mints. */
interface LocalIssuer {
  url: string;
  proc: ChildProcess;
  output(): string;
  /** How many times its key set was fetched (by keyway: the test reads it through `kid()` only before counting). */
  jwksFetches(): number;
  mint(sub: string, aud: string, ttl?: number): Promise<string>;
  rotate(): Promise<string>;
  kid(): Promise<string>;
}

/** @param keywayPort keyway's port, exported as PORT the way the printed curl session has it. */
async function startIssuer(keywayPort: number): Promise<LocalIssuer> {
  const port = await freePort();
  let output = "";
  const proc = spawn(process.execPath, ["examples/local-issuer.mjs"], {
    cwd: ROOT,
    // PORT is keyway's, as the printed curl session exports it: the issuer takes its own variable.
    env: { ...process.env, PORT: String(keywayPort), ISSUER_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  proc.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const deadline = Date.now() + 20_000;
  while (!output.includes("listening")) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`local issuer did not start:\n${output}`);
    await sleep(50);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    proc,
    output: () => output,
    jwksFetches: () => output.split("\n").filter((line) => line === "GET /jwks").length,
    mint: async (sub, aud, ttl = 600) => {
      const res = await fetch(`${url}/token?${new URLSearchParams({ sub, aud, ttl: String(ttl) })}`);
      if (!res.ok) throw new Error(`local issuer: ${res.status} ${await res.text()}`);
      return res.text();
    },
    rotate: async () => ((await (await fetch(`${url}/rotate`, { method: "POST" })).json()) as { kid: string }).kid,
    kid: async () => ((await (await fetch(`${url}/jwks`)).json()) as { keys: { kid: string }[] }).keys[0]?.kid ?? "",
  };
}

/** Percentile `p` (0..1) of sorted numbers, nearest rank. */
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;

describe("issue 44 against npm start: federated workload identity, a key set URL, JWT access tokens, resource metadata", () => {
  let keyway: Keyway;
  let org: Provisioned;
  /** keyway's issuer (its metadata's), the `aud` every assertion names. */
  let issuer: string;
  let metadata: { issuer: string; token_endpoint: string; jwks_uri?: string; token_endpoint_auth_methods_supported: string[] };
  /** `once` (the default), found by discovery. */
  let ci: LocalIssuer;
  /** `until_expiry`, registered with its jwks_uri. */
  let cluster: LocalIssuer;
  /** Trusted by nobody. */
  let stranger: LocalIssuer;
  const CI_SUBJECT = "repo:acme/api:ref:refs/heads/main";
  const POD_SUBJECT = "system:serviceaccount:payments:worker";
  let ciClient: string;
  let podClient: string;
  /** A private_key_jwt client whose keys are at a URL, registered first so that its minute has passed when it rotates. */
  let clientKeys: JwksServer;
  let firstKey: CryptoKeyPair;
  let firstJwk: JWK;
  let keysClient: string;

  const operator = async <T>(path: string, body: unknown): Promise<T> => envelopeData<T>(await operatorCall(keyway, "POST", path, body));
  const credentials = () => `/organizations/${org.orgId}/users/${org.userId}/client-credentials`;

  /** A form-encoded request to one of keyway's token endpoints, with the organization's API key. */
  const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${keyway.baseUrl}${path}`, {
      method: "POST",
      headers: { "x-api-key": org.apiKey, "Content-Type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(form),
    });
  const tokenRequest = (form: Record<string, string>, headers: Record<string, string> = {}) =>
    post("/v1/oauth/token", { grant_type: "client_credentials", ...form }, headers);
  const withAssertion = (clientId: string, assertion: string) =>
    tokenRequest({ client_id: clientId, client_assertion_type: ASSERTION_TYPE, client_assertion: assertion });
  const basic = (id: string, secret: string) => ({ Authorization: `Basic ${btoa(`${id}:${secret}`)}` });
  const me = (token: string) =>
    fetch(`${keyway.baseUrl}/v1/me`, { headers: { "x-api-key": org.apiKey, Authorization: `Bearer ${token}` } });

  /** 401 invalid_client, as RFC 6749 5.2 answers every failed client authentication. */
  const expectInvalidClient = async (res: Response, what: string) => {
    const body = (await res.json()) as { error?: string };
    expect(res.status, `${what}: ${JSON.stringify(body)}`).toBe(401);
    expect(body.error, what).toBe("invalid_client");
  };

  /** A private_key_jwt assertion (RFC 7523 3) signed by `key`. */
  const clientAssertion = (clientId: string, key: CryptoKey, kid: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(issuer)
      .setIssuedAt()
      .setExpirationTime("2m")
      .setJti(crypto.randomUUID())
      .sign(key);

  beforeAll(async () => {
    keyway = sharedKeyway();
    [ci, cluster, stranger] = await Promise.all([startIssuer(keyway.port), startIssuer(keyway.port), startIssuer(keyway.port)]);
    // The demo key allows 100 requests a second; the latency rounds want more.
    org = await provisionOn(keyway, { name: "Workloads", limits: { per_second: 1000, per_day: 1_000_000 } });
    metadata = (await (await fetch(`${keyway.baseUrl}/.well-known/oauth-authorization-server`)).json()) as typeof metadata;
    issuer = metadata.issuer;

    await operator(`/organizations/${org.orgId}/trusted-issuers`, { issuer: ci.url });
    await operator(`/organizations/${org.orgId}/trusted-issuers`, {
      issuer: cluster.url,
      jwks_uri: `${cluster.url}/jwks`,
      assertion_reuse: "until_expiry",
    });
    ciClient = (
      await operator<{ client_id: string }>(credentials(), {
        token_endpoint_auth_method: "federated_jwt",
        federated: { issuer: ci.url, subject: CI_SUBJECT },
      })
    ).client_id;
    podClient = (
      await operator<{ client_id: string }>(credentials(), {
        token_endpoint_auth_method: "federated_jwt",
        federated: { issuer: cluster.url, subject: POD_SUBJECT },
      })
    ).client_id;
    firstKey = await generateKeyPair("ES256");
    firstJwk = { ...(await exportJWK(firstKey.publicKey)), kid: "client-1", alg: "ES256", use: "sig" };
    clientKeys = await startJwksServer({ keys: [firstJwk] });
    const registered = await operator<{ client_id: string; jwks_uri: string }>(credentials(), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks_uri: clientKeys.url,
    });
    expect(registered.jwks_uri).toBe(clientKeys.url);
    keysClient = registered.client_id;
  });

  afterAll(async () => {
    for (const local of [ci, cluster, stranger]) local?.proc.kill();
    await clientKeys?.close();
  });

  it("registers the issuers as asked: the key set found through discovery, or at the given jwks_uri; `once` and 3600 s by default", async () => {
    const listed = await envelopeData<
      { issuer: string; jwks_uri: string; jwks_uri_source: string; assertion_reuse: string; max_assertion_lifetime_seconds: number }[]
    >(await operatorCall(keyway, "GET", `/organizations/${org.orgId}/trusted-issuers`));
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          issuer: ci.url,
          jwks_uri: `${ci.url}/jwks`,
          jwks_uri_source: "discovered",
          assertion_reuse: "once",
          max_assertion_lifetime_seconds: 3600,
        }),
        expect.objectContaining({ issuer: cluster.url, jwks_uri_source: "registered", assertion_reuse: "until_expiry" }),
      ]),
    );
    expect(ci.output()).toContain("GET /.well-known/openid-configuration");
  });

  it("gives a federated credential a token for its issuer's JWT, and /v1/me says whose", async () => {
    const res = await withAssertion(ciClient, await ci.mint(CI_SUBJECT, issuer));
    const body = (await res.json()) as { access_token: string; token_type: string; expires_in: number };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.token_type).toBe("Bearer");
    const who = await envelopeData<{ client_id: string; organization_id: string }>(await me(body.access_token));
    expect(who).toMatchObject({ client_id: ciClient, organization_id: org.orgId });
    // The token URL is an accepted audience too (RFC 7523 3, point 3).
    expect((await withAssertion(ciClient, await ci.mint(CI_SUBJECT, metadata.token_endpoint))).status).toBe(200);
  });

  it("refuses a wrong sub, aud, issuer or key, an expired JWT and one living longer than the issuer allows, each with 401 invalid_client", async () => {
    await expectInvalidClient(await withAssertion(ciClient, await ci.mint("repo:acme/api:ref:refs/heads/evil", issuer)), "wrong sub");
    await expectInvalidClient(await withAssertion(ciClient, await ci.mint(CI_SUBJECT, "https://api.example.com")), "wrong aud");
    // Another issuer's JWT, for the same subject and audience.
    await expectInvalidClient(await withAssertion(ciClient, await stranger.mint(CI_SUBJECT, issuer)), "an issuer nobody trusts");
    // The trusted issuer's JWT presented for a credential of the other trusted issuer.
    await expectInvalidClient(await withAssertion(podClient, await ci.mint(POD_SUBJECT, issuer)), "another trusted issuer's credential");
    // The issuer's claims and kid, signed by a key the issuer does not publish.
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: await ci.kid() })
      .setIssuer(ci.url)
      .setSubject(CI_SUBJECT)
      .setAudience(issuer)
      .setIssuedAt()
      .setExpirationTime("5m")
      .setJti(crypto.randomUUID())
      .sign(privateKey);
    await expectInvalidClient(await withAssertion(ciClient, forged), "a key the issuer does not publish");
    await expectInvalidClient(await withAssertion(ciClient, await ci.mint(CI_SUBJECT, issuer, -120)), "expired");
    await expectInvalidClient(await withAssertion(ciClient, await ci.mint(CI_SUBJECT, issuer, 7200)), "over the issuer's 3600 s");
    // A federated credential has no secret to fall back on.
    await expectInvalidClient(await tokenRequest({ client_id: ciClient, client_secret: "x" }), "a secret for a federated credential");
  });

  it("uses a JWT once by default, and lets an until_expiry issuer's JWT be reused until it expires", async () => {
    const once = await ci.mint(CI_SUBJECT, issuer);
    expect((await withAssertion(ciClient, once)).status).toBe(200);
    await expectInvalidClient(await withAssertion(ciClient, once), "the same JWT again (once)");

    const projected = await cluster.mint(POD_SUBJECT, issuer);
    for (let i = 0; i < 3; i++) {
      const res = await withAssertion(podClient, projected);
      expect(res.status, `use ${i + 1}: ${await res.clone().text()}`).toBe(200);
    }
    // Reuse does not lift the other checks: the same issuer's JWT for another subject is refused.
    await expectInvalidClient(
      await withAssertion(podClient, await cluster.mint("system:serviceaccount:payments:other", issuer)),
      "other pod",
    );
  });

  it("issues RFC 9068 JWT access tokens that verify with jose against the metadata's jwks_uri and are refused on the request after their revocation", async () => {
    const cred = await operator<{ client_id: string; client_secret: string; access_token_strategy: string }>(credentials(), {
      access_token_strategy: "jwt",
    });
    expect(cred.access_token_strategy).toBe("jwt");
    expect(metadata.jwks_uri).toBe(`${issuer}/.well-known/jwks.json`);
    const jwksUri = `${issuer}/.well-known/jwks.json`;
    const keySet = await fetch(jwksUri);
    expect(keySet.status).toBe(200);
    expect(keySet.headers.get("Cache-Control")).toContain("max-age=300");
    const published = ((await keySet.json()) as { keys: JWK[] }).keys;
    expect(published.length).toBeGreaterThanOrEqual(1);
    for (const key of published) {
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
      expect(key.d).toBeUndefined();
      expect(key.kid).toBe(await calculateJwkThumbprint(key));
    }

    const res = await tokenRequest({ scope: "webhooks:read" }, basic(cred.client_id, cred.client_secret));
    const issued = (await res.json()) as { access_token: string; token_type: string; expires_in: number };
    expect(res.status, JSON.stringify(issued)).toBe(200);
    const { payload, protectedHeader } = await jwtVerify(issued.access_token, createRemoteJWKSet(new URL(jwksUri)), {
      issuer,
      audience: `urn:keyway:org:${org.orgId}`,
      typ: "at+jwt",
      algorithms: ["ES256"],
    });
    expect(protectedHeader.kid).toBe(published[0]?.kid);
    expect(payload).toMatchObject({
      iss: issuer,
      sub: org.userId,
      aud: [issuer, `urn:keyway:org:${org.orgId}`],
      client_id: cred.client_id,
      scope: "webhooks:read",
    });
    expect(payload.org_id).toBe(org.orgId);
    expect(typeof payload.jti).toBe("string");
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(issued.expires_in);
    expect(payload.cnf).toBeUndefined();

    expect((await me(issued.access_token)).status).toBe(200);
    const revoked = await post("/v1/oauth/revoke", { token: issued.access_token }, basic(cred.client_id, cred.client_secret));
    expect(revoked.status).toBe(200);
    const refused = await me(issued.access_token);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe("invalid_token");
    // A resource server that is not keyway still finds it valid until it expires: revocation is keyway's own (and introspection's).
    await expect(jwtVerify(issued.access_token, createRemoteJWKSet(new URL(jwksUri)), { issuer, audience: issuer })).resolves.toBeTruthy();
  });

  it("binds a JWT access token to the DPoP key of the request (cnf.jkt), and keyway's API takes it with proofs of that key", async () => {
    const cred = await operator<{ client_id: string; client_secret: string }>(credentials(), { access_token_strategy: "jwt" });
    const as = await oauth.processDiscoveryResponse(
      new URL(issuer),
      await oauth.discoveryRequest(new URL(issuer), { algorithm: "oauth2", [oauth.allowInsecureRequests]: true }),
    );
    const client = { client_id: cred.client_id };
    const dpopKeys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
    const DPoP = oauth.DPoP(client, dpopKeys);
    const headers = new Headers({ "x-api-key": org.apiKey });
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(cred.client_secret),
      new URLSearchParams(),
      {
        headers,
        DPoP,
        [oauth.allowInsecureRequests]: true,
      },
    );
    const token = await oauth.processClientCredentialsResponse(as, client, response);
    expect(token.token_type).toBe("dpop");
    const claims = decodeJwt(token.access_token) as JWTPayload & { cnf?: { jkt?: string }; api_key_id?: string };
    expect(claims.cnf?.jkt).toBe(await calculateJwkThumbprint(await exportJWK(dpopKeys.publicKey)));
    expect(claims.api_key_id).toBe(org.apiKeyId);
    await jwtVerify(token.access_token, createRemoteJWKSet(new URL(as.jwks_uri ?? "")), { issuer, audience: issuer, typ: "at+jwt" });

    const answer = await oauth.protectedResourceRequest(token.access_token, "GET", new URL("/v1/me", issuer), headers, null, {
      DPoP,
      [oauth.allowInsecureRequests]: true,
    });
    expect(answer.status).toBe(200);
    // Sent as a Bearer token, without a proof, it is refused.
    expect((await me(token.access_token)).status).toBe(401);
  });

  it("publishes protected resource metadata (RFC 9728), and names it in the WWW-Authenticate of a /v1 401", async () => {
    const res = await fetch(`${keyway.baseUrl}/.well-known/oauth-protected-resource`);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("application/json");
    const doc = (await res.clone().json()) as { resource: string; authorization_servers: string[]; bearer_methods_supported: string[] };
    expect(doc).toMatchObject({ resource: issuer, authorization_servers: [issuer], bearer_methods_supported: ["header"] });
    // RFC 9728 3.3: the `resource` is the identifier the metadata URL was built from (oauth4webapi checks it).
    const resource = await oauth.processResourceDiscoveryResponse(
      new URL(issuer),
      await oauth.resourceDiscoveryRequest(new URL(issuer), { [oauth.allowInsecureRequests]: true }),
    );
    expect(resource.authorization_servers).toEqual([issuer]);

    const metadataUrl = `${issuer}/.well-known/oauth-protected-resource`;
    const without = await fetch(`${keyway.baseUrl}/v1/me`, { headers: { "x-api-key": org.apiKey } });
    expect(without.status).toBe(401);
    expect(without.headers.get("WWW-Authenticate")).toContain(`resource_metadata="${metadataUrl}"`);
    const bogus = await me("not-a-token");
    expect(bogus.status).toBe(401);
    expect(bogus.headers.get("WWW-Authenticate")).toMatch(/^Bearer /);
    expect(bogus.headers.get("WWW-Authenticate")).toContain(`resource_metadata="${metadataUrl}"`);
    // As a client parses it: oauth4webapi's challenge parser finds the parameter.
    try {
      await oauth.protectedResourceRequest(
        "not-a-token",
        "GET",
        new URL("/v1/me", issuer),
        new Headers({ "x-api-key": org.apiKey }),
        null,
        {
          [oauth.allowInsecureRequests]: true,
        },
      );
      expect.unreachable("a 401 throws");
    } catch (err) {
      if (!(err instanceof oauth.WWWAuthenticateChallengeError)) throw err;
      expect(err.cause[0]?.parameters.resource_metadata).toBe(metadataUrl);
    }
    // The token endpoint is the authorization server's, not the resource's: no resource_metadata there.
    const tokenRefusal = await tokenRequest({}, basic(org.clientId, "wrong"));
    expect(tokenRefusal.status).toBe(401);
    expect(tokenRefusal.headers.get("WWW-Authenticate") ?? "").not.toContain("resource_metadata");
  });

  it("measures the median latency of 50 token requests per client authentication method (printed, not asserted)", async () => {
    const ROUNDS = 50;
    const jwtSecret = await operator<{ client_id: string; client_secret: string }>(credentials(), { access_token_strategy: "jwt" });
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const publicJwk = { ...(await exportJWK(publicKey)), kid: "bench-1", alg: "ES256", use: "sig" };
    const registered = await operator<{ client_id: string }>(credentials(), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks: { keys: [publicJwk] },
    });
    const jwksServer = await startJwksServer({ keys: [publicJwk] }, "max-age=3600");
    const remote = await operator<{ client_id: string }>(credentials(), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks_uri: jwksServer.url,
    });
    try {
      // Every assertion and workload JWT is made before the clock starts: only keyway's side is timed.
      const assertions = {
        jwks: await Promise.all(Array.from({ length: ROUNDS + 1 }, () => clientAssertion(registered.client_id, privateKey, "bench-1"))),
        jwksUri: await Promise.all(Array.from({ length: ROUNDS + 1 }, () => clientAssertion(remote.client_id, privateKey, "bench-1"))),
        federated: await Promise.all(Array.from({ length: ROUNDS + 1 }, () => ci.mint(CI_SUBJECT, issuer))),
      };
      const methods: [string, (i: number) => Promise<Response>][] = [
        ["client_secret", () => tokenRequest({}, basic(org.clientId, org.clientSecret))],
        ["private_key_jwt (jwks)", (i) => withAssertion(registered.client_id, assertions.jwks[i] ?? "")],
        ["private_key_jwt (jwks_uri)", (i) => withAssertion(remote.client_id, assertions.jwksUri[i] ?? "")],
        ["federated_jwt", (i) => withAssertion(ciClient, assertions.federated[i] ?? "")],
        ["client_secret, jwt access token", () => tokenRequest({}, basic(jwtSecret.client_id, jwtSecret.client_secret))],
      ];
      // One warm-up request each (the last assertion of each list), so that no method's first
      // isolate cache fill counts.
      for (const [name, send] of methods) {
        const warm = await send(ROUNDS);
        expect(warm.status, `${name} warm-up: ${await warm.text()}`).toBe(200);
      }
      const times = new Map<string, number[]>(methods.map(([name]) => [name, []]));
      for (let i = 0; i < ROUNDS; i++) {
        // Interleaved, each round in a rotated order, so that a slow spell of the machine falls on every method alike.
        for (let j = 0; j < methods.length; j++) {
          const entry = methods[(i + j) % methods.length];
          if (entry === undefined) continue;
          const [name, send] = entry;
          const started = performance.now();
          const res = await send(i);
          const body = await res.text();
          const ms = performance.now() - started;
          expect(res.status, `${name} #${i}: ${body}`).toBe(200);
          times.get(name)?.push(ms);
        }
      }
      const rows = [...times].map(([name, list]) => {
        const sorted = [...list].sort((a, b) => a - b);
        const f = (p: number) => percentile(sorted, p).toFixed(1);
        return `${name.padEnd(34)} median ${f(0.5).padStart(6)} ms   p25-p75 ${f(0.25)}-${f(0.75)}   p10-p90 ${f(0.1)}-${f(0.9)}   min-max ${f(0)}-${f(1)}`;
      });
      console.log(`token requests, ${ROUNDS} per method, interleaved (npm start, local):\n${rows.join("\n")}`);
    } finally {
      await jwksServer.close();
    }
  });

  it("accepts a JWT signed with the issuer's rotated key once keyway has fetched its key set again (at most once a minute)", async () => {
    const before = ci.jwksFetches();
    const oldKid = await ci.kid();
    const newKid = await ci.rotate();
    expect(newKid).not.toBe(oldKid);
    const deadline = Date.now() + REFETCH_WAIT_MS;
    let status = 0;
    let attempts = 0;
    while (Date.now() < deadline) {
      // A fresh JWT each time: under `once`, a refused one was not recorded, but a new one is what a workload would have.
      const res = await withAssertion(ciClient, await ci.mint(CI_SUBJECT, issuer));
      status = res.status;
      attempts++;
      if (status === 200) break;
      await sleep(2_000);
    }
    expect(status, `after ${attempts} attempts`).toBe(200);
    // The test's own kid() above is one fetch; keyway made at least one more after the rotation.
    expect(ci.jwksFetches()).toBeGreaterThanOrEqual(before + 2);
    console.log(`issuer key rotation: accepted after ${attempts} attempt(s)`);
  });

  it("accepts a jwks_uri client's assertion signed with a new key it published, with no call to keyway", async () => {
    const ok = await withAssertion(keysClient, await clientAssertion(keysClient, firstKey.privateKey, "client-1"));
    expect(ok.status, await ok.clone().text()).toBe(200);

    // The client rotates on its own: a new key published beside the old one, then used.
    const second = await generateKeyPair("ES256");
    const secondJwk = { ...(await exportJWK(second.publicKey)), kid: "client-2", alg: "ES256", use: "sig" };
    clientKeys.setKeys({ keys: [secondJwk, firstJwk] });
    const fetchesBefore = clientKeys.fetches();
    const deadline = Date.now() + REFETCH_WAIT_MS;
    let status = 0;
    let attempts = 0;
    while (Date.now() < deadline) {
      const res = await withAssertion(keysClient, await clientAssertion(keysClient, second.privateKey, "client-2"));
      status = res.status;
      attempts++;
      if (status === 200) break;
      await sleep(2_000);
    }
    expect(status, `after ${attempts} attempts`).toBe(200);
    expect(clientKeys.fetches()).toBeGreaterThan(fetchesBefore);
    // The old key's assertions still verify: both are published.
    expect((await withAssertion(keysClient, await clientAssertion(keysClient, firstKey.privateKey, "client-1"))).status).toBe(200);
    console.log(`client key rotation (jwks_uri): accepted after ${attempts} attempt(s)`);
  });
});
