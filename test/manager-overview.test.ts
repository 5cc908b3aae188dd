/**
 * The manager's overview (identity/overview.ts, pages/overview.tsx; docs/manager.md "The
 * overview"), read as HTML in workerd: the last 24 hours' requests and webhook attempts with their
 * rates drawn from the objects' own counts, the endpoints that need a person (paused, disabled,
 * failing) and only those, the keys near a limit and only those, the latest audit entries, each a
 * link to its page; an organization administrator sees no API key; and the two rules, which key is
 * near and which endpoint needs attention, on plain data.
 */
import { describe, expect, it } from "vitest";
import { nearLimits, needsAttention } from "../src/identity/overview";
import type { Decision } from "../src/ratelimit/windows";
import type { WebhookConfiguration } from "../src/schemas/webhooks";
import { fakeNetwork, receiver, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, createTenant, issueToken } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, attemptNow, createConfig } from "./webhook-helpers";

describe("the manager's overview", () => {
  it("shows the organization's last 24 hours, the endpoints and keys that need a person, and its latest changes, each a link", async () => {
    const t = await createTenant({ per_second: 1000, per_day: 10 });
    const bearer = await issueToken(t);
    // 9 of the key's 10 a day: the token request, these, and the configurations' calls below.
    const healthy = await createConfig(t, bearer, "overview-secret-1", { description: "Healthy receiver" });
    const paused = await createConfig(t, bearer, "overview-secret-2", { description: "Paused receiver" });
    const failing = await createConfig(t, bearer, "overview-secret-3", { description: "Failing receiver" });
    expect((await api(t, bearer, `/v1/webhook-configurations/${paused.id}`, "PATCH", { status: "paused" })).status).toBe(200);
    const published = await api(t, bearer, "/v1/events", "POST", { type: "order.created", data: { n: 1 } });
    expect(published.status).toBe(202);
    const deliveries = ((await published.json()) as { data: { deliveries: { id: string; webhook_configuration_id: string }[] } }).data
      .deliveries;
    const of = (configId: string) => deliveries.find((d) => d.webhook_configuration_id === configId)?.id ?? "";
    // One attempt delivered, one refused by its receiver (a 500): the failing one, failing since.
    fakeNetwork(receiver({ token: "tok" }));
    await attemptNow(t, bearer, of(healthy.id));
    fakeNetwork({ ...receiver({ token: "tok" }), [WEBHOOK_URL]: () => new Response("no", { status: 500 }) });
    await attemptNow(t, bearer, of(failing.id));

    const b = await Browser.signedIn(ADMIN_TOKEN);
    const base = `/manager/organizations/${t.orgId}`;
    const res = await b.get(`${base}/overview`);
    expect(res.status).toBe(200);
    const html = await res.text();
    // Each section, its figures from the objects' counts.
    expect(html).toContain("<h1>Overview</h1>");
    expect(html).toMatch(/Webhook attempts<strong>2<\/strong>/);
    expect(html).toMatch(/Failed<strong>50%<\/strong>/);
    expect(html).toMatch(/API requests<strong>\d+<\/strong>/);
    // The charts' text equivalents carry the same counts.
    expect(html).toContain("Webhook attempts, last 24 hours: 1 succeeded, 1 failed in all");
    // The endpoints that need a person, and only those, each linking to its page and its failed deliveries.
    const attention = html.slice(html.indexOf("Endpoints that need attention"), html.indexOf("Keys near their limits"));
    expect(attention).toContain(`<a href="${base}/webhooks/${paused.id}">Paused receiver</a>`);
    expect(attention).toContain(`<a href="${base}/webhooks/${failing.id}">Failing receiver</a>`);
    expect(attention).toContain("failing: every attempt fails");
    expect(attention).toContain(`${base}/webhooks/${failing.id}?status=failed#deliveries`);
    expect(attention).not.toContain("Healthy receiver");
    // The key near its day's limit (at least 8 of 10 used), linking to its page.
    const keys = html.slice(html.indexOf("Keys near their limits"), html.indexOf("Recent changes"));
    expect(keys).toContain(`<a href="${base}/api-keys/${t.apiKeyId}">main</a>`);
    expect(keys).toMatch(/(8|9|10) of 10/);
    // The latest changes, each a link to the audit log narrowed to its resource.
    const recent = html.slice(html.indexOf("Recent changes"));
    expect(recent).toContain(`${base}/audit-log?resource_id=${paused.id}`);
    expect(recent).toContain(`<a href="${base}/audit-log">The whole audit log</a>`);
    // The overview is the first of the organization's sections, and marked current.
    expect(html).toContain(`<a href="${base}/overview" aria-current="page">Overview</a>`);
  });

  it("is where an organization administrator lands, without API keys (the operator's)", async () => {
    const t = await createTenant();
    const minted = await admin<{ token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, {});
    const b = new Browser();
    const signedIn = await b.signIn(minted.token);
    expect(signedIn.headers.get("location")).toBe(`/manager/organizations/${t.orgId}/overview`);
    const html = await (await b.get(`/manager/organizations/${t.orgId}/overview`)).text();
    expect(html).toContain("Webhook attempts");
    expect(html).not.toContain("API requests");
    expect(html).not.toContain("Keys near their limits");
    expect(html).not.toContain("/api-keys/");
    // Another organization's overview is not found.
    const other = await createTenant();
    expect((await b.get(`/manager/organizations/${other.orgId}/overview`)).status).toBe(404);
    expect((await new Browser().get(`/manager/organizations/${t.orgId}/overview`)).headers.get("location")).toBe("/manager/sign-in");
  });
});

describe("the overview's rules", () => {
  const usage = (used: number, limit: number, quota: Decision["quota"] = undefined): Decision => ({
    allowed: true,
    exceeded: null,
    second: { limit: 1, used: 0, remaining: 1, resetAt: 0 },
    day: { limit, used, remaining: limit - used, resetAt: 0 },
    now: 0,
    cost: 1,
    ...(quota ? { quota } : {}),
  });
  const key = { id: "key_1", name: "main" };

  it("calls a window near its limit from 80% used, today's and the organization quota's", () => {
    expect(nearLimits(key, usage(79, 100))).toEqual([]);
    expect(nearLimits(key, usage(80, 100))).toEqual([{ keyId: "key_1", keyName: "main", window: "today", used: 80, limit: 100 }]);
    expect(nearLimits(key, null)).toEqual([]);
    const quota = [{ name: "org_month" as const, limit: 1000, used: 950, remaining: 50, resetAt: 0, windowSeconds: 2_592_000 }];
    expect(nearLimits(key, usage(0, 100, quota)).map((n) => n.window)).toEqual(["organization quota (per month)"]);
  });

  it("needs a person for a disabled, paused or failing endpoint, the first that applies, and not for a healthy one", () => {
    const config = (status: WebhookConfiguration["status"], state: Partial<WebhookConfiguration["state"]> = {}) =>
      ({
        status,
        state: { lane: "fast", paused_until: null, pause_reason: null, failing_since: null, last_delivered_at: null, ...state },
      }) as WebhookConfiguration;
    expect(needsAttention(config("active"))).toBeNull();
    expect(needsAttention(config("disabled", { failing_since: "2026-12-01T00:00:00.000Z" }))).toBe("disabled");
    expect(needsAttention(config("paused"))).toBe("paused");
    expect(needsAttention(config("active", { pause_reason: "receiver asked (429)" }))).toBe("paused");
    expect(needsAttention(config("active", { failing_since: "2026-12-01T00:00:00.000Z" }))).toBe("failing");
  });
});
