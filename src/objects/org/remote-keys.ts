/**
 * Key sets the organization's object fetches from a URL (issue 44): a trusted issuer's (for its
 * federated_jwt clients) and a private_key_jwt client's `jwks_uri`. The object is their one
 * cache, in its own SQLite (`key_sets`), so the rate bound below holds for the organization
 * whatever the number of isolates and locations; the rules are pure functions of the row and the
 * time (`plan`, `freshUntil`), the fetch is lib/key-sets.ts (through the SSRF guard).
 *
 * - A set is fresh for its `Cache-Control` max-age, clamped to [5 min, 1 h] (1 h without one;
 *   5 min with `no-store`): a key its owner withdrew (a compromise) stops within the hour even
 *   when no JWT names a new one, whatever max-age the owner's server sends. An issuer's set can
 *   also be fetched at once by the operator (`refresh`, after a compromise).
 * - A JWT naming a `kid` the set lacks, or a signature none of its keys made, fetches the set
 *   again (a rotation at the issuer or client), at most once a minute per URL: a stranger's
 *   made-up `kid`s cost the issuer one request a minute, not one per token request.
 * - A failed fetch keeps the previous set in use until 24 h after it was fetched (the issuer
 *   being down does not stop its workloads at once), then fails closed.
 * Concurrent token requests needing the same fetch share it (one request in flight per URL): a
 * request that finds the set lacking while a fetch is under way waits for that fetch.
 */
import type { JWK } from "jose";
import { fetchKeySet } from "../../lib/key-sets";
import { type KeySetRow, keySetRow } from "./schema";

export const REFETCH_INTERVAL_MS = 60_000;
export const DEFAULT_FRESH_S = 3600;
export const MIN_FRESH_S = 300;
export const MAX_FRESH_S = 3600;
/** How long a set may still be used while its URL fails. */
export const STALE_IF_ERROR_MS = 24 * 3600 * 1000;

export type KeySetStep = { use: JWK[] } | { fetch: true; fallback: JWK[] };

/** Until when a set fetched at `now` with this max-age is fresh. */
export function freshUntil(now: number, maxAgeSeconds: number | null): number {
  const seconds = Math.min(MAX_FRESH_S, Math.max(MIN_FRESH_S, maxAgeSeconds ?? DEFAULT_FRESH_S));
  return now + seconds * 1000;
}

/** The keys a row holds that may still be used (within STALE_IF_ERROR_MS of their fetch). */
export function usableKeys(row: KeySetRow | undefined, now: number): JWK[] {
  if (row?.jwks == null || row.fetched_ms == null || now - row.fetched_ms > STALE_IF_ERROR_MS) return [];
  return (JSON.parse(row.jwks) as { keys: JWK[] }).keys;
}

/**
 * What to do for a JWT naming `kid` (undefined: none), or after its signature matched no key
 * (`miss`): use the held keys, or fetch (when none are held, they are stale, or they lack the
 * key), the rate bound permitting.
 */
export function plan(row: KeySetRow | undefined, want: { kid: string | undefined; miss: boolean }, now: number): KeySetStep {
  const held = usableKeys(row, now);
  if (!lacks(held, want) && now < (row?.fresh_until_ms ?? 0)) return { use: held };
  if (row !== undefined && now - row.attempted_ms < REFETCH_INTERVAL_MS) return { use: held };
  return { fetch: true, fallback: held };
}

/** The held keys cannot verify the JWT: none held, its `kid` is not among them, or its signature matched none. */
export function lacks(held: JWK[], want: { kid: string | undefined; miss: boolean }): boolean {
  return held.length === 0 || want.miss || (want.kid !== undefined && !held.some((key) => key.kid === want.kid));
}

export class RemoteKeySets {
  private readonly inFlight = new Map<string, Promise<JWK[] | null>>();

  constructor(
    private readonly sql: SqlStorage,
    private readonly allowInsecure: () => boolean,
  ) {}

  /**
   * The keys to verify a JWT with, and whether they were fetched by this call (a signature miss
   * after a fetch is not worth another). Empty when nothing usable is held and the fetch failed.
   */
  async keys(url: string, want: { kid: string | undefined; miss: boolean }, now: number): Promise<{ keys: JWK[]; fetched: boolean }> {
    const step = plan(keySetRow(this.sql, url), want, now);
    if ("use" in step) {
      // Held back by the rate bound only because a fetch is under way: that fetch is the answer.
      const running = this.inFlight.get(url);
      if (running !== undefined && lacks(step.use, want)) {
        const fetched = await running;
        return { keys: fetched ?? step.use, fetched: fetched !== null };
      }
      return { keys: step.use, fetched: false };
    }
    const fetched = await this.fetch(url, now);
    return { keys: fetched ?? step.fallback, fetched: fetched !== null };
  }

  /** Fetches and stores a URL's set now (registration, or a plan's fetch); null when the fetch failed. */
  fetch(url: string, now: number): Promise<JWK[] | null> {
    let running = this.inFlight.get(url);
    if (running === undefined) {
      running = this.fetchOnce(url, now).finally(() => this.inFlight.delete(url));
      this.inFlight.set(url, running);
    }
    return running;
  }

  /** Stores a set fetched elsewhere (at registration, by the Worker that checked it). */
  store(url: string, keys: JWK[], maxAgeSeconds: number | null, now: number): void {
    this.sql.exec(
      `INSERT INTO key_sets (url, jwks, fetched_ms, fresh_until_ms, attempted_ms) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (url) DO UPDATE SET jwks = excluded.jwks, fetched_ms = excluded.fetched_ms,
          fresh_until_ms = excluded.fresh_until_ms, attempted_ms = excluded.attempted_ms`,
      url,
      JSON.stringify({ keys }),
      now,
      freshUntil(now, maxAgeSeconds),
      now,
    );
  }

  /** Drops the sets no credential or trusted issuer names any more. */
  prune(): void {
    this.sql.exec(
      `DELETE FROM key_sets WHERE url NOT IN (SELECT jwks_uri FROM trusted_issuers)
        AND url NOT IN (SELECT jwks_uri FROM client_credentials WHERE jwks_uri IS NOT NULL AND revoked_at IS NULL)`,
    );
  }

  private async fetchOnce(url: string, now: number): Promise<JWK[] | null> {
    // The attempt is recorded before the request leaves: the rate bound holds even if it hangs.
    this.sql.exec(
      `INSERT INTO key_sets (url, attempted_ms) VALUES (?, ?) ON CONFLICT (url) DO UPDATE SET attempted_ms = excluded.attempted_ms`,
      url,
      now,
    );
    const result = await fetchKeySet(url, { allowInsecure: this.allowInsecure() });
    if (!result.ok) return null;
    this.store(url, result.keys, result.maxAgeSeconds, now);
    return result.keys;
  }
}
