/**
 * Manager app sessions, kept on the server (product brief, "Manager sessions"): the cookie
 * `__Host-kw_session` carries only a signed, expiring reference (a 256-bit session id, and the
 * organization for an administrator's session); the session itself, with its CSRF token, lives in
 * the DirectoryObject (the operator's) or the organization's object (an administrator's). So
 * signing out ends it for every copy of the cookie, revoking an administrator token ends the
 * sessions opened with it, and an operator session ends when ADMIN_TOKEN changes (it records a
 * fingerprint of the token it was opened with). The cookie is signed like access tokens
 * (lib/signed.ts) under its own prefix, so one can never pass as the other.
 *
 * Issue 43: the operator may also sign in with a single-use ticket, `kw_signin_<43 base64url>`
 * (256 random bits), minted through the operator API (POST /admin/v1/manager-sign-in-links, what
 * `npm start` prints) and redeemed by the manager's link page. The DirectoryObject keeps only its
 * SHA-256, the ADMIN_TOKEN fingerprint it was minted under and its expiry (SIGN_IN_TICKET_SECONDS by
 * default); redeeming it opens exactly the session the token sign-in opens, once.
 */
import * as z from "zod";
import type { Deps } from "../deps";
import { organizationOfAdminToken } from "../identity/admin-tokens";
import { constantTimeEqual, randomToken, sha256Hex } from "../lib/crypto";
import { open, sign } from "../lib/signed";
import { isoTime } from "../lib/time";
import type { TicketRefusal } from "../objects/directory";
import { directoryObject, organizationObject, reach } from "../objects/stubs";
import { SIGN_IN_TICKET_SECONDS } from "../schemas/admin";
import type { Actor } from "../schemas/audit";

/** `__Host-`: Secure, Path=/, no Domain, so no other origin can plant one (http/manager/routes.tsx). */
export const SESSION_COOKIE = "__Host-kw_session";
/** Absolute lifetime: a working day (shorter when the administrator token expires sooner). */
export const SESSION_TTL_SECONDS = 8 * 3600;
const PREFIX = "kw_session_";
/** A sign-in ticket: the prefix, then 256 random bits in base64url. */
const TICKET_PREFIX = "kw_signin_";
const TICKET_PATTERN = /^kw_signin_[A-Za-z0-9_-]{43}$/;
/** The manager page a sign-in link opens; its `ticket` is redeemed by that page's POST (http/manager/routes.tsx). */
export const SIGN_IN_LINK_PATH = "/manager/sign-in/link";

const Reference = z.object({ v: z.literal(2), sid: z.string(), org: z.string().nullable(), exp: z.number().int() });

export interface Session {
  role: "operator" | "org_admin";
  /** The one organization an administrator may see; null for the operator. */
  org: string | null;
  /** The administrator token the session was opened with; null for the operator. */
  via: string | null;
  /** Every form of the session must echo it. */
  csrf: string;
  /** The cookie's reference, to end the session. */
  sid: string;
}

/** Whether a session may act on an organization (the operator may act on all). */
export const canAccess = (session: Session, orgId: string): boolean => session.role === "operator" || session.org === orgId;

/** Who the session's changes are attributed to in the audit log. */
export const actorOf = (session: Session): Actor =>
  session.role === "operator" ? { type: "operator" } : { type: "admin_token", id: session.via ?? "" };

/** A fingerprint of ADMIN_TOKEN, so operator sessions can tell it changed; a hash, as for every secret. */
const adminFingerprint = (deps: Deps) => sha256Hex(`keyway:operator-session:${deps.config.adminToken}`);

/** A new session's secrets and window, opened at `now`. */
async function newSession(now: number) {
  const sid = randomToken(32);
  const csrf = randomToken(24);
  const idHash = await sha256Hex(sid);
  const exp = Math.floor(now / 1000) + SESSION_TTL_SECONDS;
  return { sid, csrf, idHash, exp, window: { created_at: isoTime(now), expires_at: isoTime(exp * 1000) } };
}

/** The operator's session and its cookie. */
async function operatorSession(deps: Deps, sid: string, csrf: string, exp: number): Promise<{ cookie: string; session: Session }> {
  const session: Session = { role: "operator", org: null, via: null, csrf, sid };
  const cookie = await sign(deps.config.signingKeys, PREFIX, { v: 2, sid, org: null, exp });
  return { cookie, session };
}

