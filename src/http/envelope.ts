/**
 * The response envelope of spec section 2.3, used by every /v1 and /admin/v1 response:
 * `{response_status, developer_message, user_message, data, _links: {self: {href}}}`; errors add
 * `error` and carry `data: null` (http/errors.ts).
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./context";

export interface EnvelopeOptions {
  status?: ContentfulStatusCode;
  /** Absolute URL of the next page, for list responses. */
  next?: string | null;
  headers?: Record<string, string>;
  /** `_links.self` when it is not the request's URL (a created resource names itself). */
  self?: string;
}

export interface EnvelopeLinks {
  self: { href: string };
  next?: { href: string };
}

/** A success's body: the data with its status, the fixed messages and its links. */
export function envelope(status: number, data: unknown, links: EnvelopeLinks) {
  return { response_status: status, developer_message: "Success", user_message: "Success", data, _links: links };
}

export function respond(c: Context<AppEnv>, data: unknown, options: EnvelopeOptions = {}): Response {
  const status = options.status ?? 200;
  const links: EnvelopeLinks = { self: { href: options.self ?? c.req.url } };
  if (options.next) links.next = { href: options.next };
  return c.json(envelope(status, data, links), status, options.headers);
}

/** Lists: `data` is the array; `_links.next` points at the next page when there is one. */
export function respondPage(c: Context<AppEnv>, page: { items: unknown[]; next_cursor: string | null }): Response {
  let next: string | null = null;
  if (page.next_cursor !== null) {
    const url = new URL(c.req.url);
    url.searchParams.set("cursor", page.next_cursor);
    next = url.toString();
  }
  return respond(c, page.items, { next });
}

/** 201 with a Location header for the created resource (202: an accepted job, its progress there), which `_links.self` names too (not the collection it was posted to). */
export function created(c: Context<AppEnv>, data: unknown, location: string, status: 201 | 202 = 201): Response {
  return respond(c, data, { status, headers: { Location: location }, self: new URL(location, c.req.url).href });
}
