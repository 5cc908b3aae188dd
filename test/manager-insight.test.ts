/**
 * The manager looking into deliveries and traffic (issue 23): a configuration's page with its
 * health figures and charts drawn from the endpoint's counts, deliveries filtered by status and
 * event type, searched by event id and webhook-id, paged to the end; a delivery's full story
 * (payload, the request headers with the token and signature masked, each attempt); rotating the
 * signing secret behind a confirmation, the new secret shown once and the old one still signing;
 * an API key's page with its traffic charts; lists of organizations and the audit log paged with
 * cursors. Pages are read as HTML, the way the browser tests' axe and layout checks cannot: the
 * numbers in the charts' text equivalents are the API's numbers.
 */
import { describe, expect, it } from "vitest";
import type { WebhookConfigurationView, WebhookTrafficView } from "../src/schemas/webhooks";
import { fakeNetwork, receiver } from "./fake-network";
import { ADMIN_TOKEN, admin, body, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, attemptNow, createConfig } from "./webhook-helpers";

const FAST = { per_second: 1000, per_day: 100_000 };

async function publish(t: Tenant, bearer: string, type: string): Promise<{ event: string; delivery: string }> {
  const res = await api(t, bearer, "/v1/events", "POST", { type, data: { order: "A-1", note: "hello <b>" } });
  const json = await body<{ id: string; deliveries: { id: string }[] }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return { event: json.data.id, delivery: json.data.deliveries[0]!.id };
}

/** The delivery ids in a configuration page's Deliveries table, in order. */
const deliveryIds = (html: string): string[] =>
  [...html.matchAll(/<a href="[^"]*\/deliveries\/(msg_[0-9a-z]{26})"><code>/g)].map((m) => m[1]!);
const nextHref = (html: string): string | undefined => /<a href="([^"]+)">Next page<\/a>/.exec(html)?.[1]?.replaceAll("&amp;", "&");

async function setup() {
  const t = await createTenant(FAST);
  const bearer = await issueToken(t);
  const created = await createConfig(t, bearer, "insight-receiver-secret", { description: "Orders at Acme" });
  const b = await Browser.signedIn(ADMIN_TOKEN);
  const page = `/manager/organizations/${t.orgId}/webhooks/${created.id}`;
  return { t, bearer, config: created.id, signingSecret: created.signing_secret, b, page };
}

