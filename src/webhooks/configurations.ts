/**
 * Webhook configurations ("Create webhook configuration", spec 2.5): where an organization's
 * webhooks go and how keyway authenticates to the receiver (its OAuth token URL and client
 * credentials, spec 4.3). Target URLs pass the SSRF guard on every write; the receiver's client
 * secret and our signing secrets are sealed with AES-256-GCM, bound to the organization and
 * configuration, and only the signing secret is ever shown, once, at creation or rotation.
 */
import type { Deps } from "../deps";
import { ApiError, invalidInput, notFound } from "../errors";
import { recordChange } from "../identity/audit";
import type { Actor } from "../identity/changes";
import { open, seal } from "../lib/aead";
import { IsolateCache } from "../lib/cache";
import { ID_PATTERN, newWebhookConfigurationId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { ListQuery } from "../schemas/common";
import {
  type CreateWebhookConfigurationInput,
  type UpdateWebhookConfigurationInput,
  WebhookConfigurationRecord,
  type WebhookConfigurationView,
} from "../schemas/webhooks";
import { getRecord, listPage, type Page, putRecord } from "../stores/kv";
import { kvKeys } from "../stores/kv-keys";
import { newSigningSecret } from "./signature";
import { checkTarget } from "./ssrf";

/** How long a rotated-out signing secret keeps signing (both signatures are sent). */
export const SIGNING_SECRET_OVERLAP_MS = 24 * 3600 * 1000;

const aad = (record: { organization_id: string; id: string }, purpose: string) => `${record.organization_id}:${record.id}:${purpose}`;

function validTarget(deps: Deps, field: string, url: string): string {
  const check = checkTarget(url, { allowInsecure: deps.config.allowInsecureTargets });
  if (!check.ok) throw invalidInput({ label: "request body", issues: [{ path: field.split("."), text: `: ${check.reason}` }] });
  return check.url.toString();
}

export async function createWebhookConfiguration(
  deps: Deps,
  orgId: string,
  input: CreateWebhookConfigurationInput,
  actor: Actor,
): Promise<{ record: WebhookConfigurationRecord; signingSecret: string }> {
  const url = validTarget(deps, "url", input.url);
  const tokenUrl = validTarget(deps, "oauth.token_url", input.oauth.token_url);
  const id = newWebhookConfigurationId();
  const now = isoTime(deps.now());
  const owner = { organization_id: orgId, id };
  const signingSecret = newSigningSecret();
  const record: WebhookConfigurationRecord = {
    id,
    organization_id: orgId,
    url,
    events: input.events ? [...new Set(input.events)] : null,
    description: input.description ?? null,
    oauth: {
      token_url: tokenUrl,
      client_id: input.oauth.client_id,
      client_secret: await seal(deps.config.encryptionKeys, input.oauth.client_secret, aad(owner, "oauth_client_secret")),
    },
    token_cache: input.token_cache ?? false,
    signing_secrets: [
      { secret: await seal(deps.config.encryptionKeys, signingSecret, aad(owner, "signing_secret")), created_at: now, expires_at: null },
    ],
    status: "active",
    disabled_reason: null,
    created_at: now,
    updated_at: now,
  };
  await save(deps, record);
  await recordChange(deps, orgId, actor, {
    action: "webhook_configuration.created",
    resource: { type: "webhook_configuration", id },
    detail: { url, token_url: tokenUrl, events: record.events },
  });
  return { record, signingSecret };
}

export async function findWebhookConfiguration(deps: Deps, orgId: string, id: string): Promise<WebhookConfigurationRecord | null> {
  if (!ID_PATTERN.test(id)) return null;
  return getRecord(deps.kv, kvKeys.webhookConfiguration(orgId, id), WebhookConfigurationRecord);
}

/** Scoped to the caller's organization: another organization's id is simply not found. */
export async function getWebhookConfiguration(deps: Deps, orgId: string, id: string): Promise<WebhookConfigurationRecord> {
  const record = await findWebhookConfiguration(deps, orgId, id);
  if (record === null) throw notFound("Webhook configuration");
  return record;
}

/**
 * First pages of an organization's configurations, cached in the isolate for LIST_CACHE_TTL_MS
 * (KV lists are eventually consistent anyway); writes through this isolate clear the entry.
 */
export const LIST_CACHE_TTL_MS = 10_000;
const firstPages = new IsolateCache<Page<WebhookConfigurationRecord>>({ ttlMs: LIST_CACHE_TTL_MS, maxEntries: 5_000 });

export async function listWebhookConfigurations(deps: Deps, orgId: string, query: ListQuery): Promise<Page<WebhookConfigurationRecord>> {
  const cacheKey = query.cursor === undefined ? `${orgId}:${query.limit}` : null;
  const cached = cacheKey === null ? undefined : firstPages.get(cacheKey, deps.now());
  if (cached !== undefined) return cached;
  const page = await listPage(deps.kv, kvKeys.webhookConfigurationsPrefix(orgId), query, (key) =>
    getRecord(deps.kv, key, WebhookConfigurationRecord),
  );
  if (cacheKey !== null) firstPages.set(cacheKey, page, deps.now());
  return page;
}

function forgetLists(orgId: string): void {
  firstPages.deletePrefix(`${orgId}:`);
}

/** Every configuration of an organization (publishing needs them all), in pages of 1000. */
export async function allWebhookConfigurations(deps: Deps, orgId: string): Promise<WebhookConfigurationRecord[]> {
  const all: WebhookConfigurationRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await listWebhookConfigurations(deps, orgId, { limit: 1000, ...(cursor ? { cursor } : {}) });
    all.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return all;
}

export async function updateWebhookConfiguration(
  deps: Deps,
  orgId: string,
  id: string,
  input: UpdateWebhookConfigurationInput,
  actor: Actor,
): Promise<WebhookConfigurationRecord> {
  const current = await getWebhookConfiguration(deps, orgId, id);
  const oauth = { ...current.oauth };
  if (input.oauth?.token_url !== undefined) oauth.token_url = validTarget(deps, "oauth.token_url", input.oauth.token_url);
  if (input.oauth?.client_id !== undefined) oauth.client_id = input.oauth.client_id;
  if (input.oauth?.client_secret !== undefined) {
    oauth.client_secret = await seal(deps.config.encryptionKeys, input.oauth.client_secret, aad(current, "oauth_client_secret"));
  }
  const status = input.status ?? current.status;
  const updated: WebhookConfigurationRecord = {
    ...current,
    url: input.url !== undefined ? validTarget(deps, "url", input.url) : current.url,
    events: input.events === undefined ? current.events : input.events && [...new Set(input.events)],
    description: input.description === undefined ? current.description : input.description,
    oauth,
    token_cache: input.token_cache ?? current.token_cache,
    status,
    disabled_reason: status === "active" ? null : input.status === "disabled" ? "disabled through the API" : current.disabled_reason,
    updated_at: isoTime(deps.now()),
  };
  await save(deps, updated);
  await recordChange(deps, orgId, actor, {
    action: "webhook_configuration.updated",
    resource: { type: "webhook_configuration", id },
    detail: { fields: Object.keys(input), url: updated.url, token_url: updated.oauth.token_url, status: updated.status },
  });
  return updated;
}

export async function deleteWebhookConfiguration(deps: Deps, orgId: string, id: string, actor: Actor): Promise<WebhookConfigurationRecord> {
  const current = await getWebhookConfiguration(deps, orgId, id);
  forgetLists(orgId);
  await deps.kv.delete(kvKeys.webhookConfiguration(orgId, id));
  await recordChange(deps, orgId, actor, { action: "webhook_configuration.deleted", resource: { type: "webhook_configuration", id } });
  return current;
}

/**
 * New signing secret, returned once. The previous one keeps signing for 24 h so receivers can
 * switch without dropping webhooks; older ones are discarded.
 */
export async function rotateSigningSecret(
  deps: Deps,
  orgId: string,
  id: string,
  actor: Actor,
): Promise<{ record: WebhookConfigurationRecord; signingSecret: string; previousExpiresAt: string }> {
  const current = await getWebhookConfiguration(deps, orgId, id);
  const nowMs = deps.now();
  const previous = current.signing_secrets[0];
  if (previous === undefined) throw new ApiError("server_error", "A stored record is corrupt.");
  const previousExpiresAt = isoTime(nowMs + SIGNING_SECRET_OVERLAP_MS);
  const signingSecret = newSigningSecret();
  const updated: WebhookConfigurationRecord = {
    ...current,
    signing_secrets: [
      {
        secret: await seal(deps.config.encryptionKeys, signingSecret, aad(current, "signing_secret")),
        created_at: isoTime(nowMs),
        expires_at: null,
      },
      { ...previous, expires_at: previousExpiresAt },
    ],
    updated_at: isoTime(nowMs),
  };
  await save(deps, updated);
  await recordChange(deps, orgId, actor, {
    action: "webhook_configuration.signing_secret_rotated",
    resource: { type: "webhook_configuration", id },
    detail: { previous_secret_expires_at: previousExpiresAt },
  });
  return { record: updated, signingSecret, previousExpiresAt };
}

/** Signing secrets that are still live at `nowMs`, newest first. */
export async function liveSigningSecrets(deps: Deps, record: WebhookConfigurationRecord, nowMs: number): Promise<string[]> {
  const live = record.signing_secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs);
  return Promise.all(live.map((s) => open(deps.config.encryptionKeys, s.secret, aad(record, "signing_secret"))));
}

