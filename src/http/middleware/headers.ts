/**
 * Response headers: `X-Content-Type-Options: nosniff` on every response the Worker gives, whichever
 * part answers it (app.ts mounts `noSniff` outermost), and `Cache-Control: no-store` on every API
 * response (/v1, /admin): API data is never cached by browsers or proxies (tokens and secrets pass
 * through it; RFC 6749 5.1 asks for no-store on token responses). Also the one way middleware adds
 * headers to a finished response.
 */
import type { Context, Env, MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";

/**
 * Sets header fields on the response a handler already produced. Hono's `c.header` copies the
 * whole Response on every call once it is finalized; the responses we build have mutable
 * headers, so they are set in place, and only an immutable one (e.g. from fetch) is copied, once.
 */
export function setResponseHeaders<E extends Env>(c: Context<E>, fields: Record<string, string>): void {
  let headers = c.res.headers;
  try {
    for (const name in fields) headers.set(name, fields[name] as string);
  } catch {
    c.res = new Response(c.res.body, c.res);
    headers = c.res.headers;
    for (const name in fields) headers.set(name, fields[name] as string);
  }
}

/**
 * A browser that sniffs could take a JSON or text body that echoes part of the request (an error
 * naming the path, say) for HTML or script and run it; `nosniff` (Fetch Standard, "X-Content-Type-
 * Options") makes it keep the declared type. It is set here for every response, health checks,
 * metadata, 404s, 405s and error pages included, and says nothing about caching: each route keeps
 * its own Cache-Control.
 */
export const NO_SNIFF = { "X-Content-Type-Options": "nosniff" } as const;

export const noSniff: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  setResponseHeaders(c, NO_SNIFF);
};

export const API_HEADERS = { "Cache-Control": "no-store" } as const;

export const apiHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  setResponseHeaders(c, API_HEADERS);
};
