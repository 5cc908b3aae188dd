/**
 * The portal (issue 30 item 2) in a real browser: Debian's Chromium, driven by playwright-core,
 * against a real `npm start` (server.ts). Through the API an organization gets two webhook
 * configurations pointing at a loopback receiver (server.ts `startReceiver`), publishes an event
 * that reaches both, and makes a portal link for the first. Chromium opens the link (the page's
 * one button), sees that endpoint's delivery and not the other's, gets 404 for the other
 * configuration's delivery URL, re-sends its delivery (which reaches the receiver again) and
 * rotates the signing secret; starts a recovery (a refused window first, said on the form) and
 * follows it; reads the event catalog (a type with a schema and examples), subscribes to an
 * operational type and fetches the OpenAPI document; narrows what it receives with a filter of its
 * own (a typo refused on the form, a try against the latest events, the save, and a small order
 * then not sent to it); opening the link again is refused (410). Every portal page is
 * checked in light and dark (prefers-color-scheme) at 1280 px and at 390 px (browser.ts
 * expectLaidOut): axe-core finds nothing, nothing scrolls sideways or is cut off, no table row is
 * taller than 200 px. Each step leaves screenshots in test-results/portal-<step>[-390][-dark].png,
 * the deliveries page also in test-results/docs/ (docs/screenshots/). Without /usr/bin/chromium
 * the suite is skipped with a one-line notice.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  browserFile,
  burstClient,
  chromiumFor,
  expectLaidOut,
  json,
  MAX_ROW_PX,
  SCREENSHOTS,
  SCREENSHOTS_WANTED,
  tallest,
  WIDE,
} from "./browser";
import { type Receiver, sleep, startReceiver } from "./server";

const hasChromium = chromiumFor("portal browser tests");

/** The portal's deliveries as docs/manager.md shows them: viewport-sized, light at both widths, dark at 390 px. */
const DOC_SHOTS: Record<string, string> = { deliveries: "portal-deliveries" };

/**
 * The page in light and dark at 1280 and 390 px (browser.ts expectLaidOut): no axe-core violation,
 * no sideways scrolling, no table cut off, no table row taller than 200 px; a full-page screenshot
 * of each, and for DOC_SHOTS a viewport-sized one in test-results/docs/ for docs/screenshots/.
 */
async function expectAccessible(page: Page, step: string): Promise<void> {
  const doc = DOC_SHOTS[step];
  await expectLaidOut(page, step, async (suffix) => {
    await page.screenshot({ path: join(SCREENSHOTS, `portal-${step}${suffix}.png`), fullPage: true });
    if (SCREENSHOTS_WANTED && doc && suffix !== "-dark")
      await page.screenshot({ path: join(SCREENSHOTS, "docs", `${doc}${suffix.startsWith("-390") ? suffix : `-1280${suffix}`}.png`) });
  });
}

