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
import { digestsEqual, NO_SECRET_HASH, sha256Hex } from "../lib/crypto";
import { headerKid, refuseAsIfVerified, type Verified, verifyClientAssertion, verifyFederatedAssertion } from "../lib/jwt";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import type { Actor, AuditEntryView, AuditFilter } from "../schemas/audit";
import type { Jwks } from "../schemas/jose";
import type {
  ApiKeyRecord,
  ClientCredentialRecord,
  KeyCredits,
  OrgAdminTokenRecord,
  OrganizationRecord,
  OrgQuota,
  TrustedIssuerRecord,
  UserRecord,
} from "../schemas/records";
import { type KeySnapshot, USE_RESOLUTION_MS } from "./key";
import * as access from "./org/access";
import { appendAudit, audit, auditPage, housekeep, WRITE_PRUNE } from "./org/audit";
import { Propagation } from "./org/propagation";
import { RemoteKeySets } from "./org/remote-keys";
import {
  type ClientFacts,
  type CredentialRow,
  credentialRecord,
  credentialRow,
  ERASE_AFTER_DAYS,
  HOUSEKEEPING_INTERVAL_MS,
  type KeyRow,
  keyRecord,
  keyRow,
  keySetRow,
  type LimitPatch,
  MAX_ACTIVE_API_KEYS,
  MAX_TRUSTED_ISSUERS,
  MIGRATIONS,
  type OrgRow,
  objectHashOf,
  orgRow,
  type Propagated,
  quotaOf,
  type SessionInfo,
  type TrustedIssuerRow,
  trustedIssuerByIssuer,
  trustedIssuerRecord,
  trustedIssuerRow,
  type UserRow,
  userRecord,
  userRow,
} from "./org/schema";
import { federatedAssertionId } from "./proof-place";
import { recordProofAt } from "./proofs";
import { fail, migrate, missing, ok, type Page, type PageRequest, pageOf, pageOfTable, pruneExpired, type Result } from "./sql";
import { type KeyedAuditEntry, redactUrl } from "./webhooks/audit";

export {
  AUDIT_RETENTION_DAYS,
  type ClientFacts,
  type LimitPatch,
  MAX_ACTIVE_API_KEYS,
  type Propagated,
  type SessionInfo,
} from "./org/schema";

/** A DPoP proof's id as the release before issue 41 sends it (auth/dpop.ts `replay`). */
interface LegacyProof {
  jti: string;
  expiresMs: number;
}

export class OrganizationObject extends DurableObject<Env> {
  /** When expired rows were last pruned (memory: a restarted object prunes at its first alarm). */
  private housekeptAt = 0;
  private readonly propagation: Propagation;
  /** Key sets fetched from URLs: trusted issuers' and private_key_jwt clients' `jwks_uri` (issue 44). */
  private readonly remoteKeys: RemoteKeySets;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
    this.propagation = new Propagation(ctx.storage, () => this.env);
    // Loopback and http key set URLs only where webhooks may use them (local development).
    this.remoteKeys = new RemoteKeySets(ctx.storage.sql, () => this.env.WEBHOOK_ALLOW_INSECURE_TARGETS === "true");
    void ctx.blockConcurrencyWhile(async () => {
      this.propagation.alarmAt = await ctx.storage.getAlarm();
      // Every organization keeps an alarm: housekeeping runs even when nothing ever fails.
      if (this.exists()) this.propagation.schedule(Date.now() + HOUSEKEEPING_INTERVAL_MS);
    });
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private org(): OrgRow {
    const row = orgRow(this.sql);
    if (row === null) throw new Error("organization object used before it was created");
    return row;
  }

  /** The organization exists and has not been deleted: every operation but propagation needs this. */
  private exists(): boolean {
    const row = orgRow(this.sql);
    return row !== null && row.deleted_at === null;
  }

  /** Its row is here, deleted or not: a deleted organization still propagates its revocations and keeps its audit log. */
  private hasRow(): boolean {
    return orgRow(this.sql) !== null;
  }

  // -------------------------------------------------------------------------------------------
  // Organization

