/**
 * The portal's single-use links and its sessions (issue 30 item 2; product brief, "Webhook
 * receivers' way in"), in the organization's WebhookObject (schema.ts version 5). Both are secrets
 * the organization hands to a receiver, so only the SHA-256 of each is stored and they are found
 * by that hash (a lookup on the primary key or a unique index: nothing is compared byte by byte,
 * so nothing leaks through timing). A link opens once, within its expiry: the open marks it used
 * and creates the session in one transaction, so two opens racing each other cannot both start a
 * session. A session reaches its one configuration, ends when the organization ends it, when its
 * configuration or the organization is deleted, or at its expiry. Expired rows are pruned by time
 * (objects/sql.ts `pruneExpired`, on the write paths and in the alarm; docs/storage.md, "What
 * expires"). Every change is audited in its own transaction. The object checks that the
 * organization is not deleted before it calls these.
 */
import { isoTime } from "../../lib/time";
import type { Actor } from "../../schemas/audit";
import type { PortalSessionView } from "../../schemas/receivers";
import type { Db } from "../db";
import { fail, missing, ok, type Page, type PageRequest, pageOf, pruneExpired, type Result } from "../sql";
import type { Audit } from "./configurations";
import { configRow } from "./configurations";
import { branding, type PortalBranding } from "./event-types";

/** Expired rows deleted per write (the alarm takes the rest, PORTAL_ALARM_PRUNE at a time). */
const WRITE_PRUNE = 10;
const PORTAL_ALARM_PRUNE = 100;
/** An expired or ended session stays listed for a day, so the organization sees how it ended. */
export const PORTAL_SESSION_KEPT_MS = 24 * 3600 * 1000;
/** `last_seen_ms` is written at most once a minute: a portal page is not a write per request. */
const LAST_SEEN_EVERY_MS = 60_000;

/** The SQL handle for pruneExpired, and the metered helpers for the rest. */
export interface PortalStore {
  db: Db;
  sql: SqlStorage;
}

interface SessionRow extends Record<string, SqlStorageValue> {
  rowid: number;
  id: string;
  configuration_id: string;
  created_ms: number;
  expires_ms: number;
  ended_ms: number | null;
  last_seen_ms: number;
}

const SESSION_COLUMNS = "rowid, id, configuration_id, created_ms, expires_ms, ended_ms, last_seen_ms";

export function sessionView(row: SessionRow, now: number): PortalSessionView {
  return {
    id: row.id,
    webhook_configuration_id: row.configuration_id,
    status: row.ended_ms !== null ? "ended" : row.expires_ms <= now ? "expired" : "active",
    created_at: isoTime(row.created_ms),
    last_seen_at: isoTime(row.last_seen_ms),
    expires_at: isoTime(row.expires_ms),
    ended_at: row.ended_ms === null ? null : isoTime(row.ended_ms),
  };
}

/** Records a link (its hash) for a configuration of this organization; 404 when there is none. */
export function createLink(
  store: PortalStore,
  configurationId: string,
  hash: string,
  expiresMs: number,
  actor: Actor,
  audit: Audit,
  now: number,
): Result<{ expires_at: string }> {
  const { db, sql } = store;
  const config = configRow(db, configurationId);
  if (config === undefined) return missing("Webhook configuration");
  // Issue 42: an operations configuration receives events about every endpoint of the
  // organization; it is the organization's own, and no receiver is handed a way into it.
  if (config.operations === 1) {
    return fail(
      "conflict",
      "This is one of the organization's operations configurations (operational events about every endpoint go there): portal links are for receivers' endpoints only.",
    );
  }
  db.txn(() => {
    pruneExpired(sql, "portal_links", "hash", "expires_ms", now, WRITE_PRUNE);
    db.run(
      "INSERT INTO portal_links (hash, configuration_id, created_ms, expires_ms, used_ms, created_by) VALUES (?, ?, ?, ?, NULL, ?)",
      hash,
      configurationId,
      now,
      expiresMs,
      JSON.stringify(actor),
    );
    audit({
      action: "webhook_configuration.portal_link_created",
      resource_type: "webhook_configuration",
      resource_id: configurationId,
      detail: { expires_at: isoTime(expiresMs) },
    });
  });
  return ok({ expires_at: isoTime(expiresMs) });
}

/** Why a link did not open: never issued (or pruned after its expiry), opened before, or expired. */
export type OpenRefusal = "unknown" | "used" | "expired";
export type Opened = { ok: true; session: PortalSessionView } | { ok: false; reason: OpenRefusal };

/**
 * Opens a link once: within its expiry, for a configuration that still exists, it is marked used
 * and the session created in one transaction (with its audit entry, by the receiver).
 */
