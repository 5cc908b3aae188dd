/**
 * Webhook configurations in the organization's WebhookObject, the system of record for their
 * settings: every change one transaction with its audit entry and a new `version`; the endpoint's
 * object holds a copy of one version (`synced_version` records which it acknowledged), pushed
 * after each change and retried by the alarm. A deleted configuration leaves a tombstone until its
 * endpoint knows. Moving `url` or `oauth.token_url` to another origin needs `oauth.client_secret`
 * in the same change (product brief): no stored secret, and no token the receiver's server minted,
 * is sent to an origin the caller did not vouch for with it.
 *
 * Issue 42 (a receiver holds its own endpoint and nothing else): a private_key_jwt configuration
 * signs with its own assertion key, published at its own key set URL, so an assertion can only
 * ever be accepted by the OAuth server that registered that configuration; a change made by a
 * receiver (the portal) may not alter whose identity keyway asserts (`receiverRefusal`); and
 * operational event types are received only by the organization's operations configurations.
 */

import type { SealedValue } from "../../lib/aead";
import { isoTime } from "../../lib/time";
import type { Actor } from "../../schemas/audit";
import { OPERATIONAL_EVENT_TYPES } from "../../schemas/receivers";
import { keyScheme, PUSH_SETTINGS, type ReceiverAuthMethod, type WebhookConfigurationRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import type { EndpointSnapshot } from "../endpoints/object";
import type { PollingVerifier } from "../lookup";
import { fail, invalid, missing, ok, type Result } from "../sql";
import { type AuditOutboxEntry, redactUrl } from "./audit";
import { MAX_WEBHOOK_CONFIGURATIONS } from "./limits";
import { channelsColumn, type FilterColumn, filterRefusal } from "./routing";
import type { ConfigRow } from "./schema";

/** A new configuration, its secrets already sealed by the Worker. */
export interface NewConfiguration {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  oauth: { token_url: string; client_id: string; client_secret: SealedValue | null } & ReceiverAuthPatch;
  token_cache: boolean;
  ordered: boolean;
  rate_limit: number | null;
  operations: boolean;
  /** Null for a polling configuration, which signs nothing (issue 45). */
  signing_secret: WebhookConfigurationRecord["signing_secrets"][number] | null;
  delivery: "push" | "polling";
  polling: WebhookConfigurationRecord["polling"];
  /** The payload filter as the request gave it (its JSON text; routing.ts checks it), and the channels received. */
  filter?: string | null | undefined;
  channels?: string[] | null | undefined;
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
      } & { [K in keyof ReceiverAuthPatch]?: ReceiverAuthPatch[K] | undefined })
    | undefined;
  token_cache?: boolean | undefined;
  ordered?: boolean | undefined;
  rate_limit?: number | null | undefined;
  status?: WebhookConfigurationRecord["status"] | undefined;
  operations?: boolean | undefined;
  /** The payload filter's JSON text; null (or `{}`) removes it. */
  filter?: string | null | undefined;
  channels?: string[] | null | undefined;
  /** The receiver's own narrowing of them (routing.ts), in the same forms. */
  receiver_filter?: string | null | undefined;
  receiver_channels?: string[] | null | undefined;
}

/**
 * Who asks for a change: the organization (its API clients, operators, the manager, the CLI) or the
 * configuration's receiver (a portal session), who may change only what cannot make keyway act
 * for another party (product brief, "A receiver holds its own endpoint and nothing else").
 */
export type ChangedBy = "organization" | "receiver";

/**
 * An assertion key the Worker generated for private_key_jwt, sealed for the configuration it is
 * offered to (issue 42): stored when that configuration needs a key of its own (created or switched
 * to private_key_jwt, moved off the organization's key), else dropped.
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
  /**
   * Issue 42's move: a private_key_jwt configuration from before it signs with the organization's
   * key while this is true (migration 7); the first rotation of its own key, or a change of its
   * client id, assertion audience or token origin, ends it.
   */
  organization_key?: boolean | null;
  /** After the move, the organization's keys stay listed at this configuration's key set URL until then (ms). */
  organization_keys_until?: number | null;
}

/** What a patch may set of ReceiverAuth: the move's markers are the object's alone. */
type ReceiverAuthPatch = Omit<ReceiverAuth, "organization_key" | "organization_keys_until">;

const receiverAuthOf = (row: ConfigRow): ReceiverAuth => (row.receiver_auth ? (JSON.parse(row.receiver_auth) as ReceiverAuth) : {});

/** The JSON column for `auth`: NULL when it is the default request. */
const RECEIVER_AUTH_FIELDS = [
  "auth_method",
  "scope",
  "resource",
  "audience",
  "assertion_audience",
  "dpop_key",
  "organization_key",
  "organization_keys_until",
] as const;
const PATCHABLE_AUTH_FIELDS = ["auth_method", "scope", "resource", "audience", "assertion_audience", "dpop_key"] as const;

