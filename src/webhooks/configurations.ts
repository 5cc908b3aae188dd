/**
 * Webhook configurations ("Create webhook configuration", spec 2.5): where an organization's
 * webhooks go, how keyway authenticates to the receiver (its OAuth token URL and client
 * credentials, spec 4.3) and how its deliveries are paced (`ordered`, `rate_limit`). The
 * organization's WebhookObject is the record of the settings, the endpoint's EndpointObject of its
 * state (lane, pause, health); a configuration as surfaces show it is both. This module checks
 * target URLs with the SSRF guard, seals the receiver's client secret and our signing secrets with
 * AES-256-GCM (bound to the organization and configuration), and shows the signing secret once,
 * at creation or rotation. A change the endpoint's object has not taken yet is answered 503 (it
 * is recorded, and applied within seconds; repeating the request is safe), as key revocations are.
 */
import type { Deps } from "../deps";
import { ApiError, invalidInput, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { open, type SealedValue, seal } from "../lib/aead";
import { sha256Hex } from "../lib/crypto";
import { ID_PATTERN, newWebhookConfigurationId } from "../lib/ids";
import { checkTarget } from "../lib/ssrf";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { endpointObject, reach, UNAVAILABLE_RETRY_AFTER_SECONDS, unwrap, webhookObject } from "../objects/stubs";
import type { AssertionKeyCandidate, ChangedBy, ConfigurationPatch } from "../objects/webhooks/configurations";
import { PREVIEW_SHOWN } from "../objects/webhooks/limits";
import type { Changed } from "../objects/webhooks/object";
import type { RoutePreviewEvent } from "../objects/webhooks/routing";
import {
  type CreateWebhookConfigurationInput,
  keyScheme,
  type RoutingPreviewInput,
  receiverOAuth,
  type SignatureScheme,
  type UpdateWebhookConfigurationInput,
  type WebhookConfiguration,
  type WebhookConfigurationRecord,
  type WebhookConfigurationView,
} from "../schemas/webhooks";
import { newPollingToken, pollingPath } from "./polling";
import { newAssertionKey, newDpopKey } from "./receiver-keys";
import { newSigningKey } from "./signature";

/** How long a rotated-out signing secret keeps signing (both signatures are sent). */
export const SIGNING_SECRET_OVERLAP_MS = 24 * 3600 * 1000;

const aad = (owner: { organization_id: string; id: string }, purpose: string) => `${owner.organization_id}:${owner.id}:${purpose}`;

function validTarget(deps: Deps, field: string, url: string): string {
  const check = checkTarget(url, { allowInsecure: deps.config.allowInsecureTargets });
  if (!check.ok) throw invalidInput({ label: "request body", issues: [{ path: field.split("."), text: `: ${check.reason}` }] });
  return check.url.toString();
}

const webhooks = (deps: Deps, orgId: string) => webhookObject(deps, orgId);

/** The record with its endpoint's state, read from the endpoint's object. */
async function withState(deps: Deps, record: WebhookConfigurationRecord): Promise<WebhookConfiguration> {
  const state = await reach("webhook endpoint", () => endpointObject(deps, record.id).state(deps.now()));
  return { ...record, state };
}

/** A change the organization committed: the configuration, once its endpoint's object has it too. */
async function applied(deps: Deps, changed: Changed): Promise<WebhookConfiguration> {
  if (!changed.applied) {
    throw new ApiError(
      "service_unavailable",
      "The change is recorded but its endpoint's delivery object has not taken it yet; it is applied within seconds. Repeat the request (it is safe to) to see it applied.",
      { headers: { "Retry-After": String(UNAVAILABLE_RETRY_AFTER_SECONDS) } },
    );
  }
  return withState(deps, changed.record);
}

/** What a creation shows once: the v1 secret, or a polling configuration's token (null otherwise). */
export interface CreatedSecrets {
  signingSecret: string | null;
  pollingToken: string | null;
}

export async function createWebhookConfiguration(
  deps: Deps,
  orgId: string,
  input: CreateWebhookConfigurationInput,
  actor: Actor,
): Promise<{ config: WebhookConfiguration } & CreatedSecrets> {
  if (input.delivery === "polling") return createPollingConfiguration(deps, orgId, input, actor);
  if (input.url === undefined || input.oauth === undefined) throw new ApiError("invalid_request", "url and oauth are required.");
  const url = validTarget(deps, "url", input.url);
  const tokenUrl = validTarget(deps, "oauth.token_url", input.oauth.token_url);
  const id = newWebhookConfigurationId();
  const now = deps.now();
  const owner = { organization_id: orgId, id };
  const key = await newSigningKey(input.signature_scheme ?? "v1");
  const o = input.oauth;
  const jwt = o.auth_method === "private_key_jwt";
  const configuration = {
    id,
    url,
    delivery: "push" as const,
    polling: null,
    events: input.events ? [...new Set(input.events)] : null,
    description: input.description ?? null,
    oauth: {
      token_url: tokenUrl,
      client_id: o.client_id,
      client_secret:
        o.client_secret === undefined || jwt
          ? null
          : await seal(deps.config.encryptionKeys, o.client_secret, aad(owner, "oauth_client_secret")),
      auth_method: o.auth_method ?? "client_secret_post",
      scope: o.scope ?? null,
      resource: o.resource ?? null,
      audience: o.audience ?? null,
      assertion_audience: o.assertion_audience ?? null,
      dpop_key: o.dpop ? await newDpopKey(deps, orgId, id) : null,
    },
    token_cache: input.token_cache ?? false,
    ordered: input.ordered ?? false,
    rate_limit: input.rate_limit ?? null,
    operations: input.operations ?? false,
    signing_secret: await sealedSigningKey(deps, owner, key, now),
    ...routingOf(input),
  };
  // The configuration's own assertion key (issue 42): only the server that registers its key set accepts its assertions.
  const assertionKey = jwt ? await newAssertionKey(deps, orgId, id) : undefined;
  const record = unwrap(
    await reach("webhooks", () => webhooks(deps, orgId).createConfiguration(orgId, configuration, actor, now, assertionKey)),
  );
  return { config: await withState(deps, record), signingSecret: key.publicKey === null ? key.secret : null, pollingToken: null };
}

/**
 * A polling configuration (issue 45): no URL, no receiver OAuth, no pacing and no signing key; a
 * read credential of its own, of which the organization's object keeps only the SHA-256 (the
 * token is shown once, here). The SQL columns a push configuration needs hold empty values.
 */
async function createPollingConfiguration(
  deps: Deps,
  orgId: string,
  input: CreateWebhookConfigurationInput,
  actor: Actor,
): Promise<{ config: WebhookConfiguration } & CreatedSecrets> {
  const id = newWebhookConfigurationId();
  const now = deps.now();
  const token = await newPollingToken(deps, id, now);
  const configuration = {
    id,
    url: "",
    delivery: "polling" as const,
    polling: { token_hash: await sha256Hex(token), token_created_at: isoTime(now) },
    events: input.events ? [...new Set(input.events)] : null,
    description: input.description ?? null,
    oauth: { token_url: "", client_id: "", client_secret: null, auth_method: "client_secret_post" as const, dpop_key: null },
    token_cache: false,
    ordered: true,
    rate_limit: null,
    operations: input.operations ?? false,
    signing_secret: null,
    ...routingOf(input),
  };
  const record = unwrap(await reach("webhooks", () => webhooks(deps, orgId).createConfiguration(orgId, configuration, actor, now)));
  return { config: await withState(deps, record), signingSecret: null, pollingToken: token };
}

/** A filter as the organization's object takes it: its JSON text (routing.ts checks it), or null for none. */
const filterText = (filter: Record<string, unknown> | null | undefined): string | null => (filter == null ? null : JSON.stringify(filter));

/** A new configuration's filter and channels. */
function routingOf(input: CreateWebhookConfigurationInput): { filter: string | null; channels: string[] | null } {
  return { filter: filterText(input.filter), channels: input.channels ?? null };
}

/** A signing key as the record keeps it: the secret sealed, the public key (v1a) beside it. */
async function sealedSigningKey(
  deps: Deps,
  owner: { organization_id: string; id: string },
  key: { secret: string; publicKey: string | null },
  now: number,
): Promise<WebhookConfigurationRecord["signing_secrets"][number]> {
  return {
    secret: await seal(deps.config.encryptionKeys, key.secret, aad(owner, "signing_secret")),
    created_at: isoTime(now),
    expires_at: null,
    ...(key.publicKey === null ? {} : { public_key: key.publicKey }),
  };
}

/** Scoped to the caller's organization: another organization's id is simply not found. */
export async function getWebhookConfiguration(deps: Deps, orgId: string, id: string): Promise<WebhookConfiguration> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const [record, state] = await Promise.all([
    reach("webhooks", () => webhooks(deps, orgId).configuration(id)),
    reach("webhook endpoint", () => endpointObject(deps, id).state(deps.now())),
  ]);
  return { ...unwrap(record), state };
}

