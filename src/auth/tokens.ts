/**
 * Issuing access tokens for the client-credentials grant (spec 4.1, RFC 6749 4.4) and
 * authenticating requests that present one (RFC 6750, RFC 9449). Either way the request's
 * credentials are decided in its one call to the API key's object (gate.ts): the key, the
 * limits, whether the client credential (authenticated by client-auth.ts, or behind the token)
 * has been revoked, whether the token itself was revoked (RFC 7009), and whether a DPoP proof is
 * used for the first time. A token carries its scopes (scopes.ts) and, when DPoP-bound, its
 * key's thumbprint and its API key.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { newTokenId } from "../lib/ids";
import { JWT_ALGS } from "../lib/jwt";
import { isoTime } from "../lib/time";
import type { MeView, TokenData } from "../schemas/oauth";
import { TokenRequest } from "../schemas/oauth";
import type { AccessTokenClaims } from "../schemas/records";
import { parseInput } from "../schemas/validate";
import { invalidToken, jwtAudienceOf, signAccessToken, signJwtAccessToken, verifyAccessToken } from "./access-token";
import { authenticateClient, type PresentedClientRequest } from "./client-auth";
import { dpopChallenge, invalidProofAtResource, invalidProofAtTokenEndpoint, presentedProof } from "./dpop";
import { type Admitted, admit } from "./gate";
import { grantedScopes, requestedScopes, type Scope, scopesOfClaim } from "./scopes";

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
  scopes: Scope[];
  /** The DPoP key's thumbprint of a DPoP-bound token; null for a Bearer token. */
  jkt: string | null;
  /** `jwt` for an RFC 9068 token (issue 44), else `opaque`. */
  format: "opaque" | "jwt";
}

/** What a token request presents, and where it was sent (for DPoP's htu and assertions' aud). */
export interface TokenRequestContext {
  request: PresentedClientRequest | ApiError;
  /** The request's `DPoP` header. */
  dpop: string | null;
  method: string;
  url: string;
  /** What a client assertion's `aud` may name. */
  audiences: string[];
  /** keyway's issuer identifier (RFC 8414 2), a JWT access token's `iss` and, as RFC 9728's resource identifier, its `aud`. */
  issuer: string;
}

/**
 * Issues a token. The request is counted against the API key whatever it holds, and a body
 * that could not be read is answered after the key's own refusals. `onAdmitted` learns the
 * key's decision as soon as it is made (for the RateLimit fields).
 */
export async function issueAccessToken(
  deps: Deps,
  presentedKey: string | undefined,
  context: TokenRequestContext,
  onAdmitted: (admitted: Admitted) => void,
): Promise<TokenData> {
  const now = deps.now();
  const proof = await presentedProof(context.dpop, { method: context.method, url: context.url, nowMs: now });
  let requested: Scope[] | null = null;
  const client = await authenticateClient(deps, presentedKey, context.request, onAdmitted, {
    audiences: context.audiences,
    tokenProof: proof.kind === "valid" ? proof.proof.replay : undefined,
    check: (params) => {
      // RFC 6749 5.2: an unsupported grant is reported as such even if other fields are missing.
      const grantType = params.grant_type;
      if (typeof grantType === "string" && grantType !== "client_credentials") {
        const shown = grantType.slice(0, 40).replace(/[^\x20-\x7e]/g, "?");
        throw new ApiError("unsupported_grant_type", `grant_type "${shown}" is not supported; use "client_credentials".`);
      }
      parseInput(TokenRequest, params);
      requested = requestedScopes(params.scope);
    },
  });
  if (proof.kind === "invalid") throw invalidProofAtTokenEndpoint(`The DPoP proof is not valid: ${proof.reason}.`);
  if (proof.kind === "valid" && client.proofReplayed) throw invalidProofAtTokenEndpoint("The DPoP proof was already used.");
  if (proof.kind === "none" && client.facts.dpop_bound) {
    throw invalidProofAtTokenEndpoint("This client's tokens must be DPoP-bound: send a DPoP proof (RFC 9449) with the token request.");
  }
  const scopes = grantedScopes(requested, client.facts.scopes as Scope[] | null);

  const iat = Math.floor(now / 1000);
  const ttl = deps.config.accessTokenTtlSeconds;
  const claims: AccessTokenClaims = {
    v: 1,
    org: client.organizationId,
    sub: client.facts.user_id,
    cid: client.clientId,
    iat,
    exp: iat + ttl,
    jti: newTokenId(),
    scope: scopes.join(" "),
    ...(proof.kind === "valid" ? { cnf: { jkt: proof.proof.jkt }, akid: client.admitted.apiKey.id } : {}),
  };
  const jwt = client.facts.access_token_strategy === "jwt";
  return {
    access_token: jwt
      ? await signJwtAccessToken(deps.config.signingKeys, claims, jwtAudienceOf(context.issuer))
      : await signAccessToken(deps.config.signingKeys, claims),
    token_type: proof.kind === "valid" ? "DPoP" : "Bearer",
    expires_in: ttl,
    refresh_token: null,
    scope: claims.scope ?? "",
  };
}

/** What a protected request presents: its Authorization and DPoP headers, method and URL. */
export interface ResourceRequest {
  authorization: string | undefined;
  dpop: string | null;
  method: string;
  url: string;
  /** keyway's issuer identifier, which a JWT access token must name as `iss` and `aud` (RFC 9068 4). */
  issuer: string;
}

