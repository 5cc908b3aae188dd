/**
 * Payload filters as properties (src/lib/event-filter.ts, src/lib/filter-schema.ts), over random
 * JSON Schemas, events valid under them (checked with the production validator) and filters built
 * on their paths:
 *
 * 1. the schema check accepts every filter written on the schema's own paths and types;
 * 2. the compiled filter agrees with hookdeck's simple-json-match (the library Outpost's filters
 *    port, here the reference evaluator) wherever that library follows Outpost's documented
 *    semantics: a `$not` or an `$and` at a value, and an `$exist` inside a value's `$or`, are left
 *    to property 3, because the library never matches them (test/unit/event-filter.test.ts);
 * 3. `$not` at a value holds exactly where its condition does not;
 * 4. an evaluation looks at each value of the event at most twice per condition (`steps` counted
 *    by the production evaluator), so its cost is bounded by the filter's size;
 * 5. nothing a client writes makes compiling, checking or matching throw.
 *
 * Every operator must be reached both where the filter matched and where it did not.
 */
import fc from "fast-check";
import simpleJsonMatch from "simple-json-match";
import { afterAll, describe, expect, it } from "vitest";
import { compileFilter, type FilteredEvent } from "../../src/lib/event-filter";
import { checkFilter, type FilteredType } from "../../src/lib/filter-schema";
import { compileSchema } from "../../src/lib/json-schema";

const RUNS = Number(process.env.KEYWAY_PROPERTY_RUNS || 2_000);
const match = (simpleJsonMatch as unknown as { default?: typeof simpleJsonMatch }).default ?? simpleJsonMatch;

type Schema = Record<string, unknown>;
const KEYS = ["a", "b", "id", "tags", "amount", "status", "lines", "note"];
const WORDS = ["", "a", "ab", "b", "ba", "abc", "eu", "paid"];
const CHANNELS = ["eu", "us", "acct_1", "acct_2"];
const TYPES = ["order.created", "order.paid"];

const leafSchema: fc.Arbitrary<Schema> = fc.oneof(
  fc.constant({ type: "string" }),
  fc.uniqueArray(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 4 }).map((e) => ({ type: "string", enum: e })),
  fc.constant({ type: "integer" }),
  fc.constant({ type: "number" }),
  fc.constant({ type: "boolean" }),
  fc.constant({ type: "array", items: { type: "string" } }),
  fc.constant({ type: "array", items: { type: "integer" } }),
);

function objectSchema(depth: number): fc.Arbitrary<Schema> {
  const property =
    depth <= 1
      ? leafSchema
      : fc.oneof(
          { weight: 3, arbitrary: leafSchema },
          { weight: 1, arbitrary: objectSchema(depth - 1) },
          {
            weight: 1,
            arbitrary: objectSchema(depth - 1).map((items) => ({ type: "array", items })),
          },
        );
  return fc
    .uniqueArray(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 4 })
    .chain((keys) => fc.tuple(fc.constant(keys), fc.array(property, { minLength: keys.length, maxLength: keys.length }), fc.subarray(keys)))
    .map(([keys, props, required]) => ({ type: "object", properties: Object.fromEntries(keys.map((k, i) => [k, props[i]])), required }));
}

/** A schema, with one of its nested objects sometimes moved under `$defs` and named by `$ref`. */
const rootSchema: fc.Arbitrary<Schema> = fc.tuple(objectSchema(3), fc.boolean()).map(([root, useRef]) => {
  if (!useRef) return root;
  const props = root.properties as Record<string, Schema>;
  const key = Object.keys(props).find((k) => props[k]?.type === "object");
  if (key === undefined) return root;
  return { ...root, properties: { ...props, [key]: { $ref: "#/$defs/moved" } }, $defs: { moved: props[key] } };
});

const resolve = (s: Schema, root: Schema): Schema =>
  typeof s.$ref === "string" ? ((root.$defs as Record<string, Schema>).moved as Schema) : s;

function valueFor(s0: Schema, root: Schema): fc.Arbitrary<unknown> {
  const s = resolve(s0, root);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as string[]));
  switch (s.type) {
    case "string":
      return fc.constantFrom(...WORDS);
    case "integer":
      return fc.integer({ min: -3, max: 3 });
    case "number":
      return fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(0.5, -1.5));
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(valueFor(s.items as Schema, root), { maxLength: 3 });
    default: {
      const props = s.properties as Record<string, Schema>;
      const required = new Set(s.required as string[]);
      const entries = Object.entries(props).map(([k, p]) =>
        required.has(k)
          ? valueFor(p, root).map((v) => [k, v] as const)
          : fc.option(
              valueFor(p, root).map((v) => [k, v] as const),
              { nil: undefined },
            ),
      );
      return fc.tuple(...entries).map((kv) => Object.fromEntries(kv.filter((x): x is readonly [string, unknown] => x !== undefined)));
    }
  }
}

interface Options {
  /** Only what simple-json-match follows Outpost's documentation on. */
  reference: boolean;
}