/** A page of configurations, each with its endpoint's state (one call per endpoint, in parallel; at most 20 exist). */
export async function listWebhookConfigurations(deps: Deps, orgId: string, page: PageRequest): Promise<Page<WebhookConfiguration>> {
  const records = unwrap(await reach("webhooks", () => webhooks(deps, orgId).listConfigurations(page)));
  return { ...records, items: await Promise.all(records.items.map((r) => withState(deps, r))) };
}

/**
 * Absent fields are kept. The object refuses moving `url` or `oauth.token_url` to another origin
 * without `oauth.client_secret` in the same request (it compares with what it holds, in the same
 * transaction as the write), and, for a receiver's change (`by: "receiver"`, the portal), anything
 * that would change whose identity keyway asserts (issue 42).
 */
export async function updateWebhookConfiguration(
  deps: Deps,
  orgId: string,
  id: string,
  input: UpdateWebhookConfigurationInput,
  actor: Actor,
  by: ChangedBy = "organization",
): Promise<WebhookConfiguration> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const owner = { organization_id: orgId, id };
  const patch: ConfigurationPatch = {
    ...(input.url !== undefined ? { url: validTarget(deps, "url", input.url) } : {}),
    ...(input.events !== undefined ? { events: input.events && [...new Set(input.events)] } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.token_cache !== undefined ? { token_cache: input.token_cache } : {}),
    ...(input.ordered !== undefined ? { ordered: input.ordered } : {}),
    ...(input.rate_limit !== undefined ? { rate_limit: input.rate_limit } : {}),
    ...(input.status !== undefined ? { status: input.status } : {}),
    ...(input.operations !== undefined ? { operations: input.operations } : {}),
    ...(input.filter !== undefined ? { filter: filterText(input.filter) } : {}),
    ...(input.channels !== undefined ? { channels: input.channels } : {}),
    ...(input.receiver_filter !== undefined ? { receiver_filter: filterText(input.receiver_filter) } : {}),
    ...(input.receiver_channels !== undefined ? { receiver_channels: input.receiver_channels } : {}),
  };
  let assertionKey: AssertionKeyCandidate | undefined;
  if (input.oauth !== undefined) {
    const o = input.oauth;
    patch.oauth = {
      ...(o.token_url !== undefined ? { token_url: validTarget(deps, "oauth.token_url", o.token_url) } : {}),
      ...(o.client_id !== undefined ? { client_id: o.client_id } : {}),
      ...(o.client_secret !== undefined
        ? { client_secret: await seal(deps.config.encryptionKeys, o.client_secret, aad(owner, "oauth_client_secret")) }
        : {}),
      ...(o.auth_method !== undefined ? { auth_method: o.auth_method } : {}),
      ...(o.scope !== undefined ? { scope: o.scope } : {}),
      ...(o.resource !== undefined ? { resource: o.resource } : {}),
      ...(o.audience !== undefined ? { audience: o.audience } : {}),
      ...(o.assertion_audience !== undefined ? { assertion_audience: o.assertion_audience } : {}),
      // Turning DPoP on makes a new key (so tokens bound to an earlier one are not reused); off drops it.
      ...(o.dpop === true ? { dpop_key: await newDpopKey(deps, orgId, id) } : o.dpop === false ? { dpop_key: null } : {}),
    };
    // A key of its own in case the change needs one (switched to private_key_jwt, or moved off the
    // organization's key by a change of what its assertions state); the object drops it otherwise.
    if (o.auth_method !== undefined || o.client_id !== undefined || o.assertion_audience !== undefined || o.token_url !== undefined) {
      assertionKey = await newAssertionKey(deps, orgId, id);
    }
  }
  const now = deps.now();
  return applied(
    deps,
    unwrap(await reach("webhooks", () => webhooks(deps, orgId).updateConfiguration(id, patch, actor, now, assertionKey, by))),
  );
}

