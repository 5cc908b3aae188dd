/**
 * The people's pages for readers, dark and light, in Debian's Chromium against a real `npm start`
 * (server.ts; /docs itself is docs.browser.test.ts, split so the two run side by side). /docs and
 * GET /'s page are checked dark (Chromium's `colorScheme: "dark"`, which `prefers-color-scheme`
 * follows): a dark background and axe's contrast rules passing. The GraphQL explorer (GET
 * /explorer, GraphiQL from npm, served by the people's Worker) loads under its strict CSP with no
 * console error, takes the API key and an access token in its Headers tab, runs a `viewer` query
 * and shows its data, light and dark, axe-clean; opened from npm start's explorer link (the demo's
 * API key and client credentials in the URL fragment, issue 43), it runs the default `viewer`
 * query at once with nothing pasted, fetching its own access token, and the credentials never
 * reach a server's URL or the address bar. GET / gives a browser its page of links (each
 * followed) and `fetch` the JSON. Screenshots go to test-results/docs-<step>.png. Without
 * /usr/bin/chromium the tests are skipped with a one-line notice.
 */
import { join } from "node:path";
import type { BrowserContextOptions, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { axeViolations, browserFile, chromiumFor, SCREENSHOTS } from "./browser";
import { sharedKeyway, sleep } from "./server";

/** The demo API key allows one request per second. */
const RATE_LIMIT_PAUSE_MS = 1_100;
/** Darker than this relative luminance (0 black .. 1 white) counts as a dark background. */
const DARK_LUMINANCE = 0.05;

const hasChromium = chromiumFor("docs browser tests");

const { server, browser } = browserFile();

/** The relative luminance (WCAG) of a computed CSS colour `rgb(r, g, b)`. */
function luminance(rgb: string): number {
  const [r = 0, g = 0, b = 0] = (rgb.match(/[\d.]+/g) ?? []).map((c) => {
    const v = Number(c) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** The page's background colour (the body's, or the root element's where the body has none). */
const background = (page: Page) =>
  page.evaluate(() => {
    const body = getComputedStyle(document.body).backgroundColor;
    return body === "rgba(0, 0, 0, 0)" ? getComputedStyle(document.documentElement).backgroundColor : body;
  });

(hasChromium ? describe : describe.skip)("dark mode, GET / and the GraphQL explorer in Chromium", () => {
  /** A fresh page on `path`; script errors and CSP refusals (console errors) are collected. */
  async function open(path: string, options: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 }, ...options });
    const problems: string[] = [];
    context.on("weberror", (err) => problems.push(err.error().message));
    const page = await context.newPage();
    // A failed load is reported with its URL (the console's own line does not name it). Chromium
    // asks for /favicon.ico by itself, whenever it likes, and keyway has no icon: its 404 is no problem.
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) problems.push(message.text());
    });
    page.on("response", (response) => {
      if (response.status() >= 400 && new URL(response.url()).pathname !== "/favicon.ico")
        problems.push(`${response.status()} ${response.url()}`);
    });
    const res = await page.goto(`${server().baseUrl}${path}`);
    expect(res?.status(), path).toBe(200);
    return { page, problems };
  }

  it("/docs and GET /'s page follow a dark colour scheme: dark background, light text, axe-clean (contrast included)", async () => {
    for (const path of ["/docs", "/"]) {
      for (const colorScheme of ["dark", "light"] as const) {
        const { page, problems } = await open(path, { colorScheme });
        await page.evaluate(() => {
          for (const details of document.querySelectorAll("details")) details.open = true;
        });
        const bg = luminance(await background(page));
        const text = luminance(await page.evaluate(() => getComputedStyle(document.body).color));
        if (colorScheme === "dark") {
          expect(bg, `${path} background`).toBeLessThan(DARK_LUMINANCE);
          expect(text, `${path} text`).toBeGreaterThan(0.5);
        } else {
          expect(bg, `${path} background`).toBeGreaterThan(0.9);
        }
        // /docs in light at 1280 px with every details element open is docs.browser.test.ts's own
        // axe check (the same page, width and state): checked once, there. The rest is checked here.
        if (path !== "/docs" || colorScheme === "dark") expect(await axeViolations(page), `${path}, ${colorScheme}`).toEqual([]);
        expect(problems).toEqual([]);
        await page.screenshot({ path: join(SCREENSHOTS, `docs-${path === "/" ? "root" : "docs"}-${colorScheme}.png`) });
        await page.context().close();
      }
    }
  });

  it("GET / gives a browser a page whose links all lead somewhere, and a client the same links as JSON", async () => {
    const { page, problems } = await open("/");
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("keyway");
    const hrefs = await page
      .getByRole("listitem")
      .getByRole("link")
      .evaluateAll((links) => links.map((a) => a.getAttribute("href")));
    const json = (await (await fetch(`${server().baseUrl}/`, { headers: { Accept: "application/json" } })).json()) as {
      links: Record<string, { href: string }>;
    };
    expect(hrefs).toEqual(Object.values(json.links).map((l) => l.href));
    for (const href of ["/docs", "/v1/openapi.json", "/.well-known/oauth-authorization-server", "/manager", "/explorer", "/healthz"]) {
      expect(hrefs).toContain(href);
    }
    // Followed as a person would: each answers (the manager with its sign-in page; /v1/graphql
    // is an API endpoint, and GET without credentials is its 401).
    for (const href of hrefs) {
      if (href === null || href === "/v1/graphql") continue;
      const res = await page.goto(`${server().baseUrl}${href}`);
      expect(res?.status(), href).toBe(200);
    }
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("the GraphQL explorer runs a viewer query with the API key and an access token typed into its Headers tab, light and dark, axe-clean", async () => {
    const { demo, baseUrl } = server();
    for (const colorScheme of ["light", "dark"] as const) {
      const { page, problems } = await open("/explorer", { colorScheme });
      await page.locator(".graphiql-container").waitFor();
      expect(await axeViolations(page), `${colorScheme}, as served`).toEqual([]);
      // The template's placeholders are not sent: the answer says what to fill in.
      await page.getByRole("button", { name: "Execute query (Ctrl-Enter)" }).click();
      await expect.poll(() => responseText(page)).toContain("Put your API key and an access token in the Headers tab");

      const issued = await fetch(`${baseUrl}/v1/oauth/token`, {
        method: "POST",
        headers: { "x-api-key": demo.apiKey, "Content-Type": "application/json" },
        body: JSON.stringify({ grant_type: "client_credentials", client_id: demo.clientId, client_secret: demo.clientSecret }),
      });
      expect(issued.status).toBe(200);
      const { access_token: token } = (await issued.json()) as { access_token: string };
      await sleep(RATE_LIMIT_PAUSE_MS);

      // Typed over the template, as a person pastes them.
      await page.getByRole("textbox", { name: "Headers" }).focus();
      await page.keyboard.press("ControlOrMeta+A");
      await page.keyboard.insertText(JSON.stringify({ "x-api-key": demo.apiKey, Authorization: `Bearer ${token}` }, null, 2));
      await page.getByRole("button", { name: "Execute query (Ctrl-Enter)" }).click();
      await expect.poll(() => responseText(page)).toContain(demo.organizationId);
      const answer = JSON.parse(await responseText(page)) as { data: { viewer: { organizationId: string; clientId: string } } };
      expect(answer.data.viewer).toMatchObject({ organizationId: demo.organizationId, clientId: demo.clientId });

      // The schema, asked with the same headers, fills the documentation explorer.
      await sleep(RATE_LIMIT_PAUSE_MS);
      await page.getByRole("button", { name: "Re-fetch GraphQL schema" }).click();
      await page.getByRole("button", { name: "Show Documentation Explorer" }).click();
      await expect(
        page.locator(".graphiql-doc-explorer").getByRole("link", { name: "Query", exact: true }).waitFor(),
      ).resolves.toBeUndefined();

      expect(luminance(await background(page)) < DARK_LUMINANCE, `${colorScheme} background`).toBe(colorScheme === "dark");
      expect(await axeViolations(page), `${colorScheme}, after the query`).toEqual([]);
      expect(problems).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOTS, `docs-explorer-${colorScheme}.png`) });
      await page.context().close();
      await sleep(RATE_LIMIT_PAUSE_MS);
    }
  });

  it("the GraphQL explorer opened from npm start's link runs the default viewer query with no token pasted", async () => {
    // The link npm start printed carries the demo it seeded (only read here), not this file's own.
    const { demo, baseUrl, output } = sharedKeyway();
    const link = new RegExp(`  GraphQL   (${baseUrl}/explorer#\\S+)\n`).exec(output)?.[1];
    expect(link, output).toBeDefined();
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    const requested: string[] = [];
    context.on("weberror", (err) => problems.push(err.error().message));
    context.on("request", (request) => requested.push(`${request.method()} ${request.url()}`));
    const page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) problems.push(message.text());
    });
    await page.goto(link ?? "");
    await page.locator(".graphiql-container").waitFor();
    // The fragment is gone from the address bar, and the page says who it speaks for.
    expect(page.url()).toBe(`${baseUrl}/explorer`);
    await expect.poll(() => page.locator("#auth-status").textContent()).toContain(`Signed in as client ${demo.clientId}`);
    // Signed in, the page no longer asks for what it already sends.
    expect(await page.locator("#explorer-help").textContent()).toMatch(/^Signed in: run a query/);
    expect(await page.locator("#explorer-help").textContent()).not.toContain("Put your API key");

    // The default query, as served, runs at once: nothing typed into the Headers tab.
    await page.getByRole("button", { name: "Execute query (Ctrl-Enter)" }).click();
    await expect.poll(() => responseText(page)).toContain(demo.organizationId);
    const answer = JSON.parse(await responseText(page)) as { data: { viewer: { organizationId: string; clientId: string } } };
    expect(answer.data.viewer).toMatchObject({ organizationId: demo.organizationId, clientId: demo.clientId });

    // A reload (the fragment gone) keeps working from this tab's copy, with the token it has.
    await page.reload();
    await page.locator(".graphiql-container").waitFor();
    await page.getByRole("button", { name: "Execute query (Ctrl-Enter)" }).click();
    await expect.poll(() => responseText(page)).toContain(demo.organizationId);

    // The credentials went to POST /v1/oauth's body only: never in a URL the browser requested.
    expect(requested.filter((r) => r.startsWith("POST ") && r.endsWith("/v1/oauth")).length).toBeGreaterThanOrEqual(1);
    for (const secret of [demo.clientSecret, demo.apiKey]) {
      expect(requested.filter((r) => r.includes(secret) || r.includes(encodeURIComponent(secret)))).toEqual([]);
    }
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, "docs-explorer-signed-in.png") });
    await context.close();
  });
});

/** The text of GraphiQL's response pane (a read-only CodeMirror 5 editor). */
const responseText = (page: Page): Promise<string> =>
  page.evaluate(() => {
    const editor = document.querySelector(".result-window .CodeMirror") as (Element & { CodeMirror?: { getValue(): string } }) | null;
    return editor?.CodeMirror?.getValue() ?? "";
  });
