/** Builds the per-request Deps (bindings, parsed config, clock) for domain code. */
import type { MiddlewareHandler } from "hono";
import { depsFromEnv } from "../../deps";
import type { AppEnv } from "../context";

export function provideDeps(now: () => number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set(
      "deps",
      depsFromEnv(c.env, now, (work) => c.executionCtx.waitUntil(work)),
    );
    await next();
  };
}
