/**
 * The event catalog's OpenAPI 3.1.0 document (webhooks/catalog.ts), checked with a standard
 * parser (@readme/openapi-parser validates against the official 3.1 schema and resolves every
 * `$ref`). Runs in Node ("node" project, vitest.config.ts): the parser compiles with `new Function`,
 * which workerd forbids.
 */
import { validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { checkSchema, compileSchema } from "../src/lib/json-schema";
import { OPERATIONAL_SCHEMAS } from "../src/schemas/operational";
import type { EventTypeView } from "../src/schemas/receivers";
import { catalogDocument } from "../src/webhooks/catalog";

const T0 = "2025-01-01T00:00:00.000Z";
const type = (name: string, more: Partial<EventTypeView> = {}): EventTypeView => ({
  name,
  description: null,
  schema: null,
  examples: [],
  deprecated: false,
  operational: false,
  created_at: T0,
  updated_at: T0,
  ...more,
});

const TYPES = [
  type("order.created", {
    description: "An order was placed.",
    schema: {
      type: "object",
      required: ["id", "lines"],
      properties: { id: { type: "string" }, lines: { type: "array", items: { $ref: "#/$defs/line" } }, parent: { $ref: "#" } },
      $defs: { line: { $anchor: "line", type: "object", properties: { qty: { type: "integer" }, next: { $ref: "#line" } } } },
    },
    examples: [{ id: "o1", lines: [{ qty: 1 }] }],
  }),
  type("order.legacy", { deprecated: true, schema: { type: "object" } }),
  type("note.added"),
];

const strip = (doc: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(doc)) as Record<string, unknown>;

describe("the catalog document", () => {
  const doc = catalogDocument({ id: "org_1", name: "Acme" }, TYPES, { apiUrl: "https://api.example.com" });

  it("is a valid OpenAPI 3.1.0 document whose references all resolve", async () => {
    const result = await validate(strip(doc) as never);
    expect(result).toMatchObject({ valid: true });
  });

  it("has one webhook per type, operational ones included, deprecated marked, data as the type's schema", () => {
    const webhooks = doc.webhooks as Record<string, { post: Record<string, unknown> }>;
    expect(Object.keys(webhooks).sort()).toEqual(
      ["note.added", "order.created", "order.legacy", ...Object.keys(OPERATIONAL_SCHEMAS)].sort(),
    );
    expect(webhooks["order.legacy"]?.post.deprecated).toBe(true);
    expect(webhooks["order.created"]?.post.deprecated).toBeUndefined();
    type Body = { content: Record<string, { schema: { properties: Record<string, unknown> } }> };
    const dataOf = (name: string): unknown =>
      (webhooks[name]?.post.requestBody as Body | undefined)?.content["application/json"]?.schema.properties.data;
    expect(dataOf("order.created")).toEqual({ $ref: "#/components/schemas/order.created.data" });
    expect(dataOf("note.added")).toEqual({});
  });

  it("moves local references with the schema, anchors becoming pointers", () => {
    const schemas = (
      doc.components as {
        schemas: Record<string, { properties: Record<string, unknown>; $defs: Record<string, { properties: Record<string, unknown> }> }>;
      }
    ).schemas;
    const order = schemas["order.created.data"];
    expect(order?.properties.parent).toEqual({ $ref: "#/components/schemas/order.created.data" });
    expect(order?.properties.lines).toEqual({ type: "array", items: { $ref: "#/components/schemas/order.created.data/$defs/line" } });
    expect(order?.$defs.line?.properties.next).toEqual({ $ref: "#/components/schemas/order.created.data/$defs/line" });
  });

  it("the operational schemas are valid schemas their own examples pass", () => {
    for (const [name, entry] of Object.entries(OPERATIONAL_SCHEMAS)) {
      expect(checkSchema(entry.schema), name).toEqual({ ok: true });
      expect(compileSchema(entry.schema).validate(entry.example), name).toEqual({ ok: true });
    }
    const disabled = compileSchema(OPERATIONAL_SCHEMAS["webhook.endpoint.disabled"].schema);
    expect(disabled.validate({ webhook_configuration_id: "whc_1", url: "https://r.example/h", reason: "gone_410", at: T0 })).toEqual({
      ok: true,
    });
    expect(disabled.validate({ url: "https://r.example/h" }).ok).toBe(false);
  });

  it("the parser refuses a broken document (this test can fail)", async () => {
    const broken = strip(doc);
    const post = (broken.webhooks as Record<string, { post: Record<string, unknown> }>)["order.created"]?.post;
    if (post !== undefined) post.responses = "none";
    expect((await validate(broken as never)).valid).toBe(false);
    const dangling = strip(doc);
    delete (dangling.components as { schemas: Record<string, unknown> }).schemas["order.created.data"];
    expect((await validate(dangling as never)).valid).toBe(false);
  });
});
