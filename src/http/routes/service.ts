/**
 * The API Worker's unauthenticated service routes: GET /healthz (liveness probe and the
 * benchmark's floor; no I/O on purpose) and GET /.well-known/oauth-authorization-server (RFC
 * 8414), which lets standard OAuth clients discover the token endpoint. The metadata's issuer is
 * PUBLIC_BASE_URL when it is set (clients should discover from there) and otherwise the origin it
 * is served from: RFC 8414 section 3.3 requires the issuer to be the one the client used for
 * discovery. GET /.well-known/oauth-protected-resource (RFC 9728) describes the /v1 API as a
 * protected resource whose identifier is that same issuer; the API's Bearer and DPoP challenges
 * point to it (http/resource-metadata.ts). The pages for people (GET /, /docs, /explorer) are the people's Worker's
 * (http/routes/people.ts).
 */
import * as z from "zod";
import { publicBaseUrl } from "../../config";
import { JWT_ALGS } from "../../lib/jwt";
import { AuthorizationServerMetadata, ProtectedResourceMetadata } from "../../schemas/oauth";
import { ALL_SCOPES } from "../../schemas/scopes";
import { keywayOrigin } from "../context";
import { EXAMPLE_ORIGIN } from "../examples";
import { RESOURCE_METADATA_PATH } from "../resource-metadata";
import { type Route, rawRoute } from "../route";
import { JWKS_PATH } from "./oauth";

const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"];

export const serviceRoutes: Route[] = [
  rawRoute({
    method: "GET",
    path: "/healthz",
    operationId: "health",
    summary: "Liveness probe",
    tag: "Service",
    auth: "none",
    response: { schema: z.literal("ok"), example: "ok" },
    wire: "text",
    reply: (c) => c.text("ok"),
  }),
  rawRoute({
    method: "GET",
    path: "/.well-known/oauth-authorization-server",
    operationId: "getAuthorizationServerMetadata",
    summary: "OAuth authorization server metadata (RFC 8414)",
    tag: "Service",
    auth: "none",
    description:
      "Every endpoint it names needs `x-api-key`, like every /v1 request. The token, revocation and introspection endpoints take the same client authentication methods.",
    response: { schema: AuthorizationServerMetadata, example: metadataOf(EXAMPLE_ORIGIN) },
    wire: "json",
    // A malformed PUBLIC_BASE_URL (config.ts).
    errors: [503],
    reply: (c) => {
      const configured = publicBaseUrl(c.env).url;
      // Built from the request's Host when no origin is configured: a shared cache must not hand
      // one host's issuer to another host's clients (a cache keyed without Host would), so that
      // answer is not stored. With PUBLIC_BASE_URL (production requires it) it is one document.
      return c.json(metadataOf(keywayOrigin(c)), 200, {
        "Cache-Control": configured === null ? "no-store" : "public, max-age=3600",
      });
    },
  }),
  rawRoute({
    method: "GET",
    path: RESOURCE_METADATA_PATH,
    operationId: "getProtectedResourceMetadata",
    summary: "OAuth protected resource metadata (RFC 9728)",
    tag: "Service",
    auth: "none",
    description:
      "The /v1 API as an OAuth protected resource: its identifier (`resource`, the authorization server's `issuer`), the authorization server that issues its access tokens, its scopes and how tokens are sent. The `WWW-Authenticate` challenges of /v1 name this document's URL in `resource_metadata`.",
    response: { schema: ProtectedResourceMetadata, example: resourceMetadataOf(EXAMPLE_ORIGIN) },
    wire: "json",
    // A malformed PUBLIC_BASE_URL (config.ts).
    errors: [503],
    reply: (c) => {
      // RFC 9728 3.3: `resource` is the identifier this URL was built from; as for the
      // authorization server's metadata above, not stored by caches when it comes from Host.
      const configured = publicBaseUrl(c.env).url;
      return c.json(resourceMetadataOf(keywayOrigin(c)), 200, {
        "Cache-Control": configured === null ? "no-store" : "public, max-age=3600",
      });
    },
  }),
];

/**
 * RFC 9728 section 2. The resource and its one authorization server share the identifier (the
 * issuer): the metadata of both is served at this origin.
 */
function resourceMetadataOf(issuer: string): ProtectedResourceMetadata {
  return {
    resource: issuer,
    authorization_servers: [issuer],
    scopes_supported: [...ALL_SCOPES],
    // RFC 6750 2.1 only: no form-encoded body parameter, no query parameter.
    bearer_methods_supported: ["header"],
    dpop_signing_alg_values_supported: JWT_ALGS,
    resource_name: "keyway API",
    resource_documentation: `${issuer}/docs`,
  };
}

/** RFC 8414 section 2, with RFC 9449's dpop_signing_alg_values_supported. */
function metadataOf(issuer: string): AuthorizationServerMetadata {
  return {
    issuer,
    token_endpoint: `${issuer}/v1/oauth/token`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    grant_types_supported: ["client_credentials"],
    token_endpoint_auth_methods_supported: AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: JWT_ALGS,
    // RFC 8414 makes this field required; there is no authorization endpoint, hence none.
    response_types_supported: [],
    scopes_supported: [...ALL_SCOPES],
    dpop_signing_alg_values_supported: JWT_ALGS,
    revocation_endpoint: `${issuer}/v1/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: JWT_ALGS,
    introspection_endpoint: `${issuer}/v1/oauth/introspect`,
    introspection_endpoint_auth_methods_supported: AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: JWT_ALGS,
  };
}
