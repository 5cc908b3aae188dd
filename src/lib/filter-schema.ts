/**
 * A payload filter held against the JSON Schemas of the event types its configuration receives
 * (docs/receivers.md, "Filters"), when it is written: a filter that could only ever match nothing
 * (a misspelt path, a number compared with a string, an enum value the schema does not list) is
 * refused with its path, what the schema allows there, and a did-you-mean. Schemas are saved
 * checked (lib/json-schema.ts: local `$ref` only, bounded size and depth), so following them here
 * is bounded too. Pure.
 */
import { type Checked, type Comparison, type CompiledFilter, type Cond, deepEqual, isObject, type Json, problem } from "./event-filter";
import { pointerSegments } from "./json-schema";
import { nearestWord } from "./nearest";

/** A subscribed event type as the check sees it: its name and its schema for `data` (null: none). */
export interface FilteredType {
  name: string;
  schema: Record<string, unknown> | null;
}

/** A place in a schema: the subschemas that describe one value, each with the schema it is part of. */
type Place = { node: unknown; root: Record<string, unknown> }[];
type JsonType = "array" | "boolean" | "null" | "number" | "object" | "string";
const ANY = "any" as const;

/**
 * Holds a compiled filter to what its configuration can receive: `type` to the subscribed types,
 * `channels` to strings, and every path under `data` to a property some subscribed type's schema
 * names, compared with a value of a type that property can hold. A filter that could only ever
 * match nothing is refused here, with the path and what the schema allows.
 */
export function checkFilter(filter: CompiledFilter, types: readonly FilteredType[]): Checked<null> {
  return checkTop(filter.root, types, []);
}

/**
 * The logical conditions: each operand checked where its operator stands, under the operator's
 * own path (`$and.0`); an object's entries (`all`) under the object's.
 */
function checkLogical(c: Logical, at: string[], check: (x: Cond, at: string[]) => Checked<null>): Checked<null> {
  switch (c.k) {
    case "all":
      return all(c.conds.map((x) => () => check(x, at)));
    case "and":
    case "or":
      return all(c.conds.map((x, i) => () => check(x, [...at, `$${c.k}`, String(i)])));
    case "not":
      return check(c.cond, [...at, "$not"]);
  }
}

type Logical = Extract<Cond, { k: "all" | "and" | "or" | "not" }>;

function checkTop(c: Cond, types: readonly FilteredType[], path: string[]): Checked<null> {
  switch (c.k) {
    case "all":
    case "and":
    case "or":
    case "not":
      return checkLogical(c, path, (x, at) => checkTop(x, types, at));
    case "fields":
      return all(
        c.fields.map(([field, cond]) => () => {
          const at = [...path, field];
          if (field === "type") return checkType(cond, types, at);
          if (field === "channels") return checkAt(cond, channelPlace, at);
          const withSchema = types.filter((t) => t.schema !== null);
          if (withSchema.length === 0) {
            return problem(
              at,
              'names the event\'s data, but no event type this configuration receives has a schema: filter on "type" or "channels", or give the types a schema',
            );
          }
          return checkAt(
            cond,
            withSchema.map((t) => ({ node: t.schema, root: t.schema as Record<string, unknown> })),
            at,
          );
        }),
      );
    default:
      return { ok: true, value: null };
  }
}

const channelPlace: Place = [{ node: { type: "array", items: { type: "string" } }, root: {} }];

function checkType(c: Cond, types: readonly FilteredType[], at: string[]): Checked<null> {
  const names = types.map((t) => t.name);
  const place: Place = [{ node: { type: "string", enum: names }, root: {} }];
  return checkAt(c, place, at);
}

function all(checks: (() => Checked<null>)[]): Checked<null> {
  for (const check of checks) {
    const r = check();
    if (!r.ok) return r;
  }
  return { ok: true, value: null };
}

/** Checks a condition on the value a place describes. */
function checkAt(c: Cond, place: Place, at: string[]): Checked<null> {
  const types = typesOf(place);
  const allows = (t: JsonType) => types === ANY || types.has(t);
  const items = () => itemsOf(place);
  const described = () => (types === ANY ? "any value" : describe(types));
  switch (c.k) {
    case "all":
    case "and":
    case "or":
    case "not":
      return checkLogical(c, at, (x, p) => checkAt(x, place, p));
    case "equal": {
      const t = typeOfJson(c.value);
      if (allows(t)) return checkValue(c.value, place, at);
      if (allows("array") && typesAllow(typesOf(items()), t)) return checkValue(c.value, items(), at);
      return problem(at, `is ${article(t)} ${t}, but the schema has ${described()} here`);
    }
    case "contains":
      if (!allows("array")) return problem(at, `is an array, but the schema has ${described()} here`);
      return all(c.items.map((x, i) => () => checkAt(x, items(), [...at, String(i)])));
    case "fields": {
      const objects: Place = allows("object") ? place : [];
      const elements = allows("array") ? items() : [];
      const holders = [...objects, ...(typesAllow(typesOf(elements), "object") ? elements : [])];
      if (holders.length === 0 && types !== ANY) return problem(at, `names fields, but the schema has ${described()} here`);
      if (types === ANY && holders.length === 0) return { ok: true, value: null };
      return all(
        c.fields.map(([key, cond]) => () => {
          const child = childOf(holders, key);
          if (child === null) {
            const known = propertyNames(holders);
            const hint = nearestWord(key, known);
            const list =
              known.length === 0
                ? "names no fields here"
                : `names ${known
                    .slice(0, 10)
                    .map((k) => `"${k}"`)
                    .join(", ")}${known.length > 10 ? ", ..." : ""}`;
            return problem([...at, key], `is not in the event type's schema, which ${list}${hint ? ` (did you mean "${hint}"?)` : ""}`);
          }
          return checkAt(cond, child, [...at, key]);
        }),
      );
    }
    case "op":
      return checkOperator(c.op, c.operand, place, at);
  }
}

