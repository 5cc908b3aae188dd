/**
 * The receiver's own filter and channels (docs/receivers.md, "The receiver's filter"), in workerd:
 * the portal's "Filter and channels" page narrows what the organization routes to the endpoint and
 * never widens it; "Try it" shows which of the latest events sent to the endpoint would still reach
 * it, lists none the organization's routing kept from it, and sends and writes nothing; its
 * answers agree with what a publish then does; every refusal is a 400 on the form naming the
 * field, never a 5xx; the organization's `filter` and `channels` are not the receiver's to change;
 * a schema change that would leave a receiver's filter matching nothing is refused.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { fakeNetwork, receiver } from "./fake-network";
import { body, createTenant, issueToken } from "./helpers";
import { type Org, RECEIVER_SECRET, session } from "./portal-helpers";
import { api, createConfig, webhooksOf } from "./webhook-helpers";

const ORDER = {
  type: "object",
  properties: { account: { type: "string" }, amount: { type: "integer" }, region: { type: "string", enum: ["eu", "us"] } },
  required: ["account", "amount"],
};

/**
 * An organization that routes account acct_1's orders to one endpoint (its own filter: the
 * customer's events and no other's), and six orders published: four of acct_1, two of acct_2.
 */
async function routedOrg(): Promise<Org & { published: { id: string; data: Record<string, unknown>; channels: string[] }[] }> {
  fakeNetwork(receiver());
  const t = await createTenant();
  const bearer = await issueToken(t);
  expect((await api(t, bearer, "/v1/event-types", "POST", { name: "order.created", schema: ORDER })).status).toBe(201);
  const config = await createConfig(t, bearer, RECEIVER_SECRET, { events: ["order.created"], filter: { data: { account: "acct_1" } } });
  // Another endpoint takes every order, so each event's payload is kept (the preview tries those).
  await createConfig(t, bearer, RECEIVER_SECRET, { events: ["order.created"], description: "all orders" });
  const orders: [Record<string, unknown>, string[]][] = [
    [{ account: "acct_1", amount: 50, region: "eu" }, ["eu"]],
    [{ account: "acct_1", amount: 150, region: "eu" }, ["eu"]],
    [{ account: "acct_2", amount: 900, region: "eu" }, ["eu"]],
    [{ account: "acct_1", amount: 500, region: "us" }, ["us"]],
    [{ account: "acct_2", amount: 5, region: "us" }, ["us"]],
    [{ account: "acct_1", amount: 7, region: "us" }, []],
  ];
  const published = [];
  for (const [data, channels] of orders) {
    const res = await api(t, bearer, "/v1/events", "POST", { type: "order.created", data, channels });
    const json = await body<{ id: string }>(res);
    expect(res.status, JSON.stringify(json)).toBe(202);
    published.push({ id: json.data.id, data, channels });
  }
  return { t, bearer, configs: [config], deliveries: [], published };
}

/** What a preview must not write: events, and fan-out rows (every delivery made gets one, numbered). */
const written = (o: Org) =>
  runInDurableObject(webhooksOf(o.t.orgId), (_i, state) =>
    state.storage.sql
      .exec(
        "SELECT (SELECT count(*) FROM events) AS events, (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'fanout') AS fanout",
      )
      .one(),
  );

/** The rows of the preview's table: event id, and "With this filter": sent or not. */
function triedRows(html: string): { id: string; would: boolean }[] {
  return [
    ...html.matchAll(/<span class="hint">(evt_[^<]+)<\/span>[\s\S]*?data-label="With this filter"><strong>(sent|not sent)<\/strong>/g),
  ].map((m) => ({ id: m[1] ?? "", would: m[2] === "sent" }));
}

