/**
 * Public key sets and issuer metadata fetched from URLs that API users choose, for code that runs
 * inside a Durable Object (hence here, in the foundation layer): a JWK Set (RFC 7517 section 5) of
 * signing keys, an issuer identifier's rules (RFC 8414 section 2), and the `jwks_uri` found through
 * OpenID Connect Discovery 1.0 (section 4, with the issuer check of 4.3) or, failing that, OAuth 2.0
 * Authorization Server Metadata (RFC 8414 section 3, with the check of 3.3).
 *
 * Every request goes through one guarded fetch: the URL passes the SSRF guard (lib/ssrf.ts) with
 * the caller's policy, redirects are not followed (a 3xx is a refusal, so no hop escapes the
 * guard), one deadline covers the request and the body, and the body is read with a byte cap
 * whatever Content-Length says. Keys that could not or must not verify a signature are dropped,
 * not fatal: private members (RFC 7518 6.2.2, 6.3.2, 6.4), symmetric keys (`kty` oct), a `use`
 * other than `sig` (RFC 7517 4.2), and whatever lib/jwk-check.ts refuses. Refusal reasons are
 * short fixed strings that never echo the URL (which may carry secrets in its query) or the body.
 */
import type { JWK } from "jose";
import { decodeUtf8 } from "./encoding";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "./json";
import { jwkProblem } from "./jwk-check";
import { checkTarget, type TargetPolicy } from "./ssrf";
import { readCapped } from "./streams";

/** The guard's policy, and the bound on the whole call (every request and body read in it). */
export interface FetchPolicy extends TargetPolicy {
  /** Milliseconds for the whole call, default DEFAULT_TIMEOUT_MS. */
  timeoutMs?: number;
}

export type KeySetResult = { ok: true; keys: JWK[]; maxAgeSeconds: number | null } | { ok: false; reason: string };
export type DiscoveryResult = { ok: true; jwksUri: string } | { ok: false; reason: string };
export type IssuerCheck = { ok: true; issuer: string } | { ok: false; reason: string };

export const DEFAULT_TIMEOUT_MS = 5_000;
/** Largest body read, key set or metadata document. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Most usable keys kept from one set; the rest are ignored. */
export const MAX_KEYS = 100;

/** Members that only a private or symmetric key has (RFC 7518 6.2.2, 6.3.2, 6.4.1; RFC 9964 3). */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"] as const;
/** The members jwkProblem reads; each must be a string when present. */
const CHECKED_MEMBERS = ["kty", "alg", "crv", "x", "y", "n", "e"] as const;

const OIDC_SUFFIX = "/.well-known/openid-configuration";
const RFC8414_SUFFIX = "/.well-known/oauth-authorization-server";

type Subject = "key set" | "issuer metadata";

/** What the guarded fetch may answer: the parsed JSON, or why not, with whether it was a 404 or not JSON. */
type Fetched =
  | { ok: true; value: unknown; headers: Headers }
  | { ok: false; reason: string; fallback: boolean /* 404 or not JSON: another well-known URL may be tried */ };

/**
 * The keys of the JWK Set at `url` that can verify signatures, and how long it may be cached
 * (`Cache-Control: max-age`; null when absent; 0 when `no-store`/`no-cache` is present: kept as
 * briefly as the caller allows).
 */
export async function fetchKeySet(url: string, policy: FetchPolicy): Promise<KeySetResult> {
  const fetched = await guardedJson(url, "key set", policy, deadline(policy));
  if (!fetched.ok) return { ok: false, reason: fetched.reason };

  const value = fetched.value;
  if (!isObject(value) || !Array.isArray(value.keys)) return { ok: false, reason: "key set is not a JWK Set ({keys: [...]})" };
  const keys: JWK[] = [];
  for (const candidate of value.keys) {
    if (keys.length >= MAX_KEYS) break;
    const key = await usableKey(candidate);
    if (key !== null) keys.push(key);
  }
  if (keys.length === 0) return { ok: false, reason: "no usable signing key" };
  return { ok: true, keys, maxAgeSeconds: maxAge(fetched.headers.get("Cache-Control")) };
}

