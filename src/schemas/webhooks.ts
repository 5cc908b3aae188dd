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
/** The most deliveries per second a configuration may ask for (docs/webhooks.md, "Rate limit"). */
/** Channels an event may carry, and a configuration may name (Svix's bound). */
export const MAX_CHANNELS = 10;
export const Channel = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, { error: "must be 1 to 128 letters, digits, or _ . : -" })
  .describe("A channel: 1 to 128 letters, digits, or `_ . : -` (an account, a region).");
const Channels = z.array(Channel).min(1, { error: "must not be empty (omit it, or null, to receive every channel)" }).max(MAX_CHANNELS);
const CHANNELS_DESCRIPTION = `The channels this configuration receives: an event carrying at least one of them (at most ${MAX_CHANNELS}). Without (the default), every event of its types, whatever its channels.`;
const Filter = z
  .record(z.string(), z.unknown())
  .nullable()
  .describe(
    'A payload filter in the shape of Hookdeck Outpost\'s destination filters: a JSON object over the event\'s `type`, `channels` and `data` (`{"data": {"amount": {"$gte": 100}}}`), checked against the schemas of the event types it receives when written (docs/receivers.md, "Filters"). `{}` or null: every event.',
  );

/**
 * The receiver's own narrowing (the portal's "Filter and channels" page; docs/receivers.md, "The
 * receiver's filter"): applied after the organization's `filter` and `channels`, never instead of
 * them, so a receiver can receive less than the organization routes to it and never more.
 */
const RECEIVER_FILTER_DESCRIPTION =
  "The receiver's own payload filter (set in the portal), in the same language as `filter` and checked the same way; an event must match both. `{}` or null: none.";
const RECEIVER_CHANNELS_DESCRIPTION =
  "The channels the receiver chose (in the portal): an event must carry one of them as well as one of `channels`. `null`: every channel `channels` allows.";

export const MAX_RATE_LIMIT = 1000;
const RateLimit = z
  .number()
  .int({ error: "must be a whole number of deliveries per second" })
  .min(1, { error: "must be at least 1" })
  .max(MAX_RATE_LIMIT, { error: `must be at most ${MAX_RATE_LIMIT}` });

/**
 * How keyway authenticates at the receiver's token endpoint (issue 31): spec 4.3's form body
 * (`client_secret_post`, RFC 6749 2.3.1, the default), HTTP Basic (`client_secret_basic`, the same
 * section, id and secret form-urlencoded first), or an assertion keyway signs (`private_key_jwt`,
 * RFC 7523 2.2; OpenID Connect Core 9), whose public keys are at `/v1/receiver-jwks/{org}`.
 */
export const ReceiverAuthMethod = z.enum(["client_secret_post", "client_secret_basic", "private_key_jwt"]);
export type ReceiverAuthMethod = z.output<typeof ReceiverAuthMethod>;
/** RFC 6749 3.3: scope tokens (NQCHAR) separated by single spaces. */
const Scope = z
  .string()
  .max(1000, { error: "must be at most 1000 characters" })
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, {
    error: "must be scope tokens separated by single spaces (RFC 6749 3.3)",
  });
/** RFC 8707 2: an absolute URI without a fragment. */
const ResourceUri = z
  .string()
  .max(2048, { error: "must be at most 2048 characters" })
  .refine((v) => URL.canParse(v) && !v.includes("#"), { error: "must be an absolute URI without a fragment (RFC 8707)" });
const Resources = z.array(ResourceUri).min(1, { error: "must not be empty (omit it to send none)" }).max(5);
const Audience = z.string().min(1, { error: "must not be empty" }).max(512, { error: "must be at most 512 characters" });
const AssertionAudience = z
  .string()
  .max(2048, { error: "must be at most 2048 characters" })
  .refine((v) => URL.canParse(v), { error: "must be the receiver's issuer or token endpoint URL" });

const OAUTH_DESCRIPTIONS = {
  auth_method:
    "How keyway authenticates at the token URL: `client_secret_post` (the default: spec 4.3's form body), `client_secret_basic` (HTTP Basic), or `private_key_jwt` (an ES256 assertion keyway signs; register the configuration's own `oauth.jwks_uri`, `/v1/receiver-jwks/{organization_id}/{id}`, as the client's `jwks_uri`; no `client_secret`).",
  scope: "Sent as `scope` in the token request (space-separated, RFC 6749 3.3).",
  resource: "Each sent as a `resource` parameter in the token request (RFC 8707).",
  audience: "Sent as `audience` in the token request (the parameter Auth0-style servers take).",
  assertion_audience:
    "private_key_jwt only: the assertion's `aud` (the receiver's issuer, if its server wants that); default the token URL (RFC 7523 3).",
  dpop: "Ask for DPoP-bound tokens (RFC 9449): a proof with each token request, and each webhook sent with `Authorization: DPoP <token>` and a fresh proof of keyway's key for this configuration; a `use_dpop_nonce` challenge is answered once.",
} as const;

