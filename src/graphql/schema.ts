/**
 * The GraphQL schema (spec 1: the GraphQL API, authorized like REST). Field names are the REST
 * fields in camelCase, and every field resolves through the same domain functions as REST
 * (resolvers.ts), so both surfaces return the same data. Status values stay the REST strings.
 */
import { buildSchema } from "graphql";

export const SDL = /* GraphQL */ `
"""Any JSON value (event data, an event type's JSON Schema and examples), passed through as it is."""
scalar JSON
"""ISO 8601 UTC timestamp."""
scalar DateTime

type Query {
  """Who the access token speaks for, and the API key's rate-limit usage."""
  viewer: Viewer!
  webhookConfigurations(first: Int = 50, after: String): WebhookConfigurationConnection!
  webhookConfiguration(id: ID!): WebhookConfiguration
  deliveries(webhookConfigurationId: ID!, first: Int = 50, after: String): DeliveryConnection!
  delivery(id: ID!): Delivery
  # The fields below (and their mutations) came with issue 30 and are nullable: against an API
  # Worker of the release before them (docs/deploy.md, "The companions' contract", rule 4) they
  # fail alone, where a non-null field's error would null the whole answer, the other fields too.
  """The event catalog by name: the organization's types and keyway's operational ones."""
  eventTypes(first: Int = 50, after: String): EventTypeConnection
  eventType(name: String!): EventType
  webhookSettings: WebhookSettings
  """A configuration's recoveries, newest first."""
  recoveries(webhookConfigurationId: ID!, first: Int = 50, after: String): RecoveryConnection
  recovery(webhookConfigurationId: ID!, id: ID!): Recovery
  """A configuration's portal sessions, oldest first; ended and expired ones stay listed for a day."""
  portalSessions(webhookConfigurationId: ID!, first: Int = 50, after: String): PortalSessionConnection
}

type Mutation {
  """
  The "Create webhook configuration" operation (spec 2.5). signingSecret (v1) and pollingToken
  (delivery: "polling") are shown only here.
  """
  createWebhookConfiguration(input: CreateWebhookConfigurationInput!): CreateWebhookConfigurationPayload!
  updateWebhookConfiguration(id: ID!, input: UpdateWebhookConfigurationInput!): WebhookConfiguration!
  deleteWebhookConfiguration(id: ID!): WebhookConfiguration!
  """
  A new signing key; the previous one keeps signing until previousSecretExpiresAt. signatureScheme
  (v1 or v1a; default the current one) changes the scheme: that is a rotation too, and the receiver
  gets both signatures meanwhile. 409 for a polling configuration.
  """
  rotateSigningSecret(id: ID!, signatureScheme: String): RotateSigningSecretPayload!
  """
  Publishes to every matching configuration. With an idempotencyKey seen in the last 24 hours
  the original event is answered (replayed: true) and no deliveries are created.
  """
  publishEvent(type: String!, data: JSON!, channels: [String!], idempotencyKey: String): PublishedEvent!
  sendTestEvent(id: ID!): PublishedEvent!
  retryDelivery(id: ID!): Delivery!
  # Nullable, as the queries of issue 30 are: one failing does not null the answers of the others.
  """
  An event type: a JSON Schema for its data and examples validated against it. Once a type has a
  schema, publishEvent of that type validates data. Names starting webhook. are keyway's own.
  """
  createEventType(input: CreateEventTypeInput!): EventType
  """Absent fields are unchanged; schema: null removes the schema."""
  updateEventType(name: String!, input: UpdateEventTypeInput!): EventType
  deleteEventType(name: String!): EventType
  updateWebhookSettings(input: UpdateWebhookSettingsInput!): WebhookSettings
  """
  Re-sends, each once, every delivery of the configuration that failed among those created in
  [since, until) (until defaults to now), as a background job; follow it with recovery(...).
  """
  recoverDeliveries(webhookConfigurationId: ID!, since: DateTime!, until: DateTime): Recovery
  """A single-use link to hand to the configuration's receiver; url is shown only here. expiresIn: 60 to 3600 seconds, default 600."""
  createPortalLink(webhookConfigurationId: ID!, expiresIn: Int): PortalLink
  """Its cookie stops working at once. Ending an ended session changes nothing."""
  endPortalSession(webhookConfigurationId: ID!, id: ID!): PortalSession
  # Issue 31, nullable for the same reason as those of issue 30.
  """
  A new organization-wide key for private_key_jwt assertions, which signs only for configurations
  created before each had its own key and not moved yet: published at once
  at /v1/receiver-jwks/{organization}, signing from activatesAt; the previous key stays published
  until previousExpiresAt. Private keys are never shown.
  """
  rotateAssertionKey: AssertionKeyRotation
  """
  Fetches a token from the receiver's token URL (only that, exactly as before a webhook) and says
  what happened in keyway's words. Nothing of the token, and no free text of the receiver's.
  """
  testWebhookConnection(id: ID!): ConnectionTest
  # Issue 45, nullable for the same reason as those of issue 30.
  """
  A polling configuration's new read token, shown only here; the previous one stops reading at
  once. 409 for a push configuration.
  """
  rotatePollingToken(id: ID!): RotatePollingTokenPayload
  """No read succeeds (401) until a token is rotated in (polling.tokenActive false). 409 for a push configuration."""
  revokePollingToken(id: ID!): WebhookConfiguration
}

type Viewer {
  organizationId: ID!
  userId: ID!
  clientId: ID!
  apiKeyId: ID!
  token: AccessToken!
  rateLimit: RateLimitUsage!
}

type AccessToken {
  id: ID!
  issuedAt: DateTime!
  expiresAt: DateTime!
  expiresIn: Int!
  """opaque, or jwt for an RFC 9068 token (a credential with access_token_strategy jwt). Null from an API Worker older than JWT access tokens."""
  format: String
}

type RateLimitUsage {
  second: RateLimitWindow!
  day: RateLimitWindow!
  "The organization's shared quota: its windows that have a limit, counted over all its API keys; null without one."
  quota: [QuotaWindow!]
  "The API key's credits; null without them."
  credits: Credits
}

type QuotaWindow {
  "second, day or month (UTC)"
  window: String!
  limit: Float!
  used: Float!
  remaining: Float!
  resetsAt: DateTime!
}

type Credits {
  remaining: Float!
  refill: CreditsRefill
  nextRefillAt: DateTime
}

type CreditsRefill {
  amount: Float!
  "day or month (UTC)"
  interval: String!
}

type RateLimitWindow {
  limit: Int!
  used: Int!
  remaining: Int!
  resetsAt: DateTime!
}

type OAuthTarget {
  tokenUrl: String!
  clientId: String!
  # authMethod and dpop are never null from an API Worker of issue 31 or later; nullable because
  # one of the release before answers views without them (docs/deploy.md, the companions'
  # contract, rule 2), and a non-null field's error would null the whole configuration.
  """How keyway authenticates at the token URL: client_secret_post (spec 4.3, the default), client_secret_basic or private_key_jwt."""
  authMethod: String
  """Sent as scope in the token request (RFC 6749 3.3)."""
  scope: String
  """Each sent as a resource parameter (RFC 8707)."""
  resource: [String!]
  """Sent as audience in the token request."""
  audience: String
  """private_key_jwt: the assertion's aud (default the token URL)."""
  assertionAudience: String
  """DPoP-bound receiver tokens and webhooks (RFC 9449)."""
  dpop: Boolean
  """The RFC 7638 thumbprint of keyway's DPoP key for this configuration."""
  dpopJkt: String
  """private_key_jwt: where keyway's public keys are (the client's jwks_uri), on keyway's origin."""
  jwksUri: String
}

"""After rotateAssertionKey."""
type AssertionKeyRotation {
  """The new key: published at once, signing assertions from activatesAt."""
  kid: String!
  """When the new key starts signing (receivers' servers have fetched the JWKS again by then)."""
  activatesAt: DateTime!
  previousKid: String
  """Until then the previous key stays published."""
  previousExpiresAt: DateTime
}

"""What testWebhookConnection found: a token request only, with the configuration's method."""
type ConnectionTest {
  webhookConfigurationId: ID!
  """Whether an access token came back."""
  ok: Boolean!
  """
  token_issued, refused_by_ssrf_guard, dns_failure, connection_refused, tls_failure, timeout,
  network_error, redirect_refused, http_error, not_json or no_access_token
  """
  outcome: String!
  """What happened, in keyway's words."""
  message: String!
  """Whether the token endpoint answered at all (an HTTP status came back)."""
  reached: Boolean!
  httpStatus: Int
  """The RFC 6749 5.2 error code the answer carried, when it is a registered one."""
  error: String
  """The answer's token_type (Bearer, DPoP), when a token came back."""
  tokenType: String
  """The answer's expires_in, when a token came back."""
  expiresIn: Float
  authMethod: String!
  dpop: Boolean!
  latencyMs: Int!
}

type WebhookConfiguration {
  id: ID!
  organizationId: ID!
  """
  push (keyway sends each event to url) or polling (the receiver reads them at polling.url).
  Never null from an API Worker that has polling; nullable for the companions' contract.
  """
  delivery: String
  """Where keyway sends the webhooks; null for a polling configuration."""
  url: String
  """Event types delivered; null means every type."""
  events: [String!]
  description: String
  """How keyway gets the receiver's token; null for a polling configuration."""
  oauth: OAuthTarget
  tokenCache: Boolean!
  """Its events are delivered one at a time, in publish order."""
  ordered: Boolean!
  """At most this many webhook requests in any one-second window; null for no limit."""
  rateLimit: Int
  """
  The organization's operations configuration: the only kind operational events go to.
  Nullable for the companions' contract: an API Worker of the previous release does not send it.
  """
  operations: Boolean
  """
  The payload filter as written, in the shape of Hookdeck Outpost's destination filters; null:
  every event of its types. Nullable for the companions' contract, as operations is.
  """
  filter: JSON
  """The channels it receives; null: every channel."""
  channels: [String!]
  """The receiver's own payload filter (set in the portal), applied after filter; null: none."""
  receiverFilter: JSON
  """The channels the receiver chose (in the portal), within channels; null: every channel channels allows."""
  receiverChannels: [String!]
  """active, paused (deliveries held until active again) or disabled"""
  status: String!
  disabledReason: String
  """fast, new or slow: the queue its attempts go through"""
  lane: String!
  """No request is sent before this (a Retry-After, an open circuit's next probe)."""
  pausedUntil: DateTime
  """Why the endpoint is paused; null when it is not."""
  pauseReason: String
  """Since when every delivery attempt has failed; null while deliveries succeed."""
  failingSince: DateTime
  lastDeliveredAt: DateTime
  """
  How its webhooks are signed now (the newest key's scheme): v1 (HMAC-SHA256, a shared whsec_
  secret) or v1a (Ed25519, verified with signingPublicKey); null for a polling configuration.
  """
  signatureScheme: String
  """v1a: the newest key's public key (whpk_...), which verifies the v1a signatures; null otherwise."""
  signingPublicKey: String
  signingSecretRotatedAt: DateTime!
  """A polling configuration's reading; null for push."""
  polling: PollingState
  createdAt: DateTime!
  updatedAt: DateTime!
}

"""Where and how a polling configuration's receiver reads its events."""
type PollingState {
  """GET it with Authorization: Bearer and the configuration's polling token."""
  url: String!
  """Whether a polling token can read (false once revoked, until one is rotated in)."""
  tokenActive: Boolean!
  """Events after the last cursor the receiver presented; counted up to 10,000."""
  backlog: Int!
  """When the receiver last read; null before its first read."""
  lastPolledAt: DateTime
}

type CreateWebhookConfigurationPayload {
  webhookConfiguration: WebhookConfiguration!
  """v1: the whsec_ secret, shown only here; null for v1a (see signingPublicKey) and polling configurations."""
  signingSecret: String
  """delivery: "polling": the configuration's read token (kw_poll_...), shown only here; null otherwise."""
  pollingToken: String
}

type RotateSigningSecretPayload {
  webhookConfiguration: WebhookConfiguration!
  """v1: the new whsec_ secret, shown only here; null for v1a (see webhookConfiguration.signingPublicKey)."""
  signingSecret: String
  previousSecretExpiresAt: DateTime!
}

type RotatePollingTokenPayload {
  webhookConfiguration: WebhookConfiguration!
  """The new read token (kw_poll_...), shown only here."""
  token: String!
}

type PageInfo {
  hasNextPage: Boolean!
  endCursor: String
}

type WebhookConfigurationConnection {
  nodes: [WebhookConfiguration!]!
  pageInfo: PageInfo!
}

type DeliveryConnection {
  nodes: [Delivery!]!
  pageInfo: PageInfo!
}

type DeliveryAttempt {
  """Numbers continue across re-sends."""
  number: Int!
  """1 for the first series of attempts, +1 for each re-send."""
  series: Int!
  at: DateTime!
  """configuration, token or webhook"""
  step: String!
  httpStatus: Int
  latencyMs: Int!
  """in_flight, delivered, retry or failed"""
  outcome: String!
  error: String
  """What else happened: a refused token replaced, a fast-lane cut-off."""
  note: String
  """What the webhook URL answered to a failed webhook step."""
  response: AttemptResponse
}

"""What keyway keeps of a failed webhook answer: two headers and a bounded excerpt, withheld when it holds a secret."""
type AttemptResponse {
  contentType: String
  retryAfter: String
  """The body's first 512 characters; null when empty or withheld."""
  bodyExcerpt: String
  bodyWithheld: Boolean!
}

type Delivery {
  id: ID!
  organizationId: ID!
  webhookConfigurationId: ID!
  eventId: ID!
  eventType: String!
  """pending, retrying, delivered or failed"""
  status: String!
  attempts: [DeliveryAttempt!]!
  nextAttemptAt: DateTime
  """while an attempt is in flight, when its lease ends; past it, a re-send is accepted"""
  inFlightUntil: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
}

type PublishedDelivery {
  id: ID!
  webhookConfigurationId: ID!
  status: String!
}

type PublishedEvent {
  id: ID!
  type: String!
  createdAt: DateTime!
  deliveries: [PublishedDelivery!]!
  """True when an idempotencyKey answered an earlier event (REST: the Idempotent-Replayed header)."""
  replayed: Boolean!
}

type EventType {
  """group.event, e.g. order.created"""
  name: String!
  description: String
  """The JSON Schema (draft 2020-12) of the event's data; null when any data is accepted."""
  schema: JSON
  """Example data payloads, each valid against schema."""
  examples: [JSON]!
  deprecated: Boolean!
  """Published by keyway about the webhooks themselves; read-only."""
  operational: Boolean!
  createdAt: DateTime!
  updatedAt: DateTime!
}

type EventTypeConnection {
  nodes: [EventType!]!
  pageInfo: PageInfo!
}

type WebhookSettings {
  """When true, publishing an event whose type is not in the catalog is refused."""
  refuseUnknownEventTypes: Boolean!
  """Origins that may show the portal in an iframe (CSP frame-ancestors)."""
  portalFrameOrigins: [String!]!
  """The name the portal shows its receivers; null for none."""
  portalDisplayName: String
  """The portal's accent colour as set (#rrggbb); null for keyway's. Adjusted per scheme for AA contrast."""
  portalAccentColor: String
  """The logo the portal shows, as keyway stores it; null for none."""
  portalLogo: PortalLogo
}

type PortalLogo {
  """SHA-256 of the image, hex."""
  sha256: String!
  """image/png, image/jpeg or image/webp"""
  contentType: String!
  sizeBytes: Int!
  updatedAt: DateTime!
}

type Recovery {
  id: ID!
  webhookConfigurationId: ID!
  since: DateTime!
  until: DateTime!
  """running, done or stopped (the configuration was disabled or deleted before the end)"""
  status: String!
  """Failed deliveries of the window when the recovery started."""
  found: Int!
  """Deliveries re-sent so far."""
  resent: Int!
  """Deliveries of the window no longer failed when their turn came."""
  skipped: Int!
  createdAt: DateTime!
  finishedAt: DateTime
}

type RecoveryConnection {
  nodes: [Recovery!]!
  pageInfo: PageInfo!
}

type PortalLink {
  """Open once, before expiresAt: a portal session for this configuration alone. Shown only here."""
  url: String!
  webhookConfigurationId: ID!
  expiresAt: DateTime!
}

type PortalSession {
  id: ID!
  webhookConfigurationId: ID!
  """active, ended or expired"""
  status: String!
  createdAt: DateTime!
  lastSeenAt: DateTime!
  expiresAt: DateTime!
  endedAt: DateTime
}

type PortalSessionConnection {
  nodes: [PortalSession!]!
  pageInfo: PageInfo!
}

input CreateEventTypeInput {
  name: String!
  description: String
  """A JSON Schema (draft 2020-12) for the event's data: at most 64 KiB, 32 levels deep, $ref only within itself."""
  schema: JSON
  """At most 10, each validated against schema."""
  examples: [JSON]
  deprecated: Boolean
}

input UpdateEventTypeInput {
  """null removes the description"""
  description: String
  """null removes the schema: any data is then accepted"""
  schema: JSON
  examples: [JSON]
  deprecated: Boolean
}

input UpdateWebhookSettingsInput {
  refuseUnknownEventTypes: Boolean
  """https origins, at most 10"""
  portalFrameOrigins: [String!]
  """1 to 80 characters; null removes it"""
  portalDisplayName: String
  """#rrggbb; null restores keyway's"""
  portalAccentColor: String
  """https URL of a PNG, JPEG or WebP of at most 64 KiB, fetched once now; null removes the logo"""
  portalLogoUrl: String
}

input OAuthCredentialsInput {
  tokenUrl: String!
  clientId: String!
  """Required unless authMethod is private_key_jwt."""
  clientSecret: String
  authMethod: String
  scope: String
  resource: [String!]
  audience: String
  assertionAudience: String
  dpop: Boolean
}

input OAuthCredentialsPatch {
  tokenUrl: String
  clientId: String
  clientSecret: String
  authMethod: String
  """null sends none"""
  scope: String
  """null sends none"""
  resource: [String!]
  """null sends none"""
  audience: String
  """null: the token URL"""
  assertionAudience: String
  dpop: Boolean
}

input CreateWebhookConfigurationInput {
  """push (the default) or polling: no url, oauth, tokenCache, ordered, rateLimit or signatureScheme then."""
  delivery: String
  """Required unless delivery is polling."""
  url: String
  events: [String!]
  description: String
  """Required unless delivery is polling."""
  oauth: OAuthCredentialsInput
  tokenCache: Boolean
  ordered: Boolean
  rateLimit: Int
  """The organization's operations configuration (receives operational events); default false."""
  operations: Boolean
  """v1 (the default): HMAC-SHA256 with a whsec_ secret; v1a: Ed25519, verified with signingPublicKey."""
  signatureScheme: String
  """A payload filter over the event's type, channels and data, checked against the types' schemas; {} or null: none."""
  filter: JSON
  """The channels it receives (at most 10); without: every channel."""
  channels: [String!]
}

input UpdateWebhookConfigurationInput {
  url: String
  events: [String!]
  description: String
  oauth: OAuthCredentialsPatch
  tokenCache: Boolean
  ordered: Boolean
  """null removes the limit"""
  rateLimit: Int
  operations: Boolean
  """A payload filter; {} or null removes it."""
  filter: JSON
  """The channels it receives; null: every channel again."""
  channels: [String!]
  """The receiver's own payload filter, applied after filter; {} or null removes it."""
  receiverFilter: JSON
  """The receiver's own channels, within channels; null: every channel channels allows."""
  receiverChannels: [String!]
  """active, paused (deliveries held until active again) or disabled"""
  status: String
}
`;

export const schema = buildSchema(SDL);
