/**
 * A browser for the manager app's tests: a cookie jar over Set-Cookie headers that never follows
 * redirects, serves each request at an optional injected instant (and with optional bindings,
 * e.g. a rotated ADMIN_TOKEN), reads a form's CSRF token and signs in through the sign-in form.
 * One jar for every manager test, so each behaves like the same client.
 */
import { expect } from "vitest";
import { BASE, call, callAt } from "./helpers";

/** The manager's cookies, spelled out (not imported) so a renamed cookie fails the tests. */
export const SESSION = "__Host-kw_session";
export const LOGIN_CSRF = "__Host-kw_login_csrf";

/** What a browser sends with a form posted from a page of the same origin. */
export const SAME_ORIGIN: Record<string, string> = { Origin: BASE, "Sec-Fetch-Site": "same-origin" };

/** Set-Cookie lines (workerd implements getSetCookie; this types version does not declare it). */
export const setCookies = (res: Response): string[] => (res.headers as Headers & { getSetCookie(): string[] }).getSetCookie();

export class Browser {
  cookies = new Map<string, string>();
  /** Bindings to serve requests with (e.g. a rotated ADMIN_TOKEN); the test environment's by default. */
  bindings: Env | undefined;

  /** A browser signed in with `token` (the sign-in must succeed), at `now` if given. */
  static async signedIn(token: string, now?: number): Promise<Browser> {
    const b = new Browser();
    expect((await b.signIn(token, now)).status, "sign-in").toBe(303);
    return b;
  }

  /** CSRF token of the first form on a page. */
  static csrf(html: string): string {
    return /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  }

  get(path: string, now?: number): Promise<Response> {
    return this.send(path, { method: "GET" }, now);
  }

  /**
   * A form POST with the headers a browser sends with a form of this origin (its Origin and
   * `Sec-Fetch-Site: same-origin`, which hono/csrf checks); `headers` replaces them, e.g. to post
   * as another site's page would.
   */
  post(path: string, fields: Record<string, string>, now?: number, headers: Record<string, string> = SAME_ORIGIN): Promise<Response> {
    return this.send(
      path,
      {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(fields).toString(),
      },
      now,
    );
  }

  /** A multipart form POST (a file input's form), with the same-origin headers of `post`. */
  postMultipart(path: string, form: FormData, headers: Record<string, string> = SAME_ORIGIN): Promise<Response> {
    return this.send(path, { method: "POST", headers, body: form });
  }

  async signIn(token: string, now?: number): Promise<Response> {
    const page = await (await this.get("/manager/sign-in", now)).text();
    return this.post("/manager/sign-in", { csrf: Browser.csrf(page), token }, now);
  }

  async csrfOf(path: string): Promise<string> {
    return Browser.csrf(await (await this.get(path)).text());
  }

  private async send(path: string, init: RequestInit, now?: number): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set("Cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const request = { ...init, headers, redirect: "manual" as const };
    const res =
      now === undefined && this.bindings === undefined
        ? await call(path, request)
        : await callAt(now ?? Date.now(), path, request, this.bindings);
    for (const line of setCookies(res)) {
      const [pair = ""] = line.split(";");
      const [name = "", ...value] = pair.split("=");
      if (/max-age=0/i.test(line) || value.join("=") === "") this.cookies.delete(name);
      else this.cookies.set(name, value.join("="));
    }
    return res;
  }
}

/** The exact UTC time as every page writes it (views.tsx `when`), e.g. `2026-03-01 14:30:05 UTC`. */
export const exactTime = (iso: string): string => iso.replace("T", " ").replace(/\.\d{3}Z$/, " UTC");

/**
 * The opening of views.tsx's Time for `iso`: a <time> with the machine-readable instant and the
 * exact UTC time as its title (its text is relative to the request's time, so tests match this).
 */
export const timeTag = (iso: string): string => `<time datetime="${iso}" title="${exactTime(iso)}">`;

/** A URL as views.tsx's Url writes it: a <wbr> after each `/`, `?`, `&` and `=` (not between `//`). */
export const urlMarkup = (url: string): string => `<code class="url">${url.split(/(?<=[/?&=])(?!\/)/).join("<wbr>")}</code>`;
