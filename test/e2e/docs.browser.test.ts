/**
 * The API description as outsiders see it, against a real `npm start` (server.ts): the served
 * /v1/openapi.json is checked by an independent validator (Redocly CLI's `lint` with its
 * recommended ruleset: no error and no warning), and /docs is driven in Debian's Chromium through
 * playwright-core: axe-core finds no violation at any impact (every details element open too),
 * the table of contents reaches every tag section with JavaScript off, nothing overflows
 * sideways on a 390 px wide screen, and "Try it" carries the access token from the token
 * endpoint into /v1/me's request without it being typed (and an operator's new API key and client
 * credential into the requests that use them). /docs and GET /'s page are also checked dark
 * (Chromium's `colorScheme: "dark"`, which `prefers-color-scheme` follows): a dark background and
 * axe's contrast rules passing. The GraphQL explorer (GET /explorer, GraphiQL from npm, served by
 * the people's Worker) loads under its strict CSP with no console error, takes the API key and
 * an access token in its Headers tab, runs a `viewer` query and shows its data, light and dark,
 * axe-clean; opened from npm start's explorer link (the demo's API key and client credentials in
 * the URL fragment, issue 43), it runs the default `viewer` query at once with nothing pasted,
 * fetching its own access token, and the credentials never reach a server's URL or the address
 * bar. GET / gives a browser its page of links (each followed) and `fetch` the JSON.
 * Screenshots go to test-results/docs-<step>.png for a person to look at. Without /usr/bin/chromium the browser
 * tests are skipped with a one-line notice; the Redocly check still runs.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeViolations, chromiumInstalled, launchChromium } from "./browser";
import { type Keyway, ROOT, sleep, startKeyway } from "./server";

const SCREENSHOTS = join(ROOT, "test-results");
/** The demo API key allows one request per second. */
const RATE_LIMIT_PAUSE_MS = 1_100;
/** Darker than this relative luminance (0 black .. 1 white) counts as a dark background. */
const DARK_LUMINANCE = 0.05;
const PHONE = { width: 390, height: 844 };

const hasChromium = chromiumInstalled();
if (!hasChromium) console.warn("docs browser tests skipped: Chromium not found; install it with: sudo apt-get install -y chromium");

interface OpenApi {
  tags: { name: string }[];
  paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
  webhooks: Record<string, Record<string, { operationId: string; tags: string[] }>>;
}

interface RedoclyReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

/** Runs Redocly CLI under this Node (not whatever `node` is on PATH), offline and without telemetry. */
function redocly(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const cli = join(ROOT, "node_modules/@redocly/cli/bin/cli.js");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { cwd, env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

let keyway: Keyway | undefined;
const server = (): Keyway => {
  if (!keyway) throw new Error("keyway did not start");
  return keyway;
};

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  keyway = await startKeyway();
});

afterAll(async () => {
  await keyway?.stop();
});

