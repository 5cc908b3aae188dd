/**
 * The event-type catalog over REST (issue 30, item 1): create, read, list, change and delete a
 * type with its JSON Schema and examples; a publish whose `data` breaks its type's schema is 400
 * naming the path, a valid one is accepted; the organization's setting refuses unknown types;
 * keyway's `webhook.` names are its own; a hostile schema is refused when saved, and no schema
 * can make a publish answer 5xx; the catalog is an OpenAPI 3.1 document with a `webhooks` entry
 * per type; every change is audited; another organization sees none of it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { EventTypeView, WebhookSettingsView } from "../src/schemas/receivers";
import { admin, body, createTenant, issueToken, type Tenant } from "./helpers";
import { api, createConfig } from "./webhook-helpers";

let t: Tenant;
let token: string;

const ORDER = {
  type: "object",
  required: ["order_id", "items"],
  properties: {
    order_id: { type: "string" },
    items: {
      type: "array",
      items: { type: "object", required: ["sku", "price"], properties: { sku: { type: "string" }, price: { type: "number", minimum: 0 } } },
    },
  },
};
const GOOD = { order_id: "o-1", items: [{ sku: "a", price: 3 }] };

beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
  await createConfig(t, token, "receiver-secret");
});

const post = (path: string, payload: unknown) => api(t, token, path, "POST", payload);

describe("event types", () => {
  it("are created with a schema and examples, read, listed, changed and deleted", async () => {
    const res = await post("/v1/event-types", {
      name: "order.created",
      description: "An order was placed.",
      schema: ORDER,
      examples: [GOOD],
    });
    const created = await body<EventTypeView>(res);
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(res.headers.get("location")).toBe("/v1/event-types/order.created");
    expect(created.data).toMatchObject({ name: "order.created", schema: ORDER, examples: [GOOD], deprecated: false, operational: false });
    expect((await post("/v1/event-types", { name: "order.created" })).status).toBe(409);

    const got = await body<EventTypeView>(await api(t, token, "/v1/event-types/order.created"));
    expect(got.data.schema).toEqual(ORDER);
    const list = await body<EventTypeView[]>(await api(t, token, "/v1/event-types"));
    expect(list.data.map((e) => e.name)).toEqual(
      expect.arrayContaining(["order.created", "webhook.endpoint.disabled", "webhook.delivery.exhausted"]),
    );
    expect(list.data.find((e) => e.name === "webhook.endpoint.disabled")?.operational).toBe(true);

    const patched = await body<EventTypeView>(await api(t, token, "/v1/event-types/order.created", "PATCH", { deprecated: true }));
    expect(patched.data).toMatchObject({ deprecated: true, schema: ORDER });

    await post("/v1/event-types", { name: "order.deleted" });
    expect((await api(t, token, "/v1/event-types/order.deleted", "DELETE")).status).toBe(200);
    expect((await api(t, token, "/v1/event-types/order.deleted")).status).toBe(404);

    const audit = await admin<{ action: string; resource: { id: string } }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    const actions = audit.filter((e) => e.action.startsWith("event_type.")).map((e) => `${e.action} ${e.resource.id}`);
    expect(actions).toEqual(
      expect.arrayContaining(["event_type.created order.created", "event_type.updated order.created", "event_type.deleted order.deleted"]),
    );
  });

  it("validate a publish's data: 400 naming the failing path, and a valid one is accepted", async () => {
    await post("/v1/event-types", { name: "invoice.paid", schema: ORDER });
    const bad = await post("/v1/events", { type: "invoice.paid", data: { order_id: "o-2", items: [{ sku: "a", price: -1 }] } });
    const json = await body(bad);
    expect(bad.status).toBe(400);
    expect(json.error).toBe("invalid_request");
    expect(json.developer_message).toContain("data.items.0.price");
    const missing = await body(await post("/v1/events", { type: "invoice.paid", data: { items: [] } }));
    expect(missing.developer_message).toMatch(/order_id/);
    const ok = await post("/v1/events", { type: "invoice.paid", data: GOOD });
    expect(ok.status).toBe(202);
  });

  it("refuse examples that break the schema, naming the example and path", async () => {
    const res = await post("/v1/event-types", { name: "refund.created", schema: ORDER, examples: [GOOD, { order_id: 5, items: [] }] });
    const json = await body(res);
    expect(res.status).toBe(400);
    expect(json.developer_message).toContain("examples.1");
    // A PATCH of the schema alone re-checks the examples kept.
    await post("/v1/event-types", { name: "refund.issued", examples: [{ order_id: 5 }] });
    const patched = await api(t, token, "/v1/event-types/refund.issued", "PATCH", { schema: ORDER });
    expect(patched.status).toBe(400);
  });

  it("refuse a hostile schema when saved: remote $ref, a catastrophic pattern, depth, size (lib/json-schema.ts has the full list)", async () => {
    const hostile: Record<string, unknown>[] = [
      { $ref: "https://evil.example/schema.json" },
      { type: "string", pattern: "^(a+)+$" },
      JSON.parse(`${'{"items":'.repeat(40)}{}${"}".repeat(40)}`) as Record<string, unknown>,
      { type: "object", description: "x".repeat(70 * 1024) },
    ];
    for (const schema of hostile) {
      const res = await post("/v1/event-types", { name: "hostile.case", schema });
      expect(res.status, JSON.stringify(schema).slice(0, 80)).toBe(400);
      expect((await body(res)).developer_message).toContain("schema");
    }
    // Past the route's body limit: 413 before anything is parsed.
    const huge = await post("/v1/event-types", { name: "hostile.case", schema: { type: "object", description: "x".repeat(140 * 1024) } });
    expect(huge.status).toBe(413);
  });

  it("keep webhook. names for keyway: not created, not changed, not published by a client", async () => {
    expect((await post("/v1/event-types", { name: "webhook.custom" })).status).toBe(409);
    expect((await api(t, token, "/v1/event-types/webhook.endpoint.disabled", "PATCH", { deprecated: true })).status).toBe(409);
    expect((await api(t, token, "/v1/event-types/webhook.endpoint.disabled", "DELETE")).status).toBe(409);
    const res = await post("/v1/events", { type: "webhook.endpoint.disabled", data: {} });
    expect(res.status).toBe(400);
    expect((await body(res)).developer_message).toContain("type");
  });

  it("refuse unknown types when the organization's setting says so", async () => {
    expect((await post("/v1/events", { type: "shipment.lost", data: {} })).status).toBe(202);
    const set = await body<WebhookSettingsView>(await api(t, token, "/v1/webhook-settings", "PATCH", { refuse_unknown_event_types: true }));
    expect(set.data).toEqual({
      refuse_unknown_event_types: true,
      portal_frame_origins: [],
      portal_display_name: null,
      portal_accent_color: null,
      portal_logo: null,
    });
    const refused = await post("/v1/events", { type: "shipment.lost", data: {} });
    expect(refused.status).toBe(400);
    expect((await body(refused)).developer_message).toContain("catalog");
    expect((await post("/v1/events", { type: "invoice.paid", data: GOOD })).status).toBe(202);
    await api(t, token, "/v1/webhook-settings", "PATCH", { refuse_unknown_event_types: false });
    const origins = await api(t, token, "/v1/webhook-settings", "PATCH", { portal_frame_origins: ["http://insecure.example"] });
    expect(origins.status).toBe(400);
  });

  it("are served as an OpenAPI 3.1 document with a webhooks entry per type", async () => {
    const res = await api(t, token, "/v1/event-catalog");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; webhooks: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.webhooks)).toEqual(expect.arrayContaining(["order.created", "invoice.paid", "webhook.endpoint.disabled"]));
  });

  it("are the organization's own: another organization's token sees none", async () => {
    const other = await createTenant();
    const otherToken = await issueToken(other);
    expect((await api(other, otherToken, "/v1/event-types/order.created")).status).toBe(404);
    const list = await body<EventTypeView[]>(await api(other, otherToken, "/v1/event-types"));
    expect(list.data.every((e) => e.operational)).toBe(true);
    // Its publishes of the same name are not validated by this organization's schema.
    expect((await api(other, otherToken, "/v1/events", "POST", { type: "invoice.paid", data: { nothing: true } })).status).toBe(202);
  });
});
