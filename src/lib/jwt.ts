/**
 * The JWTs keyway verifies, with jose (panva/jose, on WebCrypto; no signature code of our own):
 * - client assertions (RFC 7523 section 3, OpenID Connect Core 9 private_key_jwt): signed by one
 *   of the client's registered public keys, `iss` = `sub` = client_id, `aud` one of ours, `exp`
 *   required and at most MAX_ASSERTION_LIFETIME_S ahead, `jti` required (its single use is the
 *   caller's ledger);
 * - DPoP proofs (RFC 9449 section 4.3): `typ` dpop+jwt, the public key in the header, `htm` and
 *   `htu` of this request, `iat` within DPOP_WINDOW_S, `jti`, and `ath` when a token is presented.
 * Failures say why, for the logs; callers answer every one the same way to the client.
 */
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  importJWK,
  type JSONWebKeySet,
  type JWK,
  type JWTHeaderParameters,
  type JWTVerifyOptions,
  jwtVerify,
} from "jose";
import { IsolateCache } from "./cache";
import { base64UrlEncode, encodeUtf8 } from "./encoding";

/** Algorithms verified (no HMAC, no `none`); node-oidc-provider's set plus ES384. */
export const JWT_ALGS = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"];
/** A client assertion may not expire later than this from now (RFC 7523 leaves it to us). */
export const MAX_ASSERTION_LIFETIME_S = 300;
/** A DPoP proof's `iat` may be this far from now, either way (RFC 9449 11.1; node-oidc-provider: 300 s). */
export const DPOP_WINDOW_S = 60;
/** Clock skew allowed on exp, nbf and iat. */
const CLOCK_TOLERANCE_S = 5;

export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** A failure's `keyMiss`: no key of the set verified it (unknown `kid`, or a signature none of them made): a reason to fetch a URL's key set again. */
export type Verified<T> = ({ ok: true } & T) | { ok: false; reason: string; keyMiss?: boolean };

const reasonOf = (err: unknown): string =>
  err instanceof errors.JOSEError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : "unreadable";

const failure = (err: unknown): { ok: false; reason: string; keyMiss: boolean } => ({
  ok: false,
  reason: reasonOf(err),
  keyMiss: err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWSSignatureVerificationFailed,
});

