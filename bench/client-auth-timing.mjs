/**
 * `node bench/client-auth-timing.mjs`: is there a client_id oracle at the token endpoint (issue 22)?
 * Against keyway under `wrangler dev` (as the bench runs it), one client sends token requests
 * that fail in six ways, interleaved try by try so that the VM's drift touches each alike: an
 * unknown client_id (the same one, and a new one each try, as a search for ids sends them), a
 * known one with a wrong secret, a revoked credential with its right secret,
 * an unknown client_id with a client assertion, and a private_key_jwt client's id with an
 * assertion signed by another key. It prints each kind's median and p90 latency over TRIES tries
 * and the largest difference between medians; a success is shown beside them for scale. Run it
 * several times: differences within the run-to-run spread are noise.
 */
import { generateKeyPairSync, randomBytes, randomUUID, sign } from "node:crypto";
import { api, median, need, p90, round, runMain, seed, startKeyway, timedTokenRequest } from "./lib.mjs";

const TRIES = Number(process.env.TRIES ?? 200);

/** An ES256 key pair and an assertion maker for it (RFC 7523 3). */
function signer() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = /** @type {Record<string, string>} */ (publicKey.export({ format: "jwk" }));
  const header = Buffer.from(JSON.stringify({ alg: "ES256", kid: "k1" })).toString("base64url");
  /** @param {string} clientId @param {string} aud */
  const assertion = (clientId, aud) => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: clientId, sub: clientId, aud, jti: randomUUID(), iat: now, exp: now + 60 };
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
    return `${input}.${sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
  };
  return { jwk: { ...jwk, kid: "k1", alg: "ES256", use: "sig" }, assertion };
}

async function main() {
  const kw = await startKeyway();
  const s = await seed(kw.base);
  const users = `${kw.base}/admin/v1/organizations/${s.orgId}/users`;
  const user = await api("POST", users, s.adminHeaders, { name: "Timing" });
  const creds = `${users}/${user.id}/client-credentials`;
  const revoked = await api("POST", creds, s.adminHeaders, { name: "revoked" });
  await api("DELETE", `${creds}/${revoked.client_id}`, s.adminHeaders, undefined);
  const mine = signer();
  const other = signer();
  const jwtClient = await api("POST", creds, s.adminHeaders, {
    name: "jwt",
    token_endpoint_auth_method: "private_key_jwt",
    jwks: { keys: [mine.jwk] },
  });
  const good = /** @type {{ client_id: string, client_secret: string }} */ (JSON.parse(s.tokenBody));
  const url = `${kw.base}/v1/oauth/token`;
  const unknownId = `kw_client_${Buffer.alloc(16, 7).toString("base64url").slice(0, 22)}`;
  /** @type {Record<string, () => Record<string, string>>} */
  const kinds = {
    "unknown client_id": () => ({ client_id: unknownId, client_secret: "kw_live_cs_wrongwrongwrong" }),
    // As one probing for ids sends them: each id once, so none is in the isolate's lookup cache.
    "unknown client_id, a new one each try": () => ({
      client_id: `kw_client_${randomBytes(16).toString("base64url").slice(0, 22)}`,
      client_secret: "kw_live_cs_wrongwrongwrong",
    }),
    "known client_id, wrong secret": () => ({ client_id: good.client_id, client_secret: `${good.client_secret}x` }),
    "revoked credential, right secret": () => ({
      client_id: need(revoked.client_id, "client_id"),
      client_secret: need(revoked.client_secret, "client_secret"),
    }),
    "unknown client_id, assertion": () => ({
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: mine.assertion(unknownId, url),
    }),
    "private_key_jwt client, another key": () => ({
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: other.assertion(need(jwtClient.client_id, "client_id"), url),
    }),
  };
  const success = () => ({ client_id: good.client_id, client_secret: good.client_secret });
  const attempt = (/** @type {Record<string, string>} */ fields) => timedTokenRequest(url, s.apiKey, fields);
  /** @type {Record<string, number[]>} */
  const times = Object.fromEntries([...Object.keys(kinds), "success (for scale)"].map((k) => [k, []]));
  for (let i = 0; i < 20; i++) for (const make of [...Object.values(kinds), success]) await attempt(make()); // warm-up
  for (let i = 0; i < TRIES; i++) {
    for (const [name, make] of Object.entries(kinds)) {
      const { ms, status } = await attempt(make());
      if (status !== 401) throw new Error(`${name}: expected 401, got ${status}`);
      times[name]?.push(ms);
    }
    const { ms } = await attempt(success());
    times["success (for scale)"]?.push(ms);
  }
  const spread = (/** @type {string[]} */ names) => {
    const medians = names.map((k) => median(times[k] ?? []));
    return round(Math.max(...medians) - Math.min(...medians), 2);
  };
  for (const [name, xs] of Object.entries(times))
    console.log(`${name.padEnd(36)} median ${round(median(xs), 2)} ms, p90 ${round(p90(xs), 2)} ms`);
  // The oracle would be a difference within one method: the method itself is the client's choice.
  const secretKinds = Object.keys(kinds).slice(0, 4);
  const assertionKinds = Object.keys(kinds).slice(4);
  console.log(
    `spread of the medians (${TRIES} interleaved tries each): client_secret failures ${spread(secretKinds)} ms, private_key_jwt failures ${spread(assertionKinds)} ms`,
  );
}

runMain(main);