/** The receiver's OAuth settings as a configuration is created with them; `client_secret` unless private_key_jwt. */
const CreateOAuthInput = z
  .strictObject({
    token_url: TargetUrl,
    client_id: ClientId,
    client_secret: ClientSecret.optional(),
    auth_method: ReceiverAuthMethod.optional().describe(OAUTH_DESCRIPTIONS.auth_method),
    scope: Scope.optional().describe(OAUTH_DESCRIPTIONS.scope),
    resource: Resources.optional().describe(OAUTH_DESCRIPTIONS.resource),
    audience: Audience.optional().describe(OAUTH_DESCRIPTIONS.audience),
    assertion_audience: AssertionAudience.optional().describe(OAUTH_DESCRIPTIONS.assertion_audience),
    dpop: z.boolean().optional().describe(OAUTH_DESCRIPTIONS.dpop),
  })
  .superRefine((o, ctx) => {
    const jwt = o.auth_method === "private_key_jwt";
    if (!jwt && o.client_secret === undefined) {
      ctx.addIssue({ code: "custom", path: ["client_secret"], message: "is required (unless auth_method is private_key_jwt)" });
    }
    if (jwt && o.client_secret !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["client_secret"],
        message: "is not used with private_key_jwt: keyway signs an assertion instead",
      });
    }
    if (!jwt && o.assertion_audience !== undefined) {
      ctx.addIssue({ code: "custom", path: ["assertion_audience"], message: "is used only with auth_method private_key_jwt" });
    }
  });

const Operations = z
  .boolean()
  .describe(
    "The organization's operations configuration: the only kind that may name, and receives, keyway's operational event types (`webhook.endpoint.disabled`, `.paused`, `.recovered`, `webhook.delivery.exhausted`), which describe the organization's other endpoints. Set by the organization (API, manager, CLI), never from the receivers' portal; no portal link opens one. Default false.",
  );

/**
 * How a configuration's webhooks are signed (issue 45; Standard Webhooks, "Signature scheme" and
 * "Asymmetric signatures"): `v1`, HMAC-SHA256 with a shared secret (`whsec_`), or `v1a`, Ed25519
 * with keyway's private key (`whsk_`, never shown), verified with the public key (`whpk_`).
 */
export const SignatureScheme = z.enum(["v1", "v1a"]);
export type SignatureScheme = z.output<typeof SignatureScheme>;
const SIGNATURE_SCHEME_DESCRIPTION =
  "`v1` (the default): HMAC-SHA256 with a shared `whsec_` secret shown once. `v1a`: Ed25519 (Standard Webhooks' asymmetric signatures): keyway keeps the private key sealed and shows the public key (`whpk_`, `signing_public_key`), which verifies but cannot sign.";

/** Issue 45: `push` (keyway sends each event to `url`) or `polling` (the receiver reads its events with a credential of its own). */
export const Delivery = z.enum(["push", "polling"]);
export type Delivery = z.output<typeof Delivery>;

/**
 * The settings a polling configuration has no use for, at creation and in a change (it has no URL,
 * no receiver token endpoint and no pacing): the create schema refuses them, and so does the
 * organization's object for a change (objects/webhooks/configurations.ts `pollingRefusal`).
 */
export const PUSH_SETTINGS = ["url", "oauth", "token_cache", "ordered", "rate_limit"] as const;
/** ... and at creation its signature scheme too: it signs nothing. */
const PUSH_ONLY = [...PUSH_SETTINGS, "signature_scheme"] as const;

export const CreateWebhookConfigurationInput = z
  .strictObject({
    delivery: Delivery.optional().describe(
      '`push` (the default): keyway sends each event to `url`. `polling`: no `url`; keyway keeps the configuration\'s events in publish order and the receiver reads them at `polling.url` with the `polling.token` shown in the answer (docs/receivers.md, "Polling").',
    ),
    url: TargetUrl.optional().describe("Where keyway sends the webhooks (required unless `delivery` is `polling`)."),
    events: Events.optional(),
    description: DisplayName.optional(),
    oauth: CreateOAuthInput.optional().describe("The receiver's token endpoint and client (required unless `delivery` is `polling`)."),
    token_cache: z
      .boolean()
      .optional()
      .describe(
        "One receiver token for the whole endpoint, fetched once however many deliveries run at the same moment, reused until 60 s before its `expires_in` runs out, and fetched again after the receiver answers 401. Without it (the default), every webhook is preceded by its own token request (spec 4.3).",
      ),
    ordered: z
      .boolean()
      .optional()
      .describe(
        "Deliver this endpoint's events one at a time, in publish order: a delivery that keeps failing holds the line until it succeeds or exhausts its retries. Default false.",
      ),
    rate_limit: RateLimit.optional().describe(
      `At most this many webhook requests to the endpoint in any one-second window (1 to ${MAX_RATE_LIMIT}); excess deliveries wait, none is dropped. Default: no limit.`,
    ),
    operations: Operations.optional(),
    signature_scheme: SignatureScheme.optional().describe(SIGNATURE_SCHEME_DESCRIPTION),
    filter: Filter.optional(),
    channels: Channels.optional().describe(CHANNELS_DESCRIPTION),
  })
  .superRefine((input, ctx) => {
    if (input.delivery === "polling") {
      for (const field of PUSH_ONLY) {
        if (input[field] !== undefined)
          ctx.addIssue({ code: "custom", path: [field], message: "is not used by a polling configuration (delivery: polling)" });
      }
      return;
    }
    if (input.url === undefined) ctx.addIssue({ code: "custom", path: ["url"], message: "is required (unless delivery is polling)" });
    if (input.oauth === undefined) ctx.addIssue({ code: "custom", path: ["oauth"], message: "is required (unless delivery is polling)" });
  });
