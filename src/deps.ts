/**
 * What domain code needs from the outside world, passed explicitly so it never touches Hono and
 * tests can inject a clock. Built the same way for HTTP requests and for Queue batches.
 */
import { type Config, loadConfig } from "./config";
import { describeError, log } from "./log";

export interface Deps {
  kv: KVNamespace;
  /**
   * The systems of record (src/objects): per organization its identity and its webhooks, one
   * object per webhook endpoint, one per API key (and its shards), and the directory.
   */
  orgs: Env["ORGS"];
  webhooks: Env["WEBHOOKS"];
  endpoints: Env["ENDPOINTS"];
  keys: Env["KEYS"];
  directory: Env["DIRECTORY"];
  /** Where DPoP proof ids are recorded once, by the proof alone (objects/proofs.ts). */
  proofs: Env["PROOFS"];
  /** The fast lane's delivery queue, which also carries reports the endpoints' objects could not take at once. */
  webhookQueue: Queue;
  config: Config;
  /** Refused calls to routes without an API key, counted per client and per id at each location (wrangler.toml). */
  publicLimiter: RateLimit;
  /** Where telemetry's data points go (Workers Analytics Engine); log.ts lays them out and writes them. */
  metrics: AnalyticsEngineDataset;
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs bookkeeping after the response (waitUntil); failures are logged, never surfaced. */
  defer(work: Promise<unknown>): void;
}

export function depsFromEnv(env: Env, now: () => number, waitUntil?: (work: Promise<unknown>) => void): Deps {
  return {
    kv: env.KV,
    orgs: env.ORGS,
    webhooks: env.WEBHOOKS,
    endpoints: env.ENDPOINTS,
    keys: env.KEYS,
    directory: env.DIRECTORY,
    proofs: env.PROOFS,
    webhookQueue: env.WEBHOOK_QUEUE,
    config: loadConfig(env),
    metrics: env.METRICS,
    publicLimiter: env.PUBLIC_LIMITER,
    now,
    defer: (work) => {
      const logged = work.catch((err: unknown) => log.error("deferred work failed", { detail: describeError(err) }));
      waitUntil?.(logged);
    },
  };
}
