/**
 * Example values for the API description: every route's request and response example is built
 * from these, and the OpenAPI test parses each example with the schema it illustrates. Ids have
 * the real shapes; secrets are made up.
 */
import type { WebhookConfigurationView } from "../schemas/webhooks";
export const EXAMPLE_ORIGIN = "https://keyway.example.com";
export const T0 = "2026-06-01T12:00:00.000Z";
export const T1 = "2026-06-01T12:00:05.000Z";
export const ORG_ID = "org_yq6ymtqw52bpp8tnd8jmw91r06";
export const USER_ID = "usr_g5ammfmmz6vkahde7tp71hp0ht";
export const KEY_ID = "key_pmeknbx79htar7eqv3rajdcz8s";
export const CLIENT_ID = "kw_client_8vYosraje_sknw5qe9bqOQ";
export const CONFIG_ID = "whk_xevbgd907xwyy2z907sxd2vm7b";
export const EVENT_ID = "evt_50vvhbyxb086rgxkmsp0wjsmfa";
export const DELIVERY_ID = "msg_age6xqxzvpe76kqhjkas8kqhe0";
export const RECOVERY_ID = "rcv_3kq0x9h2m4n6p8r0s2t4v6w8y0";
export const ACCESS_TOKEN =
  "kw_at_k1.eyJ2IjoxLCJvcmciOiJvcmdfeXE2eW10cXc1MmJwcDh0bmQ4am13OTFyMDYifQ.Jm0lq3cOTEqYv1p6Xn0aQ2d8kV4sH7bZ9yR5tW1uE3g";

