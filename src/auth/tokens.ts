/**
 * Issuing access tokens for the client-credentials grant (spec 4.1, RFC 6749 4.4) and
 * authenticating requests that present one (RFC 6750). Either way the request's credentials are
 * decided in its one call to the API key's object (gate.ts): the key, the limits, and whether the
 * client credential (presented in the body, or behind the token) has been revoked. The token
 * endpoint finds the credential in its KV lookup entry (one read), or, while KV has none yet, asks
 * the organization's object: a slower path, never a different answer.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { digestsEqual, sha256Hex } from "../lib/crypto";
import { CLIENT_ID_PATTERN, newTokenId } from "../lib/ids";
import { isoTime } from "../lib/time";
import { readCredentialLookup } from "../objects/lookup";
import { organizationObject, reach, unwrap } from "../objects/stubs";
import type { MeView, TokenData } from "../schemas/oauth";
import { TokenRequest } from "../schemas/oauth";
import type { AccessTokenClaims } from "../schemas/records";
import { parseInput } from "../schemas/validate";
import { invalidToken, signAccessToken, verifyAccessToken } from "./access-token";
import { type Admitted, admit } from "./gate";

/** Who a valid access token speaks for, as seen by every protected operation. */
export interface Principal {
  organizationId: string;
  userId: string;
  clientId: string;
  apiKeyId: string;
  /** Names the API key's object (for its usage); never shown. */
  apiKeyHash: string;
  tokenId: string;
  issuedAt: number;
  expiresAt: number;
}

/** A token request as read from the body (JSON or form) and the Authorization header. */
export interface PresentedTokenRequest {
  params: Record<string, unknown>;
  /** "basic" when the credentials came in an Authorization header (RFC 6749 2.3.1). */
  method: "basic" | "body";
}

/**
 * Issues a token. `request` is what the HTTP layer read, or the error reading it raised: the
 * request is counted against the API key either way, and that error answered after the key's
 * own. `onAdmitted` learns the key's decision as soon as it is made (for the RateLimit fields).
 */
export async function issueAccessToken(
  deps: Deps,
  presentedKey: string | undefined,
  request: PresentedTokenRequest | ApiError,
  onAdmitted: (admitted: Admitted) => void,
): Promise<TokenData> {
  const params = request instanceof ApiError ? {} : request.params;
  const clientId = typeof params.client_id === "string" && CLIENT_ID_PATTERN.test(params.client_id) ? params.client_id : undefined;
  const now = deps.now();
  const [lookup, secretHash] = await Promise.all([
    clientId === undefined ? null : readCredentialLookup(deps.kv, clientId, now),
    typeof params.client_secret === "string" ? sha256Hex(params.client_secret) : null,
  ]);
  const secretMatches = lookup !== null && secretHash !== null && digestsEqual(lookup.secret_hash, secretHash);

  const admitted = await admit(deps, presentedKey, { clientId, authenticated: secretMatches });
  onAdmitted(admitted);
  if (request instanceof ApiError) throw request;

  // RFC 6749 5.2: an unsupported grant is reported as such even if other fields are missing.
  const grantType = params.grant_type;
  if (typeof grantType === "string" && grantType !== "client_credentials") {
    const shown = grantType.slice(0, 40).replace(/[^\x20-\x7e]/g, "?");
    throw new ApiError("unsupported_grant_type", `grant_type "${shown}" is not supported; use "client_credentials".`);
  }
  const valid = parseInput(TokenRequest, params);

  const fail = (message = "Client authentication failed: unknown client_id, wrong client_secret, or revoked credentials.") =>
    new ApiError("invalid_client", message, request.method === "basic" ? { headers: { "WWW-Authenticate": 'Basic realm="keyway"' } } : {});
  const org = admitted.apiKey.organizationId;
  let userId: string;
  if (lookup !== null) {
    if (!secretMatches || admitted.clientRevoked) throw fail();
    // Only reachable with the right secret, so saying why reveals nothing new.
    if (lookup.organization_id !== org) throw fail("The client credentials belong to a different organization than the API key.");
    userId = lookup.user_id;
  } else {
    // KV has no entry (yet): the API key's organization is the only one the credential may belong to.
    const hash = secretHash ?? (await sha256Hex(valid.client_secret));
    const found = clientId
      ? unwrap(await reach("organization", () => organizationObject(deps, org).authenticateClient(valid.client_id, hash, now)))
      : null;
    if (found === null || !found.active || admitted.clientRevoked) throw fail();
    userId = found.user_id;
  }

  const iat = Math.floor(now / 1000);
  const ttl = deps.config.accessTokenTtlSeconds;
  const claims: AccessTokenClaims = { v: 1, org, sub: userId, cid: valid.client_id, iat, exp: iat + ttl, jti: newTokenId() };
  return {
    access_token: await signAccessToken(deps.config.signingKeys, claims),
    token_type: "Bearer",
    expires_in: ttl,
    refresh_token: null,
  };
}

