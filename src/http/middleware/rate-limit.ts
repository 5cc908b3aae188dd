/**
 * Counts every request with a valid API key (spec 8), whatever its outcome, right after the key
 * is authenticated, and adds the RateLimit fields to the response. Refusals are 429s thrown by
 * ratelimit/service.ts with their own headers.
 */
import type { MiddlewareHandler } from "hono";
import { countRequest, rateLimitHeaders } from "../../ratelimit/service";
import type { AppEnv } from "../context";
import { setResponseHeaders } from "./headers";

export const rateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const decision = await countRequest(c.get("deps"), c.get("apiKey"));
  await next();
  setResponseHeaders(c, rateLimitHeaders(decision));
};
