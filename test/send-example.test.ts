/**
 * "Send an example" (issue 42, item 5): an event of a catalog type, its data an example (or as
 * edited), checked against the type's schema and sent to one configuration only, like the test
 * event. Over REST (`POST .../test` with `{event_type, data}`; without a body still
 * `webhook.test`), from the manager's event-type page and from the portal's: the receiver gets an
 * ordinary event of that type with the example's data, the other configuration nothing; data that
 * breaks the schema is refused naming the path, on the form with the text kept; the portal cannot
 * send keyway's operational types; the send is audited as `webhook_configuration.tested`.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { fakeNetwork, receiver, type Sent, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, BASE, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, attemptNow, createConfig } from "./webhook-helpers";

const RECEIVER_SECRET = "send-example-client-secret-0042";
const SCHEMA = {
  type: "object",
  required: ["order_id", "total"],
  properties: { order_id: { type: "string", pattern: "^ord_" }, total: { type: "integer", minimum: 0 } },
};
const EXAMPLES = [
  { order_id: "ord_1", total: 42 },
  { order_id: "ord_2", total: 0 },
];

interface Org {
  t: Tenant;
  bearer: string;
  configs: string[];
}

/** An organization with two configurations and `order.created` in its catalog (a schema, two examples). */
async function organization(): Promise<Org> {
  const t = await createTenant();
  const bearer = await issueToken(t);
  const configs = [];
  for (const description of ["first endpoint", "second endpoint"])
    configs.push((await createConfig(t, bearer, RECEIVER_SECRET, { description })).id);
  const res = await api(t, bearer, "/v1/event-types", "POST", { name: "order.created", schema: SCHEMA, examples: EXAMPLES });
  expect(res.status).toBe(201);
  return { t, bearer, configs };
}

/** Deliveries of a configuration, newest first, over REST. */
async function deliveriesOf(o: Org, config: string) {
  const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${config}/deliveries`);
  return (await body<{ id: string; event_type: string }[]>(res)).data;
}

/** The delivery's attempt made now; what the receiver got in its body. */
async function delivered(o: Org, sent: Sent[], deliveryId: string): Promise<{ type: string; data: unknown }> {
  expect((await attemptNow(o.t, o.bearer, deliveryId)).record.status).toBe("delivered");
  const webhook = sent.find((s) => s.url === WEBHOOK_URL && s.headers["webhook-id"] === deliveryId);
  expect(webhook).toBeDefined();
  return JSON.parse(webhook?.body ?? "{}") as { type: string; data: unknown };
}

async function auditOf(orgId: string) {
  const res = await call(`/admin/v1/organizations/${orgId}/audit-log`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  return (await body<{ action: string; actor: Record<string, string>; detail: { types?: string[] } | null }[]>(res)).data;
}

/** A textarea's content on a page, by id (as HTML: entities not decoded). */
const textarea = (html: string, id: string) => new RegExp(`<textarea id="${id}"[^>]*>([\\s\\S]*?)</textarea>`).exec(html)?.[1];
const escaped = (text: string) => text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

let sent: Sent[];
// fake-network.ts clears its routes after each test.
beforeEach(() => {
  sent = fakeNetwork(receiver());
});

describe("sending an example over REST", () => {
  it("sends the type's first example, or the data given, to that configuration only; without a body still webhook.test", async () => {
    const o = await organization();
    const [first = "", second = ""] = o.configs;
    const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${first}/test`, "POST", { event_type: "order.created" });
    const json = await body<{ type: string; deliveries: { id: string; webhook_configuration_id: string }[] }>(res);
    expect(res.status, JSON.stringify(json)).toBe(202);
    expect(json.data.type).toBe("order.created");
    expect(json.data.deliveries.map((d) => d.webhook_configuration_id)).toEqual([first]);
    expect(await delivered(o, sent, json.data.deliveries[0]?.id ?? "")).toMatchObject({ type: "order.created", data: EXAMPLES[0] });

    const edited = { order_id: "ord_77", total: 7 };
    const given = await api(o.t, o.bearer, `/v1/webhook-configurations/${first}/test`, "POST", {
      event_type: "order.created",
      data: edited,
    });
    const givenJson = await body<{ deliveries: { id: string }[] }>(given);
    expect(given.status).toBe(202);
    expect(await delivered(o, sent, givenJson.data.deliveries[0]?.id ?? "")).toMatchObject({ type: "order.created", data: edited });

    // Listed with its type at that configuration; the other has none.
    expect((await deliveriesOf(o, first)).filter((d) => d.event_type === "order.created")).toHaveLength(2);
    expect(await deliveriesOf(o, second)).toHaveLength(0);
    // Audited as a test, with its type (the hour's summary of tests names the types sent).
    const tested = (await auditOf(o.t.orgId)).find((e) => e.action === "webhook_configuration.tested");
    expect(tested?.detail?.types).toEqual(["order.created"]);
    // Without a body, as before: webhook.test.
    const test = await api(o.t, o.bearer, `/v1/webhook-configurations/${first}/test`, "POST");
    expect(test.status).toBe(202);
    expect((await body<{ type: string }>(test)).data.type).toBe("webhook.test");
  });

  it("refuses data that breaks the schema (naming the path), data without a type, a type outside the catalog", async () => {
    const o = await organization();
    const path = `/v1/webhook-configurations/${o.configs[0]}/test`;
    const bad = await api(o.t, o.bearer, path, "POST", { event_type: "order.created", data: { order_id: "ord_1", total: -1 } });
    expect(bad.status).toBe(400);
    expect((await body(bad)).developer_message).toContain("data.total is less than 0 (the schema of order.created)");
    const wrong = await api(o.t, o.bearer, path, "POST", { event_type: "order.created", data: { order_id: "x-1", total: 1 } });
    expect((await body(wrong)).developer_message).toContain("data.order_id");
    const untyped = await api(o.t, o.bearer, path, "POST", { data: { order_id: "ord_1", total: 1 } });
    expect(untyped.status).toBe(400);
    expect((await body(untyped)).developer_message).toContain("data must come with event_type");
    expect((await api(o.t, o.bearer, path, "POST", { event_type: "order.unknown" })).status).toBe(404);
    // A type without examples needs data.
    await api(o.t, o.bearer, "/v1/event-types", "POST", { name: "order.bare" });
    const bare = await api(o.t, o.bearer, path, "POST", { event_type: "order.bare" });
    expect(bare.status).toBe(400);
    expect((await body(bare)).developer_message).toContain("order.bare has no example");
    // Past the publish's bound: 413.
    const huge = await api(o.t, o.bearer, path, "POST", { event_type: "order.bare", data: { blob: "x".repeat(100 * 1024) } });
    expect(huge.status).toBe(413);
    // The organization may send its operational types.
    const operational = await api(o.t, o.bearer, path, "POST", { event_type: "webhook.endpoint.disabled" });
    expect(operational.status).toBe(202);
    expect(await deliveriesOf(o, o.configs[1] ?? "")).toHaveLength(0);
  });
});

