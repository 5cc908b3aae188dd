/**
 * Self-contained access tokens: `kw_at_<kid>.<claims>.<mac>` where claims is base64url JSON
 * (schemas/records.ts AccessTokenClaims) and mac is HMAC-SHA256 over `kw_at_<kid>.<claims>`.
 * They verify at any edge location the instant they are issued, with no storage read, which
 * Workers KV (eventually consistent, caching misses) could not guarantee. The kid selects the
 * key, so keys rotate without invalidating live tokens. Clients must treat tokens as opaque.
 */
import type { VersionedKey } from "../config";
import { ApiError } from "../errors";
import { hmacKey } from "../lib/crypto";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "../lib/encoding";
import { AccessTokenClaims } from "../schemas/records";

const PREFIX = "kw_at_";
/** Generous bound; real tokens are about 250 characters. Longer input is refused unparsed. */
const MAX_TOKEN_LENGTH = 1024;
const TOKEN_SHAPE = /^kw_at_([A-Za-z0-9-]{1,32})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;

function keyFor(key: VersionedKey): Promise<CryptoKey> {
  return hmacKey(key.raw, `access-token:${key.kid}:${base64UrlEncode(key.raw)}`);
}

export async function signAccessToken(keys: VersionedKey[], claims: AccessTokenClaims): Promise<string> {
  const key = keys[0];
  if (key === undefined) throw new ApiError("service_unavailable", "No token signing key is configured.");
  const signingInput = `${PREFIX}${key.kid}.${base64UrlEncode(encodeUtf8(JSON.stringify(claims)))}`;
  const mac = await crypto.subtle.sign("HMAC", await keyFor(key), encodeUtf8(signingInput));
  return `${signingInput}.${base64UrlEncode(new Uint8Array(mac))}`;
}

/**
 * Returns the claims of a genuine, unexpired token, or throws invalid_token (RFC 6750 3.1).
 * The MAC is checked before the claims are parsed, so forged input never reaches JSON.parse.
 */
export async function verifyAccessToken(
  keys: VersionedKey[],
  token: string,
  nowMs: number,
): Promise<AccessTokenClaims> {
  const match = token.length <= MAX_TOKEN_LENGTH ? TOKEN_SHAPE.exec(token) : null;
  if (!match) throw invalidToken("The access token is malformed.");
  const [, kid, claimsPart, macPart] = match as unknown as [string, string, string, string];
  const key = keys.find((k) => k.kid === kid);
  const mac = base64UrlDecode(macPart);
  if (key === undefined || mac === null) throw invalidToken("The access token is not valid.");
  const signingInput = `${PREFIX}${kid}.${claimsPart}`;
  const genuine = await crypto.subtle.verify("HMAC", await keyFor(key), mac, encodeUtf8(signingInput));
  if (!genuine) throw invalidToken("The access token is not valid.");

  const json = decodeUtf8(base64UrlDecode(claimsPart) ?? new Uint8Array());
  let claims: AccessTokenClaims;
  try {
    claims = AccessTokenClaims.parse(JSON.parse(json ?? ""));
  } catch {
    // Only reachable with a valid MAC, i.e. a token we signed in an older format.
    throw invalidToken("The access token is not valid.");
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
