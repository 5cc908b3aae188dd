/**
 * The in-place upgrade from version 1 (one WebhookObject per organization held every delivery) to
 * an object per endpoint (issue 20). Schema version 2 set the old deliveries, attempts and events
 * aside as `legacy_*` tables and gave each delivery its fan-out row (its order and its endpoint);
 * before the upgraded object serves anything, `handOver` gives every configuration's copy, its
 * health and its deliveries with their attempts to the endpoint's object, in batches, deleting
 * each batch once the endpoint has it (the endpoint inserts idempotently, so a handover cut off
 * by a crash resumes where it stopped). Open deliveries keep their place: a ticket already in the
 * Queue (v2) is still honoured (the consumer asks `locate` where its delivery went), an attempt in
 * flight keeps its lease.
 */
import type { Db } from "../db";
import type { LegacyDelivery } from "../endpoints/legacy";
import type { EndpointObject } from "../endpoints/object";
import { snapshotOf, synced } from "./configurations";

/** Deliveries handed over per call. */
const BATCH = 200;

type Endpoints = (configurationId: string) => DurableObjectStub<EndpointObject>;

export const hasLegacy = (db: Db): boolean =>
  db.first("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'legacy_deliveries'") !== undefined;

/** Hands every legacy row to its endpoint's object; resumable. */
export async function handOver(db: Db, organizationId: string, endpoints: Endpoints, now: number): Promise<void> {
  if (!hasLegacy(db)) return;
  // Every configuration's copy and health first (also those whose deliveries have all expired).
  const health = db.all<{ id: string; failing_since: number | null; last_delivered_ms: number | null }>(
    "SELECT id, failing_since, last_delivered_ms FROM configurations",
  );
  await Promise.all(
    health.map(async (h) => {
      const snapshot = snapshotOf(db, h.id, organizationId);
      if (snapshot === null) return;
      synced(db, h.id, await endpoints(h.id).importLegacy(snapshot, h, [], now));
    }),
  );
  for (;;) {
    const rows = db.all<LegacyDelivery & Record<string, SqlStorageValue>>(
      `SELECT d.id, f.seq, d.event_id, d.event_type, coalesce(e.body, '') AS body, d.configuration_id, d.status, d.series,
          d.series_attempts, d.attempts, d.next_attempt_ms, d.dispatched_ms, d.lease_until_ms, f.created_ms, d.created_at, d.updated_at
        FROM legacy_deliveries d JOIN fanout f ON f.delivery_id = d.id LEFT JOIN legacy_events e ON e.id = d.event_id
        ORDER BY d.configuration_id, f.seq LIMIT ?`,
      BATCH,
    );
    if (rows.length === 0) return;
    const byConfig = new Map<string, LegacyDelivery[]>();
    for (const row of rows) {
      row.attempt_log = db.all(
        "SELECT number, series, at, step, http_status, latency_ms, outcome, error FROM legacy_attempts WHERE delivery_id = ? ORDER BY number",
        row.id,
      ) as LegacyDelivery["attempt_log"];
      const list = byConfig.get(row.configuration_id) ?? [];
      list.push(row);
      byConfig.set(row.configuration_id, list);
    }
    await Promise.all(
      [...byConfig].map(async ([configId, deliveries]) => {
        // A configuration deleted under version 1 left its deliveries behind: its endpoint gets a tombstone.
        const snapshot = snapshotOf(db, configId, organizationId) ?? {
          organization_id: organizationId,
          configuration_id: configId,
          version: 1,
          configuration: null,
        };
        const version = await endpoints(configId).importLegacy(snapshot, null, deliveries, now);
        db.txn(() => {
          synced(db, configId, version);
          for (const d of deliveries) {
            db.run("DELETE FROM legacy_attempts WHERE delivery_id = ?", d.id);
            db.run("DELETE FROM legacy_deliveries WHERE id = ?", d.id);
          }
        });
      }),
    );
  }
}
