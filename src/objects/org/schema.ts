/**
 * The organization object's storage: its tables and their migrations, the rows as SQLite returns
 * them, the records the API shows, and the organization's own row (present, or deleted). One
 * module, so that every other part of the object (identity changes, propagation, access, the
 * audit log) reads the same shapes; objects/organization.ts is the object that uses them.
 */
import { isoTime } from "../../lib/time";
import type { Jwks } from "../../schemas/jose";
import {
  type ApiKeyRecord,
  type ClientCredentialRecord,
  KeyCredits,
  type OrgAdminTokenRecord,
  type OrganizationRecord,
  OrgQuota,
  type TrustedIssuerRecord,
  type UserRecord,
} from "../../schemas/records";
import type { Migration } from "../sql";

/** A change of limit overrides: a number sets one, null restores its default, absent keeps it. */
export interface LimitPatch {
  per_second?: number | null | undefined;
  per_day?: number | null | undefined;
}

/** The most active API keys an organization may have: a revocation is pushed to each of them. */
export const MAX_ACTIVE_API_KEYS = 100;
/** Key objects synced at once during a push. */
export const SYNC_CONCURRENCY = 10;
export const AUDIT_RETENTION_DAYS = 400;
/** Expired sessions and audit entries older than the retention are pruned this often. */
export const HOUSEKEEPING_INTERVAL_MS = 24 * 3600 * 1000;
/**
 * A deleted organization's data (users, credentials, keys, tokens, sessions, webhook
 * configurations and deliveries) is erased this long after the deletion: time to undo a mistake
 * with support's help, or to answer a dispute. The audit log is kept for AUDIT_RETENTION_DAYS.
 */
