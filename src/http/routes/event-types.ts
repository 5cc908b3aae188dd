/**
 * The event-type catalog and the organization's webhook settings over REST (issue 30; product
 * brief, "Webhook receivers' way in"). Scoped to the access token's organization; handlers only
 * parse input and shape output: the rules live in webhooks/event-types.ts and the organization's
 * WebhookObject.
 */
import type { Context } from "hono";
import * as z from "zod";
import { publicBaseUrl } from "../../config";
import { depsFromEnv } from "../../deps";
import { notFound } from "../../errors";
import {
  CreateEventTypeInput,
  EventTypeView,
  UpdateEventTypeInput,
  UpdateWebhookSettingsInput,
  WebhookSettingsView,
} from "../../schemas/receivers";
import { AssertionKeyRotationView, Jwks } from "../../schemas/webhooks";
import {
  createEventType,
  deleteEventType,
  eventCatalog,
  getEventType,
  listEventTypes,
  updateEventType,
  updateWebhookSettings,
  getWebhookSettings as webhookSettings,
} from "../../webhooks/event-types";
import { receiverJwks, rotateAssertionKey } from "../../webhooks/receiver-keys";
import type { AppEnv } from "../context";
import { ASSERTION_KEY_ROTATION, EVENT_INPUT, T0, T1 } from "../examples";
import { envelopeRoute, listRoute, param, type Route, rawRoute } from "../route";

const TYPES = "/v1/event-types";
/** A schema (at most 64 KiB) and its examples (at most 64 KiB together), with room for the rest. */
const MAX_EVENT_TYPE_BYTES = 136 * 1024;
const TYPE_PATH = `${TYPES}/{name}`;
const tag = "Event types";
const deps = (c: Context<AppEnv>) => c.get("deps");
const actor = (c: Context<AppEnv>) => c.get("actor");
/**
 * The organization a request acts in: the access token's, or on the operator's mirror of these
 * routes (operatorMirror in routes/webhooks.ts) the `{org}` of the path.
 */
const orgOf = (c: Context<AppEnv>) => c.req.param("org") ?? c.get("principal").organizationId;

const ORDER_SCHEMA = {
  type: "object",
  required: ["order_id", "total"],
  properties: { order_id: { type: "string" }, total: { type: "number", minimum: 0 } },
  additionalProperties: false,
};
const TYPE_INPUT = {
  name: EVENT_INPUT.type,
  description: "An order was placed.",
  schema: ORDER_SCHEMA,
  examples: [EVENT_INPUT.data],
};
/** The settings of an organization that changed none. */
const SETTINGS_DEFAULT = {
  refuse_unknown_event_types: false,
  portal_frame_origins: [],
  portal_display_name: null,
  portal_accent_color: null,
  portal_logo: null,
};

const TYPE_VIEW = {
  ...TYPE_INPUT,
  deprecated: false,
  operational: false,
  created_at: T0,
  updated_at: T0,
};

/** The catalog document's outer shape (webhooks/catalog.ts builds the rest). */
const CatalogDocument = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  webhooks: z.record(z.string(), z.unknown()),
});

