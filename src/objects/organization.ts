/**
 * OrganizationObject: one SQLite-backed Durable Object per organization, the system of record for
 * its identity facts: the organization, its users, client credentials (secret hash, status, last
 * use), API keys (hash, hint, limit overrides, status, last use), administrator tokens (hash,
 * expiry, status), manager sessions, and the audit log. Every change is one transaction here,
 * with its audit entry; nothing about identity is read from KV, changed and written back.
 *
 * After a change commits, what other places derive from it is propagated from here, and retried
 * (an alarm) until it lands:
 * - each API key's KeyObject gets the key's state and the organization's credential revocations
 *   (by revision), so the one Durable Object call of every /v1 request decides them;
 * - the credential lookup entries in KV (objects/lookup.ts) the token endpoint reads;
 * - the organization's entry in the DirectoryObject (operator listing).
 * A change that must take effect everywhere (a revocation, new limits) is answered only once every
 * key object has applied it; otherwise the caller learns it is still being applied.
 *
 * Load: operator and manager traffic, the token endpoint's slow path (a credential KV has not
 * caught up with yet), each key's use flush (once a minute), and /v1 changes' audit entries: tens
 * of requests per second at most. Rows: users, credentials and keys in the thousands, the audit log
 * pruned after AUDIT_RETENTION_DAYS.
 */
import { DurableObject } from "cloudflare:workers";
import type { JWK } from "jose";
import { sha256Hex } from "../lib/crypto";
import { refuseAsIfVerified, verifyClientAssertion } from "../lib/jwt";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import type { Actor, AuditEntryView } from "../schemas/audit";
import type { Jwks } from "../schemas/jose";
import type { ApiKeyRecord, ClientCredentialRecord, OrgAdminTokenRecord, OrganizationRecord, UserRecord } from "../schemas/records";
import { type KeySnapshot, USE_RESOLUTION_MS } from "./key";
import { deleteCredentialLookup, writeCredentialLookup } from "./lookup";
import { fail, type Migration, migrate, missing, ok, type Page, type PageRequest, pageOf, pageOfTable, type Result } from "./sql";
import type { KeyedAuditEntry } from "./webhooks/audit";

/** A change of limit overrides: a number sets one, null restores its default, absent keeps it. */
export interface LimitPatch {
  per_second?: number | null | undefined;
  per_day?: number | null | undefined;
}

/** The most active API keys an organization may have: a revocation is pushed to each of them. */
export const MAX_ACTIVE_API_KEYS = 100;
/** Key objects synced at once during a push. */
const SYNC_CONCURRENCY = 10;
export const AUDIT_RETENTION_DAYS = 400;
/** Expired sessions and audit entries older than the retention are pruned this often. */
const HOUSEKEEPING_INTERVAL_MS = 24 * 3600 * 1000;

const MIGRATIONS: Migration[] = [
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
];

type Row = Record<string, SqlStorageValue>;
interface UserRow extends Row {
  rowid: number;
  id: string;
  name: string;
  email: string | null;
  created_at: string;
}
interface CredentialRow extends Row {
  rowid: number;
  client_id: string;
  user_id: string;
  name: string | null;
  secret_hash: string;
  auth_method: "client_secret" | "private_key_jwt";
  jwks: string | null;
  scopes: string | null;
  dpop_bound: number;
  version: number;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
interface KeyRow extends Row {
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
}
interface AdminTokenRow extends Row {
  rowid: number;
  id: string;
  token_hash: string;
  name: string | null;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
interface AuditRow extends Row {
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
}

/** A change that others must apply: whether every one of them has. */
export interface Propagated<T> {
  record: T;
  /** Key objects that have not applied the change yet (retried until they do). */
  pending: number;
}

export interface SessionInfo {
  csrf: string;
  admin_token_id: string;
  expires_at: string;
}

export class OrganizationObject extends DurableObject<Env> {
  private alarmAt: number | null = null;
  private retries = 0;
  /** When expired rows were last pruned (memory: a restarted object prunes at its first alarm). */
  private housekeptAt = 0;
  /** Client ids whose KV entry is being written: one write at a time per entry, in order. */
  private readonly lookupsInFlight = new Set<string>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
      // Every organization keeps an alarm: housekeeping runs even when nothing ever fails.
      if (this.exists()) this.schedule(Date.now() + HOUSEKEEPING_INTERVAL_MS);
    });
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private org(): OrganizationRecord & { revision: number; in_directory: number } {
    const row = this.sql
      .exec<{ id: string; name: string; created_at: string; revision: number; in_directory: number }>(
        "SELECT id, name, created_at, revision, in_directory FROM organization",
      )
      .toArray()[0];
    if (row === undefined) throw new Error("organization object used before it was created");
    return row;
  }

  private exists(): boolean {
    return this.sql.exec("SELECT 1 FROM organization").toArray().length > 0;
  }