describe.skipIf(!hasChromium)("the portal in Chromium against npm start", () => {
  const files = browserFile();
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    receiver = await startReceiver();
  });

  afterAll(async () => {
    console.info(`portal walk: tallest table row ${tallest.px} px (limit ${MAX_ROW_PX}) at ${tallest.where}`);
    await receiver?.close();
  });

  it("opens a link once, shows that endpoint's deliveries only, re-sends and rotates, and passes axe at 390 and 1280 px", async () => {
    if (!receiver) throw new Error("setup failed");
    const keyway = files.server();
    const browser = files.browser();
    const base = keyway.baseUrl;
    const hook = receiver;

    // A key that allows a burst, a token, two configurations and an event that reaches both.
    const headers = await burstClient(keyway, "Portal walk");
    const post = <T>(path: string, payload: unknown) =>
      json<T>(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(payload) });
    const configs: string[] = [];
    for (const name of ["Portal endpoint", "Other endpoint"]) {
      const created = await post<{ id: string }>("/v1/webhook-configurations", {
        url: `${hook.url}/${name === "Portal endpoint" ? "hook" : "other"}`,
        description: name,
        oauth: { token_url: `${hook.url}/token`, client_id: "keyway", client_secret: "portal-walk-receiver-secret" },
      });
      expect(created.status).toBe(201);
      configs.push(created.data.id);
    }
    const event = await post<{ deliveries: { id: string; webhook_configuration_id: string }[] }>("/v1/events", {
      type: "order.created",
      data: { order: 1 },
    });
    expect(event.status).toBe(202);
    const mine = event.data.deliveries.find((d) => d.webhook_configuration_id === configs[0])?.id ?? "";
    const theirs = event.data.deliveries.find((d) => d.webhook_configuration_id === configs[1])?.id ?? "";
    // Both deliveries reach the real receiver.
    for (let i = 0; i < 100 && !(hook.ids.has(mine) && hook.ids.has(theirs)); i++) await sleep(100);
    expect(hook.ids.get(mine)).toBe(1);
    const link = await post<{ url: string }>(`/v1/webhook-configurations/${configs[0]}/portal-links`, {});
    expect(link.status).toBe(200);
    expect(link.data.url.startsWith(`${base}/portal/open?token=kw_portal_`)).toBe(true);

    const context = await browser.newContext({ viewport: WIDE });
    const page = await context.newPage();
    await page.goto(link.data.url);
    await expectAccessible(page, "open");
    await page.getByRole("button", { name: "Open the portal" }).click();
    await page.waitForURL(`${base}/portal`);
    expect((await context.cookies()).find((c) => c.name === "__Host-kw_portal")?.httpOnly).toBe(true);
    await expectAccessible(page, "home");

    await page.getByRole("link", { name: "Deliveries", exact: true }).click();
    await page.waitForURL(`${base}/portal/deliveries`);
    expect(await page.content()).toContain(mine);
    expect(await page.content()).not.toContain(theirs);
    await expectAccessible(page, "deliveries");

    // Another configuration's delivery: not found.
    const other = await page.goto(`${base}/portal/deliveries/${theirs}`);
    expect(other?.status()).toBe(404);
    await expectAccessible(page, "not-found");

    await page.goto(`${base}/portal/deliveries/${mine}`);
    await expectAccessible(page, "delivery");
    await page.getByRole("link", { name: "Re-send this delivery" }).click();
    await expectAccessible(page, "resend-confirm");
    await page.getByRole("button", { name: "Re-send delivery" }).click();
    await page.waitForURL(`${base}/portal/deliveries/${mine}?notice=resent`);
    for (let i = 0; i < 100 && hook.ids.get(mine) !== 2; i++) await sleep(100);
    expect(hook.ids.get(mine)).toBe(2);

    await page.goto(`${base}/portal/settings`);
    await expectAccessible(page, "settings");

    // The token endpoint's test, from the endpoint's page: a token from the real receiver, in words.
    await page.goto(`${base}/portal`);
    await page.getByRole("button", { name: "Test connection" }).click();
    await page.getByRole("heading", { level: 2, name: "Connection test: a token was issued" }).waitFor();
    await expectAccessible(page, "connection-test");

    // Recover: a window in the future is refused on the form, then the last hour is recovered.
    await page.getByRole("link", { name: "Recover" }).click();
    await page.waitForURL(`${base}/portal/recover`);
    await expectAccessible(page, "recover");
    await page.getByLabel("Since").fill("2099-01-01T00:00");
    await page.getByRole("button", { name: "Recover failed deliveries" }).click();
    await page.getByText("No recovery was started.").waitFor();
    expect(await page.getByLabel("Since").inputValue()).toBe("2099-01-01T00:00");
    await expectAccessible(page, "recover-refused");
    await page.getByLabel("Since").fill(new Date(Date.now() - 3600_000).toISOString().slice(0, 16));
    await page.getByRole("button", { name: "Recover failed deliveries" }).click();
    await page.waitForURL(/\/portal\/recoveries\/rcv_[0-9a-z]+\?notice=recovery-started$/);
    await expectAccessible(page, "recovery");
    await page.goto(`${base}/portal/recover`);
    expect(await page.getByRole("region", { name: "Recoveries" }).count()).toBe(1);
    await expectAccessible(page, "recoveries");

    // The catalog before the organization describes any type: what the endpoint gets instead.
    await page.goto(`${base}/portal/catalog`);
    await page.getByRole("heading", { level: 2, name: "No event types described yet" }).waitFor();
    await expectAccessible(page, "catalog-empty");

    // The event catalog: a type with a schema and an example, keyway's operational types beside it.
    const type = await post<{ name: string }>("/v1/event-types", {
      name: "order.created",
      description: "An order was placed.",
      schema: { type: "object", required: ["order"], properties: { order: { type: "integer", description: "The order's number." } } },
      examples: [{ order: 1 }],
    });
    expect(type.status).toBe(201);
    await page.getByRole("link", { name: "Event catalog" }).click();
    await page.waitForURL(`${base}/portal/catalog`);
    await expectAccessible(page, "catalog");
    // Issue 42: an operational type is the organization's: no Subscribe button for a receiver.
    expect(await page.getByRole("button", { name: "Subscribe webhook.endpoint.disabled" }).count()).toBe(0);
    await page.goto(`${base}/portal/event-types/webhook.endpoint.disabled`);
    await expectAccessible(page, "event-type");
    await page.goto(`${base}/portal/event-types/order.created`);
    expect(await page.locator("pre").first().textContent()).toContain('"required": [');
    await expectAccessible(page, "event-type-schema");
    // Issue 42's new pages: sending an example, and the pause's confirmation.
    await page.goto(`${base}/portal/event-types/order.created/send-example`);
    await expectAccessible(page, "send-example");
    await page.goto(`${base}/portal/pause`);
    await expectAccessible(page, "pause-confirm");
    // The receiver's own filter: two more orders, a filter with a typo refused on the form, one
    // tried against the latest events (nothing sent), saved, and then a small order not sent here.
    for (const order of [5, 50]) expect((await post("/v1/events", { type: "order.created", data: { order } })).status).toBe(202);
    await page.getByRole("link", { name: "Filter", exact: true }).click();
    await page.waitForURL(`${base}/portal/filter`);
    await expectAccessible(page, "filter");
    await page.locator("#receiver_filter").fill('{"data": {"ordr": 5}}');
    await page.getByRole("button", { name: /^Try it against the last 20 events$/ }).click();
    await page.getByText("Nothing was tried.").waitFor();
    expect(await page.locator("#receiver_filter-error").textContent()).toMatch(
      /data\.ordr is not in the event type's schema.*did you mean "order"/,
    );
    await expectAccessible(page, "filter-refused");
    const sentBefore = hook.ids.size;
    await page.locator("#receiver_filter").fill('{"data": {"order": {"$gte": 10}}}');
    await page.getByRole("button", { name: /^Try it against the last 20 events$/ }).click();
    await page.getByRole("region", { name: "Events tried" }).waitFor();
    expect(await page.getByRole("status").filter({ hasText: "would be sent" }).textContent()).toMatch(/^1 of the latest 3 events/);
    await expectAccessible(page, "filter-tried");
    expect(hook.ids.size).toBe(sentBefore);
    await page.getByRole("button", { name: "Save" }).click();
    await page.waitForURL(`${base}/portal/filter?notice=filter-saved`);
    await expectAccessible(page, "filter-saved");
    const small = await post<{ deliveries: { webhook_configuration_id: string }[] }>("/v1/events", {
      type: "order.created",
      data: { order: 3 },
    });
    expect(small.data.deliveries.map((d) => d.webhook_configuration_id)).toEqual([configs[1]]);
    const catalog = await page.request.get(`${base}/portal/catalog/openapi.json`);
    expect(catalog.status()).toBe(200);
    expect(Object.keys(((await catalog.json()) as { webhooks: Record<string, unknown> }).webhooks)).toContain("order.created");

    await page.goto(`${base}/portal/rotate-signing-secret`);
    await expectAccessible(page, "rotate-confirm");
    await page.getByRole("button", { name: "Rotate signing secret" }).click();
    await page.getByRole("heading", { level: 1, name: "New signing secret" }).waitFor();
    expect(await page.getByLabel("signing secret").inputValue()).toMatch(/^whsec_/);
    await expectAccessible(page, "rotated");

    // The link again, in a fresh browser context: refused for good.
    const again = await browser.newContext({ viewport: WIDE });
    const second = await again.newPage();
    await second.goto(link.data.url);
    const [refused] = await Promise.all([
      second.waitForResponse((res) => res.request().method() === "POST" && new URL(res.url()).pathname === "/portal/open"),
      second.getByRole("button", { name: "Open the portal" }).click(),
    ]);
    expect(refused.status()).toBe(410);
    await expectAccessible(second, "refused");
    await again.close();

    await page.goto(`${base}/portal`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { level: 1, name: "Signed out" }).waitFor();
    await expectAccessible(page, "signed-out");
    expect((await page.goto(`${base}/portal`))?.status()).toBe(403);
    await context.close();
  });
});