export type CreateWebhookConfigurationInput = z.output<typeof CreateWebhookConfigurationInput>;

/** The rotation's optional body: a new scheme makes the new key of that scheme (changing the scheme is a rotation). */
export const RotateSigningSecretInput = z.strictObject({
  signature_scheme: SignatureScheme.optional().describe(
    `The new key's scheme (default: the configuration's current one). ${SIGNATURE_SCHEME_DESCRIPTION} The previous key keeps signing through its grace whatever its scheme, so the receiver gets both signatures meanwhile.`,
  ),
});
export type RotateSigningSecretInput = z.output<typeof RotateSigningSecretInput>;

export const UpdateWebhookConfigurationInput = z.strictObject({
  url: TargetUrl.optional(),
  events: Events.nullable().optional(),
  description: DisplayName.nullable().optional(),
  oauth: z
    .strictObject({
      token_url: TargetUrl.optional(),
      client_id: ClientId.optional(),
      client_secret: ClientSecret.optional(),
      auth_method: ReceiverAuthMethod.optional().describe(OAUTH_DESCRIPTIONS.auth_method),
      scope: Scope.nullable().optional().describe(`${OAUTH_DESCRIPTIONS.scope} \`null\` sends none.`),
      resource: Resources.nullable().optional().describe(`${OAUTH_DESCRIPTIONS.resource} \`null\` sends none.`),
      audience: Audience.nullable().optional().describe(`${OAUTH_DESCRIPTIONS.audience} \`null\` sends none.`),
      assertion_audience: AssertionAudience.nullable()
        .optional()
        .describe(`${OAUTH_DESCRIPTIONS.assertion_audience} \`null\`: the token URL.`),
      dpop: z.boolean().optional().describe(OAUTH_DESCRIPTIONS.dpop),
    })
    .optional(),
  token_cache: z.boolean().optional(),
  ordered: z.boolean().optional(),
  rate_limit: RateLimit.nullable().optional().describe("Deliveries per second; `null` removes the limit."),
  operations: Operations.optional(),
  filter: Filter.optional(),
  channels: Channels.nullable().optional().describe(`${CHANNELS_DESCRIPTION} \`null\`: every channel again.`),
  receiver_filter: Filter.optional().describe(RECEIVER_FILTER_DESCRIPTION),
  receiver_channels: Channels.nullable().optional().describe(RECEIVER_CHANNELS_DESCRIPTION),
  /**
   * `paused` holds deliveries (published events still fan out to it; nothing is sent until it is
   * `active` again, then in publish order); `disabled` sends nothing and fails what is waiting;
   * `active` resumes or re-enables.
   */
  status: z
    .enum(["active", "paused", "disabled"])
    .optional()
    .describe(
      "`paused`: events still fan out to it and are held (nothing is sent) until it is `active` again, then delivered in publish order; at most 10,000 published during the pause, each held at most 7 days (past either bound a delivery is concluded `failed`, recoverable after resuming). `disabled`: nothing is sent and waiting deliveries fail. `active`: resume or re-enable.",
    ),
});
export type UpdateWebhookConfigurationInput = z.output<typeof UpdateWebhookConfigurationInput>;

/** The receiver's proposed filter and channels, tried against recent events (the portal's preview). */
export const RoutingPreviewInput = UpdateWebhookConfigurationInput.pick({ receiver_filter: true, receiver_channels: true });
export type RoutingPreviewInput = z.output<typeof RoutingPreviewInput>;

export const PublishEventInput = z.strictObject({
  type: EventType,
  data: z.unknown().refine((d) => d !== undefined, { error: "is required" }),
  channels: z
    .array(Channel)
    .max(MAX_CHANNELS)
    .optional()
    .describe(`The event's channels (at most ${MAX_CHANNELS}): it goes to configurations naming one of them, and to those naming none.`),
});
export type PublishEventInput = z.output<typeof PublishEventInput>;