/**
 * Authenticates a request that presents an API key and `Authorization: Bearer <token>`: the
 * token is checked locally (signature, expiry) and then, in the key's one call, against
 * revocation. Refusals come in the order a client can act on: the API key, the limits, the token.
 */
export async function authenticateRequest(
  deps: Deps,
  presentedKey: string | undefined,
  authorization: string | undefined,
  onAdmitted: (admitted: Admitted) => void,
  cost = 1,
): Promise<Principal> {
  let claims: AccessTokenClaims | ApiError;
  try {
    claims = await verifyAccessToken(deps.config.signingKeys, bearerToken(authorization), deps.now());
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    claims = err;
  }
  const admitted = await admit(deps, presentedKey, { clientId: claims instanceof ApiError ? undefined : claims.cid }, cost);
  onAdmitted(admitted);
  if (claims instanceof ApiError) throw claims;
  if (claims.org !== admitted.apiKey.organizationId) {
    throw invalidToken("The access token was issued to a different organization than the API key.");
  }
  if (admitted.clientRevoked) throw invalidToken("The client credentials behind this access token have been revoked.");
  return {
    organizationId: claims.org,
    userId: claims.sub,
    clientId: claims.cid,
    apiKeyId: admitted.apiKey.id,
    apiKeyHash: admitted.apiKey.hash,
    tokenId: claims.jti,
    issuedAt: claims.iat,
    expiresAt: claims.exp,
  };
}

/**
 * Whether the request carries an access token that verifies here (signature, expiry), without
 * any call: lets work that must come before admission (a GraphQL request's cost) be done only
 * for callers holding a genuine token. Revocation is still decided at admission.
 */
export async function bearerVerifies(deps: Deps, authorization: string | undefined): Promise<boolean> {
  try {
    await verifyAccessToken(deps.config.signingKeys, bearerToken(authorization), deps.now());
    return true;
  } catch (err) {
    if (err instanceof ApiError) return false;
    throw err;
  }
}

/** RFC 6750 2.1: `Bearer` (case-insensitive scheme), one space, then the token. */
function bearerToken(authorization: string | undefined): string {
  const match = authorization === undefined ? null : /^Bearer +(\S+) *$/i.exec(authorization);
  if (!match?.[1]) {
    // RFC 6750 3.1: no error attribute when the request carried no bearer credentials at all.
    throw new ApiError(
      "invalid_token",
      "This endpoint needs an access token: send `Authorization: Bearer <access_token>` (obtain one at POST /v1/oauth).",
      { headers: { "WWW-Authenticate": 'Bearer realm="keyway"' } },
    );
  }
  return match[1];
}

/** What GET /v1/me and GraphQL `viewer` say about a principal. */
export function meView(p: Principal, nowMs: number): MeView {
  return {
    organization_id: p.organizationId,
    user_id: p.userId,
    client_id: p.clientId,
    api_key_id: p.apiKeyId,
    token: {
      id: p.tokenId,
      issued_at: isoTime(p.issuedAt * 1000),
      expires_at: isoTime(p.expiresAt * 1000),
      expires_in: Math.max(0, p.expiresAt - Math.floor(nowMs / 1000)),
    },
  };
}