/**
 * The receiver's "try it": whether each of the latest events sent to the configuration (at most
 * PREVIEW_SHOWN, read from its endpoint's object, which keeps their bodies) would still go there
 * with the proposed receiver filter and channels, decided in the organization's object as a
 * publish decides it (objects/webhooks/routing.ts previewRouting; the filter language stays out of
 * the companions' bundles). Two calls, one to each object; nothing is sent or written. A proposed
 * filter is checked as a save would check it (a 400 naming `receiver_filter`).
 */
export async function previewReceiverRouting(
  deps: Deps,
  orgId: string,
  id: string,
  input: RoutingPreviewInput,
): Promise<RoutePreviewEvent[]> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const filter = filterText(input.receiver_filter);
  const tried = await reach("webhook endpoint", () => endpointObject(deps, id).recentEvents(PREVIEW_SHOWN));
  return unwrap(await reach("webhooks", () => webhooks(deps, orgId).previewRouting(id, filter, input.receiver_channels ?? null, tried)));
}

/** Deletes it; its endpoint's open deliveries end `failed` (nothing more is sent once this answers). */
export async function deleteWebhookConfiguration(deps: Deps, orgId: string, id: string, actor: Actor): Promise<WebhookConfiguration> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const now = deps.now();
  return applied(deps, unwrap(await reach("webhooks", () => webhooks(deps, orgId).deleteConfiguration(id, actor, now))));
}

