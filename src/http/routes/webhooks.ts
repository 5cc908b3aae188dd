/**
 * Webhook configurations, events and deliveries over REST (product brief). Every route is scoped
 * to the organization of the access token; another organization's ids are not found. Handlers
 * only parse input and shape output: the rules live in webhooks/.
 */
import type { Context } from "hono";
import * as z from "zod";
import { ApiError } from "../../errors";
import { getOrganization } from "../../identity/organizations";
import { publicNames } from "../../schemas/common";
import { RecoverInput, RecoveryView } from "../../schemas/receivers";
import { parseInput } from "../../schemas/validate";
import {
  AssertionKeyRotationView,
  ConnectionTestView,
  CreatedWebhookConfigurationView,
  CreateWebhookConfigurationInput,
  DeliveryFilter,
  DeliveryStatus,
  DeliveryView,
  EndedGracesView,
  EventType,
  PollingTokenRotatedView,
  PublishEventInput,
  PublishedEventView,
  RotatedWebhookConfigurationView,
  RotateSigningSecretInput,
  UpdateWebhookConfigurationInput,
  type WebhookConfiguration,
  WebhookConfigurationView,
  WebhookTrafficView,
} from "../../schemas/webhooks";
import {
  createWebhookConfiguration,
  deleteWebhookConfiguration,
  endSigningGraces,
  getWebhookConfiguration,
  listWebhookConfigurations,
  rotateSigningSecret,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../../webhooks/configurations";
import { testConnection } from "../../webhooks/connection-test";
import {
  getDelivery,
  idempotencyKeyOf,
  listDeliveries,
  MAX_EVENT_BYTES,
  publishEvent,
  retryDelivery,
  sendExampleEvent,
  sendTestEvent,
  webhookTraffic,
} from "../../webhooks/deliveries";
import { revokePollingToken, rotatePollingToken } from "../../webhooks/polling";
import { rotateAssertionKey } from "../../webhooks/receiver-keys";
import { getRecovery, listRecoveries, recoverDeliveries } from "../../webhooks/recovery";
import { readFields } from "../body";
import { type AppEnv, keywayOrigin } from "../context";
import {
  ASSERTION_KEY_ROTATION,
  CONFIG,
  DELIVERY,
  EVENT_ID,
  EVENT_INPUT,
  POLLING_CONFIG,
  POLLING_TOKEN,
  PUBLISHED,
  RECOVERY_ID,
  SIGNING_SECRET,
  T0,
  T1,
  WEBHOOK_INPUT,
  WEBHOOK_TRAFFIC,
} from "../examples";
import { envelopeRoute, listRoute, param, type QueryParam, type Route } from "../route";

const CONFIGS = "/v1/webhook-configurations";
const CONFIG_PATH = `${CONFIGS}/{id}`;
/** The event body cap, plus room for the {type, data} wrapper. */
const MAX_EVENT_REQUEST_BYTES = MAX_EVENT_BYTES + 1024;

/**
 * The organization a request acts in: the access token's, or on the operator's mirror of these
 * routes (operatorWebhookRoutes below) the `{org}` of the path.
 */
const orgOf = (c: Context<AppEnv>) => c.req.param("org") ?? c.get("principal").organizationId;

/** The list filters of a configuration's deliveries, from the query string (DeliveryFilter). */
const deliveryFilter = (c: Context<AppEnv>) => parseInput(DeliveryFilter, c.req.query(), "query string");

const DELIVERY_QUERY: QueryParam[] = [
  { name: "status", description: "Only deliveries in this status.", schema: DeliveryStatus, example: "failed" },
  { name: "event_type", description: "Only deliveries of this event type.", schema: EventType, example: "order.created" },
  { name: "event_id", description: "Only the deliveries of this event (`evt_...`).", schema: z.string(), example: EVENT_ID },
];
const deps = (c: Context<AppEnv>) => c.get("deps");
/** The configuration's view, its key set URL on keyway's public origin. */
const viewFor = (c: Context<AppEnv>) => (config: WebhookConfiguration) => webhookConfigurationView(config, keywayOrigin(c));
const actor = (c: Context<AppEnv>) => c.get("actor");
const configTag = "Webhook configurations";
const CONNECTION_TEST = {
  webhook_configuration_id: CONFIG.id,
  ok: true,
  outcome: "token_issued" as const,
  message: "the token endpoint issued a Bearer valid 3600 s",
  reached: true,
  http_status: 200,
  error: null,
  token_type: "Bearer",
  expires_in: 3600,
  auth_method: "client_secret_basic" as const,
  dpop: false,
  latency_ms: 84,
};
const RECOVERY = {
  id: RECOVERY_ID,
  webhook_configuration_id: CONFIG.id,
  since: T0,
  until: T1,
  status: "running" as const,
  found: 120,
  resent: 40,
  skipped: 0,
  created_at: T1,
  finished_at: null,
};
const eventsTag = "Events and deliveries";
/** The test route's optional body (issue 42): an example of a catalog type instead of `webhook.test`. */
const SendTestEventInput = z
  .strictObject({
    event_type: EventType.optional().describe(
      "An event type of the catalog to send instead of `webhook.test` (keyway's operational types included).",
    ),
    data: z.unknown().optional().describe("The event's `data`, checked against the type's schema; absent: the type's first example."),
  })
  .refine((input) => input.data === undefined || input.event_type !== undefined, {
    path: ["data"],
    error: "must come with event_type (webhook.test carries keyway's own data)",
  });
publicNames.add(SendTestEventInput, { name: "SendTestEventInput" });

export const webhookRoutes: Route[] = [
  envelopeRoute({
    method: "POST",
    path: CONFIGS,
    operationId: "createWebhookConfiguration",
    scope: "webhooks:write",
    summary: "Create webhook configuration",
    description:
      "Spec 2.5. `url` and `oauth.token_url` must be public `https:` URLs. `signature_scheme: \"v1a\"` signs with Ed25519 (the answer's `signing_public_key` verifies; no secret is shown). `delivery: \"polling\"` creates a configuration without `url` or `oauth` whose receiver reads its events at `polling.url` with `polling.token` (shown only here). Without `events` the configuration receives every event type of the organization's (keyway's operational `webhook.*` events only when `events` names them). The `signing_secret` is shown only here. An organization may have at most 20 configurations (409 beyond). Each configuration is an independent delivery lane: a slow, hanging, failing or throttled receiver delays only its own deliveries. `ordered`, `rate_limit` and `token_cache` set how its deliveries are paced; a 429 or 503 with Retry-After pauses the endpoint (at most 1 hour), and repeated failures open a circuit (one probe at a time until one succeeds). The answer's `lane`, `paused_until` and `pause_reason` say where it stands.",
    tag: configTag,
    auth: "client",
    status: 201,
    body: { schema: CreateWebhookConfigurationInput, example: WEBHOOK_INPUT },
    response: { schema: CreatedWebhookConfigurationView, example: { ...CONFIG, signing_secret: SIGNING_SECRET } },
    errors: [409],
    handle: async (c, input) => {
      // On the operator's mirror, operatorMirror has already found the path's organization.
      const { config, signingSecret, pollingToken } = await createWebhookConfiguration(deps(c), orgOf(c), input, actor(c));
      const view = viewFor(c)(config);
      return {
        ...view,
        signing_secret: signingSecret,
        polling: view.polling === null || pollingToken === null ? null : { ...view.polling, token: pollingToken },
      };
    },
    location: (data) => `${CONFIGS}/${data.id}`,
  }),
  listRoute({
    method: "GET",
    path: CONFIGS,
    operationId: "listWebhookConfigurations",
    scope: "webhooks:read",
    summary: "List webhook configurations",
    tag: configTag,
    auth: "client",
    response: { schema: WebhookConfigurationView, example: [CONFIG] },
    handle: async (c, query) => {
      const page = await listWebhookConfigurations(deps(c), orgOf(c), query);
      return { ...page, items: page.items.map(viewFor(c)) };
    },
  }),
  envelopeRoute({
    method: "GET",
    path: CONFIG_PATH,
    operationId: "getWebhookConfiguration",
    scope: "webhooks:read",
    summary: "Get a webhook configuration",
    tag: configTag,
    auth: "client",
    response: { schema: WebhookConfigurationView, example: CONFIG },
    handle: async (c) => viewFor(c)(await getWebhookConfiguration(deps(c), orgOf(c), param(c, "id"))),
  }),
  envelopeRoute({
    method: "PATCH",
    path: CONFIG_PATH,
    operationId: "updateWebhookConfiguration",
    scope: "webhooks:write",
    summary: "Update a webhook configuration",
    description:
      'Absent fields are unchanged; `events: null` means every event; `rate_limit: null` removes the limit; `status: "active"` re-enables a disabled configuration and resets its health (and any pause). Moving `url` or `oauth.token_url` to another origin requires `oauth.client_secret` in the same request (400 otherwise). The change reaches the endpoint\'s delivery object before the answer; if it cannot yet, the answer is 503 with Retry-After (the change is recorded and applied within seconds; repeating the request is safe).',
    tag: configTag,
    auth: "client",
    body: { schema: UpdateWebhookConfigurationInput, example: { events: null, status: "active" } },
    response: { schema: WebhookConfigurationView, example: { ...CONFIG, events: null, updated_at: T1 } },
    handle: async (c, input) => viewFor(c)(await updateWebhookConfiguration(deps(c), orgOf(c), param(c, "id"), input, actor(c))),
  }),
  envelopeRoute({
    method: "DELETE",
    path: CONFIG_PATH,
    operationId: "deleteWebhookConfiguration",
    scope: "webhooks:write",
    summary: "Delete a webhook configuration",
    description:
      "Its open deliveries end `failed` without a request. Answered once its endpoint's delivery object has the deletion (503 with Retry-After otherwise; repeating the request is safe).",
    tag: configTag,
    auth: "client",
    response: { schema: WebhookConfigurationView, example: CONFIG },
    handle: async (c) => viewFor(c)(await deleteWebhookConfiguration(deps(c), orgOf(c), param(c, "id"), actor(c))),
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/rotate-signing-secret`,
    operationId: "rotateSigningSecret",
    scope: "webhooks:write",
    summary: "Rotate the signing secret",
    description:
      "Returns the new `signing_secret` (shown only here); the previous one keeps signing, alongside, until `previous_secret_expires_at` (24 h), and every secret rotated out earlier keeps signing until its own 24 h end: each webhook carries one `v1,` signature per such secret. At most 10 sign at once: the organization's rotation then ends the oldest graces (it never fails for lack of a slot); earlier secrets can also be stopped at once with `end-signing-graces`.",
    tag: configTag,
    errors: [409],
    auth: "client",
    body: { schema: RotateSigningSecretInput, example: { signature_scheme: "v1a" }, optional: true },
    response: {
      schema: RotatedWebhookConfigurationView,
      example: {
        ...CONFIG,
        signing_secret_rotated_at: T1,
        signing_secret: "whsec_bvBOaXiiSVzOUVL2kfnOm8CybVW7mOaerWThG66xLx4=",
        previous_secret_expires_at: "2026-06-02T12:00:05.000Z",
      },
    },
    handle: async (c, input) => {
      const { config, signingSecret, previousExpiresAt } = await rotateSigningSecret(
        deps(c),
        orgOf(c),
        param(c, "id"),
        actor(c),
        input.signature_scheme,
      );
      return { ...viewFor(c)(config), signing_secret: signingSecret, previous_secret_expires_at: previousExpiresAt };
    },
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/end-signing-graces`,
    operationId: "endSigningGraces",
    scope: "webhooks:write",
    summary: "Stop every earlier signing secret now",
    description:
      "After a leak: every secret rotated out and still in its 24 h grace (the organization's or one its receiver rotated in the portal) stops signing at once; only the current secret signs from the next attempt on. `graces_ended` counts them (0 when none was in its grace). Rotate first if the current secret leaked too.",
    tag: configTag,
    errors: [409],
    auth: "client",
    response: { schema: EndedGracesView, example: { ...CONFIG, graces_ended: 3 } },
    handle: async (c) => {
      const { config, ended } = await endSigningGraces(deps(c), orgOf(c), param(c, "id"), actor(c));
      return { ...viewFor(c)(config), graces_ended: ended };
    },
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/rotate-polling-token`,
    operationId: "rotatePollingToken",
    scope: "webhooks:write",
    summary: "Rotate a polling configuration's read token",
    description:
      "A new `polling.token` (shown only here); the previous one stops reading at once (a read waiting with it ends). 409 for a push configuration. Answered once the configuration's endpoint object has the change (503 with Retry-After otherwise: the previous token may read until it lands, within seconds).",
    tag: configTag,
    errors: [409],
    auth: "client",
    response: {
      schema: PollingTokenRotatedView,
      example: { ...POLLING_CONFIG, polling: { ...POLLING_CONFIG.polling, token: POLLING_TOKEN } },
    },
    handle: async (c) => {
      const { config, token } = await rotatePollingToken(deps(c), orgOf(c), param(c, "id"), actor(c));
      const view = viewFor(c)(config);
      if (view.polling === null) throw new ApiError("conflict", "This webhook configuration delivers by push: it has no polling token.");
      return { ...view, polling: { ...view.polling, token } };
    },
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${CONFIG_PATH}/polling-token`,
    operationId: "revokePollingToken",
    scope: "webhooks:write",
    summary: "Revoke a polling configuration's read token",
    description:
      "No read succeeds (401) until a new token is rotated in (`polling.token_active` false); the configuration keeps its events meanwhile. 409 for a push configuration; 503 with Retry-After if its endpoint object has not taken the change yet (repeat it).",
    tag: configTag,
    errors: [409],
    auth: "client",
    response: {
      schema: WebhookConfigurationView,
      example: { ...POLLING_CONFIG, polling: { ...POLLING_CONFIG.polling, token_active: false } },
    },
    handle: async (c) => viewFor(c)(await revokePollingToken(deps(c), orgOf(c), param(c, "id"), actor(c))),
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/rotate-assertion-key`,
    operationId: "rotateConfigurationAssertionKey",
    scope: "webhooks:write",
    summary: "Rotate the configuration's private_key_jwt key",
    description:
      "A private_key_jwt configuration signs its client assertions with its own ES256 key, published at its `oauth.jwks_uri`. The new key is published there at once and signs from `activates_at` (10 minutes later); the previous one stays published until `previous_expires_at` (24 h after that). A configuration created before configurations had keys of their own, still on the organization's key, moves to its own with this call: its `jwks_uri` already lists the organization's keys, so a receiver that registers it first loses nothing (docs/receiver-oauth.md). 409 when the configuration does not use private_key_jwt. Not available to the receivers' portal.",
    tag: configTag,
    errors: [409],
    auth: "client",
    response: {
      schema: AssertionKeyRotationView,
      example: ASSERTION_KEY_ROTATION,
    },
    handle: (c) => rotateAssertionKey(deps(c), orgOf(c), actor(c), param(c, "id")),
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/test-connection`,
    operationId: "testWebhookConnection",
    scope: "webhooks:write",
    summary: "Fetch a token from the receiver, and say what happened",
    description:
      "A token request only, made exactly as before a webhook (the configuration's `auth_method`, `scope`, `resource`, `audience`, DPoP proof and nonce; the SSRF guard on every hop), answered 200 whatever happened, in keyway's words: `outcome` (`token_issued`, `refused_by_ssrf_guard`, `dns_failure`, `connection_refused`, `tls_failure`, `timeout`, `network_error`, `redirect_refused`, `http_error`, `not_json`, `no_access_token`), the HTTP status, the RFC 6749 `error` code when the answer carried a registered one (with its `error_description` in `message`, when that is RFC 6749's charset, at most 200 characters and reveals no secret of the request), and for a token its `token_type` and `expires_in`. Nothing of the token, and no other text of the receiver's, is answered. 409 for a polling configuration (it has no token endpoint).",
    tag: configTag,
    errors: [409],
    auth: "client",
    response: { schema: ConnectionTestView, example: CONNECTION_TEST },
    handle: (c) => testConnection(deps(c), orgOf(c), param(c, "id"), actor(c)),
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/test`,
    operationId: "sendTestEvent",
    scope: "webhooks:write",
    summary: "Send a webhook.test event, or an example of a catalog type, to this configuration",
    description:
      "Without a body (or with `{}`), a `webhook.test` event. With `event_type`, an event of that type of the event catalog (404 for a type outside it): `data` as given, or the type's first example when absent (400 when it has none), validated against the type's schema (400 naming the first failing path under `data`) and bounded like a publish (413 past 100 KiB serialized). Either way the event goes to this configuration only, whatever its `events` (409 when it is disabled), and is audited as `webhook_configuration.tested`; the body the receiver gets is an ordinary event of its type, with nothing marking it as a sample.",
    tag: configTag,
    auth: "client",
    status: 202,
    body: {
      schema: SendTestEventInput,
      example: { event_type: "order.created", data: { order_id: "ord_1", total: 42 } },
      optional: true,
      maxBytes: MAX_EVENT_REQUEST_BYTES,
    },
    response: { schema: PublishedEventView, example: { ...PUBLISHED, type: "webhook.test" } },
    errors: [409],
    handle: (c, input) =>
      input.event_type === undefined
        ? sendTestEvent(deps(c), orgOf(c), param(c, "id"), actor(c))
        : sendExampleEvent(deps(c), orgOf(c), param(c, "id"), { event_type: input.event_type, data: input.data }, actor(c)),
  }),
  listRoute({
    method: "GET",
    path: `${CONFIG_PATH}/deliveries`,
    operationId: "listDeliveries",
    scope: "webhooks:read",
    summary: "List a configuration's deliveries, newest first",
    description:
      "Narrow the list with `status`, `event_type` and `event_id` (together they must all match); `_links.next` keeps the filters, so paging goes to the end of the filtered list. To find a delivery by the `webhook-id` a receiver saw, get `/v1/deliveries/{webhook-id}`.",
    tag: eventsTag,
    auth: "client",
    query: DELIVERY_QUERY,
    response: { schema: DeliveryView, example: [DELIVERY] },
    handle: (c, query) => listDeliveries(deps(c), orgOf(c), param(c, "id"), query, deliveryFilter(c)),
  }),
  envelopeRoute({
    method: "GET",
    path: `${CONFIG_PATH}/traffic`,
    operationId: "getWebhookTraffic",
    scope: "webhooks:read",
    summary: "A configuration's attempts over time: health at a glance",
    description:
      "Attempts the receiver accepted and failed, with their mean latency: the last 24 hours by hour and the last 30 days by UTC day (oldest first, every bucket present), and the last 24 hours' totals and success rate. Counted by the endpoint's object as each attempt concludes; attempts that failed on keyway's side are not the receiver's and are not counted.",
    tag: configTag,
    auth: "client",
    response: { schema: WebhookTrafficView, example: WEBHOOK_TRAFFIC },
    handle: (c) => webhookTraffic(deps(c), orgOf(c), param(c, "id")),
  }),
  envelopeRoute({
    method: "POST",
    path: "/v1/events",
    operationId: "publishEvent",
    scope: "events:write",
    summary: "Publish an event to every matching configuration",
    description:
      "The body may be at most 100 KiB serialized (413 otherwise). A type with a JSON Schema in the event catalog has its `data` validated (400 naming the first failing path, e.g. `data.items.0.price`); with the `refuse_unknown_event_types` setting, a type outside the catalog is 400; types starting `webhook.` are keyway's own (400). Answers with one pending delivery per matching active configuration. With an `Idempotency-Key` header (printable ASCII, at most 255 characters) a repeat within 24 hours answers the original event, creates no deliveries and carries `Idempotent-Replayed: true`; the same key with a different body is refused with 422.",
    tag: eventsTag,
    auth: "client",
    status: 202,
    body: {
      schema: PublishEventInput,
      example: EVENT_INPUT,
      maxBytes: MAX_EVENT_REQUEST_BYTES,
    },
    response: { schema: PublishedEventView, example: PUBLISHED },
    errors: [422],
    handle: async (c, input) => {
      const idempotencyKey = idempotencyKeyOf(c.req.header("idempotency-key"));
      const event = await publishEvent(deps(c), orgOf(c), input, actor(c), { idempotencyKey });
      if (event.replayed) c.header("Idempotent-Replayed", "true");
      return event;
    },
  }),
  envelopeRoute({
    method: "GET",
    path: "/v1/deliveries/{id}",
    operationId: "getDelivery",
    scope: "webhooks:read",
    summary: "Get a delivery and its attempts",
    tag: eventsTag,
    auth: "client",
    response: { schema: DeliveryView, example: DELIVERY },
    handle: (c) => getDelivery(deps(c), orgOf(c), param(c, "id")),
  }),
  envelopeRoute({
    method: "POST",
    path: "/v1/deliveries/{id}/retry",
    operationId: "retryDelivery",
    scope: "webhooks:write",
    summary: "Re-send a delivery",
    description:
      "Keeps the `webhook-id`. A `delivered` or `failed` delivery starts a new series of attempts (attempt numbers continue); a pending or retrying one, stuck or waiting for its next retry, is attempted at once (or when its endpoint's pause ends). For an `ordered` endpoint the delivery keeps its place in publish order, so it is the next one sent. 409 while an attempt is in flight or when the configuration is disabled or deleted.",
    tag: eventsTag,
    auth: "client",
    status: 202,
    response: { schema: DeliveryView, example: { ...DELIVERY, status: "pending", updated_at: T1 } },
    errors: [409],
    handle: (c) => retryDelivery(deps(c), orgOf(c), param(c, "id"), actor(c)),
  }),
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/recover`,
    operationId: "recoverDeliveries",
    scope: "webhooks:write",
    summary: "Re-send every delivery that failed in a window",
    description:
      "After an outage: every delivery of this configuration created in `[since, until)` (until defaults to now) whose status is `failed` is re-sent (a new series of attempts, same `webhook-id`), as a background job run by the endpoint's own object: paced by its window and `rate_limit`, in publish order for `ordered` endpoints, never delaying another endpoint. Each delivery is re-sent once: a second call over an overlapping window re-sends nothing a recovery already re-sent. Follow its progress at `Location` (`found`, `resent`, `status`). 409 while the configuration is disabled.",
    tag: eventsTag,
    auth: "client",
    status: 202,
    body: { schema: RecoverInput, example: { since: T0 } },
    response: { schema: RecoveryView, example: RECOVERY },
    errors: [409],
    handle: (c, input) => recoverDeliveries(deps(c), orgOf(c), param(c, "id"), input, actor(c)),
    location: (data) => `${CONFIGS}/${data.webhook_configuration_id}/recoveries/${data.id}`,
  }),
  listRoute({
    method: "GET",
    path: `${CONFIG_PATH}/recoveries`,
    operationId: "listRecoveries",
    scope: "webhooks:read",
    summary: "List a configuration's recoveries, newest first",
    tag: eventsTag,
    auth: "client",
    response: { schema: RecoveryView, example: [RECOVERY] },
    handle: (c, query) => listRecoveries(deps(c), orgOf(c), param(c, "id"), query),
  }),
  envelopeRoute({
    method: "GET",
    path: `${CONFIG_PATH}/recoveries/{recovery}`,
    operationId: "getRecovery",
    scope: "webhooks:read",
    summary: "A recovery's progress",
    tag: eventsTag,
    auth: "client",
    response: { schema: RecoveryView, example: RECOVERY },
    handle: (c) => getRecovery(deps(c), orgOf(c), param(c, "id"), param(c, "recovery")),
  }),
];

/**
 * The operator's view of an organization's webhooks (the CLI's `webhooks`, `deliveries`,
 * `event-types` and `webhook-settings` commands, the manager's peers): the same routes under
 * `/admin/v1/organizations/{org}`, with the operator token, declared once under /v1 and mirrored
 * by `operatorMirror` so both sides run the same handler. Creating, reading, editing (pausing and
 * resuming are PATCH `status`), deleting and rotating the signing secret of configurations (an
 * operator sets one up for a customer, as the manager app lets them), test events, traffic,
 * re-sends and recoveries; publishing events stays with the organization's own clients. The
 * event catalog, the webhook settings and portal links and sessions are mirrored the same way
 * (routes/index.ts registers those mirrors).
 */
const OPERATOR_MIRRORED = [
  "createWebhookConfiguration",
  "listWebhookConfigurations",
  "getWebhookConfiguration",
  "updateWebhookConfiguration",
  "deleteWebhookConfiguration",
  "rotateSigningSecret",
  "rotatePollingToken",
  "revokePollingToken",
  "rotateConfigurationAssertionKey",
  "testWebhookConnection",
  "sendTestEvent",
  "listDeliveries",
  "getWebhookTraffic",
  "getDelivery",
  "retryDelivery",
  "recoverDeliveries",
  "listRecoveries",
  "getRecovery",
];

/** A generous cap for reading a mirrored body early: each route enforces its own cap when it runs. */
const EARLY_BODY_BYTES = 1024 * 1024;

/**
 * Mirrors /v1 routes under `/admin/v1/organizations/{org}` for the operator (auth "admin", no
 * scope, operationId `operator<Name>`, tag "Operator: webhooks"); `only` picks routes by
 * operationId (every one when absent), and naming one that is not there throws at startup, so a
 * renamed route cannot silently drop out of the operator API. The handlers read the organization
 * with `c.req.param("org")` (each file's `orgOf`).
 *
 * An unknown or deleted organization is 404 on every mirror, also on the routes that name nothing
 * under it (a list, the catalog, the settings), and whatever its objects still hold until they
 * are erased. The check runs after the request body is checked, so a
 * malformed body is 415 or 400 whatever the path names (the order the description documents):
 * the body is read from a copy of the request, and the route reads it again when it runs.
 */
export function operatorMirror(routes: readonly Route[], only?: readonly string[]): Route[] {
  const picked = only === undefined ? [...routes] : only.map((id) => routes.find((r) => r.operationId === id));
  const missing = only?.filter((_, i) => picked[i] === undefined) ?? [];
  if (missing.length > 0) throw new Error(`operatorMirror: no route ${missing.join(", ")} to mirror`);
  return (picked as Route[]).map(({ scope: _scope, ...r }) => ({
    ...r,
    path: `/admin/v1/organizations/{org}${r.path.slice("/v1".length)}`,
    operationId: `operator${r.operationId[0]?.toUpperCase()}${r.operationId.slice(1)}`,
    tag: "Operator: webhooks",
    auth: "admin",
    serve: async (c) => {
      if (r.body !== undefined && r.body.form !== true) {
        const fields = await readFields(c.req.raw.clone(), ["json"], EARLY_BODY_BYTES);
        parseInput(r.body.schema, fields);
      }
      await getOrganization(deps(c), param(c, "org"));
      return r.serve(c);
    },
  }));
}

export const operatorWebhookRoutes: Route[] = operatorMirror(webhookRoutes, OPERATOR_MIRRORED);