describe("sending an example from the manager", () => {
  it("sends the example as edited to the chosen configuration, and keeps refused text on the form with the path", async () => {
    const o = await organization();
    const [first = "", second = ""] = o.configs;
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const typePath = `/manager/organizations/${o.t.orgId}/event-types/order.created`;
    const page = await (await b.get(typePath)).text();
    expect(page).toContain('<h2 id="send-example-heading">Send an example</h2>');
    expect(page).toContain(`action="${typePath}/send-example"`);
    expect(textarea(page, "data")).toBe(escaped(JSON.stringify(EXAMPLES[0], null, 2)));
    expect(page).toContain(`<option value="${first}">first endpoint</option>`);
    expect(page).toContain(`href="${typePath}?example=2#send-example"`);
    // Which keywords are checked, and which are annotations only.
    expect(page).toMatch(/Which keywords of the schema are checked/);
    expect(page).toMatch(/<code>format<\/code> is checked for date, time, date-time/);
    const second_ = await (await b.get(`${typePath}?example=2`)).text();
    expect(textarea(second_, "data")).toBe(escaped(JSON.stringify(EXAMPLES[1], null, 2)));
    const csrf = Browser.csrf(page);

    const badText = '{"order_id": "ord_1", "total": -3}';
    const refused = await b.post(`${typePath}/send-example`, { csrf, webhook_configuration_id: second, data: badText });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toMatch(/Nothing was sent\./);
    expect(refusedHtml).toMatch(/<p id="data-error" class="field-error" role="alert">Data: data\.total [^<]*order\.created\)<\/p>/);
    expect(textarea(refusedHtml, "data")).toBe(escaped(badText));
    expect(refusedHtml).toContain(`<option value="${second}" selected="">second endpoint</option>`);
    const notJson = await b.post(`${typePath}/send-example`, { csrf, webhook_configuration_id: second, data: "{total: 1" });
    expect(notJson.status).toBe(400);
    expect(await notJson.text()).toMatch(/id="data-error"[^>]*>Data is not valid JSON/);
    expect(await deliveriesOf(o, second)).toHaveLength(0);

    const data = { order_id: "ord_manager", total: 5 };
    const ok = await b.post(`${typePath}/send-example`, { csrf, webhook_configuration_id: second, data: JSON.stringify(data) });
    expect(ok.status).toBe(303);
    const location = ok.headers.get("location") ?? "";
    expect(location).toBe(`/manager/organizations/${o.t.orgId}/webhooks/${second}?event_type=order.created&notice=test-sent`);
    const list = await deliveriesOf(o, second);
    expect(list.map((d) => d.event_type)).toEqual(["order.created"]);
    expect(await deliveriesOf(o, first)).toHaveLength(0);
    expect(await delivered(o, sent, list[0]?.id ?? "")).toMatchObject({ type: "order.created", data });
    const shown = await (await b.get(location)).text();
    expect(shown).toMatch(/Test event published/);
    expect(shown).toContain(list[0]?.id ?? "-");
    // Without the CSRF token: refused, nothing sent.
    expect((await b.post(`${typePath}/send-example`, { webhook_configuration_id: second, data: "{}" })).status).toBe(403);
    // A disabled configuration: 409, said on the form, the text kept.
    expect((await api(o.t, o.bearer, `/v1/webhook-configurations/${first}`, "PATCH", { status: "disabled" })).status).toBe(200);
    const disabled = await b.post(`${typePath}/send-example`, { csrf, webhook_configuration_id: first, data: JSON.stringify(data) });
    expect(disabled.status).toBe(409);
    const disabledHtml = await disabled.text();
    expect(disabledHtml).toMatch(/Nothing was sent\.<\/strong> The webhook configuration is disabled/);
    expect(textarea(disabledHtml, "data")).toBe(escaped(JSON.stringify(data)));
    expect(await deliveriesOf(o, first)).toHaveLength(0);
  });
});

