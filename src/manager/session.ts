/**
 * Manager app sessions: a signed, expiring cookie `kw_session` (HttpOnly, Secure,
 * SameSite=Strict) holding who signed in (the operator, or an organization's administrator) and
 * a per-session CSRF token that every form must echo. The MAC uses the access-token keys with a
 * distinct prefix, so a session can never pass as an access token or the reverse.
 */
import type { VersionedKey } from "../config";
import * as z from "zod";
import { hmacKey, randomToken } from "../lib/crypto";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "../lib/encoding";

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

function key(k: VersionedKey): Promise<CryptoKey> {
  return hmacKey(k.raw, `session:${k.kid}:${base64UrlEncode(k.raw)}`);
}

export function newSession(role: Session["role"], org: string | null, via: string | null, nowMs: number): Session {
  return { v: 1, role, org, via, csrf: randomToken(24), exp: Math.floor(nowMs / 1000) + SESSION_TTL_SECONDS };
}

export async function sealSession(keys: VersionedKey[], session: Session): Promise<string> {
  const k = keys[0];
  if (k === undefined) throw new Error("no signing key");
  const input = `${PREFIX}${k.kid}.${base64UrlEncode(encodeUtf8(JSON.stringify(session)))}`;
  const mac = await crypto.subtle.sign("HMAC", await key(k), encodeUtf8(input));
  return `${input}.${base64UrlEncode(new Uint8Array(mac))}`;
}

/** The session in a cookie value, or null when absent, forged, malformed or expired. */
export async function openSession(keys: VersionedKey[], value: string | undefined, nowMs: number): Promise<Session | null> {
  if (value === undefined || value.length > 2048) return null;
  const match = /^kw_session_([A-Za-z0-9-]{1,32})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return null;
  const [, kid, payload, macText] = match as unknown as [string, string, string, string];
  const k = keys.find((candidate) => candidate.kid === kid);
  const mac = base64UrlDecode(macText);
  if (k === undefined || mac === null) return null;
  if (!(await crypto.subtle.verify("HMAC", await key(k), mac, encodeUtf8(`${PREFIX}${kid}.${payload}`)))) return null;
  try {
    const session = Session.parse(JSON.parse(decodeUtf8(base64UrlDecode(payload) ?? new Uint8Array()) ?? ""));
    return nowMs < session.exp * 1000 ? session : null;
  } catch {
    return null;
  }
}

/** Whether a session may act on an organization (the operator may act on all). */
export const canAccess = (session: Session, orgId: string): boolean => session.role === "operator" || session.org === orgId;
