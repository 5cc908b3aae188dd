/**
 * What domain code needs from the outside world, passed explicitly so it never touches Hono and
 * tests can inject a clock.
 */
import type { Config } from "./config";

export interface Deps {
  kv: KVNamespace;
  config: Config;
  /** Milliseconds since the epoch. */
  now(): number;
}

export const isoTime = (ms: number): string => new Date(ms).toISOString();
