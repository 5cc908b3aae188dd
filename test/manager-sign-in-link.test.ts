/**
 * The operator's single-use manager sign-in links (issue 43 item 3; what `npm start` prints):
 * POST /admin/v1/manager-sign-in-links needs the operator token and answers `{url, expires_at}`;
 * the link's page (GET) only shows a button, its POST signs the operator in once with the session
 * the token sign-in opens; a second use, an expired, unknown or malformed ticket, one minted under
 * a rotated-away ADMIN_TOKEN and a form without its login-CSRF pair are refused with a page that
 * says so and no session. Only the ticket's SHA-256 is stored.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import { ADMIN_TOKEN, BASE, body, call, callAt } from "./helpers";
import { Browser, SESSION, setCookies } from "./manager-helpers";

const LINKS = "/admin/v1/manager-sign-in-links";
const URL_PATTERN = /^https:\/\/keyway\.test\/manager\/sign-in\/link\?ticket=(kw_signin_[A-Za-z0-9_-]{43})$/;

/** POST /admin/v1/manager-sign-in-links, at `now` if given. */
async function mint(payload?: unknown, now?: number, token = ADMIN_TOKEN): Promise<Response> {
  const init: RequestInit = {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, ...(payload !== undefined ? { "Content-Type": "application/json" } : {}) },
    ...(payload !== undefined ? { body: JSON.stringify(payload) } : {}),
  };
  return now === undefined ? call(LINKS, init) : callAt(now, LINKS, init);
}

/** A fresh link's path (origin removed) and its ticket. */
async function link(now?: number): Promise<{ path: string; ticket: string; expiresAt: string }> {
  const res = await mint(undefined, now);
  expect(res.status).toBe(200);
  const { data } = await body<{ url: string; expires_at: string }>(res);
  const ticket = URL_PATTERN.exec(data.url)?.[1];
  expect(ticket, data.url).toBeDefined();
  return { path: data.url.slice(BASE.length), ticket: ticket ?? "", expiresAt: data.expires_at };
}

/** Opens the link as a browser does: GET the page, then POST its form. */
async function open(b: Browser, path: string, now?: number): Promise<Response> {
  const page = await (await b.get(path, now)).text();
  const ticket = /name="ticket" value="([^"]*)"/.exec(page)?.[1] ?? "";
  return b.post("/manager/sign-in/link", { csrf: Browser.csrf(page), ticket }, now);
}

const hasSession = (res: Response) => setCookies(res).some((c) => c.startsWith(`${SESSION}=`) && !/max-age=0/i.test(c));

describe("POST /admin/v1/manager-sign-in-links", () => {
  it("needs the operator token", async () => {
    const res = await call(LINKS, { method: "POST" });
    expect(res.status).toBe(401);
    expect((await mint(undefined, undefined, "kw_live_oa_not-the-operator")).status).toBe(401);
  });

  it("answers a single-use link in the envelope, valid 5 minutes by default or as asked, 60 to 900 seconds", async () => {
    const now = Date.parse("2026-06-01T12:00:00.000Z");
    const res = await mint(undefined, now);
    expect(res.status).toBe(200);
    const answer = await body<{ url: string; expires_at: string }>(res);
    expect(answer).toMatchObject({ response_status: 200, data: { expires_at: "2026-06-01T12:05:00.000Z" } });
    expect(answer.data.url).toMatch(URL_PATTERN);
    expect(res.headers.get("cache-control")).toContain("no-store");
    expect((await body<{ expires_at: string }>(await mint({ expires_in: 900 }, now))).data.expires_at).toBe("2026-06-01T12:15:00.000Z");
    for (const expires_in of [59, 901, 1.5]) expect((await mint({ expires_in }, now)).status, String(expires_in)).toBe(400);
    // Two links never share a ticket.
    expect((await link()).ticket).not.toBe((await link()).ticket);
  });

  it("stores only the ticket's SHA-256", async () => {
    const { ticket } = await link();
    const hash = await sha256Hex(ticket);
    const rows = await runInDurableObject(env.DIRECTORY.getByName("directory"), (_i, state) =>
      state.storage.sql.exec<{ hash: string }>("SELECT * FROM operator_sign_in_tickets").toArray(),
    );
    expect(rows.some((r) => r.hash === hash)).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(ticket);
  });
});

