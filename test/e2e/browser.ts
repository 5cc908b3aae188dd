/**
 * Shared by the browser tests (the manager, the portal, /docs): the one Chromium of the browser
 * project (browser-server.ts), axe-core run inside the page so accessibility is checked by an
 * outside library at every impact level, and expectLaidOut, the walk's check of one page in light
 * and dark at 1280 and 390 px (axe, sideways scrolling, cut-off tables, row heights).
 */
import { readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, inject } from "vitest";
import { chromiumInstalled } from "./browser-server";
import { type Keyway, ROOT, sharedKeywayWithOwnDemo } from "./server";

export { chromiumInstalled };

/** Where the browser tests leave their pictures (docs/ within it: the sources of docs/screenshots/). */
export const SCREENSHOTS = join(ROOT, "test-results");

/**
 * Whether Chromium is installed; when it is not, says which tests are skipped and the command
 * that installs it, so a missing browser is never a silent pass.
 */
export function chromiumFor(tests: string): boolean {
  const installed = chromiumInstalled();
  if (!installed) console.warn(`${tests} skipped: Chromium not found; install it with: sudo apt-get install -y chromium`);
  return installed;
}

/**
 * What every browser file needs: the shared npm start with a demo organization of the file's own
 * (server.ts sharedKeywayWithOwnDemo) and a connection to the shared Chromium (none when it is not
 * installed, so the file's tests that need no browser still run). Registers the hooks that get
 * and close them; call it where those hooks belong (top level or a describe).
 */
export function browserFile(): { server(): Keyway; browser(): Browser } {
  let keyway: Keyway | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    await mkdir(join(SCREENSHOTS, "docs"), { recursive: true });
    keyway = await sharedKeywayWithOwnDemo();
    if (chromiumInstalled()) browser = await connectChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    server: () => {
      if (!keyway) throw new Error("keyway did not start");
      return keyway;
    },
    browser: () => {
      if (!browser) throw new Error("Chromium did not start");
      return browser;
    },
  };
}

/**
 * A connection to the project's one Chromium (started by the global setup). Closing it ends this
 * file's contexts and pages, not the browser the other files use.
 */
export function connectChromium(): Promise<Browser> {
  const endpoint = inject("chromium");
  if (endpoint === "") throw new Error("no shared Chromium: /usr/bin/chromium is not installed");
  return chromium.connect(endpoint);
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; html: string }[];
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Runs axe-core (WCAG 2.0/2.1/2.2 A and AA plus best practices) on the page as it is now and
 * returns every violation, whatever its impact, in a form that reads well in a failed assertion.
 * Pages with a strict CSP still allow it: the script is evaluated through the DevTools protocol,
 * not added as page content, so the page's CSP stays as strict as it is in production. The script
 * is evaluated once per document (a walk checks each page four times), and axe collects only the
 * violations (`resultTypes`: passes and the rest would be gathered for every node and dropped):
 * every rule still runs on every node.
 */
export async function axeViolations(page: Page): Promise<{ id: string; impact: string | null; help: string; targets: string[] }[]> {
  if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"] },
      resultTypes: ["violations"],
    });
    return result.violations;
  });
  return violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
}

export const WIDE = { width: 1280, height: 800 };
/** An iPhone 12-15's CSS width: the narrowest screen the manager and the portal are laid out for. */
export const NARROW = { width: 390, height: 844 };
/** No table row may be taller than this, at either width (issue 32: no tall blank bands). */
export const MAX_ROW_PX = 200;

/** The tallest table row seen by any walk of this process, reported once at the end of each suite. */
export const tallest = { px: 0, where: "" };

/**
 * What a person would call broken layout on the page as it is now: the document wider than the
 * window (sideways scrolling), table regions whose content is wider than they are (cut off or
 * scrolled), and the tallest visible table body row with where it is.
 */
