/**
 * Security headers for every HTML page (the manager app, /docs), from Hono's `secure-headers`:
 * a Content-Security-Policy whose only allowed inline style and script carry a nonce that is
 * fresh on every response, framing refused, no referrer, no sniffing, HSTS, cross-origin
 * isolation of the page, and `Cache-Control: no-store` (a cached copy would reuse the nonce).
 * The nonce is 144 random bits in base64url, so it sits in an HTML attribute unescaped; pages
 * read it with `pageNonce(c)`.
 */
import type { Context, Env, MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";
import { randomToken } from "../../lib/crypto";
import { setResponseHeaders } from "./headers";

/** A CSP directive's source: a fixed keyword or URL, or this response's nonce. */
export const NONCE = "nonce";
export type CspSource = string | typeof NONCE;
/** CSP directives in the order they are written, e.g. `{ defaultSrc: ["'none'"], scriptSrc: [NONCE] }`. */
export type Csp = Partial<
  Record<
    "defaultSrc" | "scriptSrc" | "styleSrc" | "fontSrc" | "imgSrc" | "connectSrc" | "formAction" | "frameAncestors" | "baseUri",
    CspSource[]
  >
>;

/** This response's nonce, made on first use (by the CSP header or the page, whichever asks first). */
export function pageNonce(c: Context): string {
  let nonce = c.get("secureHeadersNonce");
  if (nonce === undefined) {
    nonce = randomToken(18);
    c.set("secureHeadersNonce", nonce);
  }
  return nonce;
}

export function htmlSecurity<E extends Env>(csp: Csp): MiddlewareHandler<E> {
  const contentSecurityPolicy = Object.fromEntries(
    Object.entries(csp).map(([directive, sources]) => [
      directive,
      (sources ?? []).map((source) => (source === NONCE ? (c: Context) => `'nonce-${pageNonce(c)}'` : source)),
    ]),
  );
  const headers = secureHeaders({ contentSecurityPolicy, xFrameOptions: "DENY", referrerPolicy: "no-referrer" });
  return async (c, next) => {
    await headers(c, next);
    setResponseHeaders(c, { "Cache-Control": "no-store" });
  };
}