/**
 * The issuer's `jwks_uri`: OpenID Connect Discovery 1.0 section 4 first (the issuer, any
 * terminating `/` removed, then `/.well-known/openid-configuration`), and when that is not found
 * (404) or not JSON, RFC 8414 section 3 (`/.well-known/oauth-authorization-server` inserted between
 * the host and the issuer's path). The document's `issuer` must be identical to the (normalized)
 * issuer (OIDC Discovery 4.3, RFC 8414 3.3); a document that fails that check is not a reason to
 * try the other one. `jwks_uri` must pass the SSRF guard with the same policy. One deadline covers
 * both requests.
 */
export async function discoverJwksUri(issuer: string, policy: FetchPolicy): Promise<DiscoveryResult> {
  const checked = checkIssuer(issuer, policy);
  if (!checked.ok) return checked;
  const signal = deadline(policy);
  const id = checked.issuer;

  let fetched = await guardedJson(oidcConfigurationUrl(id), "issuer metadata", policy, signal);
  if (!fetched.ok && fetched.fallback) {
    fetched = await guardedJson(authorizationServerMetadataUrl(id), "issuer metadata", policy, signal);
  }
  if (!fetched.ok) return { ok: false, reason: fetched.reason };

  const doc = fetched.value;
  if (!isObject(doc)) return { ok: false, reason: "issuer metadata is not a JSON object" };
  if (doc.issuer !== id) return { ok: false, reason: "issuer metadata names another issuer" };
  if (typeof doc.jwks_uri !== "string") return { ok: false, reason: "issuer metadata has no jwks_uri" };
  const jwks = checkTarget(doc.jwks_uri, policy);
  if (!jwks.ok) return { ok: false, reason: `jwks_uri refused: ${jwks.reason}` };
  return { ok: true, jwksUri: jwks.url.href };
}

/**
 * An issuer identifier (RFC 8414 section 2, OIDC Discovery 2): a URL that passes the SSRF guard
 * (so https, or http and loopback only when the policy allows insecure targets), with no query or
 * fragment (an empty `?` or `#` included). Normalized as the URL parser reads it (scheme and host
 * lower-cased, a default port dropped, the path percent-encoded), except that a bare origin stays
 * without the `/` the parser would add, since issuers are compared as strings.
 */
export function checkIssuer(issuer: string, policy: TargetPolicy): IssuerCheck {
  const target = checkTarget(issuer, policy);
  if (!target.ok) return { ok: false, reason: target.reason };
  // checkTarget drops a fragment, and the parser reads an empty `?` or `#` as none: look at the text.
  if (issuer.includes("#")) return { ok: false, reason: "issuer must not have a fragment" };
  if (issuer.includes("?") || target.url.search !== "") return { ok: false, reason: "issuer must not have a query" };
  const href = target.url.href;
  const bareOrigin = target.url.pathname === "/" && !issuer.trim().endsWith("/");
  return { ok: true, issuer: bareOrigin ? href.slice(0, -1) : href };
}

/** OIDC Discovery 4.1: the issuer, any terminating `/` removed, with the well-known suffix appended. */
function oidcConfigurationUrl(issuer: string): string {
  return `${issuer.replace(/\/$/, "")}${OIDC_SUFFIX}`;
}

/** RFC 8414 3.1: the well-known suffix between the host and the path, any terminating `/` removed. */
function authorizationServerMetadataUrl(issuer: string): string {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return `${url.origin}${RFC8414_SUFFIX}${path}`;
}

/**
 * The one guarded request: the URL must pass the SSRF guard with `policy` (its reason is answered
 * as it is), redirects are refused, the status must be 2xx, the body at most MAX_BODY_BYTES read
 * under `signal`, valid UTF-8 JSON no deeper than MAX_JSON_DEPTH.
 */
