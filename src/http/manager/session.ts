/**
 * Manager app sessions: a signed, expiring cookie `kw_session` (HttpOnly, Secure,
 * SameSite=Strict) holding who signed in (the operator, or an organization's administrator) and
 * a per-session CSRF token that every form must echo. Signed like access tokens (lib/signed.ts)
 * with the same keys under its own prefix, so a session can never pass as a token or the reverse.
 */

import * as z from "zod";
import { randomToken } from "../../lib/crypto";
import type { VersionedKey } from "../../lib/keyring";
import { open, sign } from "../../lib/signed";

export const SESSION_COOKIE = "kw_session";
/** Absolute lifetime: a working day. */
export const SESSION_TTL_SECONDS = 8 * 3600;
const PREFIX = "kw_session_";

export const Session = z.object({
  v: z.literal(1),
  role: z.enum(["operator", "org_admin"]),
  /** The one organization an org_admin may see; null for the operator. */
  org: z.string().nullable(),
  /** Id of the administrator token used to sign in (revoking it ends the session). */
  via: z.string().nullable(),
  csrf: z.string(),
  exp: z.number().int(),
});
export type Session = z.output<typeof Session>;

export function newSession(role: Session["role"], org: string | null, via: string | null, nowMs: number): Session {
  return { v: 1, role, org, via, csrf: randomToken(24), exp: Math.floor(nowMs / 1000) + SESSION_TTL_SECONDS };
}

export function sealSession(keys: VersionedKey[], session: Session): Promise<string> {
  return sign(keys, PREFIX, session);
}

/** The session in a cookie value, or null when absent, forged, malformed or expired. */
export async function openSession(keys: VersionedKey[], value: string | undefined, nowMs: number): Promise<Session | null> {
  if (value === undefined) return null;
  const opened = await open(keys, PREFIX, value, Session, 2048);
  return opened.ok && nowMs < opened.value.exp * 1000 ? opened.value : null;
}

/** Whether a session may act on an organization (the operator may act on all). */
export const canAccess = (session: Session, orgId: string): boolean => session.role === "operator" || session.org === orgId;
