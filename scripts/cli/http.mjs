/**
 * The operator CLI's HTTP client: which keyway to talk to (--url, KEYWAY_URL, PORT), the operator
 * token (only from the environment, or .dev.vars for a loopback URL), one request with keyway's
 * error turned into one readable line (a refused connection with how to point the CLI at keyway),
 * and lists followed page by page with their cursors.
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { parseDevVars } from "../dev-vars.mjs";
import { MAX_PAGE, REQUEST_TIMEOUT_MS, RequestError, UsageError } from "./common.mjs";
import { clean, isObject } from "./output.mjs";
/** @typedef {import("./common.mjs").Item} Item */
/** @typedef {import("./common.mjs").Call} Call */

/**
 * The base URL without a trailing slash, from --url, KEYWAY_URL or the local default.
 * @param {string | boolean | undefined} flag
 */
export function baseUrl(flag) {
  const given = typeof flag === "string" ? flag : process.env.KEYWAY_URL || `http://127.0.0.1:${process.env.PORT || 8787}`;
  /** @type {URL} */
  let url;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(
      `not a URL: "${clean(given)}" (from ${typeof flag === "string" ? "--url" : "KEYWAY_URL or PORT"})`,
      undefined,
      false,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UsageError(`the URL must be http or https: ${clean(given)}`, undefined, false);
  // Credentials in the URL would be printed in every message that names it.
  if (url.username !== "" || url.password !== "") throw new UsageError("the URL must not carry a user name or password", undefined, false);
  if (url.search !== "" || url.hash !== "")
    throw new UsageError(`the URL must not have a query or fragment: ${clean(given)}`, undefined, false);
  if (url.protocol === "http:" && !isLoopback(url)) {
    process.stderr.write(`admin: warning: ADMIN_TOKEN goes to ${url.host} unencrypted (http); use https beyond this machine\n`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * Where the base URL came from, for the hint when nothing answers there (the same order as baseUrl).
 * @param {string | boolean | undefined} flag
 */
export function urlSource(flag) {
  if (typeof flag === "string") return "--url";
  if (process.env.KEYWAY_URL) return "KEYWAY_URL";
  return process.env.PORT ? `PORT=${clean(process.env.PORT)}` : "the default (PORT unset: 8787)";
}

/** @param {URL} url */
export function isLoopback(url) {
  const host = url.hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * ADMIN_TOKEN from the environment or, for a loopback URL, from ./.dev.vars: a local `npm start`
 * keeps it there, and reading it saves pasting it into the shell. A remote URL never gets the
 * local token, which would be the wrong secret sent to the wrong place.
 * @param {string} base
 * @returns {{ token: string, source: string }}
 */
export function adminToken(base) {
  const fromEnv = process.env.ADMIN_TOKEN;
  if (fromEnv) return { token: fromEnv, source: "the environment" };
  if (isLoopback(new URL(base))) {
    /** @type {string | undefined} */
    let text;
    try {
      text = readFileSync(".dev.vars", "utf8");
    } catch {
      text = undefined; // no .dev.vars here: fall through to the message below
    }
    const fromFile = text === undefined ? undefined : parseDevVars(text).ADMIN_TOKEN;
    if (fromFile) return { token: fromFile, source: "./.dev.vars" };
  }
  throw new UsageError(
    "ADMIN_TOKEN is not set. Set it in the environment without typing it on the command line, " +
      "e.g. `read -rs ADMIN_TOKEN && export ADMIN_TOKEN`; for a local npm start it is in .dev.vars.",
    undefined,
    false,
  );
}

/**
 * `source` says where the token came from, `urlSource` where the base URL did (urlSource()).
 * @typedef {{ base: string, token: string, source: string, urlSource?: string }} Client
 */

/**
 * Sends one request and returns the envelope's `data` and `_links`; throws RequestError with
 * keyway's developer_message and error code (and, on 401, a hint about ADMIN_TOKEN).
 * @param {Client} client
 * @param {Call} call
 * @returns {Promise<unknown>}
 */
export async function send(client, call) {
  return (await exchange(client, call)).data;
}

/**
 * @param {Client} client
 * @param {Call} call
 * @returns {Promise<{ data: unknown, next: string | undefined }>}
 */
export async function exchange(client, call) {
  const url = `${client.base}${call.path}`;
  /** @type {Response} */
  let res;
  try {
    res = await fetch(url, {
      method: call.method,
      headers: {
        Authorization: `Bearer ${client.token}`,
        Accept: "application/json",
        ...(call.body ? { "Content-Type": "application/json" } : {}),
      },
      ...(call.body ? { body: JSON.stringify(call.body) } : {}),
      // A redirect is reported rather than followed: it would carry the token somewhere else or
      // turn a POST into a GET.
      redirect: "manual",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const lines = [`admin: cannot reach keyway at ${client.base} (${networkReason(err)})`];
    // Nothing listens there: most often keyway is not started, or runs on another port or host.
    if (socketCode(err) === "ECONNREFUSED") {
      lines.push(
        `hint: the URL came from ${client.urlSource ?? "--url, KEYWAY_URL or PORT"}. Start keyway (\`npm start\` listens on $PORT, 8787 by default) or point the CLI at it: --url URL or KEYWAY_URL=URL for any keyway, or PORT=N for http://127.0.0.1:N (used when neither is given).`,
      );
    }
    throw new RequestError(lines);
  }
  const where = `${call.method} ${call.path}`;
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    const location = res.headers.get("location");
    throw new RequestError([
      `admin: ${where} answered ${res.status}, a redirect${location ? ` to ${clean(location)}` : ""}; give that URL with --url or KEYWAY_URL`,
    ]);
  }
  /** @type {unknown} */
  let envelope;
  try {
    envelope = await res.json();
  } catch {
    envelope = undefined;
  }
  if (!isObject(envelope) || !("data" in envelope)) {
    throw new RequestError([`admin: ${where} answered HTTP ${res.status} without a keyway envelope: is ${client.base} a keyway?`]);
  }
  if (!res.ok) {
    const message = typeof envelope.developer_message === "string" ? clean(envelope.developer_message) : "(no message)";
    const code = typeof envelope.error === "string" ? clean(envelope.error) : "no error code";
    const lines = [`admin: ${message} (${code}, HTTP ${res.status})`];
    if (res.status === 401) {
      lines.push(
        `hint: ADMIN_TOKEN (from ${client.source}) is wrong or missing for ${client.base}; check it is this deployment's operator token.`,
      );
    }
    if (res.status === 503 && call.method !== "GET") {
      lines.push("hint: a change answered 503 is recorded and still being applied; repeat the same command to confirm it.");
    }
    throw new RequestError(lines);
  }
  const links = isObject(envelope._links) ? envelope._links : {};
  const next = isObject(links.next) && typeof links.next.href === "string" ? links.next.href : undefined;
  return { data: envelope.data, next };
}

/**
 * Reads a list page by page until `limit` items or the last page. The cursor is taken out of
 * `_links.next` and sent to our own base URL, since behind a proxy the server's idea of its URL
 * may not be one this machine can reach.
 * @param {Client} client
 * @param {string} path
 * @param {number} limit
 * @returns {Promise<{ items: Item[], more: boolean }>}
 */
export async function readList(client, path, limit) {
  /** @type {Item[]} */
  const items = [];
  /** @type {string | undefined} */
  let cursor;
  for (;;) {
    const size = Math.min(MAX_PAGE, limit - items.length);
    const query = new URLSearchParams({ limit: String(size) });
    if (cursor !== undefined) query.set("cursor", cursor);
    const { data, next } = await exchange(client, { method: "GET", path: `${path}${path.includes("?") ? "&" : "?"}${query}` });
    if (!Array.isArray(data)) throw new RequestError([`admin: GET ${path} answered without a list`]);
    items.push(...data.filter(isObject));
    const nextCursor = next === undefined ? null : new URL(next).searchParams.get("cursor");
    if (nextCursor === null || nextCursor === cursor) return { items, more: false };
    if (items.length >= limit) return { items, more: true };
    cursor = nextCursor;
  }
}

/**
 * One line saying why a request could not be sent, from fetch's error (its cause carries the
 * socket error code; connecting to a name with several addresses nests them in `errors`).
 * @param {unknown} err
 */
export function networkReason(err) {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"))
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = err instanceof Error ? err.cause : undefined;
  const code = socketCode(err);
  const reasons = {
    ECONNREFUSED: "connection refused: is it running?",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host name lookup failed",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
  };
  if (code !== undefined) return Object.hasOwn(reasons, code) ? reasons[/** @type {keyof typeof reasons} */ (code)] : code;
  const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return clean(message.split("\n")[0] ?? "");
}

/**
 * The socket error code in fetch's error (ECONNREFUSED, ENOTFOUND, ...), if it carries one.
 * @param {unknown} err
 * @returns {string | undefined}
 */
export function socketCode(err) {
  const cause = err instanceof Error ? err.cause : undefined;
  const first = cause instanceof AggregateError ? cause.errors[0] : cause;
  return codeOf(cause) ?? codeOf(first);
}

/** @param {unknown} err @returns {string | undefined} */
export function codeOf(err) {
  return isObject(err) && typeof err.code === "string" ? err.code : undefined;
}
