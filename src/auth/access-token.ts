/**
 * Self-contained access tokens, of two kinds, both verified at any edge location the instant they
 * are issued with no storage read, which Workers KV (eventually consistent, caching misses) could
 * not guarantee:
 * - opaque (the default): `kw_at_<kid>.<claims>.<mac>` (lib/signed.ts), claims being base64url
 *   JSON (schemas/records.ts AccessTokenClaims) and mac HMAC-SHA256 over the rest. Clients must
 *   treat them as opaque;
 * - RFC 9068 JWTs (issue 44, a credential's `access_token_strategy: "jwt"`): `typ` at+jwt, ES256,
 *   signed by keyway's published key set (lib/token-keys.ts), with the claims RFC 9068 2.2
 *   requires (`iss`, `exp`, `aud`, `sub`, `client_id`, `iat`, `jti`), `scope`, `cnf.jkt` when
 *   DPoP-bound (RFC 9449 6.1), and two private claims keyway's own routes need (`org_id`, and
 *   `api_key_id` for a DPoP-bound token), so that resource servers other than keyway verify
 *   them without a call. `aud` names keyway's API (RFC 9728's resource identifier) and the
 *   organization (`urn:keyway:org:<id>`): every organization's tokens come from one issuer and
 *   one key set, so a resource server of one organization checks its own audience and no other
 *   organization's token passes it (RFC 9068 4: the audience check is the resource server's).
 *   keyway, a resource server of its own tokens, checks `iss` and both audiences too (openJwt),
 *   then reads one into the same claims as an opaque token: revocation, limits and DPoP are
 *   decided the same way.
 * Either kind's kid selects the key, so keys rotate without invalidating live tokens.
 */

import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import * as z from "zod";
import { ApiError } from "../errors";
import { derived, IsolateCache } from "../lib/cache";
import type { VersionedKey } from "../lib/keyring";
import { open, sign } from "../lib/signed";
import { ACCESS_TOKEN_ALG, accessTokenKeys } from "../lib/token-keys";
import { AccessTokenClaims } from "../schemas/records";

const PREFIX = "kw_at_";
/** Generous bound; real tokens are about 250 characters (JWTs about 700). Longer input is refused unparsed. */
const MAX_TOKEN_LENGTH = 1024;
const MAX_JWT_LENGTH = 2048;
/** RFC 9068 2.1. */
export const AT_JWT_TYPE = "at+jwt";

/** What keyway puts in a JWT access token and reads back from one it signed. */
const JwtAccessTokenClaims = z.object({
  iss: z.string(),
  sub: z.string(),
  aud: z.union([z.string(), z.array(z.string())]),
  client_id: z.string(),
  iat: z.number().int(),
  exp: z.number().int(),
  jti: z.string(),
  scope: z.string().optional(),
  cnf: z.object({ jkt: z.string() }).optional(),
  org_id: z.string(),
  api_key_id: z.string().optional(),
});

/** The audience naming an organization in its JWT access tokens. */
export const organizationAudience = (orgId: string): string => `urn:keyway:org:${orgId}`;

/** Where a JWT access token is issued and for what (RFC 9068 2.2: `iss`, and `aud` the resource: RFC 9728's identifier). */
export interface JwtAudience {
  issuer: string;
  resource: string;
}

/**
 * keyway's issuer and its /v1 API's resource identifier, which are one origin (http/context.ts
 * keywayOrigin): what a JWT access token is minted with and must name to be accepted.
 */
export const jwtAudienceOf = (issuer: string): JwtAudience => ({ issuer, resource: issuer });

/** An RFC 9068 access token for `claims`, signed by the keyring's first key. */
export async function signJwtAccessToken(keys: VersionedKey[], claims: AccessTokenClaims, where: JwtAudience): Promise<string> {
  const signing = (await accessTokenKeys(keys))[0];
  if (signing === undefined) throw new ApiError("service_unavailable", "No token signing key is configured.");
  return new SignJWT({
    client_id: claims.cid,
    scope: claims.scope ?? "",
    org_id: claims.org,
    ...(claims.cnf !== undefined ? { cnf: claims.cnf } : {}),
    ...(claims.akid !== undefined ? { api_key_id: claims.akid } : {}),
  })
    .setProtectedHeader({ alg: ACCESS_TOKEN_ALG, typ: AT_JWT_TYPE, kid: signing.kid })
    .setIssuer(where.issuer)
    .setSubject(claims.sub)
    .setAudience([where.resource, organizationAudience(claims.org)])
    .setIssuedAt(claims.iat)
    .setExpirationTime(claims.exp)
    .setJti(claims.jti)
    .sign(signing.privateKey);
}