/** Opens a session for the operator's ADMIN_TOKEN or an administrator token; null when neither. */
export async function signIn(deps: Deps, token: string): Promise<{ cookie: string; session: Session } | null> {
  const { sid, csrf, idHash, exp, window } = await newSession(deps.now());

  let session: Session | null = null;
  if (await constantTimeEqual(token, deps.config.adminToken)) {
    const fingerprint = await adminFingerprint(deps);
    await reach("directory", () =>
      directoryObject(deps).startSession({ id_hash: idHash, csrf, admin_fingerprint: fingerprint, ...window }),
    );
    session = { role: "operator", org: null, via: null, csrf, sid };
  } else {
    const org = organizationOfAdminToken(token);
    if (org === null) return null;
    const tokenHash = await sha256Hex(token);
    const opened = await reach("organization", () => organizationObject(deps, org).signIn(tokenHash, { id_hash: idHash, csrf, ...window }));
    if (!opened.ok) return null;
    session = { role: "org_admin", org, via: opened.value.admin_token_id, csrf, sid };
  }
  const cookie = await sign(deps.config.signingKeys, PREFIX, { v: 2, sid, org: session.org, exp });
  return { cookie, session };
}

/**
 * Mints a single-use sign-in ticket for the operator, valid `seconds` from now: the ticket is
 * answered once, and only its hash is kept, with the fingerprint of the ADMIN_TOKEN in force (a
 * rotation voids it).
 */
export async function mintSignInTicket(deps: Deps, seconds = SIGN_IN_TICKET_SECONDS): Promise<{ ticket: string; expires_at: string }> {
  const now = deps.now();
  const ticket = `${TICKET_PREFIX}${randomToken(32)}`;
  const [hash, fingerprint] = await Promise.all([sha256Hex(ticket), adminFingerprint(deps)]);
  const expires_at = isoTime(now + seconds * 1000);
  await reach("directory", () =>
    directoryObject(deps).mintSignInTicket({ hash, admin_fingerprint: fingerprint, created_at: isoTime(now), expires_at }),
  );
  return { ticket, expires_at };
}

export type TicketSignIn = { ok: true; cookie: string; session: Session } | { ok: false; reason: TicketRefusal };

/**
 * Redeems a sign-in ticket: the first redemption within its expiry, under the ADMIN_TOKEN it was
 * minted under, opens an operator session (the one signIn opens for ADMIN_TOKEN); any later one,
 * an expired or an unknown ticket opens nothing.
 */
export async function signInWithTicket(deps: Deps, ticket: string): Promise<TicketSignIn> {
  if (!TICKET_PATTERN.test(ticket)) return { ok: false, reason: "unknown" };
  const { sid, csrf, idHash, exp, window } = await newSession(deps.now());
  const [hash, fingerprint] = await Promise.all([sha256Hex(ticket), adminFingerprint(deps)]);
  const redeemed = await reach("directory", () =>
    directoryObject(deps).redeemSignInTicket(hash, { id_hash: idHash, csrf, admin_fingerprint: fingerprint, ...window }),
  );
  if (!redeemed.ok) return redeemed;
  return { ok: true, ...(await operatorSession(deps, sid, csrf, exp)) };
}

/** The live session a cookie refers to, or null when absent, forged, expired or ended. */
export async function resume(deps: Deps, cookie: string | undefined): Promise<Session | null> {
  if (cookie === undefined) return null;
  const now = deps.now();
  const opened = await open(deps.config.signingKeys, PREFIX, cookie, Reference, 2048);
  if (!opened.ok || now >= opened.value.exp * 1000) return null;
  const { sid, org } = opened.value;
  const idHash = await sha256Hex(sid);
  if (org === null) {
    const fingerprint = await adminFingerprint(deps);
    const live = await reach("directory", () => directoryObject(deps).session(idHash, fingerprint, now));
    return live ? { role: "operator", org: null, via: null, csrf: live.csrf, sid } : null;
  }
  const live = await reach("organization", () => organizationObject(deps, org).session(idHash, now));
  return live ? { role: "org_admin", org, via: live.admin_token_id, csrf: live.csrf, sid } : null;
}

/** Ends the session on the server: every copy of its cookie stops working. */
export async function signOut(deps: Deps, session: Session): Promise<void> {
  const idHash = await sha256Hex(session.sid);
  if (session.org === null) await reach("directory", () => directoryObject(deps).endSession(idHash));
  else {
    const org = session.org;
    await reach("organization", () => organizationObject(deps, org).signOut(idHash));
  }
}