  /** Creates the organization (idempotent for the same id), then registers it in the directory. */
  async create(org: OrganizationRecord, actor: Actor): Promise<Result<OrganizationRecord>> {
    if (!this.exists()) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("INSERT INTO organization (one, id, name, created_at) VALUES (1, ?, ?, ?)", org.id, org.name, org.created_at);
        audit(this.sql, actor, "organization.created", "organization", org.id, { name: org.name });
      });
      this.propagation.schedule(Date.now() + HOUSEKEEPING_INTERVAL_MS);
    }
    await this.propagation.run();
    const { id, name, created_at } = this.org();
    return ok({ id, name, created_at });
  }

  organization(): Result<OrganizationRecord & { limits: OrgQuota | null }> {
    if (!this.exists()) return missing("Organization");
    const org = this.org();
    return ok({ id: org.id, name: org.name, created_at: org.created_at, limits: quotaOf(org) });
  }

  /**
   * Sets, changes or removes the organization's shared quota (issue 24): a field `null` removes
   * that limit, `limits: null` all of them. Every key object gets it with the next revision, as a
   * revocation would, and the answer comes once they all have it.
   */
  async updateQuota(
    change: { per_second?: number | null | undefined; per_day?: number | null | undefined; per_month?: number | null | undefined } | null,
    actor: Actor,
  ): Promise<Result<Propagated<OrganizationRecord & { limits: OrgQuota | null }>>> {
    if (!this.exists()) return missing("Organization");
    const current = quotaOf(this.org()) ?? {};
    const next: OrgQuota = {};
    if (change !== null) {
      for (const field of ["per_second", "per_day", "per_month"] as const) {
        const value = change[field] === undefined ? current[field] : change[field];
        if (value !== null && value !== undefined) next[field] = value;
      }
    }
    const limits = Object.keys(next).length === 0 ? null : next;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE organization SET quota = ?, revision = revision + 1", limits === null ? null : JSON.stringify(limits));
      audit(this.sql, actor, "organization.quota_changed", "organization", this.org().id, { limits });
    });
    const pending = await this.propagation.run();
    const org = this.org();
    return ok({ record: { id: org.id, name: org.name, created_at: org.created_at, limits }, pending });
  }

  /**
   * Deletes the organization (issue 29: recorded first, then driven to its end). One transaction
   * revokes every client credential, API key and administrator token, ends every manager session,
   * marks the organization deleted (every call but propagation then finds no organization) and sets
   * its erasure for ERASE_AFTER_DAYS later. Then propagation, retried by the alarm until each part
   * has landed, pushes the revocations to every key object, has the WebhookObject delete every
   * webhook configuration and each endpoint's object learn it, removes the KV lookups and drops
   * the directory entry. Answered with what is still pending (the route's 503 "recorded, still
   * being applied"); repeated while anything is pending it pushes again and answers the same;
   * once everything has landed the organization is gone and a repeat finds nothing (404).
   */
  async deleteOrganization(
    actor: Actor,
    now: number,
  ): Promise<
    Result<Propagated<OrganizationRecord & { deleted_at: string; erase_after: string | null; webhook_configurations_deleted: number }>>
  > {
    const row = orgRow(this.sql);
    if (row === null) return missing("Organization");
    const first = row.deleted_at === null;
    if (first) {
      const at = isoTime(now);
      this.ctx.storage.transactionSync(() => {
        const credentials = this.sql
          .exec<{ client_id: string }>("SELECT client_id FROM client_credentials WHERE revoked_at IS NULL")
          .toArray();
        for (const { client_id } of credentials) this.revokeCredentialRow(client_id, now, actor);
        const keys = this.sql.exec("UPDATE api_keys SET revoked_at = ?, version = version + 1 WHERE revoked_at IS NULL", at).rowsWritten;
        const tokens = this.sql.exec("UPDATE admin_tokens SET revoked_at = ? WHERE revoked_at IS NULL", at).rowsWritten;
        const sessions = this.sql.exec("DELETE FROM sessions").rowsWritten;
        this.sql.exec("UPDATE organization SET deleted_at = ?, erase_after = ?", at, isoTime(now + ERASE_AFTER_DAYS * 86_400_000));
        audit(this.sql, actor, "organization.deleted", "organization", row.id, {
          revoked_credentials: credentials.length,
          revoked_api_keys: keys,
          revoked_admin_tokens: tokens,
          sessions_ended: sessions,
          erase_after_days: ERASE_AFTER_DAYS,
        });
      });
    }
    const pending = await this.propagation.run();
    const webhooksPending = this.propagation.webhooksPending();
    const after = this.org();
    if (after.erase_after !== null) this.propagation.schedule(Date.parse(after.erase_after));
    if (!first && pending === 0 && !webhooksPending) return missing("Organization");
    return ok({
      record: {
        id: after.id,
        name: after.name,
        created_at: after.created_at,
        deleted_at: after.deleted_at ?? isoTime(now),
        erase_after: after.erase_after,
        webhook_configurations_deleted: after.webhooks_deleted ?? 0,
      },
      pending,
      webhooksPending,
    });
  }

  /**
   * A deleted organization past its retention: every key object and the webhook objects forget
   * everything, then every row here but the audit log (kept for AUDIT_RETENTION_DAYS) and a
   * tombstone of the organization's id. Retried by the alarm until every step has landed.
   */
  private async erase(row: OrgRow): Promise<void> {
    const keys = this.sql.exec<{ key_hash: string; object_hash: string | null }>("SELECT key_hash, object_hash FROM api_keys").toArray();
    for (const key of keys) await this.env.KEYS.get(this.env.KEYS.idFromName(objectHashOf(key))).erase();
    await this.env.WEBHOOKS.get(this.env.WEBHOOKS.idFromName(row.id)).erase();
    await this.env.QUOTAS.get(this.env.QUOTAS.idFromName(row.id)).erase();
    this.ctx.storage.transactionSync(() => {
      for (const table of [
        "users",
        "client_credentials",
        "api_keys",
        "admin_tokens",
        "sessions",
        "revocations",
        "pending_lookups",
        "assertion_jtis",
      ]) {
        this.sql.exec(`DELETE FROM ${table}`);
      }
      this.sql.exec("UPDATE organization SET name = '', erase_after = NULL");
      audit(this.sql, { type: "system" }, "organization.erased", "organization", row.id, null);
    });
    await this.env.DIRECTORY.get(this.env.DIRECTORY.idFromName("directory")).unregister(row.id);
  }

  // -------------------------------------------------------------------------------------------
  // Users

  createUser(user: Omit<UserRecord, "organization_id">, actor: Actor): Result<UserRecord> {
    if (!this.exists()) return missing("Organization");
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT INTO users (id, name, email, created_at) VALUES (?, ?, ?, ?)", user.id, user.name, user.email, user.created_at);
      audit(this.sql, actor, "user.created", "user", user.id, { name: user.name });
    });
    return ok(userRecord(this.org().id, userRow(this.sql, user.id) as UserRow));
  }

  getUser(userId: string): Result<UserRecord> {
    const row = this.exists() ? userRow(this.sql, userId) : undefined;
    return row ? ok(userRecord(this.org().id, row)) : missing("User");
  }

  listUsers(page: PageRequest): Result<Page<UserRecord>> {
    if (!this.exists()) return missing("Organization");
    return pageOfTable(this.sql, "users", page, (row: UserRow) => userRecord(this.org().id, row));
  }

  /** Revokes every credential of the user, then removes the user: one transaction, then the pushes. */
  async removeUser(userId: string, actor: Actor, now: number): Promise<Result<Propagated<UserRecord>>> {
    const row = this.exists() ? userRow(this.sql, userId) : undefined;
    if (row === undefined) return missing("User");
    this.ctx.storage.transactionSync(() => {
      const active = this.sql
        .exec<{ client_id: string }>("SELECT client_id FROM client_credentials WHERE user_id = ? AND revoked_at IS NULL", userId)
        .toArray();
      for (const { client_id } of active) this.revokeCredentialRow(client_id, now, actor);
      this.sql.exec("DELETE FROM users WHERE id = ?", userId);
      audit(this.sql, actor, "user.removed", "user", userId, { revoked_credentials: active.length });
    });
    return ok({ record: userRecord(this.org().id, row), pending: await this.propagation.run() });
  }

  // -------------------------------------------------------------------------------------------
  // Client credentials

  /**
   * A new credential. A federated one must name one of the organization's trusted issuers; a
   * `jwks_uri` one comes with the set the Worker fetched to check it (`fetched`), kept here as
   * the URL's first copy.
   */
  async createCredential(
    credential: Omit<ClientCredentialRecord, "organization_id" | "last_used_at" | "revoked_at" | "version">,
    actor: Actor,
    fetched?: { keys: JWK[]; maxAgeSeconds: number | null; now: number },
  ): Promise<Result<ClientCredentialRecord>> {
    if (!this.exists() || userRow(this.sql, credential.user_id) === undefined) return missing("User");
    if (credential.federated !== null && trustedIssuerByIssuer(this.sql, credential.federated.issuer) === undefined) {
      return fail("invalid_request", "federated.issuer is not one of this organization's trusted issuers: register it first.");
    }
    // One active credential per workload: two would let one JWT pick either (their users and scopes).
    if (
      credential.federated !== null &&
      this.sql
        .exec(
          "SELECT 1 FROM client_credentials WHERE federated_issuer = ? AND federated_subject = ? AND revoked_at IS NULL",
          credential.federated.issuer,
          credential.federated.subject,
        )
        .toArray().length > 0
    ) {
      return fail("conflict", "An active credential already names this issuer and subject: revoke it first, or use it.");
    }
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO client_credentials (client_id, user_id, name, secret_hash, auth_method, jwks, scopes, dpop_bound, created_at,
            jwks_uri, federated_issuer, federated_subject, token_strategy)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        credential.client_id,
        credential.user_id,
        credential.name,
        credential.secret_hash,
        credential.auth_method,
        credential.jwks === null ? null : JSON.stringify(credential.jwks),
        credential.scopes === null ? null : JSON.stringify(credential.scopes),
        credential.dpop_bound ? 1 : 0,
        credential.created_at,
        credential.jwks_uri,
        credential.federated?.issuer ?? null,
        credential.federated?.subject ?? null,
        credential.access_token_strategy,
      );
      if (credential.jwks_uri !== null && fetched !== undefined) {
        this.remoteKeys.store(credential.jwks_uri, fetched.keys, fetched.maxAgeSeconds, fetched.now);
      }
      this.sql.exec("INSERT OR REPLACE INTO pending_lookups (client_id, op) VALUES (?, 'put')", credential.client_id);
      audit(this.sql, actor, "client_credential.created", "client_credential", credential.client_id, {
        user_id: credential.user_id,
        name: credential.name,
        token_endpoint_auth_method: credential.auth_method === "client_secret" ? "client_secret_basic" : credential.auth_method,
        ...(credential.jwks ? { key_ids: credential.jwks.keys.map((k) => k.kid ?? null) } : {}),
        ...(credential.jwks_uri ? { jwks_uri: redactUrl(credential.jwks_uri) } : {}),
        ...(credential.federated ? { federated: credential.federated } : {}),
        ...(credential.scopes ? { scopes: credential.scopes } : {}),
        ...(credential.dpop_bound ? { dpop_bound_access_tokens: true } : {}),
        ...(credential.access_token_strategy === "jwt" ? { access_token_strategy: "jwt" } : {}),
      });
    });
    await this.propagation.run();
    return ok(credentialRecord(this.org().id, credentialRow(this.sql, credential.client_id) as CredentialRow));
  }

  listCredentials(userId: string, page: PageRequest): Result<Page<ClientCredentialRecord>> {
    if (!this.exists() || userRow(this.sql, userId) === undefined) return missing("User");
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
      (row) => credentialRecord(this.org().id, row),
    );
  }

  getCredential(userId: string, clientId: string): Result<ClientCredentialRecord> {
    const row = this.exists() ? credentialRow(this.sql, clientId) : undefined;
    // A removed user's credentials stay readable (revoked) under the user's id.
    return row && row.user_id === userId ? ok(credentialRecord(this.org().id, row)) : missing("Client credential");
  }

  /** Idempotent. Answered once every key object knows (or with the number still to learn it). */
  async revokeCredential(userId: string, clientId: string, actor: Actor, now: number): Promise<Result<Propagated<ClientCredentialRecord>>> {
    const found = this.getCredential(userId, clientId);
    if (!found.ok) return found;
    if (found.value.revoked_at === null) this.ctx.storage.transactionSync(() => this.revokeCredentialRow(clientId, now, actor));
    const pending = await this.propagation.run();
    return ok({ record: credentialRecord(this.org().id, credentialRow(this.sql, clientId) as CredentialRow), pending });
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
    patch: {
      name?: string | null;
      jwks?: Jwks;
      jwks_uri?: string;
      scopes?: string[] | null;
      dpop_bound?: boolean;
      access_token_strategy?: "opaque" | "jwt";
    },
    actor: Actor,
    now: number,
    fetched?: { keys: JWK[]; maxAgeSeconds: number | null },
  ): Promise<Result<Propagated<ClientCredentialRecord>>> {
    const found = this.getCredential(userId, clientId);
    if (!found.ok) return found;
    const current = found.value;
    if (current.revoked_at !== null) return fail("conflict", "The client credential is revoked; create a new one.");
    if ((patch.jwks !== undefined || patch.jwks_uri !== undefined) && current.auth_method !== "private_key_jwt") {
      return fail("invalid_request", `${patch.jwks !== undefined ? "jwks" : "jwks_uri"} is only for a private_key_jwt credential.`);
    }
    const facts =
      patch.jwks !== undefined ||
      patch.jwks_uri !== undefined ||
      patch.scopes !== undefined ||
      patch.dpop_bound !== undefined ||
      patch.access_token_strategy !== undefined;
    // A key set replaces a URL and a URL replaces a key set: a credential has one source of keys.
    const jwks = patch.jwks ?? (patch.jwks_uri !== undefined ? null : current.jwks);
    const jwksUri = patch.jwks_uri ?? (patch.jwks !== undefined ? null : current.jwks_uri);
    this.ctx.storage.transactionSync(() => {
      if (patch.jwks_uri !== undefined && fetched !== undefined)
        this.remoteKeys.store(patch.jwks_uri, fetched.keys, fetched.maxAgeSeconds, now);
      this.sql.exec(
        `UPDATE client_credentials SET name = ?, jwks = ?, jwks_uri = ?, token_strategy = ?, scopes = ?, dpop_bound = ?,
          version = version + ? WHERE client_id = ?`,
        patch.name === undefined ? current.name : patch.name,
        jwks === null ? null : JSON.stringify(jwks),
        jwksUri,
        patch.access_token_strategy ?? current.access_token_strategy,
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
        const version = (credentialRow(this.sql, clientId) as CredentialRow).version;
        this.sql.exec("UPDATE organization SET revision = revision + 1");
        this.sql.exec(
          "INSERT INTO revocations (revision, client_id, revoked_at, kind, version) SELECT revision, ?, ?, 'changed', ? FROM organization",
          clientId,
          isoTime(now),
          version,
        );
        this.sql.exec("INSERT OR REPLACE INTO pending_lookups (client_id, op) VALUES (?, 'put')", clientId);
      }
      if (patch.jwks !== undefined || patch.jwks_uri !== undefined) this.remoteKeys.prune();
      audit(this.sql, actor, "client_credential.updated", "client_credential", clientId, {
        fields: Object.keys(patch).filter((k) => patch[k as keyof typeof patch] !== undefined),
        ...(patch.jwks ? { key_ids: patch.jwks.keys.map((k) => k.kid ?? null) } : {}),
        ...(patch.jwks_uri ? { jwks_uri: redactUrl(patch.jwks_uri) } : {}),
      });
    });
    const pending = await this.propagation.run();
    return ok({ record: credentialRecord(this.org().id, credentialRow(this.sql, clientId) as CredentialRow), pending });
  }

  /**
   * The token endpoint's slow path, when KV has no entry for the client_id yet or one older than
   * the key objects know: whether the secret matches an active credential of this organization,
   * and what its tokens may be. A match is a use of the credential.
   */
  async authenticateClient(clientId: string, secretHash: string, now: number, proof?: LegacyProof): Promise<Result<ClientFacts | null>> {
    const row = this.exists() ? credentialRow(this.sql, clientId) : undefined;
    const secret = row?.auth_method === "client_secret" ? row : undefined;
    // Compared even without a row (against a hash no secret has): an unknown client_id does the
    // same work as a known one with a wrong secret, so timing does not tell them apart.
    const matches = digestsEqual(secret?.secret_hash ?? NO_SECRET_HASH, secretHash);
    if (secret === undefined || !matches) return ok(null);
    if (secret.revoked_at === null) this.noteCredentialUse(clientId, now);
    return ok(await this.withLegacyProof(this.factsOf(secret), proof));
  }

  /**
   * The token endpoint of the release before issue 41 asks this object to record a DPoP proof (here,
   * or with a client's authentication): recorded where this release records proofs, the ProofObject
   * its id names (objects/proofs.ts), so a rollout opens no gap. Removable once no Worker of that
   * release runs.
   */
  async recordTokenProof(proof: LegacyProof): Promise<boolean> {
    return recordProofAt(this.env.PROOFS, proof);
  }

  private async withLegacyProof(facts: ClientFacts, proof: LegacyProof | undefined): Promise<ClientFacts> {
    return proof === undefined ? facts : { ...facts, proof_replayed: !(await this.recordTokenProof(proof)) };
  }

  /**
   * A client assertion (RFC 7523 3), verified against the credential's keys, then its jti
   * recorded until the assertion expires, so that it is used once whatever API key or location it
   * comes through:
   * - private_key_jwt: signed by one of the client's keys (`jwks`, or the set at its `jwks_uri`),
   *   `iss` = `sub` = client_id, at most 300 s of life;
   * - federated_jwt (issue 44): signed by its trusted issuer's key set, `iss` the issuer, `sub`
   *   the credential's subject, within the issuer's maximum lifetime; its jti recorded once unless
   *   the issuer's JWTs may be reused until they expire (`assertion_reuse`).
   * A key set fetched from a URL is fetched again when no key of it verifies the JWT
   * (objects/org/remote-keys.ts). Every failure answers null with a reason for the logs; the
   * client learns only invalid_client.
   */
  async authenticateAssertion(
    clientId: string,
    assertion: string,
    audiences: string[],
    now: number,
    proof?: LegacyProof,
  ): Promise<Result<{ facts: ClientFacts | null; reason?: string }>> {
    const row = this.exists() ? credentialRow(this.sql, clientId) : undefined;
    const issuer = row?.federated_issuer == null ? undefined : trustedIssuerByIssuer(this.sql, row.federated_issuer);
    // A revoked credential is refused as an unknown one is (the decoy check), without fetching its keys.
    const assertsWith =
      row === undefined || row.revoked_at !== null
        ? null
        : row.auth_method === "private_key_jwt" && (row.jwks !== null || row.jwks_uri !== null)
          ? row
          : row.auth_method === "federated_jwt" && issuer !== undefined
            ? row
            : null;
    if (assertsWith === null) {
      // The same signature check as for a known client, against a key nobody holds: timing does
      // not tell which client_ids exist.
      await refuseAsIfVerified(assertion, { clientId, audiences, nowMs: now });
      const reason =
        row?.auth_method === "federated_jwt" ? "its issuer is no longer trusted" : "no assertion-based credential with this client_id";
      return ok({ facts: null, reason });
    }
    const verify = (keys: JWK[]): Promise<Verified<{ jti: string | null; exp: number }>> =>
      issuer === undefined
        ? verifyClientAssertion(assertion, keys, { clientId, audiences, nowMs: now })
        : verifyFederatedAssertion(assertion, keys, {
            issuer: issuer.issuer,
            subject: assertsWith.federated_subject ?? "",
            audiences,
            nowMs: now,
            maxLifetimeS: issuer.max_lifetime_s,
            requireJti: issuer.assertion_reuse === "once",
          });
    const url = issuer?.jwks_uri ?? assertsWith.jwks_uri;
    let verified: Verified<{ jti: string | null; exp: number }>;
    if (url === null) {
      verified = await verify((JSON.parse(assertsWith.jwks ?? '{"keys":[]}') as Jwks).keys as JWK[]);
    } else {
      const kid = headerKid(assertion);
      const first = await this.remoteKeys.keys(url, { kid, miss: false }, now);
      verified = await verify(first.keys);
      // A signature none of the held keys made: the set may have rotated since (at most once a minute).
      if (!verified.ok && verified.keyMiss === true && !first.fetched) {
        const again = await this.remoteKeys.keys(url, { kid, miss: true }, now);
        if (again.fetched) verified = await verify(again.keys);
      }
    }
    if (!verified.ok) return ok({ facts: null, reason: verified.reason });
    // Single use. A private_key_jwt assertion's jti is its client's, recorded here with the
    // client. A federated JWT's is the issuer's (RFC 7519 4.1.7), and organizations trusting the
    // same issuer and subject would each accept it once if it were recorded here: it is recorded
    // instead at the ProofObject that hash(issuer, jti) names (objects/proof-place.ts), one of
    // PROOF_SHARDS, so no single object is on every token request. Only after the signature
    // verified, so a stranger's made-up JWT writes nothing to the shared store; before the checks
    // below, which decide again from the rows as they are once this await is over.
    const once = verified.jti !== null && (issuer === undefined || issuer.assertion_reuse === "once");
    const jtiHash = once
      ? await sha256Hex(issuer === undefined ? `${clientId} ${verified.jti}` : `iss ${issuer.issuer} ${verified.jti}`)
      : null;
    const expiresMs = verified.exp * 1000 + 60_000;
    if (issuer !== undefined && jtiHash !== null) {
      const first = await recordProofAt(this.env.PROOFS, { jti: federatedAssertionId(jtiHash), expiresMs });
      if (!first) return ok({ facts: null, reason: "jti already used, at this or another organization" });
    }
    // The checks above awaited (a signature, perhaps a fetch of seconds, a federated jti's record):
    // a revocation, a change of the credential or the issuer's removal may have committed since.
    // Decided again from the rows as they are now, in the same synchronous step as the answer (and
    // a private_key_jwt jti's record), so that nothing answered as done before this point lets a
    // token out after it.
    const current = credentialRow(this.sql, clientId);
    if (current === undefined || current.revoked_at !== null || current.version !== assertsWith.version) {
      return ok({ facts: null, reason: "the credential was revoked or changed meanwhile" });
    }
    if (issuer !== undefined && trustedIssuerByIssuer(this.sql, issuer.issuer)?.id !== issuer.id) {
      return ok({ facts: null, reason: "its issuer was removed meanwhile" });
    }
    if (jtiHash !== null && issuer !== undefined) {
      // A federated JWT recorded here by the release before the ProofObjects kept its jti (the same
      // hash) counts as used until it expires; nothing new is written here. Removable once a day
      // (the longest max_assertion_lifetime_seconds) has passed since that release.
      const earlier = this.sql.exec("SELECT 1 FROM assertion_jtis WHERE jti_hash = ? AND expires_ms > ?", jtiHash, now).toArray();
      if (earlier.length > 0) return ok({ facts: null, reason: "jti already used" });
    } else if (jtiHash !== null) {
      // An assertion lives minutes: each new one deletes a few expired ones (the daily housekeeping takes what a quiet spell leaves).
      pruneExpired(this.sql, "assertion_jtis", "jti_hash", "expires_ms", now, WRITE_PRUNE);
      const first = this.sql.exec(
        "INSERT OR IGNORE INTO assertion_jtis (jti_hash, expires_ms) VALUES (?, ?)",
        jtiHash,
        expiresMs,
      ).rowsWritten;
      if (first === 0) return ok({ facts: null, reason: "jti already used" });
    }
    this.noteCredentialUse(clientId, now);
    return ok({ facts: await this.withLegacyProof(this.factsOf(current), proof) });
  }

  // -------------------------------------------------------------------------------------------
  // Trusted issuers (issue 44)

  /** Registers an issuer with the key set the Worker fetched from its `jwks_uri` to check it. */
  createTrustedIssuer(
    record: Omit<TrustedIssuerRecord, "organization_id" | "key_set">,
    fetched: { keys: JWK[]; maxAgeSeconds: number | null; now: number },
    actor: Actor,
  ): Result<TrustedIssuerRecord> {
    if (!this.exists()) return missing("Organization");
    if (trustedIssuerByIssuer(this.sql, record.issuer) !== undefined) {
      return fail("conflict", "This issuer is already trusted by the organization.");
    }
    const count = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM trusted_issuers").one().n;
    if (count >= MAX_TRUSTED_ISSUERS) {
      return fail("conflict", `An organization trusts at most ${MAX_TRUSTED_ISSUERS} issuers; remove one first.`);
    }
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO trusted_issuers (id, issuer, name, jwks_uri, jwks_uri_source, assertion_reuse, max_lifetime_s, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        record.id,
        record.issuer,
        record.name,
        record.jwks_uri,
        record.jwks_uri_source,
        record.assertion_reuse,
        record.max_assertion_lifetime_seconds,
        record.created_at,
      );
      this.remoteKeys.store(record.jwks_uri, fetched.keys, fetched.maxAgeSeconds, fetched.now);
      audit(this.sql, actor, "trusted_issuer.created", "trusted_issuer", record.id, {
        issuer: record.issuer,
        jwks_uri: redactUrl(record.jwks_uri),
        assertion_reuse: record.assertion_reuse,
        max_assertion_lifetime_seconds: record.max_assertion_lifetime_seconds,
      });
    });
    return ok(this.trustedIssuerOf(trustedIssuerRow(this.sql, record.id) as TrustedIssuerRow));
  }

  listTrustedIssuers(page: PageRequest): Result<Page<TrustedIssuerRecord>> {
    if (!this.exists()) return missing("Organization");
    return pageOfTable(this.sql, "trusted_issuers", page, (row: TrustedIssuerRow) => this.trustedIssuerOf(row));
  }

  getTrustedIssuer(id: string): Result<TrustedIssuerRecord> {
    const row = this.exists() ? trustedIssuerRow(this.sql, id) : undefined;
    return row === undefined ? missing("Trusted issuer") : ok(this.trustedIssuerOf(row));
  }

  /**
   * Stops trusting an issuer: its federated credentials are revoked in the same transaction
   * (pushed to every key object like any revocation, so their tokens stop on the next request),
   * and its key set is dropped.
   */
  async removeTrustedIssuer(id: string, actor: Actor, now: number): Promise<Result<Propagated<TrustedIssuerRecord>>> {
    const row = this.exists() ? trustedIssuerRow(this.sql, id) : undefined;
    if (row === undefined) return missing("Trusted issuer");
    const record = this.trustedIssuerOf(row);
    this.ctx.storage.transactionSync(() => {
      const active = this.sql
        .exec<{ client_id: string }>(
          "SELECT client_id FROM client_credentials WHERE federated_issuer = ? AND revoked_at IS NULL",
          row.issuer,
        )
        .toArray();
      for (const { client_id } of active) this.revokeCredentialRow(client_id, now, actor);
      this.sql.exec("DELETE FROM trusted_issuers WHERE id = ?", id);
      this.remoteKeys.prune();
      audit(this.sql, actor, "trusted_issuer.removed", "trusted_issuer", id, { issuer: row.issuer, revoked_credentials: active.length });
    });
    return ok({ record, pending: await this.propagation.run() });
  }

  /**
   * Replaces an issuer's held key set with one the Worker fetched now (the operator's "refresh",
   * after the issuer withdrew a key): a key it no longer publishes stops at once, not when the
   * held set goes stale.
   */
  refreshTrustedIssuer(
    id: string,
    fetched: { keys: JWK[]; maxAgeSeconds: number | null; now: number },
    actor: Actor,
  ): Result<TrustedIssuerRecord> {
    const row = this.exists() ? trustedIssuerRow(this.sql, id) : undefined;
    if (row === undefined) return missing("Trusted issuer");
    this.ctx.storage.transactionSync(() => {
      this.remoteKeys.store(row.jwks_uri, fetched.keys, fetched.maxAgeSeconds, fetched.now);
      audit(this.sql, actor, "trusted_issuer.keys_refreshed", "trusted_issuer", id, {
        key_ids: fetched.keys.map((k) => (typeof k.kid === "string" ? k.kid : null)),
      });
    });
    return ok(this.trustedIssuerOf(row));
  }

  private trustedIssuerOf(row: TrustedIssuerRow): TrustedIssuerRecord {
    return trustedIssuerRecord(this.org().id, row, keySetRow(this.sql, row.jwks_uri));
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
        pruneExpired(this.sql, "revocations", "revision", "expires_ms", now, WRITE_PRUNE, "kind = 'token'");
        this.sql.exec("UPDATE organization SET revision = revision + 1");
        this.sql.exec(
          `INSERT INTO revocations (revision, client_id, revoked_at, kind, token_id, expires_ms)
            SELECT revision, ?, ?, 'token', ?, ? FROM organization`,
          clientId,
          isoTime(now),
          tokenId,
          expiresMs,
        );
        audit(this.sql, actor, "access_token.revoked", "access_token", tokenId, { client_id: clientId });
      });
    }
    return ok(await this.propagation.run());
  }

  private factsOf(row: CredentialRow): ClientFacts {
    return {
      user_id: row.user_id,
      active: row.revoked_at === null,
      scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
      dpop_bound: row.dpop_bound === 1,
      version: row.version,
      access_token_strategy: row.token_strategy,
    };
  }

  // -------------------------------------------------------------------------------------------
  // API keys

  async createKey(
    key: Omit<ApiKeyRecord, "organization_id" | "last_used_at" | "revoked_at" | "object_hash" | "previous_secret_expires_at">,
    actor: Actor,
  ): Promise<Result<Propagated<ApiKeyRecord>>> {
    if (!this.exists()) return missing("Organization");
    const active = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL").one().n;
    if (active >= MAX_ACTIVE_API_KEYS) {
      return fail("conflict", `The organization has ${MAX_ACTIVE_API_KEYS} active API keys, the most it may have; revoke one first.`);
    }
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO api_keys (id, key_hash, key_hint, name, per_second, per_day, location_hint, created_at, credits) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        key.id,
        key.key_hash,
        key.key_hint,
        key.name,
        key.limits.per_second ?? null,
        key.limits.per_day ?? null,
        key.location_hint,
        key.created_at,
        key.credits === null ? null : JSON.stringify(key.credits),
      );
      audit(this.sql, actor, "api_key.created", "api_key", key.id, {
        name: key.name,
        limits: key.limits,
        location_hint: key.location_hint,
        ...(key.credits !== null ? { credits: { remaining: key.credits.base, refill: key.credits.refill } } : {}),
      });
    });
    const pending = await this.propagation.run();
    return ok({ record: keyRecord(this.org().id, keyRow(this.sql, key.id) as KeyRow), pending });
  }

  listKeys(page: PageRequest): Result<Page<ApiKeyRecord>> {
    if (!this.exists()) return missing("Organization");
    return pageOfTable(this.sql, "api_keys", page, (row: KeyRow) => keyRecord(this.org().id, row));
  }

  getKey(keyId: string): Result<ApiKeyRecord> {
    const row = this.exists() ? keyRow(this.sql, keyId) : undefined;
    return row ? ok(keyRecord(this.org().id, row)) : missing("API key");
  }

  /** A new name and/or limit overrides (`null` restores a default); limits apply from the key's next request. */
  async updateKey(
    keyId: string,
    change: {
      name?: string | null | undefined;
      limits?: LimitPatch | undefined;
      credits?: { remaining: number; refill?: KeyCredits["refill"] | undefined } | null | undefined;
    },
    actor: Actor,
  ): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? keyRow(this.sql, keyId) : undefined;
    if (row === undefined) return missing("API key");
    this.ctx.storage.transactionSync(() => {
      if (change.credits !== undefined) {
        // A reset: a new epoch, so the key's object takes the balance as given, whatever it had.
        const before = keyRecord(this.org().id, row).credits;
        const credits: KeyCredits | null =
          change.credits === null
            ? null
            : { base: change.credits.remaining, epoch: (before?.epoch ?? 0) + 1, added: 0, refill: change.credits.refill ?? null };
        this.sql.exec(
          "UPDATE api_keys SET credits = ?, version = version + 1 WHERE id = ?",
          credits === null ? null : JSON.stringify(credits),
          keyId,
        );
      }
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
      audit(this.sql, actor, "api_key.updated", "api_key", keyId, {
        ...(change.name !== undefined ? { name: change.name } : {}),
        ...(change.limits !== undefined ? { limits: change.limits } : {}),
        ...(change.credits !== undefined ? { credits: change.credits } : {}),
      });
    });
    const pending = await this.propagation.run();
    return ok({ record: keyRecord(this.org().id, keyRow(this.sql, keyId) as KeyRow), pending });
  }

  /**
   * A top-up (`add`: added to whatever the key has left) or a reset (`set`: the balance becomes
   * exactly this) of a key's credits; a key without credits gets them (no refill).
   */
  async changeCredits(keyId: string, change: { add: number } | { set: number }, actor: Actor): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? keyRow(this.sql, keyId) : undefined;
    if (row === undefined) return missing("API key");
    const before = keyRecord(this.org().id, row).credits;
    const credits: KeyCredits =
      "add" in change
        ? before === null
          ? { base: change.add, epoch: 1, added: 0, refill: null }
          : { ...before, added: before.added + change.add }
        : { base: change.set, epoch: (before?.epoch ?? 0) + 1, added: 0, refill: before?.refill ?? null };
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE api_keys SET credits = ?, version = version + 1 WHERE id = ?", JSON.stringify(credits), keyId);
      audit(this.sql, actor, "add" in change ? "api_key.credits_added" : "api_key.credits_set", "api_key", keyId, change);
    });
    const pending = await this.propagation.run();
    return ok({ record: keyRecord(this.org().id, keyRow(this.sql, keyId) as KeyRow), pending });
  }

  /** Idempotent. Answered once the key's object refuses the key (or with it still to learn). */
  async revokeKey(keyId: string, actor: Actor, now: number): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? keyRow(this.sql, keyId) : undefined;
    if (row === undefined) return missing("API key");
    if (row.revoked_at === null) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("UPDATE api_keys SET revoked_at = ?, version = version + 1 WHERE id = ?", isoTime(now), keyId);
        audit(this.sql, actor, "api_key.revoked", "api_key", keyId, null);
      });
    }
    const pending = await this.propagation.run();
    return ok({ record: keyRecord(this.org().id, keyRow(this.sql, keyId) as KeyRow), pending });
  }

  /**
   * Rotates the key's secret (issue 29; unkey's rotation with a grace period): the same record
   * (id, limits, counters, credits, quota, traffic: all in the key's object, which keeps its name)
   * gets `secretHash`; the secret it replaces keeps working until `now + graceMs` (0: not at all),
   * and one replaced earlier stops now. Pushed to the key's object like a revocation. The caller
   * shows the new secret whatever `pending` says: until the push lands the key's object still
   * takes the old secret, and the alarm retries it.
   */
  async rotateKey(
    keyId: string,
    rotated: { hash: string; hint: string },
    graceMs: number,
    actor: Actor,
    now: number,
  ): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? keyRow(this.sql, keyId) : undefined;
    if (row === undefined) return missing("API key");
    if (row.revoked_at !== null) return fail("conflict", "The API key is revoked; issue a new one.");
    const until = graceMs > 0 ? now + graceMs : null;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `UPDATE api_keys SET object_hash = coalesce(object_hash, key_hash), previous_hash = ?, previous_until_ms = ?,
           key_hash = ?, key_hint = ?, version = version + 1 WHERE id = ?`,
        until === null ? null : row.key_hash,
        until,
        rotated.hash,
        rotated.hint,
        keyId,
      );
      audit(this.sql, actor, "api_key.rotated", "api_key", keyId, {
        grace_seconds: Math.round(graceMs / 1000),
        previous_secret_expires_at: until === null ? null : isoTime(until),
        ...(row.previous_hash !== null && (row.previous_until_ms ?? 0) > now ? { earlier_secret_ended: true } : {}),
      });
    });
    const pending = await this.propagation.run();
    return ok({ record: keyRecord(this.org().id, keyRow(this.sql, keyId) as KeyRow), pending });
  }

  /** Ends a rotation's grace now: the replaced secret stops at its next request. Idempotent. */
  async endRotationGrace(keyId: string, actor: Actor, now: number): Promise<Result<Propagated<ApiKeyRecord>>> {
    const row = this.exists() ? keyRow(this.sql, keyId) : undefined;
    if (row === undefined) return missing("API key");
    if (row.previous_hash !== null) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("UPDATE api_keys SET previous_hash = NULL, previous_until_ms = NULL, version = version + 1 WHERE id = ?", keyId);
        audit(this.sql, actor, "api_key.grace_ended", "api_key", keyId, {
          was_until: row.previous_until_ms === null ? null : isoTime(row.previous_until_ms),
          ended_at: isoTime(now),
        });
      });
    }
    const pending = await this.propagation.run();
    return ok({ record: keyRecord(this.org().id, keyRow(this.sql, keyId) as KeyRow), pending });
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
    // A deleted organization's keys are still known (revoked) until they are erased.
    const row = this.hasRow() ? keyRow(this.sql, keyId) : undefined;
    return row === undefined ? null : this.propagation.snapshotOf(row, revision);
  }

  // -------------------------------------------------------------------------------------------
  // Administrator tokens and manager sessions

  mintAdminToken(
    token: Omit<OrgAdminTokenRecord, "organization_id" | "last_used_at" | "revoked_at">,
    actor: Actor,
  ): Result<OrgAdminTokenRecord> {
    return this.exists() ? access.mintAdminToken(this.ctx.storage, this.org().id, token, actor) : missing("Organization");
  }

  listAdminTokens(page: PageRequest): Result<Page<OrgAdminTokenRecord>> {
    return this.exists() ? access.listAdminTokens(this.ctx.storage, this.org().id, page) : missing("Organization");
  }

  getAdminToken(tokenId: string): Result<OrgAdminTokenRecord> {
    return this.exists() ? access.getAdminToken(this.ctx.storage, this.org().id, tokenId) : missing("Administrator token");
  }

  /** Idempotent; ends every manager session opened with the token, in the same transaction. */
  revokeAdminToken(tokenId: string, actor: Actor, now: number): Result<OrgAdminTokenRecord> {
    return this.exists() ? access.revokeAdminToken(this.ctx.storage, this.org().id, tokenId, actor, now) : missing("Administrator token");
  }

  /** Opens a manager session for an active, unexpired administrator token of this organization. */
  signIn(
    tokenHash: string,
    session: { id_hash: string; csrf: string; created_at: string; expires_at: string },
  ): Result<{ admin_token_id: string }> {
    return this.exists()
      ? access.signIn(this.ctx.storage, tokenHash, session)
      : fail("invalid_token", "The administrator token is unknown, revoked or expired.");
  }

  /** The live session with this id hash: not signed out, not expired, its token neither revoked nor expired. */
  session(idHash: string, now: number): SessionInfo | null {
    return this.exists() ? access.session(this.ctx.storage, idHash, now) : null;
  }

  signOut(idHash: string): void {
    if (this.exists()) access.signOut(this.ctx.storage, idHash);
  }

  // -------------------------------------------------------------------------------------------
  // Audit log

  /** Entries for changes committed in another object (the webhook objects); see org/audit.ts. */
  appendAudit(entries: KeyedAuditEntry[]): void {
    if (this.hasRow()) appendAudit(this.ctx.storage, entries);
  }

  /** A deleted organization's log is kept for its retention (support reads it in storage) but listed to no one. */
  auditLog(page: PageRequest, filter?: AuditFilter): Result<Page<AuditEntryView>> {
    return this.exists() ? auditPage(this.sql, page, filter ?? {}) : missing("Organization");
  }

  // -------------------------------------------------------------------------------------------
  // Propagation

  /** Retries whatever has not been propagated yet, and keeps the daily housekeeping going. */
  override async alarm(): Promise<void> {
    this.propagation.alarmAt = null;
    const pending = await this.propagation.run();
    if (pending === 0) this.propagation.retries = 0;
    const row = orgRow(this.sql);
    if (row?.deleted_at != null && row.erase_after !== null) {
      // A deleted organization is erased when due (its deletion's propagation, above, goes first).
      if (Date.now() >= Date.parse(row.erase_after)) {
        try {
          await this.erase(row);
        } catch (err) {
          log.warn("deleted organization's erasure failed; will retry", { organization: row.id, detail: describeError(err) });
          this.propagation.schedule(Date.now() + 60_000);
        }
      } else {
        this.propagation.schedule(Date.parse(row.erase_after));
      }
    }
    const more = Date.now() >= this.housekeptAt + HOUSEKEEPING_INTERVAL_MS && this.housekeep(Date.now());
    // A table with more expired rows than one run deletes gets another run at once, not tomorrow.
    this.propagation.schedule(more ? Date.now() : this.housekeptAt + HOUSEKEEPING_INTERVAL_MS);
  }

  // -------------------------------------------------------------------------------------------
  // Rows and records

  private revokeCredentialRow(clientId: string, now: number, actor: Actor): void {
    const at = isoTime(now);
    this.sql.exec("UPDATE client_credentials SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL", at, clientId);
    this.sql.exec("UPDATE organization SET revision = revision + 1");
    this.sql.exec("INSERT INTO revocations (revision, client_id, revoked_at) SELECT revision, ?, ? FROM organization", clientId, at);
    this.sql.exec("INSERT OR REPLACE INTO pending_lookups (client_id, op) VALUES (?, 'delete')", clientId);
    this.remoteKeys.prune();
    audit(this.sql, actor, "client_credential.revoked", "client_credential", clientId, null);
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

  /** The alarm's housekeeping (org/audit.ts), at `now` (tests inject a clock); true when a table has more to prune. */
  housekeep(now: number): boolean {
    const more = this.ctx.storage.transactionSync(() => housekeep(this.sql, now));
    this.housekeptAt = more ? 0 : now;
    return more;
  }
}
