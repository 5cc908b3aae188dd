/**
 * Administrator tokens and manager sessions of one organization: minting, listing, revoking (a
 * revoked token ends its sessions in the same transaction), signing in and out, and the session
 * check every manager request makes. Functions over the organization object's storage; the
 * object checks that the organization exists (and is not deleted) before it calls them.
 */
import { isoTime } from "../../lib/time";
import type { Actor } from "../../schemas/audit";
import type { OrgAdminTokenRecord } from "../../schemas/records";
import { fail, missing, ok, type Page, type PageRequest, pageOfTable, pruneExpired, type Result } from "../sql";
import { audit, WRITE_PRUNE } from "./audit";
import { type AdminTokenRow, adminTokenRecord, adminTokenRow, type SessionInfo } from "./schema";

export function mintAdminToken(
  storage: DurableObjectStorage,
  orgId: string,
  token: Omit<OrgAdminTokenRecord, "organization_id" | "last_used_at" | "revoked_at">,
  actor: Actor,
): Result<OrgAdminTokenRecord> {
  storage.transactionSync(() => {
    storage.sql.exec(
      "INSERT INTO admin_tokens (id, token_hash, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
      token.id,
      token.token_hash,
      token.name,
      token.created_at,
      token.expires_at,
    );
    audit(storage.sql, actor, "admin_token.minted", "admin_token", token.id, { name: token.name, expires_at: token.expires_at });
  });
  return ok(adminTokenRecord(orgId, adminTokenRow(storage.sql, token.id) as AdminTokenRow));
}

export function listAdminTokens(storage: DurableObjectStorage, orgId: string, page: PageRequest): Result<Page<OrgAdminTokenRecord>> {
  return pageOfTable(storage.sql, "admin_tokens", page, (row: AdminTokenRow) => adminTokenRecord(orgId, row));
}

export function getAdminToken(storage: DurableObjectStorage, orgId: string, tokenId: string): Result<OrgAdminTokenRecord> {
  const row = adminTokenRow(storage.sql, tokenId);
  return row ? ok(adminTokenRecord(orgId, row)) : missing("Administrator token");
}

/** Idempotent; ends every manager session opened with the token, in the same transaction. */
export function revokeAdminToken(
  storage: DurableObjectStorage,
  orgId: string,
  tokenId: string,
  actor: Actor,
  now: number,
): Result<OrgAdminTokenRecord> {
  const row = adminTokenRow(storage.sql, tokenId);
  if (row === undefined) return missing("Administrator token");
  if (row.revoked_at === null) {
    storage.transactionSync(() => {
      storage.sql.exec("UPDATE admin_tokens SET revoked_at = ? WHERE id = ?", isoTime(now), tokenId);
      const ended = storage.sql.exec("DELETE FROM sessions WHERE admin_token_id = ?", tokenId).rowsWritten;
      audit(storage.sql, actor, "admin_token.revoked", "admin_token", tokenId, { sessions_ended: ended });
    });
  }
  return ok(adminTokenRecord(orgId, adminTokenRow(storage.sql, tokenId) as AdminTokenRow));
}

/** Opens a manager session for an active, unexpired administrator token of this organization. */
export function signIn(
  storage: DurableObjectStorage,
  tokenHash: string,
  session: { id_hash: string; csrf: string; created_at: string; expires_at: string },
): Result<{ admin_token_id: string }> {
  const token = storage.sql.exec<AdminTokenRow>("SELECT rowid, * FROM admin_tokens WHERE token_hash = ?", tokenHash).toArray()[0];
  if (token === undefined || token.revoked_at !== null || token.expires_at <= session.created_at) {
    return fail("invalid_token", "The administrator token is unknown, revoked or expired.");
  }
  const expires = token.expires_at < session.expires_at ? token.expires_at : session.expires_at;
  storage.transactionSync(() => {
    // Each sign-in deletes a few expired sessions (the daily housekeeping takes what is left).
    pruneExpired(storage.sql, "sessions", "id_hash", "expires_at", session.created_at, WRITE_PRUNE);
    storage.sql.exec(
      "INSERT INTO sessions (id_hash, admin_token_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
      session.id_hash,
      token.id,
      session.csrf,
      session.created_at,
      expires,
    );
    storage.sql.exec("UPDATE admin_tokens SET last_used_at = ? WHERE id = ?", session.created_at, token.id);
    audit(storage.sql, { type: "admin_token", id: token.id }, "session.started", "admin_token", token.id, null);
  });
  return ok({ admin_token_id: token.id });
}

/** The live session with this id hash: not signed out, not expired, its token neither revoked nor expired. */
export function session(storage: DurableObjectStorage, idHash: string, now: number): SessionInfo | null {
  const at = isoTime(now);
  const row = storage.sql
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

export function signOut(storage: DurableObjectStorage, idHash: string): void {
  const row = storage.sql.exec<{ admin_token_id: string }>("SELECT admin_token_id FROM sessions WHERE id_hash = ?", idHash).toArray()[0];
  if (row === undefined) return;
  storage.transactionSync(() => {
    storage.sql.exec("DELETE FROM sessions WHERE id_hash = ?", idHash);
    audit(storage.sql, { type: "admin_token", id: row.admin_token_id }, "session.ended", "admin_token", row.admin_token_id, null);
  });
}
