/**
 * The endpoint's half of the upgrade from one WebhookObject per organization (objects/webhooks/
 * legacy.ts): deliveries and attempts of the old layout, inserted idempotently with their place in
 * the pipeline kept. A delivery whose ticket was in the Queue becomes `queued` under ticket
 * generation 0 (the generation the consumer gives a v2 ticket), so that ticket still begins it;
 * one with an attempt in flight keeps its lease; one owed a ticket waits for the next dispatch.
 */
import type { Db } from "../db";
import { deliveryBytes } from "./deliveries";
import { redispatchDelay } from "./policy";

/** A delivery as version 1 kept it, with its attempts. */
export interface LegacyDelivery {
  id: string;
  seq: number;
  event_id: string;
  event_type: string;
  body: string;
  configuration_id: string;
  status: "pending" | "retrying" | "delivered" | "failed";
  series: number;
  series_attempts: number;
  attempts: number;
  next_attempt_ms: number | null;
  dispatched_ms: number | null;
  lease_until_ms: number | null;
  created_ms: number;
  created_at: string;
  updated_at: string;
  attempt_log: {
    number: number;
    series: number;
    at: string;
    step: string;
    http_status: number | null;
    latency_ms: number;
    outcome: string;
    error: string | null;
  }[];
}

export function importDeliveries(db: Db, deliveries: LegacyDelivery[], boundMs: number): void {
  db.txn(() => {
    for (const d of deliveries) {
      if (db.first("SELECT 1 AS x FROM deliveries WHERE id = ?", d.id) !== undefined) continue;
      db.run("UPDATE endpoint SET stored_bytes = stored_bytes + ?", deliveryBytes(d.body));
      const open = d.status === "pending" || d.status === "retrying";
      const running = open && d.lease_until_ms !== null;
      const queued = open && !running && d.dispatched_ms !== null;
      const state = !open ? null : running ? "running" : queued ? "queued" : "waiting";
      const wake = running
        ? d.lease_until_ms
        : queued
          ? Math.max(d.next_attempt_ms ?? 0, d.dispatched_ms ?? 0) + redispatchDelay(boundMs, 0)
          : null;
      db.run(
        `INSERT INTO deliveries (id, seq, event_id, event_type, body, status, series, series_attempts, attempts, due_ms, state,
          ticket, lane, queued_ms, lease_until_ms, wake_ms, created_ms, created_at, updated_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
        d.id,
        d.seq,
        d.event_id,
        d.event_type,
        d.body,
        d.status,
        d.series,
        d.series_attempts,
        d.attempts,
        open ? (d.next_attempt_ms ?? d.created_ms) : null,
        state,
        queued ? "fast" : null,
        queued ? d.dispatched_ms : null,
        running ? d.lease_until_ms : null,
        wake,
        d.created_ms,
        d.created_at,
        d.updated_at,
      );
      for (const a of d.attempt_log) {
        db.run(
          `INSERT OR IGNORE INTO attempts (delivery_id, number, series, at, step, http_status, latency_ms, outcome, error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          d.id,
          a.number,
          a.series,
          a.at,
          a.step,
          a.http_status,
          a.latency_ms,
          a.outcome,
          a.error,
        );
      }
    }
  });
}
