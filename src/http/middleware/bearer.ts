/**
 * Requires `Authorization: Bearer <access_token>` (spec 5.2, RFC 6750) after the API key, on
 * every /v1 path but the token endpoints (`TOKEN_ENDPOINTS`), where the token is obtained.
 */
import type { MiddlewareHandler } from "hono";
import { authenticateAccessToken } from "../../auth/tokens";
import type { AppEnv } from "../context";

/** /v1 paths that need the API key but no access token. */
export const TOKEN_ENDPOINTS: readonly string[] = ["/v1/oauth", "/v1/oauth/token"];

export const requireAccessToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (TOKEN_ENDPOINTS.includes(c.req.path)) return next();
  c.set("principal", await authenticateAccessToken(c.get("deps"), c.get("apiKey"), c.req.header("authorization")));
  await next();
};
