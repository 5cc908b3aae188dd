/**
 * DirectoryObject: one SQLite-backed Durable Object (named "directory") holding what is not any
 * one organization's: the list of organizations, for the operator (each OrganizationObject
 * registers itself after it is created, retrying until it lands), and the operator's manager
 * sessions. Operator sessions record a fingerprint of the ADMIN_TOKEN they were opened with, so
 * rotating the secret ends every one of them; signing out deletes the session.
 *
 * Load: operator traffic only (listing organizations, one session check per operator page):
 * a few requests per second. Rows: one per organization (SQLite holds millions) and one per live
 * operator session. If organizations ever outgrow one object, the list shards by id prefix.
 */
import { DurableObject } from "cloudflare:workers";
import { isoTime } from "../lib/time";
import type { OrganizationRecord } from "../schemas/records";
import { type Migration, migrate, type Page, type PageRequest, pageOfTable, pruneExpired, type Result } from "./sql";

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      "CREATE TABLE organizations (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL)",
      `CREATE TABLE operator_sessions (id_hash TEXT PRIMARY KEY, csrf TEXT NOT NULL, admin_fingerprint TEXT NOT NULL,
        created_at TEXT NOT NULL, expires_at TEXT NOT NULL)`,
    ],
  },
  {
    // Issue 29: expired operator sessions are deleted through an index, a few at each sign-in.
    version: 2,
    statements: ["CREATE INDEX operator_sessions_by_expiry ON operator_sessions (expires_at)"],
  },
];

/**
 * Expired sessions each sign-in deletes: more than one, so that they never accumulate; the table
 * holds the sessions opened within their lifetime (8 hours, auth/sessions.ts SESSION_TTL_SECONDS) and a few expired ones.
 */
const SIGN_IN_PRUNE = 16;

export interface OperatorSession {
  id_hash: string;
  csrf: string;
  admin_fingerprint: string;
  created_at: string;
  expires_at: string;
}

type OrgRow = OrganizationRecord & { rowid: number } & Record<string, SqlStorageValue>;

export class DirectoryObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
  }

  /** Idempotent: an organization registers itself once it exists. */
  register(org: OrganizationRecord): void {
    this.ctx.storage.sql.exec(
      "INSERT OR IGNORE INTO organizations (id, name, created_at) VALUES (?, ?, ?)",
      org.id,
      org.name,
      org.created_at,
    );
  }

  /** A deleted organization leaves the operator's listing (idempotent). */
  unregister(orgId: string): void {
    this.ctx.storage.sql.exec("DELETE FROM organizations WHERE id = ?", orgId);
  }

  list(page: PageRequest): Result<Page<OrganizationRecord>> {
    return pageOfTable(this.ctx.storage.sql, "organizations", page, ({ id, name, created_at }: OrgRow) => ({ id, name, created_at }));
  }

  startSession(session: OperatorSession): void {
    const sql = this.ctx.storage.sql;
    pruneExpired(sql, "operator_sessions", "id_hash", "expires_at", session.created_at, SIGN_IN_PRUNE);
    sql.exec(
      "INSERT INTO operator_sessions (id_hash, csrf, admin_fingerprint, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
      session.id_hash,
      session.csrf,
      session.admin_fingerprint,
      session.created_at,
      session.expires_at,
    );
  }

  /** The live session: not signed out, not expired, opened with the ADMIN_TOKEN in force now. */
  session(idHash: string, adminFingerprint: string, now: number): { csrf: string; expires_at: string } | null {
    const row = this.ctx.storage.sql
      .exec<{ csrf: string; expires_at: string; admin_fingerprint: string }>(
        "SELECT csrf, expires_at, admin_fingerprint FROM operator_sessions WHERE id_hash = ? AND expires_at > ?",
        idHash,
        isoTime(now),
      )
      .toArray()[0];
    if (row === undefined || row.admin_fingerprint !== adminFingerprint) return null;
    return { csrf: row.csrf, expires_at: row.expires_at };
  }

  endSession(idHash: string): void {
    this.ctx.storage.sql.exec("DELETE FROM operator_sessions WHERE id_hash = ?", idHash);
  }
}
