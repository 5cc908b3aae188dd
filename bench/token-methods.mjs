/**
 * `node bench/token-methods.mjs`: what each way of authenticating at the token endpoint, and each
 * kind of access token, costs per token against a client secret (issue 44). Against keyway under
 * `wrangler dev` (as the bench runs it), with a local workload identity issuer and a client's key
 * set URL served by this process on 127.0.0.1, one client requests tokens in turn, try by try, so
 * that the VM's drift touches each method alike:
 * - client_secret, opaque token (the reference: one KV read, one call to the API key's object);
 * - client_secret, JWT access token (the same calls; an ES256 signature instead of an HMAC);
 * - private_key_jwt with registered `jwks` (a second call, to the organization's object);
 * - private_key_jwt with `jwks_uri` (the same, the set held by the object: no fetch per token);
 * - federated_jwt, `assertion_reuse: "once"` and `"until_expiry"` (the same, the issuer's set
 *   held by the object; "once" writes the jti).
 * and then `GET /v1/me` with an opaque token and with a JWT token. It prints each one's median
 * and p90 latency over TRIES tries and its median's ratio to the reference's; how many key set
 * fetches the issuer and the client's URL served during the run (the once-a-minute bound at work:
 * after registration, none per token). Assertions are signed ahead of each try with node:crypto,
 * so the client's signing is not what is measured.
 */
import { generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { createServer } from "node:http";
import { api, median, need, p90, round, runMain, seed, startKeyway, timedTokenRequest } from "./lib.mjs";

const TRIES = Number(process.env.TRIES ?? 200);
const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** An ES256 key pair and a JWT maker for it. @param {string} kid */
function signer(kid) {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = /** @type {Record<string, string>} */ (publicKey.export({ format: "jwk" }));
  const header = Buffer.from(JSON.stringify({ alg: "ES256", kid })).toString("base64url");
  /** @param {Record<string, unknown>} claims */
  const jwt = (claims) => {
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
    return `${input}.${sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
  };
  return { jwk: { ...jwk, kid, alg: "ES256", use: "sig" }, jwt };
}

/** A local server for the issuer's metadata and key set and the client's key set; counts each path's requests. */
async function keyServer(/** @type {Record<string, () => unknown>} */ routes) {
  /** @type {Record<string, number>} */
  const served = {};
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const answer = routes[path];
    served[path] = (served[path] ?? 0) + 1;
    res.writeHead(answer ? 200 : 404, { "Content-Type": "application/json" });
    res.end(answer ? JSON.stringify(answer()) : "{}");
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", () => done(undefined)));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return { origin: `http://127.0.0.1:${port}`, served, close: () => server.close() };
}

async function main() {
  const kw = await startKeyway();
  const s = await seed(kw.base);
  const issuerKey = signer("issuer-1");
  const clientKey = signer("client-1");
  const urlKey = signer("url-1");
  /** @type {Record<string, () => unknown>} */
  const routes = {};
  const live = await keyServer(routes);
  const origin = live.origin;
  const iss = `${origin}/issuer`;
  const reuseIss = `${origin}/reuse`;
  Object.assign(routes, {
    "/issuer/.well-known/openid-configuration": () => ({ issuer: iss, jwks_uri: `${iss}/jwks` }),
    "/issuer/jwks": () => ({ keys: [issuerKey.jwk] }),
    "/reuse/.well-known/openid-configuration": () => ({ issuer: reuseIss, jwks_uri: `${reuseIss}/jwks` }),
    "/reuse/jwks": () => ({ keys: [issuerKey.jwk] }),
    "/client/jwks": () => ({ keys: [urlKey.jwk] }),
  });

  const org = `${kw.base}/admin/v1/organizations/${s.orgId}`;
  const users = `${org}/users`;
  const user = await api("POST", users, s.adminHeaders, { name: "Token methods" });
  const creds = `${users}/${user.id}/client-credentials`;
  await api("POST", `${org}/trusted-issuers`, s.adminHeaders, { issuer: iss });
  await api("POST", `${org}/trusted-issuers`, s.adminHeaders, { issuer: reuseIss, assertion_reuse: "until_expiry" });
  const secretJwt = await api("POST", creds, s.adminHeaders, { name: "secret, jwt tokens", access_token_strategy: "jwt" });
  const jwks = await api("POST", creds, s.adminHeaders, {
    token_endpoint_auth_method: "private_key_jwt",
    jwks: { keys: [clientKey.jwk] },
  });
  const jwksUri = await api("POST", creds, s.adminHeaders, {
    token_endpoint_auth_method: "private_key_jwt",
    jwks_uri: `${origin}/client/jwks`,
  });
  const subject = "repo:bench/app:ref:refs/heads/main";
  const federated = await api("POST", creds, s.adminHeaders, {
    token_endpoint_auth_method: "federated_jwt",
    federated: { issuer: iss, subject },
  });
  const reusable = await api("POST", creds, s.adminHeaders, {
    token_endpoint_auth_method: "federated_jwt",
    federated: { issuer: reuseIss, subject },
  });
  const url = `${kw.base}/v1/oauth/token`;
  const now = () => Math.floor(Date.now() / 1000);
  const own = (/** @type {ReturnType<typeof signer>} */ k, /** @type {string} */ id) =>
    k.jwt({ iss: id, sub: id, aud: url, jti: randomUUID(), iat: now(), exp: now() + 60 });
  const reused = issuerKey.jwt({ iss: reuseIss, sub: subject, aud: kw.base, iat: now(), exp: now() + 3000 });
  const good = /** @type {{ client_id: string, client_secret: string }} */ (JSON.parse(s.tokenBody));

  /** @type {Record<string, () => Record<string, string>>} */
  const methods = {
    "client_secret, opaque token": () => ({ client_id: good.client_id, client_secret: good.client_secret }),
    "client_secret, JWT token": () => ({ client_id: need(secretJwt.client_id, "id"), client_secret: need(secretJwt.client_secret, "s") }),
    "private_key_jwt, jwks": () => ({
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: own(clientKey, need(jwks.client_id, "id")),
    }),
    "private_key_jwt, jwks_uri": () => ({
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: own(urlKey, need(jwksUri.client_id, "id")),
    }),
    "federated_jwt, once": () => ({
      client_id: need(federated.client_id, "id"),
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: issuerKey.jwt({ iss, sub: subject, aud: kw.base, jti: randomUUID(), iat: now(), exp: now() + 300 }),
    }),
    "federated_jwt, until_expiry": () => ({
      client_id: need(reusable.client_id, "id"),
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: reused,
    }),
  };
  const token = (/** @type {Record<string, string>} */ fields) => timedTokenRequest(url, s.apiKey, fields);
  const accessToken = async (/** @type {Record<string, string>} */ fields) =>
    need(/** @type {{ access_token?: string }} */ (JSON.parse((await token(fields)).text)).access_token, "access_token");
  const opaque = await accessToken(methods["client_secret, opaque token"]?.() ?? {});
  const jwtToken = await accessToken(methods["client_secret, JWT token"]?.() ?? {});
  /** @param {string} t */
  const me = async (t) => {
    const started = performance.now();
    const res = await fetch(`${kw.base}/v1/me`, { headers: { "x-api-key": s.apiKey, Authorization: `Bearer ${t}` } });
    await res.arrayBuffer();
    return { ms: performance.now() - started, status: res.status };
  };
  const reads = { "GET /v1/me, opaque token": () => me(opaque), "GET /v1/me, JWT token": () => me(jwtToken) };

  /** @type {Record<string, number[]>} */
  const times = Object.fromEntries([...Object.keys(methods), ...Object.keys(reads)].map((k) => [k, []]));
  for (let i = 0; i < 20; i++) {
    for (const make of Object.values(methods)) await token(make()); // warm-up
    for (const read of Object.values(reads)) await read();
  }
  const fetchedBefore = { ...live.served };
  for (let i = 0; i < TRIES; i++) {
    for (const [name, make] of Object.entries(methods)) {
      const fields = make();
      const { ms, status } = await token(fields);
      if (status !== 200) throw new Error(`${name}: expected 200, got ${status}`);
      times[name]?.push(ms);
    }
    for (const [name, read] of Object.entries(reads)) {
      const { ms, status } = await read();
      if (status !== 200) throw new Error(`${name}: expected 200, got ${status}`);
      times[name]?.push(ms);
    }
  }
  const reference = median(times["client_secret, opaque token"] ?? []);
  const readReference = median(times["GET /v1/me, opaque token"] ?? []);
  for (const [name, xs] of Object.entries(times)) {
    const against = name.startsWith("GET") ? readReference : reference;
    console.log(
      `${name.padEnd(30)} median ${round(median(xs), 2)} ms, p90 ${round(p90(xs), 2)} ms, ${round(median(xs) / against, 2)}x the ${name.startsWith("GET") ? "opaque read" : "client secret"}`,
    );
  }
  const fetched = Object.fromEntries(Object.entries(live.served).map(([path, n]) => [path, n - (fetchedBefore[path] ?? 0)]));
  console.log(`key set requests served during the ${TRIES} rounds: ${JSON.stringify(fetched)}`);
  live.close();
}

runMain(main);
