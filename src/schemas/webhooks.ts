/**
 * Webhook configurations, events and deliveries (spec 2.4, 2.5, 4.3, 6; product brief): API
 * inputs, the views returned, the records the organization's WebhookObject returns, and the
 * Queue message. Receivers' client secrets and our signing secrets are stored sealed
 * (lib/aead.ts) and never returned after creation.
 */
import * as z from "zod";
import { DisplayName, publicNames, Timestamp } from "./common";

/** Event types: dot-separated lower-case words, e.g. `order.created` (Standard Webhooks style). */
export const EventType = z
  .string()
  .max(100, { error: "must be at most 100 characters" })
  .regex(/^[a-z0-9_]+(\.[a-z0-9_]+)*$/, { error: "must be dot-separated lower-case words, e.g. order.created" });

const TargetUrl = z.string().min(1, { error: "must not be empty" }).max(2048, { error: "must be at most 2048 characters" });
const ClientSecret = z.string().min(1, { error: "must not be empty" }).max(1024, { error: "must be at most 1024 characters" });
const ClientId = z.string().min(1, { error: "must not be empty" }).max(256, { error: "must be at most 256 characters" });
const Events = z.array(EventType).min(1, { error: "must not be empty (omit it to receive every event)" }).max(50);

export const CreateWebhookConfigurationInput = z.strictObject({
  url: TargetUrl,
  events: Events.optional(),
  description: DisplayName.optional(),
  oauth: z.strictObject({ token_url: TargetUrl, client_id: ClientId, client_secret: ClientSecret }),
  /** Opt-in: reuse the receiver's token until 60 s before its expires_in. */
  token_cache: z.boolean().optional(),
});
export type CreateWebhookConfigurationInput = z.output<typeof CreateWebhookConfigurationInput>;

export const UpdateWebhookConfigurationInput = z.strictObject({
  url: TargetUrl.optional(),
  events: Events.nullable().optional(),
  description: DisplayName.nullable().optional(),
  oauth: z
    .strictObject({ token_url: TargetUrl.optional(), client_id: ClientId.optional(), client_secret: ClientSecret.optional() })
    .optional(),
  token_cache: z.boolean().optional(),
  /** Re-enable a configuration disabled by a 410, or pause one. */
  status: z.enum(["active", "disabled"]).optional(),
});
export type UpdateWebhookConfigurationInput = z.output<typeof UpdateWebhookConfigurationInput>;

export const PublishEventInput = z.strictObject({
  type: EventType,
  data: z.unknown().refine((d) => d !== undefined, { error: "is required" }),
});
export type PublishEventInput = z.output<typeof PublishEventInput>;

export const Sealed = z.object({ kid: z.string(), iv: z.string(), ct: z.string() });

