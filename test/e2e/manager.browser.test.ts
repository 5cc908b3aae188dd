/**
 * The manager app in a real browser: Debian's Chromium, driven by playwright-core, against a real
 * `npm start` (server.ts). An operator signs in with ADMIN_TOKEN and walks Organization Settings ->
 * Users -> Client credentials, creates a credential, reads its secret from the one page that shows
 * it, obtains an access token with it at /v1/oauth (over plain HTTP, as an API client would),
 * revokes it in the browser and sees the token refused. A minted organization administrator token
 * is shown to reach its own organization only, the sign-in page is checked from the keyboard, and
 * the one-time secret page is checked with and without JavaScript (Copy button, clipboard).
 * Locators are the accessible names of src/http/manager/views.tsx and routes.tsx, so the tests
 * also check that labels and link names make sense. The walk over every page is
 * manager-walk.browser.test.ts, the webhooks' insight manager-insight.browser.test.ts (split so
 * the three run side by side; manager-browser.ts holds what they share). Without /usr/bin/chromium
 * the suite is skipped with a one-line notice (CI installs it in .ci/run).
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  api,
  expectAccessible,
  focused,
  hasChromium,
  heading,
  managerSession,
  RATE_LIMIT_PAUSE_MS,
  screenshot,
  where,
} from "./manager-browser";
import { sleep } from "./server";

(hasChromium ? describe : describe.skip)("manager app in Chromium", () => {
  const session = managerSession();
  const { server, newContext, signIn, newCredentialsPage } = session;
  let base = "";
  beforeAll(() => {
    base = session.base;
  });

  it("lets the operator create client credentials, shows the secret once, and revoking them makes their token refused", async () => {
    const { demo, adminToken } = server();
    const context = await newContext();
    const scriptErrors: string[] = [];
    context.on("weberror", (err) => scriptErrors.push(err.error().message));
    const page = await context.newPage();

    // Sign in: /manager sends a visitor without a session to the sign-in page.
    await page.goto(`${base}/manager`);
    expect(where(page)).toBe("/manager/sign-in");
    expect(await heading(page)).toBe("Sign in");
    // The sign-in form's nonce cookie (its signed token is in the form) was stored as a __Host- cookie.
    const loginCsrf = (await context.cookies()).find((cookie) => cookie.name === "__Host-kw_login_csrf");
    expect(loginCsrf).toMatchObject({ secure: true, httpOnly: true, sameSite: "Strict", path: "/", domain: "127.0.0.1" });
    await screenshot(page, "sign-in");
    await page.getByLabel("Administrator token").fill(adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${base}/manager/organizations`);
    expect(await heading(page)).toBe("Organizations");
    expect(await page.getByText("Operator", { exact: true }).isVisible()).toBe(true);
    // Chromium keeps the __Host- session cookie over plain http because 127.0.0.1 is a
    // potentially trustworthy origin; it is HttpOnly and SameSite=Strict, host-only with Path=/,
    // and the sign-in form's cookie is gone.
    const cookies = await context.cookies();
    const session = cookies.find((cookie) => cookie.name === "__Host-kw_session");
    expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: "Strict", path: "/", domain: "127.0.0.1" });
    expect(cookies.map((cookie) => cookie.name)).not.toContain("__Host-kw_login_csrf");
    await screenshot(page, "organizations");

    // The demo organization opens on its overview; its Settings are the next section.
    await page.getByRole("row").filter({ hasText: demo.organizationId }).getByRole("link").click();
    await page.waitForURL(`${base}/manager/organizations/${demo.organizationId}/overview`);
    expect(await heading(page)).toBe("Overview");
    await screenshot(page, "overview");
    await page.getByRole("navigation", { name: "Organization sections" }).getByRole("link", { name: "Settings and quota" }).click();
    await page.waitForURL(`${base}/manager/organizations/${demo.organizationId}`);
    expect(await heading(page)).toBe("Organization Settings");
    expect(await page.getByText(demo.organizationId).isVisible()).toBe(true);
    await screenshot(page, "organization-settings");

    // Users -> the demo user's client credentials.
    await page.getByRole("link", { name: "Users", exact: true }).click();
    await page.waitForURL(`${base}/manager/organizations/${demo.organizationId}/users`);
    expect(await heading(page)).toBe("Users");
    await screenshot(page, "users");
    await page.getByRole("link", { name: "Client credentials of Demo user" }).click();
    const listUrl = `${base}/manager/organizations/${demo.organizationId}/users/${demo.userId}/client-credentials`;
    await page.waitForURL(listUrl);
    expect(await heading(page)).toBe("Client credentials");
    // The credential npm start seeded is listed, active.
    expect(await page.getByRole("row").filter({ hasText: demo.clientId }).getByText("active").isVisible()).toBe(true);
    await screenshot(page, "client-credentials");

    // Create: the next page shows client_id and client_secret once, read-only, with a warning.
    await page.getByLabel("Name").fill("Browser test client");
    await page.getByRole("button", { name: "Create client credentials" }).click();
    await page.getByRole("heading", { level: 1, name: "New client credentials" }).waitFor();
    const idField = page.getByLabel("client_id", { exact: true });
    const secretField = page.getByLabel("client_secret", { exact: true });
    const clientId = await idField.inputValue();
    const clientSecret = await secretField.inputValue();
    expect(clientId).not.toBe("");
    expect(clientSecret.length).toBeGreaterThanOrEqual(32);
    expect(await idField.isEditable()).toBe(false);
    expect(await secretField.isEditable()).toBe(false);
    expect(await page.getByRole("alert").textContent()).toContain("It is shown only this once");
    await screenshot(page, "new-client-credentials");

    // Back on the list (and after a reload) the credential is listed, the secret nowhere.
    await page.getByRole("link", { name: "Back to the client credentials" }).click();
    await page.waitForURL(listUrl);
    const newRow = page.getByRole("row").filter({ hasText: clientId });
    expect(await newRow.getByText("Browser test client").isVisible()).toBe(true);
    expect(await newRow.getByText("active").isVisible()).toBe(true);
    expect(await page.content()).not.toContain(clientSecret);
    await page.reload();
    expect(await page.content()).not.toContain(clientSecret);

    // An API client exchanges the new credentials for a token that the protected API accepts.
    const token = await api<{ access_token?: string }>(`${base}/v1/oauth`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": demo.apiKey },
      body: JSON.stringify({ client_id: clientId, client_secret: clientSecret, grant_type: "client_credentials" }),
    });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    const accessToken = token.body.data?.access_token ?? "";
    expect(accessToken).not.toBe("");
    const me = () =>
      api<{ client_id?: string }>(`${base}/v1/me`, {
        headers: { "x-api-key": demo.apiKey, Authorization: `Bearer ${accessToken}` },
      });
    await sleep(RATE_LIMIT_PAUSE_MS);
    const accepted = await me();
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.data?.client_id).toBe(clientId);

    // Revoke in the browser, through the confirmation page.
    await page.getByRole("link", { name: `Revoke ${clientId}` }).click();
    await page
      .getByRole("heading", { level: 1, name: `Revoke client credentials “Browser test client” (${clientId}) of Demo user?` })
      .waitFor();
    expect(await page.getByText("access tokens it already has stop working").isVisible()).toBe(true);
    await screenshot(page, "revoke-confirm");
    await page.getByRole("button", { name: "Revoke client credentials" }).click();
    await page.waitForURL(`${listUrl}?notice=credential-revoked`);
    expect(await page.getByRole("status").filter({ hasText: "Client credentials revoked." }).isVisible()).toBe(true);
    expect(await newRow.getByText("revoked", { exact: true }).isVisible()).toBe(true);
    expect(await newRow.getByRole("link", { name: /^Revoke/ }).count()).toBe(0);
    // The seeded credential is untouched.
    expect(await page.getByRole("row").filter({ hasText: demo.clientId }).getByText("active").isVisible()).toBe(true);
    await screenshot(page, "revoked");

    // The token obtained before the revocation is refused from now on.
    await sleep(RATE_LIMIT_PAUSE_MS);
    const refused = await me();
    expect(refused.status, JSON.stringify(refused.body)).toBe(401);

    // Sign out: back on the sign-in page, and /manager no longer opens.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/manager/sign-in`);
    expect(await heading(page)).toBe("Sign in");
    await screenshot(page, "signed-out");
    await page.goto(`${base}/manager/organizations`);
    expect(where(page)).toBe("/manager/sign-in");
    expect((await context.cookies()).some((cookie) => cookie.name === "__Host-kw_session")).toBe(false);

    // No page along the way threw (the pages' only script is the copy button's).
    expect(scriptErrors).toEqual([]);
    await context.close();
  });

  it("signs an organization administrator in to their own organization only, with 404s for everything else", async () => {
    const { demo, adminToken } = server();

    // Another organization, made by the operator through the operator API.
    const other = await api<{ id?: string }>(`${base}/admin/v1/organizations`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Another organization" }),
    });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const otherOrgId = other.body.data?.id ?? "";
    expect(otherOrgId).not.toBe("");

    // The operator mints an administrator token on Organization Settings and reads it off the page.
    const operator = await newContext();
    const operatorPage = await operator.newPage();
    await signIn(operatorPage, adminToken);
    const settingsUrl = `${base}/manager/organizations/${demo.organizationId}`;
    await operatorPage.goto(settingsUrl);
    await operatorPage.getByLabel("Token name").fill("Browser test administrator");
    await operatorPage.getByRole("button", { name: "Mint administrator token" }).click();
    await operatorPage.getByRole("heading", { level: 1, name: "Administrator token" }).waitFor();
    const orgAdminToken = await operatorPage.getByLabel("administrator token", { exact: true }).inputValue();
    expect(orgAdminToken).not.toBe("");
    expect(orgAdminToken).not.toBe(adminToken);
    await screenshot(operatorPage, "admin-token");
    await operator.close();

    // A fresh browser (no operator cookies) signs in with it and lands on that organization.
    const orgAdmin = await newContext();
    const page = await orgAdmin.newPage();
    await signIn(page, orgAdminToken);
    expect(page.url()).toBe(`${settingsUrl}/overview`);
    expect(await heading(page)).toBe("Overview");
    expect(await page.getByText("Organization administrator", { exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole("link", { name: "API keys" }).count()).toBe(0);
    expect(await page.getByRole("heading", { name: "Keys near their limits" }).count()).toBe(0);
    await expectAccessible(page, "org-admin-overview");
    await page.getByRole("link", { name: "Settings and quota" }).click();
    await page.waitForURL(settingsUrl);
    expect(await page.getByRole("link", { name: "API keys" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Mint administrator token" }).count()).toBe(0);
    expect(await page.getByRole("link", { name: "Users", exact: true }).isVisible()).toBe(true);
    await expectAccessible(page, "org-admin-settings");

    // The organizations list, another organization and the operator-only API keys page: 404.
    for (const path of [
      "/manager/organizations",
      `/manager/organizations/${otherOrgId}`,
      `/manager/organizations/${otherOrgId}/users`,
      `/manager/organizations/${demo.organizationId}/api-keys`,
    ]) {
      const res = await page.goto(`${base}${path}`);
      expect(res?.status(), path).toBe(404);
      expect(await heading(page), path).toBe("Not found");
      expect(await page.getByRole("alert").textContent(), path).toBe("There is no such page.");
      if (path === "/manager/organizations") await expectAccessible(page, "org-admin-not-found");
    }

    // Their own organization's users remain reachable.
    const users = await page.goto(`${settingsUrl}/users`);
    expect(users?.status()).toBe(200);
    expect(await page.getByRole("link", { name: "Client credentials of Demo user" }).isVisible()).toBe(true);
    await orgAdmin.close();
  });

  it("reaches the skip link first, then the token field and the Sign in button by keyboard", async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${base}/manager/sign-in`);

    await page.keyboard.press("Tab");
    expect(await focused(page)).toBe("a:Skip to content");
    // A skip link is only useful if a sighted keyboard user sees it once focused.
    expect(await page.getByRole("link", { name: "Skip to content" }).isVisible()).toBe(true);
    const box = await page.getByRole("link", { name: "Skip to content" }).boundingBox();
    expect(box?.x ?? -1).toBeGreaterThanOrEqual(0);
    await screenshot(page, "sign-in-skip-link");

    const order = ["a:Skip to content"];
    for (let i = 0; i < 10 && order.at(-1) !== "button:Sign in"; i++) {
      await page.keyboard.press("Tab");
      order.push(await focused(page));
    }
    const tokenAt = order.indexOf("input#token");
    expect(tokenAt, order.join(" > ")).toBeGreaterThan(0);
    expect(order[tokenAt + 1], order.join(" > ")).toBe("button:Sign in");
    await screenshot(page, "sign-in-button-focus");

    // Following the skip link puts the next Tab on the token field, past the header.
    await page.goto(`${base}/manager/sign-in`);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Tab");
    expect(await focused(page)).toBe("input#token");
    await context.close();
  });

  // The copy script runs under the page's CSP nonce, and (unlike a first version, whose quotes
  // JSX entity-escaped) without a syntax error.
  it("runs the page script without errors, so the Copy button puts the secret on the clipboard", async () => {
    const context = await newContext({ permissions: ["clipboard-read", "clipboard-write"] });
    const errors: string[] = [];
    context.on("weberror", (err) => errors.push(err.error().message));
    try {
      const { page, secret } = await newCredentialsPage(context);
      expect(errors).toEqual([]);
      await page.getByRole("button", { name: "Copy client_secret" }).click();
      await page.getByRole("status").filter({ hasText: "Secret copied to the clipboard." }).waitFor({ timeout: 5_000 });
      expect(await page.getByRole("button", { name: "Copied" }).isVisible()).toBe(true);
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  // Issue 43: a refused form says every mistake at once, each beside its field, and keeps every
  // value typed, the client secret included; the browser's own Origin and Sec-Fetch-Site pass
  // hono/csrf. The URL's userinfo is the SSRF guard's refusal, which used to wait until the
  // schema's (the event type, the scope) were fixed.
  it("refuses a new webhook form with three errors at once, each beside its field, keeping every value typed", async () => {
    const context = await newContext();
    try {
      const page = await context.newPage();
      await signIn(page, server().adminToken);
      await page.goto(`${base}/manager/organizations/${server().demo.organizationId}/new-webhook`);
      const typed = {
        url: "https://someone:secret@receiver.example/hook",
        description: "Three errors",
        events: "order.created, Not-An-Event",
        token_url: "https://receiver.example/token",
        client_id: "keyway-browser",
        client_secret: "typed-in-chromium-and-kept",
        scope: "two  spaces",
      };
      for (const [id, value] of Object.entries(typed)) await page.locator(`#${id}`).fill(value);
      const [answer] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Create webhook configuration" }).click(),
      ]);
      expect(answer.status()).toBe(400);
      await page.locator("#url-error").waitFor();
      const errors = await page.locator(".field-error").allTextContents();
      expect(errors).toHaveLength(3);
      expect(await page.locator("#url-error").textContent()).toMatch(/^Webhook URL: /);
      expect(await page.locator("#events-error").textContent()).toBe(
        "Event types: number 2 must be dot-separated lower-case words, e.g. order.created",
      );
      expect(await page.locator("#scope-error").textContent()).toMatch(/^Scope must be scope tokens separated by single spaces/);
      for (const id of ["url", "events", "scope"]) {
        expect(await page.locator(`#${id}`).getAttribute("aria-describedby")).toBe(`${id}-error`);
        expect(await page.locator(`#${id}`).getAttribute("aria-invalid")).toBe("true");
      }
      for (const [id, value] of Object.entries(typed)) expect(await page.locator(`#${id}`).inputValue(), id).toBe(value);
      expect(await page.locator("#form-errors li").count()).toBe(3);
      await expectAccessible(page, "forms-three-errors");
      // Fixing the three (the secret is still there) creates it.
      await page.locator("#url").fill("https://receiver.example/hook");
      await page.locator("#events").fill("order.created");
      await page.locator("#scope").fill("two spaces");
      const [created] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Create webhook configuration" }).click(),
      ]);
      expect(created.status(), await created.text()).toBe(200);
      expect(await page.getByLabel("signing secret", { exact: true }).inputValue()).toMatch(/^whsec_/);
    } finally {
      await context.close();
    }
  });

  // The separator comes from the inline stylesheet (`content:"\2192"`), which must reach the
  // browser unescaped.
  it("separates breadcrumb entries with an arrow", async () => {
    const context = await newContext();
    try {
      const page = await context.newPage();
      await signIn(page, server().adminToken);
      await page.goto(`${base}/manager/organizations/${server().demo.organizationId}/users`);
      const second = page.getByRole("navigation", { name: "Breadcrumb" }).getByRole("listitem").nth(1);
      expect(await second.evaluate((li) => getComputedStyle(li, "::before").content)).toBe('"\u2192"');
    } finally {
      await context.close();
    }
  });

  // Without JavaScript the button could do nothing, so it stays hidden: `[hidden]` must win over
  // the button styles.
  it("shows no Copy button when JavaScript is off, and the secret can still be read", async () => {
    const context = await newContext({ javaScriptEnabled: false });
    try {
      const { page, secret } = await newCredentialsPage(context);
      expect(secret).not.toBe("");
      expect(await page.getByRole("button", { name: "Copy client_secret" }).isVisible()).toBe(false);
    } finally {
      await context.close();
    }
  });

  // Layout guards for defects these tests once found (quirks mode, a clipped one-time secret).
  describe("layout", () => {
    // Without <!DOCTYPE html> Chromium lays pages out in quirks mode (one visible effect: the
    // sign-out form gets a quirks-mode bottom margin and the header grows to 83 px).
    it("serves pages in standards mode", async () => {
      const context = await newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${base}/manager/sign-in`);
        expect(await page.evaluate(() => document.compatMode)).toBe("CSS1Compat");
      } finally {
        await context.close();
      }
    });

    // `input[type=text]` is more specific than `.secret`, so the secret field keeps the 32rem
    // width and the proportional font: the end of the secret is cut off, and l/I/1 look alike.
    it("shows a one-time secret in full, in a monospace font", async () => {
      const context = await newContext();
      try {
        const { page } = await newCredentialsPage(context);
        const field = page.getByLabel("client_secret", { exact: true });
        const shown = await field.evaluate((el) => ({
          fits: el.scrollWidth <= el.clientWidth,
          font: getComputedStyle(el).fontFamily,
        }));
        expect(shown.font).toMatch(/monospace/);
        expect(shown.fits).toBe(true);
      } finally {
        await context.close();
      }
    });
  });
});
