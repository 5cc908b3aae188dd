/**
 * Response headers every API response gets: API data is never cached by browsers or proxies
 * (tokens and secrets pass through it; RFC 6749 5.1 asks for no-store on token responses), and
 * content types are not sniffed. Also the one way middleware adds headers to a finished response.
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

const API_HEADERS = { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" } as const;

export const apiHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  setResponseHeaders(c, API_HEADERS);
};
