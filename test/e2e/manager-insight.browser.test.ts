/**
 * The manager app in Chromium, looking into webhooks (manager-browser.ts has the shared setup; the
 * other manager tests are manager.browser.test.ts and manager-walk.browser.test.ts, split so they
 * run side by side): a healthy and a failing endpoint with real deliveries to loopback receivers,
 * their health, charts (a chart's bars give their values on keyboard focus and on hover), filters,
 * paging, a delivery's story, rotation and an API key's traffic, each page checked in light and
 * dark at 1280 and 390 px (browser.ts expectLaidOut).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { api, expectAccessible, hasChromium, heading, managerSession } from "./manager-browser";
import { sleep, startReceiver } from "./server";

(hasChromium ? describe : describe.skip)("manager app in Chromium", () => {
  const session = managerSession();
  const { server, newContext, signIn } = session;
  let base = "";
  beforeAll(() => {
    base = session.base;
  });

  it("looks into a healthy and a failing endpoint: health, charts, filters, paging, a delivery's story, rotation, an API key's traffic", async () => {
    const { demo, adminToken } = server();
    const org = `${base}/manager/organizations/${demo.organizationId}`;
    const healthy = await startReceiver();
    // A receiver whose token endpoint works and whose webhook URL fails with a JSON error.
    const failing = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        if (req.url === "/token") {
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ access_token: "failing-receiver-token", token_type: "Bearer", expires_in: 300 }));
          return;
        }
        res.writeHead(500, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: "database unavailable" }));
      });
    });
    await new Promise<void>((done) => failing.listen(0, "127.0.0.1", done));
    const failingUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
    const context = await newContext();
    const checked: string[] = [];
    const check = async (page: Page, step: string) => {
      await expectAccessible(page, `insight-${step}`);
      checked.push(step);
    };
    try {
      const key = await api<{ api_key?: string; id?: string }>(`${base}/admin/v1/organizations/${demo.organizationId}/api-keys`, {
        method: "POST",
        headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
        body: JSON.stringify({ name: "Insight key", limits: { per_second: 100, per_day: 10_000 } }),
      });
      const apiKey = key.body.data?.api_key ?? "";
      const issued = await api<{ access_token?: string }>(`${base}/v1/oauth`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({ client_id: demo.clientId, client_secret: demo.clientSecret, grant_type: "client_credentials" }),
      });
      expect(issued.status, JSON.stringify(issued.body)).toBe(200);
      const authed = { "Content-Type": "application/json", "x-api-key": apiKey, Authorization: `Bearer ${issued.body.data?.access_token}` };
      const configure = async (url: string, description: string) => {
        const created = await api<{ id?: string }>(`${base}/v1/webhook-configurations`, {
          method: "POST",
          headers: authed,
          body: JSON.stringify({
            url: `${url}/hook`,
            description,
            events: ["order.created", "refund.issued"],
            oauth: { token_url: `${url}/token`, client_id: "keyway", client_secret: "insight-receiver-secret" },
          }),
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        return `${org}/webhooks/${created.body.data?.id}`;
      };
      const healthyPage = await configure(healthy.url, "Healthy receiver");
      const failingPage = await configure(failingUrl, "Failing receiver");
      // 30 events, to both: more deliveries than one page holds.
      const events: string[] = [];
      for (let i = 0; i < 30; i++) {
        const published = await api<{ id?: string }>(`${base}/v1/events`, {
          method: "POST",
          headers: authed,
          body: JSON.stringify({ type: i % 3 === 0 ? "refund.issued" : "order.created", data: { order: `A-${i}` } }),
        });
        expect(published.status, JSON.stringify(published.body)).toBe(202);
        events.push(published.body.data?.id ?? "");
      }
      // Until the healthy receiver has them all and the failing one has failed at least once.
      const trafficOf = async (pageUrl: string) => {
        const id = pageUrl.split("/").at(-1);
        const t = await api<{ last_24h?: { succeeded: number; failed: number } }>(`${base}/v1/webhook-configurations/${id}/traffic`, {
          headers: authed,
        });
        return t.body.data?.last_24h ?? { succeeded: 0, failed: 0 };
      };
      for (let i = 0; i < 120 && ((await trafficOf(healthyPage)).succeeded < 30 || (await trafficOf(failingPage)).failed < 1); i++) {
        await sleep(250);
      }
      expect((await trafficOf(healthyPage)).succeeded).toBe(30);

      const page = await context.newPage();
      await signIn(page, adminToken);
      await page.goto(`${org}/webhooks`);
      await check(page, "webhooks");
      expect(await page.getByRole("link", { name: "Healthy receiver" }).isVisible()).toBe(true);

      // The healthy endpoint: 100% over 24 hours, two charts with a table each, 25 deliveries a page.
      await page.goto(healthyPage);
      expect(await heading(page)).toBe("Webhook: Healthy receiver");
      expect(await page.getByText(/^Success rate, 24 h/).textContent()).toContain("100%");
      const hours = page.getByRole("group", { name: /^Attempts, last 24 hours/ });
      expect(await hours.count()).toBe(1);
      expect(await page.getByRole("group", { name: /^Attempts, last 30 days/ }).count()).toBe(1);
      // Each hour's values on focus (its accessible name) and on hover (its SVG title).
      const bars = hours.getByRole("img", { name: / UTC: \d+ succeeded, \d+ failed$/ });
      expect(await bars.count()).toBe(24);
      await bars.last().focus();
      const focusedBar = await page.evaluate(() => document.activeElement?.getAttribute("aria-label") ?? "");
      expect(focusedBar).toMatch(/ UTC: \d+ succeeded, 0 failed$/);
      expect(await bars.last().locator("title").textContent()).toBe(focusedBar);
      await page.getByText("Attempts, last 24 hours as a table").click();
      await check(page, "healthy-endpoint");
      const rows = page.getByRole("region", { name: "Deliveries" }).getByRole("row");
      expect(await rows.count()).toBe(26);
      await page.getByRole("link", { name: "Next page" }).click();
      await page.getByRole("link", { name: "First page" }).waitFor();
      expect(await rows.count()).toBe(6);
      await check(page, "deliveries-page-2");

      // Filters: the form narrows the list and the URL says how.
      await page.goto(healthyPage);
      await page.getByLabel("Event type", { exact: true }).fill("refund.issued");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.waitForURL(/event_type=refund.issued/);
      expect(await rows.count()).toBe(11);
      await page.getByLabel("Event id or webhook-id", { exact: true }).fill(events[3] ?? "");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.waitForURL(/q=evt_/);
      await page.getByRole("link", { name: "Clear" }).waitFor();
      expect(await rows.count()).toBe(2); // the header and the one delivery
      await check(page, "deliveries-filtered");

      // The failing endpoint: its failures counted, its retrying deliveries one filter away.
      await page.goto(failingPage);
      expect(await heading(page)).toBe("Webhook: Failing receiver");
      expect(Number((await page.getByText(/^Failed, 24 h/).textContent())?.replace(/\D/g, ""))).toBeGreaterThan(0);
      await check(page, "failing-endpoint");
      await page.getByLabel("Status", { exact: true }).selectOption("retrying");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.waitForURL(/status=retrying/);
      const retrying = page.getByRole("region", { name: "Deliveries" }).getByRole("link").first();
      await retrying.click();

      // A failed delivery's story: the event, the request we send (secrets masked), the receiver's answer.
      await page.getByRole("heading", { level: 2, name: "Payload" }).waitFor();
      expect(await heading(page)).toMatch(/^Delivery of (order\.created|refund\.issued)$/);
      expect(await page.getByRole("region", { name: "Request headers" }).textContent()).toContain("webhook-signature");
      expect(await page.getByRole("region", { name: "Attempts" }).textContent()).toContain("database unavailable");
      expect(await page.content()).not.toContain("failing-receiver-token");
      expect(await page.locator("pre.payload").textContent()).toContain('"order": "A-');
      await check(page, "failed-delivery");

      // Rotating the signing secret: asked, then shown once.
      await page.goto(healthyPage);
      await page.getByRole("link", { name: "Rotate the signing secret" }).click();
      await page
        .getByRole("heading", { level: 1, name: /^Rotate the signing secret of webhook configuration “Healthy receiver”/ })
        .waitFor();
      await check(page, "confirm-rotate");
      await page.getByRole("button", { name: "Rotate signing secret" }).click();
      await page.getByRole("heading", { level: 1, name: "New signing secret" }).waitFor();
      expect(await page.getByLabel("signing secret", { exact: true }).inputValue()).toMatch(/^whsec_/);
      await check(page, "new-signing-secret");

      // An API key's traffic: the requests above, admitted, in this hour's bar.
      await page.goto(`${org}/api-keys/${key.body.data?.id}`);
      expect(await heading(page)).toBe("API key: Insight key");
      expect(await page.getByRole("group", { name: /^Requests, last 24 hours/ }).count()).toBe(1);
      await page.getByText("Requests, last 24 hours as a table").click();
      await check(page, "api-key-traffic");

      // Rotating the key's secret with an hour's grace: asked, shown once, then the grace ended (asked too).
      await page.getByLabel("Grace period for the current secret").selectOption("3600");
      await page.getByRole("button", { name: "Rotate secret" }).click();
      await page.getByRole("heading", { level: 1, name: /^Rotate the secret of API key “Insight key”/ }).waitFor();
      await check(page, "confirm-rotate-api-key");
      await page.getByRole("button", { name: "Rotate secret" }).click();
      await page.getByRole("heading", { level: 1, name: "New API key secret" }).waitFor();
      expect(await page.getByLabel("API key", { exact: true }).inputValue()).toMatch(/^kw_live_ak_/);
      await check(page, "new-api-key-secret");
      await page.getByRole("link", { name: "end the grace now" }).click();
      await page.getByRole("heading", { level: 1, name: /^End the grace of the previous secret of API key “Insight key”/ }).waitFor();
      await check(page, "confirm-end-grace");
      await page.getByRole("button", { name: "End grace now" }).click();
      await page.waitForURL(/\?notice=grace-ended$/);
    } finally {
      await context.close();
      await healthy.close();
      await new Promise((done) => failing.close(done));
      console.info(`manager insight pages checked with axe-core at 1280 and 390 px: ${checked.join(", ")}`);
    }
    expect(checked).toHaveLength(12);
  });
});