export const WebhookConfigurationRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  url: z.string(),
  events: z.array(z.string()).nullable(),
  description: z.string().nullable(),
  oauth: z.object({ token_url: z.string(), client_id: z.string(), client_secret: Sealed }),
  token_cache: z.boolean(),
  /** Newest first; an older one stays valid until its expires_at (rotation overlap). */
  signing_secrets: z.array(z.object({ secret: Sealed, created_at: Timestamp, expires_at: Timestamp.nullable() })).min(1),
  status: z.enum(["active", "disabled"]),
  disabled_reason: z.string().nullable(),
  /** Health: since when every attempt has failed (null after a success or a re-enable). */
  failing_since: Timestamp.nullable(),
  last_delivered_at: Timestamp.nullable(),
  /** +1 per change; a receiver's 410 disables only the version it was sent with. */
  version: z.number().int(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookConfigurationRecord = z.output<typeof WebhookConfigurationRecord>;

export const WebhookConfigurationView = z.object({
  id: z.string(),
  organization_id: z.string(),
  url: z.string(),
  events: z.array(z.string()).nullable(),
  description: z.string().nullable(),
  oauth: z.object({ token_url: z.string(), client_id: z.string() }),
  token_cache: z.boolean(),
  status: z.enum(["active", "disabled"]),
  disabled_reason: z.string().nullable(),
  /** Since when every delivery attempt has failed; null while deliveries succeed. */
  failing_since: Timestamp.nullable(),
  last_delivered_at: Timestamp.nullable(),
  signing_secret_rotated_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookConfigurationView = z.output<typeof WebhookConfigurationView>;

export const CreatedWebhookConfigurationView = WebhookConfigurationView.extend({ signing_secret: z.string() });

/** After a rotation: the new secret (shown once) and when the previous one stops signing. */
export const RotatedWebhookConfigurationView = CreatedWebhookConfigurationView.extend({ previous_secret_expires_at: Timestamp });

export const DeliveryAttempt = z.object({
  /** 1, 2, 3 ... across the delivery's whole life: numbers continue after a re-send. */
  number: z.number().int(),
  /** 1 for the first series of attempts, +1 for each re-send. */
  series: z.number().int(),
  at: Timestamp,
  /** Which request failed: the receiver's token endpoint or its webhook URL. */
  step: z.enum(["configuration", "token", "webhook"]),
  /** HTTP status of the failing (or succeeding) response, null when there was none. */
  http_status: z.number().int().nullable(),
  latency_ms: z.number().int(),
  /** `in_flight` while the attempt runs; then what it led to. */
  outcome: z.enum(["in_flight", "delivered", "retry", "failed"]),
  /**
   * What went wrong, in keyway's words: the step, the status, and at most the OAuth `error` code
   * the receiver sent (RFC 6749 5.2 grammar, 64 characters). Nothing else a receiver says is kept.
   */
  error: z.string().nullable(),
});
export type DeliveryAttempt = z.output<typeof DeliveryAttempt>;

export const DeliveryStatus = z.enum(["pending", "retrying", "delivered", "failed"]);

export const DeliveryRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  webhook_configuration_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  status: DeliveryStatus,
  attempts: z.array(DeliveryAttempt),
  next_attempt_at: Timestamp.nullable(),
  /**
   * While an attempt is in flight, when its lease ends (its deadline plus a margin): past this
   * time with no outcome reported, the attempt counts as abandoned and a re-send is accepted.
   */
  in_flight_until: Timestamp.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type DeliveryRecord = z.output<typeof DeliveryRecord>;

/** Deliveries hold no secrets: the view is the record. */
export const DeliveryView = DeliveryRecord;

export const PublishedEventView = z.object({
  id: z.string(),
  type: z.string(),
  created_at: Timestamp,
  deliveries: z.array(z.object({ id: z.string(), webhook_configuration_id: z.string(), status: DeliveryStatus })),
  /** True when an Idempotency-Key answered an earlier event: nothing new was published. */
  replayed: z.boolean(),
});
export type PublishedEventView = z.output<typeof PublishedEventView>;

/**
 * One Queue message per attempt due: a ticket naming the delivery, its series and the attempt
 * number it is for. Everything else (the body, the configuration, its sealed secrets) is read
 * from the organization's WebhookObject when the attempt begins, so a message holds no secret
 * and a late or duplicate one is recognised and dropped.
 */
export const DeliveryMessage = z.object({
  v: z.literal(2),
  organization_id: z.string(),
  delivery_id: z.string(),
  series: z.number().int().min(1),
  attempt: z.number().int().min(1),
});
export type DeliveryMessage = z.output<typeof DeliveryMessage>;

/** What `Idempotency-Key` may hold: printable ASCII, as the IETF draft and Stripe use it. */
export const IdempotencyKey = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(255, { error: "must be at most 255 characters" })
  .regex(/^[\x20-\x7e]+$/, { error: "must be printable ASCII" });

// Public names in the API description (http/openapi.ts).
publicNames.add(CreateWebhookConfigurationInput, { name: "CreateWebhookConfigurationInput" });
publicNames.add(UpdateWebhookConfigurationInput, { name: "UpdateWebhookConfigurationInput" });
publicNames.add(PublishEventInput, { name: "PublishEventInput" });
publicNames.add(WebhookConfigurationView, { name: "WebhookConfigurationView" });
publicNames.add(CreatedWebhookConfigurationView, { name: "CreatedWebhookConfigurationView" });
publicNames.add(RotatedWebhookConfigurationView, { name: "RotatedWebhookConfigurationView" });
publicNames.add(PublishedEventView, { name: "PublishedEventView" });
publicNames.add(DeliveryView, { name: "DeliveryView" });

/*
 * What keyway sends to receivers (the OpenAPI document's `webhooks`): the event body, built by
 * webhooks/deliveries.ts `eventBody`, and the token request of webhooks/outbound.ts with the parts
 * of the receiver's answer it reads.
 */

/** The event keyway POSTs to a receiver (webhooks/deliveries.ts `eventBody`). */
export const WebhookEvent = z.object({
  id: z.string().describe("Event id (`evt_...`); one event fans out to one delivery per matching configuration."),
  type: EventType,
  created_at: Timestamp.describe("When the event was published."),
  data: z.unknown().describe("The `data` the client published, as it was published."),
});
/** The client-credentials grant keyway sends to a receiver's token_url (RFC 6749 4.4.2, client_secret_post). */
export const ReceiverTokenRequest = z.object({
  client_id: z.string(),
  client_secret: z.string(),
  grant_type: z.literal("client_credentials"),
});
/** What keyway reads of the receiver's token answer: the rest is ignored. */
export const ReceiverTokenResponse = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z
    .number()
    .positive()
    .optional()
    .describe("Used only with `token_cache: true`: the token is reused until 60 s before it expires."),
});
/** A failed token answer (spec 2.4): only `error` (RFC 6749 5.2 grammar, 40 characters) and `message` (120) reach the delivery log. */
export const ReceiverTokenError = z.looseObject({
  error: z.string().optional(),
  message: z.string().optional(),
  description: z.string().optional(),
});
publicNames.add(WebhookEvent, { name: "WebhookEvent" });
publicNames.add(ReceiverTokenRequest, { name: "ReceiverTokenRequest" });
publicNames.add(ReceiverTokenResponse, { name: "ReceiverTokenResponse" });
publicNames.add(ReceiverTokenError, { name: "ReceiverTokenError" });
export type WebhookEventBody = z.output<typeof WebhookEvent>;
export type ReceiverTokenRequestBody = z.output<typeof ReceiverTokenRequest>;