describe("a webhook configuration's page", () => {
  it("is titled by its description, shows the last 24 hours' health and charts with the API's numbers", async () => {
    const s = await setup();
    const ok = (await publish(s.t, s.bearer, "order.created")).delivery;
    const bad = (await publish(s.t, s.bearer, "order.created")).delivery;
    fakeNetwork(receiver());
    await attemptNow(s.t, s.bearer, ok);
    fakeNetwork(receiver({ webhookStatus: 503 }));
    await attemptNow(s.t, s.bearer, bad);

    const html = await (await s.b.get(s.page)).text();
    expect(html).toContain("<title>Webhook: Orders at Acme - keyway manager</title>");
    expect(html).toMatch(/Success rate, 24 h<strong>50%<\/strong>/);
    expect(html).toMatch(/Failed, 24 h<strong>1<\/strong>/);
    // Two charts, each an SVG group with a name and a summary, and a table of the same numbers;
    // each bucket is focusable and named by its values (and titled for the mouse).
    expect(html.match(/<svg [^>]*role="group"/g)).toHaveLength(2);
    expect(html.match(/<g class="bar" tabindex="0" role="img" aria-label="[^"]+: \d+ succeeded, \d+ failed">/g)).toHaveLength(24 + 30);
    expect(html).toContain("Attempts, last 24 hours: 1 succeeded, 1 failed in all; the busiest hour had 2.");
    const traffic = (await body<WebhookTrafficView>(await api(s.t, s.bearer, `/v1/webhook-configurations/${s.config}/traffic`))).data;
    const hour = traffic.hours.at(-1)!;
    expect(html).toContain(
      `<td data-label="Hour (UTC)">${hour.start.slice(0, 10)} ${hour.start.slice(11, 16)}</td><td data-label="Succeeded">1</td><td data-label="Failed">1</td>`,
    );
    // Bars: one good and one bad segment for this hour (and this day).
    expect(html.match(/<rect class="bar-good"/g)).toHaveLength(2);
    expect(html.match(/<rect class="bar-bad"/g)).toHaveLength(2);
  });

  it("filters deliveries by status and event type, finds one by event id or webhook-id, and pages to the end keeping the filters", async () => {
    const s = await setup();
    const orders: string[] = [];
    for (let i = 0; i < 27; i++) orders.push((await publish(s.t, s.bearer, "order.created")).delivery);
    const refund = await publish(s.t, s.bearer, "refund.issued");
    fakeNetwork(receiver());
    await attemptNow(s.t, s.bearer, orders[3]!);

    // 28 deliveries: 25 on the first page, 3 on the next.
    const first = await (await s.b.get(s.page)).text();
    expect(deliveryIds(first)).toEqual([refund.delivery, ...orders.slice(-24).reverse()]);
    const next = nextHref(first);
    expect(next).toBeDefined();
    const second = await (await s.b.get(next!)).text();
    expect(deliveryIds(second)).toEqual(orders.slice(0, 3).reverse());
    expect(nextHref(second)).toBeUndefined();
    expect(second).toContain(">First page</a>");

    // Event type, across pages: the cursor link keeps the filter.
    const typed = await (await s.b.get(`${s.page}?event_type=order.created`)).text();
    expect(deliveryIds(typed)).toHaveLength(25);
    expect(nextHref(typed)).toContain("event_type=order.created");
    expect(deliveryIds(await (await s.b.get(nextHref(typed)!)).text())).toEqual(orders.slice(0, 2).reverse());
    expect(deliveryIds(await (await s.b.get(`${s.page}?status=delivered`)).text())).toEqual([orders[3]]);
    expect(deliveryIds(await (await s.b.get(`${s.page}?q=${refund.event}`)).text())).toEqual([refund.delivery]);

    // A webhook-id opens its delivery; one that is not this configuration's says so.
    const found = await s.b.get(`${s.page}?q=${orders[5]}`);
    expect(found.status).toBe(303);
    expect(found.headers.get("location")).toBe(`${s.page}/deliveries/${orders[5]}`);
    const missing = await (await s.b.get(`${s.page}?q=msg_00000000000000000000000000`)).text();
    expect(missing).toContain("No delivery msg_00000000000000000000000000 of this configuration.");

    // What is not a filter is refused with the reason, on the page.
    const wrong = await s.b.get(`${s.page}?status=lost`);
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain("status");
    expect((await s.b.get(`${s.page}?q=DROP%20TABLE`)).status).toBe(400);
  });
});

describe("a delivery's page", () => {
  it("tells its whole story: the payload, the headers sent (token and signature masked), each attempt with the receiver's answer", async () => {
    const s = await setup();
    const { delivery, event } = await publish(s.t, s.bearer, "order.created");
    fakeNetwork(receiver({ webhookStatus: 500, token: "receiver-access-token-do-not-show" }));
    await attemptNow(s.t, s.bearer, delivery);
    fakeNetwork(receiver());
    await attemptNow(s.t, s.bearer, delivery);

    const html = await (await s.b.get(`${s.page}/deliveries/${delivery}`)).text();
    expect(html).toContain("<title>Delivery of order.created - keyway manager</title>");
    expect(html).toContain(`data-copy-text="${delivery}"`);
    expect(html).toContain(`data-copy-text="${event}"`);
    // The payload, escaped.
    expect(html).toContain("&quot;order&quot;: &quot;A-1&quot;");
    expect(html).toContain("hello &lt;b&gt;");
    // The request: the names of every header, the masked values; no secret in any form.
    for (const name of ["Content-Type", "Authorization", "webhook-id", "webhook-timestamp", "webhook-signature", "User-Agent"]) {
      expect(html).toContain(`<code>${name}</code>`);
    }
    expect(html).toContain("Bearer •••• (the receiver&#39;s access token");
    for (const secret of ["receiver-access-token-do-not-show", s.signingSecret, s.signingSecret.slice(6), "insight-receiver-secret"]) {
      expect(html).not.toContain(secret);
    }
    // Both attempts, oldest first, with their outcome badges.
    expect(html.match(/<span class="badge status-retry">retry<\/span>/g)).toHaveLength(1);
    expect(html.match(/<span class="badge status-delivered">delivered<\/span>/g)?.length).toBeGreaterThanOrEqual(2);
  });
});

describe("rotating a signing secret in the manager", () => {
  it("asks first, then shows the new secret once; the API lists both secrets' overlap", async () => {
    const s = await setup();
    const confirm = await s.b.get(`${s.page}/rotate-signing-secret`);
    const form = await confirm.text();
    expect(form).toContain(`Rotate the signing secret of webhook configuration “Orders at Acme” (${s.config}`);
    const rotated = await s.b.post(`${s.page}/rotate-signing-secret`, { csrf: Browser.csrf(form) });
    expect(rotated.status).toBe(200);
    const html = await rotated.text();
    const secret = /id="signing-secret" class="secret" type="text" readonly="" value="(whsec_[^"]+)"/.exec(html)?.[1];
    expect(secret).toBeDefined();
    expect(secret).not.toBe(s.signingSecret);
    expect(html).toContain("Each webhook carries one signature");
    // The previous secret's grace as a time, not "until in 1 day".
    expect(html).toMatch(/the previous\s+one for 24 hours more \(until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/);
    expect(html).not.toMatch(/until <time/);
    // Shown once: the configuration page does not show it.
    expect(await (await s.b.get(s.page)).text()).not.toContain(secret!);
    const view = (await body<WebhookConfigurationView>(await api(s.t, s.bearer, `/v1/webhook-configurations/${s.config}`))).data;
    expect(JSON.stringify(view)).not.toContain(secret!);
    const audit = await admin<{ action: string }[]>("GET", `/organizations/${s.t.orgId}/audit-log`);
    expect(audit.map((e) => e.action)).toContain("webhook_configuration.signing_secret_rotated");
  });
});