export const Sealed = z.object({ kid: z.string(), iv: z.string(), ct: z.string() });

export const WebhookConfigurationRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  url: z.string(),
  events: z.array(z.string()).nullable(),
  description: z.string().nullable(),
  oauth: z.object({
    token_url: z.string(),
    client_id: z.string(),
    /** Null with private_key_jwt. */
    client_secret: Sealed.nullable(),
    /** Issue 31; a copy from before it has none of these: read it through `receiverOAuth`. */
    auth_method: ReceiverAuthMethod.optional(),
    scope: z.string().nullable().optional(),
    resource: z.array(z.string()).nullable().optional(),
    audience: z.string().nullable().optional(),
    assertion_audience: z.string().nullable().optional(),
    /**
     * private_key_jwt: the key that signs now (kid, the private JWK sealed): the configuration's own
     * (`config_id`, issue 42) or, before its move, the organization's (no `config_id`).
     */
    assertion_key: z.object({ kid: z.string(), private_key: Sealed, config_id: z.string().optional() }).nullable().optional(),
    /** A rotated-in assertion key and when it starts signing (the endpoint switches by itself). */
    next_assertion_key: z
      .object({ kid: z.string(), private_key: Sealed, activates_ms: z.number(), config_id: z.string().optional() })
      .nullable()
      .optional(),
    /** Issue 42's move (objects/webhooks/configurations.ts ReceiverAuth): still on the organization's key; its keys listed until. */
    organization_key: z.boolean().nullable().optional(),
    organization_keys_until: z.number().nullable().optional(),
    /** DPoP-bound tokens: this configuration's key (its RFC 7638 thumbprint, the private JWK sealed). */
    dpop_key: z.object({ jkt: z.string(), private_key: Sealed }).nullable().optional(),
  }),
  token_cache: z.boolean(),
  ordered: z.boolean(),
  rate_limit: z.number().int().nullable(),
  /** Issue 42; a copy from before it has none (false). */
  operations: z.boolean().optional(),
  /**
   * Newest first; an older one stays valid until its expires_at (rotation overlap). The sealed
   * secret's prefix names its scheme (`whsec_`: v1, `whsk_`: v1a, whose `public_key` is kept
   * beside it, issue 45). Empty for a polling configuration, which signs nothing.
   */
  signing_secrets: z.array(
    z.object({
      secret: Sealed,
      created_at: Timestamp,
      expires_at: Timestamp.nullable(),
      public_key: z.string().nullable().optional(),
      /** Rotated in by the receiver (the portal): its graces take at most RECEIVER_GRACE_SLOTS (objects/webhooks/configurations.ts). */
      by: z.literal("receiver").optional(),
    }),
  ),
  /** Issue 45; a copy from before it has none (push). */
  delivery: Delivery.optional(),
  /**
   * The payload filter as written, its JSON text (lib/event-filter.ts; text, so that the record's
   * RPC type stays finite), and the channels it receives; a copy from before them has neither.
   */
  filter: z.string().nullable().optional(),
  channels: z.array(z.string()).nullable().optional(),
  /** The receiver's own narrowing of them (the portal), in the same forms; a copy from before it has neither. */
  receiver_filter: z.string().nullable().optional(),
  receiver_channels: z.array(z.string()).nullable().optional(),
  /** A polling configuration's read credential: the SHA-256 (hex) of its token, null once revoked. */
  polling: z.object({ token_hash: z.string().nullable(), token_created_at: Timestamp.nullable() }).nullable().optional(),
  status: z.enum(["active", "paused", "disabled"]),
  disabled_reason: z.string().nullable(),
  /** +1 per change; the endpoint's object holds the copy of one version (objects/endpoints). */
  version: z.number().int(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookConfigurationRecord = z.output<typeof WebhookConfigurationRecord>;

/** The scheme a kept signing key signs with: a `v1a` key keeps its public key beside it (issue 45). */
export const keyScheme = (key: { public_key?: string | null | undefined }): SignatureScheme => (key.public_key ? "v1a" : "v1");

/** The receiver's OAuth settings with issue 31's defaults filled in (an endpoint's copy from before it has none). */
export function receiverOAuth(config: Pick<WebhookConfigurationRecord, "oauth">) {
  const o = config.oauth;
  return {
    token_url: o.token_url,
    client_id: o.client_id,
    client_secret: o.client_secret,
    auth_method: o.auth_method ?? "client_secret_post",
    scope: o.scope ?? null,
    resource: o.resource ?? null,
    audience: o.audience ?? null,
    assertion_audience: o.assertion_audience ?? null,
    assertion_key: o.assertion_key ?? null,
    next_assertion_key: o.next_assertion_key ?? null,
    dpop_key: o.dpop_key ?? null,
  } satisfies Record<string, unknown>;
}
export type ReceiverOAuth = ReturnType<typeof receiverOAuth>;

/**
 * The queues an endpoint's attempts go through (docs/webhooks.md, "Lanes"): `fast` for endpoints
 * that answer within the fast lane's deadline, `new` for endpoints with no history yet (so a new
 * endpoint that hangs never holds the fast lane), `slow` for endpoints that did not answer in time.
 */
export const Lane = z.enum(["fast", "new", "slow"]);
export type Lane = z.output<typeof Lane>;

/** What the endpoint's object knows of its receiver right now: lane, pause and health. */
export const EndpointState = z.object({
  lane: Lane.describe(
    "The queue this endpoint's attempts go through: `fast` (it answers within the fast lane's deadline), `new` (no deliveries yet) or `slow` (it did not answer in time; back to `fast` after three quick answers).",
  ),
  paused_until: Timestamp.nullable().describe(
    "No request is sent to the endpoint before this: the end of a pause its receiver asked for (429 or 503 with Retry-After, at most 1 hour) or the open circuit's next probe. Null when it is not paused, or paused until further notice.",
  ),
  pause_reason: z.string().nullable().describe("Why the endpoint is paused, in keyway's words; null when it is not paused."),
  failing_since: Timestamp.nullable().describe("Since when every delivery attempt has failed; null while deliveries succeed."),
  last_delivered_at: Timestamp.nullable().describe("When a delivery last succeeded."),
});
export type EndpointState = z.output<typeof EndpointState>;

/** A polling configuration's reading, as its endpoint's object counts it (issue 45). */
export const PollingState = z.object({
  backlog: z
    .number()
    .int()
    .describe("Events after the last cursor the receiver presented (not read yet, as far as keyway knows), less those retention deleted."),
  last_polled_at: Timestamp.nullable().describe("When the receiver last read its events; null before its first read."),
});
export type PollingState = z.output<typeof PollingState>;

/** A configuration as the domain hands it to surfaces: the organization's record and its endpoint's state. */
export interface WebhookConfiguration extends WebhookConfigurationRecord {
  state: EndpointState & { polling?: PollingState | null | undefined };
}

/** A polling configuration's URL and reading, as every view shows it. */
const PollingView = z.object({
  url: z.string().describe("Where the receiver reads this configuration's events (`GET`, with its polling token)."),
  token_active: z.boolean().describe("Whether a polling token can read (false once revoked, until one is rotated in)."),
  ...PollingState.shape,
});

export const WebhookConfigurationView = z.object({
  id: z.string(),
  organization_id: z.string(),
  delivery: Delivery.describe("`push`: keyway sends each event to `url`; `polling`: the receiver reads them at `polling.url`."),
  url: z.string().nullable().describe("Where keyway sends the webhooks; null for a polling configuration."),
  events: z.array(z.string()).nullable(),
  description: z.string().nullable(),
  oauth: z
    .object({
      token_url: z.string(),
      client_id: z.string(),
      auth_method: ReceiverAuthMethod.describe(OAUTH_DESCRIPTIONS.auth_method),
      scope: z.string().nullable(),
      resource: z.array(z.string()).nullable(),
      audience: z.string().nullable(),
      assertion_audience: z.string().nullable(),
      dpop: z.boolean().describe(OAUTH_DESCRIPTIONS.dpop),
      dpop_jkt: z
        .string()
        .nullable()
        .describe("The RFC 7638 thumbprint of keyway's DPoP key for this configuration (`cnf.jkt` of its tokens)."),
      jwks_uri: z
        .string()
        .nullable()
        .describe(
          "private_key_jwt: the absolute URL of this configuration's own public keys (`/v1/receiver-jwks/{organization_id}/{id}`), to register as the client's `jwks_uri` at the receiver's OAuth server.",
        ),
    })
    .nullable()
    .describe("How keyway gets the receiver's token; null for a polling configuration."),
  token_cache: z.boolean(),
  ordered: z.boolean().describe("Delivered one at a time, in publish order."),
  rate_limit: z.number().int().nullable().describe("At most this many webhook requests in any one-second window; null for no limit."),
  operations: z.boolean().describe("The organization's operations configuration (operational events go only to these)."),
  filter: z.record(z.string(), z.unknown()).nullable().describe("The payload filter, as written; null: every event of its types."),
  channels: z.array(z.string()).nullable().describe("The channels it receives; null: every channel."),
  receiver_filter: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe("The receiver's own payload filter (the portal), applied after `filter`; null: none."),
  receiver_channels: z
    .array(z.string())
    .nullable()
    .describe("The channels the receiver chose (the portal), within `channels`; null: every channel `channels` allows."),
  status: z.enum(["active", "paused", "disabled"]),
  disabled_reason: z.string().nullable(),
  ...EndpointState.shape,
  signature_scheme: SignatureScheme.nullable().describe(
    "How its webhooks are signed now (the newest key's scheme): `v1` (HMAC, shared secret) or `v1a` (Ed25519, `signing_public_key`); null for a polling configuration.",
  ),
  signing_public_key: z
    .string()
    .nullable()
    .describe(
      "`v1a`: the newest key's public key (`whpk_` + base64 of its 32 bytes), which verifies the `v1a,` signatures; null otherwise.",
    ),
  signing_secret_rotated_at: Timestamp.describe("When the newest signing key was made (its creation, for a polling configuration)."),
  polling: PollingView.nullable().describe("A polling configuration's reading: its URL, backlog and last read; null for push."),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookConfigurationView = z.output<typeof WebhookConfigurationView>;

/** A polling configuration's reading with its read credential, shown once (at creation and at a rotation of the token). */
const PollingWithToken = PollingView.extend({
  token: z
    .string()
    .describe("The read credential of this configuration alone (`kw_poll_...`), sent as `Authorization: Bearer <token>`: shown only here."),
});

export const CreatedWebhookConfigurationView = WebhookConfigurationView.extend({
  signing_secret: z.string().nullable().describe("`v1`: the `whsec_` secret, shown only here; null for `v1a` and polling configurations."),
  polling: PollingWithToken.nullable().describe("A polling configuration's URL and token (the token shown only here); null for push."),
});

/** A polling read's query (issue 45): after which cursor, how many, how long to wait for one. */
export const PollQuery = z.strictObject({
  after: z.string().max(512, { error: "is too long" }).optional(),
  limit: z.coerce
    .number({ error: "must be a number" })
    .int({ error: "must be an integer" })
    .min(1, { error: "must be at least 1" })
    .max(100, { error: "must be at most 100" })
    .optional(),
  wait: z.coerce
    .number({ error: "must be a number of seconds" })
    .int({ error: "must be a whole number of seconds" })
    .min(0, { error: "must be at least 0" })
    .max(20, { error: "must be at most 20 (seconds)" })
    .optional(),
});

/** A webhook's body, as a polling read answers it: exactly what a webhook would carry. */
export const PolledEvent = z.object({
  id: z.string().describe("The event's id (`evt_...`): the same on every read and every configuration; deduplicate by it."),
  type: z.string(),
  created_at: Timestamp,
  data: z.unknown(),
});

/** One polling read: events in publish order after the cursor, and the cursor to read after them. */
export const PolledEventsView = z.object({
  events: z.array(PolledEvent).describe("At most `limit` (100) events after `after`, oldest first, each as a webhook would carry it."),
  next_cursor: z
    .string()
    .describe("Pass as `after` on the next read (the same cursor when no event came): keep it once the events are processed."),
  has_more: z.boolean().describe("More events are there already: read again at once."),
});
publicNames.add(PolledEventsView, { name: "PolledEventsView" });

/** After a rotation of a polling configuration's token: the new token, shown once. */
export const PollingTokenRotatedView = WebhookConfigurationView.extend({ polling: PollingWithToken });

/** After a rotation: the new secret (shown once) and when the previous one stops signing. */
export const RotatedWebhookConfigurationView = WebhookConfigurationView.extend({
  signing_secret: z
    .string()
    .nullable()
    .describe("`v1`: the new `whsec_` secret, shown only here; null for `v1a` (its public key is `signing_public_key`)."),
  previous_secret_expires_at: Timestamp,
});

/** The answer to ending the graces: the configuration, and how many earlier secrets stopped signing. */
export const EndedGracesView = WebhookConfigurationView.extend({
  graces_ended: z.number().int().describe("How many earlier signing secrets stopped signing (0: none was in its grace)."),
});

/**
 * What keyway keeps of the webhook URL's answer to a failed attempt (issue 22, docs/webhooks.md
 * "What the delivery log keeps"): two headers a user needs and a bounded excerpt of the body,
 * for debugging. The excerpt is withheld when it holds the receiver's client secret, the access
 * token or a signing secret in any form keyway checks for.
 */
export const AttemptResponse = z.object({
  content_type: z.string().nullable().describe("The answer's Content-Type, at most 100 printable characters."),
  retry_after: z.string().nullable().describe("The answer's Retry-After, at most 64 printable characters."),
  body_excerpt: z
    .string()
    .nullable()
    .describe("The first 512 characters of the body (UTF-8, non-printable characters as ?), or null when empty or withheld."),
  body_withheld: z
    .boolean()
    .describe(
      "True when the body held a secret of the attempt (its access token, the receiver's client secret or a signing secret) and was not kept.",
    ),
});
export type AttemptResponse = z.output<typeof AttemptResponse>;

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
   * What went wrong, in keyway's words: the step, the status, and from a token endpoint at most
   * its OAuth `error` code when it is one of RFC 6749's registered codes. No free text of a
   * receiver is kept here.
   */
  error: z.string().nullable(),
  /** What the webhook URL answered to a failed webhook step (null otherwise). */
  response: AttemptResponse.nullable(),
  note: z
    .string()
    .nullable()
    .describe(
      "What else happened in the attempt, in keyway's words: for example, the endpoint's token was refused (401) and a new one fetched and used.",
    ),
});
export type DeliveryAttempt = z.output<typeof DeliveryAttempt>;

export const DeliveryStatus = z.enum(["pending", "retrying", "delivered", "failed"]);

/**
 * What a list of deliveries may be narrowed to (REST query, manager filters, CLI flags): a status,
 * an event type, one event's deliveries. Absent means any. Every filter is served by an index of
 * the endpoint's table (objects/endpoints/schema.ts, migration 3), so a page costs its own rows.
 */
export const DeliveryFilter = z.object({
  status: DeliveryStatus.optional(),
  event_type: EventType.optional(),
  event_id: z
    .string()
    .max(64, { error: "must be at most 64 characters" })
    .regex(/^[A-Za-z0-9_-]+$/, { error: "must be an event id such as evt_..." })
    .optional(),
});
export type DeliveryFilter = z.output<typeof DeliveryFilter>;

const AttemptBucket = z.object({
  start: Timestamp.describe("Start of the hour or UTC day."),
  succeeded: z.number().int().describe("Attempts the receiver accepted (2xx)."),
  failed: z.number().int().describe("Attempts that failed at the receiver (token or webhook step)."),
  latency_ms_avg: z.number().int().nullable().describe("Mean latency of those attempts; null when there were none."),
});
/**
 * An endpoint's attempts over time (lib/series.ts): the last 24 hours by hour, the last 30 days by
 * UTC day, oldest first, and the last 24 hours' totals. Attempts our side failed are not counted.
 */
export const WebhookTrafficView = z.object({
  last_24h: z.object({
    succeeded: z.number().int(),
    failed: z.number().int(),
    success_rate: z.number().min(0).max(1).nullable().describe("succeeded / (succeeded + failed); null without attempts."),
    latency_ms_avg: z.number().int().nullable(),
  }),
  hours: z.array(AttemptBucket),
  days: z.array(AttemptBucket),
});
export type WebhookTrafficView = z.output<typeof WebhookTrafficView>;

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
 * One Queue message per attempt the endpoint's object dispatches: a ticket naming the endpoint,
 * the delivery, its series, the attempt number and the ticket's generation (a ticket sent again
 * supersedes the earlier one), and the lane it was sent to. Everything else (the body, the
 * configuration, its sealed secrets) is read from the endpoint's object when the attempt begins,
 * so a message holds no secret and a late or duplicate one is recognised and dropped.
 */
