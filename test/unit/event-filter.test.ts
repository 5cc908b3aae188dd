/**
 * Payload filters (src/lib/event-filter.ts, src/lib/filter-schema.ts), by example: every example
 * of Hookdeck Outpost's filter documentation matches what it says it matches (a filter written for
 * Outpost works unchanged), each refusal names the path and what is wrong, and a filter is held
 * against the subscribed types' schemas. The properties over random schemas, events and filters
 * are in event-filter-properties.test.ts.
 */
import { describe, expect, it } from "vitest";
import { type CompiledFilter, compileFilter, type FilteredEvent, isNoFilter, MAX_FILTER_BYTES } from "../../src/lib/event-filter";
import { checkFilter, type FilteredType } from "../../src/lib/filter-schema";

const event = (data: unknown, type = "order.created", channels: string[] = []): FilteredEvent => ({ type, channels, data });

function compiled(raw: unknown): CompiledFilter {
  const c = compileFilter(raw);
  if (!c.ok) throw new Error(`refused: ${c.path.join(".")} ${c.message}`);
  return c.value;
}
const matches = (raw: unknown, e: FilteredEvent) => compiled(raw).matches(e);
function refusal(raw: unknown): string {
  const c = compileFilter(raw);
  if (c.ok) throw new Error("accepted");
  return `${c.path.join(".")}: ${c.message}`;
}

describe("Outpost's documented filters, unchanged", () => {
  it("exact match, implicit AND, nested objects, an array containing the value", () => {
    expect(matches({ data: { status: "paid" } }, event({ status: "paid" }))).toBe(true);
    expect(matches({ data: { status: "paid" } }, event({ status: "open" }))).toBe(false);
    expect(matches({ data: { status: "paid", currency: "usd" } }, event({ status: "paid", currency: "usd" }))).toBe(true);
    expect(matches({ data: { status: "paid", currency: "usd" } }, event({ status: "paid", currency: "eur" }))).toBe(false);
    expect(matches({ data: { customer: { tier: "premium" } } }, event({ customer: { tier: "premium", id: 1 } }))).toBe(true);
    expect(matches({ data: { customer: { tier: "premium" } } }, event({ customer: { tier: "basic" } }))).toBe(false);
    expect(matches({ data: { tags: "urgent" } }, event({ tags: ["urgent", "support"] }))).toBe(true);
    expect(matches({ data: { tags: "urgent" } }, event({ tags: ["support"] }))).toBe(false);
  });

  it("comparison, membership, string and existence operators", () => {
    const range = { data: { amount: { $gte: 100, $lt: 500 } } };
    expect([50, 100, 499, 500].map((amount) => matches(range, event({ amount })))).toEqual([false, true, true, false]);
    const among = { data: { status: { $in: ["pending", "processing"] } } };
    expect(["pending", "processing", "paid"].map((status) => matches(among, event({ status })))).toEqual([true, true, false]);
    expect(matches({ data: { status: { $nin: ["pending"] } } }, event({ status: "paid" }))).toBe(true);
    expect(matches({ data: { note: { $in: "rush" } } }, event({ note: "a rush order" }))).toBe(true);
    const email = { data: { email: { $endsWith: "@example.com" } } };
    expect(matches(email, event({ email: "ada@example.com" }))).toBe(true);
    expect(matches(email, event({ email: "ada@example.org" }))).toBe(false);
    expect(matches({ data: { sku: { $startsWith: ["A-", "B-"] } } }, event({ sku: "B-7" }))).toBe(true);
    const notDeleted = { data: { deleted_at: { $exist: false } } };
    expect(matches(notDeleted, event({ id: 1 }))).toBe(true);
    expect(matches(notDeleted, event({ id: 1, deleted_at: null }))).toBe(false);
    expect(matches({ data: { deleted_at: { $exist: true } } }, event({ deleted_at: null }))).toBe(true);
    expect(matches({ data: { amount: { $neq: 5 } } }, event({ amount: 6 }))).toBe(true);
    expect(matches({ data: { amount: { $eq: 5 } } }, event({ amount: 5 }))).toBe(true);
  });

  it("$or, $and and $not, at the top and at a value", () => {
    const either = { $or: [{ data: { status: "paid" } }, { data: { status: "shipped" } }] };
    expect(["paid", "shipped", "open"].map((status) => matches(either, event({ status })))).toEqual([true, true, false]);
    const both = { $and: [{ data: { status: "active" } }, { data: { amount: { $gte: 100 } } }] };
    expect(matches(both, event({ status: "active", amount: 100 }))).toBe(true);
    expect(matches(both, event({ status: "active", amount: 99 }))).toBe(false);
    // Outpost's docs: negate a condition on one value.
    const notCancelled = { data: { status: { $not: { $in: ["cancelled", "refunded"] } } } };
    expect(["paid", "cancelled", "refunded"].map((status) => matches(notCancelled, event({ status })))).toEqual([true, false, false]);
    expect(matches({ $not: { data: { status: "paid" } } }, event({ status: "open" }))).toBe(true);
    expect(matches({ data: { status: { $or: ["paid", { $startsWith: "ship" }] } } }, event({ status: "shipped" }))).toBe(true);
  });

  it("type and channels, and the empty filter", () => {
    expect(matches({ type: "order.created" }, event({}))).toBe(true);
    expect(matches({ type: { $startsWith: "invoice." } }, event({}))).toBe(false);
    expect(matches({ channels: "eu" }, event({}, "order.created", ["acct_42", "eu"]))).toBe(true);
    expect(matches({ channels: ["acct_42", "eu"] }, event({}, "order.created", ["eu"]))).toBe(false);
    expect(matches({}, event({ anything: 1 }))).toBe(true);
    expect(isNoFilter({})).toBe(true);
    expect(isNoFilter(null)).toBe(true);
    expect(isNoFilter({ data: {} })).toBe(false);
    // An empty object or array is what Outpost makes of it: any object, any array.
    expect(matches({ data: { customer: {} } }, event({ customer: { id: 1 } }))).toBe(true);
    expect(matches({ data: { customer: {} } }, event({ customer: "c_1" }))).toBe(false);
    expect(matches({ data: { tags: [] } }, event({ tags: ["a"] }))).toBe(true);
  });

  it("equality is strict and an absent field matches nothing but $exist: false", () => {
    expect(matches({ data: { amount: 5 } }, event({ amount: "5" }))).toBe(false);
    expect(matches({ data: { amount: { $gt: 4 } } }, event({ amount: "5" }))).toBe(false);
    expect(matches({ data: { amount: null } }, event({}))).toBe(false);
    expect(matches({ data: { amount: { $neq: 5 } } }, event({}))).toBe(false);
    expect(matches({ data: { amount: { $not: { $eq: 5 } } } }, event({}))).toBe(true);
    // An operator that cannot apply to a value holds for none, $nin included (as simple-json-match).
    expect(matches({ data: { tags: { $nin: ["a"] } } }, event({ tags: ["b"] }))).toBe(false);
    expect(matches({ data: { amount: { $nin: "5" } } }, event({ amount: 6 }))).toBe(false);
  });
});