/**
 * A JWT access token keyway signed, as its claims; refused unless `typ` is at+jwt, `alg` ES256,
 * the signature one of the keyring's keys', `iss` this deployment's issuer and `aud` both its
 * resource identifier and the audience of the organization the token claims (RFC 9068 4). The
 * signature alone is not enough: another deployment holding the same TOKEN_SIGNING_KEYS (a
 * staging copy, a restored backup) signs with the same keys under its own issuer. Expiry is the
 * caller's check.
 */
async function openJwt(keys: VersionedKey[], token: string, where: JwtAudience): Promise<AccessTokenClaims> {
  if (token.length > MAX_JWT_LENGTH) throw invalidToken("The access token is malformed.");
  const held = await accessTokenKeys(keys);
  try {
    const { payload } = await jwtVerify(
      token,
      (header) => {
        const key = held.find((k) => k.kid === header.kid);
        if (key === undefined) throw new joseErrors.JWKSNoMatchingKey();
        return key.publicKey;
      },
      // RFC 9068 4: `iss` exactly the issuer, and `aud` containing the resource's identifier.
      { algorithms: [ACCESS_TOKEN_ALG], typ: AT_JWT_TYPE, currentDate: new Date(0), issuer: where.issuer, audience: where.resource },
    );
    const claims = JwtAccessTokenClaims.parse(payload);
    // The organization's audience must name the organization the token speaks for (`org_id`):
    // keyway's routes act for `org_id`, a resource server of one organization checks its audience.
    const audiences = typeof claims.aud === "string" ? [claims.aud] : claims.aud;
    if (!audiences.includes(organizationAudience(claims.org_id))) throw invalidToken("The access token is not valid.");
    return {
      v: 1,
      org: claims.org_id,
      sub: claims.sub,
      cid: claims.client_id,
      iat: claims.iat,
      exp: claims.exp,
      jti: claims.jti,
      scope: claims.scope ?? "",
      ...(claims.cnf !== undefined ? { cnf: claims.cnf } : {}),
      ...(claims.api_key_id !== undefined ? { akid: claims.api_key_id } : {}),
      fmt: "jwt",
    };
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw invalidToken(
      err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid
        ? "The access token is malformed."
        : "The access token is not valid.",
    );
  }
}

/** Whether a presented token is shaped as a JWT (three base64url parts) rather than a `kw_at_` token. */
const looksLikeJwt = (token: string): boolean => token.startsWith("eyJ") && token.split(".").length === 3;

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

/**
 * Returns the claims of a genuine, unexpired token, or throws invalid_token (RFC 6750 3.1). `where`
 * is this deployment's issuer and resource identifier, which a JWT must name (RFC 9068 4); an
 * opaque token's MAC is keyway's alone and names neither.
 */
export async function verifyAccessToken(
  keys: VersionedKey[],
  token: string,
  nowMs: number,
  where: JwtAudience,
): Promise<AccessTokenClaims> {
  const cache = verifiedUnder(keys);
  const jwt = looksLikeJwt(token);
  // Without PUBLIC_BASE_URL the issuer is the request's origin, which may differ from request to
  // request: a JWT is remembered as verified for the issuer it was checked against only.
  const cacheKey = jwt ? `${where.issuer} ${where.resource} ${token}` : token;
  let claims = cache.get(cacheKey, nowMs);
  if (claims === undefined) {
    if (jwt) {
      claims = await openJwt(keys, token, where);
    } else {
      const opened = await open(keys, PREFIX, token, AccessTokenClaims, MAX_TOKEN_LENGTH);
      if (!opened.ok) {
        throw invalidToken(opened.reason === "malformed" ? "The access token is malformed." : "The access token is not valid.");
      }
      claims = opened.value;
    }
    cache.set(cacheKey, claims, nowMs);
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
