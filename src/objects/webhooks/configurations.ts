/**
 * Webhook configurations in the organization's WebhookObject, the system of record for their
 * settings: every change one transaction with its audit entry and a new `version`; the endpoint's
 * object holds a copy of one version (`synced_version` records which it acknowledged), pushed
 * after each change and retried by the alarm. A deleted configuration leaves a tombstone until its
 * endpoint knows. Moving `url` or `oauth.token_url` to another origin needs `oauth.client_secret`
 * in the same change (product brief): no stored secret, and no token the receiver's server minted,
 * is sent to an origin the caller did not vouch for with it.
 */

import type { SealedValue } from "../../lib/aead";
import { isoTime } from "../../lib/time";
import type { Actor } from "../../schemas/audit";
import type { ReceiverAuthMethod, WebhookConfigurationRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import type { EndpointSnapshot } from "../endpoints/object";
import { fail, invalid, missing, ok, type Result } from "../sql";
import { type AuditOutboxEntry, redactUrl } from "./audit";
import { MAX_WEBHOOK_CONFIGURATIONS } from "./limits";
import type { ConfigRow } from "./schema";

/** A new configuration, its secrets already sealed by the Worker. */
export interface NewConfiguration {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  oauth: { token_url: string; client_id: string; client_secret: SealedValue | null } & ReceiverAuth;
  token_cache: boolean;
  ordered: boolean;
  rate_limit: number | null;
  signing_secret: WebhookConfigurationRecord["signing_secrets"][number];
}

/** A change to a configuration; absent fields are kept (null clears an optional one). */
export interface ConfigurationPatch {
  url?: string | undefined;
  events?: string[] | null | undefined;
  description?: string | null | undefined;
  oauth?:
    | ({
        token_url?: string | undefined;
        client_id?: string | undefined;
        client_secret?: SealedValue | undefined;
      } & { [K in keyof ReceiverAuth]?: ReceiverAuth[K] | undefined })
    | undefined;
  token_cache?: boolean | undefined;
  ordered?: boolean | undefined;
  rate_limit?: number | null | undefined;
  status?: "active" | "disabled" | undefined;
}

/**
 * An assertion key the Worker generated for private_key_jwt (issue 31): stored only when the
 * organization has no current one (the first configuration that needs it), else dropped.
 */
export interface AssertionKeyCandidate {
  kid: string;
  private_key: SealedValue;
  public_jwk: Record<string, unknown>;
}

/** A disable the endpoint's object asks for (a 410, or a receiver failing for the whole period). */
export interface DisableRequest {
  reason: string;
  /** A 410's: only while the url is still this one. */
  url: string | null;
  /**
   * The version the decision was made on: for a 410, the version the attempt used (a url edited
   * after it wins, even one edited back); for a health disable, a status change since (a re-enable) wins.
   */
  basis_version: number;
}

/**
 * Records an audit entry in the caller's transaction, for the actor of the call (the object binds
 * it); `actor` overrides it for changes the system makes on its own.
 */
export type Audit = (entry: Omit<AuditOutboxEntry, "at" | "actor"> & { actor?: Actor }) => void;

/**
 * Every column the table has: the legacy hand-over (legacy.ts) reads configurations before the
 * later versions' columns exist (`receiver_auth` is then undefined, read as the default request).
 */
export const configRow = (db: Db, id: string): ConfigRow | undefined =>
  db.first<ConfigRow>("SELECT rowid, * FROM configurations WHERE id = ?", id);

/**
 * What a configuration adds to spec 4.3's default request (issue 31), stored as one JSON column;
 * absent fields are the default's. The DPoP key is this configuration's, sealed by the Worker.
 */
export interface ReceiverAuth {
  auth_method?: ReceiverAuthMethod;
  scope?: string | null;
  resource?: string[] | null;
  audience?: string | null;
  assertion_audience?: string | null;
  dpop_key?: { jkt: string; private_key: SealedValue } | null;
}

const receiverAuthOf = (row: ConfigRow): ReceiverAuth => (row.receiver_auth ? (JSON.parse(row.receiver_auth) as ReceiverAuth) : {});

/** The JSON column for `auth`: NULL when it is the default request. */
const RECEIVER_AUTH_FIELDS = ["auth_method", "scope", "resource", "audience", "assertion_audience", "dpop_key"] as const;

function receiverAuthColumn(auth: ReceiverAuth): string | null {
  const kept = Object.fromEntries(
    RECEIVER_AUTH_FIELDS.map((k) => [k, auth[k]] as const).filter(
      ([k, v]) => v !== null && v !== undefined && !(k === "auth_method" && v === "client_secret_post"),
    ),
  );
  return Object.keys(kept).length === 0 ? null : JSON.stringify(kept);
}

/**
 * The organization's current assertion key (private_key_jwt), as the endpoint's copy carries it;
 * a configuration's copy has it only when it uses private_key_jwt.
 */
export const currentAssertionKey = (db: Db, now: number): { kid: string; private_key: SealedValue } | null => {
  const row = db.first<{ kid: string; private_key: string }>(
    "SELECT kid, private_key FROM assertion_keys WHERE activates_ms <= ? ORDER BY activates_ms DESC, created_ms DESC LIMIT 1",
    now,
  );
  return row === undefined ? null : { kid: row.kid, private_key: JSON.parse(row.private_key) as SealedValue };
};

/** A rotated-in key not signing yet, with the moment it starts: endpoints carry it so they switch on time by themselves. */
const nextAssertionKey = (db: Db, now: number): { kid: string; private_key: SealedValue; activates_ms: number } | null => {
  const row = db.first<{ kid: string; private_key: string; activates_ms: number }>(
    "SELECT kid, private_key, activates_ms FROM assertion_keys WHERE activates_ms > ? ORDER BY activates_ms DESC LIMIT 1",
    now,
  );
  return row === undefined
    ? null
    : { kid: row.kid, private_key: JSON.parse(row.private_key) as SealedValue, activates_ms: row.activates_ms };
};

export function configRecord(row: ConfigRow, organizationId: string): WebhookConfigurationRecord {
  return {
    id: row.id,
    organization_id: organizationId,
    url: row.url,
    events: row.events === null ? null : (JSON.parse(row.events) as string[]),
    description: row.description,
    oauth: {
      token_url: row.token_url,
      client_id: row.client_id,
      client_secret: JSON.parse(row.client_secret) as WebhookConfigurationRecord["oauth"]["client_secret"],
      ...receiverAuthOf(row),
    },
    token_cache: row.token_cache === 1,
    ordered: row.ordered === 1,
    rate_limit: row.rate_limit,
    signing_secrets: JSON.parse(row.signing_secrets) as WebhookConfigurationRecord["signing_secrets"],
    status: row.status,
    disabled_reason: row.disabled_reason,
    version: row.version,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function create(db: Db, input: NewConfiguration, audit: Audit, now: number): Result<void> {
  const count = db.value<number>("SELECT count(*) AS n FROM configurations") ?? 0;
  if (count >= MAX_WEBHOOK_CONFIGURATIONS) {
    return fail(
      "conflict",
      `The organization has ${MAX_WEBHOOK_CONFIGURATIONS} webhook configurations, the most it may have; delete one first.`,
    );
  }
  const at = isoTime(now);
  db.txn(() => {
    db.run(
      `INSERT INTO configurations (id, url, events, description, token_url, client_id, client_secret, token_cache, ordered, rate_limit,
        signing_secrets, status, version, status_version, receiver_auth, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', 1, 1, ?, ?, ?)`,
      input.id,
      input.url,
      input.events === null ? null : JSON.stringify(input.events),
      input.description,
      input.oauth.token_url,
      input.oauth.client_id,
      JSON.stringify(input.oauth.client_secret),
      input.token_cache ? 1 : 0,
      input.ordered ? 1 : 0,
      input.rate_limit,
      JSON.stringify([input.signing_secret]),
      receiverAuthColumn(input.oauth),
      at,
      at,
    );
    audit({
      action: "webhook_configuration.created",
      resource_type: "webhook_configuration",
      resource_id: input.id,
      detail: {
        url: redactUrl(input.url),
        token_url: redactUrl(input.oauth.token_url),
        events: input.events,
        ordered: input.ordered,
        rate_limit: input.rate_limit,
        auth_method: input.oauth.auth_method ?? "client_secret_post",
        dpop: input.oauth.dpop_key != null,
      },
    });
  });
  return ok(undefined);
}

/** The stored additions with a patch's applied: undefined keeps a field, null clears it. */
function mergeAuth(current: ReceiverAuth, patch: ConfigurationPatch["oauth"]): ReceiverAuth {
  const next: ReceiverAuth = { ...current };
  for (const field of RECEIVER_AUTH_FIELDS) {
    const value = patch?.[field];
    if (value !== undefined) (next as Record<string, unknown>)[field] = value;
  }
  if (next.auth_method !== "private_key_jwt") delete next.assertion_audience;
  return next;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

export function update(db: Db, id: string, patch: ConfigurationPatch, audit: Audit, now: number): Result<void> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  const newSecret = patch.oauth?.client_secret !== undefined;
  const auth = mergeAuth(receiverAuthOf(current), patch.oauth);
  const method = auth.auth_method ?? "client_secret_post";
  const jwt = method === "private_key_jwt";
  // With private_key_jwt nothing secret goes to the token URL (an assertion for its audience only).
  if (!newSecret && !jwt) {
    if (current.client_secret === "null") {
      return invalid(["oauth", "client_secret"], ` is required: auth_method ${method} sends a client secret, and none is stored`);
    }
    if (patch.oauth?.token_url !== undefined && originOf(patch.oauth.token_url) !== originOf(current.token_url)) {
      return invalid(["oauth", "client_secret"], " is required when oauth.token_url moves to another origin");
    }
    if (patch.url !== undefined && originOf(patch.url) !== originOf(current.url)) {
      return invalid(["oauth", "client_secret"], " is required when url moves to another origin");
    }
  }
  if (jwt && newSecret) return invalid(["oauth", "client_secret"], " is not used with private_key_jwt: keyway signs an assertion instead");
  if (!jwt && auth.assertion_audience != null) {
    return invalid(["oauth", "assertion_audience"], " is used only with auth_method private_key_jwt");
  }
  const clientSecret = jwt ? "null" : newSecret ? JSON.stringify(patch.oauth?.client_secret) : current.client_secret;
  const status = patch.status ?? current.status;
  const statusChanged = status !== current.status;
  db.txn(() => {
    db.run(
      `UPDATE configurations SET url = ?, events = ?, description = ?, token_url = ?, client_id = ?, client_secret = ?, token_cache = ?,
        ordered = ?, rate_limit = ?, status = ?, disabled_reason = ?, receiver_auth = ?, version = version + 1,
        status_version = CASE WHEN ? THEN version + 1 ELSE status_version END,
        url_version = CASE WHEN ? THEN version + 1 ELSE url_version END, updated_at = ? WHERE id = ?`,
      patch.url ?? current.url,
      patch.events === undefined ? current.events : patch.events === null ? null : JSON.stringify(patch.events),
      patch.description === undefined ? current.description : patch.description,
      patch.oauth?.token_url ?? current.token_url,
      patch.oauth?.client_id ?? current.client_id,
      clientSecret,
      patch.token_cache === undefined ? current.token_cache : patch.token_cache ? 1 : 0,
      patch.ordered === undefined ? current.ordered : patch.ordered ? 1 : 0,
      patch.rate_limit === undefined ? current.rate_limit : patch.rate_limit,
      status,
      status === "active" ? null : patch.status === "disabled" && statusChanged ? "disabled through the API" : current.disabled_reason,
      receiverAuthColumn(auth),
      statusChanged ? 1 : 0,
      patch.url !== undefined && patch.url !== current.url ? 1 : 0,
      isoTime(now),
      id,
    );
    audit({
      action: "webhook_configuration.updated",
      resource_type: "webhook_configuration",
      resource_id: id,
      detail: {
        fields: Object.keys(patch),
        ...(patch.url !== undefined ? { url: redactUrl(patch.url) } : {}),
        ...(patch.oauth?.token_url !== undefined ? { token_url: redactUrl(patch.oauth.token_url) } : {}),
        ...(patch.oauth?.auth_method !== undefined ? { auth_method: method } : {}),
        ...(patch.oauth?.dpop_key !== undefined ? { dpop: auth.dpop_key != null } : {}),
        status,
      },
    });
  });
  return ok(undefined);
}

/** Deletes the configuration and leaves a tombstone (the deleted record) until its endpoint knows. */
export function remove(db: Db, id: string, organizationId: string, audit: Audit, now: number): Result<WebhookConfigurationRecord> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  const record = configRecord(current, organizationId);
  db.txn(() => {
    db.run("DELETE FROM configurations WHERE id = ?", id);
    db.run(
      "INSERT OR REPLACE INTO deleted_configurations (id, version, record, deleted_ms) VALUES (?, ?, ?, ?)",
      id,
      current.version + 1,
      JSON.stringify(record),
      now,
    );
    audit({ action: "webhook_configuration.deleted", resource_type: "webhook_configuration", resource_id: id, detail: null });
  });
  return ok(record);
}

/** Puts a new signing secret first; the previous one signs too until `previousExpiresAt`. */
export function rotateSigningSecret(
  db: Db,
  id: string,
  secret: WebhookConfigurationRecord["signing_secrets"][number],
  previousExpiresAt: string,
  audit: Audit,
  now: number,
): Result<void> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  const previous = (JSON.parse(current.signing_secrets) as WebhookConfigurationRecord["signing_secrets"])[0];
  const secrets = previous === undefined ? [secret] : [secret, { ...previous, expires_at: previousExpiresAt }];
  db.txn(() => {
    db.run(
      "UPDATE configurations SET signing_secrets = ?, version = version + 1, updated_at = ? WHERE id = ?",
      JSON.stringify(secrets),
      isoTime(now),
      id,
    );
    audit({
      action: "webhook_configuration.signing_secret_rotated",
      resource_type: "webhook_configuration",
      resource_id: id,
      detail: { previous_secret_expires_at: previousExpiresAt },
    });
  });
  return ok(undefined);
}

/**
 * The endpoint's request to disable the configuration. A 410 disables it only if its url has not
 * changed since the version the attempt used (product brief: "unless its url changed after that
 * attempt began"; an edit to another url and back counts as a change; edits of other fields are
 * kept and do not cancel it); a health disable yields to a re-enable made after the version it was
 * decided on. Only `status` and its reason change. "disabled" also when it already was, or is gone.
 */
export function disable(db: Db, id: string, request: DisableRequest, audit: Audit, now: number): "disabled" | "kept" {
  const current = configRow(db, id);
  if (current === undefined || current.status === "disabled") return "disabled";
  const urlMoved = current.url !== request.url || current.url_version > request.basis_version;
  if (request.url !== null ? urlMoved : current.status_version > request.basis_version) return "kept";
  db.txn(() => {
    db.run(
      `UPDATE configurations SET status = 'disabled', disabled_reason = ?, version = version + 1, status_version = version + 1,
        updated_at = ? WHERE id = ?`,
      request.reason,
      isoTime(now),
      id,
    );
    audit({
      actor: { type: "system" },
      action: "webhook_configuration.disabled",
      resource_type: "webhook_configuration",
      resource_id: id,
      detail: { reason: request.reason },
    });
  });
  return "disabled";
}

/** A private_key_jwt configuration's copy carries the organization's current assertion key (sealed). */
export function withAssertionKey(db: Db, record: WebhookConfigurationRecord, now = Date.now()): WebhookConfigurationRecord {
  if (record.oauth.auth_method !== "private_key_jwt") return record;
  return {
    ...record,
    oauth: { ...record.oauth, assertion_key: currentAssertionKey(db, now), next_assertion_key: nextAssertionKey(db, now) },
  };
}

/** Keeps the Worker's candidate as the organization's assertion key when it has none yet. */
export function ensureAssertionKey(db: Db, candidate: AssertionKeyCandidate, now: number): void {
  if (db.first("SELECT 1 AS x FROM assertion_keys LIMIT 1") !== undefined) return;
  // The first key signs at once: no receiver can have cached a set without it.
  db.run(
    "INSERT OR IGNORE INTO assertion_keys (kid, private_key, public_jwk, created_ms, activates_ms) VALUES (?, ?, ?, ?, ?)",
    candidate.kid,
    JSON.stringify(candidate.private_key),
    JSON.stringify(candidate.public_jwk),
    now,
    now,
  );
}

/**
 * Rotation (issue 31; like signing secrets, but announced first): the new key is published at once
 * and signs from `activatesAt`, so a receiver's server that cached the JWKS (for up to its
 * max-age, and node-oidc-provider does not fetch it again for an unknown kid) has it before any
 * assertion uses it; the keys it replaces stay published until `retiresAt`. Every private_key_jwt
 * configuration gets a new version, whose copy carries both keys and the switch time. Keys past
 * their overlap are deleted.
 */
export function rotateAssertionKey(
  db: Db,
  candidate: AssertionKeyCandidate,
  activatesAt: number,
  retiresAt: number,
  audit: Audit,
  now: number,
): { kid: string; previous: string | null } {
  const previous = currentAssertionKey(db, now)?.kid ?? null;
  db.txn(() => {
    db.run("DELETE FROM assertion_keys WHERE retires_ms IS NOT NULL AND retires_ms <= ?", now);
    db.run("UPDATE assertion_keys SET retires_ms = ? WHERE retires_ms IS NULL", retiresAt);
    db.run(
      "INSERT INTO assertion_keys (kid, private_key, public_jwk, created_ms, activates_ms) VALUES (?, ?, ?, ?, ?)",
      candidate.kid,
      JSON.stringify(candidate.private_key),
      JSON.stringify(candidate.public_jwk),
      now,
      activatesAt,
    );
    db.run(
      `UPDATE configurations SET version = version + 1, updated_at = ? WHERE receiver_auth IS NOT NULL
        AND json_extract(receiver_auth, '$.auth_method') = 'private_key_jwt'`,
      isoTime(now),
    );
    audit({
      action: "webhook_settings.assertion_key_rotated",
      resource_type: "webhook_settings",
      resource_id: "webhooks",
      detail: { kid: candidate.kid, activates_at: isoTime(activatesAt), previous_kid: previous, previous_retires_at: isoTime(retiresAt) },
    });
  });
  return { kid: candidate.kid, previous };
}

/** The public keys a receiver's server verifies assertions with: the current one and those within their overlap. */
export function publishedAssertionKeys(db: Db, now: number): Record<string, unknown>[] {
  return db
    .all<{ public_jwk: string }>(
      "SELECT public_jwk FROM assertion_keys WHERE retires_ms IS NULL OR retires_ms > ? ORDER BY created_ms DESC",
      now,
    )
    .map((r) => JSON.parse(r.public_jwk) as Record<string, unknown>);
}

/** What the endpoint's object should hold now: the configuration, or its tombstone; null if neither exists. */
export function snapshotOf(db: Db, id: string, organizationId: string): EndpointSnapshot | null {
  const row = configRow(db, id);
  if (row !== undefined) {
    return {
      organization_id: organizationId,
      configuration_id: id,
      version: row.version,
      configuration: withAssertionKey(db, configRecord(row, organizationId)),
    };
  }
  const tomb = db.first<{ version: number }>("SELECT version FROM deleted_configurations WHERE id = ? AND acked = 0", id);
  return tomb === undefined ? null : { organization_id: organizationId, configuration_id: id, version: tomb.version, configuration: null };
}

/** Records what the endpoint acknowledged (a tombstone stays, acknowledged, for as long as its deliveries). */
export function synced(db: Db, id: string, version: number): void {
  db.run("UPDATE configurations SET synced_version = max(synced_version, ?) WHERE id = ?", version, id);
  db.run("UPDATE deleted_configurations SET acked = 1 WHERE id = ? AND version <= ?", id, version);
}

/** Configurations (and tombstones) whose endpoint lacks their latest version. */
export const unsynced = (db: Db): string[] =>
  db
    .all<{ id: string }>(
      "SELECT id FROM configurations WHERE synced_version < version UNION SELECT id FROM deleted_configurations WHERE acked = 0",
    )
    .map((r) => r.id);

/** Whether a deleted configuration's endpoint knows it. */
export const deletionApplied = (db: Db, id: string): boolean =>
  db.first("SELECT 1 AS x FROM deleted_configurations WHERE id = ? AND acked = 1", id) !== undefined;

/** Whether the endpoint's object has the configuration's latest version. */
export const isSynced = (db: Db, id: string): boolean => {
  const row = db.first<{ v: number; s: number }>("SELECT version AS v, synced_version AS s FROM configurations WHERE id = ?", id);
  return row !== undefined && row.s >= row.v;
};
