/**
 * Publishing events and the delivery log. Publishing records the event and one delivery per
 * matching configuration, then enqueues one Queue message per delivery. Deliveries live in KV
 * for DELIVERY_TTL_SECONDS, with an index per configuration listed newest first (layout in
 * docs/storage.md). The consumer appends one attempt per try; nothing about a delivery is
 * dropped silently: it ends `delivered` or `failed`, and a failed one can be re-sent.
 */
import type { Deps } from "../deps";
import { ApiError, notFound } from "../errors";
import { recordChange } from "../identity/audit";
import type { Actor } from "../identity/changes";
import { encodeUtf8 } from "../lib/encoding";
import { ID_PATTERN, newDeliveryId, newEventId } from "../lib/ids";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import type { ListQuery } from "../schemas/common";
import {
  type DeliveryAttempt,
  type DeliveryMessage,
  DeliveryRecord,
  EventRecord,
  type PublishEventInput,
  type PublishedEventView,
  type WebhookConfigurationRecord,
} from "../schemas/webhooks";
import { getRecord, listPage, type Page, putRecord } from "../stores/kv";
import { kvKeys, lastSegment } from "../stores/kv-keys";
import { allWebhookConfigurations, getWebhookConfiguration, matchesEvent } from "./configurations";

/** Delivery logs and events are kept 30 days. */
export const DELIVERY_TTL_SECONDS = 30 * 24 * 3600;
/**
 * Largest event body (the JSON sent to receivers). Queue messages are limited to 128 KB; the
 * rest of the message and its encoding need the remainder.
 */
export const MAX_EVENT_BYTES = 100 * 1024;
/** Queue sendBatch limits: 100 messages and 256 KB per call. */
const BATCH_MAX_MESSAGES = 100;
const BATCH_MAX_BYTES = 240 * 1024;

const ttl = { expirationTtl: DELIVERY_TTL_SECONDS };

/** Standard Webhooks style payload: what receivers get and what the signature covers. */
function eventBody(id: string, type: string, createdAt: string, data: unknown): string {
  return JSON.stringify({ id, type, created_at: createdAt, data });
}

export async function publishEvent(
  deps: Deps,
  orgId: string,
  input: PublishEventInput,
  actor: Actor,
  only?: WebhookConfigurationRecord,
): Promise<PublishedEventView> {
  const nowMs = deps.now();
  const createdAt = isoTime(nowMs);
  const eventId = newEventId();
  const body = eventBody(eventId, input.type, createdAt, input.data);
  const size = encodeUtf8(body).byteLength;
  if (size > MAX_EVENT_BYTES) {
    throw new ApiError("payload_too_large", `The event is ${size} bytes once serialized; the limit is ${MAX_EVENT_BYTES}.`);
  }

  const targets = only ? [only] : (await allWebhookConfigurations(deps, orgId)).filter((c) => matchesEvent(c, input.type));
  const deliveries: DeliveryRecord[] = targets.map((config) => ({
    id: newDeliveryId(),
    organization_id: orgId,
    webhook_configuration_id: config.id,
    event_id: eventId,
    event_type: input.type,
    status: "pending",
    attempts: [],
    next_attempt_at: null,
    created_at: createdAt,
    updated_at: createdAt,
  }));
  const event: EventRecord = {
    id: eventId,
    organization_id: orgId,
    type: input.type,
    created_at: createdAt,
    delivery_ids: deliveries.map((d) => d.id),
  };

  await Promise.all([
    putRecord(deps.kv, kvKeys.event(orgId, eventId), EventRecord, event, ttl),
    deps.kv.put(kvKeys.eventBody(orgId, eventId), body, ttl),
    ...deliveries.flatMap((d) => [
      putRecord(deps.kv, kvKeys.delivery(orgId, d.id), DeliveryRecord, d, ttl),
      deps.kv.put(kvKeys.deliveryIndex(orgId, d.webhook_configuration_id, nowMs, d.id), "", ttl),
    ]),
  ]);
  await enqueue(
    deps,
    deliveries.map((d) => messageFor(d, body)),
  );
  await recordChange(deps, orgId, actor, {
    action: "event.published",
    resource: { type: "event", id: eventId },
    detail: { type: input.type, deliveries: deliveries.length },
  });
  return {
    id: eventId,
    type: input.type,
    created_at: createdAt,
    deliveries: deliveries.map((d) => ({ id: d.id, webhook_configuration_id: d.webhook_configuration_id, status: d.status })),
  };
}

