/**
 * What domain code needs from the outside world, passed explicitly so it never touches Hono and
 * tests can inject a clock.
 */
import type { Config } from "./config";
import type { RateLimiter } from "./ratelimit/limiter";

export interface Deps {
  kv: KVNamespace;
  rateLimiter: DurableObjectNamespace<RateLimiter>;
  config: Config;
  /** Milliseconds since the epoch. */
  now(): number;
}

export const isoTime = (ms: number): string => new Date(ms).toISOString();
