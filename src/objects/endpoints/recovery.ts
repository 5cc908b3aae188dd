/**
 * Recovery after an outage (issue 30; product brief, "Recovery"): `POST .../recover {since,
 * until?}` records a job in the endpoint's object, which re-sends every delivery of the window that
 * is failed when its turn comes, in publish order (`seq`), a batch at a time; the window's
 * deliveries still retrying are made due at once when it starts, and an open circuit's next probe
 * is due at once too (issue 42). The job never floods
 * anything: it re-sends only while the endpoint has fewer than RECOVERY_BACKLOG deliveries open,
 * and what it re-sends goes through the endpoint's own pacing (window, rate limit, pause, the
 * line of an ordered endpoint), so it is paced like any delivery and another endpoint never waits
 * for it (its tickets are bounded by this endpoint's window). Each delivery is re-sent once: the
 * series a recovery starts is recorded (`recovered_series`) and no recovery re-sends it, so a
 * second call over an overlapping window (or the same call repeated) sends nothing twice; a
 * delivery re-sent by hand since is the user's new try and may be recovered again. Jobs run
 * oldest first, one at a time. Svix's `recover` (svix-webhooks PR #663) is the model.
 *
 * The window is one of `created_ms`, which the isolate that published stamped with its own clock,
 * while `seq` is the organization's publish order: clocks differ between isolates and locations,
 * so `created_ms` is not monotonic in `seq`. A job therefore tests each row's stamp on its own and
 * walks the failed deliveries up to the last one published when it began (`last_seq`); a row
 * stamped outside the window (a fast clock's "after `until`" among rows inside it) is passed over,
 * never taken for the window's end (issue 41, L3).
 */
import { newRecoveryId } from "../../lib/ids";
import { isoTime } from "../../lib/time";
import type { Actor } from "../../schemas/audit";
import type { RecoveryView } from "../../schemas/receivers";
import type { Db } from "../db";
import { type PageRequest, pageOf } from "../sql";
import { resend } from "./deliveries";
import { DELIVERY_COLUMNS, type DeliveryRow } from "./schema";

/** Deliveries a step looks at (re-sent or skipped) at most. */
export const RECOVERY_BATCH = 100;
/** A step re-sends only while fewer deliveries than this are open (waiting, queued or running). */
export const RECOVERY_BACKLOG = 200;

interface RecoveryRow extends Record<string, SqlStorageValue> {
  rowid: number;
  id: string;
  since_ms: number;
  until_ms: number;
  status: "running" | "done" | "stopped";
  found: number;
  resent: number;
  skipped: number;
  cursor_seq: number;
  /** The last delivery (in publish order) when the job began: later ones are not its to re-send. */
  last_seq: number | null;
  created_ms: number;
  finished_ms: number | null;
  actor: string;
}

export function recoveryView(row: RecoveryRow, configurationId: string): RecoveryView {
  return {
    id: row.id,
    webhook_configuration_id: configurationId,
    since: isoTime(row.since_ms),
    until: isoTime(row.until_ms),
    status: row.status,
    found: row.found,
    resent: row.resent,
    skipped: row.skipped,
    created_at: isoTime(row.created_ms),
    finished_at: row.finished_ms === null ? null : isoTime(row.finished_ms),
  };
}

/** Failed deliveries of the window that a recovery may re-send (not one a recovery already re-sent). */
const RECOVERABLE = "status = 'failed' AND created_ms >= ? AND created_ms < ? AND (recovered_series IS NULL OR recovered_series <> series)";

/**
 * Deliveries of the window still `retrying` and waiting for their next retry (issue 42): a
 * receiver back after a short outage means these too. Not one in flight (queued or running: it is
 * being tried now), nor one a recovery already sent in this series.
 */
const RETRYING =
  "status = 'retrying' AND state = 'waiting' AND created_ms >= ?1 AND created_ms < ?2 AND seq <= ?3 AND (recovered_series IS NULL OR recovered_series <> series)";

/**
 * Records a recovery of [since, until); its first step runs with the caller's pump. The window's
 * deliveries still retrying are taken at once (they are open already, so they add nothing to the
 * backlog): due now, counted in `found` and `resent`, and marked like any re-send
 * (`recovered_series`), so no recovery sends that series again. The failed ones are walked by the
 * steps.
 */
