/**
 * Publishing events and the delivery log. Publishing is one transaction in the organization's
 * WebhookObject (the event and one fan-out row per matching active configuration), which then
 * hands each delivery to its endpoint's EndpointObject and keeps handing over whatever did not
 * land; the endpoint's object sends the Queue tickets and keeps sending whatever got lost: nothing
 * a client published is dropped. An Idempotency-Key makes a repeated publish answer the original
 * event. A delivery is found through the organization's fan-out index (which endpoint holds it),
 * then read, or re-sent, at its endpoint's object; a user may re-send any delivery that has no
 * attempt in flight.
 */
import type { Deps } from "../deps";
import { ApiError, invalidInput, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { sha256Hex } from "../lib/crypto";
import { encodeUtf8 } from "../lib/encoding";
import { ID_PATTERN, newEventId } from "../lib/ids";
import { canonicalJson } from "../lib/json";
import { compileSchema, pointerSegments } from "../lib/json-schema";
import { seriesOf } from "../lib/series";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { endpointObject, reach, unwrap, webhookObject } from "../objects/stubs";
import {
  type DeliveryFilter,
  type DeliveryRecord,
  IdempotencyKey,
  type PublishEventInput,
  type PublishedEventView,
  type WebhookConfigurationRecord,
  type WebhookEventBody,
  type WebhookTrafficView,
} from "../schemas/webhooks";
import { getEventType } from "./event-types";

/**
 * Largest event body (the JSON sent to receivers): one event is one SQLite row, well within the
 * object's 2 MB row limit, and receivers rarely accept more.
 */
export const MAX_EVENT_BYTES = 100 * 1024;

/** Standard Webhooks style payload: what receivers get and what the signature covers. */
function eventBody(id: string, type: string, createdAt: string, data: unknown): string {
  const event: WebhookEventBody = { id, type, created_at: createdAt, data };
  return JSON.stringify(event);
}

/** The header's value, validated (draft-ietf-httpapi-idempotency-key-header); a quoted sf-string is unquoted. */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const quoted = /^"(.*)"$/.exec(header);
  const key = quoted ? (quoted[1] ?? "") : header;
  const parsed = IdempotencyKey.safeParse(key);
  if (!parsed.success) {
    throw invalidInput({ label: "request headers", issues: [{ path: ["Idempotency-Key"], text: ` ${parsed.error.issues[0]?.message}` }] });
  }
  return parsed.data;
}

export async function publishEvent(
  deps: Deps,
  orgId: string,
  input: PublishEventInput,
  actor: Actor,
  options: { idempotencyKey?: string | undefined; only?: string } = {},
): Promise<PublishedEventView> {
  const now = deps.now();
  const createdAt = isoTime(now);
  const id = newEventId();
  const body = eventBody(id, input.type, createdAt, input.data);
  const size = encodeUtf8(body).byteLength;
  if (size > MAX_EVENT_BYTES) {
    throw new ApiError("payload_too_large", `The event is ${size} bytes once serialized; the limit is ${MAX_EVENT_BYTES}.`);
  }
  const idempotency =
    options.idempotencyKey === undefined
      ? undefined
      : {
          key: options.idempotencyKey,
          // Channels are part of the request only when given: keys taken before they existed still replay.
          hash: await sha256Hex(
            canonicalJson({ type: input.type, data: input.data, ...(input.channels ? { channels: input.channels } : {}) }),
          ),
        };
  const channels = input.channels ? [...new Set(input.channels)] : undefined;
  const request = {
    event: { id, type: input.type, body, created_at: createdAt, ...(channels ? { channels } : {}) },
    only: options.only,
    idempotency,
  };
  return unwrap(await reach("webhooks", () => webhookObject(deps, orgId).publish(orgId, request, actor, now)));
}

/** `webhook.test` to one configuration, whatever its event filter (409 when it is disabled). */
export async function sendTestEvent(deps: Deps, orgId: string, configId: string, actor: Actor): Promise<PublishedEventView> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const input = { type: "webhook.test", data: { message: "Test event from keyway", webhook_configuration_id: configId } };
  return publishEvent(deps, orgId, input, actor, { only: configId });
}

/** What `sendExampleEvent` sends: a catalog type, and its data (absent: the type's first example). */
export interface ExampleEventInput {
  event_type: string;
  data?: unknown;
}

/**
 * An event of a catalog type to one configuration only, as a test (issue 42): `data` as given, or
 * the type's first example, validated against the type's schema (400 naming the path under
 * `data`), bounded like any publish (413 past MAX_EVENT_BYTES), published with `only` like
 * `webhook.test`, so it is audited `webhook_configuration.tested` (with its type) and goes to this
 * configuration whatever its event filter (409 when it is disabled). The body the receiver gets is
 * an ordinary event of that type: nothing in it says it is a sample. A type outside the catalog
 * is 404; keyway's operational types are refused (403) unless `operational` allows them (the
 * organization's surfaces do; the receivers' portal does not: those events are the organization's).
 */
export async function sendExampleEvent(
  deps: Deps,
  orgId: string,
  configId: string,
  input: ExampleEventInput,
  actor: Actor,
  options: { operational: boolean } = { operational: true },
): Promise<PublishedEventView> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const type = await getEventType(deps, orgId, input.event_type);
  if (type.operational && !options.operational) {
    throw new ApiError("forbidden", `${type.name} is one of keyway's operational event types; only the organization can send it.`);
  }
  const data = input.data === undefined ? type.examples[0] : input.data;
  if (data === undefined) {
    throw invalidInput({ label: "request body", issues: [{ path: ["data"], text: ` is required: ${type.name} has no example to send` }] });
  }
  if (type.schema !== null) {
    const answer = compileSchema(type.schema).validate(data);
    if (!answer.ok) {
      const text = ` ${answer.message} (the schema of ${type.name})`;
      throw invalidInput({ label: "request body", issues: [{ path: ["data", ...pointerSegments(answer.path)], text }] });
    }
  }
  return publishEvent(deps, orgId, { type: type.name, data }, actor, { only: configId });
}

