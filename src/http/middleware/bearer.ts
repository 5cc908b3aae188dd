/**
 * Requires `Authorization: Bearer <access_token>` (spec 5.2, RFC 6750) after the API key, on
 * every /v1 path but the token endpoints, where the token is obtained (router.ts passes the paths
 * of the routes declared `auth: "apiKey"`).
 */
import type { MiddlewareHandler } from "hono";
import { authenticateAccessToken } from "../../auth/tokens";
import type { AppEnv } from "../context";

export function requireAccessToken(exempt: ReadonlySet<string>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (exempt.has(c.req.path)) return next();
    c.set("principal", await authenticateAccessToken(c.get("deps"), c.get("apiKey"), c.req.header("authorization")));
    await next();
  };
}
