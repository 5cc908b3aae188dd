/**
 * What the manager's browser tests share (manager.browser.test.ts, manager-walk.browser.test.ts,
 * manager-insight.browser.test.ts): a file's own demo tenant on the shared npm start, a
 * connection to the shared Chromium, signing in, and the walk's page check (axe-core and layout in
 * light and dark at 1280 and 390 px, browser.ts expectLaidOut). The tests are three files so that
 * they run side by side; each file owns its organization.
 */
import { join } from "node:path";
import type { BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { browserFile, chromiumFor, expectLaidOut, MAX_ROW_PX, SCREENSHOTS, SCREENSHOTS_WANTED, tallest, WIDE } from "./browser";

/** The default rate limit is one request per second per API key. */
export const RATE_LIMIT_PAUSE_MS = 1_100;

export const hasChromium = chromiumFor("manager browser tests");

export interface Envelope<T> {
  response_status?: number;
  developer_message?: string;
  data?: T;
}

export async function api<T>(url: string, init: RequestInit): Promise<{ status: number; body: Envelope<T> }> {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as Envelope<T> };
}

/** A full-page picture of a step, with KEYWAY_SCREENSHOTS=1 (browser.ts SCREENSHOTS_WANTED). */
export async function screenshot(page: Page, step: string): Promise<void> {
  if (SCREENSHOTS_WANTED) await shoot(page, step);
}

async function shoot(page: Page, step: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `manager-${step}.png`), fullPage: true });
}

/**
 * The main pages, as docs/manager.md shows them (docs/screenshots/): a walk's step and the name of
 * its picture, taken at the viewport's size (light at both widths; dark where `dark` is set),
 * scrolled to the heading `from` when the part worth showing is not at the top.
 */
const DOC_SHOTS: Record<string, { name: string; dark?: true; from?: string }> = {
  "walk-overview": { name: "manager-overview" },
  "walk-organization-settings": { name: "manager-organization" },
  "walk-client-credentials": { name: "manager-client-credentials" },
  "walk-api-keys": { name: "manager-api-keys" },
  "walk-audit-log": { name: "manager-audit-log" },
  "insight-webhooks": { name: "manager-webhooks" },
  "insight-failing-endpoint": { name: "manager-webhook", dark: true, from: "Traffic" },
  "insight-failed-delivery": { name: "manager-delivery", from: "Attempts" },
};

/**
 * The page as it is now, in light and dark at 1280 and 390 px (browser.ts expectLaidOut): no
 * axe-core violation at any impact, no sideways scrolling, no table cut off, no table row taller
 * than 200 px. Leaves a full-page screenshot of each (`-390`, `-dark` suffixes), and for the main
 * pages (DOC_SHOTS) a viewport-sized one in test-results/docs/ for docs/screenshots/.
 */
export async function expectAccessible(page: Page, step: string): Promise<void> {
  const doc = DOC_SHOTS[step];
  await expectLaidOut(page, step, async (suffix) => {
    await shoot(page, `${step}${suffix}`);
    if (SCREENSHOTS_WANTED && doc && (doc.dark || !suffix.endsWith("-dark"))) {
      if (doc.from)
        await page
          .getByRole("heading", { level: 2, name: doc.from })
          .first()
          .evaluate((h) => h.scrollIntoView());
      await page.screenshot({
        path: join(SCREENSHOTS, "docs", `${doc.name}${suffix === "" ? "-1280" : suffix === "-dark" ? "-1280-dark" : suffix}.png`),
      });
      await page.evaluate(() => window.scrollTo(0, 0));
    }
  });
}

export async function heading(page: Page): Promise<string> {
  return ((await page.getByRole("heading", { level: 1 }).textContent()) ?? "").trim();
}

/** The current URL's path and query, which is what the app's redirects decide. */
export function where(page: Page): string {
  const url = new URL(page.url());
  return `${url.pathname}${url.search}`;
}

/** Describes the focused element for the keyboard test: `tag#id` for fields, `tag:text` otherwise. */
export function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (el === null || el === document.body) return "body";
    const tag = el.tagName.toLowerCase();
    return tag === "input" ? `input#${el.id}` : `${tag}:${(el.textContent ?? "").trim()}`;
  });
}

/** One file's session: registers its beforeAll and afterAll; call it at the top of the file's describe. */
export function managerSession() {
  const { server, browser } = browserFile();
  /**
   * npm start's own http://127.0.0.1:<port>. The manager's cookies are `__Host-` cookies (Secure,
   * Path=/, no Domain), and Chromium stores them over plain http here because 127.0.0.1 (like
   * localhost) counts as a potentially trustworthy origin; the first test checks that they were.
   */
  let base = "";

  async function newContext(options: BrowserContextOptions = {}): Promise<BrowserContext> {
    return browser().newContext({ viewport: WIDE, ...options });
  }

  /** Opens /manager signed out, follows the redirect to the sign-in page and signs in with `token`. */
  async function signIn(page: Page, token: string): Promise<void> {
    await page.goto(`${base}/manager`);
    expect(where(page)).toBe("/manager/sign-in");
    await page.getByLabel("Administrator token").fill(token);
    const [answer] = await Promise.all([
      page.waitForResponse((res) => res.request().method() === "POST" && new URL(res.url()).pathname === "/manager/sign-in"),
      page.getByRole("button", { name: "Sign in" }).click(),
    ]);
    expect(answer.status(), "sign-in answer").toBe(303);
    await page.waitForURL((url) => url.pathname !== "/manager/sign-in");
  }

  /** Signs the operator in and creates client credentials for the demo user; the page is left showing the secret. */
  async function newCredentialsPage(context: BrowserContext): Promise<{ page: Page; secret: string }> {
    const { demo, adminToken } = server();
    const page = await context.newPage();
    await signIn(page, adminToken);
    await page.goto(`${base}/manager/organizations/${demo.organizationId}/users/${demo.userId}/client-credentials`);
    await page.getByLabel("Name").fill("Known defects check");
    await page.getByRole("button", { name: "Create client credentials" }).click();
    await page.getByRole("heading", { level: 1, name: "New client credentials" }).waitFor();
    return { page, secret: await page.getByLabel("client_secret", { exact: true }).inputValue() };
  }

  beforeAll(() => {
    base = server().baseUrl;
  });

  afterAll(() => {
    console.info(`manager walk: tallest table row ${tallest.px} px (limit ${MAX_ROW_PX}) at ${tallest.where}`);
  });

  return {
    server,
    newContext,
    signIn,
    newCredentialsPage,
    get base() {
      return base;
    },
  };
}