describe("refused as written", () => {
  it.each([
    [{ data: { note: { $regex: "^a+$" } } }, 'data.note.$regex: "$regex" is not an operator: no regular expressions'],
    [{ data: { amount: { $gte: 1, currency: "usd" } } }, 'data.amount.currency: sits beside the operator "$gte"'],
    [{ data: { amount: { $gre: 1 } } }, 'did you mean "$gte"?'],
    [{ dta: { a: 1 } }, 'dta: is not a field of an event: a filter names "type", "channels", "data" (did you mean "data"?)'],
    [{ $eq: 1 }, "$eq: compares the whole event"],
    [{ data: { a: { $in: [{ x: 1 }] } } }, "data.a.$in.0: lists the values to look for"],
    [{ data: { a: { $exist: "yes" } } }, "data.a.$exist: must be true or false"],
    [{ data: { a: { $gt: [1] } } }, "data.a.$gt: compares with a number or a string"],
    [{ $or: [] }, "$or: must be a non-empty array of conditions"],
    [{ data: { $ref: "#/x" } }, 'data.$ref: "$ref" is not an operator: a filter compares with the values it holds'],
    ["order.created", ": must be a JSON object"],
  ])("%j", (raw, expected) => {
    expect(refusal(raw)).toContain(expected);
  });

  it("bounds: size, depth and conditions", () => {
    expect(refusal({ data: { note: "x".repeat(MAX_FILTER_BYTES) } })).toContain("bytes serialized; at most 8192");
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 20; i++) deep = { a: deep };
    expect(refusal({ data: deep })).toContain("nests deeper than 16 levels");
    const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`f${i}`, i]));
    expect(refusal({ data: wide })).toContain("more than 256 conditions");
    expect(refusal({ data: { a: { $in: Array.from({ length: 101 }, (_, i) => i) } } })).toContain("at most 100");
  });
});

