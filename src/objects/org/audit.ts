/**
 * The organization's audit log: entries written in the same transaction as the change they
 * record, entries pushed from other objects (the webhook objects, with a key so that a repeated
 * push adds nothing), the newest-first listing, and the daily housekeeping that prunes what has
 * outlived its retention (the log after AUDIT_RETENTION_DAYS, expired sessions, used assertion
 * ids and revoked tokens past their expiry).
 */
import { isoTime } from "../../lib/time";
import type { Actor, AuditEntryView, AuditFilter } from "../../schemas/audit";
import { type Page, type PageRequest, pageOf, pruneExpired, type Result } from "../sql";
import type { KeyedAuditEntry } from "../webhooks/audit";
import { AUDIT_RETENTION_DAYS, type AuditRow } from "./schema";

/** One entry, in the caller's transaction. */
export function audit(
  sql: SqlStorage,
  actor: Actor,
  action: string,
  resourceType: string,
  resourceId: string,
  detail: Record<string, unknown> | null,
): void {
  sql.exec(
    "INSERT INTO audit_log (at, actor, action, resource_type, resource_id, detail) VALUES (?, ?, ?, ?, ?, ?)",
    isoTime(Date.now()),
    JSON.stringify(actor),
    action,
    resourceType,
    resourceId,
    detail === null ? null : JSON.stringify(detail),
  );
}

/**
 * Entries for changes committed in another object (the webhook objects), each with a unique
 * key: a push repeated after a failure adds nothing twice. A `replace` entry (an hour's publish
 * summary) updates the detail of the entry with its key, which keeps its place in the log.
 */
export function appendAudit(storage: DurableObjectStorage, entries: KeyedAuditEntry[]): void {
  storage.transactionSync(() => {
    for (const e of entries) {
      storage.sql.exec(
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

/**
 * The WHERE clause and its parameters for a filter: each narrowing a column compared with a
 * parameter (never spliced), the actor's type and id read from its JSON through the same
 * expressions as the indexes on them (schema.ts, version 10), so SQLite can use those.
 */
export function auditWhere(filter: AuditFilter): { clause: string; params: SqlStorageValue[] } {
  const parts: string[] = [];
  const params: SqlStorageValue[] = [];
  const add = (sqlText: string, value: string | undefined) => {
    if (value === undefined) return;
    parts.push(sqlText);
    params.push(value);
  };
  add("json_extract(actor, '$.type') = ?", filter.actor);
  add("json_extract(actor, '$.id') = ?", filter.actor_id);
  add("action = ?", filter.action);
  add("resource_type = ?", filter.resource_type);
  add("resource_id = ?", filter.resource_id);
  // Stored as isoTime (milliseconds, Z), so the text order is the time order.
  add("at >= ?", filter.since === undefined ? undefined : isoTime(Date.parse(filter.since)));
  add("at < ?", filter.until === undefined ? undefined : isoTime(Date.parse(filter.until)));
  return { clause: parts.map((p) => ` AND ${p}`).join(""), params };
}

export function auditPage(sql: SqlStorage, page: PageRequest, filter: AuditFilter = {}): Result<Page<AuditEntryView>> {
  const where = auditWhere(filter);
  return pageOf(
    (before, limit) =>
      // seq is the table's INTEGER PRIMARY KEY: SQLite names the rowid column after it.
      sql
        .exec<AuditRow>(
          `SELECT seq AS rowid, * FROM audit_log WHERE seq < ?${where.clause} ORDER BY seq DESC LIMIT ?`,
          before,
          ...where.params,
          limit,
        )
        .toArray(),
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

/** Rows of each table the housekeeping deletes per run (it runs again at once while more are due). */
export const HOUSEKEEPING_BATCH = 1_000;
/** Rows a write path deletes of its own table's expired ones, each time it adds one. */
export const WRITE_PRUNE = 16;

/**
 * Prunes what has outlived its retention or its expiry, HOUSEKEEPING_BATCH rows per table through
 * their indexes (daily from the alarm, and again at once while a table had more): audit entries
 * past AUDIT_RETENTION_DAYS, expired manager sessions, used client assertion ids and DPoP proof ids
 * past their expiry, and revocations of single tokens whose token has expired. True when more remain.
 */
export function housekeep(sql: SqlStorage, now: number): boolean {
  const counts = [
    pruneExpired(sql, "audit_log", "seq", "at", isoTime(now - AUDIT_RETENTION_DAYS * 86_400_000), HOUSEKEEPING_BATCH),
    pruneExpired(sql, "sessions", "id_hash", "expires_at", isoTime(now), HOUSEKEEPING_BATCH),
    pruneExpired(sql, "assertion_jtis", "jti_hash", "expires_ms", now, HOUSEKEEPING_BATCH),
    pruneExpired(sql, "token_proofs", "jti", "expires_ms", now, HOUSEKEEPING_BATCH),
    pruneExpired(sql, "revocations", "revision", "expires_ms", now, HOUSEKEEPING_BATCH, "kind = 'token'"),
  ];
  return counts.some((n) => n === HOUSEKEEPING_BATCH);
}
