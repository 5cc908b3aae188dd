/**
 * Payload filters (docs/receivers.md, "Filters"): which events a webhook configuration receives,
 * written in the shape of Hookdeck Outpost's destination filters (its docs' `features/filter`;
 * the semantics of hookdeck/simple-json-match, which Outpost ports), so a filter written for
 * Outpost works here unchanged. A filter is a JSON object over the event as a receiver sees it:
 * `type`, `channels` and `data`. Pure: no bindings, no Hono.
 *
 * - `compileFilter(raw)` checks a filter's shape and bounds and compiles it once (per
 *   configuration change, never per publish) into `matches(event)`. Nothing a filter holds can
 *   cost more than linear time in the event's size: no regular expressions, and each of its
 *   conditions looks at each of the event's values at most once (the property test counts it).
 * - `checkFilter(filter, types)` (filter-schema.ts) holds it against the subscribed types' JSON Schemas when it is
 *   written: a path no schema names, or a value of a type its path cannot hold, is refused with
 *   the path and what the schema allows (and a did-you-mean), where Outpost would store a filter
 *   that matches nothing, forever.
 *
 * Semantics, as Outpost documents them:
 * - an object's entries all hold (AND); a field that is absent holds only `{"$exist": false}`;
 * - a plain value matches an equal value, or an array containing it; an array matches an array
 *   containing each of its items; a nested object matches an object whose fields match, or an
 *   array with an element that does;
 * - operators apply to the value itself (an array included): `$eq` `$neq` (deep equality),
 *   `$gt` `$gte` `$lt` `$lte` (numbers with numbers, strings with strings), `$in` `$nin` (one of
 *   an array's values, or a substring of a string), `$startsWith` `$endsWith` (a string, or any of
 *   an array of strings), `$exist`;
 * - `$and`, `$or` (arrays of conditions) and `$not` (one), at the top or at any value: `$not`
 *   holds where its condition does not (Outpost's documented `{"status": {"$not": {"$in": [...]}}}`,
 *   which simple-json-match itself never matches).
 * Where keyway is stricter: equality is strict (no `1 == "1"`), an object mixing operators and
 * fields is refused (simple-json-match silently drops the fields), and so is `$ref`; beside
 * `"$exist": false`, another operator does not hold for an absent field (simple-json-match applies
 * it to `undefined`, where `$neq` holds).
 */
import { nearestWord } from "./nearest";

/** The event as a filter sees it. */
export interface FilteredEvent {
  type: string;
  channels: readonly string[];
  data: unknown;
}

/** A filter serialized (UTF-8): a receiver's filter is stored and compiled with its configuration. */
export const MAX_FILTER_BYTES = 8 * 1024;
/** Nesting of a filter's objects and arrays. */
export const MAX_FILTER_DEPTH = 16;
/** Conditions in a filter: its cost per event is at most this times the event's values. */
export const MAX_FILTER_CONDITIONS = 256;
/** The values an operator's array may list (`$in`, `$nin`, `$startsWith`, `$endsWith`). */
export const MAX_OPERAND_ITEMS = 100;
/** A string a filter compares with. */
export const MAX_FILTER_STRING = 1024;

export type FilterProblem = { ok: false; path: string[]; message: string };
export type Checked<T> = { ok: true; value: T } | FilterProblem;