export const eventTypeRoutes: Route[] = [
  envelopeRoute({
    method: "POST",
    path: TYPES,
    operationId: "createEventType",
    scope: "webhooks:write",
    summary: "Create an event type",
    description:
      "A name `group.event`, a description, a JSON Schema (draft 2020-12) for the event's `data` and examples (each validated against the schema; 400 naming the failing path). The schema is bounded: at most 64 KiB and 32 levels deep, `$ref` only within itself (nothing is fetched), no `pattern` that could backtrack without end. Once a type has a schema, `POST /v1/events` of that type validates `data` (400 naming the failing path). Names starting `webhook.` are keyway's own (409). At most 250 types (409 beyond).",
    tag,
    auth: "client",
    status: 201,
    body: { schema: CreateEventTypeInput, example: TYPE_INPUT, maxBytes: MAX_EVENT_TYPE_BYTES },
    response: { schema: EventTypeView, example: TYPE_VIEW },
    errors: [409],
    handle: (c, input) => createEventType(deps(c), orgOf(c), input, actor(c)),
    location: (data) => `${TYPES}/${data.name}`,
  }),
  listRoute({
    method: "GET",
    path: TYPES,
    operationId: "listEventTypes",
    scope: "webhooks:read",
    summary: "List the event catalog",
    description: "By name: the organization's types and keyway's operational ones (`operational: true`, read-only).",
    tag,
    auth: "client",
    response: { schema: EventTypeView, example: [TYPE_VIEW] },
    handle: (c, query) => listEventTypes(deps(c), orgOf(c), query),
  }),
  rawRoute({
    method: "GET",
    path: "/v1/event-catalog",
    operationId: "getEventCatalog",
    scope: "webhooks:read",
    summary: "The event catalog as an OpenAPI 3.1 document",
    description:
      "Not enveloped: an OpenAPI 3.1 document whose `webhooks` object has one entry per event type (its payload schema and examples, the Standard Webhooks headers, and the receiver token request that precedes each webhook), for a receiver's code generators (openapi-typescript and the like).",
    tag,
    auth: "client",
    response: {
      schema: CatalogDocument,
      example: { openapi: "3.1.0", info: { title: "Acme webhooks", version: T1 }, webhooks: { "order.created": {} } },
    },
    wire: "json",
    reply: async (c) => c.json(await eventCatalog(deps(c), orgOf(c), publicBaseUrl(c.env).url ?? new URL(c.req.url).origin)),
  }),
  envelopeRoute({
    method: "GET",
    path: TYPE_PATH,
    operationId: "getEventType",
    scope: "webhooks:read",
    summary: "Get an event type",
    tag,
    auth: "client",
    response: { schema: EventTypeView, example: TYPE_VIEW },
    handle: (c) => getEventType(deps(c), orgOf(c), param(c, "name")),
  }),
  envelopeRoute({
    method: "PATCH",
    path: TYPE_PATH,
    operationId: "updateEventType",
    scope: "webhooks:write",
    summary: "Update an event type",
    description:
      "Absent fields are unchanged; `schema: null` removes the schema. The examples (the new ones, or those kept) are validated against the schema that results. keyway's operational types cannot be changed (409).",
    tag,
    auth: "client",
    body: { schema: UpdateEventTypeInput, example: { deprecated: true }, maxBytes: MAX_EVENT_TYPE_BYTES },
    response: { schema: EventTypeView, example: { ...TYPE_VIEW, deprecated: true, updated_at: T1 } },
    errors: [409],
    handle: (c, input) => updateEventType(deps(c), orgOf(c), param(c, "name"), input, actor(c)),
  }),
  envelopeRoute({
    method: "DELETE",
    path: TYPE_PATH,
    operationId: "deleteEventType",
    scope: "webhooks:write",
    summary: "Delete an event type",
    description:
      "Publishes of the type are no longer validated (and are refused when the settings refuse unknown types); configurations subscribed to it keep their subscription. Prefer `deprecated: true` while receivers still expect it.",
    tag,
    auth: "client",
    response: { schema: EventTypeView, example: TYPE_VIEW },
    errors: [409],
    handle: (c) => deleteEventType(deps(c), orgOf(c), param(c, "name"), actor(c)),
  }),
  envelopeRoute({
    method: "GET",
    path: "/v1/webhook-settings",
    operationId: "getWebhookSettings",
    scope: "webhooks:read",
    summary: "Get the organization's webhook settings",
    tag,
    auth: "client",
    response: { schema: WebhookSettingsView, example: SETTINGS_DEFAULT },
    handle: (c) => webhookSettings(deps(c), orgOf(c)),
  }),
  envelopeRoute({
    method: "PATCH",
    path: "/v1/webhook-settings",
    operationId: "updateWebhookSettings",
    scope: "webhooks:write",
    summary: "Update the organization's webhook settings",
    description:
      "`refuse_unknown_event_types: true` makes `POST /v1/events` refuse (400) a type that is not in the catalog. `portal_frame_origins` lists the origins that may show the receivers' portal in an iframe (CSP `frame-ancestors`); none by default. `portal_display_name`, `portal_accent_color` (adjusted per scheme for AA contrast) and `portal_logo_url` (https, fetched once now through the SSRF guard: PNG, JPEG or WebP, at most 64 KiB; keyway serves its copy) brand the portal; null removes each.",
    tag,
    auth: "client",
    body: {
      schema: UpdateWebhookSettingsInput,
      example: {
        refuse_unknown_event_types: true,
        portal_frame_origins: ["https://dashboard.example.com"],
        portal_display_name: "Acme",
        portal_accent_color: "#e4002b",
        portal_logo_url: "https://acme.example/logo.png",
      },
    },
    response: {
      schema: WebhookSettingsView,
      example: {
        refuse_unknown_event_types: true,
        portal_frame_origins: ["https://dashboard.example.com"],
        portal_display_name: "Acme",
        portal_accent_color: "#e4002b",
        portal_logo: { sha256: "9f86d0...", content_type: "image/png", size_bytes: 4210, updated_at: "2025-03-01T12:00:00.000Z" },
      },
    },
    handle: (c, input) => updateWebhookSettings(deps(c), orgOf(c), input, actor(c)),
  }),
  envelopeRoute({
    method: "POST",
    path: "/v1/webhook-settings/rotate-assertion-key",
    operationId: "rotateAssertionKey",
    scope: "webhooks:write",
    summary: "Rotate the key that signs private_key_jwt assertions",
    description:
      "The organization-wide assertion key (ES256), which signs only for private_key_jwt configurations created before each configuration had its own key and not moved yet (`POST /v1/webhook-configurations/{id}/rotate-assertion-key` moves one). The new key is published at `/v1/receiver-jwks/{organization_id}` at once and signs from `activates_at` (10 minutes later: a receiver's server that cached the JWKS, which is cacheable for 5 minutes, has fetched it again by then); the previous one stays published until `previous_expires_at` (24 h after that). Private keys are never shown.",
    tag,
    auth: "client",
    response: {
      schema: AssertionKeyRotationView,
      example: ASSERTION_KEY_ROTATION,
    },
    handle: (c) => rotateAssertionKey(deps(c), orgOf(c), actor(c)),
  }),
];

