/**
 * Event-type schemas (webhooks/event-schema.ts), inside workerd: a schema is checked when saved
 * (size, depth, references, patterns), and validation of `data` answers the failing path. Running
 * here proves the validator needs no eval.
 */
import { describe, expect, it } from "vitest";
import { checkExamples, checkSchema, compileSchema, patternRisk, pointerSegments } from "../../src/lib/json-schema";

const ORDER = {
  type: "object",
  required: ["id", "items"],
  properties: {
    id: { type: "string", pattern: "^ord_[A-Za-z0-9]{8,32}$" },
    customer: { type: "object", properties: { email: { type: "string", format: "email" } } },
    items: { type: "array", items: { $ref: "#/$defs/item" }, maxItems: 100 },
    total: { type: "integer", minimum: 0 },
  },
  $defs: {
    item: {
      type: "object",
      required: ["sku", "price"],
      properties: {
        sku: { type: "string" },
        price: { type: "number", minimum: 0 },
        tags: { type: "array", uniqueItems: true, maxItems: 10 },
      },
    },
  },
};

describe("checkSchema", () => {
  it("accepts ordinary schemas", () => {
    const good: Record<string, unknown>[] = [
      ORDER,
      {},
      { $schema: "https://json-schema.org/draft/2020-12/schema", type: ["string", "null"] },
      { type: "object", properties: { a: { $ref: "#node" } }, $defs: { n: { $anchor: "node", type: "string" } } },
      // Recursion that descends into the data is fine.
      { type: "object", properties: { children: { type: "array", items: { $ref: "#" } } } },
      { type: "string", format: "regex" },
      { type: "string", pattern: "^(GET|POST|PUT)$" },
      { patternProperties: { "^x-[a-z]+$": { type: "string" } } },
    ];
    for (const schema of good) expect(checkSchema(schema), JSON.stringify(schema)).toEqual({ ok: true });
  });

  it.each([
    ["too large", { description: "x".repeat(65 * 1024) }, ""],
    ["too deep", nest(40), "/properties/a".repeat(16)],
    ["a remote $ref", { properties: { a: { $ref: "https://example.com/s.json" } } }, "/properties/a/$ref"],
    ["a relative $ref", { properties: { a: { $ref: "other.json#/x" } } }, "/properties/a/$ref"],
    ["a $ref that resolves to nothing", { $ref: "#/$defs/missing" }, "/$ref"],
    ["$id", { properties: { a: { $id: "https://example.com/a" } } }, "/properties/a/$id"],
    ["$dynamicRef", { items: { $dynamicRef: "#x" } }, "/items/$dynamicRef"],
    [
      "a $ref loop that never descends",
      { $defs: { a: { allOf: [{ $ref: "#/$defs/b" }] }, b: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" },
      "/$defs/b/$ref",
    ],
    ["(a+)+$", { properties: { a: { pattern: "(a+)+$" } } }, "/properties/a/pattern"],
    ["(a|a)*", { pattern: "(a|a)*" }, "/pattern"],
    ["(.*a){20}", { pattern: "(.*a){20}" }, "/pattern"],
    ["a*a*b", { pattern: "a*a*b" }, "/pattern"],
    ["a backreference", { pattern: "(a)\\1" }, "/pattern"],
    ["an invalid regex", { items: { pattern: "([a-z" } }, "/items/pattern"],
    ["a bad patternProperties key", { patternProperties: { "(x+)+": {} } }, "/patternProperties/(x+)+"],
    ["a long pattern", { pattern: "a".repeat(501) }, "/pattern"],
    ["format url", { format: "url" }, "/format"],
    ["uniqueItems without maxItems", { uniqueItems: true }, "/uniqueItems"],
    ["a bad type", { properties: { a: { type: "text" } } }, "/properties/a/type"],
    ["allOf not an array", { allOf: { type: "string" } }, "/allOf"],
    ["a negative maxLength", { maxLength: -1 }, "/maxLength"],
    ["another dialect", { $schema: "http://json-schema.org/draft-07/schema#" }, "/$schema"],
  ])("refuses %s, naming the path", (_, schema, path) => {
    const r = checkSchema(schema as Record<string, unknown>);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.path).toBe(path);
  });

  it("classifies patterns: ambiguous ones refused, deterministic ones kept", () => {
    for (const p of [
      "(a+)+$",
      "(a|a)*",
      "(.*a){20}",
      "(a|ab)*",
      "(\\w|\\d)+",
      "\\d+\\.?\\d*",
      "[^@]+\\.[^@]+",
      "(a?){9}",
      "(a|)+",
      "(?:x*)*",
    ]) {
      expect(patternRisk(p), p).not.toBeNull();
    }
    for (const p of [
      "^\\d+(\\.\\d+)?$",
      "^[A-Z]{3}-\\d+$",
      "^\\d{4}-\\d{2}-\\d{2}$",
      "(\\d{3}-)+",
      "^[a-z]+@[a-z]+\\.com$",
      "\\s+$",
      "^(?:GET|POST|PUT)$",
    ]) {
      expect(patternRisk(p), p).toBeNull();
    }
  });
});

describe("compileSchema", () => {
  const order = compileSchema(ORDER);

  it("answers ok for valid data and the deepest failing path otherwise", () => {
    const items = [
      { sku: "a", price: 1 },
      { sku: "b", price: -2 },
    ];
    expect(order.validate({ id: "ord_12345678", items: [{ sku: "a", price: 1 }] })).toEqual({ ok: true });
    expect(order.validate({ id: "ord_12345678", items })).toMatchObject({ ok: false, path: "/items/1/price" });
    expect(order.validate({ id: "ord_12345678", items: [{ sku: "a" }] })).toEqual({
      ok: false,
      path: "/items/0/price",
      message: "is required",
    });
    expect(order.validate({ id: "nope", items: [] })).toMatchObject({ ok: false, path: "/id" });
    expect(order.validate({ id: "ord_12345678", items: [{ sku: 1, price: 1 }] })).toMatchObject({ ok: false, path: "/items/0/sku" });
    expect(order.validate({ id: "ord_12345678", items: [{ sku: "a", price: 1, tags: ["x", "x"] }] })).toMatchObject({
      ok: false,
      path: "/items/0/tags",
    });
  });

  it("never echoes the client's value", () => {
    const r = order.validate({ id: "ord_12345678", items: [{ sku: "a", price: -987654 }] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).not.toContain("987654");
  });

  it("runs a pattern only on strings of at most 1000 characters; longer ones fail as too long", () => {
    const v = compileSchema({ type: "string", pattern: "\\s+$" });
    expect(v.validate(`${" ".repeat(100_000)}x`)).toMatchObject({ ok: false, path: "" });
    expect(v.validate("abc  ")).toEqual({ ok: true });
  });

  it("bounds recursion by the data's depth", () => {
    const tree = compileSchema({ type: "array", items: { $ref: "#" } });
    let deep: unknown = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(tree.validate(deep)).toMatchObject({ ok: false, message: expect.stringContaining("deeper") });
    expect(tree.validate([[[]]])).toEqual({ ok: true });
  });

  it("validates 100 KiB of data with a safe schema, many times over, to completion", () => {
    const items = Array.from({ length: 900 }, (_, i) => ({ sku: `sku-${i}-${"x".repeat(60)}`, price: i, tags: ["a", "b"] }));
    const data = { id: "ord_12345678", customer: { email: "a@example.com" }, items, total: 1 };
    const big = compileSchema({ ...ORDER, properties: { ...ORDER.properties, items: { type: "array", items: { $ref: "#/$defs/item" } } } });
    expect(JSON.stringify(data).length).toBeGreaterThan(90 * 1024);
    let done = 0;
    for (let round = 0; round < 50; round++) {
      const copy = structuredClone(data);
      copy.items[round % items.length] = { sku: "x".repeat(round * 20), price: round, tags: [] };
      if (big.validate(copy).ok) done++;
    }
    expect(done).toBe(50);
  });
});

describe("checkExamples and pointerSegments", () => {
  it("names the example's index and the path in it", () => {
    expect(checkExamples(ORDER, [{ id: "ord_12345678", items: [] }])).toEqual({ ok: true });
    const r = checkExamples(ORDER, [
      { id: "ord_12345678", items: [] },
      { id: "ord_12345678", items: [{ sku: "a", price: "1" }] },
    ]);
    expect(r).toMatchObject({ ok: false, path: "/1/items/0/price" });
  });

  it("turns a pointer into the segments an input issue names (RFC 6901 escapes undone)", () => {
    expect(pointerSegments("/1/items/0/price")).toEqual(["1", "items", "0", "price"]);
    expect(pointerSegments("/a~1b/c~0d")).toEqual(["a/b", "c~d"]);
    expect(pointerSegments("")).toEqual([]);
  });
});

function nest(levels: number): Record<string, unknown> {
  let s: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) s = { properties: { a: s } };
  return s;
}