export const ORG = { id: ORG_ID, name: "Acme", created_at: T0 };
export const USER = { id: USER_ID, organization_id: ORG_ID, name: "Ada", email: "ada@acme.example", created_at: T0 };
export const API_KEY = {
  id: KEY_ID,
  organization_id: ORG_ID,
  name: "laptop",
  hint: "kw_live_ak_...WQEE",
  limits: { per_second: 1, per_day: 1000 },
  limit_overrides: { per_second: false, per_day: false },
  location_hint: "weur" as const,
  status: "active" as const,
  created_at: T0,
  last_used_at: T1,
  revoked_at: null,
  credits: null,
  previous_secret_expires_at: null,
};
export const usageWindow = (limit: number, used: number, resets_at: string) => ({ limit, used, remaining: limit - used, resets_at });
export const CREDENTIAL = {
  client_id: CLIENT_ID,
  organization_id: ORG_ID,
  user_id: USER_ID,
  name: "laptop",
  token_endpoint_auth_method: "client_secret_basic" as const,
  jwks: null,
  scopes: ["webhooks:read", "webhooks:write", "events:write", "graphql:mutate"],
  scopes_unrestricted: true,
  dpop_bound_access_tokens: false,
  jwks_uri: null,
  federated: null,
  access_token_strategy: "opaque" as const,
  status: "active" as const,
  created_at: T0,
  last_used_at: null,
  revoked_at: null,
};
export const TOKEN = {
  access_token: ACCESS_TOKEN,
  token_type: "Bearer" as const,
  expires_in: 3600,
  refresh_token: null,
  scope: "webhooks:read webhooks:write events:write graphql:mutate",
};
export const TOKEN_REQUEST = {
  grant_type: "client_credentials",
  client_id: CLIENT_ID,
  client_secret: "kw_live_cs_f15X1kPlpd3PtegbO4l9FuH0J4pX5cf68ST8mP-0VDE",
};
export const WEBHOOK_INPUT = {
  url: "https://receiver.example.com/webhooks",
  events: ["order.created", "order.paid"],
  description: "Order updates",
  oauth: { token_url: "https://receiver.example.com/oauth/token", client_id: "keyway", client_secret: "receiver-client-secret" },
};
export const CONFIG = {
  id: CONFIG_ID,
  organization_id: ORG_ID,
  delivery: "push" as const,
  url: WEBHOOK_INPUT.url as string | null,
  events: WEBHOOK_INPUT.events,
  description: WEBHOOK_INPUT.description,
  oauth: {
    token_url: WEBHOOK_INPUT.oauth.token_url,
    client_id: WEBHOOK_INPUT.oauth.client_id,
    auth_method: "client_secret_post" as const,
    scope: null,
    resource: null,
    audience: null,
    assertion_audience: null,
    dpop: false,
    dpop_jkt: null,
    jwks_uri: null,
  },
  token_cache: false,
  ordered: false,
  rate_limit: null,
  operations: false,
  filter: { data: { amount: { $gte: 100 } } } as WebhookConfigurationView["filter"],
  channels: null as string[] | null,
  receiver_filter: null as Record<string, unknown> | null,
  receiver_channels: null as string[] | null,
  status: "active" as const,
  disabled_reason: null,
  lane: "fast" as const,
  paused_until: null,
  pause_reason: null,
  failing_since: null,
  last_delivered_at: T1,
  signature_scheme: "v1" as "v1" | "v1a" | null,
  signing_public_key: null as string | null,
  signing_secret_rotated_at: T0,
  polling: null,
  created_at: T0,
  updated_at: T0,
};
/** A v1a configuration's public key (issue 45): `whpk_` + base64 of the Ed25519 key's 32 bytes. */
export const SIGNING_PUBLIC_KEY = "whpk_Gj6VZq2pJ3rS0QnbY2nE0v0i2o0b1mE8kU7oPpG5Pj0=";
/** A polling configuration (issue 45), as created: no url or oauth; where and with what its receiver reads. */
export const POLLING_CONFIG = {
  ...CONFIG,
  delivery: "polling" as const,
  url: null,
  oauth: null,
  ordered: true,
  signature_scheme: null,
  signing_public_key: null,
  lane: "new" as const,
  last_delivered_at: null,
  polling: {
    url: `https://keyway.example.com/v1/polling-endpoints/${CONFIG_ID}/events`,
    token_active: true,
    backlog: 0,
    last_polled_at: null,
  },
};
export const POLLING_TOKEN = "kw_poll_q8Zr3xJH0pVtY1mN5aK7bW2cE9fR4sT6uL0oD3gI8hQ";
export const SIGNING_SECRET = "whsec_sZ/yq9wk7vLLlqLSuaSK3/YS8duu8IZDDhGP0Q9gc8Q=";
/** What a client publishes (POST /v1/events), and so the `type` and `data` its receivers get. */
export const EVENT_INPUT = { type: "order.created", data: { order_id: "1234", total: 42.5 } };
/** The body keyway POSTs to a receiver for EVENT_INPUT (webhooks/deliveries.ts builds it). */
export const EVENT_BODY = { id: EVENT_ID, type: EVENT_INPUT.type, created_at: T0, data: EVENT_INPUT.data };
/**
 * The Standard Webhooks headers of that delivery's first attempt, at T1, signed with
 * SIGNING_SECRET: a real signature, so a receiver can check its verifier against the
 * documentation (the OpenAPI test re-computes it with the standardwebhooks library).
 */
