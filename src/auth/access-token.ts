/**
 * Self-contained access tokens: `kw_at_<kid>.<claims>.<mac>` (lib/signed.ts), claims being
 * base64url JSON (schemas/records.ts AccessTokenClaims) and mac HMAC-SHA256 over the rest.
 * They verify at any edge location the instant they are issued, with no storage read, which
 * Workers KV (eventually consistent, caching misses) could not guarantee. The kid selects the
 * key, so keys rotate without invalidating live tokens. Clients must treat tokens as opaque.
 */

import { ApiError } from "../errors";
import { derived, IsolateCache } from "../lib/cache";
import type { VersionedKey } from "../lib/keyring";
import { open, sign } from "../lib/signed";
import { AccessTokenClaims } from "../schemas/records";

const PREFIX = "kw_at_";
/** Generous bound; real tokens are about 250 characters. Longer input is refused unparsed. */
const MAX_TOKEN_LENGTH = 1024;

export async function signAccessToken(keys: VersionedKey[], claims: AccessTokenClaims): Promise<string> {
  if (keys.length === 0) throw new ApiError("service_unavailable", "No token signing key is configured.");
  return sign(keys, PREFIX, claims);
}

/**
 * Tokens whose MAC this isolate has checked, per keyring (config.ts parses it once per isolate),
 * for VERIFIED_CACHE_TTL_MS: a client presents the same token on every request for up to an
 * hour, and the MAC check, decoding and claim parsing were a tenth of a protected request.
 * Expiry is still checked on every use and revocation is checked by the caller, so the only
 * effect of the cache is that a signing key removed from the keyring stops its tokens up to
 * 10 s later in isolates that already verified them. Only genuine tokens are stored.
 */
export const VERIFIED_CACHE_TTL_MS = 10_000;
const verifiedUnder = derived(
  (_keys: VersionedKey[]) => new IsolateCache<AccessTokenClaims>({ ttlMs: VERIFIED_CACHE_TTL_MS, maxEntries: 10_000 }),
);

/** Returns the claims of a genuine, unexpired token, or throws invalid_token (RFC 6750 3.1). */
export async function verifyAccessToken(keys: VersionedKey[], token: string, nowMs: number): Promise<AccessTokenClaims> {
  const cache = verifiedUnder(keys);
  let claims = cache.get(token, nowMs);
  if (claims === undefined) {
    const opened = await open(keys, PREFIX, token, AccessTokenClaims, MAX_TOKEN_LENGTH);
    if (!opened.ok) {
      throw invalidToken(opened.reason === "malformed" ? "The access token is malformed." : "The access token is not valid.");
    }
    claims = opened.value;
    cache.set(token, claims, nowMs);
  }
  if (nowMs >= claims.exp * 1000) throw invalidToken("The access token has expired. Request a new one at /v1/oauth.");
  return claims;
}

export function invalidToken(message: string): ApiError {
  const description = message.replaceAll('"', "'");
  return new ApiError("invalid_token", message, {
    headers: { "WWW-Authenticate": `Bearer realm="keyway", error="invalid_token", error_description="${description}"` },
  });
}
