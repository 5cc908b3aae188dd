/**
 * Operational events an endpoint announces about itself (issue 30; product brief, "Operational
 * events"; Svix's `endpoint.disabled` and `message.attempt.exhausted` are the model):
 * `webhook.endpoint.paused` (the circuit opened, or the receiver asked for a pause of at least
 * PAUSE_NOTICE_MS), `webhook.endpoint.disabled` (by a 410, by a user, or after failing for the
 * disable period), `webhook.endpoint.recovered` (a delivery succeeded after one of those), and
 * `webhook.delivery.exhausted` (every retry of a delivery failed). Each is written to the `notices`
 * outbox in the same transaction as the change it announces, then handed to the organization's
 * WebhookObject, which publishes it through the ordinary pipeline (signed, token-authorized) to
 * the configurations whose `events` name it, never to this endpoint (publishing.ts `targets`).
 * `announced` keeps one event per change of state: a circuit that re-opens after a failed probe,
 * or a pause extended, announces nothing new. A delivery of an operational event that is exhausted
 * announces nothing, so two failing endpoints never feed each other events.
 */
import { isoTime } from "../../lib/time";
import type { WebhookConfigurationRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import { redactUrl } from "../webhooks/audit";
import type { DeliveryRow, EndpointRow } from "./schema";

/** A Retry-After pause at least this long is announced (a shorter one is routine throttling). */
export const PAUSE_NOTICE_MS = 5 * 60_000;

export interface NoticeRow extends Record<string, SqlStorageValue> {
  seq: number;
  type: string;
  data: string;
  at_ms: number;
}

function notice(db: Db, type: string, data: Record<string, unknown>, now: number): void {
  db.run("INSERT INTO notices (type, data, at_ms) VALUES (?, ?, ?)", type, JSON.stringify(data), now);
}

const about = (ep: EndpointRow, config: WebhookConfigurationRecord) => ({
  webhook_configuration_id: ep.configuration_id,
  url: redactUrl(config.url),
});

/** A pause the attempt just opened (not one already announced, nor one the endpoint already had). */
export function announcePause(
  db: Db,
  ep: EndpointRow,
  change: { pause_kind?: EndpointRow["pause_kind"]; paused_until_ms?: number | null; pause_reason?: string | null },
  config: WebhookConfigurationRecord,
  now: number,
): void {
  if (ep.announced !== null || change.pause_kind === undefined || change.pause_kind === null) return;
  const until = change.paused_until_ms ?? null;
  const notable =
    change.pause_kind === "circuit" || (change.pause_kind === "retry_after" && until !== null && until - now >= PAUSE_NOTICE_MS);
  if (!notable) return;
  notice(
    db,
    "webhook.endpoint.paused",
    {
      ...about(ep, config),
      cause: change.pause_kind === "circuit" ? "circuit_open" : "retry_after",
      reason: change.pause_reason ?? "paused",
      paused_until: until === null ? null : isoTime(until),
      at: isoTime(now),
    },
    now,
  );
  db.run("UPDATE endpoint SET announced = 'paused'");
}

/** The configuration went from active to disabled (whoever disabled it). */
export function announceDisabled(db: Db, ep: EndpointRow, config: WebhookConfigurationRecord, now: number): void {
  if (ep.announced === "disabled") return;
  notice(db, "webhook.endpoint.disabled", { ...about(ep, config), reason: config.disabled_reason ?? "disabled", at: isoTime(now) }, now);
  db.run("UPDATE endpoint SET announced = 'disabled'");
}

/** A delivery succeeded after the endpoint's trouble was announced. */
export function announceRecovered(db: Db, ep: EndpointRow, config: WebhookConfigurationRecord, now: number): void {
  if (ep.announced === null) return;
  notice(db, "webhook.endpoint.recovered", { ...about(ep, config), previously: ep.announced, at: isoTime(now) }, now);
  db.run("UPDATE endpoint SET announced = NULL");
}

/** Every retry of a delivery failed (never for a delivery of an operational event: no loops). */
export function announceExhausted(db: Db, ep: EndpointRow, row: DeliveryRow, error: string | null, now: number): void {
  if (row.event_type.startsWith("webhook.")) return;
  notice(
    db,
    "webhook.delivery.exhausted",
    {
      webhook_configuration_id: ep.configuration_id,
      delivery_id: row.id,
      event_id: row.event_id,
      event_type: row.event_type,
      attempts: row.attempts,
      last_error: error,
      at: isoTime(now),
    },
    now,
  );
}

export const pendingNotices = (db: Db, limit: number): NoticeRow[] =>
  db.all<NoticeRow>("SELECT seq, type, data, at_ms FROM notices ORDER BY seq LIMIT ?", limit);