export function receiverClientSecret(deps: Deps, record: WebhookConfigurationRecord): Promise<string> {
  return open(deps.config.encryptionKeys, record.oauth.client_secret, aad(record, "oauth_client_secret"));
}

/** Used by the consumer when a receiver answers 410 Gone. */
export async function disableWebhookConfiguration(deps: Deps, record: WebhookConfigurationRecord, reason: string): Promise<void> {
  await save(deps, { ...record, status: "disabled", disabled_reason: reason, updated_at: isoTime(deps.now()) });
}

export function matchesEvent(record: WebhookConfigurationRecord, type: string): boolean {
  return record.status === "active" && (record.events === null || record.events.includes(type));
}

export function webhookConfigurationView(record: WebhookConfigurationRecord): WebhookConfigurationView {
  return {
    id: record.id,
    organization_id: record.organization_id,
    url: record.url,
    events: record.events,
    description: record.description,
    oauth: { token_url: record.oauth.token_url, client_id: record.oauth.client_id },
    token_cache: record.token_cache,
    status: record.status,
    disabled_reason: record.disabled_reason,
    signing_secret_rotated_at: record.signing_secrets[0]?.created_at ?? record.created_at,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

function save(deps: Deps, record: WebhookConfigurationRecord): Promise<void> {
  forgetLists(record.organization_id);
  return putRecord(deps.kv, kvKeys.webhookConfiguration(record.organization_id, record.id), WebhookConfigurationRecord, record);
}
