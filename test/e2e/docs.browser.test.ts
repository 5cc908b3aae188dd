/**
 * The API description as outsiders see it, against a real `npm start` (server.ts): the served
 * /v1/openapi.json is checked by an independent validator (Redocly CLI's `lint` with its
 * recommended ruleset: no error and no warning), and /docs is driven in Debian's Chromium through
 * playwright-core: axe-core finds no violation at any impact (every details element open too),
 * the table of contents reaches every tag section with JavaScript off, nothing overflows
 * sideways on a 390 px wide screen, and "Try it" carries the access token from the token
 * endpoint into /v1/me's request without it being typed (and an operator's new API key and client
 * credential into the requests that use them). Dark mode, GET / and the GraphQL explorer are
 * docs-dark.browser.test.ts (split so the two run side by side). Screenshots go to
 * test-results/docs-<step>.png for a person to look at. Without /usr/bin/chromium the browser
 * tests are skipped with a one-line notice; the Redocly check still runs.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { BrowserContextOptions, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { axeViolations, browserFile, chromiumFor, SCREENSHOTS } from "./browser";
import { ROOT, sleep } from "./server";

/** The demo API key allows one request per second. */
const RATE_LIMIT_PAUSE_MS = 1_100;
const PHONE = { width: 390, height: 844 };

const hasChromium = chromiumFor("docs browser tests");

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

const { server, browser } = browserFile();

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
  let doc: OpenApi;

  beforeAll(async () => {
    doc = (await (await fetch(`${server().baseUrl}/v1/openapi.json`)).json()) as OpenApi;
  });

  /** A fresh page on /docs; script errors and CSP refusals (console errors) are collected. */
  async function openDocs(options: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 }, ...options });
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