const COMPARISONS = ["$eq", "$neq", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$startsWith", "$endsWith", "$exist"] as const;
export type Comparison = (typeof COMPARISONS)[number];
const LOGICAL = ["$and", "$or", "$not"] as const;
const OPERATORS: readonly string[] = [...COMPARISONS, ...LOGICAL];
/** What a filter may name at its top, beside the logical operators. */
export const EVENT_FIELDS = ["type", "channels", "data"] as const;
/** Operator names from other filter languages, refused with what to write instead. */
const FOREIGN: Record<string, string> = {
  $regex: "no regular expressions: use $startsWith, $endsWith or $in (a substring)",
  $ne: 'use "$neq"',
  $exists: 'use "$exist"',
  $nor: 'use "$not" with "$or"',
  $ref: "a filter compares with the values it holds, not with the event's own fields",
};

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A compiled condition: its parse tree, evaluated with `holds`. */
export type Cond =
  | { k: "equal"; value: string | number | boolean | null }
  | { k: "contains"; items: Cond[] }
  | { k: "fields"; fields: [string, Cond][] }
  | { k: "op"; op: Comparison; operand: Json }
  | { k: "and" | "or"; conds: Cond[] }
  /** The entries of one object, all holding: an AND nobody wrote as `$and` (a refusal names no `$and` for it). */
  | { k: "all"; conds: Cond[] }
  | { k: "not"; cond: Cond };

export interface CompiledFilter {
  /** The filter as written (what is stored and shown). */
  readonly source: Record<string, unknown>;
  readonly conditions: number;
  matches(event: FilteredEvent, meter?: { steps: number }): boolean;
  /** @internal The parse tree, for the schema check. */
  readonly root: Cond;
}

export const problem = (path: string[], message: string): FilterProblem => ({ ok: false, path, message });
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isPrimitive = (v: unknown): v is string | number | boolean | null =>
  v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean";

/** Whether a filter is one that removes filtering (`{}` or null): such a configuration receives every event. */
export const isNoFilter = (raw: unknown): boolean => raw === null || (isObject(raw) && Object.keys(raw).length === 0);

/** Checks a filter's shape and bounds, and compiles it. */
export function compileFilter(raw: unknown): Checked<CompiledFilter> {
  if (!isObject(raw)) return problem([], "must be a JSON object (or {} or null for none)");
  const bytes = new TextEncoder().encode(JSON.stringify(raw)).length;
  if (bytes > MAX_FILTER_BYTES) return problem([], `is ${bytes} bytes serialized; at most ${MAX_FILTER_BYTES}`);
  const counter = { conditions: 0 };
  const root = parseObject(raw, [], 1, counter, true);
  if (!root.ok) return root;
  const cond = root.value;
  return {
    ok: true,
    value: {
      source: raw,
      conditions: sizeOf(cond),
      root: cond,
      matches: (event, meter) => holds(cond, { type: event.type, channels: event.channels, data: event.data }, meter),
    },
  };
}

function parseValue(v: unknown, path: string[], depth: number, counter: { conditions: number }): Checked<Cond> {
  if (isObject(v)) return parseObject(v, path, depth, counter, false);
  if (depth > MAX_FILTER_DEPTH) return problem(path, `nests deeper than ${MAX_FILTER_DEPTH} levels`);
  if (++counter.conditions > MAX_FILTER_CONDITIONS)
    return problem(path, `makes the filter hold more than ${MAX_FILTER_CONDITIONS} conditions`);
  if (isPrimitive(v)) {
    const bad = badLiteral(v);
    return bad === null ? { ok: true, value: { k: "equal", value: v } } : problem(path, bad);
  }
  if (Array.isArray(v)) {
    const items: Cond[] = [];
    for (const [i, item] of v.entries()) {
      const c = parseValue(item, [...path, String(i)], depth + 1, counter);
      if (!c.ok) return c;
      items.push(c.value);
    }
    return { ok: true, value: { k: "contains", items } };
  }
  return problem(path, "is not a JSON value");
}

/** The conditions of a parse tree: what one event's evaluation costs per value of the event, at most. */
function sizeOf(c: Cond): number {
  switch (c.k) {
    case "equal":
    case "op":
      return 1;
    case "contains":
      return 1 + c.items.reduce((n, x) => n + sizeOf(x), 0);
    case "fields":
      return 1 + c.fields.reduce((n, [, x]) => n + sizeOf(x), 0);
    case "and":
    case "all":
    case "or":
      return 1 + c.conds.reduce((n, x) => n + sizeOf(x), 0);
    case "not":
      return 1 + sizeOf(c.cond);
  }
}

function badLiteral(v: string | number | boolean | null): string | null {
  if (typeof v === "string" && v.length > MAX_FILTER_STRING) return `is ${v.length} characters long; at most ${MAX_FILTER_STRING}`;
  if (typeof v === "number" && !Number.isFinite(v)) return "must be a finite number";
  return null;
}

/** An object: the top of a filter (the event's fields), a nested object's fields, or operators. */
function parseObject(
  o: Record<string, unknown>,
  path: string[],
  depth: number,
  counter: { conditions: number },
  top: boolean,
): Checked<Cond> {
  if (depth > MAX_FILTER_DEPTH) return problem(path, `nests deeper than ${MAX_FILTER_DEPTH} levels`);
  if (!top && ++counter.conditions > MAX_FILTER_CONDITIONS)
    return problem(path, `makes the filter hold more than ${MAX_FILTER_CONDITIONS} conditions`);
  const keys = Object.keys(o);
  const comparisons = keys.filter((k) => (COMPARISONS as readonly string[]).includes(k));
  const fields = keys.filter((k) => !k.startsWith("$"));
  if (comparisons.length > 0 && fields.length > 0) {
    return problem(
      [...path, fields[0] ?? ""],
      `sits beside the operator "${comparisons[0]}": an object holds either fields or operators, not both`,
    );
  }
  if (top && comparisons.length > 0) {
    return problem(
      [...path, comparisons[0] ?? ""],
      `compares the whole event: name one of ${EVENT_FIELDS.map((f) => `"${f}"`).join(", ")} first`,
    );
  }
  const conds: Cond[] = [];
  const named: [string, Cond][] = [];
  for (const key of keys) {
    const at = [...path, key];
    const value = o[key];
    if (key.startsWith("$")) {
      if (!OPERATORS.includes(key)) return problem(at, unknownOperator(key));
      const c =
        key === "$and" || key === "$or" || key === "$not"
          ? parseLogical(key, value, at, depth, counter, top)
          : parseComparison(key as Comparison, value, at);
      if (!c.ok) return c;
      conds.push(c.value);
      continue;
    }
    if (top && !(EVENT_FIELDS as readonly string[]).includes(key)) {
      const hint = nearestWord(key, EVENT_FIELDS);
      return problem(
        at,
        `is not a field of an event: a filter names ${EVENT_FIELDS.map((f) => `"${f}"`).join(", ")}${hint ? ` (did you mean "${hint}"?)` : ""}`,
      );
    }
    if (key.length > 200) return problem(at, "is a field name longer than 200 characters");
    const c = parseValue(value, at, depth + 1, counter);
    if (!c.ok) return c;
    named.push([key, c.value]);
  }
  // An empty object below the top matches any object (Outpost's reading); at the top, any event.
  if (named.length > 0 || (!top && keys.length === 0)) conds.unshift({ k: "fields", fields: named });
  if (conds.length === 1 && conds[0] !== undefined) return { ok: true, value: conds[0] };
  return { ok: true, value: { k: "all", conds } };
}

function parseLogical(
  key: "$and" | "$or" | "$not",
  value: unknown,
  at: string[],
  depth: number,
  counter: { conditions: number },
  top: boolean,
): Checked<Cond> {
  // A logical operator's conditions are of the same place as the operator: the event's fields
  // at the top, the value's own conditions below.
  const parse = (v: unknown, p: string[]) =>
    isObject(v)
      ? parseObject(v, p, depth + 1, counter, top)
      : top
        ? problem(p, "must be an object of the event's fields")
        : parseValue(v, p, depth + 1, counter);
  if (key === "$not") {
    const c = parse(value, at);
    return c.ok ? { ok: true, value: { k: "not", cond: c.value } } : c;
  }
  if (!Array.isArray(value) || value.length === 0) return problem(at, "must be a non-empty array of conditions");
  const conds: Cond[] = [];
  for (const [i, item] of value.entries()) {
    const c = parse(item, [...at, String(i)]);
    if (!c.ok) return c;
    conds.push(c.value);
  }
  return { ok: true, value: { k: key === "$and" ? "and" : "or", conds } };
}

function parseComparison(op: Comparison, operand: unknown, at: string[]): Checked<Cond> {
  const cond = (): Checked<Cond> => ({ ok: true, value: { k: "op", op, operand: operand as Json } });
  switch (op) {
    case "$exist":
      return typeof operand === "boolean" ? cond() : problem(at, "must be true or false");
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte":
      if (typeof operand !== "number" && typeof operand !== "string") return problem(at, "compares with a number or a string");
      return badLiteral(operand) === null ? cond() : problem(at, badLiteral(operand) ?? "");
    case "$in":
    case "$nin":
      if (typeof operand === "string") return badLiteral(operand) === null ? cond() : problem(at, badLiteral(operand) ?? "");
      return (
        stringsOrNumbers(operand, at, "lists the values to look for (strings or numbers), or is a string to find within one") ?? cond()
      );
    case "$startsWith":
    case "$endsWith":
      if (typeof operand === "string") return badLiteral(operand) === null ? cond() : problem(at, badLiteral(operand) ?? "");
      return stringsOrNumbers(operand, at, "is a string, or an array of strings", true) ?? cond();
    case "$eq":
    case "$neq": {
      const deep = depthOf(operand);
      if (deep > MAX_FILTER_DEPTH) return problem(at, `nests deeper than ${MAX_FILTER_DEPTH} levels`);
      return cond();
    }
  }
}

function stringsOrNumbers(operand: unknown, at: string[], what: string, stringsOnly = false): FilterProblem | null {
  if (!Array.isArray(operand) || operand.length === 0) return problem(at, what);
  if (operand.length > MAX_OPERAND_ITEMS) return problem(at, `lists ${operand.length} values; at most ${MAX_OPERAND_ITEMS}`);
  for (const [i, item] of operand.entries()) {
    const ok = typeof item === "string" || (!stringsOnly && typeof item === "number");
    if (!ok) return problem([...at, String(i)], what);
    const bad = badLiteral(item as string | number);
    if (bad !== null) return problem([...at, String(i)], bad);
  }
  return null;
}

function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (isObject(v)) return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

function unknownOperator(key: string): string {
  const named = /^\$[A-Za-z]{1,30}$/.test(key) ? `"${key}" is not an operator` : "is not an operator";
  const hint = FOREIGN[key] ?? (key.length <= 30 ? nearestWord(key, OPERATORS) : undefined);
  return `${named}${hint === undefined ? "" : FOREIGN[key] !== undefined ? `: ${hint}` : ` (did you mean "${hint}"?)`}; the operators are ${OPERATORS.join(" ")}`;
}

// -----------------------------------------------------------------------------------------------
// Evaluation

/** An absent field: distinct from JSON null. */
const MISSING: unique symbol = Symbol("missing");
type Value = unknown;

function holds(c: Cond, v: Value, meter: { steps: number } | undefined): boolean {
  if (meter !== undefined) meter.steps++;
  switch (c.k) {
    case "equal":
      if (Array.isArray(v)) return v.some((e) => holds(c, e, meter));
      return v === c.value;
    case "contains": {
      if (!Array.isArray(v)) return false;
      const items = v;
      return c.items.every((item) => items.some((e) => holds(item, e, meter)));
    }
    case "fields":
      if (Array.isArray(v)) return v.some((e) => holds(c, e, meter));
      if (!isObject(v)) return false;
      return c.fields.every(([key, cond]) => holds(cond, Object.hasOwn(v, key) ? v[key] : MISSING, meter));
    case "op":
      return compare(c.op, v, c.operand);
    case "and":
    case "all":
      return c.conds.every((x) => holds(x, v, meter));
    case "or":
      return c.conds.some((x) => holds(x, v, meter));
    case "not":
      return !holds(c.cond, v, meter);
  }
}

function compare(op: Comparison, v: Value, operand: Json): boolean {
  if (op === "$exist") return operand === (v !== MISSING);
  if (v === MISSING) return false;
  switch (op) {
    case "$eq":
      return deepEqual(v, operand);
    case "$neq":
      return !deepEqual(v, operand);
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte": {
      if (!((typeof v === "number" && typeof operand === "number") || (typeof v === "string" && typeof operand === "string"))) return false;
      if (op === "$gt") return v > operand;
      if (op === "$gte") return v >= operand;
      if (op === "$lt") return v < operand;
      return v <= operand;
    }
    case "$in":
    case "$nin": {
      const found = within(v, operand);
      if (found === null) return false;
      return op === "$in" ? found : !found;
    }
    case "$startsWith":
    case "$endsWith": {
      if (typeof v !== "string") return false;
      const candidates = typeof operand === "string" ? [operand] : Array.isArray(operand) ? operand : [];
      return candidates.some((c) => typeof c === "string" && (op === "$startsWith" ? v.startsWith(c) : v.endsWith(c)));
    }
  }
}

/** `$in`: whether `v` is one of the listed values, or (a string) holds the operand; null where it cannot apply. */
function within(v: Value, operand: Json): boolean | null {
  if (Array.isArray(operand)) return isPrimitive(v) ? operand.some((x) => x === v) : null;
  if (typeof operand === "string") return typeof v === "string" ? v.includes(operand) : null;
  return null;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}