const ORDER = {
  type: "object",
  properties: {
    status: { type: "string", enum: ["open", "paid", "shipped", "cancelled"] },
    amount: { type: "integer", minimum: 0 },
    email: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    customer: { $ref: "#/$defs/customer" },
    lines: { type: "array", items: { type: "object", properties: { sku: { type: "string" }, qty: { type: "number" } } } },
    metadata: { type: "object" },
  },
  required: ["status"],
  $defs: { customer: { type: "object", properties: { tier: { type: "string" }, account: { type: "string" } } } },
} as const;
const TYPES: FilteredType[] = [
  { name: "order.created", schema: ORDER },
  { name: "order.note", schema: null },
];

function checked(raw: unknown, types: FilteredType[] = TYPES): string {
  const r = checkFilter(compiled(raw), types);
  return r.ok ? "ok" : `${r.path.join(".")}: ${r.message}`;
}

describe("held against the subscribed types' schemas", () => {
  it("accepts paths the schema names, through $ref, arrays of objects and free-form objects", () => {
    expect(checked({ data: { status: "paid", amount: { $gte: 100 } } })).toBe("ok");
    expect(checked({ data: { customer: { tier: "premium" } } })).toBe("ok");
    expect(checked({ data: { lines: { sku: { $startsWith: "A-" } } } })).toBe("ok");
    expect(checked({ data: { tags: "urgent" } })).toBe("ok");
    expect(checked({ data: { metadata: { source: "api" } } })).toBe("ok");
    expect(checked({ type: "order.note", channels: "eu" })).toBe("ok");
    expect(checked({ $or: [{ data: { status: "paid" } }, { type: "order.note" }] })).toBe("ok");
  });

  it.each([
    [
      { data: { stauts: "paid" } },
      'data.stauts: is not in the event type\'s schema, which names "status", "amount", "email", "tags", "customer", "lines", "metadata" (did you mean "status"?)',
    ],
    [
      { data: { customer: { teir: "gold" } } },
      'data.customer.teir: is not in the event type\'s schema, which names "tier", "account" (did you mean "tier"?)',
    ],
    [{ data: { amount: "100" } }, "data.amount: is a string, but the schema has a number here"],
    [{ data: { amount: { $gt: "100" } } }, "data.amount.$gt: compares with a string, but the schema has a number here"],
    [
      { data: { status: "piad" } },
      'data.status: is not one of the values the schema allows ("open", "paid", "shipped", "cancelled"): did you mean "paid"?',
    ],
    [
      { data: { status: { $in: ["paid", "shiped"] } } },
      'data.status.$in.1: is not one of the values the schema allows ("open", "paid", "shipped", "cancelled"): did you mean "shipped"?',
    ],
    [{ data: { email: { $gt: 3 } } }, "data.email.$gt: compares with a number, but the schema has a string here"],
    [{ data: { amount: { $startsWith: "1" } } }, "data.amount.$startsWith: compares a string's start, but the schema has a number here"],
    [
      { data: { tags: { $in: ["a", "b"] } } },
      "data.tags.$in: applies to the array itself, which is never one of the values listed: write a value on its own to match an array containing it",
    ],
    [{ data: { status: { nested: 1 } } }, "data.status: names fields, but the schema has a string here"],
    [
      { type: "order.creatd" },
      'type: is not one of the values the schema allows ("order.created", "order.note"): did you mean "order.created"?',
    ],
    [{ channels: 42 }, "channels: is a number, but the schema has an array here"],
    // An object's entries name their own paths: no `$and` the filter never wrote.
    [{ data: { amount: { $gte: 1, $lt: "5" } } }, "data.amount.$lt: compares with a string, but the schema has a number here"],
    [
      { data: { amount: 1, stauts: "paid" }, $or: [{ type: "order.created" }] },
      'data.stauts: is not in the event type\'s schema, which names "status", "amount", "email", "tags", "customer", "lines", "metadata" (did you mean "status"?)',
    ],
  ])("%j", (raw, expected) => {
    expect(checked(raw)).toBe(expected);
  });

  it("a filter on the data of types without a schema is refused", () => {
    expect(checked({ data: { a: 1 } }, [{ name: "order.note", schema: null }])).toContain(
      'data: names the event\'s data, but no event type this configuration receives has a schema: filter on "type" or "channels"',
    );
  });
});