function receiverAuthColumn(auth: ReceiverAuth): string | null {
  const kept = Object.fromEntries(
    RECEIVER_AUTH_FIELDS.map((k) => [k, auth[k]] as const).filter(
      ([k, v]) => v !== null && v !== undefined && !(k === "auth_method" && v === "client_secret_post"),
    ),
  );
  return Object.keys(kept).length === 0 ? null : JSON.stringify(kept);
}

/** An assertion key as an endpoint's copy carries it; `config_id` when it is the configuration's own (issue 42). */
export interface CopiedAssertionKey {
  kid: string;
  private_key: SealedValue;
  config_id?: string;
}

/** Whose keys sign for a configuration: its own, or (before the move) the organization's. */
const signerOf = (row: ConfigRow): string | null => (receiverAuthOf(row).organization_key === true ? null : row.id);

const keyOwner = (configId: string | null) => (configId === null ? "config_id IS NULL" : "config_id = ?");
const ownerArgs = (configId: string | null) => (configId === null ? [] : [configId]);

/** The key that signs now for `configId` (null: the organization's), as the endpoint's copy carries it. */
export const currentAssertionKey = (db: Db, now: number, configId: string | null): CopiedAssertionKey | null => {
  const row = db.first<{ kid: string; private_key: string }>(
    `SELECT kid, private_key FROM assertion_keys WHERE ${keyOwner(configId)} AND activates_ms <= ?
      ORDER BY activates_ms DESC, created_ms DESC LIMIT 1`,
    ...ownerArgs(configId),
    now,
  );
  if (row === undefined) return null;
  return { kid: row.kid, private_key: JSON.parse(row.private_key) as SealedValue, ...(configId === null ? {} : { config_id: configId }) };
};

/** A rotated-in key not signing yet, with the moment it starts: endpoints carry it so they switch on time by themselves. */
const nextAssertionKey = (db: Db, now: number, configId: string | null): (CopiedAssertionKey & { activates_ms: number }) | null => {
  const row = db.first<{ kid: string; private_key: string; activates_ms: number }>(
    `SELECT kid, private_key, activates_ms FROM assertion_keys WHERE ${keyOwner(configId)} AND activates_ms > ?
      ORDER BY activates_ms DESC LIMIT 1`,
    ...ownerArgs(configId),
    now,
  );
  if (row === undefined) return null;
  return {
    kid: row.kid,
    private_key: JSON.parse(row.private_key) as SealedValue,
    activates_ms: row.activates_ms,
    ...(configId === null ? {} : { config_id: configId }),
  };
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
    operations: row.operations === 1,
    signing_secrets: JSON.parse(row.signing_secrets) as WebhookConfigurationRecord["signing_secrets"],
    ...(row.delivery === "polling"
      ? { delivery: "polling" as const, polling: JSON.parse(row.polling ?? "null") as WebhookConfigurationRecord["polling"] }
      : {}),
    ...(row.filter != null ? { filter: row.filter } : {}),
    ...(row.channels != null ? { channels: JSON.parse(row.channels) as string[] } : {}),
    ...(row.receiver_filter != null ? { receiver_filter: row.receiver_filter } : {}),
    ...(row.receiver_channels != null ? { receiver_channels: JSON.parse(row.receiver_channels) as string[] } : {}),
    status: row.status,
    disabled_reason: row.disabled_reason,
    version: row.version,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * What a polling configuration cannot be changed to (issue 45): it has no URL, no receiver token
 * endpoint and no pacing, and nothing to pause (its events wait for the receiver anyway; it stops
 * reading, or the organization disables it).
 */
export function pollingRefusal(patch: ConfigurationPatch): { path: string[]; text: string } | null {
  for (const field of PUSH_SETTINGS) {
    if (patch[field] !== undefined) return { path: [field], text: " is not used by a polling configuration (delivery: polling)" };
  }
  if (patch.status === "paused") {
    return {
      path: ["status"],
      text: ": a polling configuration is not paused (its events wait for the receiver's reads anyway); disable it to stop keeping events",
    };
  }
  return null;
}

/** Sets a polling configuration's read credential (its SHA-256, or null: revoked), a new version pushed to its endpoint. */
export function setPollingToken(
  db: Db,
  id: string,
  tokenHash: string | null,
  audit: Audit,
  now: number,
  by: ChangedBy = "organization",
): Result<void> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  if (current.delivery !== "polling") return fail("conflict", "This webhook configuration delivers by push: it has no polling token.");
  // A revocation is the organization's: its receiver (the portal) may rotate a live token, never
  // issue one the organization took away (as only the organization re-enables, issue 42).
  const revoked = current.polling === null || (JSON.parse(current.polling) as { token_hash: string | null }).token_hash === null;
  if (by === "receiver" && (revoked || tokenHash === null)) {
    return fail("forbidden", "The organization revoked this endpoint's polling token; only it can issue a new one.");
  }
  const at = isoTime(now);
  db.txn(() => {
    db.run(
      "UPDATE configurations SET polling = ?, version = version + 1, updated_at = ? WHERE id = ?",
      JSON.stringify({ token_hash: tokenHash, token_created_at: tokenHash === null ? null : at }),
      at,
      id,
    );
    audit({
      action: tokenHash === null ? "webhook_configuration.polling_token_revoked" : "webhook_configuration.polling_token_rotated",
      resource_type: "webhook_configuration",
      resource_id: id,
      detail: {},
    });
  });
  return ok(undefined);
}