function checkOperator(op: Comparison, operand: Json, place: Place, at0: string[]): Checked<null> {
  const at = [...at0, op];
  const types = typesOf(place);
  const allows = (t: JsonType) => types === ANY || types.has(t);
  const described = types === ANY ? "any value" : describe(types);
  const onlyArray = types !== ANY && types.size === 1 && types.has("array");
  switch (op) {
    case "$exist":
      return { ok: true, value: null };
    case "$eq":
    case "$neq": {
      const t = typeOfJson(operand);
      return allows(t)
        ? checkValue(operand, place, at)
        : problem(at, `compares with ${article(t)} ${t}, but the schema has ${described} here`);
    }
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte": {
      const t = typeOfJson(operand);
      return allows(t) ? { ok: true, value: null } : problem(at, `compares with ${article(t)} ${t}, but the schema has ${described} here`);
    }
    case "$in":
    case "$nin": {
      if (onlyArray) {
        return problem(
          at,
          "applies to the array itself, which is never one of the values listed: write a value on its own to match an array containing it",
        );
      }
      if (typeof operand === "string") {
        return allows("string") ? { ok: true, value: null } : problem(at, `looks within a string, but the schema has ${described} here`);
      }
      const listed = Array.isArray(operand) ? operand : [];
      for (const [i, item] of listed.entries()) {
        const t = typeOfJson(item);
        if (!allows(t)) return problem([...at, String(i)], `is ${article(t)} ${t}, but the schema has ${described} here`);
        const v = checkValue(item, place, [...at, String(i)]);
        if (!v.ok) return v;
      }
      return { ok: true, value: null };
    }
    case "$startsWith":
    case "$endsWith":
      return allows("string")
        ? { ok: true, value: null }
        : problem(at, `compares a string's ${op === "$startsWith" ? "start" : "end"}, but the schema has ${described} here`);
  }
}

/** A literal against `const` and `enum` where every subschema of the place lists its values. */
function checkValue(value: Json, place: Place, at: string[]): Checked<null> {
  const listed: unknown[] = [];
  for (const { node } of expand(place)) {
    if (!isObject(node)) return { ok: true, value: null };
    if ("const" in node) listed.push(node.const);
    else if (Array.isArray(node.enum)) listed.push(...node.enum);
    else return { ok: true, value: null };
  }
  if (listed.length === 0 || listed.some((x) => deepEqual(x, value))) return { ok: true, value: null };
  const strings = listed.filter((x): x is string => typeof x === "string");
  const hint = typeof value === "string" ? nearestWord(value, strings) : undefined;
  const shown = listed
    .slice(0, 10)
    .map((x) => JSON.stringify(x))
    .join(", ");
  return problem(
    at,
    `is not one of the values the schema allows (${shown}${listed.length > 10 ? ", ..." : ""})${hint ? `: did you mean "${hint}"?` : ""}`,
  );
}

const article = (t: string) => (t === "array" || t === "object" ? "an" : "a");
const typesAllow = (types: Set<JsonType> | typeof ANY, t: JsonType) => types === ANY || types.has(t);

function typeOfJson(v: unknown): JsonType {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  const t = typeof v;
  return t === "string" || t === "number" || t === "boolean" ? t : "object";
}