export const DeliveryTicket = z.object({
  v: z.literal(3),
  kind: z.literal("attempt"),
  organization_id: z.string(),
  configuration_id: z.string(),
  delivery_id: z.string(),
  series: z.number().int().min(1),
  attempt: z.number().int().min(1),
  ticket: z.number().int().min(0),
  lane: Lane,
});
export type DeliveryTicket = z.output<typeof DeliveryTicket>;

/** The Sealed receiver token an attempt fetched (token_cache), for the endpoint to keep. */
export const FetchedToken = z.object({
  sealed: Sealed,
  /** When the receiver's expires_in runs out (ms since the epoch). */
  expires_ms: z.number(),
  /** Which credentials it was issued for (objects/endpoints/token.ts `tokenKey`). */
  key: z.string(),
});
export type FetchedToken = z.output<typeof FetchedToken>;

/** What the consumer reports after an attempt (to the endpoint's object, or through the Queue when that failed). */
export const AttemptReport = z.object({
  delivery_id: z.string(),
  series: z.number().int(),
  attempt: z.number().int(),
  /** When the attempt began (ms since the epoch). */
  started_at: z.number(),
  /** The configuration's version the attempt used (a 410 yields to a url edited after it). */
  version: z.number().int(),
  step: DeliveryAttempt.shape.step,
  http_status: z.number().int().nullable(),
  latency_ms: z.number().int(),
  outcome: DeliveryAttempt.shape.outcome,
  error: z.string().nullable(),
  note: z.string().nullable(),
  /** What the webhook URL answered, for a failed webhook step (reports from before it: null). */
  response: AttemptResponse.nullable().default(null),
  /** Seconds the receiver asked us to wait (429/503 Retry-After). */
  retry_after_seconds: z.number().nullable(),
  /** The webhook URL answered 410 Gone. */
  gone: z.boolean(),
  /** The webhook URL the attempt used (a 410 disables the configuration only while its url is still this). */
  url: z.string(),
  /** The lane the attempt ran in. */
  lane: Lane,
  /** The attempt's deadline passed before the receiver answered. */
  timed_out: z.boolean(),
  /**
   * Not the receiver's doing, and not counted against the retry schedule or the endpoint's health:
   * `cut_off` (the fast lane's deadline passed; the endpoint moves to the slow lane), `slot_missed`
   * (the token step or the endpoint's check outlasted the rate-limit slot, so the webhook was not sent), `token_busy` (a
   * 401 to the cached token while another attempt fetches the new one), `paused` (another attempt
   * of this isolate had just been answered 429 or 503 with Retry-After, so the webhook was not
   * sent; `retry_after_seconds` is what is left of that pause).
   */
  ours: z.enum(["cut_off", "slot_missed", "token_busy", "paused"]).nullable(),
  /** Milliseconds the token step took, when one was made (the rate limit's slot allows for it). */
  token_ms: z.number().nullable(),
  /** A token fetched for the endpoint's cache that could not be stored at once. */
  token: FetchedToken.nullable(),
});
export type AttemptReport = z.output<typeof AttemptReport>;