export const WEBHOOK_HEADERS = {
  "webhook-id": DELIVERY_ID,
  "webhook-timestamp": String(Date.parse(T1) / 1000),
  "webhook-signature": "v1,QjbY0bV/8s3/WKfKyhAuU9TmmOOo9zr5xgCvOVlICyQ=",
};
/** The client-credentials grant keyway sends to a receiver's token_url (WEBHOOK_INPUT's credentials). */
export const RECEIVER_TOKEN_REQUEST = {
  client_id: WEBHOOK_INPUT.oauth.client_id,
  client_secret: WEBHOOK_INPUT.oauth.client_secret,
  grant_type: "client_credentials" as const,
};
export const PUBLISHED = {
  id: EVENT_ID,
  type: "order.created",
  created_at: T0,
  deliveries: [{ id: DELIVERY_ID, webhook_configuration_id: CONFIG_ID, status: "pending" as const }],
  replayed: false,
};
export const DELIVERY = {
  id: DELIVERY_ID,
  organization_id: ORG_ID,
  webhook_configuration_id: CONFIG_ID,
  event_id: EVENT_ID,
  event_type: "order.created",
  status: "delivered" as const,
  attempts: [
    {
      number: 1,
      series: 1,
      at: T1,
      step: "webhook" as const,
      http_status: 200,
      latency_ms: 182,
      outcome: "delivered" as const,
      error: null,
      note: null,
      response: null,
    },
  ],
  next_attempt_at: null,
  in_flight_until: null,
  created_at: T0,
  updated_at: T1,
};

export const ADMIN_TOKEN = {
  id: "oat_3f2a9c1d0e8b7a6f5e4d3c2b1a",
  organization_id: ORG_ID,
  name: "Acme admin",
  status: "active" as const,
  created_at: T0,
  expires_at: "2026-07-01T12:00:00.000Z",
  last_used_at: null,
  revoked_at: null,
};
export const ADMIN_TOKEN_SECRET = "kw_live_oa_yq6ymtqw52bpp8tnd8jmw91r06_Yk3vJ0pQz8rT1uWx5bN7mC2dF6gH9jK4lP0sR3tV8wZ";
export const AUDIT_ENTRY = {
  id: "42",
  at: T1,
  actor: { type: "operator" as const },
  action: "client_credential.revoked",
  resource: { type: "client_credential", id: CLIENT_ID },
  detail: null,
};

/** An endpoint's traffic, two buckets of each series (a real answer has 24 and 30). */
export const WEBHOOK_TRAFFIC = {
  last_24h: { succeeded: 118, failed: 3, success_rate: 0.975, latency_ms_avg: 84 },
  hours: [
    { start: "2026-06-01T11:00:00.000Z", succeeded: 70, failed: 3, latency_ms_avg: 91 },
    { start: "2026-06-01T12:00:00.000Z", succeeded: 48, failed: 0, latency_ms_avg: 74 },
  ],
  days: [
    { start: "2026-05-31T00:00:00.000Z", succeeded: 1204, failed: 12, latency_ms_avg: 80 },
    { start: "2026-06-01T00:00:00.000Z", succeeded: 118, failed: 3, latency_ms_avg: 84 },
  ],
};

/** A portal link (issue 30): its token is 256 random bits and the organization id (webhooks/portal.ts). */
export const PORTAL_LINK = {
  url: `https://keyway.example/portal/open?token=kw_portal_Yk3vJ0pQz8rT1uWx5bN7mC2dF6gH9jK4lP0sR3tV8wZ.${ORG_ID}`,
  webhook_configuration_id: CONFIG_ID,
  expires_at: "2026-06-01T12:10:00.000Z",
};
export const PORTAL_SESSION = {
  id: "pts_8k2m4n6p8q0r2s4t6v8w0x2y4z",
  webhook_configuration_id: CONFIG_ID,
  status: "active" as const,
  created_at: T0,
  last_seen_at: T1,
  expires_at: "2026-06-01T20:00:00.000Z",
  ended_at: null,
};

/** An assertion key's rotation (the organization's, or one configuration's: issue 42). */
export const ASSERTION_KEY_ROTATION = {
  kid: "kC8Z0oGd8kJ3Xq2o6Ff1d9rI5yq3tXh0n4bV7wS2eLk",
  activates_at: "2026-06-01T12:10:05.000Z",
  previous_kid: "n0Vq4Rk2p8sX1yT6wZ3bC5dF7gH9jK0mL2nP4qR6sT8",
  previous_expires_at: "2026-06-02T12:10:05.000Z",
};
