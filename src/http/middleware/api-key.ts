/** Requires a valid `x-api-key` on every /v1 request (spec 5.1) and exposes its record. */
import type { MiddlewareHandler } from "hono";
import { API_KEY_HEADER, authenticateApiKey } from "../../auth/api-keys";
import type { AppEnv } from "../context";

export const requireApiKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("apiKey", await authenticateApiKey(c.get("deps"), c.req.header(API_KEY_HEADER)));
  await next();
};