/** An attempt's report carried by the Queue, when the endpoint's object could not take it at once. */
export const ReportMessage = z.object({
  v: z.literal(3),
  kind: z.literal("report"),
  organization_id: z.string(),
  configuration_id: z.string(),
  report: AttemptReport,
});
export type ReportMessage = z.output<typeof ReportMessage>;

/**
 * A ticket of the previous layout (one WebhookObject per organization), still in a queue when
 * that layout was upgraded: the consumer asks the organization's object which endpoint holds the
 * delivery now (objects/webhooks/legacy.ts).
 */
export const LegacyTicket = z.object({
  v: z.literal(2),
  organization_id: z.string(),
  delivery_id: z.string(),
  series: z.number().int().min(1),
  attempt: z.number().int().min(1),
});
export type LegacyTicket = z.output<typeof LegacyTicket>;

/** Every message of the delivery queues. */
export const DeliveryQueueMessage = z.union([DeliveryTicket, ReportMessage, LegacyTicket]);
export type DeliveryQueueMessage = z.output<typeof DeliveryQueueMessage>;

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
publicNames.add(PollingTokenRotatedView, { name: "PollingTokenRotatedView" });
publicNames.add(RotateSigningSecretInput, { name: "RotateSigningSecretInput" });
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
/** After `POST /v1/webhook-settings/rotate-assertion-key` (issue 31). */
export const AssertionKeyRotationView = z.object({
  kid: z.string().describe("The new key: published at once, signing assertions from `activates_at`."),
  activates_at: Timestamp.describe("When the new key starts signing (receivers' servers have fetched the JWKS again by then)."),
  previous_kid: z.string().nullable(),
  previous_expires_at: Timestamp.nullable().describe("Until then the previous key stays published."),
});
/**
 * What `POST /v1/webhook-configurations/{id}/test-connection` found (issue 31): a token request
 * only, with the configuration's method, told in keyway's words. Nothing of the token itself and
 * no free text of the receiver's.
 */
