/**
 * Issuing access tokens for the client-credentials grant (spec 4.1, RFC 6749 4.4) and
 * authenticating them on protected requests (RFC 6750). Both REST and GraphQL call these.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { digestsEqual, sha256Hex } from "../lib/crypto";
import { newTokenId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { MeView, TokenData } from "../schemas/oauth";
import { TokenRequest } from "../schemas/oauth";
import type { AccessTokenClaims, ApiKeyRecord } from "../schemas/records";
import { parseInput } from "../schemas/validate";
import { findClientCredentialForAuth, isClientRevoked, touchClientCredential } from "../stores/client-credentials";
import { invalidToken, signAccessToken, verifyAccessToken } from "./access-token";

/** Who a valid access token speaks for, as seen by every protected operation. */
export interface Principal {
  organizationId: string;
  userId: string;
  clientId: string;
  apiKeyId: string;
  tokenId: string;
  issuedAt: number;
  expiresAt: number;
}

export interface ClientAuthentication {
  /** "basic" when the credentials came in an Authorization header (RFC 6749 2.3.1). */
  method: "basic" | "body";
}

// Compared against when the client_id is unknown, so both failures cost the same hash work.
const DUMMY_HASH = "0".repeat(64);

/**
 * Validates a token request (`params` as parsed from JSON or form, with Basic credentials merged
 * in) and issues a token. Unknown client, wrong secret and revoked credential get one answer.
 */
export async function issueAccessToken(
  deps: Deps,
  apiKey: ApiKeyRecord,
  params: Record<string, unknown>,
  auth: ClientAuthentication,
): Promise<TokenData> {
  // RFC 6749 5.2: an unsupported grant is reported as such even if other fields are missing.
  const grantType = params.grant_type;
  if (typeof grantType === "string" && grantType !== "client_credentials") {
    const shown = grantType.slice(0, 40).replace(/[^\x20-\x7e]/g, "?");
    throw new ApiError("unsupported_grant_type", `grant_type "${shown}" is not supported; use "client_credentials".`);
  }
  const request = parseInput(TokenRequest, params);

  const [record, secretHash] = await Promise.all([findClientCredentialForAuth(deps, request.client_id), sha256Hex(request.client_secret)]);
  const secretMatches = digestsEqual(record?.secret_hash ?? DUMMY_HASH, secretHash);
  if (record === null || !secretMatches || record.revoked_at !== null) {
    throw new ApiError(
      "invalid_client",
      "Client authentication failed: unknown client_id, wrong client_secret, or revoked credentials.",
      auth.method === "basic" ? { headers: { "WWW-Authenticate": 'Basic realm="keyway"' } } : {},
    );
  }
  if (record.organization_id !== apiKey.organization_id) {
    // Only reachable with the right secret, so saying why reveals nothing new.
    throw new ApiError("invalid_client", "The client credentials belong to a different organization than the API key.");
  }

  touchClientCredential(deps, record);
  const iat = Math.floor(deps.now() / 1000);
  const ttl = deps.config.accessTokenTtlSeconds;
  const claims: AccessTokenClaims = {
    v: 1,
    org: record.organization_id,
    sub: record.user_id,
    cid: record.client_id,
    iat,
    exp: iat + ttl,
    jti: newTokenId(),
  };
  return {
    access_token: await signAccessToken(deps.config.signingKeys, claims),
    token_type: "Bearer",
    expires_in: ttl,
    refresh_token: null,
  };
}

/**
 * Authenticates `Authorization: Bearer <token>` for a request that already passed the API key
 * check: genuine, unexpired, issued to the API key's organization, credential not revoked.
 */
export async function authenticateAccessToken(deps: Deps, apiKey: ApiKeyRecord, authorization: string | undefined): Promise<Principal> {
  const token = bearerToken(authorization);
  const claims = await verifyAccessToken(deps.config.signingKeys, token, deps.now());
  if (claims.org !== apiKey.organization_id) {
    throw invalidToken("The access token was issued to a different organization than the API key.");
  }
  if (await isClientRevoked(deps, claims.cid)) {
    throw invalidToken("The client credentials behind this access token have been revoked.");
  }
  return {
    organizationId: claims.org,
    userId: claims.sub,
    clientId: claims.cid,
    apiKeyId: apiKey.id,
    tokenId: claims.jti,
    issuedAt: claims.iat,
    expiresAt: claims.exp,
  };
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