/** The client a client assertion claims to be (its `sub`), read without verifying anything. */
export function assertedClientId(assertion: string): string | undefined {
  try {
    const { sub, iss } = decodeJwt(assertion);
    return typeof sub === "string" ? sub : typeof iss === "string" ? iss : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What is wrong with a client assertion whatever client it names, or null: it is not a JWT, its
 * `alg` or `typ` is not one an assertion may have, its `aud` names no audience of this deployment,
 * it has no `exp` or has expired, or its `nbf` is still ahead. These hold for private_key_jwt and
 * federated_jwt alike and are judged from the JWT and keyway's own settings only, so saying which
 * one failed tells nothing about whether the client exists (RFC 6749 5.2's invalid_client stands
 * for the rest: the signature, `iss` and `sub`, the lifetime, the jti, which depend on the
 * client). Nothing is verified here: a JWT that passes is still checked in full.
 */
export function assertionClaimsProblem(assertion: string, expect: { audiences: string[]; nowMs: number }): string | null {
  let header: JWTHeaderParameters;
  let payload: ReturnType<typeof decodeJwt>;
  try {
    header = decodeProtectedHeader(assertion) as JWTHeaderParameters;
    payload = decodeJwt(assertion);
  } catch {
    return "client_assertion is not a JWT (three base64url parts, a JSON header and claims)";
  }
  if (typeof header.alg !== "string" || !JWT_ALGS.includes(header.alg)) {
    return `its alg ${String(header.alg).slice(0, 20)} is not one keyway verifies (${JWT_ALGS.join(", ")})`;
  }
  const typ = assertionTypeProblem(typeof header.typ === "string" ? header.typ : undefined);
  if (typ !== null) return `its ${typ} (an assertion's typ is absent, JWT or client-authentication+jwt)`;
  const aud = payload.aud;
  const named = typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud : [];
  if (!named.some((a) => expect.audiences.includes(a))) {
    return `its aud names none of this deployment's audiences: use ${expect.audiences[0] ?? "keyway's token endpoint"}`;
  }
  const now = Math.floor(expect.nowMs / 1000);
  if (typeof payload.exp !== "number") return "it has no exp";
  if (payload.exp < now - CLOCK_TOLERANCE_S) {
    return `it expired at ${new Date(payload.exp * 1000).toISOString()} (keyway's clock: ${new Date(now * 1000).toISOString()})`;
  }
  if (typeof payload.nbf === "number" && payload.nbf > now + CLOCK_TOLERANCE_S) {
    return `it is not valid before ${new Date(payload.nbf * 1000).toISOString()} (keyway's clock: ${new Date(now * 1000).toISOString()})`;
  }
  return null;
}

export async function verifyClientAssertion(
  assertion: string,
  keys: JWK[],
  expect: { clientId: string; audiences: string[]; nowMs: number },
): Promise<Verified<{ jti: string; exp: number }>> {
  try {
    const { payload, protectedHeader } = await verifyWithSet(assertion, keys, {
      algorithms: JWT_ALGS,
      issuer: expect.clientId,
      subject: expect.clientId,
      audience: expect.audiences,
      currentDate: new Date(expect.nowMs),
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ["exp", "jti"],
    });
    const typ = assertionTypeProblem(protectedHeader.typ);
    if (typ !== null) return { ok: false, reason: typ };
    const now = Math.floor(expect.nowMs / 1000);
    if (typeof payload.exp !== "number" || payload.exp > now + MAX_ASSERTION_LIFETIME_S) {
      return { ok: false, reason: `exp more than ${MAX_ASSERTION_LIFETIME_S} s ahead` };
    }
    if (typeof payload.jti !== "string" || payload.jti === "" || payload.jti.length > 256) return { ok: false, reason: "bad jti" };
    return { ok: true, jti: payload.jti, exp: payload.exp };
  } catch (err) {
    return failure(err);
  }
}

/**
 * `typ` values a client assertion may carry: none, the generic ones, or RFC 7523bis'
 * `client-authentication+jwt`. Any other explicit type (an `at+jwt` access token, a `dpop+jwt`
 * proof, an ID token's own type) is a token made for something else and is refused, so a token an
 * issuer minted for another purpose cannot pass as a workload's identity (RFC 8725 3.11).
 */
const ASSERTION_TYPES = new Set(["jwt", "jose", "client-authentication+jwt", "application/client-authentication+jwt"]);

/** Why a client assertion's `typ` is another kind of token's, or null when it may be an assertion. */
function assertionTypeProblem(typ: string | undefined): string | null {
  return typ === undefined || ASSERTION_TYPES.has(typ.toLowerCase()) ? null : `typ ${typ.slice(0, 40)} is not a client assertion's`;
}

export interface FederatedExpectation {
  issuer: string;
  subject: string;
  audiences: string[];
  nowMs: number;
  /** The issuer's bound on a JWT's lifetime: `exp` at most this far ahead of now and of `iat`. */
  maxLifetimeS: number;
  /** `once`: a `jti` is required (the caller records it). */
  requireJti: boolean;
}

/**
 * A workload's JWT from a trusted issuer (federated client authentication, issue 44; RFC 7523 3
 * with the workload's issuer as `iss`): signed by a key of the issuer's set with an allowed
 * algorithm, `iss` the issuer, `sub` the credential's subject exactly, `aud` one of keyway's,
 * `exp` in the future and within the issuer's maximum lifetime, `nbf` passed; `jti` required when
 * each JWT is to be used once. jose checks the signature before any claim.
 */
export async function verifyFederatedAssertion(
  assertion: string,
  keys: JWK[],
  expect: FederatedExpectation,
): Promise<Verified<{ jti: string | null; exp: number }>> {
  try {
    const { payload, protectedHeader } = await verifyWithSet(assertion, keys, {
      algorithms: JWT_ALGS,
      issuer: expect.issuer,
      subject: expect.subject,
      audience: expect.audiences,
      currentDate: new Date(expect.nowMs),
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: expect.requireJti ? ["exp", "jti"] : ["exp"],
    });
    const typ = assertionTypeProblem(protectedHeader.typ);
    if (typ !== null) return { ok: false, reason: typ };
    const now = Math.floor(expect.nowMs / 1000);
    const exp = payload.exp as number;
    if (exp > now + expect.maxLifetimeS + CLOCK_TOLERANCE_S) return { ok: false, reason: `exp more than ${expect.maxLifetimeS} s ahead` };
    if (typeof payload.iat === "number" && exp - payload.iat > expect.maxLifetimeS) {
      return { ok: false, reason: `lifetime (exp - iat) over ${expect.maxLifetimeS} s` };
    }
    const jti = typeof payload.jti === "string" ? payload.jti : null;
    if (expect.requireJti && (jti === null || jti === "" || jti.length > 256)) return { ok: false, reason: "bad jti" };
    return { ok: true, jti, exp };
  } catch (err) {
    return failure(err);
  }
}

/** A JWT's `kid` header, read without verifying anything; undefined when absent or unreadable. */
export function headerKid(jwt: string): string | undefined {
  try {
    const { kid } = decodeProtectedHeader(jwt);
    return typeof kid === "string" ? kid : undefined;
  } catch {
    return undefined;
  }
}

/** The most keys of one set a JWT without a `kid` is tried against (each try is one signature check). */
export const MAX_CANDIDATE_KEYS = 10;

/**
 * jwtVerify against a key set. A JWT without a `kid` (RFC 7515 4.1.4 makes it optional) matches
 * every key of its algorithm's type, and a set holds two while its owner rotates: jose then
 * refuses with JWKSMultipleMatchingKeys, which yields the candidates; each is tried in turn (at
 * most MAX_CANDIDATE_KEYS, so a set of many keys costs a bounded number of checks), and none
 * verifying is a signature failure, as with one key.
 */
async function verifyWithSet(jwt: string, keys: JWK[], options: JWTVerifyOptions) {
  try {
    return await jwtVerify(jwt, createLocalJWKSet({ keys } as JSONWebKeySet), options);
  } catch (err) {
    if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
    let tried = 0;
    for await (const candidate of err) {
      if (++tried > MAX_CANDIDATE_KEYS) break;
      try {
        return await jwtVerify(jwt, candidate, options);
      } catch (inner) {
        if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

/**
 * Public keys whose private halves were discarded when they were made, one per algorithm family:
 * an assertion naming a client_id that has no key set is verified against them (and always
 * fails), under the assertion's own `kid`, so that an unknown client_id costs the same signature
 * check as a known one with a wrong key (issue 22, no client_id oracle).
 */
const DECOY_KEYS: JWK[] = [
  { kty: "EC", crv: "P-256", x: "5F7rV0b17ofxl-abfIuoNCMz6O032cQ2-2c8k3XWEiw", y: "I51zdVf_6OfqeYl15MOv8QL8HybOSwS--Tau6PbOSuQ" },
  {
    kty: "EC",
    crv: "P-384",
    x: "hkJA7-DlMfQjjL6aelRI-nlAsc1zd1Gjnv9OMbbzusa21jjc2gUIaoKzMmweTia3",
    y: "HgX1t075Gdxq_ezN0GyLXqju_UOwF8SG2qU3WAK8QKrly2yxujVbwAaRc8sV_RzB",
  },
  { kty: "OKP", crv: "Ed25519", x: "DlYYnLbzfjlEXjI276DvzYTJ9gN-lqXdIGpChpszdk8" },
  {
    kty: "RSA",
    e: "AQAB",
    n: "qyqclNfnFfj1ztqgjTSabDVIoro9I965HXakgy4TMeUpLTDd-zLdNo0e-yltPTVORPcqo-kxOIcFknGSPSOGNmtdPAz-mhbNuGu1Z1SBNZU_PvbugSmkDS6WikaqBxz_7qUUr-QY3leTk78OsIjis-C9xqOWDZuDOqYovO5Vqtz3syzvVqtQKqMlDGn5uon6pnLPH27DSDkSRM1GO2dwkBACgwhTozQ2RI7fOxycVx1QjuNGG_APPQsQTxbmA0h-mHxuGlsdEii75ZnntCTw9pkz_CQIbvLdVSp6Chanlt2hlVW7e8XAF9Qz5E7pzNbvgfuDyODlOmj_tFg3Snp-9w",
  },
];

/** Verifies a client assertion against the decoy keys: always a refusal, after the same work. */
export async function refuseAsIfVerified(
  assertion: string,
  expect: { clientId: string; audiences: string[]; nowMs: number },
): Promise<void> {
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(assertion).kid;
  } catch {
    kid = undefined;
  }
  await verifyClientAssertion(
    assertion,
    DECOY_KEYS.map((k) => (kid === undefined ? k : { ...k, kid })),
    expect,
  );
}

export interface DpopExpectation {
  method: string;
  /** The request's URL; its query and fragment are ignored (RFC 9449 4.3, point 9). */
  url: string;
  nowMs: number;
  /** The access token presented with the proof: its hash must be the proof's `ath`. */
  accessToken?: string;
}

/**
 * DPoP keys seen in this isolate, by their public members: a client proves possession with the
 * same key on every request, and importing it and computing its thumbprint cost more than
 * checking the signature. Only public keys are accepted (as jose's EmbeddedJWK does), so nothing
 * secret is kept.
 */
const dpopKeys = new IsolateCache<Promise<{ key: CryptoKey | Uint8Array; jkt: string }>>({ maxEntries: 10_000 });
/** The `ath` of each access token presented (RFC 9449 4.2): one SHA-256 per token, not per request. */
const tokenHashes = new IsolateCache<Promise<string>>({ maxEntries: 10_000 });

/** The public key in a DPoP proof's header, imported once per isolate (RFC 9449 4.3, points 5 and 6). */
function embeddedKey(header: JWTHeaderParameters): Promise<{ key: CryptoKey | Uint8Array; jkt: string }> {
  const jwk = header.jwk;
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) {
    throw new errors.JWSInvalid('"jwk" (JSON Web Key) Header Parameter must be a JSON object');
  }
  if ("d" in jwk || "k" in jwk) throw new errors.JWSInvalid('"jwk" (JSON Web Key) Header Parameter must be a public key');
  const { kty, crv, x, y, n, e } = jwk;
  const id = JSON.stringify([header.alg, kty, crv, x, y, n, e]);
  let found = dpopKeys.get(id);
  if (found === undefined) {
    const publicJwk = { kty, crv, x, y, n, e } as JWK;
    const made = Promise.all([importJWK(publicJwk, header.alg), calculateJwkThumbprint(publicJwk, "sha256")]).then(([key, jkt]) => ({
      key,
      jkt,
    }));
    // A key that fails to import is not kept.
    made.catch(() => dpopKeys.delete(id));
    dpopKeys.set(id, made);
    found = made;
  }
  return found;
}

function accessTokenHash(token: string): Promise<string> {
  let hash = tokenHashes.get(token);
  if (hash === undefined) {
    hash = crypto.subtle.digest("SHA-256", encodeUtf8(token)).then((d) => base64UrlEncode(new Uint8Array(d)));
    tokenHashes.set(token, hash);
  }
  return hash;
}

/** A DPoP proof's key thumbprint (RFC 7638, SHA-256) and its jti and iat. */
export async function verifyDpopProof(
  proof: string,
  expect: DpopExpectation,
): Promise<Verified<{ jkt: string; jti: string; iat: number }>> {
  try {
    let jkt = "";
    const { payload } = await jwtVerify(
      proof,
      async (header) => {
        const embedded = await embeddedKey(header);
        jkt = embedded.jkt;
        return embedded.key;
      },
      {
        algorithms: JWT_ALGS,
        typ: "dpop+jwt",
        currentDate: new Date(expect.nowMs),
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ["iat", "jti", "htm", "htu"],
      },
    );
    const now = Math.floor(expect.nowMs / 1000);
    if (typeof payload.iat !== "number" || Math.abs(now - payload.iat) > DPOP_WINDOW_S) {
      return { ok: false, reason: `iat more than ${DPOP_WINDOW_S} s from now` };
    }
    if (typeof payload.jti !== "string" || payload.jti === "" || payload.jti.length > 256) return { ok: false, reason: "bad jti" };
    if (payload.htm !== expect.method) return { ok: false, reason: "htm is not this request's method" };
    if (typeof payload.htu !== "string" || normalizedUrl(payload.htu) !== normalizedUrl(expect.url)) {
      return { ok: false, reason: "htu is not this request's URL" };
    }
    if (expect.accessToken !== undefined) {
      const ath = await accessTokenHash(expect.accessToken);
      if (payload.ath !== ath) return { ok: false, reason: payload.ath === undefined ? "ath is missing" : "ath is not the token's hash" };
    }
    return { ok: true, jkt, jti: payload.jti, iat: payload.iat };
  } catch (err) {
    return { ok: false, reason: reasonOf(err) };
  }
}

/** RFC 9449 4.3: compared without query and fragment, after URL normalization. */
function normalizedUrl(value: string): string | null {
  try {
    const url = new URL(value);
    url.search = "";
    url.hash = "";
    return url.href;
  } catch {
    return null;
  }
}
