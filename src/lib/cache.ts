/**
 * The one way this Worker keeps anything in an isolate's memory between requests. Two kinds,
 * one policy:
 * - `IsolateCache`: copies of data that lives elsewhere (KV records, verified tokens, validated
 *   documents). Always bounded (oldest entries go first) and, when the data can change, given a
 *   time-to-live that is the documented bound on how stale an answer from this isolate may be.
 *   Writes made through this isolate update or drop their entry at once.
 * - `derived`: a value computed from an immutable input (an imported CryptoKey from key bytes, a
 *   Durable Object id from a name, the parsed Config of an `env`), keyed by the input's identity
 *   in a WeakMap, so it lives exactly as long as its input and needs no bound or expiry.
 * Isolates are short-lived and never shared, so neither kind is a source of truth.
 */

export interface IsolateCacheOptions {
  /** Largest number of entries; the oldest is dropped to make room. */
  maxEntries: number;
  /** How long an entry may be served, in milliseconds; omit for data that cannot change. */
  ttlMs?: number;
}

export class IsolateCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(options: IsolateCacheOptions) {
    this.ttlMs = options.ttlMs ?? Number.POSITIVE_INFINITY;
    this.maxEntries = options.maxEntries;
  }

  /** The entry for `key`, or undefined when absent or expired at `now` (ms since the epoch). */
  get(key: string, now = 0): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (now >= entry.expiresAt || now < entry.expiresAt - this.ttlMs) {
      // Expired (or stored under a clock far ahead of this one, as tests with injected clocks do).
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, now = 0): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expiresAt: now + this.ttlMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  deletePrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}

/** `make(input)` computed once per input object and kept as long as that object lives. */
export function derived<K extends object, V>(make: (input: K) => V): (input: K) => V {
  const values = new WeakMap<K, V>();
  return (input) => {
    let value = values.get(input);
    if (value === undefined) {
      value = make(input);
      values.set(input, value);
    }
    return value;
  };
}

/** A constant built on first use (e.g. the API description), then reused by the isolate. */
export function lazy<V>(make: () => V): () => V {
  let made: { value: V } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}