/**
 * New signing secret, returned once. The previous one keeps signing for 24 h so receivers can
 * switch without dropping webhooks, and every older secret still within its own 24 h keeps signing
 * too (issue 42), up to MAX_LIVE_SIGNING_SECRETS at once. (Answered even if the endpoint's object
 * has not taken it yet: the secret is shown only here, and the previous ones still sign.)
 */
export async function rotateSigningSecret(
  deps: Deps,
  orgId: string,
  id: string,
  actor: Actor,
  scheme?: SignatureScheme,
  by: ChangedBy = "organization",
): Promise<{ config: WebhookConfiguration; signingSecret: string | null; previousExpiresAt: string }> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const now = deps.now();
  const previousExpiresAt = isoTime(now + SIGNING_SECRET_OVERLAP_MS);
  // Without a scheme the new key keeps the current one's: read it (a change of scheme is a rotation, issue 45).
  const current = scheme ?? signatureSchemeOf(unwrap(await reach("webhooks", () => webhooks(deps, orgId).configuration(id))));
  if (current === null) throw new ApiError("conflict", "A polling configuration signs nothing: it has no signing key to rotate.");
  const key = await newSigningKey(current);
  const secret = await sealedSigningKey(deps, { organization_id: orgId, id }, key, now);
  const changed = unwrap(
    await reach("webhooks", () => webhooks(deps, orgId).rotateSigningSecret(id, secret, previousExpiresAt, actor, now, by)),
  );
  return { config: await withState(deps, changed.record), signingSecret: key.publicKey === null ? key.secret : null, previousExpiresAt };
}

/** The organization ends every earlier signing secret's grace now: only the current one signs. */
export async function endSigningGraces(
  deps: Deps,
  orgId: string,
  id: string,
  actor: Actor,
): Promise<{ config: WebhookConfiguration; ended: number }> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const changed = unwrap(await reach("webhooks", () => webhooks(deps, orgId).endSigningGraces(id, actor, deps.now())));
  return { config: await withState(deps, changed.record), ended: changed.ended };
}

/** The scheme the newest key signs with (`v1a` keys keep their public key); null for a polling configuration. */
export function signatureSchemeOf(record: Pick<WebhookConfigurationRecord, "signing_secrets" | "delivery">): SignatureScheme | null {
  if (record.delivery === "polling") return null;
  const newest = record.signing_secrets[0];
  return newest === undefined ? "v1" : keyScheme(newest);
}

/** Signing secrets that are still live at `nowMs`, newest first. */
export async function liveSigningSecrets(deps: Deps, record: WebhookConfigurationRecord, nowMs: number): Promise<string[]> {
  const live = record.signing_secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs);
  return Promise.all(live.map((s) => open(deps.config.encryptionKeys, s.secret, aad(record, "signing_secret"))));
}

