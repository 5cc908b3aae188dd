/**
 * The endpoint's outbox: which deliveries get a Queue ticket now, and the alarm that keeps every
 * promise durable (docs/storage.md, "EndpointObject"). Deliveries wait in the object, not in the
 * Queue: a ticket is sent only when the endpoint may take an attempt (not paused, within its
 * window, within its rate limit; for an ordered endpoint, only the head of the line), so the
 * Queue holds at most a window's worth of an endpoint's tickets and a backlog never multiplies.
 *
 * Claim, then send: the rows are marked `queued` with a new ticket generation in one transaction
 * before the send is awaited, so calls that overlap the send (a publish, a report, the alarm)
 * find them claimed and send nothing twice; a send that fails puts them back. A ticket that has
 * not begun by its wake time is presumed lost and sent again (policy.ts `redispatchDelay`); the
 * new generation supersedes the old one, which `begin` then drops.
 */
import type { DeliveryTicket, Lane, WebhookConfigurationRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import { DELIVERY_ROW_BYTES, STORAGE_BUDGET_BYTES } from "../webhooks/limits";
import { pausedNow, windowOf } from "./flow";
import { move } from "./lifecycle";
import { backoff, PAUSE_HOLD_MAX_MS, redispatchDelay, SLOT_WITHOUT_TOKEN_MS, slotLength } from "./policy";
import { DELIVERY_COLUMNS, type DeliveryRow, type EndpointRow } from "./schema";
import type { SlotBook } from "./slots";
import { needsToken } from "./token";

export type Queues = Record<Lane, Queue>;

/** Rows sent per sendBatch (the Queue's limit is 100 messages). */
const BATCH = 100;
/** Rows the alarm recovers, and retention deletes, per run (it runs again at once while more are due). */
export const ALARM_BATCH = 200;
const DAY_MS = 86_400_000;

/** Tickets, and the lane they go to. */
export interface Claimed {
  lane: Lane;
  tickets: DeliveryTicket[];
}

export const inFlight = (db: Db): number =>
  db.value<number>("SELECT count(*) AS n FROM deliveries WHERE state IN ('queued', 'running')") ?? 0;

/** The head of an ordered endpoint's line: its oldest open delivery by publish order. */
const headOfLine = (db: Db): DeliveryRow | undefined =>
  db.first<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE state IS NOT NULL ORDER BY seq LIMIT 1`);

/**
 * Claims the deliveries that may have a ticket now and returns the tickets to send. Reads at most
 * the window's worth of rows (plus the count of those out).
 */
export function claim(
  db: Db,
  ep: EndpointRow,
  config: WebhookConfigurationRecord,
  book: SlotBook,
  boundMs: number,
  now: number,
): Claimed | null {
  // Paused by the configuration's status (held), or by the receiver (Retry-After, the circuit).
  if (config.status !== "active" || pausedNow(ep, now) !== null) return null;
  let slots = windowOf(ep, config, now) - inFlight(db);
  if (slots <= 0) return null;
  if (config.rate_limit !== null) {
    const length = needsToken(ep, config, now) || !config.token_cache ? slotLength(true, ep.token_ms) : SLOT_WITHOUT_TOKEN_MS;
    slots = book.grantable(config.rate_limit, now, length, slots);
    if (slots <= 0) return null;
  }
  let rows: DeliveryRow[];
  if (config.ordered) {
    const head = headOfLine(db);
    rows = head !== undefined && head.state === "waiting" && (head.due_ms ?? 0) <= now ? [head] : [];
  } else {
    rows = db.all<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE state = 'waiting' AND due_ms <= ? ORDER BY due_ms, seq LIMIT ?`,
      now,
      slots,
    );
  }
  if (rows.length === 0) return null;
  const lane = ep.lane;
  const tickets: DeliveryTicket[] = [];
  db.txn(() => {
    for (const row of rows) {
      const ticket = row.ticket + 1;
      move(db, "claim", { id: row.id }, { ticket, lane, queued_ms: now, wake_ms: now + redispatchDelay(boundMs, row.redispatches) }, now);
      tickets.push({
        v: 3,
        kind: "attempt",
        organization_id: ep.organization_id,
        configuration_id: ep.configuration_id,
        delivery_id: row.id,
        series: row.series,
        attempt: row.attempts + 1,
        ticket,
        lane,
      });
    }
  });
  return { lane, tickets };
}