async function guardedJson(url: string, subject: Subject, policy: TargetPolicy, signal: AbortSignal): Promise<Fetched> {
  const target = checkTarget(url, policy);
  if (!target.ok) return { ok: false, reason: target.reason, fallback: false };
  let res: Response;
  try {
    res = await fetch(target.url.href, { method: "GET", redirect: "manual", headers: { Accept: "application/json" }, signal });
  } catch {
    return { ok: false, reason: signal.aborted ? `${subject} request timed out` : `${subject} request failed`, fallback: false };
  }
  if (res.status < 200 || res.status > 299) {
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 300 && res.status <= 399) return { ok: false, reason: `${subject} URL redirected`, fallback: false };
    if (res.status === 404) return { ok: false, reason: `${subject} not found`, fallback: true };
    return { ok: false, reason: `${subject} URL answered an error status`, fallback: false };
  }
  let bytes: Uint8Array | null;
  try {
    bytes = await readCapped(res.body, MAX_BODY_BYTES, signal);
  } catch {
    return { ok: false, reason: signal.aborted ? `${subject} request timed out` : `${subject} request failed`, fallback: false };
  }
  if (bytes === null) return { ok: false, reason: `${subject} is larger than 64 KiB`, fallback: false };
  const text = decodeUtf8(bytes);
  if (text === null || jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) return { ok: false, reason: `${subject} is not JSON`, fallback: true };
  try {
    return { ok: true, value: JSON.parse(text) as unknown, headers: res.headers };
  } catch {
    return { ok: false, reason: `${subject} is not JSON`, fallback: true };
  }
}

function deadline(policy: FetchPolicy): AbortSignal {
  const ms = policy.timeoutMs;
  return AbortSignal.timeout(ms !== undefined && Number.isFinite(ms) && ms > 0 ? ms : DEFAULT_TIMEOUT_MS);
}

/**
 * A public signing key that jwk-check accepts, copied with only the members it vouched for (and
 * `kid`, `use`, `alg`), or null for a key to drop.
 */
async function usableKey(candidate: unknown): Promise<JWK | null> {
  if (!isObject(candidate)) return null;
  if (PRIVATE_MEMBERS.some((m) => m in candidate)) return null;
  if (candidate.kty === "oct") return null;
  if (candidate.use !== undefined && candidate.use !== "sig") return null;
  if (candidate.kid !== undefined && typeof candidate.kid !== "string") return null;
  const members: Partial<Record<(typeof CHECKED_MEMBERS)[number], string>> = {};
  for (const m of CHECKED_MEMBERS) {
    const value = candidate[m];
    if (value === undefined) continue;
    if (typeof value !== "string") return null;
    members[m] = value;
  }
  const { kty, alg, crv, x, y, n, e } = members;
  if (kty === undefined) return null;
  if ((await jwkProblem({ kty, alg, crv, x, y, n, e })) !== null) return null;
  const key: JWK = { kty };
  if (typeof candidate.kid === "string") key.kid = candidate.kid;
  if (candidate.use === "sig") key.use = "sig";
  // jwkProblem admits only the algorithms keyway verifies (RS256, PS256, ES256, ES384, EdDSA, Ed25519).
  if (alg !== undefined) key.alg = alg as JWK["alg"];
  if (crv !== undefined) key.crv = crv;
  if (x !== undefined) key.x = x;
  if (y !== undefined) key.y = y;
  if (n !== undefined) key.n = n;
  if (e !== undefined) key.e = e;
  return key;
}

/** RFC 9111 5.2.2.1: `max-age=N`; null when absent or malformed, 0 beside `no-store` or `no-cache`. */
function maxAge(header: string | null): number | null {
  if (header === null) return null;
  let seconds: number | null = null;
  for (const part of header.split(",")) {
    const [name = "", value] = part.trim().split("=", 2);
    const directive = name.trim().toLowerCase();
    if (directive === "no-store" || directive === "no-cache") return 0;
    if (directive === "max-age" && value !== undefined && seconds === null) {
      const digits = value.trim().replace(/^"(.*)"$/, "$1");
      if (/^[0-9]{1,10}$/.test(digits)) seconds = Number(digits);
    }
  }
  return seconds;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