export function create(db: Db, input: NewConfiguration, audit: Audit, now: number, key?: AssertionKeyCandidate): Result<void> {
  const events = eventsCheck(input.events, input.operations);
  if (!events.ok) return events;
  const filter = filterRefusal(db, input.filter ?? null, input.events, input.operations);
  if (!filter.ok) return filter;
  if (input.oauth.auth_method === "private_key_jwt" && key === undefined) {
    return fail("conflict", "A private_key_jwt configuration needs its own assertion key, and none was made.");
  }
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
        signing_secrets, status, version, status_version, receiver_auth, operations, created_at, updated_at, delivery, polling, filter, channels)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', 1, 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      JSON.stringify(input.signing_secret === null ? [] : [input.signing_secret]),
      receiverAuthColumn(input.oauth),
      input.operations ? 1 : 0,
      at,
      at,
      input.delivery === "polling" ? "polling" : null,
      input.polling ? JSON.stringify(input.polling) : null,
      filter.value,
      channelsColumn(input.channels),
    );
    // The first key of a configuration signs at once: no receiver can have cached a set without it.
    if (input.oauth.auth_method === "private_key_jwt" && key !== undefined) insertKey(db, key, input.id, now, now);
    audit({
      action: "webhook_configuration.created",
      resource_type: "webhook_configuration",
      resource_id: input.id,
      detail:
        input.delivery === "polling"
          ? { delivery: "polling", events: input.events, ...(input.operations ? { operations: true } : {}) }
          : {
              url: redactUrl(input.url),
              token_url: redactUrl(input.oauth.token_url),
              events: input.events,
              ordered: input.ordered,
              rate_limit: input.rate_limit,
              auth_method: input.oauth.auth_method ?? "client_secret_post",
              dpop: input.oauth.dpop_key != null,
              // The default (v1) goes unsaid, as `operations: false` does.
              ...(input.signing_secret && keyScheme(input.signing_secret) === "v1a" ? { signature_scheme: "v1a" } : {}),
              ...(input.operations ? { operations: true } : {}),
              ...(filter.value !== null ? { filter: true } : {}),
              ...(input.channels ? { channels: input.channels } : {}),
            },
    });
  });
  return ok(undefined);
}

/** The stored additions with a patch's applied: undefined keeps a field, null clears it. */
function mergeAuth(current: ReceiverAuth, patch: ConfigurationPatch["oauth"]): ReceiverAuth {
  const next: ReceiverAuth = { ...current };
  for (const field of PATCHABLE_AUTH_FIELDS) {
    const value = patch?.[field];
    if (value !== undefined) (next as Record<string, unknown>)[field] = value;
  }
  if (next.auth_method !== "private_key_jwt") {
    delete next.assertion_audience;
    delete next.organization_key;
  }
  return next;
}

/** The reason recorded when the organization disables a configuration (the API, the manager, the CLI). */
const ORGANIZATION_DISABLE = "disabled through the API";

/**
 * Operational event types (`webhook.endpoint.*`, `webhook.delivery.exhausted`) describe every
 * endpoint of the organization: only its operations configurations may name them (issue 42).
 */
function eventsCheck(events: string[] | null | undefined, operations: boolean, held: string[] | null = null): Result<void> {
  if (operations) return ok(undefined);
  // A name held from before issue 42 (migration 7 leaves them inert) may stay: it receives nothing.
  const at = (events ?? []).findIndex((e) => (OPERATIONAL_EVENT_TYPES as readonly string[]).includes(e) && !(held ?? []).includes(e));
  if (at < 0) return ok(undefined);
  return invalid(
    ["events", String(at)],
    ` is an operational event type (${(events ?? [])[at]}), which describes the organization's other endpoints: only an operations configuration (operations: true, set by the organization) receives them`,
  );
}