/** Sends claimed tickets to their lane's queue. */
export async function send(queues: Queues, claimed: Claimed): Promise<void> {
  for (let i = 0; i < claimed.tickets.length; i += BATCH) {
    await queues[claimed.lane].sendBatch(claimed.tickets.slice(i, i + BATCH).map((body) => ({ body })));
  }
}

/** Puts back the claimed tickets a failed send did not hand over (only those still as claimed). */
export function unclaim(db: Db, claimed: Claimed, now: number): void {
  db.txn(() => {
    for (const t of claimed.tickets) {
      move(db, "put_back", { where: "id = ? AND ticket = ?", args: [t.delivery_id, t.ticket] }, { wake_ms: null, queued_ms: null }, now);
    }
  });
}

/**
 * Deliveries whose wake time has come: tickets presumed lost go back to waiting (sent again by the
 * next dispatch, under a new generation); attempts whose lease ran out are returned for the
 * caller to conclude. At most ALARM_BATCH rows.
 */
export function dueForRecovery(db: Db, now: number): { lost: number; abandoned: DeliveryRow[]; more: boolean } {
  const rows = db.all<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE wake_ms <= ? ORDER BY wake_ms LIMIT ?`,
    now,
    ALARM_BATCH,
  );
  let lost = 0;
  const abandoned: DeliveryRow[] = [];
  db.txn(() => {
    for (const row of rows) {
      if (row.state === "queued") {
        lost++;
        move(db, "put_back", { id: row.id }, { redispatches: { sql: "redispatches + 1" }, wake_ms: null, queued_ms: null }, now);
      } else if (row.state === "running") {
        abandoned.push(row);
      } else {
        db.run("UPDATE deliveries SET wake_ms = NULL WHERE id = ?", row.id);
      }
    }
  });
  return { lost, abandoned, more: rows.length === ALARM_BATCH };
}

/**
 * Deletes deliveries (and their attempts) created more than `retentionDays` ago, oldest first, and,
 * while the endpoint's rows hold more than STORAGE_BUDGET_BYTES, its oldest finished deliveries
 * (open ones are never pruned); true if more remain to delete.
 */
export function prune(db: Db, ep: EndpointRow, retentionDays: number, now: number): boolean {
  const expired = db.all<{ id: string; bytes: number; pos: number | null }>(
    "SELECT id, length(CAST(body AS BLOB)) AS bytes, pos FROM deliveries WHERE created_ms < ? ORDER BY created_ms LIMIT ?",
    now - retentionDays * DAY_MS,
    ALARM_BATCH,
  );
  const over = ep.stored_bytes > STORAGE_BUDGET_BYTES;
  const early = over
    ? db.all<{ id: string; bytes: number; pos: number | null }>(
        "SELECT id, length(CAST(body AS BLOB)) AS bytes, pos FROM deliveries WHERE state IS NULL ORDER BY created_ms LIMIT ?",
        ALARM_BATCH,
      )
    : [];
  const doomed = new Map([...expired, ...early].map((r) => [r.id, r.bytes + DELIVERY_ROW_BYTES]));
  // The hourly counts live as long as deliveries do (at most 24 x retentionDays rows).
  db.run("DELETE FROM hourly WHERE hour_ms < ?", now - retentionDays * DAY_MS);
  if (doomed.size === 0) return false;
  // A polling configuration's cursors below the highest position deleted are refused (polling.ts).
  const pruned = Math.max(0, ...[...expired, ...early].map((r) => r.pos ?? 0));
  db.txn(() => {
    for (const [id, bytes] of doomed) {
      db.run("DELETE FROM attempts WHERE delivery_id = ?", id);
      db.run("DELETE FROM deliveries WHERE id = ?", id);
      db.run("UPDATE endpoint SET stored_bytes = max(0, stored_bytes - ?)", bytes);
    }
    if (pruned > 0) db.run("UPDATE endpoint SET pruned_pos = max(pruned_pos, ?)", pruned);
  });
  return expired.length === ALARM_BATCH || (over && early.length === ALARM_BATCH);
}

/** Whatever else the alarm must wake for (audit pushes, owed requests), with their failure counts. */
export interface Owed {
  audit: number | null;
  disable: number | null;
  /** Operational events not yet handed to the organization (their push's failures), issue 30. */
  notices?: number | null;
  /** A recovery's step stopped at its batch, not at the backlog: the next runs at once. */
  recovery?: boolean;
}

/**
 * When the alarm must next run: the earliest wake time (a ticket presumed lost, a lease), the next
 * dispatch (the next due delivery, once the pause, the window, the rate limit or a send's backoff
 * allow it), the oldest delivery's end of retention, and anything owed elsewhere. Every term is
 * one indexed lookup.
 */
export function nextAlarm(
  db: Db,
  ep: EndpointRow,
  config: WebhookConfigurationRecord | null,
  book: SlotBook,
  retentionDays: number,
  owed: Owed,
  now: number,
): number | null {
  const times: number[] = [];
  const wake = db.value<number>("SELECT min(wake_ms) AS t FROM deliveries WHERE wake_ms IS NOT NULL");
  if (wake !== null) times.push(wake);
  const oldest = db.value<number>("SELECT min(created_ms) AS t FROM deliveries");
  if (oldest !== null) times.push(oldest + retentionDays * DAY_MS);
  // Over the budget: prune again within a minute (at once while batches remain: the alarm re-arms).
  if (ep.stored_bytes > STORAGE_BUDGET_BYTES) times.push(now + 60_000);
  if (owed.audit !== null) times.push(now + backoff(owed.audit));
  if (owed.disable !== null) times.push(now + backoff(owed.disable));
  if (owed.notices != null) times.push(now + backoff(owed.notices));
  if (owed.recovery === true) times.push(now);
  const dispatch = nextDispatch(db, ep, config, book, now);
  if (dispatch !== null) times.push(dispatch);
  return times.length === 0 ? null : Math.min(...times);
}

function nextDispatch(db: Db, ep: EndpointRow, config: WebhookConfigurationRecord | null, book: SlotBook, now: number): number | null {
  // An endpoint deleted or disabled fails its deliveries as they fall due, without a request.
  if (ep.deleted === 1 || config?.status === "disabled") {
    return db.value<number>("SELECT min(due_ms) AS t FROM deliveries WHERE state = 'waiting'");
  }
  if (config === null) return null; // no copy yet: nothing to decide until the organization sends one
  // Paused by its status: nothing is sent; the alarm wakes only when a held delivery reaches the
  // hold's bound (policy.ts PAUSE_HOLD_MAX_MS), to conclude it.
  if (config.status === "paused") {
    const due = db.value<number>("SELECT min(due_ms) AS t FROM deliveries WHERE state = 'waiting'");
    return due === null ? null : due + PAUSE_HOLD_MAX_MS;
  }
  const paused = pausedNow(ep, now);
  if (paused !== null && paused.until === null) return null; // until the organization answers (owed)
  let due: number | null;
  if (config.ordered) {
    const head = headOfLine(db);
    due = head?.state === "waiting" ? head.due_ms : null;
  } else {
    due = db.value<number>("SELECT min(due_ms) AS t FROM deliveries WHERE state = 'waiting'");
  }
  if (due === null) return null;
  // A full window is reopened by a report (or, failing that, by a lease's end): no alarm for it.
  if (paused === null && inFlight(db) >= windowOf(ep, config, now)) return null;
  let at = Math.max(due, paused?.until ?? 0);
  if (ep.dispatch_failures > 0) at = Math.max(at, now + backoff(ep.dispatch_failures));
  if (config.rate_limit !== null) at = Math.max(at, book.earliest(config.rate_limit, now));
  return at;
}