/** A condition on a value the schema describes. */
function condOf(s0: Schema, root: Schema, depth: number, o: Options, inOr = false): fc.Arbitrary<unknown> {
  const s = resolve(s0, root);
  const value = valueFor(s, root);
  const options: fc.Arbitrary<unknown>[] = [s.type === "array" ? valueFor(resolve(s.items as Schema, root), root) : value];
  const ops = (pairs: fc.Arbitrary<[string, unknown]>[]) =>
    fc.uniqueArray(fc.oneof(...pairs), { minLength: 1, maxLength: 2, selector: ([k]) => k }).map((kv) => Object.fromEntries(kv));
  // $exist stands alone: beside another operator, simple-json-match applies that operator to an
  // absent field too (`{"$neq": false, "$exist": false}` matches an absent one there, not here).
  const existAlone = inOr ? [] : [fc.boolean().map((b) => ({ $exist: b }))];
  const pair = (op: string, a: fc.Arbitrary<unknown>) => a.map((v): [string, unknown] => [op, v]);
  // The comparisons a string or a number takes, with values of its own kind.
  const compared = (v: fc.Arbitrary<unknown>) => [
    ...["$eq", "$neq", "$gt", "$gte", "$lt", "$lte"].map((op) => pair(op, v)),
    ...["$in", "$nin"].map((op) => pair(op, fc.array(v, { minLength: 1, maxLength: 3 }))),
  ];
  if (s.type === "string") {
    const words = fc.constantFrom(...(Array.isArray(s.enum) ? (s.enum as string[]) : WORDS));
    const affix = fc.oneof(fc.constantFrom(...WORDS), fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 2 }));
    options.push(
      ops([
        ...compared(words),
        ...(Array.isArray(s.enum) ? [] : [pair("$in", words)]),
        pair("$startsWith", affix),
        pair("$endsWith", affix),
      ]),
      ...existAlone,
    );
  } else if (s.type === "integer" || s.type === "number") {
    options.push(ops(compared(fc.integer({ min: -3, max: 3 }))), ...existAlone);
  } else if (s.type === "boolean") {
    options.push(ops([pair("$eq", fc.boolean()), pair("$neq", fc.boolean())]), ...existAlone);
  } else if (s.type === "array") {
    // At an array, a value matches an element and fields match an element's; operators would
    // apply to the array itself (only $exist and $eq say anything of it).
    const items = resolve(s.items as Schema, root);
    if (items.type === "object" && depth > 0) options.push(fieldsOf(items, root, depth - 1, o));
    // Within an $or, simple-json-match tries the alternatives on each element: only conditions
    // on an element read the same both ways.
    if (!inOr) {
      options.push(fc.array(valueFor(items, root), { minLength: 1, maxLength: 2 }));
      options.push(value.map((v) => ({ $eq: v })));
      options.push(fc.constant({ $exist: true }));
    }
  } else if (depth > 0) {
    options.push(fieldsOf(s, root, depth - 1, o));
  }
  if (depth > 0 && s.type !== "object") {
    const inner = condOf(s, root, depth - 1, o, true);
    options.push(fc.array(inner, { minLength: 1, maxLength: 2 }).map((xs) => ({ $or: xs })));
    if (!o.reference) {
      options.push(condOf(s, root, depth - 1, o).map((x) => ({ $not: x })));
      options.push(fc.array(condOf(s, root, depth - 1, o), { minLength: 1, maxLength: 2 }).map((xs) => ({ $and: xs })));
    }
  }
  return fc.oneof(...options);
}

function fieldsOf(s: Schema, root: Schema, depth: number, o: Options): fc.Arbitrary<Record<string, unknown>> {
  const props = s.properties as Record<string, Schema>;
  return fc
    .uniqueArray(fc.constantFrom(...Object.keys(props)), { minLength: 1, maxLength: 2 })
    .chain((keys) => fc.tuple(...keys.map((k) => condOf(props[k] as Schema, root, depth, o).map((c) => [k, c] as const))))
    .map((kv) => Object.fromEntries(kv));
}

function filterOf(root: Schema, o: Options): fc.Arbitrary<Record<string, unknown>> {
  const top: fc.Arbitrary<Record<string, unknown>> = fc.record(
    {
      data: fieldsOf(root, root, 2, o),
      type: fc.oneof(fc.constantFrom(...TYPES), fc.constant({ $startsWith: "order." }), fc.constant({ $in: TYPES.slice(0, 1) })),
      channels: fc.oneof(fc.constantFrom(...CHANNELS), fc.uniqueArray(fc.constantFrom(...CHANNELS), { minLength: 1, maxLength: 2 })),
    },
    { requiredKeys: [] },
  );
  return fc.oneof(
    { weight: 4, arbitrary: top },
    { weight: 1, arbitrary: fc.array(top, { minLength: 1, maxLength: 2 }).map((xs) => ({ $or: xs })) },
    { weight: 1, arbitrary: fc.array(top, { minLength: 1, maxLength: 2 }).map((xs) => ({ $and: xs })) },
    { weight: 1, arbitrary: top.map((x) => ({ $not: x })) },
  );
}