export function startRecovery(db: Db, since: number, until: number, actor: Actor, now: number): RecoveryRow {
  const id = newRecoveryId();
  // Where the window starts in publish order (deliveries_created), and how many failed deliveries it holds now.
  const first = db.value<number>("SELECT min(seq) AS s FROM deliveries WHERE created_ms >= ? AND created_ms < ?", since, until);
  const failed = db.value<number>(`SELECT count(*) AS n FROM deliveries WHERE ${RECOVERABLE}`, since, until) ?? 0;
  const last = db.value<number>("SELECT max(seq) AS s FROM deliveries") ?? 0;
  const retrying = db.value<number>(`SELECT count(*) AS n FROM deliveries WHERE ${RETRYING}`, since, until, last) ?? 0;
  if (retrying > 0) {
    db.run(
      `UPDATE deliveries SET due_ms = ?4, recovered_series = series, redispatches = 0, updated_at = ?5 WHERE ${RETRYING}`,
      since,
      until,
      last,
      now,
      isoTime(now),
    );
  }
  const found = failed + retrying;
  db.run(
    `INSERT INTO recoveries (id, since_ms, until_ms, status, found, resent, cursor_seq, last_seq, created_ms, actor)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id,
    since,
    until,
    failed === 0 ? "done" : "running",
    found,
    retrying,
    (first ?? 1) - 1,
    last,
    now,
    JSON.stringify(actor),
  );
  if (failed === 0) db.run("UPDATE recoveries SET finished_ms = ? WHERE id = ?", now, id);
  return db.first<RecoveryRow>("SELECT rowid, * FROM recoveries WHERE id = ?", id) as RecoveryRow;
}

/**
 * A recovery ends the circuit's wait (issue 42): the receiver says it is back, so an open
 * circuit's next probe is due now, and the re-sends go out at once (one at a time until one
 * succeeds, as a half-open circuit does). A Retry-After pause is the receiver's own word on when
 * to come back, and is kept. Answers whether the wait was cut.
 */
export function endCircuitWait(db: Db, now: number): boolean {
  const cut = db.first("SELECT 1 AS x FROM endpoint WHERE pause_kind = 'circuit' AND paused_until_ms > ?", now) !== undefined;
  if (cut) db.run("UPDATE endpoint SET paused_until_ms = ? WHERE pause_kind = 'circuit' AND paused_until_ms > ?", now, now);
  return cut;
}

export const recoveryRow = (db: Db, id: string): RecoveryRow | undefined =>
  db.first<RecoveryRow>("SELECT rowid, * FROM recoveries WHERE id = ?", id);

export function listRecoveries(db: Db, page: PageRequest, configurationId: string) {
  return pageOf(
    (before, limit) => db.all<RecoveryRow>("SELECT rowid, * FROM recoveries WHERE rowid < ? ORDER BY rowid DESC LIMIT ?", before, limit),
    page,
    (row) => recoveryView(row, configurationId),
    true,
  );
}

export const recovering = (db: Db): boolean => db.first("SELECT 1 AS x FROM recoveries WHERE status = 'running' LIMIT 1") !== undefined;

/**
 * One step of the oldest running recovery: re-sends (or skips) up to RECOVERY_BATCH deliveries in
 * publish order while the endpoint's open deliveries stay under RECOVERY_BACKLOG. Answers whether
 * the job can go on at once (it stopped at its batch, not at the backlog): the caller's alarm then
 * runs the next step without waiting for a report.
 */
export function stepRecovery(db: Db, now: number): { resent: number; more: boolean } {
  const job = db.first<RecoveryRow>("SELECT rowid, * FROM recoveries WHERE status = 'running' ORDER BY created_ms LIMIT 1");
  if (job === undefined) return { resent: 0, more: false };
  const open =
    db.value<number>(`SELECT count(*) AS n FROM (SELECT 1 FROM deliveries WHERE state IS NOT NULL LIMIT ${RECOVERY_BACKLOG})`) ?? 0;
  const room = Math.min(RECOVERY_BATCH, RECOVERY_BACKLOG - open);
  if (room <= 0) return { resent: 0, more: false };
  // Failed deliveries past the cursor, in publish order (deliveries_failed), whatever their stamp:
  // selecting by created_ms here could scan any number of rows outside the window for one step,
  // and the window's rows need not be contiguous in seq (the module's comment, clock skew). Every
  // row looked at counts against the batch, so a step reads at most `room` rows.
  const rows = db.all<DeliveryRow & { recovered_series: number | null }>(
    `SELECT ${DELIVERY_COLUMNS}, recovered_series FROM deliveries WHERE status = 'failed' AND seq > ?1 AND (?2 IS NULL OR seq <= ?2)
      ORDER BY seq LIMIT ?3`,
    job.cursor_seq,
    job.last_seq,
    room,
  );
  let resent = 0;
  // The cursor passes every row looked at (each is looked at once). The job ends only when no
  // failed delivery is left past it: a row stamped at or after `until` may be followed in seq by
  // rows stamped inside the window, by a clock that runs behind, so it does not end the job.
  const cursor = rows.at(-1)?.seq ?? job.cursor_seq;
  const finished = rows.length < room;
  db.txn(() => {
    for (const row of rows) {
      const outside = row.created_ms < job.since_ms || row.created_ms >= job.until_ms;
      if (outside || row.recovered_series === row.series) continue;
      resend(db, row, now);
      db.run("UPDATE deliveries SET recovered_series = series WHERE id = ?", row.id);
      resent++;
    }
    // What the window held failed at the start but was not re-sent (a recovery or a user re-sent
    // it since) is counted as skipped when the job ends.
    db.run(
      `UPDATE recoveries SET cursor_seq = ?, resent = resent + ?, status = ?, finished_ms = ?,
        skipped = CASE WHEN ? THEN max(0, found - resent - ?) ELSE 0 END WHERE id = ?`,
      cursor,
      resent,
      finished ? "done" : "running",
      finished ? now : null,
      finished ? 1 : 0,
      resent,
      job.id,
    );
  });
  // Limited by its batch (not by the backlog, which reports drain): the next step can run at once.
  const more = finished ? recovering(db) : room === RECOVERY_BATCH;
  return { resent, more };
}

/** The configuration was deleted or disabled: running recoveries stop where they are. */
export function stopRecoveries(db: Db, now: number): void {
  db.run("UPDATE recoveries SET status = 'stopped', finished_ms = ? WHERE status = 'running'", now);
}

/** Recoveries are kept as long as deliveries are. */
export function pruneRecoveries(db: Db, before: number): void {
  db.run("DELETE FROM recoveries WHERE created_ms < ? AND status <> 'running'", before);
}
