/**
 * Webhook configurations ("Create webhook configuration", spec 2.5): where an organization's
 * webhooks go and how keyway authenticates to the receiver (its OAuth token URL and client
 * credentials, spec 4.3). The organization's WebhookObject is the record (objects/webhooks.ts);
 * this module checks target URLs with the SSRF guard, seals the receiver's client secret and our
 * signing secrets with AES-256-GCM (bound to the organization and configuration), and shows the
 * signing secret once, at creation or rotation.
 */
import type { Deps } from "../deps";
import { invalidInput, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { open, seal } from "../lib/aead";
import { ID_PATTERN, newWebhookConfigurationId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap, webhookObject } from "../objects/stubs";
import type { ConfigurationPatch } from "../objects/webhooks";
import type {
  CreateWebhookConfigurationInput,
  UpdateWebhookConfigurationInput,
  WebhookConfigurationRecord,
  WebhookConfigurationView,
} from "../schemas/webhooks";
import { newSigningSecret } from "./signature";
import { checkTarget } from "./ssrf";

/** How long a rotated-out signing secret keeps signing (both signatures are sent). */
export const SIGNING_SECRET_OVERLAP_MS = 24 * 3600 * 1000;

const aad = (owner: { organization_id: string; id: string }, purpose: string) => `${owner.organization_id}:${owner.id}:${purpose}`;

function validTarget(deps: Deps, field: string, url: string): string {
  const check = checkTarget(url, { allowInsecure: deps.config.allowInsecureTargets });
  if (!check.ok) throw invalidInput({ label: "request body", issues: [{ path: field.split("."), text: `: ${check.reason}` }] });
  return check.url.toString();
}

const webhooks = (deps: Deps, orgId: string) => webhookObject(deps, orgId);

export async function createWebhookConfiguration(
  deps: Deps,
  orgId: string,
  input: CreateWebhookConfigurationInput,
  actor: Actor,
): Promise<{ record: WebhookConfigurationRecord; signingSecret: string }> {
  const url = validTarget(deps, "url", input.url);
  const tokenUrl = validTarget(deps, "oauth.token_url", input.oauth.token_url);
  const id = newWebhookConfigurationId();
  const now = deps.now();
  const owner = { organization_id: orgId, id };
  const signingSecret = newSigningSecret();
  const configuration = {
    id,
    url,
    events: input.events ? [...new Set(input.events)] : null,
    description: input.description ?? null,
    oauth: {
      token_url: tokenUrl,
      client_id: input.oauth.client_id,
      client_secret: await seal(deps.config.encryptionKeys, input.oauth.client_secret, aad(owner, "oauth_client_secret")),
    },
    token_cache: input.token_cache ?? false,
    signing_secret: {
      secret: await seal(deps.config.encryptionKeys, signingSecret, aad(owner, "signing_secret")),
      created_at: isoTime(now),
      expires_at: null,
    },
  };
  const record = unwrap(await reach("webhooks", () => webhooks(deps, orgId).createConfiguration(orgId, configuration, actor, now)));
  return { record, signingSecret };
}

/** Scoped to the caller's organization: another organization's id is simply not found. */
export async function getWebhookConfiguration(deps: Deps, orgId: string, id: string): Promise<WebhookConfigurationRecord> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  return unwrap(await reach("webhooks", () => webhooks(deps, orgId).configuration(id)));
}

export async function listWebhookConfigurations(deps: Deps, orgId: string, page: PageRequest): Promise<Page<WebhookConfigurationRecord>> {
  return unwrap(await reach("webhooks", () => webhooks(deps, orgId).listConfigurations(page)));
}

/**
 * Absent fields are kept. The object refuses moving `url` or `oauth.token_url` to another origin
 * without `oauth.client_secret` in the same request (it compares with what it holds, in the same
 * transaction as the write).
 */
export async function updateWebhookConfiguration(
  deps: Deps,
  orgId: string,
  id: string,
  input: UpdateWebhookConfigurationInput,
  actor: Actor,
): Promise<WebhookConfigurationRecord> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const owner = { organization_id: orgId, id };
  const patch: ConfigurationPatch = {
    ...(input.url !== undefined ? { url: validTarget(deps, "url", input.url) } : {}),
    ...(input.events !== undefined ? { events: input.events && [...new Set(input.events)] } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.token_cache !== undefined ? { token_cache: input.token_cache } : {}),
    ...(input.status !== undefined ? { status: input.status } : {}),
  };
  if (input.oauth !== undefined) {
    patch.oauth = {
      ...(input.oauth.token_url !== undefined ? { token_url: validTarget(deps, "oauth.token_url", input.oauth.token_url) } : {}),
      ...(input.oauth.client_id !== undefined ? { client_id: input.oauth.client_id } : {}),
      ...(input.oauth.client_secret !== undefined
        ? { client_secret: await seal(deps.config.encryptionKeys, input.oauth.client_secret, aad(owner, "oauth_client_secret")) }
        : {}),
    };
  }
  const now = deps.now();
  return unwrap(await reach("webhooks", () => webhooks(deps, orgId).updateConfiguration(id, patch, actor, now)));
}

export async function deleteWebhookConfiguration(deps: Deps, orgId: string, id: string, actor: Actor): Promise<WebhookConfigurationRecord> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const now = deps.now();
  return unwrap(await reach("webhooks", () => webhooks(deps, orgId).deleteConfiguration(id, actor, now)));
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
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const now = deps.now();
  const previousExpiresAt = isoTime(now + SIGNING_SECRET_OVERLAP_MS);
  const signingSecret = newSigningSecret();
  const secret = {
    secret: await seal(deps.config.encryptionKeys, signingSecret, aad({ organization_id: orgId, id }, "signing_secret")),
    created_at: isoTime(now),
    expires_at: null,
  };
  const record = unwrap(
    await reach("webhooks", () => webhooks(deps, orgId).rotateSigningSecret(id, secret, previousExpiresAt, actor, now)),
  );
  return { record, signingSecret, previousExpiresAt };
}

/** Signing secrets that are still live at `nowMs`, newest first. */
export async function liveSigningSecrets(deps: Deps, record: WebhookConfigurationRecord, nowMs: number): Promise<string[]> {
  const live = record.signing_secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs);
  return Promise.all(live.map((s) => open(deps.config.encryptionKeys, s.secret, aad(record, "signing_secret"))));
}

export function receiverClientSecret(deps: Deps, record: WebhookConfigurationRecord): Promise<string> {
  return open(deps.config.encryptionKeys, record.oauth.client_secret, aad(record, "oauth_client_secret"));
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
    failing_since: record.failing_since,
    last_delivered_at: record.last_delivered_at,
    signing_secret_rotated_at: record.signing_secrets[0]?.created_at ?? record.created_at,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}
