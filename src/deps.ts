/**
 * What domain code needs from the outside world, passed explicitly so it never touches Hono and
 * tests can inject a clock. Built the same way for HTTP requests and for Queue batches.
 */
import { type Config, loadConfig } from "./config";
import { describeError, log } from "./log";
import type { DeliveryMessage } from "./schemas/webhooks";

export interface Deps {
  kv: KVNamespace;
  /** The systems of record (src/objects): one object per organization, per API key, and the directory. */
  orgs: Env["ORGS"];
  keys: Env["KEYS"];
  directory: Env["DIRECTORY"];
  webhookQueue: Queue<DeliveryMessage>;
  config: Config;
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs bookkeeping after the response (waitUntil); failures are logged, never surfaced. */
  defer(work: Promise<unknown>): void;
}

export function depsFromEnv(env: Env, now: () => number, waitUntil?: (work: Promise<unknown>) => void): Deps {
  return {
    kv: env.KV,
    orgs: env.ORGS,
    keys: env.KEYS,
    directory: env.DIRECTORY,
    webhookQueue: env.WEBHOOK_QUEUE as Queue<DeliveryMessage>,
    config: loadConfig(env),
    now,
    defer: (work) => {
      const logged = work.catch((err: unknown) => log.error("deferred work failed", { detail: describeError(err) }));
      waitUntil?.(logged);
    },
  };
}
