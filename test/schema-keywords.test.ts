/**
 * Unknown keywords in an event type's JSON Schema (issue 42, item 5): a keyword that is not draft
 * 2020-12's (a misspelling such as `requried`, which the validator would ignore, so the schema
 * would check nothing) is refused when the type is created or changed, 400 naming it and its
 * path, however deep; `x-` extension keywords and property names that look like misspellings
 * pass; a schema stored before the rule is not checked again when only the examples or the
 * description change. Inside workerd, over REST and on lib/json-schema.ts directly.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { checkSchema } from "../src/lib/json-schema";
import { body, createTenant, issueToken, type Tenant } from "./helpers";
import { api, inWebhooks } from "./webhook-helpers";

let t: Tenant;
let token: string;

beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
});

const create = (name: string, schema: Record<string, unknown>) => api(t, token, "/v1/event-types", "POST", { name, schema });

describe("checkSchema: unknown keywords", () => {
  it.each([
    ["a misspelled required", { type: "object", properties: { name: { type: "string", requried: true } } }, "/properties/name/requried"],
    ["at the root", { type: "object", requried: ["a"] }, "/requried"],
    ["under items and allOf", { type: "array", items: { allOf: [{ type: "string", maxLenght: 3 }] } }, "/items/allOf/0/maxLenght"],
    ["in $defs, reached only by $ref", { $ref: "#/$defs/a", $defs: { a: { type: "object", propertys: {} } } }, "/$defs/a/propertys"],
    ["under patternProperties", { patternProperties: { "^a": { minimun: 1 } } }, "/patternProperties/^a/minimun"],
    ["under dependentSchemas", { dependentSchemas: { card: { requried: ["billing"] } } }, "/dependentSchemas/card/requried"],
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then (Core 10.2.2), not a thenable.
    ["under not and if/then", { not: { if: { type: "string" }, then: { patern: "^a" } } }, "/not/then/patern"],
    ["OpenAPI 3.0's nullable", { type: "string", nullable: true }, "/nullable"],
    ["OpenAPI's singular example", { type: "string", example: "a" }, "/example"],
  ])("refuses %s, naming the keyword's path", (_, schema, path) => {
    const r = checkSchema(schema as Record<string, unknown>);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.path).toBe(path);
      expect(r.message).toMatch(/^unknown keyword/);
    }
  });

  it("says which keyword a misspelling is likely to be", () => {
    const r = checkSchema({ type: "object", properties: { name: { requried: true } } });
    expect(r).toEqual({
      ok: false,
      path: "/properties/name/requried",
      message:
        'unknown keyword "requried": not a JSON Schema draft 2020-12 keyword (did you mean "required"?); extension keywords start with "x-"',
    });
    const other = checkSchema({ MaxLength: 3 });
    expect(!other.ok && other.message).toMatch(/did you mean "maxLength"\?/);
  });

  it("accepts x- extensions, property names that look like keywords, and every vocabulary's keywords", () => {
    const good: Record<string, unknown>[] = [
      { type: "object", "x-foo": { anything: ["goes"] }, properties: { a: { type: "string", "x-order": 1 } } },
      // Names under properties, $defs, patternProperties and dependentSchemas are not keywords.
      {
        type: "object",
        required: ["requried"],
        properties: { requried: { type: "boolean" }, nullable: { type: "string" }, "not a keyword": {} },
        patternProperties: { "^requried_": { type: "string" } },
        dependentSchemas: { requried: { required: ["nullable"] } },
        $defs: { minimun: { type: "number" } },
      },
      {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        $comment: "all vocabularies",
        title: "t",
        description: "d",
        default: {},
        deprecated: false,
        readOnly: false,
        writeOnly: false,
        examples: [{}],
        type: "object",
        minProperties: 0,
        maxProperties: 5,
        dependentRequired: { a: ["b"] },
        propertyNames: { maxLength: 10 },
        additionalProperties: false,
        unevaluatedProperties: false,
        properties: {
          a: {
            type: "string",
            format: "email",
            contentEncoding: "base64",
            contentMediaType: "text/plain",
            contentSchema: { type: "string" },
          },
          b: {
            type: "array",
            prefixItems: [{ const: 1 }],
            items: { enum: [1, 2] },
            contains: { const: 1 },
            minContains: 1,
            maxContains: 2,
          },
          c: { anyOf: [{ type: "integer", multipleOf: 2, exclusiveMinimum: 0 }, { oneOf: [{ type: "null" }, { type: "boolean" }] }] },
        },
      },
      { definitions: { a: { type: "string" } }, $ref: "#/definitions/a" },
    ];
    for (const schema of good) expect(checkSchema(schema), JSON.stringify(schema)).toEqual({ ok: true });
  });

  it("does not read the values of enum, const, default and examples as schemas", () => {
    expect(checkSchema({ enum: [{ requried: 1 }], const: { nullable: 1 }, default: { minimun: 1 }, examples: [{ patern: 1 }] })).toEqual({
      ok: true,
    });
  });
});

describe("event types over REST: unknown keywords", () => {
  it("are refused at create and update with 400 naming the keyword and its path; nothing is saved", async () => {
    const bad = await create("order.misspelled", { type: "object", properties: { name: { type: "string", requried: true } } });
    const json = await body(bad);
    expect(bad.status).toBe(400);
    expect(json.error).toBe("invalid_request");
    expect(json.developer_message).toContain('schema.properties.name.requried unknown keyword "requried"');
    expect((await api(t, token, "/v1/event-types/order.misspelled")).status).toBe(404);

    expect((await create("order.typed", { type: "object", properties: { name: { type: "string" } } })).status).toBe(201);
    const patched = await api(t, token, "/v1/event-types/order.typed", "PATCH", {
      schema: { type: "object", properties: { lines: { type: "array", items: { type: "object", additionalProperty: false } } } },
    });
    expect(patched.status).toBe(400);
    expect((await body(patched)).developer_message).toContain("schema.properties.lines.items.additionalProperty unknown keyword");
    const kept = await body<{ schema: unknown }>(await api(t, token, "/v1/event-types/order.typed"));
    expect(kept.data.schema).toEqual({ type: "object", properties: { name: { type: "string" } } });
  });

  it("accept x- extensions and a property named like a misspelled keyword", async () => {
    const schema = { type: "object", "x-foo": "bar", required: ["requried"], properties: { requried: { type: "string", "x-label": "R" } } };
    const res = await create("order.extended", schema);
    expect(res.status, JSON.stringify(await body(res.clone()))).toBe(201);
    // The extension checks nothing; the property named `requried` is required.
    expect((await api(t, token, "/v1/events", "POST", { type: "order.extended", data: { requried: "x" } })).status).toBe(202);
    const missing = await api(t, token, "/v1/events", "POST", { type: "order.extended", data: {} });
    expect(missing.status).toBe(400);
    expect((await body(missing)).developer_message).toContain("data.requried is required");
  });

  it("leave a schema stored before the rule alone: a change of the examples or description passes; a new schema is checked", async () => {
    expect((await create("order.legacy", { type: "object" })).status).toBe(201);
    // As saved before unknown keywords were refused.
    await inWebhooks(t.orgId, "UPDATE event_types SET schema = ? WHERE name = 'order.legacy'", '{"type":"object","requried":["id"]}');
    const patched = await api(t, token, "/v1/event-types/order.legacy", "PATCH", { description: "Old.", examples: [{ id: 1 }] });
    expect(patched.status, JSON.stringify(await body(patched.clone()))).toBe(200);
    const again = await api(t, token, "/v1/event-types/order.legacy", "PATCH", { schema: { type: "object", requried: ["id"] } });
    expect(again.status).toBe(400);
  });
});