export const ConnectionOutcome = z.enum([
  "token_issued",
  "refused_by_ssrf_guard",
  "dns_failure",
  "connection_refused",
  "tls_failure",
  "timeout",
  "network_error",
  "redirect_refused",
  "http_error",
  "not_json",
  "no_access_token",
]);
export type ConnectionOutcome = z.output<typeof ConnectionOutcome>;
export const ConnectionTestView = z.object({
  webhook_configuration_id: z.string(),
  ok: z.boolean().describe("Whether an access token came back."),
  outcome: ConnectionOutcome,
  message: z.string().describe("What happened, in keyway's words."),
  reached: z.boolean().describe("Whether the token endpoint answered at all (an HTTP status came back)."),
  http_status: z.number().int().nullable(),
  error: z.string().nullable().describe("The RFC 6749 5.2 error code the answer carried, when it is a registered one."),
  token_type: z.string().nullable().describe("The answer's `token_type` (`Bearer`, `DPoP`), when a token came back."),
  expires_in: z.number().nullable().describe("The answer's `expires_in`, when a token came back."),
  auth_method: ReceiverAuthMethod,
  dpop: z.boolean(),
  latency_ms: z.number().int(),
});
export type ConnectionTestView = z.output<typeof ConnectionTestView>;
publicNames.add(ConnectionTestView, { name: "ConnectionTestView" });

/** A JWK Set (RFC 7517 5) of public keys. */
export const Jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });
publicNames.add(AssertionKeyRotationView, { name: "AssertionKeyRotationView" });
publicNames.add(Jwks, { name: "Jwks" });

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
publicNames.add(WebhookTrafficView, { name: "WebhookTrafficView" });
publicNames.add(DeliveryFilter, { name: "DeliveryFilter" });