  // -------------------------------------------------------------------------------------------
  // Organization

  /** Creates the organization (idempotent for the same id), then registers it in the directory. */
  async create(org: OrganizationRecord, actor: Actor): Promise<Result<OrganizationRecord>> {
    if (!this.exists()) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("INSERT INTO organization (one, id, name, created_at) VALUES (1, ?, ?, ?)", org.id, org.name, org.created_at);
        this.audit(actor, "organization.created", "organization", org.id, { name: org.name });
      });
      this.schedule(Date.now() + HOUSEKEEPING_INTERVAL_MS);
    }
    await this.propagate();
    const { id, name, created_at } = this.org();
    return ok({ id, name, created_at });
  }

  organization(): Result<OrganizationRecord> {
    if (!this.exists()) return missing("Organization");
    const { id, name, created_at } = this.org();
    return ok({ id, name, created_at });
  }

  // -------------------------------------------------------------------------------------------
  // Users

  createUser(user: Omit<UserRecord, "organization_id">, actor: Actor): Result<UserRecord> {
    if (!this.exists()) return missing("Organization");
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT INTO users (id, name, email, created_at) VALUES (?, ?, ?, ?)", user.id, user.name, user.email, user.created_at);
      this.audit(actor, "user.created", "user", user.id, { name: user.name });
    });
    return ok(this.userRecord(this.userRow(user.id) as UserRow));
  }

  getUser(userId: string): Result<UserRecord> {
    const row = this.exists() ? this.userRow(userId) : undefined;
    return row ? ok(this.userRecord(row)) : missing("User");
  }

  listUsers(page: PageRequest): Result<Page<UserRecord>> {
    if (!this.exists()) return missing("Organization");
    return pageOfTable(this.sql, "users", page, (row: UserRow) => this.userRecord(row));
  }

  /** Revokes every credential of the user, then removes the user: one transaction, then the pushes. */
  async removeUser(userId: string, actor: Actor, now: number): Promise<Result<Propagated<UserRecord>>> {
    const row = this.exists() ? this.userRow(userId) : undefined;
    if (row === undefined) return missing("User");
    this.ctx.storage.transactionSync(() => {
      const active = this.sql
        .exec<{ client_id: string }>("SELECT client_id FROM client_credentials WHERE user_id = ? AND revoked_at IS NULL", userId)
        .toArray();
      for (const { client_id } of active) this.revokeCredentialRow(client_id, now, actor);
      this.sql.exec("DELETE FROM users WHERE id = ?", userId);
      this.audit(actor, "user.removed", "user", userId, { revoked_credentials: active.length });
    });
    return ok({ record: this.userRecord(row), pending: await this.propagate() });
  }

  // -------------------------------------------------------------------------------------------
  // Client credentials

  async createCredential(
    credential: Omit<ClientCredentialRecord, "organization_id" | "last_used_at" | "revoked_at" | "version">,
    actor: Actor,
  ): Promise<Result<ClientCredentialRecord>> {
    if (this.userRow(credential.user_id) === undefined) return missing("User");
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO client_credentials (client_id, user_id, name, secret_hash, auth_method, jwks, scopes, dpop_bound, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        credential.client_id,
        credential.user_id,
        credential.name,
        credential.secret_hash,
        credential.auth_method,
        credential.jwks === null ? null : JSON.stringify(credential.jwks),
        credential.scopes === null ? null : JSON.stringify(credential.scopes),
        credential.dpop_bound ? 1 : 0,
        credential.created_at,
      );
      this.sql.exec("INSERT OR REPLACE INTO pending_lookups (client_id, op) VALUES (?, 'put')", credential.client_id);
      this.audit(actor, "client_credential.created", "client_credential", credential.client_id, {
        user_id: credential.user_id,
        name: credential.name,
        token_endpoint_auth_method: credential.auth_method === "private_key_jwt" ? "private_key_jwt" : "client_secret_basic",
        ...(credential.jwks ? { key_ids: credential.jwks.keys.map((k) => k.kid ?? null) } : {}),
        ...(credential.scopes ? { scopes: credential.scopes } : {}),
        ...(credential.dpop_bound ? { dpop_bound_access_tokens: true } : {}),
      });
    });
    await this.propagate();
    return ok(this.credentialRecord(this.credentialRow(credential.client_id) as CredentialRow));
  }

  listCredentials(userId: string, page: PageRequest): Result<Page<ClientCredentialRecord>> {
    if (this.userRow(userId) === undefined) return missing("User");
    return pageOf(
      (after, limit) =>
        this.sql
          .exec<CredentialRow>(
            "SELECT rowid, * FROM client_credentials WHERE user_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
            userId,
            after,
            limit,
          )
          .toArray(),
      page,
      (row) => this.credentialRecord(row),
    );
  }

  getCredential(userId: string, clientId: string): Result<ClientCredentialRecord> {
    const row = this.exists() ? this.credentialRow(clientId) : undefined;
    // A removed user's credentials stay readable (revoked) under the user's id.
    return row && row.user_id === userId ? ok(this.credentialRecord(row)) : missing("Client credential");
  }

  /** Idempotent. Answered once every key object knows (or with the number still to learn it). */
  async revokeCredential(userId: string, clientId: string, actor: Actor, now: number): Promise<Result<Propagated<ClientCredentialRecord>>> {
    const found = this.getCredential(userId, clientId);
    if (!found.ok) return found;
    if (found.value.revoked_at === null) this.ctx.storage.transactionSync(() => this.revokeCredentialRow(clientId, now, actor));
    const pending = await this.propagate();
    return ok({ record: this.credentialRecord(this.credentialRow(clientId) as CredentialRow), pending });
  }

  /**
   * Changes a credential: its name, its key set (private_key_jwt), its scopes, whether its tokens
   * must be DPoP-bound. The last three are decided on from the KV copy at the token endpoint, so
   * a change bumps the credential's version and is pushed to every key object like a revocation:
   * a KV copy older than that is not trusted (auth/client-auth.ts asks this object instead).
   */
  async updateCredential(
    userId: string,
    clientId: string,
    patch: { name?: string | null; jwks?: Jwks; scopes?: string[] | null; dpop_bound?: boolean },
    actor: Actor,
    now: number,
  ): Promise<Result<Propagated<ClientCredentialRecord>>> {
    const found = this.getCredential(userId, clientId);
    if (!found.ok) return found;
    const current = found.value;
    if (current.revoked_at !== null) return fail("conflict", "The client credential is revoked; create a new one.");
    if (patch.jwks !== undefined && current.auth_method !== "private_key_jwt") {
      return fail("invalid_request", "jwks is only for a private_key_jwt credential.");
    }
    const facts = patch.jwks !== undefined || patch.scopes !== undefined || patch.dpop_bound !== undefined;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "UPDATE client_credentials SET name = ?, jwks = ?, scopes = ?, dpop_bound = ?, version = version + ? WHERE client_id = ?",
        patch.name === undefined ? current.name : patch.name,
        JSON.stringify(patch.jwks ?? current.jwks),
        patch.scopes === undefined
          ? current.scopes === null
            ? null
            : JSON.stringify(current.scopes)
          : patch.scopes === null
            ? null
            : JSON.stringify(patch.scopes),
        (patch.dpop_bound ?? current.dpop_bound) ? 1 : 0,
        facts ? 1 : 0,
        clientId,
      );
      if (facts) {
        const version = (this.credentialRow(clientId) as CredentialRow).version;
        this.sql.exec("UPDATE organization SET revision = revision + 1");
        this.sql.exec(
          "INSERT INTO revocations (revision, client_id, revoked_at, kind, version) SELECT revision, ?, ?, 'changed', ? FROM organization",
          clientId,
          isoTime(now),
          version,
        );
        this.sql.exec("INSERT OR REPLACE INTO pending_lookups (client_id, op) VALUES (?, 'put')", clientId);
      }
      this.audit(actor, "client_credential.updated", "client_credential", clientId, {
        fields: Object.keys(patch).filter((k) => patch[k as keyof typeof patch] !== undefined),
        ...(patch.jwks ? { key_ids: patch.jwks.keys.map((k) => k.kid ?? null) } : {}),
      });
    });
    const pending = await this.propagate();
    return ok({ record: this.credentialRecord(this.credentialRow(clientId) as CredentialRow), pending });
  }

  /**
   * The token endpoint's slow path, when KV has no entry for the client_id yet or one older than
   * the key objects know: whether the secret matches an active credential of this organization,
   * and what its tokens may be. A match is a use of the credential.
   */
  authenticateClient(clientId: string, secretHash: string, now: number): Result<ClientFacts | null> {
    const row = this.exists() ? this.credentialRow(clientId) : undefined;
    if (row === undefined || row.auth_method !== "client_secret") return ok(null);
    const matches = timingSafeEqualHex(row.secret_hash, secretHash);
    if (!matches) return ok(null);
    if (row.revoked_at === null) this.noteCredentialUse(clientId, now);
    return ok(this.factsOf(row));
  }

  /**
   * private_key_jwt (RFC 7523 3): the client assertion verified against the credential's
   * registered keys, then its jti recorded until the assertion expires, so that it is used once
   * whatever API key or location it comes through. Every failure answers null with a reason for
   * the logs; the client learns only invalid_client.
   */
  async authenticateAssertion(
    clientId: string,
    assertion: string,
    audiences: string[],
    now: number,
  ): Promise<Result<{ facts: ClientFacts | null; reason?: string }>> {
    const row = this.exists() ? this.credentialRow(clientId) : undefined;
    if (row === undefined || row.auth_method !== "private_key_jwt" || row.jwks === null) {
      // The same signature check as for a known client, against a key nobody holds: timing does
      // not tell which client_ids exist.
      await refuseAsIfVerified(assertion, { clientId, audiences, nowMs: now });
      return ok({ facts: null, reason: "no private_key_jwt credential with this client_id" });
    }
    const keys = (JSON.parse(row.jwks) as Jwks).keys as JWK[];
    const verified = await verifyClientAssertion(assertion, keys, { clientId, audiences, nowMs: now });
    if (!verified.ok) return ok({ facts: null, reason: verified.reason });
    const jtiHash = await sha256Hex(`${clientId} ${verified.jti}`);
    const first = this.sql.exec(
      "INSERT OR IGNORE INTO assertion_jtis (jti_hash, expires_ms) VALUES (?, ?)",
      jtiHash,
      verified.exp * 1000 + 60_000,
    ).rowsWritten;
    if (first === 0) return ok({ facts: null, reason: "jti already used" });
    if (row.revoked_at === null) this.noteCredentialUse(clientId, now);
    return ok({ facts: this.factsOf(row) });
  }

  /**
   * RFC 7009: one access token revoked (until it expires), pushed to every key object like a
   * revoked credential. Idempotent; answered once every key object knows.
   */
  async revokeToken(tokenId: string, clientId: string, expiresMs: number, actor: Actor, now: number): Promise<Result<number>> {
    if (!this.exists()) return missing("Organization");
    const known = this.sql.exec("SELECT 1 FROM revocations WHERE kind = 'token' AND token_id = ?", tokenId).toArray().length > 0;
    if (!known) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("UPDATE organization SET revision = revision + 1");
        this.sql.exec(
          `INSERT INTO revocations (revision, client_id, revoked_at, kind, token_id, expires_ms)
            SELECT revision, ?, ?, 'token', ?, ? FROM organization`,
          clientId,
          isoTime(now),
          tokenId,
          expiresMs,
        );
        this.audit(actor, "access_token.revoked", "access_token", tokenId, { client_id: clientId });
      });
    }
    return ok(await this.propagate());
  }

  private factsOf(row: CredentialRow): ClientFacts {
    return {
      user_id: row.user_id,
      active: row.revoked_at === null,
      scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
      dpop_bound: row.dpop_bound === 1,
      version: row.version,
    };
  }

  // -------------------------------------------------------------------------------------------
  // API keys

  async createKey(
    key: Omit<ApiKeyRecord, "organization_id" | "last_used_at" | "revoked_at">,
    actor: Actor,
  ): Promise<Result<Propagated<ApiKeyRecord>>> {
    if (!this.exists()) return missing("Organization");
    const active = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL").one().n;
    if (active >= MAX_ACTIVE_API_KEYS) {
      return fail("conflict", `The organization has ${MAX_ACTIVE_API_KEYS} active API keys, the most it may have; revoke one first.`);
    }
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO api_keys (id, key_hash, key_hint, name, per_second, per_day, location_hint, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        key.id,
        key.key_hash,
        key.key_hint,
        key.name,
        key.limits.per_second ?? null,
        key.limits.per_day ?? null,
        key.location_hint,
        key.created_at,
      );
      this.audit(actor, "api_key.created", "api_key", key.id, { name: key.name, limits: key.limits, location_hint: key.location_hint });
    });
    const pending = await this.propagate();
    return ok({ record: this.keyRecord(this.keyRow(key.id) as KeyRow), pending });
  }

  listKeys(page: PageRequest): Result<Page<ApiKeyRecord>> {
    if (!this.exists()) return missing("Organization");
    return pageOfTable(this.sql, "api_keys", page, (row: KeyRow) => this.keyRecord(row));
  }

  getKey(keyId: string): Result<ApiKeyRecord> {
    const row = this.exists() ? this.keyRow(keyId) : undefined;
    return row ? ok(this.keyRecord(row)) : missing("API key");
  }

  /** A new name and/or limit overrides (`null` restores a default); limits apply from the key's next request. */
  async updateKey(
    keyId: string,
    change: { name?: string | null | undefined; limits?: LimitPatch | undefined },
    actor: Actor,
  ): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? this.keyRow(keyId) : undefined;
    if (row === undefined) return missing("API key");
    this.ctx.storage.transactionSync(() => {
      if (change.name !== undefined) this.sql.exec("UPDATE api_keys SET name = ? WHERE id = ?", change.name, keyId);
      if (change.limits !== undefined) {
        // Each field: a number sets it, null restores the default, absent keeps what is stored.
        const { per_second, per_day } = change.limits;
        this.sql.exec(
          `UPDATE api_keys SET per_second = CASE WHEN ?1 THEN ?2 ELSE per_second END,
             per_day = CASE WHEN ?3 THEN ?4 ELSE per_day END, version = version + 1 WHERE id = ?5`,
          per_second !== undefined ? 1 : 0,
          per_second ?? null,
          per_day !== undefined ? 1 : 0,
          per_day ?? null,
          keyId,
        );
      }
      this.audit(actor, "api_key.updated", "api_key", keyId, {
        ...(change.name !== undefined ? { name: change.name } : {}),
        ...(change.limits !== undefined ? { limits: change.limits } : {}),
      });
    });
    const pending = await this.propagate();
    return ok({ record: this.keyRecord(this.keyRow(keyId) as KeyRow), pending });
  }

  /** Idempotent. Answered once the key's object refuses the key (or with it still to learn). */
  async revokeKey(keyId: string, actor: Actor, now: number): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? this.keyRow(keyId) : undefined;
    if (row === undefined) return missing("API key");
    if (row.revoked_at === null) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("UPDATE api_keys SET revoked_at = ?, version = version + 1 WHERE id = ?", isoTime(now), keyId);
        this.audit(actor, "api_key.revoked", "api_key", keyId, null);
      });
    }
    const pending = await this.propagate();
    return ok({ record: this.keyRecord(this.keyRow(keyId) as KeyRow), pending });
  }

  /** Uses noted by a key's object: only ever moves "last used" forward, never touches a status. */
  recordUses(keyId: string, uses: { subject: string; at: number }[]): void {
    if (!this.exists()) return;
    for (const use of uses) {
      if (use.subject === "key") {
        this.sql.exec(
          "UPDATE api_keys SET last_used_at = ?1 WHERE id = ?2 AND (last_used_at IS NULL OR last_used_at < ?1)",
          isoTime(use.at),
          keyId,
        );
      } else {
        this.noteCredentialUse(use.subject, use.at);
      }
    }
  }

  /**
   * A key object whose copy has outlived its lease asks for what it lacks (objects/key.ts): the
   * key's current state and the revocations after `revision`. Null for a key this organization
   * never had.
   */
  confirmKey(keyId: string, revision: number): KeySnapshot | null {
    const row = this.exists() ? this.keyRow(keyId) : undefined;
    return row === undefined ? null : this.snapshotOf(row, revision);
  }

  // -------------------------------------------------------------------------------------------
  // Administrator tokens and manager sessions

  mintAdminToken(
    token: Omit<OrgAdminTokenRecord, "organization_id" | "last_used_at" | "revoked_at">,
    actor: Actor,
  ): Result<OrgAdminTokenRecord> {
    if (!this.exists()) return missing("Organization");
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO admin_tokens (id, token_hash, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        token.id,
        token.token_hash,
        token.name,
        token.created_at,
        token.expires_at,
      );
      this.audit(actor, "admin_token.minted", "admin_token", token.id, { name: token.name, expires_at: token.expires_at });
    });
    return ok(this.adminTokenRecord(this.adminTokenRow(token.id) as AdminTokenRow));
  }

  listAdminTokens(page: PageRequest): Result<Page<OrgAdminTokenRecord>> {
    if (!this.exists()) return missing("Organization");
    return pageOfTable(this.sql, "admin_tokens", page, (row: AdminTokenRow) => this.adminTokenRecord(row));
  }

  getAdminToken(tokenId: string): Result<OrgAdminTokenRecord> {
    const row = this.exists() ? this.adminTokenRow(tokenId) : undefined;
    return row ? ok(this.adminTokenRecord(row)) : missing("Administrator token");
  }

  /** Idempotent; ends every manager session opened with the token, in the same transaction. */
  revokeAdminToken(tokenId: string, actor: Actor, now: number): Result<OrgAdminTokenRecord> {
    const row = this.exists() ? this.adminTokenRow(tokenId) : undefined;
    if (row === undefined) return missing("Administrator token");
    if (row.revoked_at === null) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("UPDATE admin_tokens SET revoked_at = ? WHERE id = ?", isoTime(now), tokenId);
        const ended = this.sql.exec("DELETE FROM sessions WHERE admin_token_id = ?", tokenId).rowsWritten;
        this.audit(actor, "admin_token.revoked", "admin_token", tokenId, { sessions_ended: ended });
      });
    }
    return ok(this.adminTokenRecord(this.adminTokenRow(tokenId) as AdminTokenRow));
  }

  /** Opens a manager session for an active, unexpired administrator token of this organization. */
  signIn(
    tokenHash: string,
    session: { id_hash: string; csrf: string; created_at: string; expires_at: string },
  ): Result<{ admin_token_id: string }> {
    const token = this.exists()
      ? this.sql.exec<AdminTokenRow>("SELECT rowid, * FROM admin_tokens WHERE token_hash = ?", tokenHash).toArray()[0]
      : undefined;
    if (token === undefined || token.revoked_at !== null || token.expires_at <= session.created_at) {
      return fail("invalid_token", "The administrator token is unknown, revoked or expired.");
    }
    const expires = token.expires_at < session.expires_at ? token.expires_at : session.expires_at;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO sessions (id_hash, admin_token_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        session.id_hash,
        token.id,
        session.csrf,
        session.created_at,
        expires,
      );
      this.sql.exec("UPDATE admin_tokens SET last_used_at = ? WHERE id = ?", session.created_at, token.id);
      this.audit({ type: "admin_token", id: token.id }, "session.started", "admin_token", token.id, null);
    });
    return ok({ admin_token_id: token.id });
  }

  /** The live session with this id hash: not signed out, not expired, its token neither revoked nor expired. */
  session(idHash: string, now: number): SessionInfo | null {
    if (!this.exists()) return null;
    const at = isoTime(now);
    const row = this.sql
      .exec<{ csrf: string; admin_token_id: string; expires_at: string }>(
        `SELECT s.csrf, s.admin_token_id, s.expires_at FROM sessions s JOIN admin_tokens t ON t.id = s.admin_token_id
         WHERE s.id_hash = ? AND s.expires_at > ? AND t.expires_at > ? AND t.revoked_at IS NULL`,
        idHash,
        at,
        at,
      )
      .toArray()[0];
    return row ?? null;
  }

  signOut(idHash: string): void {
    if (!this.exists()) return;
    const row = this.sql.exec<{ admin_token_id: string }>("SELECT admin_token_id FROM sessions WHERE id_hash = ?", idHash).toArray()[0];
    if (row === undefined) return;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM sessions WHERE id_hash = ?", idHash);
      this.audit({ type: "admin_token", id: row.admin_token_id }, "session.ended", "admin_token", row.admin_token_id, null);
    });
  }

  // -------------------------------------------------------------------------------------------
  // Audit log

  /**
   * Entries for changes committed in another object (the webhook objects), each with a unique
   * key: a push repeated after a failure adds nothing twice. A `replace` entry (an hour's publish
   * summary) updates the detail of the entry with its key, which keeps its place in the log.
   */
  appendAudit(entries: KeyedAuditEntry[]): void {
    if (!this.exists()) return;
    this.ctx.storage.transactionSync(() => {
      for (const e of entries) {
        this.sql.exec(
          `INSERT INTO audit_log (at, actor, action, resource_type, resource_id, detail, source_key)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (source_key) DO ${e.replace === true ? "UPDATE SET detail = excluded.detail" : "NOTHING"}`,
          e.at,
          JSON.stringify(e.actor),
          e.action,
          e.resource_type,
          e.resource_id,
          e.detail === null ? null : JSON.stringify(e.detail),
          e.key,
        );
      }
    });
  }

  auditLog(page: PageRequest): Result<Page<AuditEntryView>> {
    if (!this.exists()) return missing("Organization");
    return pageOf(
      (before, limit) =>
        // seq is the table's INTEGER PRIMARY KEY: SQLite names the rowid column after it.
        this.sql.exec<AuditRow>("SELECT seq AS rowid, * FROM audit_log WHERE seq < ? ORDER BY seq DESC LIMIT ?", before, limit).toArray(),
      page,
      (row) => ({
        id: String(row.rowid),
        at: row.at,
        actor: JSON.parse(row.actor) as Actor,
        action: row.action,
        resource: { type: row.resource_type, id: row.resource_id },
        detail: row.detail === null ? null : (JSON.parse(row.detail) as Record<string, unknown>),
      }),
      true,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Propagation

  /** Retries whatever has not been propagated yet, and keeps the daily housekeeping going. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const pending = await this.propagate();
    if (pending === 0) this.retries = 0;
    if (Date.now() >= this.housekeptAt + HOUSEKEEPING_INTERVAL_MS) this.housekeep();
    this.schedule(this.housekeptAt + HOUSEKEEPING_INTERVAL_MS);
  }

  /**
   * Pushes what changed to the key objects, KV and the directory; returns how many key objects
   * still lack a change, and schedules a retry for whatever did not land.
   */
  private async propagate(): Promise<number> {
    if (!this.exists()) return 0;
    const [pendingKeys, pendingOther] = await Promise.all([this.syncKeys(), this.writeDerived()]);
    if (pendingKeys + pendingOther > 0) {
      // 0.5 s, 1 s, 2 s ... at most 60 s, for as long as it takes.
      this.schedule(Date.now() + Math.min(60_000, 500 * 2 ** Math.min(this.retries, 7)));
      this.retries++;
    }
    return pendingKeys;
  }

  /** Brings every key object up to date with its key's version and the organization's revision. */
  private async syncKeys(): Promise<number> {
    const org = this.org();
    const stale = this.sql
      .exec<KeyRow>(
        "SELECT rowid, * FROM api_keys WHERE synced_version < version OR (revoked_at IS NULL AND synced_revision < ?)",
        org.revision,
      )
      .toArray();
    let pending = 0;
    for (let i = 0; i < stale.length; i += SYNC_CONCURRENCY) {
      await Promise.all(
        stale.slice(i, i + SYNC_CONCURRENCY).map(async (key) => {
          const snapshot = this.snapshotOf(key, key.synced_revision);
          try {
            // The first call creates the key's object: near the hinted region, else near this one.
            const hint = key.location_hint === null ? undefined : { locationHint: key.location_hint as DurableObjectLocationHint };
            const ack = await this.env.KEYS.get(this.env.KEYS.idFromName(key.key_hash), hint).sync(snapshot);
            this.sql.exec(
              "UPDATE api_keys SET synced_version = max(synced_version, ?), synced_revision = max(synced_revision, ?) WHERE id = ?",
              ack.version,
              ack.revision,
              key.id,
            );
          } catch (err) {
            pending++;
            log.warn("key object sync failed; will retry", { key: key.id, detail: describeError(err) });
          }
        }),
      );
    }
    return pending;
  }

  /** What a key's object needs: the key's state, and the organization's revocations after `revision`. */
  private snapshotOf(key: KeyRow, revision: number): KeySnapshot {
    const org = this.org();
    return {
      id: key.id,
      organization_id: org.id,
      status: key.revoked_at === null ? "active" : "revoked",
      limits: {
        ...(key.per_second !== null ? { per_second: key.per_second } : {}),
        ...(key.per_day !== null ? { per_day: key.per_day } : {}),
      },
      version: key.version,
      revision: org.revision,
      revocations: this.sql
        .exec<{
          client_id: string;
          revision: number;
          kind: "client" | "changed" | "token";
          version: number | null;
          token_id: string | null;
          expires_ms: number | null;
        }>(
          "SELECT client_id, revision, kind, version, token_id, expires_ms FROM revocations WHERE revision > ? ORDER BY revision",
          revision,
        )
        .toArray()
        .map((r) =>
          r.kind === "changed"
            ? { client_id: r.client_id, revision: r.revision, kind: r.kind, version: r.version ?? 0 }
            : r.kind === "token"
              ? { client_id: r.client_id, revision: r.revision, kind: r.kind, token_id: r.token_id ?? "", expires_ms: r.expires_ms ?? 0 }
              : { client_id: r.client_id, revision: r.revision },
        ),
    };
  }

  /** KV lookup entries and the directory entry; their absence only costs a slower path. */
  private async writeDerived(): Promise<number> {
    let pending = 0;
    const org = this.org();
    const lookups = this.sql.exec<{ client_id: string }>("SELECT client_id FROM pending_lookups").toArray();
    await Promise.all(
      lookups
        .filter(({ client_id }) => !this.lookupsInFlight.has(client_id))
        .map(async ({ client_id }) => {
          // One write at a time per entry: a delete queued while a put is in flight runs after
          // it, never before (a put landing last would leave a revoked credential's entry).
          this.lookupsInFlight.add(client_id);
          try {
            for (;;) {
              const next = this.sql.exec<{ op: string }>("SELECT op FROM pending_lookups WHERE client_id = ?", client_id).toArray()[0];
              if (next === undefined) break;
              const row = this.credentialRow(client_id);
              if (next.op === "put" && row && row.revoked_at === null) {
                await writeCredentialLookup(this.env.KV, client_id, {
                  organization_id: org.id,
                  user_id: row.user_id,
                  secret_hash: row.secret_hash,
                  auth_method: row.auth_method,
                  scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
                  dpop_bound: row.dpop_bound === 1,
                  version: row.version,
                });
              } else {
                await deleteCredentialLookup(this.env.KV, client_id);
              }
              this.sql.exec("DELETE FROM pending_lookups WHERE client_id = ? AND op = ?", client_id, next.op);
            }
          } catch (err) {
            pending++;
            log.warn("KV lookup write failed; will retry", { client: client_id, detail: describeError(err) });
          } finally {
            this.lookupsInFlight.delete(client_id);
          }
        }),
    );
    if (org.in_directory === 0) {
      try {
        await this.env.DIRECTORY.get(this.env.DIRECTORY.idFromName("directory")).register({
          id: org.id,
          name: org.name,
          created_at: org.created_at,
        });
        this.sql.exec("UPDATE organization SET in_directory = 1");
      } catch (err) {
        pending++;
        log.warn("directory registration failed; will retry", { organization: org.id, detail: describeError(err) });
      }
    }
    return pending;
  }

  /** Sets the alarm for `at` unless it is already set to go off sooner. */
  private schedule(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  // -------------------------------------------------------------------------------------------
  // Rows and records

  private revokeCredentialRow(clientId: string, now: number, actor: Actor): void {
    const at = isoTime(now);
    this.sql.exec("UPDATE client_credentials SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL", at, clientId);
    this.sql.exec("UPDATE organization SET revision = revision + 1");
    this.sql.exec("INSERT INTO revocations (revision, client_id, revoked_at) SELECT revision, ?, ? FROM organization", clientId, at);
    this.sql.exec("INSERT OR REPLACE INTO pending_lookups (client_id, op) VALUES (?, 'delete')", clientId);
    this.audit(actor, "client_credential.revoked", "client_credential", clientId, null);
  }

  /** Moves "last used" forward, at most once a minute (a write only when it is a minute older). */
  private noteCredentialUse(clientId: string, at: number): void {
    this.sql.exec(
      "UPDATE client_credentials SET last_used_at = ?1 WHERE client_id = ?2 AND (last_used_at IS NULL OR last_used_at < ?3)",
      isoTime(at),
      clientId,
      isoTime(at - USE_RESOLUTION_MS),
    );
  }

  private audit(actor: Actor, action: string, resourceType: string, resourceId: string, detail: Record<string, unknown> | null): void {
    this.sql.exec(
      "INSERT INTO audit_log (at, actor, action, resource_type, resource_id, detail) VALUES (?, ?, ?, ?, ?, ?)",
      isoTime(Date.now()),
      JSON.stringify(actor),
      action,
      resourceType,
      resourceId,
      detail === null ? null : JSON.stringify(detail),
    );
  }

  private housekeep(): void {
    const now = Date.now();
    this.sql.exec("DELETE FROM audit_log WHERE at < ?", isoTime(now - AUDIT_RETENTION_DAYS * 86_400_000));
    this.sql.exec("DELETE FROM sessions WHERE expires_at < ?", isoTime(now));
    // Used assertion ids and revoked tokens matter only until they expire.
    this.sql.exec("DELETE FROM assertion_jtis WHERE expires_ms < ?", now);
    this.sql.exec("DELETE FROM revocations WHERE kind = 'token' AND expires_ms < ?", now);
    this.housekeptAt = now;
  }

  private userRow(id: string): UserRow | undefined {
    return this.sql.exec<UserRow>("SELECT rowid, * FROM users WHERE id = ?", id).toArray()[0];
  }
  private credentialRow(clientId: string): CredentialRow | undefined {
    return this.sql.exec<CredentialRow>("SELECT rowid, * FROM client_credentials WHERE client_id = ?", clientId).toArray()[0];
  }
  private keyRow(id: string): KeyRow | undefined {
    return this.sql.exec<KeyRow>("SELECT rowid, * FROM api_keys WHERE id = ?", id).toArray()[0];
  }
  private adminTokenRow(id: string): AdminTokenRow | undefined {
    return this.sql.exec<AdminTokenRow>("SELECT rowid, * FROM admin_tokens WHERE id = ?", id).toArray()[0];
  }

  private userRecord(row: UserRow): UserRecord {
    return { id: row.id, organization_id: this.org().id, name: row.name, email: row.email, created_at: row.created_at };
  }
  private credentialRecord(row: CredentialRow): ClientCredentialRecord {
    return {
      client_id: row.client_id,
      organization_id: this.org().id,
      user_id: row.user_id,
      name: row.name,
      auth_method: row.auth_method,
      secret_hash: row.secret_hash,
      jwks: row.jwks === null ? null : (JSON.parse(row.jwks) as Jwks),
      scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
      dpop_bound: row.dpop_bound === 1,
      version: row.version,
      created_at: row.created_at,
      last_used_at: row.last_used_at,
      revoked_at: row.revoked_at,
    };
  }
  private keyRecord(row: KeyRow): ApiKeyRecord {
    return {
      id: row.id,
      organization_id: this.org().id,
      name: row.name,
      key_hash: row.key_hash,
      key_hint: row.key_hint,
      limits: {
        ...(row.per_second !== null ? { per_second: row.per_second } : {}),
        ...(row.per_day !== null ? { per_day: row.per_day } : {}),
      },
      location_hint: (row.location_hint as ApiKeyRecord["location_hint"]) ?? null,
      created_at: row.created_at,
      last_used_at: row.last_used_at,
      revoked_at: row.revoked_at,
    };
  }
  private adminTokenRecord(row: AdminTokenRow): OrgAdminTokenRecord {
    return {
      id: row.id,
      organization_id: this.org().id,
      name: row.name,
      token_hash: row.token_hash,
      created_at: row.created_at,
      expires_at: row.expires_at,
      last_used_at: row.last_used_at,
      revoked_at: row.revoked_at,
    };
  }
}

/** Constant-time equality of two hex digests of equal length. */
function timingSafeEqualHex(a: string, b: string): boolean {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  return ea.byteLength === eb.byteLength && crypto.subtle.timingSafeEqual(ea, eb);
}