describe("the portal's filter page", () => {
  it("shows the organization's routing as the provider's, and tries a filter against the latest events sent to the endpoint only, sending and writing nothing", async () => {
    const o = await routedOrg();
    const { b, csrf } = await session(o);
    const page = await (await b.get("/portal/filter")).text();
    expect(page).toMatch(/What the provider sends this endpoint/);
    expect(page).toContain("acct_1");
    expect(page).toMatch(/These are the provider&#39;s to change|These are the provider's to change/);
    const before = await written(o);
    const tried = await b.post("/portal/filter", {
      csrf,
      action: "try",
      receiver_filter: '{"data": {"amount": {"$gte": 100}}}',
      receiver_channels: "eu, us",
    });
    expect(tried.status).toBe(200);
    const html = await tried.text();
    const rows = triedRows(html);
    const acct1 = o.published.filter((e) => e.data.account === "acct_1");
    // Only acct_1's orders, the ones sent here: the organization's filter keeps acct_2's from this
    // endpoint, so the preview never shows them (not their ids, not their data).
    expect(rows.map((r) => r.id).sort()).toEqual(acct1.map((e) => e.id).sort());
    for (const e of o.published.filter((x) => x.data.account === "acct_2")) expect(html).not.toContain(e.id);
    expect(html).not.toContain('"amount":900');
    const expected = (e: (typeof acct1)[number]) => (e.data.amount as number) >= 100 && e.channels.length > 0;
    for (const e of acct1) expect(rows.find((r) => r.id === e.id)?.would, JSON.stringify(e)).toBe(expected(e));
    expect(html).toMatch(/2 of the latest 4 events sent to this endpoint would be sent/);
    expect(await written(o)).toEqual(before);
    const view = await body<{ receiver_filter: unknown; receiver_channels: unknown }>(
      await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`),
    );
    expect(view.data).toMatchObject({ receiver_filter: null, receiver_channels: null });
  });

  it("saves the receiver's filter and channels, and a publish then does what the preview said", async () => {
    const o = await routedOrg();
    const { b, csrf } = await session(o);
    // Channels matter here: acct_1's order of 500 carries "us" only.
    const fields = { csrf, receiver_filter: '{"data": {"amount": {"$gte": 100}}}', receiver_channels: "eu" };
    const rows = triedRows(await (await b.post("/portal/filter", { ...fields, action: "try" })).text());
    expect(rows).toHaveLength(4);
    expect(rows.filter((r) => r.would)).toHaveLength(1);
    const saved = await b.post("/portal/filter", { ...fields, action: "save" });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("location")).toBe("/portal/filter?notice=filter-saved");
    const shown = await (await b.get("/portal/filter?notice=filter-saved")).text();
    expect(shown).toMatch(/only if they match your filter and channels too/);
    const id = o.configs[0]?.id ?? "";
    const view = await body<{ filter: unknown; receiver_filter: unknown; receiver_channels: unknown }>(
      await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`),
    );
    expect(view.data).toEqual(
      expect.objectContaining({
        filter: { data: { account: "acct_1" } },
        receiver_filter: { data: { amount: { $gte: 100 } } },
        receiver_channels: ["eu"],
      }),
    );
    // Publish each tried event's data again: it reaches this endpoint exactly when the preview said.
    for (const r of rows) {
      const e = o.published.find((x) => x.id === r.id);
      const res = await api(o.t, o.bearer, "/v1/events", "POST", { type: "order.created", data: e?.data, channels: e?.channels });
      const to = (await body<{ deliveries: { webhook_configuration_id: string }[] }>(res)).data.deliveries.map(
        (d) => d.webhook_configuration_id,
      );
      expect(to.includes(id), r.id).toBe(r.would);
    }
    // And acct_2's largest order, which both of the receiver's layers would take, still does not:
    // the receiver narrows the organization's routing, never widens it.
    const other = await api(o.t, o.bearer, "/v1/events", "POST", {
      type: "order.created",
      data: { account: "acct_2", amount: 900 },
      channels: ["eu"],
    });
    expect(
      (await body<{ deliveries: { webhook_configuration_id: string }[] }>(other)).data.deliveries.map((d) => d.webhook_configuration_id),
    ).not.toContain(id);
    // Emptied, both are none again.
    expect((await b.post("/portal/filter", { csrf, action: "save", receiver_filter: "", receiver_channels: "" })).status).toBe(303);
    const cleared = await body<{ receiver_filter: unknown; receiver_channels: unknown }>(
      await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`),
    );
    expect(cleared.data).toMatchObject({ receiver_filter: null, receiver_channels: null });
  });

  it("answers every refusal with the form again, a 400 naming the field, for a try and a save alike", async () => {
    const o = await routedOrg();
    const { b, csrf } = await session(o);
    const cases: [string, string, RegExp][] = [
      ['{"data": {"amout": 5}}', "", /Your filter: data\.amout is not in the event type&#39;s schema.*did you mean &quot;amount&quot;/],
      ['{"data": {"amount": "many"}}', "", /Your filter: data\.amount /],
      ['{"data": {"account": {"$regex": "^acct"}}}', "", /Your filter.*\$regex/],
      ['{"data": ', "", /Your filter is not valid JSON/],
      ["[1, 2]", "", /Your filter/],
      [
        JSON.stringify({ data: { account: { $in: Array.from({ length: 101 }, (_, i) => `a${i}`) } } }),
        "",
        /Your filter: data\.account\.\$in lists 101 values; at most 100/,
      ],
      [
        JSON.stringify({ data: { account: { $in: Array.from({ length: 90 }, (_, i) => `${i}`.padStart(100, "x")) } } }),
        "",
        /Your filter is \d+ bytes serialized; at most 8192/,
      ],
      [`${'{"$not": '.repeat(20)}{}${"}".repeat(20)}`, "", /Your filter.*nests deeper than 16 levels/],
      ["", "eu, not a channel!", /Your channels: number 2 must be 1 to 128 letters/],
      ["", Array.from({ length: 11 }, (_, i) => `c${i}`).join(","), /Your channels/],
    ];
    const before = await written(o);
    for (const [filter, channels, said] of cases) {
      for (const action of ["try", "save"]) {
        const res = await b.post("/portal/filter", { csrf, action, receiver_filter: filter, receiver_channels: channels });
        const html = await res.text();
        expect(res.status, `${action} ${filter} ${channels}: ${html.slice(0, 200)}`).toBe(400);
        expect(html, `${action} ${filter}`).toMatch(said);
        expect(html).toContain(action === "try" ? "Nothing was tried." : "Nothing was changed.");
        // The text comes back as typed.
        if (filter !== "" && filter.length < 200) expect(html).toContain(filter.replaceAll('"', "&quot;").slice(0, 20));
      }
    }
    expect(await written(o)).toEqual(before);
  });
});

describe("the organization's routing stays the organization's", () => {
  it("a receiver's change of filter or channels is refused by the object itself, naming the field; its own layer is not", async () => {
    const o = await routedOrg();
    const id = o.configs[0]?.id ?? "";
    const stub = webhooksOf(o.t.orgId);
    const actor = { type: "receiver" as const, id: "pts_test", webhook_configuration_id: id };
    const widened = await stub.updateConfiguration(id, { filter: null }, actor, Date.now(), undefined, "receiver");
    expect(widened.ok).toBe(false);
    expect(JSON.stringify(widened)).toMatch(/filter.*organization's to change.*receiver_filter/);
    const channels = await stub.updateConfiguration(id, { channels: ["eu"] }, actor, Date.now(), undefined, "receiver");
    expect(JSON.stringify(channels)).toMatch(/channels.*organization's to change.*receiver_channels/);
    const own = await stub.updateConfiguration(id, { receiver_channels: ["eu"] }, actor, Date.now(), undefined, "receiver");
    expect(own).toMatchObject({ ok: true });
    // The organization may set or clear the receiver's layer too: the endpoint is its own.
    const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`, "PATCH", { receiver_channels: null });
    expect(res.status).toBe(200);
  });

  it("a schema change that would leave a receiver's filter matching nothing is refused, naming receiver_filter", async () => {
    const o = await routedOrg();
    const id = o.configs[0]?.id ?? "";
    const set = await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`, "PATCH", { receiver_filter: { data: { region: "eu" } } });
    expect(set.status, await set.clone().text()).toBe(200);
    const { region: _gone, ...properties } = ORDER.properties;
    const res = await api(o.t, o.bearer, "/v1/event-types/order.created", "PATCH", {
      schema: { ...ORDER, properties, additionalProperties: false },
    });
    const json = await body<unknown>(res);
    expect(res.status, JSON.stringify(json)).toBe(409);
    expect(JSON.stringify(json)).toContain(`${id}: receiver_filter.data.region`);
  });

  it("through GraphQL: receiverFilter and receiverChannels, the filter's keys as written", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    const schema = { type: "object", properties: { accountId: { type: "string" } } };
    expect((await api(t, bearer, "/v1/event-types", "POST", { name: "invoice.paid", schema })).status).toBe(201);
    const config = await createConfig(t, bearer, RECEIVER_SECRET, { events: ["invoice.paid"] });
    const receiverFilter = { data: { accountId: { $startsWith: "acct_" } } };
    const res = await api(t, bearer, "/v1/graphql", "POST", {
      query: `mutation($id: ID!, $input: UpdateWebhookConfigurationInput!) { updateWebhookConfiguration(id: $id, input: $input) { receiverFilter receiverChannels } }`,
      variables: { id: config.id, input: { receiverFilter, receiverChannels: ["eu"] } },
    });
    const json = (await res.json()) as { data?: { updateWebhookConfiguration: unknown }; errors?: unknown };
    expect(json.errors, JSON.stringify(json.errors)).toBeUndefined();
    expect(json.data?.updateWebhookConfiguration).toEqual({ receiverFilter, receiverChannels: ["eu"] });
    const read = await body<{ receiver_filter: unknown }>(await api(t, bearer, `/v1/webhook-configurations/${config.id}`));
    expect(read.data.receiver_filter).toEqual(receiverFilter);
  });
});
