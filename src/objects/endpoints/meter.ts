/**
 * The portal's meter (issue 42 item 3; docs/receivers.md, "The portal's limits"): how often a
 * receiver's portal session may take the four actions that cost something beyond a page (a
 * connection test is an outbound request to a URL the receiver chose, a test event a publish, a
 * re-send and a recovery deliveries), per session and per configuration. Counted by the
 * configuration's EndpointObject (`meterPortal`), in one transaction: a session only ever reaches
 * its own configuration, so both of an action's counters live there and one call decides.
 *
 * Fixed windows aligned to the clock, like the /v1 windows (ratelimit/windows.ts): a counter is
 * (action, scope, window start) -> admitted count, and only admitted actions are counted, so a
 * client that waits the Retry-After of a 429 gets through. A window never moves backwards: an
 * action stamped before the newest window of its counter (an isolate whose clock is behind) is
 * counted in that window. A counter's row expires at its window's end and is pruned by time
 * (objects/sql.ts `pruneExpired`) on each call.
 *
 * `decide` and `refund` are pure functions of plain data (the counters read, the request, the
 * time); the object only reads the counters (`readCounters`, `readCharged`), writes what they
 * answer (`writeCounters`) and prunes (`pruneCounters`).
 */
import type { Db } from "../db";
import { pruneExpired } from "../sql";

export type PortalAction = "connection_test" | "test_event" | "resend" | "recover" | "rotate_signing_secret";
export type MeterScope = "session" | "configuration";

