/** Requires `Authorization: Bearer <access_token>` (spec 5.2, RFC 6750) after the API key. */
import type { MiddlewareHandler } from "hono";
import { authenticateAccessToken } from "../../auth/tokens";
import type { AppEnv } from "../context";

export const requireAccessToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("principal", await authenticateAccessToken(c.get("deps"), c.get("apiKey"), c.req.header("authorization")));
  await next();
};
