/**
 * GET /.well-known/oauth-authorization-server (RFC 8414): lets standard OAuth clients discover
 * the token endpoint. Unauthenticated and cacheable; the issuer is the origin it is served from.
 */
import { Hono } from "hono";
import type { AppEnv } from "../context";
import { methods } from "../route";

export const wellKnown = new Hono<AppEnv>();

methods(wellKnown, "/.well-known/oauth-authorization-server", {
  GET: (c) => {
    const issuer = new URL(c.req.url).origin;
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
});
