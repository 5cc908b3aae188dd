/**
 * What receivers are offered (issue 30; product brief, "Webhook receivers' way in"): the event-type
 * catalog (a JSON Schema for each type's `data`, with examples), the organization's webhook
 * settings, portal links and sessions, and recoveries after an outage. Inputs, the views
 * returned, and the records the objects answer. A schema is hostile input: its bounds are checked
 * when it is saved (webhooks/event-schema.ts), here only its outer shape.
 */
import * as z from "zod";
import { publicNames, Timestamp } from "./common";
import { EventType } from "./webhooks";

/** Catalog names have a group and an event (`group.event`, Svix's convention), at least one dot. */
export const EventTypeName = EventType.refine((s) => s.includes("."), {
  error: "must name a group and an event, e.g. order.created",
});

/**
 * The names keyway publishes itself (operational webhooks): in every catalog, never created,
 * changed or deleted by an organization, and never part of "every event" (a configuration receives
 * them only when its `events` names them).
 */
export const OPERATIONAL_EVENT_TYPES = [
  "webhook.endpoint.disabled",
  "webhook.endpoint.paused",
  "webhook.endpoint.recovered",
  "webhook.delivery.exhausted",
] as const;
export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];
/** The prefix reserved for keyway's own events (and `webhook.test`). */
export const RESERVED_EVENT_PREFIX = "webhook.";

/** A JSON Schema (draft 2020-12) as a JSON object; its size, depth, references and patterns are checked when saved. */
const JsonSchemaInput = z
  .record(z.string(), z.unknown())
  .describe(
    "A JSON Schema (draft 2020-12) for the event's `data`. At most 64 KiB serialized and 32 levels deep; `$ref` only within the schema (`#...`: nothing is fetched); a `pattern` with nested quantifiers is refused.",
  );
const Description = z.string().trim().max(1000, { error: "must be at most 1000 characters" });
const Examples = z
  .array(z.unknown())
  .max(10, { error: "must have at most 10 examples" })
  .describe("Example `data` payloads, each validated against `schema` when saved.");

export const CreateEventTypeInput = z.strictObject({
  name: EventTypeName,
  description: Description.optional(),
  schema: JsonSchemaInput.optional(),
  examples: Examples.optional(),
  deprecated: z.boolean().optional(),
});
export type CreateEventTypeInput = z.output<typeof CreateEventTypeInput>;

export const UpdateEventTypeInput = z.strictObject({
  description: Description.nullable().optional(),
  schema: JsonSchemaInput.nullable().optional().describe("`null` removes the schema: any `data` is then accepted."),
  examples: Examples.optional(),
  deprecated: z.boolean().optional(),
});
export type UpdateEventTypeInput = z.output<typeof UpdateEventTypeInput>;