/**
 * Authenticates a request that presents an API key and an access token (`Bearer`, or `DPoP`
 * with a proof): the token and proof are checked locally (signature, expiry, binding) and then,
 * in the key's one call, against revocation and replay. Refusals come in the order a client can
 * act on: the API key, the limits, the token.
 */
export async function authenticateRequest(
  deps: Deps,
  presentedKey: string | undefined,
  request: ResourceRequest,
  onAdmitted: (admitted: Admitted) => void,
  cost = 1,
): Promise<Principal> {
  const now = deps.now();
  let claims: AccessTokenClaims | ApiError;
  let proof: Awaited<ReturnType<typeof presentedProof>> = { kind: "none" };
  try {
    const { scheme, token } = presentedToken(request.authorization);
    claims = await verifyAccessToken(deps.config.signingKeys, token, now, jwtAudienceOf(request.issuer));
    if (claims.cnf !== undefined) {
      // RFC 9449 7.1: a DPoP-bound token only with the DPoP scheme and a proof of its key.
      if (scheme !== "DPoP") throw boundTokenAsBearer();
      proof = await presentedProof(request.dpop, { method: request.method, url: request.url, nowMs: now, accessToken: token });
      if (proof.kind === "none") throw invalidProofAtResource("A DPoP-bound access token needs a DPoP proof in the DPoP header.");
      if (proof.kind === "invalid") throw invalidProofAtResource(`The DPoP proof is not valid: ${proof.reason}.`);
      if (proof.proof.jkt !== claims.cnf.jkt)
        throw invalidProofAtResource("The DPoP proof is signed by another key than the token is bound to.");
    } else if (scheme === "DPoP") {
      throw invalidToken("This access token is not DPoP-bound: send it as `Authorization: Bearer <token>`.");
    }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    claims = err;
  }
  const valid = claims instanceof ApiError ? undefined : claims;
  const admitted = await admit(
    deps,
    presentedKey,
    {
      clientId: valid?.cid,
      tokenId: valid?.jti,
      proof: proof.kind === "valid" ? proof.proof.replay : undefined,
    },
    cost,
  );
  onAdmitted(admitted);
  if (claims instanceof ApiError) throw claims;
  if (claims.org !== admitted.apiKey.organizationId) {
    throw invalidToken("The access token was issued to a different organization than the API key.");
  }
  if (claims.akid !== undefined && claims.akid !== admitted.apiKey.id) {
    throw boundInvalid("This DPoP-bound access token was issued with another API key: use that one.");
  }
  if (admitted.clientRevoked) throw invalidFor(claims, "The client credentials behind this access token have been revoked.");
  if (admitted.tokenRevoked) throw invalidFor(claims, "The access token has been revoked.");
  if (admitted.proofReplayed) throw invalidProofAtResource("The DPoP proof was already used: make a new one for each request.");
  return {
    organizationId: claims.org,
    userId: claims.sub,
    clientId: claims.cid,
    apiKeyId: admitted.apiKey.id,
    apiKeyHash: admitted.apiKey.hash,
    tokenId: claims.jti,
    issuedAt: claims.iat,
    expiresAt: claims.exp,
    scopes: scopesOfClaim(claims.scope),
    jkt: claims.cnf?.jkt ?? null,
    format: claims.fmt === "jwt" ? "jwt" : "opaque",
  };
}

/** invalid_token with the challenge of the token's scheme. */
function invalidFor(claims: AccessTokenClaims, message: string): ApiError {
  return claims.cnf === undefined ? invalidToken(message) : boundInvalid(message);
}

function boundInvalid(message: string): ApiError {
  return new ApiError("invalid_token", message, { headers: { "WWW-Authenticate": dpopChallenge("invalid_token", message) } });
}

const boundTokenAsBearer = () =>
  boundInvalid("This access token is DPoP-bound: send it as `Authorization: DPoP <token>` with a DPoP proof (RFC 9449).");

/**
 * Whether the request carries an access token that verifies here (signature, expiry), without
 * any call: lets work that must come before admission (a GraphQL request's cost) be done only
 * for callers holding a genuine token. Revocation is still decided at admission.
 */
export async function bearerVerifies(deps: Deps, authorization: string | undefined, issuer: string): Promise<boolean> {
  try {
    await verifyAccessToken(deps.config.signingKeys, presentedToken(authorization).token, deps.now(), jwtAudienceOf(issuer));
    return true;
  } catch (err) {
    if (err instanceof ApiError) return false;
    throw err;
  }
}

/** RFC 6750 2.1 and RFC 9449 7.1: `Bearer` or `DPoP` (case-insensitive scheme), one space, then the token. */
function presentedToken(authorization: string | undefined): { scheme: "Bearer" | "DPoP"; token: string } {
  const match = authorization === undefined ? null : /^(Bearer|DPoP) +(\S+) *$/i.exec(authorization);
  if (!match?.[1] || !match[2]) {
    // RFC 6750 3.1: no error attribute when the request carried no credentials at all; RFC 9449
    // 7.1: both schemes are offered.
    throw new ApiError(
      "invalid_token",
      "This endpoint needs an access token: send `Authorization: Bearer <access_token>` (obtain one at POST /v1/oauth).",
      { headers: { "WWW-Authenticate": `Bearer realm="keyway", DPoP realm="keyway", algs="${JWT_ALGS.join(" ")}"` } },
    );
  }
  return { scheme: match[1].toLowerCase() === "dpop" ? "DPoP" : "Bearer", token: match[2] };
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
      format: p.format,
    },
  };
}