/** Which of the organization's endpoints holds a delivery (404 for another organization's). */
async function endpointOf(deps: Deps, orgId: string, deliveryId: string): Promise<string> {
  if (!ID_PATTERN.test(deliveryId)) throw notFound("Delivery");
  const configId = await reach("webhooks", () => webhookObject(deps, orgId).locate(deliveryId));
  if (configId === null) throw notFound("Delivery");
  return configId;
}

export async function getDelivery(deps: Deps, orgId: string, deliveryId: string): Promise<DeliveryRecord> {
  const configId = await endpointOf(deps, orgId, deliveryId);
  return unwrap(await reach("webhook endpoint", () => endpointObject(deps, configId).delivery(deliveryId)));
}

/**
 * A delivery with the event body its receiver is sent (the manager's delivery page): the body is
 * the event as published, which the organization sent us, so it is theirs to read.
 */
export async function getDeliveryWithBody(
  deps: Deps,
  orgId: string,
  deliveryId: string,
): Promise<{ delivery: DeliveryRecord; body: string }> {
  const configId = await endpointOf(deps, orgId, deliveryId);
  const endpoint = endpointObject(deps, configId);
  const [delivery, body] = await Promise.all([
    reach("webhook endpoint", () => endpoint.delivery(deliveryId)),
    reach("webhook endpoint", () => endpoint.deliveryBody(deliveryId)),
  ]);
  return { delivery: unwrap(delivery), body: unwrap(body) };
}

/**
 * A configuration's deliveries, newest first (its deliveries live with its endpoint), narrowed by
 * `filter`; the cursor continues the same filtered list.
 */
export async function listDeliveries(
  deps: Deps,
  orgId: string,
  configId: string,
  page: PageRequest,
  filter: DeliveryFilter = {},
): Promise<Page<DeliveryRecord>> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const [config, deliveries] = await Promise.all([
    reach("webhooks", () => webhookObject(deps, orgId).configuration(configId)),
    reach("webhook endpoint", () => endpointObject(deps, configId).listDeliveries(page, filter)),
  ]);
  unwrap(config);
  return unwrap(deliveries);
}

/** A configuration's attempts over time, with the last 24 hours' success rate and latency. */
export async function webhookTraffic(deps: Deps, orgId: string, configId: string): Promise<WebhookTrafficView> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const now = deps.now();
  const [config, rows] = await Promise.all([
    reach("webhooks", () => webhookObject(deps, orgId).configuration(configId)),
    reach("webhook endpoint", () => endpointObject(deps, configId).hourly(now)),
  ]);
  unwrap(config);
  const { hours, days } = seriesOf(rows, ["succeeded", "failed", "latency_ms_sum"] as const, now);
  const bucket = ({ latency_ms_sum, ...b }: (typeof hours)[number]) => ({
    ...b,
    latency_ms_avg: mean(latency_ms_sum, b.succeeded + b.failed),
  });
  const total = hours.reduce((t, h) => ({ s: t.s + h.succeeded, f: t.f + h.failed, l: t.l + h.latency_ms_sum }), { s: 0, f: 0, l: 0 });
  return {
    last_24h: {
      succeeded: total.s,
      failed: total.f,
      success_rate: total.s + total.f === 0 ? null : Math.round((total.s / (total.s + total.f)) * 1000) / 1000,
      latency_ms_avg: mean(total.l, total.s + total.f),
    },
    hours: hours.map(bucket),
    days: days.map(bucket),
  };
}

const mean = (sum: number, n: number): number | null => (n === 0 ? null : Math.round(sum / n));

/**
 * Re-sends a delivery with the same webhook-id: a finished one (`delivered` or `failed`) as a new
 * series of attempts, an open one (stuck or waiting for its next retry) at once. 409 while an
 * attempt is in flight or when the configuration is disabled or deleted. For an ordered endpoint
 * the delivery keeps its place in publish order: it is the next one sent (docs/webhooks.md).
 */
export async function retryDelivery(deps: Deps, orgId: string, deliveryId: string, actor: Actor): Promise<DeliveryRecord> {
  const configId = await endpointOf(deps, orgId, deliveryId);
  const now = deps.now();
  return unwrap(await reach("webhook endpoint", () => endpointObject(deps, configId).resend(deliveryId, actor, now)));
}

/**
 * Whether `retryDelivery` would accept a re-send now, for surfaces that offer one (the manager):
 * the configuration is active and no attempt is in flight under a live lease. An attempt in flight
 * past its lease does not stand in the way: the re-send concludes it first, as the alarm would.
 * The object's `resend` decides, on the same lease it reports as `in_flight_until`.
 */
export function canResend(
  deps: Deps,
  config: Pick<WebhookConfigurationRecord, "status" | "delivery">,
  delivery: Pick<DeliveryRecord, "in_flight_until">,
): boolean {
  // A polling configuration sends nothing: its receiver reads again from an earlier cursor (issue 45).
  return (
    config.status === "active" &&
    config.delivery !== "polling" &&
    (delivery.in_flight_until === null || Date.parse(delivery.in_flight_until) <= deps.now())
  );
}
