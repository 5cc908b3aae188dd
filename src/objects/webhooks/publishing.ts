/**
 * Publishing in the organization's WebhookObject: one transaction records the event (its body kept
 * until every endpoint has its copy, and who published it), one fan-out row per matching active
 * or paused configuration, the Idempotency-Key with the answer it repeats, and the hour's publish summary.
 * The fan-out rows are the outbox: object.ts hands them, in publish order, to each endpoint's
 * object and deletes them. A delivery's id starts with its configuration's (lib/ids.ts), so
 * `locate` finds its endpoint among the organization's configurations without a row per delivery;
 * the organization's storage grows with its events, not with their deliveries. Retention deletes
 * events, keys, tombstones and summaries by their indexed times, a batch at a time.
 */

import { encodeUtf8 } from "../../lib/encoding";
import { newDeliveryId, routeOf } from "../../lib/ids";
import { isoTime } from "../../lib/time";
import type { Actor } from "../../schemas/audit";
import type { PublishedEventView } from "../../schemas/webhooks";
import type { Db } from "../db";
import type { NewDelivery } from "../endpoints/object";
import { fail, missing, ok, type Result } from "../sql";
import type { KeyedAuditEntry } from "./audit";
import { EVENT_RETENTION_DAYS, EVENT_ROW_BYTES, IDEMPOTENCY_WINDOW_MS, STORAGE_BUDGET_BYTES } from "./limits";
import { takesType } from "./routing";
import type { ConfigRow, FanoutRow } from "./schema";

export interface EventToPublish {
  id: string;
  type: string;
  /** The exact JSON sent (and signed) on every attempt. */
  body: string;
  created_at: string;
  /** The channels it carries (docs/receivers.md, "Channels"); none when absent. */
  channels?: string[] | undefined;
}