export function openLink(
  store: PortalStore,
  linkHash: string,
  session: { id: string; hash: string; expiresMs: number },
  audit: Audit,
  now: number,
): Opened {
  const { db, sql } = store;
  return db.txn((): Opened => {
    const link = db.first<{ configuration_id: string; expires_ms: number; used_ms: number | null; created_by: string }>(
      "SELECT configuration_id, expires_ms, used_ms, created_by FROM portal_links WHERE hash = ?",
      linkHash,
    );
    if (link === undefined) return { ok: false, reason: "unknown" };
    if (link.used_ms !== null) return { ok: false, reason: "used" };
    if (link.expires_ms <= now) return { ok: false, reason: "expired" };
    // A deleted configuration's link opens nothing (as if it had never been issued).
    const config = configRow(db, link.configuration_id);
    if (config === undefined || config.operations === 1) return { ok: false, reason: "unknown" };
    pruneExpired(sql, "portal_sessions", "id", "expires_ms", now - PORTAL_SESSION_KEPT_MS, WRITE_PRUNE);
    db.run("UPDATE portal_links SET used_ms = ? WHERE hash = ?", now, linkHash);
    db.run(
      `INSERT INTO portal_sessions (id, hash, configuration_id, created_ms, expires_ms, ended_ms, last_seen_ms, created_by)
       VALUES (?, ?, ?, ?, ?, NULL, ?, ?)`,
      session.id,
      session.hash,
      link.configuration_id,
      now,
      session.expiresMs,
      now,
      link.created_by,
    );
    audit({
      actor: { type: "receiver", id: session.id, webhook_configuration_id: link.configuration_id },
      action: "portal_session.opened",
      resource_type: "portal_session",
      resource_id: session.id,
      detail: { webhook_configuration_id: link.configuration_id, expires_at: isoTime(session.expiresMs) },
    });
    const row = db.first<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM portal_sessions WHERE id = ?`, session.id) as SessionRow;
    return { ok: true, session: sessionView(row, now) };
  });
}

/** What a live session reaches, for the portal's every request. */
export interface LiveSession {
  id: string;
  configuration_id: string;
  frame_origins: string[];
  /** The organization's name, accent and logo, which every portal page shows (event-types.ts `branding`). */
  branding: PortalBranding;
}

/** The live session with this hash: not ended, not expired, its configuration not deleted; else null. */
export function liveSession(store: PortalStore, hash: string, now: number): LiveSession | null {
  const { db } = store;
  const row = db.first<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM portal_sessions WHERE hash = ?`, hash);
  if (row === undefined || row.ended_ms !== null || row.expires_ms <= now) return null;
  // A configuration made an operations one after the session opened ends the session (issue 42).
  const config = configRow(db, row.configuration_id);
  if (config === undefined || config.operations === 1) return null;
  if (now - row.last_seen_ms >= LAST_SEEN_EVERY_MS) db.run("UPDATE portal_sessions SET last_seen_ms = ? WHERE id = ?", now, row.id);
  return { id: row.id, configuration_id: row.configuration_id, frame_origins: frameOrigins(db), branding: branding(db) };
}

/** The origins the organization lets frame the portal (CSP frame-ancestors); none by default. */
export function frameOrigins(db: Db): string[] {
  const raw = db.value<string>("SELECT portal_frame_origins FROM meta");
  if (raw === null) return [];
  const parsed: unknown = JSON.parse(raw);
  return Array.isArray(parsed) ? parsed.filter((o): o is string => typeof o === "string") : [];
}

/** A configuration's sessions, oldest first (ended and expired ones for a day after). */
export function listSessions(store: PortalStore, configurationId: string, page: PageRequest, now: number): Result<Page<PortalSessionView>> {
  const { db } = store;
  if (configRow(db, configurationId) === undefined) return missing("Webhook configuration");
  return pageOf(
    (after, limit) =>
      db.all<SessionRow>(
        `SELECT ${SESSION_COLUMNS} FROM portal_sessions WHERE configuration_id = ? AND rowid > ? ORDER BY rowid LIMIT ?`,
        configurationId,
        after,
        limit,
      ),
    page,
    (row) => sessionView(row, now),
  );
}

/** Ends a session of the configuration (idempotent: an ended one is answered as it is, not audited again). */
export function endSession(store: PortalStore, configurationId: string, id: string, audit: Audit, now: number): Result<PortalSessionView> {
  const { db } = store;
  const row = db.first<SessionRow>(
    `SELECT ${SESSION_COLUMNS} FROM portal_sessions WHERE id = ? AND configuration_id = ?`,
    id,
    configurationId,
  );
  if (row === undefined) return missing("Portal session");
  if (row.ended_ms === null) {
    db.txn(() => {
      db.run("UPDATE portal_sessions SET ended_ms = ? WHERE id = ?", now, id);
      audit({
        action: "portal_session.ended",
        resource_type: "portal_session",
        resource_id: id,
        detail: { webhook_configuration_id: configurationId },
      });
    });
  }
  return ok(sessionView(db.first<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM portal_sessions WHERE id = ?`, id) as SessionRow, now));
}

/** The alarm's share: expired links, and sessions a day past their expiry. */
export function prunePortal(store: PortalStore, now: number): void {
  pruneExpired(store.sql, "portal_links", "hash", "expires_ms", now, PORTAL_ALARM_PRUNE);
  pruneExpired(store.sql, "portal_sessions", "id", "expires_ms", now - PORTAL_SESSION_KEPT_MS, PORTAL_ALARM_PRUNE);
}
