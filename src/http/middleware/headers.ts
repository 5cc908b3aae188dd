/**
 * Response headers every API response gets: API data is never cached by browsers or proxies
 * (tokens and secrets pass through it; RFC 6749 5.1 asks for no-store on token responses), and
 * content types are not sniffed.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";

export const apiHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  c.header("Cache-Control", "no-store");
  c.header("X-Content-Type-Options", "nosniff");
};
