/**
 * Revoking one access token (RFC 7009) and introspecting one (RFC 7662), for the organization's
 * own clients, each authenticated as at the token endpoint (client-auth.ts) in the request's one
 * call to its API key's object:
 * - revocation: the client that owns a token revokes it; the organization's object records it and
 *   pushes it to every key object before answering, so it is refused on the very next request at
 *   every location (as a revoked credential is). Unknown tokens, other clients' and other
 *   organizations' tokens answer 200 too and revoke nothing (RFC 7009 2.2: the client cannot
 *   tell them apart, so it learns nothing about tokens it does not own);
 * - introspection: a token of the caller's organization that verifies, has not expired and was
 *   not revoked (asked of the key's object in the same call) is active, with its claims; any
 *   other is `{"active": false}` (RFC 7662 2.2).
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { organizationObject, reach, unwrap } from "../objects/stubs";
import type { IntrospectionResponse } from "../schemas/oauth";
import type { AccessTokenClaims } from "../schemas/records";
import { jwtAudienceOf, verifyAccessToken } from "./access-token";
import { authenticateClient, type PresentedClientRequest } from "./client-auth";
import type { Admitted } from "./gate";

export interface TokenAdminRequest {
  request: PresentedClientRequest | ApiError;
  audiences: string[];
  /** keyway's issuer identifier, which a JWT access token must name (RFC 9068 4). */
  issuer: string;
}

/** The token the request names (`token`), verified here, or null for anything that is not one of ours. */
async function namedToken(deps: Deps, request: PresentedClientRequest | ApiError, issuer: string): Promise<AccessTokenClaims | null> {
  if (request instanceof ApiError || typeof request.params.token !== "string" || request.params.token === "") return null;
  try {
    return await verifyAccessToken(deps.config.signingKeys, request.params.token, deps.now(), jwtAudienceOf(issuer));
  } catch (err) {
    if (err instanceof ApiError) return null;
    throw err;
  }
}

/** After the client authenticated (RFC 7009 2.1, RFC 7662 2.1: the client first). */
const requireToken = (request: PresentedClientRequest | ApiError) => {
  if (request instanceof ApiError) throw request;
  const { token } = request.params;
  if (typeof token !== "string" || token === "") throw new ApiError("invalid_request", "token is required.");
};

export async function revokeAccessToken(
  deps: Deps,
  presentedKey: string | undefined,
  context: TokenAdminRequest,
  onAdmitted: (admitted: Admitted) => void,
): Promise<void> {
  const claims = await namedToken(deps, context.request, context.issuer);
  const client = await authenticateClient(deps, presentedKey, context.request, onAdmitted, { audiences: context.audiences });
  requireToken(context.request);
  if (claims === null || claims.org !== client.organizationId || claims.cid !== client.clientId) return;
  unwrap(
    await reach("organization", () =>
      organizationObject(deps, client.organizationId).revokeToken(
        claims.jti,
        claims.cid,
        claims.exp * 1000,
        { type: "api_client", id: client.clientId, api_key_id: client.admitted.apiKey.id },
        deps.now(),
      ),
    ),
  );
}

export async function introspectAccessToken(
  deps: Deps,
  presentedKey: string | undefined,
  context: TokenAdminRequest,
  onAdmitted: (admitted: Admitted) => void,
): Promise<IntrospectionResponse> {
  const claims = await namedToken(deps, context.request, context.issuer);
  const client = await authenticateClient(deps, presentedKey, context.request, onAdmitted, {
    audiences: context.audiences,
    presented: { inspect: claims === null ? undefined : { tokenId: claims.jti, clientId: claims.cid } },
  });
  requireToken(context.request);
  if (claims === null || claims.org !== client.organizationId || client.admitted.inspectedTokenRevoked) return { active: false };
  return {
    active: true,
    client_id: claims.cid,
    scope: claims.scope ?? "",
    token_type: claims.cnf === undefined ? "Bearer" : "DPoP",
    exp: claims.exp,
    iat: claims.iat,
    sub: claims.sub,
    jti: claims.jti,
    ...(claims.cnf !== undefined ? { cnf: { jkt: claims.cnf.jkt } } : {}),
  };
}