describe("the sign-in link's page", () => {
  it("shows a Sign in button on GET and uses nothing up, however often it is fetched", async () => {
    const { path, ticket } = await link();
    const b = new Browser();
    for (let i = 0; i < 3; i++) {
      const res = await b.get(path);
      expect(res.status).toBe(200);
      expect(hasSession(res)).toBe(false);
      const html = await res.text();
      expect(html).toContain('action="/manager/sign-in/link"');
      expect(html).toContain(`name="ticket" value="${ticket}"`);
      expect(html).toMatch(/<button type="submit">Sign in<\/button>/);
    }
    expect((await open(b, path)).status).toBe(303);
  });

  it("signs the operator in once, with the session the token sign-in opens; a second use is refused with no session", async () => {
    const { path } = await link();
    const b = new Browser();
    const res = await open(b, path);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/manager/organizations");
    const cookie = setCookies(res).find((c) => c.startsWith(`${SESSION}=`)) ?? "";
    expect(cookie).toMatch(/; Max-Age=28800; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    const home = await b.get("/manager/organizations");
    expect(home.status).toBe(200);
    expect(await home.text()).toContain("Organizations");

    for (const again of [new Browser(), b]) {
      const second = await open(again, path);
      expect(second.status).toBe(410);
      expect(hasSession(second)).toBe(false);
      expect(await second.text()).toContain("This sign-in link has already been used");
    }
    // The first session lives on; a browser refused keeps none.
    expect((await b.get("/manager/organizations")).status).toBe(200);
  });

  it("refuses an expired link (410, says so) and signs nobody in", async () => {
    const t0 = Date.parse("2026-06-01T12:00:00.000Z");
    const { path } = await link(t0);
    const b = new Browser();
    const late = await open(b, path, t0 + 300_000);
    expect(late.status).toBe(410);
    expect(hasSession(late)).toBe(false);
    expect(await late.text()).toContain("This sign-in link has expired");
    expect((await b.get("/manager/organizations", t0 + 300_000)).status).toBe(303);
    // Within its 5 minutes, another link works.
    const { path: fresh } = await link(t0);
    expect((await open(new Browser(), fresh, t0 + 299_000)).status).toBe(303);
  });

  it("refuses unknown and malformed tickets with 410, and a link minted before ADMIN_TOKEN changed", async () => {
    for (const ticket of [`kw_signin_${"A".repeat(43)}`, "kw_signin_short", "", ADMIN_TOKEN]) {
      const res = await open(new Browser(), `/manager/sign-in/link?ticket=${encodeURIComponent(ticket)}`);
      expect(res.status, ticket).toBe(410);
      expect(hasSession(res)).toBe(false);
      expect(await res.text()).toContain("This sign-in link cannot be used");
    }
    const { path } = await link();
    const b = new Browser();
    b.bindings = { ...env, ADMIN_TOKEN: `${ADMIN_TOKEN}-rotated` };
    const rotated = await open(b, path, Date.now());
    expect(rotated.status).toBe(410);
    expect(hasSession(rotated)).toBe(false);
  });

  it("refuses a POST without the page's login-CSRF pair (403), leaving the link usable", async () => {
    const { path, ticket } = await link();
    const forged = await new Browser().post("/manager/sign-in/link", { csrf: "", ticket });
    expect(forged.status).toBe(403);
    expect(hasSession(forged)).toBe(false);
    expect(await forged.text()).toContain("The page could not be verified");
    expect((await open(new Browser(), path)).status).toBe(303);
  });
});