const eventOf = (root: Schema): fc.Arbitrary<FilteredEvent> =>
  fc.record({
    type: fc.constantFrom(...TYPES),
    channels: fc.uniqueArray(fc.constantFrom(...CHANNELS), { maxLength: 3 }),
    data: valueFor(root, root),
  });

function nodes(v: unknown): number {
  if (Array.isArray(v)) return 1 + v.reduce((n: number, x) => n + nodes(x), 0);
  if (typeof v === "object" && v !== null) return 1 + Object.values(v).reduce((n: number, x) => n + nodes(x), 0);
  return 1;
}

function operators(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) operators(x, out);
  else if (typeof v === "object" && v !== null)
    for (const [k, x] of Object.entries(v)) {
      if (k.startsWith("$")) out.add(k);
      operators(x, out);
    }
  return out;
}

const reached = { matched: new Map<string, number>(), missed: new Map<string, number>() };
const tally = (filter: unknown, matched: boolean) => {
  const book = matched ? reached.matched : reached.missed;
  for (const op of operators(filter)) book.set(op, (book.get(op) ?? 0) + 1);
  book.set("(any)", (book.get("(any)") ?? 0) + 1);
};

const typesFor = (schema: Schema): FilteredType[] => TYPES.map((name) => ({ name, schema }));
const compiled = (raw: unknown) => {
  const c = compileFilter(raw);
  if (!c.ok) throw new Error(`compile refused ${JSON.stringify(raw)}: ${c.path.join(".")} ${c.message}`);
  return c.value;
};

describe("payload filters over random schemas, events and filters", () => {
  it("1-2, 4: accepted against their schema, agreeing with simple-json-match, at a bounded cost", () => {
    fc.assert(
      fc.property(
        rootSchema.chain((schema) =>
          fc.tuple(fc.constant(schema), filterOf(schema, { reference: true }), fc.array(eventOf(schema), { minLength: 1, maxLength: 4 })),
        ),
        ([schema, raw, events]) => {
          const filter = compiled(raw);
          const check = checkFilter(filter, typesFor(schema));
          if (!check.ok) throw new Error(`schema check refused ${JSON.stringify(raw)}: ${check.path.join(".")} ${check.message}`);
          const validator = compileSchema(schema);
          for (const e of events) {
            expect(validator.validate(e.data).ok).toBe(true);
            const meter = { steps: 0 };
            const ours = filter.matches(e, meter);
            const theirs = match({ type: e.type, channels: e.channels, data: e.data }, raw);
            if (ours !== theirs)
              throw new Error(`${JSON.stringify(raw)} on ${JSON.stringify(e)}: keyway ${ours}, simple-json-match ${theirs}`);
            expect(meter.steps).toBeLessThanOrEqual(filter.conditions * 2 * (nodes(e) + 1));
            tally(raw, ours);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("3: $not at a value holds exactly where its condition does not", () => {
    fc.assert(
      fc.property(
        rootSchema.chain((schema) => {
          const props = schema.properties as Record<string, Schema>;
          return fc.tuple(
            fc
              .constantFrom(...Object.keys(props))
              .chain((k) => fc.tuple(fc.constant(k), condOf(props[k] as Schema, schema, 2, { reference: false }))),
            eventOf(schema),
            fc.constant(schema),
          );
        }),
        ([[key, cond], e, schema]) => {
          const plain = compiled({ data: { [key]: cond } });
          const negated = compiled({ data: { [key]: { $not: cond } } });
          expect(checkFilter(negated, typesFor(schema)).ok).toBe(true);
          expect(negated.matches(e)).toBe(!plain.matches(e));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("5: whatever is written, compiling, checking and matching never throw", () => {
    const types = fc.array(fc.record({ name: fc.string(), schema: fc.option(rootSchema, { nil: null }) }), { maxLength: 3 });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.jsonValue({ maxDepth: 6 }), types, (raw, data, ts) => {
        const c = compileFilter(raw);
        if (!c.ok) return;
        checkFilter(c.value, ts);
        c.value.matches({ type: "t", channels: ["eu"], data });
      }),
      { numRuns: RUNS },
    );
  });

  afterAll(() => {
    console.log(
      "filter properties reached:",
      JSON.stringify({ matched: Object.fromEntries(reached.matched), missed: Object.fromEntries(reached.missed) }),
    );
    for (const op of [
      "(any)",
      "$eq",
      "$neq",
      "$gt",
      "$gte",
      "$lt",
      "$lte",
      "$in",
      "$nin",
      "$startsWith",
      "$endsWith",
      "$exist",
      "$and",
      "$or",
      "$not",
    ]) {
      expect(reached.matched.get(op) ?? 0, `${op} matched`).toBeGreaterThan(0);
      expect(reached.missed.get(op) ?? 0, `${op} missed`).toBeGreaterThan(0);
    }
  });
});