describe("an API key's page", () => {
  it("is titled by the key's name and draws its requests admitted and refused", async () => {
    const t = await createTenant({ per_second: 1, per_day: 1000 });
    const bearer = await issueToken(t);
    const statuses = await Promise.all([0, 1, 2].map(() => api(t, bearer, "/v1/me").then((r) => r.status)));
    const refused = statuses.filter((st) => st === 429).length;
    expect(refused).toBeGreaterThan(0);
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const html = await (await b.get(`/manager/organizations/${t.orgId}/api-keys/${t.apiKeyId}`)).text();
    expect(html).toMatch(/<title>API key: [^<]+ - keyway manager<\/title>/);
    expect(html.match(/<svg [^>]*role="group"/g)).toHaveLength(2);
    const admitted = 1 + statuses.filter((st) => st === 200).length; // and the token request
    expect(html).toContain(`Requests, last 24 hours: ${admitted} admitted, ${refused} refused (429) in all`);
  });
});

describe("long lists in the manager", () => {
  it("page the audit log past its first 100 entries with a cursor", async () => {
    const t = await createTenant();
    for (let i = 0; i < 101; i++) await admin("POST", `/organizations/${t.orgId}/users`, { name: `User ${i}` });
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const first = await (await b.get(`/manager/organizations/${t.orgId}/audit-log`)).text();
    const next = nextHref(first);
    expect(next).toMatch(/^\/manager\/organizations\/org_[0-9a-z]+\/audit-log\?cursor=/);
    const second = await (await b.get(next!)).text();
    expect(second).toContain(">First page</a>");
    // The oldest entries are on the second page: the organization's own creation among them.
    expect(second).toContain("organization.created");
    expect(first).not.toContain("organization.created");
  });
});

describe("quotas and credits in the manager", () => {
  it("lets the operator set an organization's shared quota and top up or reset a key's credits, and shows them", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const settings = `/manager/organizations/${t.orgId}`;
    const before = await (await b.get(settings)).text();
    expect(before).toContain("No shared quota");
    const saved = await b.post(`${settings}/quota`, { csrf: Browser.csrf(before), per_second: "", per_day: "500", per_month: "" });
    expect(saved.status).toBe(303);
    expect((await admin<{ limits: unknown }>("GET", `/organizations/${t.orgId}`)).limits).toEqual({ per_day: 500 });
    expect(await (await b.get(settings)).text()).toContain("All the organization&#39;s API keys together: 500 per UTC day");
    // Above the ceiling (QUOTA_CEILING_PER_SECOND, 10,000/s since issue 33) is refused with 400.
    const tooFast = await b.post(`${settings}/quota`, { csrf: Browser.csrf(before), per_second: "20000", per_day: "", per_month: "" });
    expect(tooFast.status).toBe(400);

    const keyPage = `/manager/organizations/${t.orgId}/api-keys/${t.apiKeyId}`;
    const page = await (await b.get(keyPage)).text();
    expect(page).toContain("No credits");
    const topUp = await b.post(`${keyPage}/credits`, { csrf: Browser.csrf(page), action: "add", amount: "7" });
    expect(topUp.status).toBe(303);
    expect(topUp.headers.get("location")).toBe(`${keyPage}?notice=credits-saved`);
    expect(await (await b.get(keyPage)).text()).toMatch(/<strong>7<\/strong> credits left; never refilled/);
    await b.post(`${keyPage}/credits`, { csrf: Browser.csrf(page), action: "set", amount: "2" });
    const shown = await (await b.get(keyPage)).text();
    expect(shown).toMatch(/<strong>2<\/strong> credits left/);
    expect(shown).toContain("Its organization&#39;s shared quota: 0 of 1000 this second (1000 left); 0 of 500 this UTC day (500 left)");
    const audit = await admin<{ action: string }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    expect(audit.map((e) => e.action)).toEqual(
      expect.arrayContaining(["api_key.credits_added", "api_key.credits_set", "organization.quota_changed"]),
    );
  });
});