/**
 * A key set's answer (RFC 7517 5, `application/jwk-set+json`, cacheable 5 minutes); 404 when it has
 * no key. Public routes are mounted before the API's middleware: this makes its own deps.
 */
async function jwksAnswer(c: Context<AppEnv>, orgId: string, configId?: string): Promise<Response> {
  const jwks = await receiverJwks(depsFromEnv(c.env, Date.now), orgId, configId);
  if (jwks.keys.length === 0) throw notFound("Key set");
  return c.json(jwks, 200, { "Cache-Control": "public, max-age=300", "Content-Type": "application/jwk-set+json" });
}

/**
 * The organization's assertion keys as a JWKS (RFC 7517 5), public: what a receiver's OAuth server
 * registers as keyway's `jwks_uri` for private_key_jwt (RFC 7523; issue 31). An organization
 * without keys (or unknown) has an empty set.
 */
export const receiverJwksRoutes: Route[] = [
  rawRoute({
    method: "GET",
    path: "/v1/receiver-jwks/{org}",
    operationId: "getReceiverJwks",
    summary: "keyway's public keys for private_key_jwt at receivers (JWKS)",
    description:
      "No credentials; cacheable for 5 minutes. Register this URL as the client's `jwks_uri` at your OAuth server when your webhook configuration uses `oauth.auth_method: private_key_jwt`. Keys are ES256 with `kid`; a rotated-out key stays listed for 24 hours. 404 for an organization with no keys (none of its configurations has used private_key_jwt).",
    tag: "Service",
    auth: "none",
    response: { schema: Jwks, example: { keys: [{ kty: "EC", crv: "P-256", x: "...", y: "...", kid: "...", alg: "ES256", use: "sig" }] } },
    wire: "json",
    errors: [404],
    reply: (c) => jwksAnswer(c, param(c, "org")),
  }),
  rawRoute({
    method: "GET",
    path: "/v1/receiver-jwks/{org}/{id}",
    operationId: "getConfigurationReceiverJwks",
    summary: "One webhook configuration's public keys for private_key_jwt (JWKS)",
    description:
      "No credentials; cacheable for 5 minutes. Each private_key_jwt configuration signs its client assertions with a key of its own, so only the OAuth server that registered this URL (the configuration's `oauth.jwks_uri`) as the client's `jwks_uri` accepts them. Lists the configuration's keys (a rotated-out key for 24 hours) and, for a configuration created before configurations had keys of their own and not moved to its own key yet (or within 24 hours of its move), the organization's keys too, so its receiver can register this URL before the move. 404 for a configuration that does not exist or does not use private_key_jwt.",
    tag: "Service",
    auth: "none",
    response: { schema: Jwks, example: { keys: [{ kty: "EC", crv: "P-256", x: "...", y: "...", kid: "...", alg: "ES256", use: "sig" }] } },
    wire: "json",
    errors: [404],
    reply: (c) => jwksAnswer(c, param(c, "org"), param(c, "id")),
  }),
];
