/**
 * The manager app in Chromium, page by page (manager-browser.ts has the shared setup; the other
 * manager tests are manager.browser.test.ts and manager-insight.browser.test.ts, split so they run
 * side by side): one walk visits every page of the app (sign-in with and without an error, every
 * list, every one-time secret, every confirmation, the webhook pages with a real delivery to a
 * loopback receiver, a webhook configuration's new and edit forms with a refused form's messages,
 * the error pages) and checks each in light and dark (prefers-color-scheme) at 1280 px and at a
 * phone's 390 px (browser.ts expectLaidOut): axe-core finds nothing at any impact (contrast in
 * both schemes included), the page does not scroll sideways, no table is cut off, and no table
 * row is taller than 200 px (tables become cards on a phone). It also checks the organization's
 * section navigation (the current section marked aria-current). With KEYWAY_SCREENSHOTS=1 each
 * step leaves full-page screenshots in test-results/manager-<step>[-390][-dark].png, the main
 * pages also viewport-sized ones in test-results/docs/ (the source of docs/screenshots/); a failed
 * check leaves its own. The tallest row seen is printed at the end.
 */
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { api, expectAccessible, hasChromium, managerSession } from "./manager-browser";
import { serveJwks, sleep, startReceiver } from "./server";

(hasChromium ? describe : describe.skip)("manager app in Chromium", () => {
  const session = managerSession();
  const { server, newContext } = session;
  let base = "";
  beforeAll(() => {
    base = session.base;
  });

  it("passes axe-core with no violations on every page, and no page scrolls sideways at 390 px", async () => {
    const { demo, adminToken } = server();
    const org = `${base}/manager/organizations/${demo.organizationId}`;
    const receiver = await startReceiver();
    const context = await newContext();
    const checked: string[] = [];
    const check = async (page: Page, step: string) => {
      await expectAccessible(page, step);
      checked.push(step);
    };
    try {
      // Something in every table: an administrator token (with a name), a webhook configuration
      // pointing at the loopback receiver, made through the API with a key that allows a burst.
      const operatorApi = (path: string, payload: unknown) =>
        api<{ id?: string; api_key?: string; token?: string }>(`${base}/admin/v1${path}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
          body: JSON.stringify(payload),
        });
      const minted = await operatorApi(`/organizations/${demo.organizationId}/admin-tokens`, { name: "Walk administrator" });
      expect(minted.status, JSON.stringify(minted.body)).toBe(201);
      const key = await operatorApi(`/organizations/${demo.organizationId}/api-keys`, {
        name: "Walk key",
        limits: { per_second: 50, per_day: 1000 },
      });
      const apiKey = key.body.data?.api_key ?? "";
      const issued = await api<{ access_token?: string }>(`${base}/v1/oauth`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({ client_id: demo.clientId, client_secret: demo.clientSecret, grant_type: "client_credentials" }),
      });
      expect(issued.status, JSON.stringify(issued.body)).toBe(200);
      const config = await api<{ id?: string }>(`${base}/v1/webhook-configurations`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": apiKey, Authorization: `Bearer ${issued.body.data?.access_token}` },
        body: JSON.stringify({
          url: `${receiver.url}/hook`,
          description: "Walk receiver",
          oauth: { token_url: `${receiver.url}/token`, client_id: "keyway", client_secret: "walk-receiver-secret" },
        }),
      });
      expect(config.status, JSON.stringify(config.body)).toBe(201);
      const webhook = `${org}/webhooks/${config.body.data?.id}`;

      const page = await context.newPage();
      // Sign-in: empty, then after a wrong token (the form again, the reason on the field).
      await page.goto(`${base}/manager/sign-in`);
      await check(page, "walk-sign-in");
      await page.getByLabel("Administrator token").fill("kw_live_oa_a-wrong-guess");
      const [refused] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST" && new URL(res.url()).pathname === "/manager/sign-in"),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      expect(refused.status()).toBe(401);
      await page.getByRole("alert").waitFor();
      const field = page.getByLabel("Administrator token");
      expect(await field.inputValue()).toBe("");
      expect(await field.evaluate((el) => document.getElementById(el.getAttribute("aria-describedby") ?? "")?.textContent)).toMatch(
        /^That administrator token was not accepted/,
      );
      expect(await field.evaluate((el) => el === document.activeElement)).toBe(true);
      expect(await page.content()).not.toContain("a-wrong-guess");
      await check(page, "walk-sign-in-error");
      await field.fill(adminToken);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${base}/manager/organizations`);
      await check(page, "walk-organizations");

      // Organization Settings, its administrator token's revocation, users and their removal.
      await page.goto(org);
      await check(page, "walk-organization-settings");
      // The organization's sections, on every organization page, the current one marked.
      const sections = page.getByRole("navigation", { name: "Organization sections" });
      expect(await sections.getByRole("link", { name: "Settings and quota" }).getAttribute("aria-current")).toBe("page");
      expect(await sections.getByRole("link").count()).toBe(9);
      await page.getByRole("link", { name: `Revoke administrator token ${minted.body.data?.id}` }).click();
      await page.getByRole("heading", { level: 1, name: /^Revoke administrator token “/ }).waitFor();
      await check(page, "walk-confirm-revoke-admin-token");
      await page.goto(`${org}/users`);
      await check(page, "walk-users");
      // Issue 44: the trusted issuers (none yet: the list's empty state and the form).
      await page.goto(`${org}/trusted-issuers`);
      await check(page, "walk-trusted-issuers");
      await page.goto(`${org}/users`);
      await page.getByRole("link", { name: "Remove Demo user" }).click();
      await page.getByRole("heading", { level: 1, name: /^Remove user “Demo user” \(demo@example.com, usr_/ }).waitFor();
      await check(page, "walk-confirm-remove-user");

      // Client credentials: the list, a new one (its secret page) and its revocation. The list
      // holds the longest values it shows (a key set URL, a federated issuer and subject), which
      // once pushed its Status and Actions columns out of sight at 1280 px.
      const keys = await serveJwks();
      try {
        const issuer = `${keys.url}/acme-ci`;
        const trusted = await operatorApi(`/organizations/${demo.organizationId}/trusted-issuers`, { issuer, jwks_uri: `${issuer}/keys` });
        expect(trusted.status, JSON.stringify(trusted.body)).toBe(201);
        for (const credential of [
          {
            name: "Billing reconciliation",
            token_endpoint_auth_method: "private_key_jwt",
            jwks_uri: `${keys.url}/acme-production/billing/.well-known/jwks.json`,
          },
          {
            name: "CI deploys",
            token_endpoint_auth_method: "federated_jwt",
            federated: { issuer, subject: "repo:acme-corporation/billing-reconciliation-service:environment:production-eu-west-1" },
          },
        ]) {
          const made = await operatorApi(`/organizations/${demo.organizationId}/users/${demo.userId}/client-credentials`, credential);
          expect(made.status, JSON.stringify(made.body)).toBe(201);
        }
      } finally {
        await keys.close();
      }
      await page.goto(`${org}/users/${demo.userId}/client-credentials`);
      await check(page, "walk-client-credentials");
      // The create form shows only the chosen method's fields: a secret needs none of them.
      const shown = async () => ({
        jwks: await page.locator("#jwks").isVisible(),
        jwksUri: await page.locator("#jwks_uri").isVisible(),
        issuer: await page.locator("#federated_issuer").isVisible(),
      });
      expect(await shown()).toEqual({ jwks: false, jwksUri: false, issuer: false });
      await page.getByLabel(/^private_key_jwt:/).check();
      expect(await shown()).toEqual({ jwks: true, jwksUri: true, issuer: false });
      await check(page, "walk-client-credentials-private-key-jwt");
      await page.getByLabel(/^federated_jwt:/).check();
      expect(await shown()).toEqual({ jwks: false, jwksUri: false, issuer: true });
      await page.getByLabel("A client secret (shown once)").check();
      await page.getByLabel("Name").fill("Walk credential");
      await page.getByRole("button", { name: "Create client credentials" }).click();
      await page.getByRole("heading", { level: 1, name: "New client credentials" }).waitFor();
      const clientId = await page.getByLabel("client_id", { exact: true }).inputValue();
      await check(page, "walk-new-client-credentials");
      await page.goto(`${org}/users/${demo.userId}/client-credentials`);
      await page.getByRole("link", { name: `Revoke ${clientId}` }).click();
      await page
        .getByRole("heading", { level: 1, name: `Revoke client credentials “Walk credential” (${clientId}) of Demo user?` })
        .waitFor();
      await check(page, "walk-confirm-revoke-client-credentials");

      // API keys: the list, a new key (its secret page), a key's page and its revocation.
      await page.goto(`${org}/api-keys`);
      await check(page, "walk-api-keys");
      await page.getByLabel("Name").fill("Walk issued key");
      await page.getByRole("button", { name: "Issue API key" }).click();
      await page.getByRole("heading", { level: 1, name: "New API key" }).waitFor();
      await check(page, "walk-new-api-key");
      await page.goto(`${org}/api-keys/${demo.apiKeyId}`);
      await check(page, "walk-api-key");
      await page.getByRole("link", { name: "Revoke this API key" }).click();
      await page
        .getByRole("heading", { level: 1, name: `Revoke API key “Demo key” (${demo.apiKeyId}, ends …${demo.apiKey.slice(-4)})?` })
        .waitFor();
      await check(page, "walk-confirm-revoke-api-key");

      // The audit log, then narrowed by its filters (a GET form: the narrowed list is a link),
      // then refused a filter it cannot take, the reason beside the field.
      await page.goto(`${org}/audit-log`);
      await check(page, "walk-audit-log");
      await page.getByLabel("Who").selectOption("operator");
      await page.getByLabel("Action").fill("api_key.created");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.waitForURL((url) => url.searchParams.get("action") === "api_key.created");
      const actions = await page.locator("table.audit tbody td:nth-child(3) code:first-child").allTextContents();
      expect(actions.length).toBeGreaterThan(0);
      expect(new Set(actions)).toEqual(new Set(["api_key.created"]));
      await check(page, "walk-audit-log-filtered");
      await page.getByLabel("Action").fill("not an action");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.locator("#action-error").waitFor();
      await check(page, "walk-audit-log-refused-filter");
      // The organization's overview: its 24 hours, the endpoints that need a person, the latest changes.
      await page.goto(`${org}/overview`);
      expect(await page.getByRole("heading", { level: 2, name: "Recent changes" }).isVisible()).toBe(true);
      await check(page, "walk-overview");

      // Webhooks: the list, a configuration with a delivered test event, the delivery, its re-send
      // and the configuration's disabling; then the disabled configuration with its Re-enable.
      await page.goto(`${org}/webhooks`);
      await check(page, "walk-webhooks");
      expect(await sections.getByRole("link", { name: "Webhooks" }).getAttribute("aria-current")).toBe("page");
      expect(await page.locator('nav.sections [aria-current="page"]').count()).toBe(1);
      await page.goto(webhook);
      await page.getByRole("button", { name: "Send test event" }).click();
      await page.waitForURL(`${webhook}?notice=test-sent`);
      const delivery = page.getByRole("region", { name: "Deliveries" }).getByRole("link").first();
      const deliveryUrl = `${base}${await delivery.getAttribute("href")}`;
      // The delivery's status, in the sentence above its attempts.
      const delivered = () => page.getByRole("main").getByText("delivered", { exact: true }).first().isVisible();
      await page.goto(deliveryUrl);
      for (let i = 0; i < 60 && !(await delivered()); i++) {
        await sleep(500);
        await page.goto(deliveryUrl);
      }
      expect(await delivered(), "the test event reached the receiver").toBe(true);
      await check(page, "walk-delivery");
      await page.getByRole("link", { name: "Re-send this delivery" }).click();
      await page
        .getByRole("heading", { level: 1, name: /^Re-send delivery msg_[0-9a-z]{26} \(webhook\.test\) to http:\/\/127\.0\.0\.1:/ })
        .waitFor();
      await check(page, "walk-confirm-resend");
      await page.goto(webhook);
      await check(page, "walk-webhook");
      // The connection test: a token from the loopback receiver, told in words.
      await page.getByRole("button", { name: "Test connection" }).click();
      await page.getByRole("heading", { level: 2, name: "Connection test: a token was issued" }).waitFor();
      await check(page, "walk-connection-test");
      await page.goto(webhook);
      // Its edit form (the client secret field empty: write-only) and its deletion's confirmation.
      await page.getByRole("link", { name: "Edit the webhook configuration" }).click();
      await page.getByRole("heading", { level: 1, name: "Edit Webhook: Walk receiver" }).waitFor();
      expect(await page.getByLabel(/^Client secret at the receiver/).inputValue()).toBe("");
      await check(page, "walk-edit-webhook");
      await page.goto(webhook);
      await page.getByRole("link", { name: "Delete this webhook configuration" }).click();
      await page.getByRole("heading", { level: 1, name: /^Delete webhook configuration “Walk receiver” \(whk_/ }).waitFor();
      await check(page, "walk-confirm-delete-webhook");
      // A new configuration: the form, refused (the messages beside the fields, the values kept),
      // then created, its signing secret shown once.
      await page.goto(`${org}/new-webhook`);
      await check(page, "walk-new-webhook");
      // Only the chosen method's fields: private_key_jwt takes no secret and has an audience.
      const secretAndAudience = async () => [
        await page.locator("#client_secret").isVisible(),
        await page.locator("#assertion_audience").isVisible(),
      ];
      expect(await secretAndAudience()).toEqual([true, false]);
      await page.locator("#auth_method-private_key_jwt").check();
      expect(await secretAndAudience()).toEqual([false, true]);
      await page.locator("#auth_method-client_secret_post").check();
      await page.locator("#url").fill(`${receiver.url}/second`);
      await page.locator("#token_url").fill(`${receiver.url}/token`);
      await page.locator("#client_id").fill("keyway");
      await page.locator("#client_secret").fill("walk-second-secret");
      await page.locator("#events").fill("order.created Not-An-Event");
      const [refusedForm] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Create webhook configuration" }).click(),
      ]);
      expect(refusedForm.status()).toBe(400);
      await page.locator("#events-error").waitFor();
      expect(await page.locator("#events").getAttribute("aria-describedby")).toBe("events-error");
      expect(await page.locator("#url").inputValue()).toBe(`${receiver.url}/second`);
      // The secret typed in that submit is kept (the page is no-store and same-origin).
      expect(await page.locator("#client_secret").inputValue()).toBe("walk-second-secret");
      await check(page, "walk-new-webhook-error");
      await page.locator("#events").fill("order.created");
      await page.getByRole("button", { name: "Create webhook configuration" }).click();
      await page.getByRole("heading", { level: 1, name: "New webhook configuration" }).waitFor();
      expect(await page.getByLabel("signing secret", { exact: true }).inputValue()).toMatch(/^whsec_/);
      await check(page, "walk-new-webhook-secret");
      // Recovery from the configuration's page: refused (until before since), then started and
      // followed on its own page; the list of recoveries.
      await page.goto(webhook);
      await page.locator("#since").fill("2030-01-02T00:00");
      await page.locator("#until").fill("2030-01-01T00:00");
      const [refusedRecovery] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Recover failed deliveries" }).click(),
      ]);
      expect(refusedRecovery.status()).toBe(400);
      await page.locator("#until-error").waitFor();
      expect(await page.locator("#since").inputValue()).toBe("2030-01-02T00:00");
      await check(page, "walk-recover-error");
      await page.goto(webhook);
      await page.getByRole("button", { name: "Recover failed deliveries" }).click();
      await page.waitForURL(/\/recoveries\/rcv_[0-9a-z]+\?notice=recovery-started$/);
      await page.getByRole("heading", { level: 1, name: /^Recovery rcv_/ }).waitFor();
      await check(page, "walk-recovery");
      await page.goto(`${webhook}/recoveries`);
      await check(page, "walk-recoveries");
      // A portal link, shown once; the receiver opens it (its page, then its one form); the
      // configuration's page lists the session, which is ended through its confirmation.
      await page.goto(webhook);
      await page.getByRole("button", { name: "Create portal link" }).click();
      await page.getByRole("heading", { level: 1, name: "Portal link" }).waitFor();
      const portalLink = await page.getByLabel("Portal link", { exact: true }).inputValue();
      expect(portalLink).toMatch(/\/portal\/open\?token=kw_portal_/);
      await check(page, "walk-portal-link");
      const openUrl = new URL(portalLink);
      const openPage = await fetch(`${base}${openUrl.pathname}${openUrl.search}`);
      const openCookie = openPage.headers
        .getSetCookie()
        .map((line) => line.split(";")[0])
        .join("; ");
      const openCsrf = /name="csrf" value="([^"]+)"/.exec(await openPage.text())?.[1] ?? "";
      const opened = await fetch(`${base}/portal/open`, {
        method: "POST",
        redirect: "manual",
        headers: { Cookie: openCookie, "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ csrf: openCsrf, token: openUrl.searchParams.get("token") ?? "" }).toString(),
      });
      expect(opened.status).toBe(303);
      await page.goto(webhook);
      expect(await page.content()).not.toContain(openUrl.searchParams.get("token") ?? "");
      await check(page, "walk-webhook-receivers");
      await page.getByRole("link", { name: /^End session pts_/ }).click();
      await page.getByRole("heading", { level: 1, name: /^End portal session pts_/ }).waitFor();
      await check(page, "walk-confirm-end-portal-session");
      await page.getByRole("button", { name: "End portal session" }).click();
      await page.waitForURL(`${webhook}?notice=portal-session-ended#portal`);

      // Event types: the catalog, a new type refused (an example breaking its schema, named beside
      // the field, the text kept), then created; its page, its deletion's confirmation, one of
      // keyway's own types; the webhook settings, refused and as saved.
      await page.goto(`${org}/event-types`);
      await check(page, "walk-event-types");
      await page.getByRole("link", { name: "New event type" }).click();
      await page.getByRole("heading", { level: 1, name: "New event type" }).waitFor();
      await check(page, "walk-new-event-type");
      await page.locator("#name").fill("walk.placed");
      await page.locator("#description").fill("A walk was placed.");
      await page.locator("#schema").fill('{"type": "object", "properties": {"steps": {"type": "integer", "minimum": 1}}}');
      await page.locator("#examples").fill('[{"steps": 0}]');
      const [refusedType] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Create event type" }).click(),
      ]);
      expect(refusedType.status()).toBe(400);
      await page.locator("#examples-error").waitFor();
      expect(await page.locator("#examples").getAttribute("aria-describedby")).toBe("examples-error");
      expect(await page.locator("#examples").inputValue()).toBe('[{"steps": 0}]');
      await check(page, "walk-new-event-type-error");
      await page.locator("#examples").fill('[{"steps": 3}]');
      await page.getByRole("button", { name: "Create event type" }).click();
      await page.waitForURL(`${org}/event-types/walk.placed?notice=event-type-saved`);
      await check(page, "walk-event-type");
      await page.getByRole("link", { name: "Delete event type walk.placed" }).click();
      await page.getByRole("heading", { level: 1, name: /^Delete event type walk\.placed/ }).waitFor();
      await check(page, "walk-confirm-delete-event-type");
      await page.goto(`${org}/event-types/webhook.endpoint.disabled`);
      await check(page, "walk-operational-event-type");
      await page.goto(`${org}/webhook-settings`);
      await check(page, "walk-webhook-settings");
      await page.locator("#portal_frame_origins").fill("https://dashboard.example.com\nftp://nope");
      const [refusedSettings] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Save settings" }).click(),
      ]);
      expect(refusedSettings.status()).toBe(400);
      await page.locator("#portal_frame_origins-error").waitFor();
      await check(page, "walk-webhook-settings-error");
      // The organization's assertion key: rotated through its confirmation page.
      await page.goto(`${org}/webhook-settings`);
      await page.getByRole("link", { name: "Rotate the assertion key" }).click();
      await page.getByRole("heading", { level: 1, name: "Rotate the organization's assertion key?" }).waitFor();
      await check(page, "walk-confirm-rotate-assertion-key");
      await page.getByRole("button", { name: "Rotate assertion key" }).click();
      await page.getByRole("heading", { level: 1, name: "Assertion key rotated" }).waitFor();
      await check(page, "walk-assertion-key-rotated");

      await page.goto(webhook);
      await page.getByRole("link", { name: "Disable this webhook configuration" }).click();
      await page.getByRole("heading", { level: 1, name: /^Disable webhook configuration “Walk receiver” \(whk_/ }).waitFor();
      await check(page, "walk-confirm-disable-webhook");
      await page.getByRole("button", { name: "Disable webhook configuration" }).click();
      await page.waitForURL(`${webhook}?notice=webhook-disabled`);
      expect(await page.getByRole("button", { name: "Re-enable" }).isVisible()).toBe(true);
      await check(page, "walk-webhook-disabled");

      // Error pages: invalid input (400) and a page that does not exist (404).
      await page.goto(`${base}/manager/organizations`);
      await page.getByLabel("Name").fill("   ");
      const [invalid] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === "POST"),
        page.getByRole("button", { name: "Create organization" }).click(),
      ]);
      expect(invalid.status()).toBe(400);
      await check(page, "walk-invalid-input");
      expect((await page.goto(`${base}/manager/nowhere`))?.status()).toBe(404);
      await check(page, "walk-not-found");
    } finally {
      await context.close();
      await receiver.close();
      console.info(`manager pages checked with axe-core at 1280 and 390 px: ${checked.join(", ")}`);
    }
    expect(checked).toHaveLength(50);
    // 50 pages, each checked by axe-core at two widths: about 100 s on a quiet 2-core machine, so
    // the project's 120 s would fail it on a busy one (it did, beside a bench run) for no fault.
  }, 300_000);
});