/**
 * What a receiver (a portal session) may not change, in the same transaction as the write, against
 * what the object holds (issue 42, item 2): whose identity keyway asserts (the client id, the
 * authentication method, the assertion's audience), whether the configuration is the
 * organization's operations configuration, and, for private_key_jwt (which sends no secret a
 * receiver could vouch with), the token URL's origin. Null when the change is the receiver's to make.
 */
export function receiverRefusal(current: ConfigRow, patch: ConfigurationPatch): { path: string[]; text: string } | null {
  const auth = receiverAuthOf(current);
  const o = patch.oauth;
  const method = auth.auth_method ?? "client_secret_post";
  const same = <T>(value: T | undefined, held: T) => value === undefined || value === held;
  const fixed = " is the organization's to change: keyway would assert another identity with it; ask the provider of the webhooks";
  if (!same(o?.client_id, current.client_id)) return { path: ["oauth", "client_id"], text: fixed };
  if (!same(o?.auth_method, method)) return { path: ["oauth", "auth_method"], text: fixed };
  if (o?.assertion_audience !== undefined && (o.assertion_audience ?? null) !== (auth.assertion_audience ?? null)) {
    return { path: ["oauth", "assertion_audience"], text: fixed };
  }
  if (patch.operations !== undefined && patch.operations !== (current.operations === 1)) {
    return { path: ["operations"], text: " is the organization's to change" };
  }
  // The organization's settings of its own endpoint: pacing, the shared token, its name; and its
  // routing, which decides which of its events this endpoint may receive at all (the receiver
  // narrows it with receiver_filter and receiver_channels, never widens it).
  const ours = " is the organization's to change";
  const routing = " is the organization's to change: it decides which events this endpoint may receive; narrow them with";
  if (patch.filter !== undefined && patch.filter !== current.filter) return { path: ["filter"], text: `${routing} receiver_filter` };
  if (patch.channels !== undefined && channelsColumn(patch.channels) !== current.channels) {
    return { path: ["channels"], text: `${routing} receiver_channels` };
  }
  if (patch.ordered !== undefined && patch.ordered !== (current.ordered === 1)) return { path: ["ordered"], text: ours };
  if (patch.rate_limit !== undefined && patch.rate_limit !== current.rate_limit) return { path: ["rate_limit"], text: ours };
  if (patch.token_cache !== undefined && patch.token_cache !== (current.token_cache === 1)) return { path: ["token_cache"], text: ours };
  if (patch.description !== undefined && patch.description !== current.description) return { path: ["description"], text: ours };
  // A receiver pauses and resumes; disabling is the organization's, and so is lifting its own disable.
  if (patch.status === "disabled" && current.status !== "disabled")
    return { path: ["status"], text: ": a receiver pauses (paused), never disables" };
  if (patch.status !== undefined && current.status === "disabled" && current.disabled_reason === ORGANIZATION_DISABLE) {
    return { path: ["status"], text: ": the organization disabled this endpoint; only it can enable it again" };
  }
  if (method === "private_key_jwt" && o?.token_url !== undefined && originOf(o.token_url) !== originOf(current.token_url)) {
    return {
      path: ["oauth", "token_url"],
      text: " may move to another origin only by the organization: with private_key_jwt no secret vouches for the new server",
    };
  }
  return null;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

export function update(
  db: Db,
  id: string,
  patch: ConfigurationPatch,
  audit: Audit,
  now: number,
  by: ChangedBy = "organization",
  key?: AssertionKeyCandidate,
): Result<void> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  if (by === "receiver") {
    const refused = receiverRefusal(current, patch);
    if (refused !== null) return invalid(refused.path, refused.text);
  }
  if (current.delivery === "polling") {
    const refused = pollingRefusal(patch);
    if (refused !== null) return invalid(refused.path, refused.text);
  }
  const operations = patch.operations ?? current.operations === 1;
  if (patch.events !== undefined || patch.operations !== undefined) {
    const events = eventsCheck(patch.events === undefined ? eventsOf(current) : patch.events, operations, eventsOf(current));
    if (!events.ok) return events;
  }
  // A filter is held to the types the configuration receives: checked again when they change; the
  // receiver's own filter likewise (under its own name).
  const typesChanged = patch.events !== undefined || patch.operations !== undefined;
  const received = patch.events === undefined ? eventsOf(current) : patch.events;
  const checked = (name: FilterColumn, written: string | null | undefined, held: string | null) =>
    written !== undefined || typesChanged
      ? filterRefusal(db, written === undefined ? held : written, received, operations, name)
      : ok(held);
  const filter = checked("filter", patch.filter, current.filter);
  if (!filter.ok) return filter;
  const receiverFilter = checked("receiver_filter", patch.receiver_filter, current.receiver_filter);
  if (!receiverFilter.ok) return receiverFilter;
  const newSecret = patch.oauth?.client_secret !== undefined;
  const auth = mergeAuth(receiverAuthOf(current), patch.oauth);
  const method = auth.auth_method ?? "client_secret_post";
  const jwt = method === "private_key_jwt";
  // With private_key_jwt nothing secret goes to the token URL (an assertion for its audience only).
  // A polling configuration has no token URL (its oauth fields are refused above).
  if (!newSecret && !jwt && current.delivery !== "polling") {
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
  // Issue 42: a private_key_jwt configuration needs a key of its own unless it still signs with the
  // organization's (the move). It leaves the organization's key when what the assertion states or
  // where it goes changes (client id, audience, token URL, its path too: one origin may serve
  // several tenants' token endpoints, each trusting the organization's key set): an assertion of
  // the organization's key then never names an identity, or reaches a server, the operator did
  // not set before the move.
  const wasOrgKey = auth.organization_key === true;
  const identityMoved =
    (patch.oauth?.client_id !== undefined && patch.oauth.client_id !== current.client_id) ||
    (patch.oauth?.assertion_audience !== undefined &&
      (patch.oauth.assertion_audience ?? null) !== (receiverAuthOf(current).assertion_audience ?? null)) ||
    (patch.oauth?.token_url !== undefined && patch.oauth.token_url !== current.token_url);
  if (jwt && wasOrgKey && identityMoved) {
    delete auth.organization_key;
    auth.organization_keys_until = now + ASSERTION_KEY_OVERLAP_MS;
  }
  // Within a move's first 10 minutes the organization's key still signs (withAssertionKey) until
  // the configuration's own activates: a change of what it asserts then activates its own at once,
  // so the organization's key never signs for a token URL, client or audience set after the move.
  const ownCurrent = currentAssertionKey(db, now, id);
  const pendingOwn = nextAssertionKey(db, now, id);
  const activateNow = jwt && !wasOrgKey && identityMoved && ownCurrent === null && pendingOwn !== null;
  const needsOwnKey = jwt && auth.organization_key !== true && ownCurrent === null && pendingOwn === null;
  if (needsOwnKey && key === undefined)
    return fail("conflict", "A private_key_jwt configuration needs its own assertion key, and none was made.");
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
      status !== "disabled" ? null : patch.status === "disabled" && statusChanged ? ORGANIZATION_DISABLE : current.disabled_reason,
      receiverAuthColumn(auth),
      statusChanged ? 1 : 0,
      patch.url !== undefined && patch.url !== current.url ? 1 : 0,
      isoTime(now),
      id,
    );
    if (patch.operations !== undefined) db.run("UPDATE configurations SET operations = ? WHERE id = ?", operations ? 1 : 0, id);
    if (
      patch.filter !== undefined ||
      patch.channels !== undefined ||
      patch.receiver_filter !== undefined ||
      patch.receiver_channels !== undefined
    ) {
      db.run(
        "UPDATE configurations SET filter = ?, channels = ?, receiver_filter = ?, receiver_channels = ? WHERE id = ?",
        filter.value,
        patch.channels === undefined ? current.channels : channelsColumn(patch.channels),
        receiverFilter.value,
        patch.receiver_channels === undefined ? current.receiver_channels : channelsColumn(patch.receiver_channels),
        id,
      );
    }
    if (needsOwnKey && key !== undefined) insertKey(db, key, id, now, now);
    if (activateNow) db.run("UPDATE assertion_keys SET activates_ms = ? WHERE config_id = ? AND activates_ms > ?", now, id, now);
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
        ...(patch.operations !== undefined ? { operations } : {}),
        ...(wasOrgKey && auth.organization_key !== true ? { assertion_key: "moved to the configuration's own key" } : {}),
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
    db.run("DELETE FROM assertion_keys WHERE config_id = ?", id);
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

/**
 * At most this many signing secrets sign at once: the current one and those within their grace.
 * Each adds a `v1,` signature (about 50 bytes) to every webhook and an HMAC to every attempt; a
 * rotation that would exceed it is refused until the oldest grace ends (docs/receivers.md).
 */
export const MAX_LIVE_SIGNING_SECRETS = 10;

/**
 * Puts a new signing secret first. The current one signs too until `previousExpiresAt`; every
 * older secret keeps its own grace (issue 42: a second rotation within the grace used to drop the
 * first secret at once, so a receiver still verifying with it answered 400). Secrets whose grace
 * has ended are dropped here. Standard Webhooks allows any number of space-separated signatures.
 */
type SigningSecret = WebhookConfigurationRecord["signing_secrets"][number];

/** Earlier secrets a receiver's own rotations (the portal) may keep signing at once: the other slots stay the organization's. */
export const RECEIVER_GRACE_SLOTS = 3;

/**
 * A rotation's new list of signing secrets, a pure function of the stored ones: the new secret
 * first, the previous current one graced until `previousExpiresAt`, the expired dropped. At most
 * MAX_LIVE_SIGNING_SECRETS sign: the organization's rotation never fails for lack of a slot (it
 * ends the oldest graces: after a leak it must be able to rotate to a secret the receiver does not
 * know), while a receiver's (the portal) is refused once RECEIVER_GRACE_SLOTS of the graces are its
 * own or no slot is free, so it can never fill the slots or end a grace the organization keeps.
 */
export function planRotation(
  stored: readonly SigningSecret[],
  secret: SigningSecret,
  previousExpiresAt: string,
  now: number,
  by: ChangedBy,
): Result<{ secrets: SigningSecret[]; ended: number }> {
  const live = stored
    .filter((s) => s.expires_at === null || Date.parse(s.expires_at) > now)
    .map((s) => (s.expires_at === null ? { ...s, expires_at: previousExpiresAt } : s));
  const soonest = () => isoTime(live.map((s) => Date.parse(s.expires_at ?? previousExpiresAt)).sort((a, b) => a - b)[0] ?? now);
  if (by === "receiver") {
    const own = live.filter((s) => s.by === "receiver").length;
    if (own + 1 > RECEIVER_GRACE_SLOTS || live.length + 1 > MAX_LIVE_SIGNING_SECRETS) {
      return fail(
        "conflict",
        `Earlier secrets this portal rotated out still sign (at most ${RECEIVER_GRACE_SLOTS} may, of ${MAX_LIVE_SIGNING_SECRETS} in all); the oldest grace ends at ${soonest()}: rotate again after it, or ask the organization.`,
      );
    }
    return ok({ secrets: [{ ...secret, by: "receiver" }, ...live], ended: 0 });
  }
  // Newest first: the oldest graces are the last; the organization's rotation ends as many as it must.
  const kept = live.slice(0, MAX_LIVE_SIGNING_SECRETS - 1);
  return ok({ secrets: [secret, ...kept], ended: live.length - kept.length });
}

/** A configuration's new list of signing secrets, as one change of its version (inside the caller's transaction). */
function storeSigningSecrets(db: Db, id: string, secrets: readonly SigningSecret[], now: number): void {
  db.run(
    "UPDATE configurations SET signing_secrets = ?, version = version + 1, updated_at = ? WHERE id = ?",
    JSON.stringify(secrets),
    isoTime(now),
    id,
  );
}

export function rotateSigningSecret(
  db: Db,
  id: string,
  secret: SigningSecret,
  previousExpiresAt: string,
  audit: Audit,
  now: number,
  by: ChangedBy = "organization",
): Result<void> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  if (current.delivery === "polling") return fail("conflict", "A polling configuration signs nothing: it has no signing key to rotate.");
  const planned = planRotation(JSON.parse(current.signing_secrets) as SigningSecret[], secret, previousExpiresAt, now, by);
  if (!planned.ok) return planned;
  const { secrets, ended } = planned.value;
  db.txn(() => {
    storeSigningSecrets(db, id, secrets, now);
    audit({
      action: "webhook_configuration.signing_secret_rotated",
      resource_type: "webhook_configuration",
      resource_id: id,
      detail: {
        previous_secret_expires_at: previousExpiresAt,
        signing_secrets: secrets.length,
        signature_scheme: keyScheme(secret),
        ...(ended > 0 ? { graces_ended: ended } : {}),
      },
    });
  });
  return ok(undefined);
}

