/**
 * Scopes (RFC 6749 section 3.3): what an access token may do. A token request may ask for some
 * (`scope`, space-delimited); it gets what it asked for, or, without `scope`, every scope its
 * client credential allows (all of them unless the credential was restricted). Each route
 * declares the scope it needs (http/route.ts), so the router, the OpenAPI document and the
 * authorization-matrix test learn it from one place; GraphQL checks each field through its
 * backend (http/graphql-backend.ts). A token without the scope a route needs is refused with 403
 * insufficient_scope (RFC 6750 section 3.1). GET /v1/me and GraphQL `viewer` need none.
 */
import { ApiError } from "../errors";
import { ALL_SCOPES, isScope, type Scope } from "../schemas/scopes";

export { ALL_SCOPES, type Scope };

/** RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by single spaces. */
const SCOPE_PARAM = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/** The scopes a token request asks for, or null when it asks for none; an unknown one is invalid_scope. */
export function requestedScopes(param: unknown): Scope[] | null {
  if (param === undefined || param === null) return null;
  if (typeof param !== "string" || !SCOPE_PARAM.test(param) || param.length > 512) {
    throw new ApiError("invalid_scope", "scope must be a space-separated list of scopes (RFC 6749 section 3.3).");
  }
  const names = [...new Set(param.split(" "))];
  const unknown = names.filter((n) => !isScope(n));
  if (unknown.length > 0) {
    throw new ApiError(
      "invalid_scope",
      `Unknown scope${unknown.length > 1 ? "s" : ""}: ${unknown.map((u) => u.slice(0, 40)).join(", ")}. Supported: ${ALL_SCOPES.join(" ")}.`,
    );
  }
  return names as Scope[];
}

/** What a token gets: the requested scopes if the credential allows them all, else invalid_scope. */
export function grantedScopes(requested: Scope[] | null, allowed: readonly Scope[] | null): Scope[] {
  const permitted = allowed ?? ALL_SCOPES;
  if (requested === null) return [...permitted];
  const refused = requested.filter((s) => !permitted.includes(s));
  if (refused.length > 0) {
    throw new ApiError(
      "invalid_scope",
      `This client credential may not have: ${refused.join(", ")}. It may have: ${permitted.join(" ") || "none"}.`,
    );
  }
  return ALL_SCOPES.filter((s) => requested.includes(s));
}

/** The `scope` claim's scopes; a token issued before scopes existed has them all. */
export function scopesOfClaim(claim: string | undefined): Scope[] {
  if (claim === undefined) return [...ALL_SCOPES];
  return claim === "" ? [] : claim.split(" ").filter(isScope);
}

/** RFC 6750 3.1 (and RFC 9449 7.1 for a DPoP-bound token): 403 with the scope that is needed. */
export function insufficientScope(needed: readonly Scope[], scheme: "Bearer" | "DPoP"): ApiError {
  const list = needed.join(" ");
  return new ApiError("insufficient_scope", `The access token lacks the scope this operation needs: ${list}.`, {
    headers: {
      "WWW-Authenticate": `${scheme} realm="keyway", error="insufficient_scope", error_description="The access token lacks a needed scope", scope="${list}"`,
    },
  });
}