describe("GET /v1/openapi.json, checked by Redocly CLI", () => {
  it("passes `redocly lint` with the recommended ruleset: exit code 0, no error, no warning", async () => {
    const res = await fetch(`${server().baseUrl}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const dir = await mkdtemp(join(tmpdir(), "keyway-openapi-"));
    try {
      await writeFile(join(dir, "openapi.json"), await res.text());
      // No redocly.yaml is looked up in the temporary directory; the ruleset is named outright.
      const run = await redocly(["lint", "openapi.json", "--extends", "recommended", "--format", "json"], dir);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as RedoclyReport;
      const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
      expect(problems).toEqual([]);
      expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

(hasChromium ? describe : describe.skip)("/docs in Chromium", () => {
  let browser: Browser | undefined;
  let doc: OpenApi;

  beforeAll(async () => {
    browser = await launchChromium();
    doc = (await (await fetch(`${server().baseUrl}/v1/openapi.json`)).json()) as OpenApi;
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** A fresh page on /docs; script errors and CSP refusals (console errors) are collected. */
  async function openDocs(options: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
    if (!browser) throw new Error("Chromium did not start");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
    const problems: string[] = [];
    context.on("weberror", (err) => problems.push(err.error().message));
    const page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    const res = await page.goto(`${server().baseUrl}/docs`);
    expect(res?.status()).toBe(200);
    return { page, problems };
  }

  const openAllDetails = (page: Page) =>
    page.evaluate(() => {
      for (const details of document.querySelectorAll("details")) details.open = true;
    });

  const horizontalOverflow = (page: Page) =>
    page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));

  it("has no axe-core violation at any impact, wide or 390 px, with every details element closed or open", async () => {
    for (const viewport of [{ width: 1280, height: 900 }, PHONE]) {
      const { page, problems } = await openDocs({ viewport });
      expect(await axeViolations(page), `${viewport.width} px, as served`).toEqual([]);
      await openAllDetails(page);
      expect(await axeViolations(page), `${viewport.width} px, details open`).toEqual([]);
      expect(problems).toEqual([]);
      await page.context().close();
    }
  });

  it("links from the contents to every tag section and every operation, and the links work without JavaScript", async () => {
    const { page } = await openDocs({ javaScriptEnabled: false });
    const nav = page.getByRole("navigation", { name: "Contents" });
    const operations = [...Object.values(doc.paths), ...Object.values(doc.webhooks)].flatMap((item) => Object.values(item));
    for (const op of operations) {
      await expect(nav.locator(`a[href="#${op.operationId}"]`).count(), op.operationId).resolves.toBe(1);
    }
    expect(doc.tags.length).toBeGreaterThan(5);
    for (const tag of doc.tags) {
      const link = nav.getByRole("link", { name: tag.name, exact: true });
      const href = (await link.getAttribute("href")) ?? "";
      expect(href, tag.name).toMatch(/^#tag-/);
      await link.click();
      await page.waitForURL((url) => url.hash === href);
      const heading = page.getByRole("heading", { level: 2, name: tag.name, exact: true });
      expect(await heading.getAttribute("id")).toBe(href.slice(1));
      // The jump really happened: the section's heading is now at the top of the viewport.
      const top = await heading.evaluate((el) => el.getBoundingClientRect().top);
      expect(top, tag.name).toBeGreaterThanOrEqual(0);
      expect(top, tag.name).toBeLessThan(100);
      // Every operation of the tag is in its section.
      const section = page.locator("section", { has: heading });
      for (const op of operations.filter((o) => o.tags[0] === tag.name)) {
        await expect(section.locator(`article h3[id="${op.operationId}"]`).count(), op.operationId).resolves.toBe(1);
      }
    }
    await page.screenshot({ path: join(SCREENSHOTS, "docs-no-javascript.png") });
    await page.context().close();
  });

  it("does not overflow sideways on a 390 px wide screen, with every details element open and a Try-it answer shown", async () => {
    const { page, problems } = await openDocs({ viewport: PHONE, isMobile: true, hasTouch: true });
    expect(await horizontalOverflow(page)).toMatchObject({ innerWidth: PHONE.width });
    const closed = await horizontalOverflow(page);
    expect(closed.scrollWidth, "as served").toBeLessThanOrEqual(closed.innerWidth);
    await openAllDetails(page);
    // A public operation's answer, so the demo key's rate limit is not spent here.
    const form = page.locator("form.try", { has: page.getByRole("group", { name: "Try GET /.well-known/oauth-authorization-server" }) });
    await form.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => form.getByRole("status").textContent()).toMatch(/^200 /);
    const open = await horizontalOverflow(page);
    expect(open.scrollWidth, "details open, answer shown").toBeLessThanOrEqual(open.innerWidth);
    expect(problems).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, "docs-390px.png") });
    await page.context().close();
  });

  it("carries the access token from the token endpoint's Try-it into /v1/me's, which then succeeds without typing it", async () => {
    const { demo } = server();
    const { page, problems } = await openDocs();
    const tryForm = (legend: string) => page.locator("form.try", { has: page.getByRole("group", { name: legend, exact: true }) });
    const answer = async (form: ReturnType<typeof tryForm>) => {
      const text = (await form.getByRole("region").textContent()) ?? "";
      return JSON.parse(text.slice(text.indexOf("\n\n") + 2)) as Record<string, unknown>;
    };
    await page.getByLabel("API key (x-api-key)").fill(demo.apiKey);
    const token = page.getByLabel("Access token (Bearer, /v1)");
    await expect(token.inputValue()).resolves.toBe("");

    // The plain RFC 6749 endpoint (the oauth2 scheme's tokenUrl), then the enveloped one.
    const credentials = JSON.stringify({ grant_type: "client_credentials", client_id: demo.clientId, client_secret: demo.clientSecret });
    const me = tryForm("Try GET /v1/me");
    let previous = "";
    const tokenIds = new Set<unknown>();
    for (const legend of ["Try POST /v1/oauth/token", "Try POST /v1/oauth"]) {
      const form = tryForm(legend);
      await form.getByLabel("Body (JSON)").fill(credentials);
      await form.getByRole("button", { name: "Send" }).click();
      await expect.poll(() => form.getByRole("status").textContent(), legend).toMatch(/^200 OK\. Carried forward: access token\.$/);
      const body = await answer(form);
      const issued = (legend.endsWith("/token") ? body.access_token : (body.data as Record<string, unknown>).access_token) as string;
      expect(issued).toMatch(/^kw_at_/);
      expect(issued).not.toBe(previous);
      await expect(token.inputValue(), legend).resolves.toBe(issued);
      previous = issued;

      await sleep(RATE_LIMIT_PAUSE_MS);
      await me.getByRole("button", { name: "Send" }).click();
      await expect.poll(() => me.getByRole("status").textContent(), `/v1/me after ${legend}`).toMatch(/^200 OK/);
      const who = (await answer(me)).data as Record<string, unknown>;
      expect(who).toMatchObject({ organization_id: demo.organizationId, client_id: demo.clientId, api_key_id: demo.apiKeyId });
      tokenIds.add((who.token as Record<string, unknown>).id);
      await sleep(RATE_LIMIT_PAUSE_MS);
    }
    // Each /v1/me call spoke for the token issued just before it.
    expect(tokenIds.size).toBe(2);
    expect(problems).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, "docs-try-it.png") });
    await page.context().close();
  });

  it("carries a new API key and client credential from the operator's Try-it answers, so only the operator token is typed", async () => {
    const { demo, adminToken } = server();
    const { page, problems } = await openDocs();
    const tryForm = (legend: string) => page.locator("form.try", { has: page.getByRole("group", { name: legend, exact: true }) });
    const data = async (form: ReturnType<typeof tryForm>) => {
      const text = (await form.getByRole("region").textContent()) ?? "";
      return (JSON.parse(text.slice(text.indexOf("\n\n") + 2)) as { data: Record<string, unknown> }).data;
    };
    await page.getByLabel("Operator token (Bearer, /admin/v1)").fill(adminToken);

    const createKey = tryForm("Try POST /admin/v1/organizations/{org}/api-keys");
    await createKey.getByLabel("org (path)").fill(demo.organizationId);
    await createKey.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => createKey.getByRole("status").textContent()).toBe("201 Created. Carried forward: API key.");
    const key = await data(createKey);
    await expect(page.getByLabel("API key (x-api-key)").inputValue()).resolves.toBe(key.api_key);

    const createCredential = tryForm("Try POST /admin/v1/organizations/{org}/users/{user}/client-credentials");
    await createCredential.getByLabel("org (path)").fill(demo.organizationId);
    await createCredential.getByLabel("user (path)").fill(demo.userId);
    await createCredential.getByRole("button", { name: "Send" }).click();
    await expect
      .poll(() => createCredential.getByRole("status").textContent())
      .toBe("201 Created. Carried forward: client credentials (into the token requests' bodies).");
    const credential = await data(createCredential);

    // Nothing typed into the token request: its body now names the new credential.
    const token = tryForm("Try POST /v1/oauth");
    expect(JSON.parse(await token.getByLabel("Body (JSON)").inputValue())).toMatchObject({
      client_id: credential.client_id,
      client_secret: credential.client_secret,
    });
    await token.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => token.getByRole("status").textContent()).toBe("200 OK. Carried forward: access token.");
    await sleep(RATE_LIMIT_PAUSE_MS);
    const me = tryForm("Try GET /v1/me");
    await me.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => me.getByRole("status").textContent()).toMatch(/^200 OK/);
    expect(await data(me)).toMatchObject({ organization_id: demo.organizationId, client_id: credential.client_id, api_key_id: key.id });
    expect(problems).toEqual([]);
    await page.context().close();
  });
});

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
  let browser: Browser | undefined;

  beforeAll(async () => {
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** A fresh page on `path`; script errors and CSP refusals (console errors) are collected. */
  async function open(path: string, options: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
    if (!browser) throw new Error("Chromium did not start");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
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
        expect(await axeViolations(page), `${path}, ${colorScheme}`).toEqual([]);
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
    const { demo, baseUrl, output } = server();
    const link = new RegExp(`  GraphQL   (${baseUrl}/explorer#\\S+)\n`).exec(output)?.[1];
    expect(link, output).toBeDefined();
    if (!browser) throw new Error("Chromium did not start");
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
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
