/**
 * One delivery's state machine, as functions over the endpoint object's SQL (docs/storage.md,
 * "EndpointObject"). A delivery only moves forward:
 *
 *   waiting --claimed (dispatch.ts)--> queued --begin--> running --conclude--> waiting (retry) | delivered | failed
 *   delivered | failed --user re-send--> waiting (series + 1, attempt numbers continue)
 *
 * - `begin` takes the next attempt number with an `in_flight` record and a lease, only for the
 *   ticket the object last sent (a duplicate, superseded or late ticket is dropped);
 * - `conclude` records an attempt's outcome once: a repeated report finds it concluded. Only the
 *   delivery's latest attempt moves it. One exception: the consumer's real report may correct an
 *   outcome the lease net (or a dead letter) presumed, while the delivery has not moved on, so a
 *   delivered webhook is not sent again for a report that came late;
 * - attempts that failed on our side (the fast lane's cut-off, a missed rate-limit slot) are
 *   recorded but do not count against the retry schedule: the delivery is due again at once.
 */
import { encodeUtf8 } from "../../lib/encoding";
import { isoTime } from "../../lib/time";
import type { AttemptReport, AttemptResponse, DeliveryAttempt, DeliveryFilter, DeliveryRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import { DELIVERY_ROW_BYTES } from "../webhooks/limits";
import { move, moveOne } from "./lifecycle";
import { type AttemptRow, DELIVERY_COLUMNS, type DeliveryRow, deliveryRow, type HourlyRow } from "./schema";

/** The attempts a delivery view shows: the most recent. */
const ATTEMPTS_SHOWN = 50;

export const isOpen = (row: Pick<DeliveryRow, "status">): boolean => row.status === "pending" || row.status === "retrying";

/** A delivery the organization's fan-out hands over. */
export interface NewDelivery {
  id: string;
  /** Publish order within the organization (ordered endpoints deliver by it). */
  seq: number;
  event_id: string;
  event_type: string;
  /** The exact JSON sent (and signed) on every attempt. */
  body: string;
  created_ms: number;
  created_at: string;
}

/** The bytes a delivery's rows are counted as (its body, and DELIVERY_ROW_BYTES for the rest). */
export const deliveryBytes = (body: string): number => encodeUtf8(body).byteLength + DELIVERY_ROW_BYTES;

/**
 * Inserts new deliveries, due at once (`polled`: kept for a polling configuration's receiver); a
 * delivery already here (a repeated fan-out) is left as it is. Answers the ids inserted, in the
 * order given (publish order).
 */
export function accept(db: Db, deliveries: NewDelivery[], now: number, polled = false): string[] {
  const at = isoTime(now);
  const inserted: string[] = [];
  db.txn(() => {
    for (const d of deliveries) {
      if (db.first("SELECT 1 AS x FROM deliveries WHERE id = ?", d.id) !== undefined) continue;
      inserted.push(d.id);
      // A polling configuration's delivery (issue 45, polling.ts) takes the next read position and
      // waits for no ticket (state NULL, no due time): nothing is sent, the receiver reads it.
      db.run("UPDATE endpoint SET stored_bytes = stored_bytes + ?, poll_pos = poll_pos + ?", deliveryBytes(d.body), polled ? 1 : 0);
      db.run(
        `INSERT INTO deliveries (id, seq, event_id, event_type, body, status, series, series_attempts, attempts, due_ms,
          state, created_ms, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, 'pending', 1, 0, 0, ?, ?, ?, ?, ?,
          CASE WHEN ? THEN (SELECT poll_pos FROM endpoint) END)`,
        d.id,
        d.seq,
        d.event_id,
        d.event_type,
        d.body,
        polled ? null : now,
        polled ? null : "waiting",
        d.created_ms,
        d.created_at,
        at,
        polled ? 1 : 0,
      );
    }
  });
  return inserted;
}

/** A ticket's identity: which attempt of which series of which delivery. */
export interface TicketRef {
  delivery_id: string;
  series: number;
  attempt: number;
}

/** Why a ticket is dropped, or null when it may begin. Reads nothing but the row. */
export function refuseTicket(row: DeliveryRow | undefined, ticket: TicketRef & { ticket: number }): string | null {
  if (row === undefined) return "unknown delivery";
  if (row.series !== ticket.series) return "superseded by a re-send";
  if (!isOpen(row)) return `already ${row.status}`;
  if (ticket.attempt !== row.attempts + 1) return "attempt already made";
  if (row.state === "running") return "attempt in flight";
  if (row.state !== "queued" || row.ticket !== ticket.ticket) return "superseded by a newer ticket";
  return null;
}

/** Puts a queued delivery back to waiting (not attempted now: paused, throttled, moved to another lane). */
export function putBack(db: Db, id: string, now: number): void {
  move(db, "put_back", { id }, { wake_ms: null, queued_ms: null }, now);
}

/** Takes the attempt's number with an `in_flight` record and a lease: reported exactly once, by `conclude`. */
export function start(db: Db, row: DeliveryRow, attempt: number, leaseUntil: number, now: number): void {
  moveOne(db, "start", row.id, { attempts: attempt, lease_until_ms: leaseUntil, wake_ms: leaseUntil, redispatches: 0 }, now);
  db.run(
    `INSERT INTO attempts (delivery_id, number, series, at, step, latency_ms, outcome) VALUES (?, ?, ?, ?, 'token', 0, 'in_flight')`,
    row.id,
    attempt,
    row.series,
    isoTime(now),
  );
}

/** An attempt's outcome as `conclude` records it. */
export type Outcome = Pick<AttemptReport, "step" | "http_status" | "latency_ms" | "error"> & {
  outcome: "delivered" | "retry" | "failed";
  note?: string | null;
  response?: AttemptResponse | null;
};

export interface ConcludeOptions {
  /** Who concludes it. */
  by: NonNullable<AttemptRow["settled_by"]>;
  /** Whether a retry counts against the schedule (false: our side failed; due again at once). */
  counts: boolean;
  /** The retry schedule (WEBHOOK_RETRY_SCHEDULE) and the delay it gives the n-th retry. */
  scheduleLength: number;
  retryDelay: (seriesAttempts: number) => number;
}

export interface Concluded {
  /** The outcome finally recorded (a retry past the schedule becomes failed). */
  outcome: "delivered" | "retry" | "failed";
  /** Whether the delivery itself moved (false: an older attempt, or one whose delivery moved on). */
  moved: boolean;
}

/**
 * Records the outcome of an attempt begun earlier and moves its delivery: the one state machine
 * behind reports, abandoned attempts, dead letters and configurations gone. Null when there is
 * nothing to conclude (unknown, or already concluded and not correctable).
 */
export function conclude(db: Db, ticket: TicketRef, outcome: Outcome, now: number, options: ConcludeOptions): Concluded | null {
  const row = deliveryRow(db, ticket.delivery_id);
  if (row === undefined) return null;
  let result: Concluded | null = null;
  db.txn(() => {
    const attempt = db.first<Pick<AttemptRow, "outcome" | "settled_by">>(
      "SELECT outcome, settled_by FROM attempts WHERE delivery_id = ? AND number = ?",
      row.id,
      ticket.attempt,
    );
    if (attempt === undefined) return;
    const presumed = attempt.settled_by === "lease" || attempt.settled_by === "dead_letter";
    if (attempt.outcome !== "in_flight" && !(options.by === "report" && presumed)) return; // a repeated or late report
    // Only the delivery's latest attempt moves it, and only while it is its turn: running, or
    // (correcting a presumed outcome) waiting or queued for the retry that outcome scheduled.
    const latest = isOpen(row) && row.series === ticket.series && row.attempts === ticket.attempt;
    const moves = latest && (attempt.outcome === "in_flight" ? row.state === "running" : row.state !== "running");
    let kind = outcome.outcome;
    let error = outcome.error;
    // A corrected outcome was counted when it was presumed.
    const seriesAttempts = options.counts && attempt.outcome === "in_flight" ? row.series_attempts + 1 : row.series_attempts;
    if (moves && kind === "retry" && seriesAttempts > options.scheduleLength) {
      kind = "failed";
      error = `${error ?? "failed"}; retries exhausted`;
    }
    db.run(
      `UPDATE attempts SET step = ?, http_status = ?, latency_ms = ?, outcome = ?, error = ?, note = ?, response = ?, settled_by = ?
        WHERE delivery_id = ? AND number = ?`,
      outcome.step,
      outcome.http_status,
      outcome.latency_ms,
      kind,
      error,
      outcome.note ?? null,
      outcome.response ? JSON.stringify(outcome.response) : null,
      options.by,
      row.id,
      ticket.attempt,
    );
    // The endpoint's hourly counts (health, charts): each attempt once, at its first conclusion,
    // and only when the receiver had its say (an attempt our side failed says nothing of it).
    if (attempt.outcome === "in_flight" && (options.counts || kind === "delivered")) countAttempt(db, now, kind, outcome.latency_ms);
    result = { outcome: kind, moved: moves };
    if (!moves) return; // the attempt happened and is recorded; the delivery has moved on
    const cleared = { series_attempts: seriesAttempts, lease_until_ms: null, wake_ms: null, queued_ms: null, redispatches: 0 };
    if (kind === "retry") {
      moveOne(db, "retry", row.id, { ...cleared, due_ms: now + (options.counts ? options.retryDelay(seriesAttempts) : 0) }, now);
    } else {
      moveOne(db, kind === "delivered" ? "deliver" : "fail", row.id, { ...cleared, due_ms: null }, now);
    }
  });
  return result;
}

/** Records an attempt keyway concluded without a request (the configuration is gone or disabled). */
export function failWithoutRequest(db: Db, row: DeliveryRow, error: string, now: number, options: ConcludeOptions): void {
  const attempt = row.attempts + 1;
  db.txn(() => {
    moveOne(db, "start_unsent", row.id, { attempts: attempt }, now);
    db.run(
      `INSERT INTO attempts (delivery_id, number, series, at, step, latency_ms, outcome) VALUES (?, ?, ?, ?, 'configuration', 0, 'in_flight')`,
      row.id,
      attempt,
      row.series,
      isoTime(now),
    );
  });
  conclude(
    db,
    { delivery_id: row.id, series: row.series, attempt },
    { step: "configuration", http_status: null, latency_ms: 0, outcome: "failed", error },
    now,
    { ...options, by: "keyway" },
  );
}

/**
 * A user's re-send. A finished delivery (`delivered` or `failed`) starts a new series of attempts
 * with the same webhook-id; an open one is due at once (its ticket, if any, is superseded).
 */
export function resend(db: Db, row: DeliveryRow, now: number): void {
  if (isOpen(row)) {
    moveOne(db, "due_now", row.id, { due_ms: now, queued_ms: null, wake_ms: null, redispatches: 0 }, now);
  } else {
    moveOne(db, "resend", row.id, { series: { sql: "series + 1" }, series_attempts: 0, due_ms: now, redispatches: 0 }, now);
  }
}

/**
 * The delivery as the API shows it, with its most recent attempts. A waiting delivery's next
 * attempt is no earlier than the end of its endpoint's pause (`pausedUntil`).
 */
export function deliveryRecord(
  db: Db,
  row: DeliveryRow,
  organizationId: string,
  configurationId: string,
  pausedUntil: number | null = null,
): DeliveryRecord {
  const attempts = db
    .all<AttemptRow>(
      "SELECT number, series, at, step, http_status, latency_ms, outcome, error, note, response FROM attempts WHERE delivery_id = ? ORDER BY number DESC LIMIT ?",
      row.id,
      ATTEMPTS_SHOWN,
    )
    .reverse();
  return {
    id: row.id,
    organization_id: organizationId,
    webhook_configuration_id: configurationId,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempts: attempts.map(
      (a): DeliveryAttempt => ({
        number: a.number,
        series: a.series,
        at: a.at,
        step: a.step,
        http_status: a.http_status,
        latency_ms: a.latency_ms,
        outcome: a.outcome,
        error: a.error,
        note: a.note,
        response: a.response === null ? null : (JSON.parse(a.response) as AttemptResponse),
      }),
    ),
    next_attempt_at: row.due_ms === null ? null : isoTime(row.state === "waiting" ? Math.max(row.due_ms, pausedUntil ?? 0) : row.due_ms),
    in_flight_until: row.state === "running" && row.lease_until_ms !== null ? isoTime(row.lease_until_ms) : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A page of deliveries, newest first, after the rowid `before`. */
export const HOUR_MS = 3_600_000;

/** Adds one concluded attempt to its hour's row (succeeded or failed, and its latency). */
function countAttempt(db: Db, now: number, kind: Concluded["outcome"], latencyMs: number): void {
  const ok = kind === "delivered" ? 1 : 0;
  db.run(
    `INSERT INTO hourly (hour_ms, succeeded, failed, latency_ms_sum) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (hour_ms) DO UPDATE SET succeeded = succeeded + ?2, failed = failed + ?3, latency_ms_sum = latency_ms_sum + ?4`,
    now - (now % HOUR_MS),
    ok,
    1 - ok,
    Math.max(0, Math.round(latencyMs)),
  );
}

/** The hourly counts from `since` on (oldest first); pruned with the deliveries (dispatch.ts). */
export const hourlySince = (db: Db, since: number): HourlyRow[] =>
  db.all<HourlyRow>("SELECT hour_ms, succeeded, failed, latency_ms_sum FROM hourly WHERE hour_ms >= ? ORDER BY hour_ms", since);

/**
 * Deliveries newest first, below rowid `before`, narrowed by `filter`. Each filter has its own
 * index (migration 3) whose entries carry the rowid, so a filtered page reads its own rows.
 */
export function deliveriesBefore(db: Db, before: number, limit: number, filter: DeliveryFilter = {}): DeliveryRow[] {
  const where = ["rowid < ?"];
  const args: SqlStorageValue[] = [before];
  // Column names come from this list, never from input; values are bound.
  for (const column of ["status", "event_type", "event_id"] as const) {
    const value = filter[column];
    if (value !== undefined) {
      where.push(`${column} = ?`);
      args.push(value);
    }
  }
  return db.all<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE ${where.join(" AND ")} ORDER BY rowid DESC LIMIT ?`,
    ...args,
    limit,
  );
}