export interface MeterLimit {
  /** Actions admitted per window. */
  limit: number;
  /** The window's length (ms); windows are aligned to the clock (the Unix epoch). */
  windowMs: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** A connection test is a token request to the receiver's token URL: one every 5 s a session, 10 a minute an endpoint. */
export const CONNECTION_TEST_LIMITS = { session: { limit: 1, windowMs: 5 * SECOND }, configuration: { limit: 10, windowMs: MINUTE } };
/** A test event is a publish and a delivery: one a second a session, 20 a minute an endpoint. */
export const TEST_EVENT_LIMITS = { session: { limit: 1, windowMs: SECOND }, configuration: { limit: 20, windowMs: MINUTE } };
/** A re-send is a delivery's new attempt: 5 a second a session, 60 a minute an endpoint. */
export const RESEND_LIMITS = { session: { limit: 5, windowMs: SECOND }, configuration: { limit: 60, windowMs: MINUTE } };
/** A recovery is a job re-sending a window's failed deliveries: one every 10 s a session, 6 an hour an endpoint. */
export const RECOVER_LIMITS = { session: { limit: 1, windowMs: 10 * SECOND }, configuration: { limit: 6, windowMs: HOUR } };

/**
 * A signing-secret rotation keeps the previous secret signing for 24 h beside the new one (each a
 * signature on every webhook): one every 10 s a session, 5 an hour an endpoint; and its graces
 * take at most 3 of the 10 slots (objects/webhooks/configurations.ts `planRotation`).
 */
export const ROTATE_LIMITS = { session: { limit: 1, windowMs: 10 * SECOND }, configuration: { limit: 5, windowMs: HOUR } };

export const PORTAL_LIMITS: Readonly<Record<PortalAction, Readonly<Record<MeterScope, MeterLimit>>>> = {
  connection_test: CONNECTION_TEST_LIMITS,
  test_event: TEST_EVENT_LIMITS,
  resend: RESEND_LIMITS,
  recover: RECOVER_LIMITS,
  rotate_signing_secret: ROTATE_LIMITS,
};

/** The configuration's counters' scope; a session's is `session:<portal session id>`. */
const CONFIGURATION_SCOPE = "configuration";

/** One counter's row: the actions of one kind admitted for one scope in one window. */
export interface MeterCounter {
  action: PortalAction;
  /** `configuration`, or `session:<portal session id>`. */
  scope: string;
  window_start_ms: number;
  count: number;
  /** The window's end: the row is pruned once it has passed. */
  expires_ms: number;
}

/** An action a portal session asks to take. */
export interface MeterRequest {
  action: PortalAction;
  /** The portal session's id (pts_...). */
  session: string;
}

/** A window of the request, as the 429 and its RateLimit fields describe it. */
export interface MeterWindowUsage {
  scope: MeterScope;
  limit: number;
  windowSeconds: number;
  /** Actions left in the window after this decision. */
  remaining: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
}

/** What was refused: the window that ends last among those full (waiting it out admits, as far as this endpoint's counters go). */
export interface MeterRefusal {
  action: PortalAction;
  scope: MeterScope;
  limit: number;
  windowSeconds: number;
  resetAt: number;
  /** Seconds until `resetAt`, at least 1. */
  retryAfterSeconds: number;
  /** Both windows of the action (session first). */
  windows: MeterWindowUsage[];
}

/** The counters an admission added one to: what `refund` takes back. */
export interface MeterCharge {
  action: PortalAction;
  counters: { scope: string; window_start_ms: number }[];
}

export type MeterDecision =
  | { admitted: true; charge: MeterCharge; windows: MeterWindowUsage[]; writes: MeterCounter[] }
  | { admitted: false; refusal: MeterRefusal; writes: MeterCounter[] };

/** The (action, scope) counters a request reads: the newest row of each (absent: none yet). */
export function scopesOf(request: MeterRequest): { action: PortalAction; kind: MeterScope; scope: string }[] {
  return [
    { action: request.action, kind: "session", scope: `session:${request.session}` },
    { action: request.action, kind: "configuration", scope: CONFIGURATION_SCOPE },
  ];
}

/**
 * Admits the action when every one of its windows has room, and then counts it in each; refuses
 * it otherwise, counting nothing. `counters` are the newest rows of the request's scopes as
 * stored (any others are ignored).
 */
export function decide(counters: readonly MeterCounter[], request: MeterRequest, now: number): MeterDecision {
  const limits = PORTAL_LIMITS[request.action];
  const windows = scopesOf(request).map(({ kind, scope }) => {
    const { limit, windowMs } = limits[kind];
    const newest = counters.find((c) => c.action === request.action && c.scope === scope);
    const start = Math.max(Math.floor(now / windowMs) * windowMs, newest?.window_start_ms ?? 0);
    const count = newest !== undefined && newest.window_start_ms === start ? newest.count : 0;
    return { kind, scope, limit, windowMs, start, count };
  });
  const full = windows.filter((w) => w.count >= w.limit);
  const usage = (admitted: boolean): MeterWindowUsage[] =>
    windows.map((w) => ({
      scope: w.kind,
      limit: w.limit,
      windowSeconds: w.windowMs / SECOND,
      remaining: Math.max(0, w.limit - w.count - (admitted ? 1 : 0)),
      resetAt: w.start + w.windowMs,
    }));
  if (full.length > 0) {
    // The full window that ends last (the configuration's on a tie): after it, both have room.
    const binding = full.reduce((a, b) => (b.start + b.windowMs >= a.start + a.windowMs ? b : a));
    const resetAt = binding.start + binding.windowMs;
    return {
      admitted: false,
      refusal: {
        action: request.action,
        scope: binding.kind,
        limit: binding.limit,
        windowSeconds: binding.windowMs / SECOND,
        resetAt,
        retryAfterSeconds: Math.max(1, Math.ceil((resetAt - now) / SECOND)),
        windows: usage(false),
      },
      writes: [],
    };
  }
  return {
    admitted: true,
    charge: { action: request.action, counters: windows.map((w) => ({ scope: w.scope, window_start_ms: w.start })) },
    windows: usage(true),
    writes: windows.map((w) => ({
      action: request.action,
      scope: w.scope,
      window_start_ms: w.start,
      count: w.count + 1,
      expires_ms: w.start + w.windowMs,
    })),
  };
}

/**
 * Takes an admitted action back (the domain refused it before it started anything: a window the
 * recovery refuses, a paused endpoint): each counter it was counted in, still stored, is lowered
 * by one (a row at 0 is written as 0, which `writeCounters` deletes). `counters` are the charged
 * rows as stored; one already pruned (its window over) needs nothing.
 */
export function refund(counters: readonly MeterCounter[], charge: MeterCharge): MeterCounter[] {
  const writes: MeterCounter[] = [];
  for (const charged of charge.counters) {
    const row = counters.find(
      (c) => c.action === charge.action && c.scope === charged.scope && c.window_start_ms === charged.window_start_ms,
    );
    if (row !== undefined && row.count > 0) writes.push({ ...row, count: row.count - 1 });
  }
  return writes;
}

// ---------------------------------------------------------------------------------------------
// Storage: the object's reads and writes (table portal_meter, schema.ts migration 7)

/** Expired counters deleted per call (each call adds at most two). */
export const METER_PRUNE = 10;

const COLUMNS = "action, scope, window_start_ms, count, expires_ms";

/** Deletes up to METER_PRUNE counters whose window ended before `now` (through `portal_meter_expiry`). */
export function pruneCounters(sql: SqlStorage, now: number): number {
  return pruneExpired(sql, "portal_meter", "rowid", "expires_ms", now, METER_PRUNE);
}

/** The newest counter of each of the request's scopes (through the primary key). */
export function readCounters(db: Db, request: MeterRequest): MeterCounter[] {
  const out: MeterCounter[] = [];
  for (const { action, scope } of scopesOf(request)) {
    const row = db.first<MeterCounter & Record<string, SqlStorageValue>>(
      `SELECT ${COLUMNS} FROM portal_meter WHERE action = ? AND scope = ? ORDER BY window_start_ms DESC LIMIT 1`,
      action,
      scope,
    );
    if (row !== undefined) out.push(row);
  }
  return out;
}

/** The counters a charge was counted in, as stored now. */
export function readCharged(db: Db, charge: MeterCharge): MeterCounter[] {
  const out: MeterCounter[] = [];
  for (const { scope, window_start_ms } of charge.counters) {
    const row = db.first<MeterCounter & Record<string, SqlStorageValue>>(
      `SELECT ${COLUMNS} FROM portal_meter WHERE action = ? AND scope = ? AND window_start_ms = ?`,
      charge.action,
      scope,
      window_start_ms,
    );
    if (row !== undefined) out.push(row);
  }
  return out;
}

/** Writes each counter (one at 0 is deleted). */
export function writeCounters(db: Db, writes: readonly MeterCounter[]): void {
  for (const w of writes) {
    if (w.count <= 0) {
      db.run("DELETE FROM portal_meter WHERE action = ? AND scope = ? AND window_start_ms = ?", w.action, w.scope, w.window_start_ms);
    } else {
      db.run(
        `INSERT INTO portal_meter (${COLUMNS}) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (action, scope, window_start_ms) DO UPDATE SET count = excluded.count`,
        w.action,
        w.scope,
        w.window_start_ms,
        w.count,
        w.expires_ms,
      );
    }
  }
}