export interface PublishRequest {
  event: EventToPublish;
  /** `webhook.test` to one configuration, whatever its event filter. */
  only?: string | undefined;
  idempotency?: { key: string; hash: string } | undefined;
  /**
   * An operational event keyway publishes about one of the organization's endpoints (issue 30):
   * it goes only to configurations whose `events` name its type (never to "every event"), and
   * never to the endpoint it is about, so its own trouble is never what it is sent.
   */
  operational?: { about: string } | undefined;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Fan-out rows handed to an endpoint per call; rows retention deletes per run. */
export const FANOUT_BATCH = 500;
const RETENTION_BATCH = 1000;
/** Event types a publish summary names (the count covers them all). */
const SUMMARY_TYPES = 10;

/** The original answer for an Idempotency-Key seen in the window; a different request under it is refused. */
export function replay(db: Db, idempotency: { key: string; hash: string }, now: number): Result<PublishedEventView> | null {
  const seen = db.first<{ request_hash: string; event_id: string }>(
    "SELECT request_hash, event_id FROM idempotency_keys WHERE key = ? AND created_ms > ?",
    idempotency.key,
    now - IDEMPOTENCY_WINDOW_MS,
  );
  if (seen === undefined) return null;
  if (seen.request_hash !== idempotency.hash) {
    return fail(
      "idempotency_key_reused",
      "This Idempotency-Key was used in the last 24 hours for a different request; use a new key for a new event.",
    );
  }
  const answer = db.value<string>("SELECT answer FROM idempotency_keys WHERE key = ?", idempotency.key);
  // Keys of the first layout kept no answer: it is rebuilt from the moved deliveries' rows.
  const original = answer !== null ? (JSON.parse(answer) as PublishedEventView) : publishedView(db, seen.event_id);
  return original === null ? null : ok({ ...original, replayed: true });
}

/**
 * The configurations an event goes to, among the organization's (at most 20): one (a test event,
 * whatever its filter), or every active or paused one that takes the event's type and that
 * `routes` (its channels and payload filter: routing.ts). A paused one
 * gets its delivery like any other; its endpoint's object holds it until the resume (issue 42). A
 * test event is refused while paused: it asks whether the receiver answers now.
 */
export function targets(request: PublishRequest, configs: ConfigRow[], routes: (c: ConfigRow) => boolean): Result<ConfigRow[]> {
  if (request.only !== undefined) {
    const only = configs.find((c) => c.id === request.only);
    if (only === undefined) return missing("Webhook configuration");
    if (only.status === "paused")
      return fail(
        "conflict",
        "Deliveries to this webhook configuration are paused; resume them (PATCH status: active) to send a test event.",
      );
    if (only.status !== "active")
      return fail("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
    return ok([only]);
  }
  const about = request.operational?.about;
  return ok(
    configs.filter((c) => {
      if (c.status === "disabled") return false;
      // Operational events describe the organization's other endpoints: only its operations
      // configurations receive them (issue 42), never one a receiver could have subscribed.
      // Then its channels and filters (routing.ts): only for a configuration the type reaches.
      return takesType(c, request.event.type, about) && routes(c);
    }),
  );
}

/**
 * Commits the event, its fan-out rows, the key and the summary, in one transaction, and returns the
 * publish's answer, and whether the event opened a new summary (the actor's first publish of the
 * hour: that one is pushed at once).
 */
export function record(
  db: Db,
  request: PublishRequest,
  to: ConfigRow[],
  actor: Actor,
  now: number,
): { answer: PublishedEventView; opened: boolean } {
  let opened = false;
  const answer: PublishedEventView = {
    id: request.event.id,
    type: request.event.type,
    created_at: request.event.created_at,
    deliveries: to.map((c) => ({ id: newDeliveryId(c.id), webhook_configuration_id: c.id, status: "pending" as const })),
    replayed: false,
  };
  const { event, idempotency } = request;
  const action = request.only ? "webhook_configuration.tested" : "event.published";
  db.txn(() => {
    const body = to.length > 0 ? event.body : null;
    db.run(
      "INSERT INTO events (id, type, body, created_at, created_ms, actor, channels) VALUES (?, ?, ?, ?, ?, ?, ?)",
      event.id,
      event.type,
      body,
      event.created_at,
      now,
      JSON.stringify(actor),
      event.channels && event.channels.length > 0 ? JSON.stringify(event.channels) : null,
    );
    db.run("UPDATE meta SET stored_bytes = stored_bytes + ?", EVENT_ROW_BYTES + (body === null ? 0 : encodeUtf8(body).byteLength));
    for (const d of answer.deliveries) {
      db.run(
        "INSERT INTO fanout (delivery_id, event_id, configuration_id, created_ms) VALUES (?, ?, ?, ?)",
        d.id,
        event.id,
        d.webhook_configuration_id,
        now,
      );
    }
    if (idempotency !== undefined) {
      db.run(
        "INSERT OR REPLACE INTO idempotency_keys (key, request_hash, event_id, created_ms, answer) VALUES (?, ?, ?, ?, ?)",
        idempotency.key,
        idempotency.hash,
        event.id,
        now,
        JSON.stringify(answer),
      );
    }
    opened = summarise(db, actor, action, event, now);
  });
  return { answer, opened };
}

/** Adds the event to its hour's summary for this actor and action; true when it opened the summary. */
function summarise(db: Db, actor: Actor, action: string, event: EventToPublish, now: number): boolean {
  const hour = Math.floor(now / HOUR_MS) * HOUR_MS;
  const actorJson = JSON.stringify(actor);
  const row = db.first<{ types: string }>(
    "SELECT types FROM publish_summary WHERE hour = ? AND actor = ? AND action = ?",
    hour,
    actorJson,
    action,
  );
  if (row === undefined) {
    db.run(
      `INSERT INTO publish_summary (hour, actor, action, count, first_event, last_event, first_at, last_at, types)
        VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)`,
      hour,
      actorJson,
      action,
      event.id,
      event.id,
      isoTime(now),
      isoTime(now),
      JSON.stringify([event.type]),
    );
    return true;
  }
  const types = JSON.parse(row.types) as string[];
  if (!types.includes(event.type) && types.length < SUMMARY_TYPES) types.push(event.type);
  db.run(
    "UPDATE publish_summary SET count = count + 1, last_event = ?, last_at = ?, types = ? WHERE hour = ? AND actor = ? AND action = ?",
    event.id,
    isoTime(now),
    JSON.stringify(types),
    hour,
    actorJson,
    action,
  );
  return false;
}

/** Summaries with publishes not yet in the organization's audit log, as keyed entries that replace the earlier push. */
export function unpushedSummaries(db: Db): {
  entries: KeyedAuditEntry[];
  marks: { hour: number; actor: string; action: string; count: number }[];
} {
  const rows = db.all<{
    hour: number;
    actor: string;
    action: string;
    count: number;
    first_event: string;
    last_event: string;
    first_at: string;
    last_at: string;
    types: string;
  }>("SELECT * FROM publish_summary WHERE pushed < count ORDER BY hour LIMIT 100");
  return {
    entries: rows.map((r) => ({
      key: `publish:${r.hour}:${r.action}:${r.actor}`,
      replace: true,
      at: r.first_at,
      actor: JSON.parse(r.actor) as Actor,
      action: r.action,
      resource_type: "event",
      resource_id: r.first_event,
      detail: {
        summary: `${r.count} event${r.count === 1 ? "" : "s"} published in the hour from ${isoTime(r.hour)}`,
        count: r.count,
        first_event_id: r.first_event,
        last_event_id: r.last_event,
        first_at: r.first_at,
        last_at: r.last_at,
        types: JSON.parse(r.types) as string[],
      },
    })),
    marks: rows.map((r) => ({ hour: r.hour, actor: r.actor, action: r.action, count: r.count })),
  };
}

export function markPushed(db: Db, marks: { hour: number; actor: string; action: string; count: number }[]): void {
  db.txn(() => {
    for (const m of marks) {
      db.run("UPDATE publish_summary SET pushed = ? WHERE hour = ? AND actor = ? AND action = ?", m.count, m.hour, m.actor, m.action);
    }
  });
}

/** The answer to a publish of the first layout, rebuilt from its deliveries' rows (as first answered). */
function publishedView(db: Db, eventId: string): PublishedEventView | null {
  const event = db.first<{ id: string; type: string; created_at: string }>("SELECT id, type, created_at FROM events WHERE id = ?", eventId);
  if (event === undefined) return null;
  const rows = db.all<Pick<FanoutRow, "delivery_id" | "configuration_id">>(
    "SELECT delivery_id, configuration_id FROM fanout WHERE event_id = ? ORDER BY seq",
    eventId,
  );
  return {
    id: event.id,
    type: event.type,
    created_at: event.created_at,
    deliveries: rows.map((d) => ({ id: d.delivery_id, webhook_configuration_id: d.configuration_id, status: "pending" as const })),
    replayed: false,
  };
}

/** The next fan-out rows owed to one configuration's endpoint, in publish order, with what the endpoint needs of each. */
export function owedTo(db: Db, configurationId: string): NewDelivery[] {
  return db.all<NewDelivery & Record<string, SqlStorageValue>>(
    `SELECT f.delivery_id AS id, f.seq AS seq, f.event_id AS event_id, e.type AS event_type, e.body AS body, e.created_ms AS created_ms,
        e.created_at AS created_at
      FROM fanout f JOIN events e ON e.id = f.event_id WHERE f.configuration_id = ? AND f.handed = 0 ORDER BY f.seq LIMIT ?`,
    configurationId,
    FANOUT_BATCH,
  );
}

/** Deletes rows handed over; an event every endpoint has no longer keeps its body. */
export function handed(db: Db, deliveries: NewDelivery[]): void {
  db.txn(() => {
    const events = new Set<string>();
    for (const d of deliveries) {
      db.run("DELETE FROM fanout WHERE delivery_id = ? AND handed = 0", d.id);
      events.add(d.event_id);
    }
    for (const id of events) {
      if (db.first("SELECT 1 AS x FROM fanout WHERE event_id = ? AND handed = 0 LIMIT 1", id) === undefined) {
        db.run(
          "UPDATE meta SET stored_bytes = max(0, stored_bytes - coalesce((SELECT length(CAST(body AS BLOB)) FROM events WHERE id = ?), 0))",
          id,
        );
        db.run("UPDATE events SET body = NULL WHERE id = ?", id);
      }
    }
  });
}

/** Configurations with fan-out rows still owed (one indexed step per configuration). */
export const owedConfigurations = (db: Db): string[] =>
  db.all<{ c: string }>("SELECT DISTINCT configuration_id AS c FROM fanout WHERE handed = 0").map((r) => r.c);

/**
 * Which configuration a delivery belongs to: the one (or the deleted one, kept as a tombstone for
 * as long as its deliveries) whose id starts like the delivery's; for a delivery not yet handed
 * over, or of the first layout (whose ids name no configuration), its fan-out row.
 */
export function locate(db: Db, deliveryId: string): string | null {
  const row = db.value<string>("SELECT configuration_id FROM fanout WHERE delivery_id = ?", deliveryId);
  if (row !== null) return row;
  const route = routeOf(deliveryId);
  const ids = db.all<{ id: string }>("SELECT id FROM configurations UNION ALL SELECT id FROM deleted_configurations");
  return ids.find((c) => routeOf(c.id) === route)?.id ?? null;
}

/**
 * Deletes what has outlived its retention, a batch at a time, and, while the events' rows hold more
 * than STORAGE_BUDGET_BYTES, the oldest events past the Idempotency-Key window. `more`: more remain;
 * `lost`: deliveries still owed to an endpoint whose event is gone (its object unreachable for the
 * whole retention), which can never be handed over: deleted with their event, and counted so the
 * object logs them as an error rather than waking every second for them for ever (issue 29).
 */
export function prune(db: Db, now: number): { more: boolean; lost: number } {
  const over = (db.value<number>("SELECT stored_bytes FROM meta") ?? 0) > STORAGE_BUDGET_BYTES;
  const cutoff = over ? now - IDEMPOTENCY_WINDOW_MS : now - EVENT_RETENTION_DAYS * DAY_MS;
  let more = false;
  let lost = 0;
  db.txn(() => {
    const events = db.all<{ id: string; bytes: number | null }>(
      "SELECT id, length(CAST(body AS BLOB)) AS bytes FROM events WHERE created_ms < ? ORDER BY created_ms LIMIT ?",
      cutoff,
      RETENTION_BATCH,
    );
    for (const e of events) {
      db.run("DELETE FROM events WHERE id = ?", e.id);
      db.run("UPDATE meta SET stored_bytes = max(0, stored_bytes - ?)", EVENT_ROW_BYTES + (e.bytes ?? 0));
    }
    const fanout = db.all<{ seq: number }>(
      "SELECT seq FROM fanout WHERE created_ms < ? AND handed = 1 ORDER BY created_ms LIMIT ?",
      cutoff,
      RETENTION_BATCH,
    );
    for (const f of fanout) db.run("DELETE FROM fanout WHERE seq = ?", f.seq);
    const keys = db.all<{ key: string }>(
      "SELECT key FROM idempotency_keys WHERE created_ms < ? ORDER BY created_ms LIMIT ?",
      now - IDEMPOTENCY_WINDOW_MS,
      RETENTION_BATCH,
    );
    for (const k of keys) db.run("DELETE FROM idempotency_keys WHERE key = ?", k.key);
    // Summaries are in the audit log once pushed; two days' worth stay for late publishes of an hour.
    db.run("DELETE FROM publish_summary WHERE hour < ? AND pushed >= count", now - 2 * DAY_MS);
    // A deleted configuration's tombstone goes with the last of its deliveries.
    db.run("DELETE FROM deleted_configurations WHERE deleted_ms < ? AND acked = 1", cutoff);
    // Owed rows are the outbox (normally none): those whose event is gone go too.
    const orphans = db.all<{ seq: number }>(
      "SELECT seq FROM fanout f WHERE handed = 0 AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = f.event_id) LIMIT ?",
      RETENTION_BATCH,
    );
    for (const o of orphans) db.run("DELETE FROM fanout WHERE seq = ?", o.seq);
    lost = orphans.length;
    more = [events, fanout, keys, orphans].some((rows) => rows.length === RETENTION_BATCH);
  });
  return { more, lost };
}

/** When retention next has something to delete (indexed minimums). */
export function nextExpiry(db: Db, now: number): number | null {
  const times: number[] = [];
  if ((db.value<number>("SELECT stored_bytes FROM meta") ?? 0) > STORAGE_BUDGET_BYTES) times.push(now + 60_000);
  const e = db.value<number>("SELECT min(created_ms) AS t FROM events");
  if (e !== null) times.push(e + EVENT_RETENTION_DAYS * DAY_MS);
  const k = db.value<number>("SELECT min(created_ms) AS t FROM idempotency_keys");
  if (k !== null) times.push(k + IDEMPOTENCY_WINDOW_MS);
  const f = db.value<number>("SELECT min(created_ms) AS t FROM fanout WHERE handed = 1");
  if (f !== null) times.push(f + EVENT_RETENTION_DAYS * DAY_MS);
  const d = db.value<number>("SELECT min(deleted_ms) AS t FROM deleted_configurations WHERE acked = 1");
  if (d !== null) times.push(d + EVENT_RETENTION_DAYS * DAY_MS);
  return times.length === 0 ? null : Math.min(...times);
}
