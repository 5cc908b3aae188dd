/**
 * Unauthenticated service routes: GET /healthz (liveness probe and the benchmark's floor; no I/O
 * on purpose) and GET /.well-known/oauth-authorization-server (RFC 8414), which lets standard
 * OAuth clients discover the token endpoint. The metadata's issuer is PUBLIC_BASE_URL when it is
 * set (clients should discover from there) and otherwise the origin it is served from: RFC 8414
 * section 3.3 requires the issuer to be the one the client used for discovery.
 */
import * as z from "zod";
import { publicBaseUrl } from "../../config";
import { AuthorizationServerMetadata } from "../../schemas/oauth";
import { EXAMPLE_ORIGIN } from "../examples";
import { type Route, rawRoute } from "../route";

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
    response: {
      schema: AuthorizationServerMetadata,
      example: {
        issuer: EXAMPLE_ORIGIN,
        token_endpoint: `${EXAMPLE_ORIGIN}/v1/oauth/token`,
        grant_types_supported: ["client_credentials"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
        response_types_supported: [],
      },
    },
    wire: "json",
    // A malformed PUBLIC_BASE_URL (config.ts).
    errors: [503],
    reply: (c) => {
      const issuer = publicBaseUrl(c.env).url ?? new URL(c.req.url).origin;
      return c.json(
        {
          issuer,
          token_endpoint: `${issuer}/v1/oauth/token`,
          grant_types_supported: ["client_credentials"],
          token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
          // RFC 8414 makes this field required; there is no authorization endpoint, hence none.
          response_types_supported: [],
        },
        200,
        { "Cache-Control": "public, max-age=3600" },
      );
    },
  }),
];