export const EventTypeView = z.object({
  name: z.string(),
  description: z.string().nullable(),
  schema: z.record(z.string(), z.unknown()).nullable().describe("The JSON Schema of `data`; null when any `data` is accepted."),
  examples: z.array(z.unknown()),
  deprecated: z.boolean(),
  operational: z.boolean().describe("Published by keyway about the webhooks themselves; read-only."),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type EventTypeView = z.output<typeof EventTypeView>;

/** The portal's logo as stored: its bytes stay in keyway and are served by it to portal sessions only. */
export const PortalLogoView = z.object({
  sha256: z.string().describe("SHA-256, hex."),
  content_type: z.enum(["image/png", "image/jpeg", "image/webp"]),
  size_bytes: z.number().int(),
  updated_at: Timestamp,
});
export type PortalLogoView = z.output<typeof PortalLogoView>;

/** The organization's webhook settings (one record per organization, in its WebhookObject). */
export const WebhookSettingsView = z.object({
  refuse_unknown_event_types: z
    .boolean()
    .describe("When true, publishing an event whose type is not in the catalog is refused (400); when false (the default), it is sent."),
  portal_frame_origins: z
    .array(z.string())
    .describe("Origins that may show the portal in an iframe (CSP `frame-ancestors`); none by default."),
  portal_display_name: z.string().nullable().describe("The portal's name; null for none."),
  portal_accent_color: z.string().nullable().describe("The portal's accent (`#rrggbb`) as set; null for keyway's."),
  portal_logo: PortalLogoView.nullable().describe("The portal's logo as stored; null for none."),
});
export type WebhookSettingsView = z.output<typeof WebhookSettingsView>;

/** An origin the portal may be framed by: `https://host[:port]`, nothing after it. */
const FrameOrigin = z
  .string()
  .max(300)
  .regex(/^https:\/\/[a-z0-9.-]+(:\d{1,5})?$/, { error: "must be an https origin such as https://dashboard.example.com" });

/** A display name: 1 to 80 characters once trimmed, printable (no control characters). */
export const PORTAL_DISPLAY_NAME_MAX = 80;
const DisplayName = z
  .string()
  .trim()
  .min(1, { error: "must not be empty (send null to remove it)" })
  .max(PORTAL_DISPLAY_NAME_MAX, { error: `must be at most ${PORTAL_DISPLAY_NAME_MAX} characters` })
  .regex(/^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+$/u, { error: "must be printable text (no control or format characters)" });
/** `#rrggbb`; upper-case digits are accepted and kept lower-case (objects/webhooks/event-types.ts). */
const AccentColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, { error: "must be a colour as #rrggbb, such as #0b57d0" });
/** Fetched once when saved; https only (the SSRF guard refuses private and internal addresses). */
const LogoUrl = z
  .string()
  .max(2048, { error: "must be at most 2048 characters" })
  .regex(/^https:\/\//i, { error: "must be an https URL" });

export const UpdateWebhookSettingsInput = z.strictObject({
  refuse_unknown_event_types: z.boolean().optional(),
  portal_frame_origins: z.array(FrameOrigin).max(10, { error: "must list at most 10 origins" }).optional(),
  portal_display_name: DisplayName.nullable().optional().describe("The name the portal shows (1 to 80 characters); null removes it."),
  portal_accent_color: AccentColor.nullable()
    .optional()
    .describe("`#rrggbb`, adjusted per scheme for AA contrast; null restores keyway's."),
  portal_logo_url: LogoUrl.nullable()
    .optional()
    .describe("https; a PNG, JPEG or WebP of at most 64 KiB, fetched once now; null removes the logo."),
});
export type UpdateWebhookSettingsInput = z.output<typeof UpdateWebhookSettingsInput>;

/** A portal link's lifetime: minutes (product brief: "single-use, minutes long"). */
export const PORTAL_LINK_DEFAULT_SECONDS = 600;
export const PORTAL_LINK_MAX_SECONDS = 3600;
/** A portal session's lifetime from its opening; it ends earlier when the organization ends it. */
export const PORTAL_SESSION_SECONDS = 8 * 3600;

export const CreatePortalLinkInput = z.strictObject({
  expires_in: z
    .number()
    .int({ error: "must be a whole number of seconds" })
    .min(60, { error: "must be at least 60" })
    .max(PORTAL_LINK_MAX_SECONDS, { error: `must be at most ${PORTAL_LINK_MAX_SECONDS}` })
    .optional()
    .describe(`Seconds the link may be opened in (default ${PORTAL_LINK_DEFAULT_SECONDS}); it opens once.`),
});
export type CreatePortalLinkInput = z.output<typeof CreatePortalLinkInput>;

export const PortalLinkView = z.object({
  url: z.string().describe("Open once, within `expires_at`: it starts a portal session for this configuration alone. Shown only here."),
  webhook_configuration_id: z.string(),
  expires_at: Timestamp,
});
export type PortalLinkView = z.output<typeof PortalLinkView>;

export const PortalSessionView = z.object({
  id: z.string(),
  webhook_configuration_id: z.string(),
  status: z.enum(["active", "ended", "expired"]),
  created_at: Timestamp,
  last_seen_at: Timestamp,
  expires_at: Timestamp,
  ended_at: Timestamp.nullable(),
});
export type PortalSessionView = z.output<typeof PortalSessionView>;

export const RecoverInput = z
  .strictObject({
    since: Timestamp.describe("Deliveries created at or after this moment."),
    until: Timestamp.optional().describe("Deliveries created before this moment (default: now)."),
  })
  .refine((r) => r.until === undefined || r.until > r.since, { error: "until must be after since", path: ["until"] });
export type RecoverInput = z.output<typeof RecoverInput>;

export const RecoveryView = z.object({
  id: z.string(),
  webhook_configuration_id: z.string(),
  since: Timestamp,
  until: Timestamp,
  status: z.enum(["running", "done", "stopped"]).describe("`stopped` when the configuration was disabled or deleted before the end."),
  found: z.number().int().describe("Failed deliveries of the window when the recovery started."),
  resent: z.number().int().describe("Deliveries re-sent so far (each once, whatever other recoveries overlap)."),
  skipped: z
    .number()
    .int()
    .describe("Deliveries of the window no longer failed when their turn came (re-sent by another recovery or by hand)."),
  created_at: Timestamp,
  finished_at: Timestamp.nullable(),
});
export type RecoveryView = z.output<typeof RecoveryView>;

publicNames.add(CreateEventTypeInput, { name: "CreateEventTypeInput" });
publicNames.add(UpdateEventTypeInput, { name: "UpdateEventTypeInput" });
publicNames.add(EventTypeView, { name: "EventTypeView" });
publicNames.add(PortalLogoView, { name: "PortalLogoView" });
publicNames.add(WebhookSettingsView, { name: "WebhookSettingsView" });
publicNames.add(UpdateWebhookSettingsInput, { name: "UpdateWebhookSettingsInput" });
publicNames.add(CreatePortalLinkInput, { name: "CreatePortalLinkInput" });
publicNames.add(PortalLinkView, { name: "PortalLinkView" });
publicNames.add(PortalSessionView, { name: "PortalSessionView" });
publicNames.add(RecoverInput, { name: "RecoverInput" });
publicNames.add(RecoveryView, { name: "RecoveryView" });