async function layoutOf(page: Page): Promise<{ page: number; window: number; cutOff: string[]; row: { px: number; text: string } }> {
  return page.evaluate(() => {
    const cutOff: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>(".table-scroll, table")) {
      if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1) {
        cutOff.push(`${el.tagName.toLowerCase()}[${el.getAttribute("aria-label") ?? ""}] ${el.scrollWidth} > ${el.clientWidth}`);
      }
    }
    let row = { px: 0, text: "" };
    for (const tr of document.querySelectorAll<HTMLElement>("tbody tr")) {
      const px = tr.getBoundingClientRect().height;
      if (px > row.px) row = { px: Math.round(px), text: (tr.textContent ?? "").replace(/\s+/g, " ").trim().slice(0, 80) };
    }
    return { page: document.documentElement.scrollWidth, window: window.innerWidth, cutOff, row };
  });
}

/**
 * Whether the walks save a picture of every step (`KEYWAY_SCREENSHOTS=1`), as docs/screenshots/
 * is refreshed from. Encoding hundreds of full-page PNGs was most of the browser tests' CPU, and
 * a picture proves nothing a check does not, so by default only a failed check leaves one.
 */
export const SCREENSHOTS_WANTED = process.env.KEYWAY_SCREENSHOTS === "1";

/**
 * The page in light and dark (prefers-color-scheme), each at 1280 and at 390 px: no axe-core
 * violation at any impact (colour contrast included, so both schemes pass), the document no wider
 * than the window, no table region cut off or scrolling, no table row taller than MAX_ROW_PX.
 * `shoot` saves a full-page screenshot of a combination (suffixes `-390`, `-dark`): of each one
 * with KEYWAY_SCREENSHOTS=1, else of the one whose check failed. Leaves the page light at 1280 px.
 */
export async function expectLaidOut(page: Page, step: string, shoot: (suffix: string) => Promise<void>): Promise<void> {
  try {
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const size of [WIDE, NARROW]) {
        await page.setViewportSize(size);
        const where = `${step} at ${size.width} px, ${scheme}`;
        const suffix = `${size === NARROW ? "-390" : ""}${scheme === "dark" ? "-dark" : ""}`;
        if (SCREENSHOTS_WANTED) await shoot(suffix);
        try {
          expect(await axeViolations(page), `axe-core on ${where}`).toEqual([]);
          const layout = await layoutOf(page);
          expect(layout.page, `${where}: document width`).toBeLessThanOrEqual(layout.window);
          expect(layout.cutOff, `${where}: tables cut off`).toEqual([]);
          expect(layout.row.px, `${where}: tallest row (${layout.row.text})`).toBeLessThanOrEqual(MAX_ROW_PX);
          if (layout.row.px > tallest.px) {
            tallest.px = layout.row.px;
            tallest.where = `${where}: ${layout.row.text}`;
          }
        } catch (failed) {
          if (!SCREENSHOTS_WANTED) await shoot(suffix).catch(() => undefined);
          throw failed;
        }
      }
    }
  } finally {
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize(WIDE);
  }
}

/** A JSON call's status and envelope `data`. */
export async function json<T>(url: string, init: RequestInit): Promise<{ status: number; data: T }> {
  const res = await fetch(url, init);
  const body = (await res.json()) as { data?: T };
  return { status: res.status, data: body.data as T };
}

/**
 * The headers of a demo client that may burst: a new API key of the demo organization (50 a
 * second) and an access token of the demo's client credentials, for a walk's setup calls.
 */
export async function burstClient(
  keyway: { baseUrl: string; adminToken: string; demo: { organizationId: string; clientId: string; clientSecret: string } },
  name: string,
): Promise<Record<string, string>> {
  const { baseUrl: base, adminToken, demo } = keyway;
  const key = await json<{ api_key: string }>(`${base}/admin/v1/organizations/${demo.organizationId}/api-keys`, {
    method: "POST",
    headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name, limits: { per_second: 50, per_day: 1000 } }),
  });
  expect(key.status).toBe(201);
  const token = await json<{ access_token: string }>(`${base}/v1/oauth`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": key.data.api_key },
    body: JSON.stringify({ client_id: demo.clientId, client_secret: demo.clientSecret, grant_type: "client_credentials" }),
  });
  expect(token.status).toBe(200);
  return { "Content-Type": "application/json", "x-api-key": key.data.api_key, Authorization: `Bearer ${token.data.access_token}` };
}