function describe(types: Set<JsonType>): string {
  if (types.size === 0) return "no value";
  const names = [...types].sort().map((t) => `${article(t)} ${t}`);
  return names.length === 1 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} or ${names.at(-1) ?? ""}`;
}

/** Subschemas reached by following `$ref` and the combinators, each with its schema; at most 1,000. */
function expand(place: Place): Place {
  const out: Place = [];
  const seen = new Set<unknown>();
  const visit = (node: unknown, root: Record<string, unknown>) => {
    if (out.length >= 1000 || seen.has(node)) return;
    seen.add(node);
    out.push({ node, root });
    if (!isObject(node)) return;
    if (typeof node.$ref === "string") {
      const target = resolveRef(node.$ref, root);
      if (target !== undefined) visit(target, root);
    }
    for (const kw of ["allOf", "anyOf", "oneOf"]) {
      const list = node[kw];
      if (Array.isArray(list)) for (const sub of list) visit(sub, root);
    }
    for (const kw of ["then", "else"]) if (node[kw] !== undefined) visit(node[kw], root);
  };
  for (const { node, root } of place) visit(node, root);
  return out;
}

/** A local reference (`#/json/pointer`, RFC 6901, or `#anchor`) within its schema, as saved schemas allow. */
function resolveRef(ref: string, root: Record<string, unknown>): unknown {
  if (ref === "#") return root;
  if (ref.startsWith("#/")) {
    let at: unknown = root;
    // Decoded as the schema check resolved it when the schema was saved (json-schema.ts).
    for (const key of pointerSegments(ref.slice(1))) {
      if (Array.isArray(at)) at = at[Number(key)];
      else if (isObject(at)) at = at[key];
      else return undefined;
    }
    return at;
  }
  return findAnchor(root, ref.slice(1), 0);
}

function findAnchor(node: unknown, anchor: string, depth: number): unknown {
  if (depth > 64) return undefined;
  if (Array.isArray(node)) {
    for (const x of node) {
      const found = findAnchor(x, anchor, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (!isObject(node)) return undefined;
  if (node.$anchor === anchor) return node;
  for (const x of Object.values(node)) {
    const found = findAnchor(x, anchor, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The JSON types a place may hold: the union of its subschemas' `type` (an `integer` is a number),
 * else of their `const` and `enum` values, else of what `properties` or `items` imply; ANY where
 * a subschema says nothing of it (or is `true`).
 */
function typesOf(place: Place): Set<JsonType> | typeof ANY {
  const types = new Set<JsonType>();
  for (const entry of place) {
    const own = ownTypes(expand([entry]).map((n) => n.node));
    if (own === ANY) return ANY;
    for (const t of own) types.add(t);
  }
  return place.length === 0 ? ANY : types;
}

/** What one subschema, with those it names through `$ref` and `allOf`/`anyOf`/`oneOf`, says of the type. */
function ownTypes(nodes: unknown[]): Set<JsonType> | typeof ANY {
  const types = new Set<JsonType>();
  let said = false;
  for (const node of nodes) {
    if (node === false) {
      said = true;
      continue;
    }
    if (!isObject(node)) continue;
    const t = node.type;
    const listed = typeof t === "string" ? [t] : Array.isArray(t) ? t : null;
    if (listed !== null) {
      said = true;
      for (const x of listed) types.add(x === "integer" ? "number" : (x as JsonType));
    } else if ("const" in node) {
      said = true;
      types.add(typeOfJson(node.const));
    } else if (Array.isArray(node.enum)) {
      said = true;
      for (const x of node.enum) types.add(typeOfJson(x));
    } else if (isObject(node.properties)) {
      said = true;
      types.add("object");
    } else if (node.items !== undefined || Array.isArray(node.prefixItems)) {
      said = true;
      types.add("array");
    }
  }
  return said ? types : ANY;
}

/** The place of an array's elements: `items` and `prefixItems` of each subschema. */
function itemsOf(place: Place): Place {
  const out: Place = [];
  for (const { node, root } of expand(place)) {
    if (!isObject(node)) continue;
    if (node.items !== undefined && node.items !== false) out.push({ node: node.items, root });
    if (Array.isArray(node.prefixItems)) for (const x of node.prefixItems) out.push({ node: x, root });
  }
  return out;
}

/**
 * The place of a field of the objects a place describes; null where no subschema names it. A
 * schema that names its fields (`properties`) names all a filter may use, whatever
 * `additionalProperties` allows: that is what catches a misspelt path.
 */
function childOf(place: Place, key: string): Place | null {
  const out: Place = [];
  for (const entry of place) {
    // One subschema with what it names through `$ref` and the combinators: together they say
    // whether the object names its fields.
    const group = expand([entry]).filter((n): n is { node: Record<string, unknown>; root: Record<string, unknown> } => isObject(n.node));
    let named = false;
    for (const { node, root } of group) {
      const props = node.properties;
      if (isObject(props)) named = true;
      if (isObject(props) && Object.hasOwn(props, key)) out.push({ node: props[key], root });
      else if (isObject(node.patternProperties) && Object.keys(node.patternProperties).length > 0) out.push({ node: true, root });
      else if (isObject(node.additionalProperties)) out.push({ node: node.additionalProperties, root });
    }
    // A free-form object (no fields named, more allowed) holds any field: nothing to check it against.
    const closed = group.some(({ node }) => node.additionalProperties === false);
    if (!named && !closed && typesAllow(ownTypes(group.map((n) => n.node)), "object")) out.push({ node: true, root: entry.root });
  }
  return out.length === 0 ? null : out;
}

function propertyNames(place: Place): string[] {
  const names = new Set<string>();
  for (const { node } of expand(place)) {
    if (isObject(node) && isObject(node.properties)) for (const k of Object.keys(node.properties)) names.add(k);
  }
  return [...names];
}
