/**
 * What domain code needs from the outside world, passed explicitly so it never touches Hono and
 * tests can inject a clock. Built the same way for HTTP requests and for Queue batches.
 */
import { type Config, loadConfig } from "./config";
import type { RateLimiter } from "./ratelimit/limiter";
import type { DeliveryMessage } from "./schemas/webhooks";

export interface Deps {
  kv: KVNamespace;
  rateLimiter: DurableObjectNamespace<RateLimiter>;
  webhookQueue: Queue<DeliveryMessage>;
  config: Config;
  /** Milliseconds since the epoch. */
  now(): number;
}

export function depsFromEnv(env: Env, now: () => number): Deps {
  return {
    kv: env.KV,
    rateLimiter: env.RATE_LIMITER,
    webhookQueue: env.WEBHOOK_QUEUE as Queue<DeliveryMessage>,
    config: loadConfig(env),
    now,
  };
}

export const isoTime = (ms: number): string => new Date(ms).toISOString();