/**
 * Ends every earlier secret's grace now (the organization's, after a leak): only the current
 * secret signs from the next attempt on. Answers how many graces it ended.
 */
export function endSigningGraces(db: Db, id: string, audit: Audit, now: number): Result<number> {
  const current = configRow(db, id);
  if (current === undefined) return missing("Webhook configuration");
  if (current.delivery === "polling") return fail("conflict", "A polling configuration signs nothing: it has no signing key.");
  const stored = JSON.parse(current.signing_secrets) as SigningSecret[];
  const graced = stored.filter((s) => s.expires_at !== null && Date.parse(s.expires_at) > now);
  if (graced.length === 0) return ok(0);
  const secrets = stored.filter((s) => s.expires_at === null);
  db.txn(() => {
    storeSigningSecrets(db, id, secrets, now);
    audit({
      action: "webhook_configuration.signing_graces_ended",
      resource_type: "webhook_configuration",
      resource_id: id,
      detail: { graces_ended: graced.length },
    });
  });
  return ok(graced.length);
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

/**
 * How long a rotated-in key is published before it signs: the JWKS's max-age (5 minutes) twice
 * over, since a receiver's server may have fetched it just before the rotation and, like
 * node-oidc-provider, not fetch it again for an unknown kid.
 */
export const ASSERTION_KEY_LEAD_MS = 10 * 60 * 1000;
/** How long a rotated-out key stays published after the new one starts signing. */
export const ASSERTION_KEY_OVERLAP_MS = 24 * 3600 * 1000;

const eventsOf = (row: ConfigRow): string[] | null => (row.events === null ? null : (JSON.parse(row.events) as string[]));

function insertKey(db: Db, key: AssertionKeyCandidate, configId: string | null, now: number, activatesAt: number): void {
  db.run(
    "INSERT INTO assertion_keys (kid, private_key, public_jwk, created_ms, activates_ms, config_id) VALUES (?, ?, ?, ?, ?, ?)",
    key.kid,
    JSON.stringify(key.private_key),
    JSON.stringify(key.public_jwk),
    now,
    activatesAt,
    configId,
  );
}

/**
 * A private_key_jwt configuration's copy carries the key that signs for it now and the one rotated
 * in (sealed): its own (issue 42), or the organization's before the move.
 */
export function withAssertionKey(db: Db, record: WebhookConfigurationRecord, now = Date.now()): WebhookConfigurationRecord {
  if (record.oauth.auth_method !== "private_key_jwt") return record;
  const signer = record.oauth.organization_key === true ? null : record.id;
  // Moved by a rotation, its own key signs only from its activation: the organization's signs until then.
  const moving = signer !== null && (record.oauth.organization_keys_until ?? 0) > now;
  const current = currentAssertionKey(db, now, signer) ?? (moving ? currentAssertionKey(db, now, null) : null);
  return { ...record, oauth: { ...record.oauth, assertion_key: current, next_assertion_key: nextAssertionKey(db, now, signer) } };
}

/**
 * Rotation, announced first (issue 31): the new key is published at once and signs from
 * `activatesAt`, so a receiver's server that cached the JWKS (for up to its max-age, and
 * node-oidc-provider does not fetch it again for an unknown kid) has it before any assertion uses
 * it; the keys it replaces stay published until `retiresAt`. `configId` null rotates the
 * organization's key of issue 31, which signs only for configurations not moved yet; otherwise the
 * configuration's own key (issue 42), and a configuration still on the organization's key moves to
 * it: the organization's keys stay listed at its URL until `retiresAt`. Keys past their overlap are deleted.
 */
export function rotateAssertionKey(
  db: Db,
  candidate: AssertionKeyCandidate,
  configId: string | null,
  activatesAt: number,
  retiresAt: number,
  audit: Audit,
  now: number,
): Result<{ kid: string; previous: string | null }> {
  const row = configId === null ? undefined : configRow(db, configId);
  if (configId !== null) {
    if (row === undefined) return missing("Webhook configuration");
    if (receiverAuthOf(row).auth_method !== "private_key_jwt") {
      return fail("conflict", "The configuration does not use private_key_jwt: it has no assertion key to rotate.");
    }
  }
  const signer = row === undefined ? null : signerOf(row);
  const previous = currentAssertionKey(db, now, signer)?.kid ?? null;
  db.txn(() => {
    db.run(
      `DELETE FROM assertion_keys WHERE ${keyOwner(configId)} AND retires_ms IS NOT NULL AND retires_ms <= ?`,
      ...ownerArgs(configId),
      now,
    );
    db.run(
      `UPDATE assertion_keys SET retires_ms = ? WHERE ${keyOwner(configId)} AND retires_ms IS NULL`,
      retiresAt,
      ...ownerArgs(configId),
    );
    insertKey(db, candidate, configId, now, activatesAt);
    if (row === undefined) {
      db.run(
        `UPDATE configurations SET version = version + 1, updated_at = ? WHERE receiver_auth IS NOT NULL
          AND json_extract(receiver_auth, '$.auth_method') = 'private_key_jwt' AND json_extract(receiver_auth, '$.organization_key') = 1`,
        isoTime(now),
      );
    } else {
      const auth = receiverAuthOf(row);
      if (auth.organization_key === true) {
        delete auth.organization_key;
        auth.organization_keys_until = retiresAt;
      }
      db.run(
        "UPDATE configurations SET receiver_auth = ?, version = version + 1, updated_at = ? WHERE id = ?",
        receiverAuthColumn(auth),
        isoTime(now),
        row.id,
      );
    }
    audit({
      action: row === undefined ? "webhook_settings.assertion_key_rotated" : "webhook_configuration.assertion_key_rotated",
      resource_type: row === undefined ? "webhook_settings" : "webhook_configuration",
      resource_id: row === undefined ? "webhooks" : row.id,
      detail: {
        kid: candidate.kid,
        activates_at: isoTime(activatesAt),
        previous_kid: previous,
        previous_retires_at: isoTime(retiresAt),
        ...(row !== undefined && signer === null ? { moved_from: "the organization's key" } : {}),
      },
    });
  });
  return ok({ kid: candidate.kid, previous });
}

const publicKeys = (db: Db, configId: string | null, now: number): Record<string, unknown>[] =>
  db
    .all<{ public_jwk: string }>(
      `SELECT public_jwk FROM assertion_keys WHERE ${keyOwner(configId)} AND (retires_ms IS NULL OR retires_ms > ?) ORDER BY created_ms DESC`,
      ...ownerArgs(configId),
      now,
    )
    .map((r) => JSON.parse(r.public_jwk) as Record<string, unknown>);

/**
 * The public keys a receiver's server verifies assertions with, current and within their overlap.
 * `configId` null: the organization's (issue 31's URL; they sign only for configurations not moved
 * yet). A configuration's set is its own keys, plus the organization's while it still signs with
 * them or its move's overlap lasts, so its receiver can register the configuration's URL before
 * the move and nothing breaks (docs/receiver-oauth.md). Empty for a configuration that is gone or
 * does not use private_key_jwt.
 */
export function publishedAssertionKeys(db: Db, now: number, configId: string | null = null): Record<string, unknown>[] {
  if (configId === null) return publicKeys(db, null, now);
  const row = configRow(db, configId);
  if (row === undefined) return [];
  const auth = receiverAuthOf(row);
  if (auth.auth_method !== "private_key_jwt") return [];
  const withOrganization = auth.organization_key === true || (auth.organization_keys_until ?? 0) > now;
  return [...publicKeys(db, configId, now), ...(withOrganization ? publicKeys(db, null, now) : [])];
}

/**
 * A polling configuration's read verifier as the edge should see it now (objects/lookup.ts), or
 * null for a push configuration (it has none). A deleted one's refuses every token (`since_ms`
 * now: later than any token issued before the deletion).
 */
export function pollingVerifierOf(db: Db, id: string, now: number): PollingVerifier | null {
  const row = configRow(db, id);
  if (row === undefined) {
    const tomb = db.first<{ record: string }>("SELECT record FROM deleted_configurations WHERE id = ?", id);
    if (tomb === undefined || (JSON.parse(tomb.record) as { delivery?: string }).delivery !== "polling") return null;
    return { token_hash: null, since_ms: now, live: false };
  }
  if (row.delivery !== "polling") return null;
  const credential =
    row.polling === null ? null : (JSON.parse(row.polling) as { token_hash: string | null; token_created_at: string | null });
  const hash = credential?.token_hash ?? null;
  // A live token's own issue time; a revocation's is the change's (the row's updated_at).
  const since = Date.parse(hash !== null && credential?.token_created_at ? credential.token_created_at : row.updated_at);
  return { token_hash: hash, since_ms: since, live: row.status !== "disabled" };
}

/**
 * A key set as the edge serves it (objects/lookup.ts `ReceiverKeySet`): the keys
 * `publishedAssertionKeys` lists, each with the time it stops being listed (its retirement, or
 * the end of a moved configuration's overlap with the organization's keys), so the edge drops it
 * then without asking this object. Empty: nothing to publish (a push configuration without
 * private_key_jwt, a deleted one, a deleted organization).
 */
export function keySetOf(
  db: Db,
  configId: string | null,
  organizationDeleted: boolean,
): { jwk: Record<string, unknown>; until: number | null }[] {
  if (organizationDeleted) return [];
  const keys = (owner: string | null, cap: number | null) =>
    db
      .all<{ public_jwk: string; retires_ms: number | null }>(
        `SELECT public_jwk, retires_ms FROM assertion_keys WHERE ${keyOwner(owner)} ORDER BY created_ms DESC`,
        ...ownerArgs(owner),
      )
      .map((r) => ({
        jwk: JSON.parse(r.public_jwk) as Record<string, unknown>,
        until: r.retires_ms === null ? cap : cap === null ? r.retires_ms : Math.min(r.retires_ms, cap),
      }));
  if (configId === null) return keys(null, null);
  const row = configRow(db, configId);
  if (row === undefined) return [];
  const auth = receiverAuthOf(row);
  if (auth.auth_method !== "private_key_jwt") return [];
  const withOrganization = auth.organization_key === true ? null : (auth.organization_keys_until ?? 0);
  return [...keys(configId, null), ...(withOrganization === 0 ? [] : keys(null, withOrganization))];
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
