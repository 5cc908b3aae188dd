/** Builds the per-request Deps (bindings, parsed config, clock) for domain code. */
import type { MiddlewareHandler } from "hono";
import { loadConfig } from "../../config";
import type { AppEnv } from "../context";

export function provideDeps(now: () => number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("deps", { kv: c.env.KV, rateLimiter: c.env.RATE_LIMITER, config: loadConfig(c.env), now });
    await next();
  };
}
