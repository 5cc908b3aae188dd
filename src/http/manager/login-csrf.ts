/**
 * The sign-in form's anti-CSRF token, bound to the server (issue 22; OWASP CSRF Prevention Cheat
 * Sheet, "Login CSRF" and "Signed Double-Submit Cookie"). There is no session before sign-in, so
 * the form is protected by a double-submit pair: the cookie `__Host-kw_login_csrf` holds a 256-bit
 * random nonce, and the form's hidden field holds `kw_login_<kid>.<{v, n: nonce, iat}>.<HMAC>`,
 * signed with the service's signing keyring through lib/signed.ts (the same mechanism and keys as
 * the session cookie and access tokens; the distinct prefix is inside the MAC, so no such value
 * passes for one of those). A plain double-submit pair is bound to nothing on the server: whoever
 * can plant a cookie in the victim's browser picks both halves and signs the victim into the
 * attacker's account. Here the form half must carry our MAC over the cookie's nonce, so a made-up
 * pair is refused; the `__Host-` prefix (RFC 6265bis section 4.1.3.2) stops a sibling subdomain or a
 * plain-http man in the middle from planting the cookie at all, which closes the remaining route
 * (a pair fetched from us by the attacker and planted); and the pair lives LOGIN_CSRF_TTL_SECONDS.
 */
import * as z from "zod";
import { constantTimeEqual, randomToken } from "../../lib/crypto";
import type { VersionedKey } from "../../lib/keyring";
import { open, sign } from "../../lib/signed";

/** The cookie holding the nonce; `__Host-`: Secure, Path=/, no Domain (see routes.tsx). */
export const LOGIN_CSRF_COOKIE = "__Host-kw_login_csrf";
/** How long a sign-in form stays usable: 10 minutes, also the cookie's Max-Age. */
export const LOGIN_CSRF_TTL_SECONDS = 600;
/**
 * How far in the future a genuine token's issue time may be: a form served by one machine may be
 * posted to another whose clock is a little behind. Beyond it the token is treated as expired.
 */
const CLOCK_SKEW_SECONDS = 60;
const PREFIX = "kw_login_";
/** A genuine token is under 200 characters; anything much longer is refused before any HMAC. */
const MAX_TOKEN_LENGTH = 512;

const Payload = z.object({ v: z.literal(1), n: z.string().max(64), iat: z.number().int() });

/** What the sign-in route hands out: the cookie's nonce and the form's signed token. */
export interface LoginCsrf {
  nonce: string;
  token: string;
}

/** Why a sign-in form was refused; "expired" only for a token we signed. */
export type LoginCsrfCheck = "ok" | "expired" | "unverified";

/** A fresh pair for a sign-in form served at `nowMs`. */
export async function issueLoginCsrf(keys: VersionedKey[], nowMs: number): Promise<LoginCsrf> {
  const nonce = randomToken(32);
  const token = await sign(keys, PREFIX, { v: 1, n: nonce, iat: Math.floor(nowMs / 1000) });
  return { nonce, token };
}

/**
 * Checks a posted form token against the cookie's nonce: the MAC first (a made-up or tampered
 * token is "unverified" without its payload being trusted), then the nonce, compared in constant
 * time, then the age. A missing cookie or field is "unverified".
 */
export async function checkLoginCsrf(
  keys: VersionedKey[],
  nowMs: number,
  cookie: string | undefined,
  token: unknown,
): Promise<LoginCsrfCheck> {
  if (cookie === undefined || cookie === "" || typeof token !== "string") return "unverified";
  const opened = await open(keys, PREFIX, token, Payload, MAX_TOKEN_LENGTH);
  if (!opened.ok) return "unverified";
  if (!(await constantTimeEqual(opened.value.n, cookie))) return "unverified";
  const issuedMs = opened.value.iat * 1000;
  const fresh = nowMs - issuedMs < LOGIN_CSRF_TTL_SECONDS * 1000 && issuedMs <= nowMs + CLOCK_SKEW_SECONDS * 1000;
  return fresh ? "ok" : "expired";
}