export const ERASE_AFTER_DAYS = 30;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE organization (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, name TEXT NOT NULL,
        created_at TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0, in_directory INTEGER NOT NULL DEFAULT 0)`,
      "CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT, created_at TEXT NOT NULL)",
      `CREATE TABLE client_credentials (client_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT, secret_hash TEXT NOT NULL,
        created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT)`,
      "CREATE INDEX client_credentials_by_user ON client_credentials (user_id)",
      "CREATE TABLE revocations (revision INTEGER PRIMARY KEY, client_id TEXT NOT NULL, revoked_at TEXT NOT NULL)",
      `CREATE TABLE api_keys (id TEXT PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, key_hint TEXT NOT NULL, name TEXT,
        per_second INTEGER, per_day INTEGER, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT,
        version INTEGER NOT NULL DEFAULT 1, synced_version INTEGER NOT NULL DEFAULT 0, synced_revision INTEGER NOT NULL DEFAULT 0)`,
      `CREATE TABLE admin_tokens (id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, name TEXT, created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT)`,
      `CREATE TABLE sessions (id_hash TEXT PRIMARY KEY, admin_token_id TEXT NOT NULL, csrf TEXT NOT NULL, created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL)`,
      "CREATE INDEX sessions_by_token ON sessions (admin_token_id)",
      `CREATE TABLE audit_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
        resource_type TEXT NOT NULL, resource_id TEXT NOT NULL, detail TEXT)`,
      /** KV lookup entries still to write ('put') or remove ('delete'). */
      "CREATE TABLE pending_lookups (client_id TEXT PRIMARY KEY, op TEXT NOT NULL)",
    ],
  },
  {
    // Entries pushed from other objects (webhooks) carry a key, so a repeated push adds nothing.
    version: 2,
    statements: [
      "ALTER TABLE audit_log ADD COLUMN source_key TEXT",
      "CREATE UNIQUE INDEX audit_log_by_source_key ON audit_log (source_key)",
    ],
  },
  {
    // Where a key's object is created (docs/latency.md); NULL: near this object.
    version: 3,
    statements: ["ALTER TABLE api_keys ADD COLUMN location_hint TEXT"],
  },
  {
    // The daily retention delete finds old entries through an index, not by reading the log.
    version: 4,
    statements: ["CREATE INDEX audit_log_by_time ON audit_log (at)"],
  },
  {
    // Issue 21: private_key_jwt credentials, scopes, DPoP; revoking one token; client assertions' single use.
    version: 5,
    statements: [
      "ALTER TABLE client_credentials ADD COLUMN auth_method TEXT NOT NULL DEFAULT 'client_secret'",
      "ALTER TABLE client_credentials ADD COLUMN jwks TEXT",
      "ALTER TABLE client_credentials ADD COLUMN scopes TEXT",
      "ALTER TABLE client_credentials ADD COLUMN dpop_bound INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE client_credentials ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
      // What a revision is: a credential revoked ('client'), changed ('changed': its KV copy is
      // stale below `version`), or one access token revoked ('token', kept until it expires).
      "ALTER TABLE revocations ADD COLUMN kind TEXT NOT NULL DEFAULT 'client'",
      "ALTER TABLE revocations ADD COLUMN version INTEGER",
      "ALTER TABLE revocations ADD COLUMN token_id TEXT",
      "ALTER TABLE revocations ADD COLUMN expires_ms INTEGER",
      "CREATE INDEX revocations_tokens_by_expiry ON revocations (expires_ms) WHERE kind = 'token'",
      // Client assertions' jti, until the assertion expires (RFC 7523 3, point 7: single use).
      "CREATE TABLE assertion_jtis (jti_hash TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)",
      "CREATE INDEX assertion_jtis_by_expiry ON assertion_jtis (expires_ms)",
    ],
  },
  {
    // Issue 22: an organization deleted (everything revoked at once), and erased after ERASE_AFTER_DAYS.
    version: 6,
    statements: ["ALTER TABLE organization ADD COLUMN deleted_at TEXT", "ALTER TABLE organization ADD COLUMN erase_after TEXT"],
  },
  {
    // Issue 24: an organization's shared quota (OrgQuota JSON) and a key's credits (KeyCredits JSON).
    version: 7,
    statements: ["ALTER TABLE organization ADD COLUMN quota TEXT", "ALTER TABLE api_keys ADD COLUMN credits TEXT"],
  },
  {
    // Issue 29, endings.
    version: 8,
    statements: [
      // A deletion is driven to its end by the alarm: NULL until the WebhookObject has deleted every
      // configuration and every endpoint's object has it (then: how many). Organizations deleted
      // before this version are finished by their next alarm too.
      "ALTER TABLE organization ADD COLUMN webhooks_deleted INTEGER",
      // Expired sessions are pruned through an index, on sign-in and daily.
      "CREATE INDEX sessions_by_expiry ON sessions (expires_at)",
      // DPoP proofs used at the token endpoint, whatever API key they came with (RFC 9449 11.1).
      // Since issue 41 they are recorded in the ProofObjects (objects/proofs.ts); the table is
      // no longer written and its housekeeping empties it.
      "CREATE TABLE token_proofs (jti TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)",
      "CREATE INDEX token_proofs_by_expiry ON token_proofs (expires_ms)",
      // A key rotated with a grace period: its object keeps the name of its first secret
      // (`object_hash`, NULL: `key_hash`), and the secret it replaced works until `previous_until_ms`.
      "ALTER TABLE api_keys ADD COLUMN object_hash TEXT",
      "ALTER TABLE api_keys ADD COLUMN previous_hash TEXT",
      "ALTER TABLE api_keys ADD COLUMN previous_until_ms INTEGER",
    ],
  },
  {
    // Issue 44: clients without shared secrets, and JWT access tokens.
    version: 9,
    statements: [
      // A private_key_jwt client's key set URL (instead of `jwks`); a federated_jwt client's issuer and exact subject.
      "ALTER TABLE client_credentials ADD COLUMN jwks_uri TEXT",
      "ALTER TABLE client_credentials ADD COLUMN federated_issuer TEXT",
      "ALTER TABLE client_credentials ADD COLUMN federated_subject TEXT",
      // 'opaque' or 'jwt' (RFC 9068).
      "ALTER TABLE client_credentials ADD COLUMN token_strategy TEXT NOT NULL DEFAULT 'opaque'",
      `CREATE TABLE trusted_issuers (id TEXT PRIMARY KEY, issuer TEXT NOT NULL UNIQUE, name TEXT, jwks_uri TEXT NOT NULL,
        jwks_uri_source TEXT NOT NULL, assertion_reuse TEXT NOT NULL, max_lifetime_s INTEGER NOT NULL, created_at TEXT NOT NULL)`,
      // Key sets fetched from a URL (an issuer's, a client's): what was fetched, until when it is
      // fresh, and the last attempt (a refetch at most once a minute per URL: objects/org/remote-keys.ts).
      `CREATE TABLE key_sets (url TEXT PRIMARY KEY, jwks TEXT, fetched_ms INTEGER, fresh_until_ms INTEGER NOT NULL DEFAULT 0,
        attempted_ms INTEGER NOT NULL DEFAULT 0)`,
    ],
  },
  {
    // The audit log's filters (schemas/audit.ts AuditFilter): each narrowing has an index ending
    // in seq, so a filtered page reads its own rows, newest first, not the whole log.
    version: 10,
    statements: [
      "CREATE INDEX audit_log_by_action ON audit_log (action, seq)",
      "CREATE INDEX audit_log_by_resource ON audit_log (resource_id, seq)",
      "CREATE INDEX audit_log_by_resource_type ON audit_log (resource_type, seq)",
      "CREATE INDEX audit_log_by_actor ON audit_log (json_extract(actor, '$.type'), seq)",
      "CREATE INDEX audit_log_by_actor_id ON audit_log (json_extract(actor, '$.id'), seq)",
    ],
  },
];

/** The most trusted issuers an organization may register (each is a key set keyway fetches and keeps). */
export const MAX_TRUSTED_ISSUERS = 20;

export type Row = Record<string, SqlStorageValue>;
export interface UserRow extends Row {
  rowid: number;
  id: string;
  name: string;
  email: string | null;
  created_at: string;
}
export interface CredentialRow extends Row {
  rowid: number;
  client_id: string;
  user_id: string;
  name: string | null;
  secret_hash: string;
  auth_method: "client_secret" | "private_key_jwt" | "federated_jwt";
  jwks: string | null;
  /** Migration 9. */
  jwks_uri: string | null;
  federated_issuer: string | null;
  federated_subject: string | null;
  token_strategy: "opaque" | "jwt";
  scopes: string | null;
  dpop_bound: number;
  version: number;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
export interface KeyRow extends Row {
  rowid: number;
  id: string;
  key_hash: string;
  key_hint: string;
  name: string | null;
  per_second: number | null;
  per_day: number | null;
  location_hint: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  version: number;
  synced_version: number;
  synced_revision: number;
  /** KeyCredits JSON (migration 7); null: no credits. */
  credits: string | null;
  /** The key's object's name, the hash of its first secret (migration 8); null: `key_hash`. */
  object_hash: string | null;
  /** The secret a rotation replaced, and until when it still works (migration 8). */
  previous_hash: string | null;
  previous_until_ms: number | null;
}

/** The name of a key's object: the hash of its first secret (a rotation keeps the object). */
export const objectHashOf = (row: Pick<KeyRow, "object_hash" | "key_hash">): string => row.object_hash ?? row.key_hash;
export interface AdminTokenRow extends Row {
  rowid: number;
  id: string;
  token_hash: string;
  name: string | null;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
export interface TrustedIssuerRow extends Row {
  rowid: number;
  id: string;
  issuer: string;
  name: string | null;
  jwks_uri: string;
  jwks_uri_source: "registered" | "discovered";
  assertion_reuse: "once" | "until_expiry";
  max_lifetime_s: number;
  created_at: string;
}
export interface KeySetRow extends Row {
  url: string;
  /** The JWKS JSON last fetched; null before a fetch succeeded. */
  jwks: string | null;
  fetched_ms: number | null;
  fresh_until_ms: number;
  attempted_ms: number;
}
export interface AuditRow extends Row {
  rowid: number;
  at: string;
  actor: string;
  action: string;
  resource_type: string;
  resource_id: string;
  detail: string | null;
}

/** What the token endpoint needs of an authenticated client credential. */
export interface ClientFacts {
  user_id: string;
  active: boolean;
  /** The scopes its tokens may have; null: every scope. */
  scopes: string[] | null;
  /** Its tokens must be DPoP-bound. */
  dpop_bound: boolean;
  version: number;
  /** Its access tokens are RFC 9068 JWTs (issue 44); absent from an object of an earlier release: opaque. */
  access_token_strategy?: "opaque" | "jwt";
  /** For the release before issue 41 only: its token request's DPoP proof had been used before. */
  proof_replayed?: boolean;
}

/** A change that others must apply: whether every one of them has. */
export interface Propagated<T> {
  record: T;
  /** Key objects that have not applied the change yet (retried until they do). */
  pending: number;
  /** A deletion: the webhook configurations are not yet deleted everywhere (retried until they are). */
  webhooksPending?: boolean;
}

export interface SessionInfo {
  csrf: string;
  admin_token_id: string;
  expires_at: string;
}

/** The organization's row; null before it is created. A deleted organization keeps its row (deleted_at) until it is erased. */
export type OrgRow = OrganizationRecord & {
  revision: number;
  in_directory: number;
  deleted_at: string | null;
  erase_after: string | null;
  /** OrgQuota JSON (migration 7); null: no shared quota. */
  quota: string | null;
  /** A deleted organization's webhook configurations deleted everywhere (how many); null until then (migration 8). */
  webhooks_deleted: number | null;
};

export function orgRow(sql: SqlStorage): OrgRow | null {
  return (
    sql
      .exec<OrgRow>(
        "SELECT id, name, created_at, revision, in_directory, deleted_at, erase_after, quota, webhooks_deleted FROM organization",
      )
      .toArray()[0] ?? null
  );
}

/** The organization's shared quota, or null without one. */
export const quotaOf = (org: Pick<OrgRow, "quota">): OrgQuota | null => (org.quota === null ? null : OrgQuota.parse(JSON.parse(org.quota)));

export function userRow(sql: SqlStorage, id: string): UserRow | undefined {
  return sql.exec<UserRow>("SELECT rowid, * FROM users WHERE id = ?", id).toArray()[0];
}

export function credentialRow(sql: SqlStorage, clientId: string): CredentialRow | undefined {
  return sql.exec<CredentialRow>("SELECT rowid, * FROM client_credentials WHERE client_id = ?", clientId).toArray()[0];
}

export function trustedIssuerRow(sql: SqlStorage, id: string): TrustedIssuerRow | undefined {
  return sql.exec<TrustedIssuerRow>("SELECT rowid, * FROM trusted_issuers WHERE id = ?", id).toArray()[0];
}

export function trustedIssuerByIssuer(sql: SqlStorage, issuer: string): TrustedIssuerRow | undefined {
  return sql.exec<TrustedIssuerRow>("SELECT rowid, * FROM trusted_issuers WHERE issuer = ?", issuer).toArray()[0];
}

export function keySetRow(sql: SqlStorage, url: string): KeySetRow | undefined {
  return sql.exec<KeySetRow>("SELECT * FROM key_sets WHERE url = ?", url).toArray()[0];
}

export function trustedIssuerRecord(orgId: string, row: TrustedIssuerRow, keys: KeySetRow | undefined): TrustedIssuerRecord {
  const held = keys?.jwks != null && keys.fetched_ms != null ? (JSON.parse(keys.jwks) as Jwks) : null;
  return {
    id: row.id,
    organization_id: orgId,
    name: row.name,
    issuer: row.issuer,
    jwks_uri: row.jwks_uri,
    jwks_uri_source: row.jwks_uri_source,
    assertion_reuse: row.assertion_reuse,
    max_assertion_lifetime_seconds: row.max_lifetime_s,
    key_set:
      held === null || keys?.fetched_ms == null
        ? null
        : { fetched_at: isoTime(keys.fetched_ms), key_ids: held.keys.map((k) => (typeof k.kid === "string" ? k.kid : null)) },
    created_at: row.created_at,
  };
}

export function keyRow(sql: SqlStorage, id: string): KeyRow | undefined {
  return sql.exec<KeyRow>("SELECT rowid, * FROM api_keys WHERE id = ?", id).toArray()[0];
}

export function adminTokenRow(sql: SqlStorage, id: string): AdminTokenRow | undefined {
  return sql.exec<AdminTokenRow>("SELECT rowid, * FROM admin_tokens WHERE id = ?", id).toArray()[0];
}

export function userRecord(orgId: string, row: UserRow): UserRecord {
  return { id: row.id, organization_id: orgId, name: row.name, email: row.email, created_at: row.created_at };
}

export function credentialRecord(orgId: string, row: CredentialRow): ClientCredentialRecord {
  return {
    client_id: row.client_id,
    organization_id: orgId,
    user_id: row.user_id,
    name: row.name,
    auth_method: row.auth_method,
    secret_hash: row.secret_hash,
    jwks: row.jwks === null ? null : (JSON.parse(row.jwks) as Jwks),
    jwks_uri: row.jwks_uri,
    federated:
      row.federated_issuer === null || row.federated_subject === null
        ? null
        : { issuer: row.federated_issuer, subject: row.federated_subject },
    access_token_strategy: row.token_strategy,
    scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
    dpop_bound: row.dpop_bound === 1,
    version: row.version,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

export function keyRecord(orgId: string, row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    organization_id: orgId,
    name: row.name,
    key_hash: row.key_hash,
    object_hash: objectHashOf(row),
    previous_secret_expires_at: row.previous_hash === null || row.previous_until_ms === null ? null : isoTime(row.previous_until_ms),
    key_hint: row.key_hint,
    limits: {
      ...(row.per_second !== null ? { per_second: row.per_second } : {}),
      ...(row.per_day !== null ? { per_day: row.per_day } : {}),
    },
    location_hint: (row.location_hint as ApiKeyRecord["location_hint"]) ?? null,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
    credits: row.credits === null ? null : KeyCredits.parse(JSON.parse(row.credits)),
  };
}

export function adminTokenRecord(orgId: string, row: AdminTokenRow): OrgAdminTokenRecord {
  return {
    id: row.id,
    organization_id: orgId,
    name: row.name,
    token_hash: row.token_hash,
    created_at: row.created_at,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}
