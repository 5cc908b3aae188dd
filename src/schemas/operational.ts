/**
 * keyway's operational event types (issue 30; product brief, "Operational events"): the JSON
 * Schema (draft 2020-12) of each one's `data`, its description and an example, as every catalog
 * lists them and as objects/endpoints/notices.ts writes them. One place for their shape: the
 * catalog document, the event-type list and the endpoint's notices all read it, and a test holds
 * the notices' data to these schemas.
 */
import type { OperationalEventType } from "./receivers";

type JsonSchema = Record<string, unknown>;

const timestamp = { type: "string", format: "date-time" } as const;
const configurationId = { type: "string", description: "The webhook configuration (endpoint) the event is about." } as const;
const url = { type: "string", description: "The endpoint's URL (its query string elided)." } as const;

const endpointEvent = (properties: Record<string, unknown>, required: string[]): JsonSchema => ({
  type: "object",
  required: ["webhook_configuration_id", "url", "at", ...required],
  properties: { webhook_configuration_id: configurationId, url, at: timestamp, ...properties },
  additionalProperties: false,
});

export const OPERATIONAL_SCHEMAS: Record<
  OperationalEventType,
  { description: string; schema: JsonSchema; example: Record<string, unknown> }
> = {
  "webhook.endpoint.disabled": {
    description:
      "An endpoint was disabled: its URL answered 410 Gone, a user disabled it, or every attempt failed for the disable period. Sent once per disable.",
    schema: endpointEvent({ reason: { type: "string" } }, ["reason"]),
    example: {
      webhook_configuration_id: "whk_xevbgd907xwyy2z907sxd2vm7b",
      url: "https://receiver.example/webhooks",
      reason: "the webhook URL answered 410 Gone",
      at: "2026-06-01T12:00:00.000Z",
    },
  },
  "webhook.endpoint.paused": {
    description:
      "An endpoint was paused: its circuit opened after repeated failures, or its receiver asked (429 or 503 with Retry-After) for a pause of 5 minutes or more. Sent once until the endpoint recovers.",
    schema: endpointEvent(
      {
        cause: { enum: ["circuit_open", "retry_after"] },
        reason: { type: "string" },
        paused_until: { anyOf: [timestamp, { type: "null" }] },
      },
      ["cause", "reason", "paused_until"],
    ),
    example: {
      webhook_configuration_id: "whk_xevbgd907xwyy2z907sxd2vm7b",
      url: "https://receiver.example/webhooks",
      cause: "circuit_open",
      reason: "circuit open after 5 failed attempts in a row",
      paused_until: "2026-06-01T12:00:30.000Z",
      at: "2026-06-01T12:00:00.000Z",
    },
  },
  "webhook.endpoint.recovered": {
    description: "A delivery to an endpoint succeeded after it was announced paused or disabled.",
    schema: endpointEvent({ previously: { enum: ["paused", "disabled"] } }, ["previously"]),
    example: {
      webhook_configuration_id: "whk_xevbgd907xwyy2z907sxd2vm7b",
      url: "https://receiver.example/webhooks",
      previously: "paused",
      at: "2026-06-01T12:10:00.000Z",
    },
  },
  "webhook.delivery.exhausted": {
    description:
      "Every attempt of a delivery failed and no retry is left (a delivery of an operational event never produces one). Re-send it, or recover the window.",
    schema: {
      type: "object",
      required: ["webhook_configuration_id", "delivery_id", "event_id", "event_type", "attempts", "last_error", "at"],
      properties: {
        webhook_configuration_id: configurationId,
        delivery_id: { type: "string", description: "The delivery (its `webhook-id`)." },
        event_id: { type: "string" },
        event_type: { type: "string" },
        attempts: { type: "integer", minimum: 1 },
        last_error: { type: ["string", "null"] },
        at: timestamp,
      },
      additionalProperties: false,
    },
    example: {
      webhook_configuration_id: "whk_xevbgd907xwyy2z907sxd2vm7b",
      delivery_id: "msg_age6xqxzvpe76kqhjkas8kqhe0",
      event_id: "evt_50vvhbyxb086rgxkmsp0wjsmfa",
      event_type: "order.created",
      attempts: 6,
      last_error: "webhook URL answered 500; retries exhausted",
      at: "2026-06-02T12:00:00.000Z",
    },
  },
};