/** The receiver's client secret; "" with private_key_jwt, which has none. */
export async function receiverClientSecret(deps: Deps, record: WebhookConfigurationRecord): Promise<string> {
  const sealed = record.oauth.client_secret;
  return sealed === null ? "" : open(deps.config.encryptionKeys, sealed, aad(record, "oauth_client_secret"));
}

/**
 * Where a receiver's OAuth server finds keyway's public keys for private_key_jwt (its `jwks_uri`),
 * on keyway's origin: the configuration's own set (issue 42), or with no configuration the
 * organization's set of issue 31 (for configurations not moved yet).
 */
/**
 * A configuration's one health status, the first that applies: disabled (by whom or why), paused
 * (by keyway or by the organization, with its reason), failing (every attempt since a time), or
 * active. The manager's and the portal's badge and the organization's overview all say this one.
 */
export const healthStatus = (w: WebhookConfiguration): "disabled" | "paused" | "failing" | "active" =>
  w.status === "disabled" ? "disabled" : w.state.pause_reason !== null ? "paused" : w.state.failing_since !== null ? "failing" : "active";

export const receiverJwksPath = (orgId: string, configId?: string) =>
  configId === undefined ? `/v1/receiver-jwks/${orgId}` : `/v1/receiver-jwks/${orgId}/${configId}`;

/** The endpoint's shared receiver token (token_cache) is kept sealed like the client secret, bound to its configuration. */
export function sealReceiverToken(deps: Deps, record: WebhookConfigurationRecord, token: string): Promise<SealedValue> {
  return seal(deps.config.encryptionKeys, token, aad(record, "receiver_token"));
}

export function openReceiverToken(deps: Deps, record: WebhookConfigurationRecord, sealed: SealedValue): Promise<string> {
  return open(deps.config.encryptionKeys, sealed, aad(record, "receiver_token"));
}

/** The receiver's OAuth settings as surfaces show them: never a secret or a private key. `origin`: keyway's public origin. */
function oauthView(config: WebhookConfiguration, origin: string): WebhookConfigurationView["oauth"] {
  const o = receiverOAuth(config);
  return {
    token_url: o.token_url,
    client_id: o.client_id,
    auth_method: o.auth_method,
    scope: o.scope,
    resource: o.resource,
    audience: o.audience,
    assertion_audience: o.assertion_audience,
    dpop: o.dpop_key !== null,
    dpop_jkt: o.dpop_key?.jkt ?? null,
    jwks_uri: o.auth_method === "private_key_jwt" ? `${origin}${receiverJwksPath(config.organization_id, config.id)}` : null,
  };
}

/**
 * The configuration as every surface shows it. `origin` is keyway's public origin
 * (PUBLIC_BASE_URL, else the request's): the key set URL is absolute, as a receiver's OAuth server
 * registers it (RFC 7591 2, `jwks_uri`).
 */
export function webhookConfigurationView(config: WebhookConfiguration, origin: string): WebhookConfigurationView {
  const polling = config.delivery === "polling";
  const { polling: pollingState, ...state } = config.state;
  return {
    id: config.id,
    organization_id: config.organization_id,
    delivery: polling ? "polling" : "push",
    url: polling ? null : config.url,
    events: config.events,
    description: config.description,
    oauth: polling ? null : oauthView(config, origin),
    token_cache: config.token_cache,
    ordered: config.ordered,
    rate_limit: config.rate_limit,
    operations: config.operations === true,
    filter: config.filter ? (JSON.parse(config.filter) as WebhookConfigurationView["filter"]) : null,
    channels: config.channels ?? null,
    receiver_filter: config.receiver_filter ? (JSON.parse(config.receiver_filter) as WebhookConfigurationView["receiver_filter"]) : null,
    receiver_channels: config.receiver_channels ?? null,
    status: config.status,
    disabled_reason: config.disabled_reason,
    ...state,
    signature_scheme: signatureSchemeOf(config),
    signing_public_key: config.signing_secrets[0]?.public_key ?? null,
    signing_secret_rotated_at: config.signing_secrets[0]?.created_at ?? config.created_at,
    polling: polling
      ? {
          url: `${origin}${pollingPath(config.id)}`,
          token_active: (config.polling?.token_hash ?? null) !== null,
          backlog: pollingState?.backlog ?? 0,
          last_polled_at: pollingState?.last_polled_at ?? null,
        }
      : null,
    created_at: config.created_at,
    updated_at: config.updated_at,
  };
}
