/**
 * DirectoryObject: one SQLite-backed Durable Object (named "directory") holding what is not any
 * one organization's: the list of organizations, for the operator (each OrganizationObject
 * registers itself after it is created, retrying until it lands), and the operator's manager
 * sessions. Operator sessions record a fingerprint of the ADMIN_TOKEN they were opened with, so
 * rotating the secret ends every one of them; signing out deletes the session.
 *
 * Issue 43: it also holds the operator's single-use sign-in tickets (the link `npm start` prints,
 * POST /admin/v1/manager-sign-in-links): only each ticket's SHA-256 is stored, found by that hash
 * on the primary key (nothing compared byte by byte), with the ADMIN_TOKEN fingerprint it was
 * minted under and a short expiry. Redeeming marks it used and opens the operator session in one
 * transaction, so two redemptions racing each other cannot both sign in.
 *
 * Load: operator traffic only (listing organizations, one session check per operator page):
 * a few requests per second. Rows: one per organization (SQLite holds millions), one per live
 * operator session and one per ticket of the last few minutes. If organizations ever outgrow one
 * object, the list shards by id prefix.
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
  {
    // Issue 43: single-use sign-in tickets for the operator (auth/sessions.ts), pruned by expiry.
    version: 3,
    statements: [
      `CREATE TABLE operator_sign_in_tickets (hash TEXT PRIMARY KEY, admin_fingerprint TEXT NOT NULL,
        created_at TEXT NOT NULL, expires_at TEXT NOT NULL, used_at TEXT)`,
      "CREATE INDEX operator_sign_in_tickets_by_expiry ON operator_sign_in_tickets (expires_at)",
    ],
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

/** A single-use sign-in ticket as minted: its SHA-256 and the ADMIN_TOKEN fingerprint in force. */
export interface SignInTicket {
  hash: string;
  admin_fingerprint: string;
  created_at: string;
  expires_at: string;
}

/**
 * Why a ticket signed nobody in: never minted (or pruned after its expiry, or minted under another
 * ADMIN_TOKEN), already used, or expired.
 */
export type TicketRefusal = "unknown" | "used" | "expired";

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

  /** Records a sign-in ticket (its hash), pruning a few expired ones. */
  mintSignInTicket(ticket: SignInTicket): void {
    const sql = this.ctx.storage.sql;
    pruneExpired(sql, "operator_sign_in_tickets", "hash", "expires_at", ticket.created_at, SIGN_IN_PRUNE);
    sql.exec(
      "INSERT INTO operator_sign_in_tickets (hash, admin_fingerprint, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, NULL)",
      ticket.hash,
      ticket.admin_fingerprint,
      ticket.created_at,
      ticket.expires_at,
    );
  }

  /**
   * Uses a ticket up, once: unused, unexpired and minted under the ADMIN_TOKEN in force, it is
   * marked used and `session` opened in the same transaction. Otherwise nothing changes.
   */
  redeemSignInTicket(hash: string, session: OperatorSession): { ok: true } | { ok: false; reason: TicketRefusal } {
    const sql = this.ctx.storage.sql;
    return this.ctx.storage.transactionSync(() => {
      const row = sql
        .exec<{ admin_fingerprint: string; expires_at: string; used_at: string | null }>(
          "SELECT admin_fingerprint, expires_at, used_at FROM operator_sign_in_tickets WHERE hash = ?",
          hash,
        )
        .toArray()[0];
      // A ticket minted under a rotated-away ADMIN_TOKEN is as good as none.
      if (row === undefined || row.admin_fingerprint !== session.admin_fingerprint) return { ok: false, reason: "unknown" } as const;
      if (row.used_at !== null) return { ok: false, reason: "used" } as const;
      if (row.expires_at <= session.created_at) return { ok: false, reason: "expired" } as const;
      sql.exec("UPDATE operator_sign_in_tickets SET used_at = ? WHERE hash = ?", session.created_at, hash);
      this.startSession(session);
      return { ok: true } as const;
    });
  }

  endSession(idHash: string): void {
    this.ctx.storage.sql.exec("DELETE FROM operator_sessions WHERE id_hash = ?", idHash);
  }
}