describe("sending an example from the portal", () => {
  async function portalSession(o: Org): Promise<{ b: Browser; csrf: string }> {
    const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]}/portal-links`, "POST", {});
    const url = (await body<{ url: string }>(res)).data.url;
    const b = new Browser();
    const openPage = await (await b.get(url.slice(BASE.length))).text();
    const opened = await b.post("/portal/open", { csrf: Browser.csrf(openPage), token: new URL(url).searchParams.get("token") ?? "" });
    expect(opened.status).toBe(303);
    return { b, csrf: await b.csrfOf("/portal") };
  }

  it("sends a catalog type's example to the session's endpoint only, refuses bad data on the form, never an operational type", async () => {
    const o = await organization();
    const [first = "", second = ""] = o.configs;
    const { b, csrf } = await portalSession(o);
    const typePage = await (await b.get("/portal/event-types/order.created")).text();
    expect(typePage).toContain('href="/portal/event-types/order.created/send-example"');
    expect(typePage).toMatch(/Which keywords of the schema are checked/);
    const catalog = await (await b.get("/portal/catalog")).text();
    expect(catalog).toMatch(/Which keywords of the schema are checked/);
    expect(catalog).not.toContain('href="/portal/event-types/webhook.endpoint.disabled/send-example"');

    const form = await b.get("/portal/event-types/order.created/send-example");
    expect(form.status).toBe(200);
    const formHtml = await form.text();
    expect(textarea(formHtml, "data")).toBe(escaped(JSON.stringify(EXAMPLES[0], null, 2)));
    expect(formHtml).not.toContain("webhook_configuration_id");
    expect(formHtml).toContain('href="/portal/event-types/order.created/send-example?example=2"');
    const picked = await (await b.get("/portal/event-types/order.created/send-example?example=2")).text();
    expect(textarea(picked, "data")).toBe(escaped(JSON.stringify(EXAMPLES[1], null, 2)));

    const badText = '{"order_id": "nope", "total": 1}';
    const refused = await b.post("/portal/event-types/order.created/send-example", { csrf, data: badText });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toMatch(/Nothing was sent\./);
    expect(refusedHtml).toMatch(
      /<p id="data-error" class="field-error" role="alert">Data: data\.order_id [^<]*<\/p>\s*<textarea id="data"[^>]*aria-invalid="true"/,
    );
    expect(textarea(refusedHtml, "data")).toBe(escaped(badText));
    expect(await deliveriesOf(o, first)).toHaveLength(0);

    const data = { order_id: "ord_portal", total: 9 };
    const ok = await b.post("/portal/event-types/order.created/send-example", { csrf, data: JSON.stringify(data) });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/portal/deliveries?event_type=order.created&notice=example-sent");
    const list = await deliveriesOf(o, first);
    expect(list.map((d) => d.event_type)).toEqual(["order.created"]);
    expect(await deliveriesOf(o, second)).toHaveLength(0);
    expect(await delivered(o, sent, list[0]?.id ?? "")).toMatchObject({ type: "order.created", data });
    const listed = await (await b.get(ok.headers.get("location") ?? "")).text();
    expect(listed).toMatch(/Example sent to this endpoint/);
    expect(listed).toContain(list[0]?.id ?? "-");
    const tested = (await auditOf(o.t.orgId)).find((e) => e.action === "webhook_configuration.tested");
    expect(tested?.actor).toMatchObject({ type: "receiver", webhook_configuration_id: first });
    expect(tested?.detail?.types).toEqual(["order.created"]);

    // keyway's operational types are the organization's: neither the form nor the send.
    expect((await b.get("/portal/event-types/webhook.endpoint.disabled/send-example")).status).toBe(403);
    const operational = await b.post("/portal/event-types/webhook.endpoint.disabled/send-example", { csrf, data: "{}" });
    expect(operational.status).toBe(403);
    expect(await operational.text()).toMatch(/only the organization can send it/);
    // Another organization's type is not found; without the CSRF token nothing is sent.
    expect((await b.post("/portal/event-types/order.unknown/send-example", { csrf, data: "{}" })).status).toBe(404);
    expect((await b.post("/portal/event-types/order.created/send-example", { data: JSON.stringify(data) })).status).toBe(403);
    expect(await deliveriesOf(o, first)).toHaveLength(1);
  });
});