/** `webhook.test` to one configuration, whatever its event filter. */
export async function sendTestEvent(deps: Deps, orgId: string, configId: string, actor: Actor): Promise<PublishedEventView> {
  const config = await getWebhookConfiguration(deps, orgId, configId);
  if (config.status !== "active") {
    throw new ApiError("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
  }
  return publishEvent(
    deps,
    orgId,
    { type: "webhook.test", data: { message: "Test event from keyway", webhook_configuration_id: config.id } },
    actor,
    config,
  );
}

function messageFor(delivery: DeliveryRecord, body: string): DeliveryMessage {
  return {
    v: 1,
    delivery_id: delivery.id,
    organization_id: delivery.organization_id,
    webhook_configuration_id: delivery.webhook_configuration_id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    body,
    created_at: delivery.created_at,
  };
}

/** Sends in as few sendBatch calls as the Queue limits allow; a failure is a 503, not a loss. */
async function enqueue(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  const batches: DeliveryMessage[][] = [];
  let current: DeliveryMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    const size = encodeUtf8(message.body).byteLength + 512;
    if (current.length === BATCH_MAX_MESSAGES || (current.length > 0 && bytes + size > BATCH_MAX_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(message);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  try {
    for (const batch of batches) await deps.webhookQueue.sendBatch(batch.map((body) => ({ body })));
  } catch (err) {
    log.error("enqueue failed", { detail: describeError(err) });
    await Promise.all(
      messages.map((m) => recordOutcome(deps, m, null, { status: "failed", next_attempt_at: null }).catch(() => undefined)),
    );
    throw new ApiError("service_unavailable", "The event could not be queued for delivery; it was not sent. Retry shortly.", {
      headers: { "Retry-After": "5" },
    });
  }
}

export async function getDelivery(deps: Deps, orgId: string, deliveryId: string): Promise<DeliveryRecord> {
  const record = ID_PATTERN.test(deliveryId) ? await getRecord(deps.kv, kvKeys.delivery(orgId, deliveryId), DeliveryRecord) : null;
  if (record === null) throw notFound("Delivery");
  return record;
}

export async function listDeliveries(deps: Deps, orgId: string, configId: string, query: ListQuery): Promise<Page<DeliveryRecord>> {
  await getWebhookConfiguration(deps, orgId, configId);
  return listPage(deps.kv, kvKeys.deliveryIndexPrefix(orgId, configId), query, (key) =>
    getRecord(deps.kv, kvKeys.delivery(orgId, lastSegment(key)), DeliveryRecord),
  );
}

/** Re-sends a failed delivery with the same webhook-id (its id), as a fresh series of attempts. */
export async function retryDelivery(deps: Deps, orgId: string, deliveryId: string, actor: Actor): Promise<DeliveryRecord> {
  const delivery = await getDelivery(deps, orgId, deliveryId);
  if (delivery.status !== "failed") {
    throw new ApiError("conflict", `Only failed deliveries can be re-sent; this one is ${delivery.status}.`);
  }
  const config = await getWebhookConfiguration(deps, orgId, delivery.webhook_configuration_id);
  if (config.status !== "active") {
    throw new ApiError("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
  }
  const body = await deps.kv.get(kvKeys.eventBody(orgId, delivery.event_id));
  if (body === null) throw new ApiError("conflict", "The event has expired and can no longer be re-sent.");
  const pending: DeliveryRecord = { ...delivery, status: "pending", next_attempt_at: null, updated_at: isoTime(deps.now()) };
  await putRecord(deps.kv, kvKeys.delivery(orgId, deliveryId), DeliveryRecord, pending, ttl);
  await enqueue(deps, [messageFor(pending, body)]);
  await recordChange(deps, orgId, actor, { action: "delivery.retried", resource: { type: "delivery", id: deliveryId } });
  return pending;
}

/**
 * Appends an attempt (if any) and sets the status. Read-modify-write of one KV value: the
 * consumer is the only writer while a delivery is in flight. If the record is not visible yet
 * (KV propagation), it is rebuilt from the message so the outcome is never lost.
 */
export async function recordOutcome(
  deps: Deps,
  message: DeliveryMessage,
  attempt: DeliveryAttempt | null,
  change: Pick<DeliveryRecord, "status" | "next_attempt_at">,
): Promise<DeliveryRecord> {
  const key = kvKeys.delivery(message.organization_id, message.delivery_id);
  const current = (await getRecord(deps.kv, key, DeliveryRecord)) ?? {
    id: message.delivery_id,
    organization_id: message.organization_id,
    webhook_configuration_id: message.webhook_configuration_id,
    event_id: message.event_id,
    event_type: message.event_type,
    status: "pending" as const,
    attempts: [],
    next_attempt_at: null,
    created_at: message.created_at,
    updated_at: message.created_at,
  };
  const updated: DeliveryRecord = {
    ...current,
    ...change,
    attempts: attempt ? [...current.attempts, attempt].slice(-50) : current.attempts,
    updated_at: isoTime(deps.now()),
  };
  await putRecord(deps.kv, key, DeliveryRecord, updated, ttl);
  return updated;
}
