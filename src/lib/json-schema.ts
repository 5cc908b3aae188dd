/**
 * Event-type schemas (issue 30; product brief, "Webhook receivers' way in"): a JSON Schema
 * (draft 2020-12) for an event's `data` is hostile input, checked once when saved (`checkSchema`)
 * so that validating a publish against it (`compileSchema`) is bounded and never throws. Validation
 * is @cfworker/json-schema, an interpreter (Workers forbid eval and `new Function`, so code-
 * generating validators cannot run). Pure: no bindings, no Hono. Every refusal is a value naming the
 * JSON pointer (RFC 6901) of the part at fault; the WebhookObject turns it into the 400 naming the
 * field and that path (objects/webhooks/event-types.ts).
 *
 * What a saved schema may not do, and why:
 * - exceed 64 KiB serialized or 32 levels of nesting (bounded work to check, store and serve it);
 * - reference anything but itself: `$ref` only as a local fragment (`#/json/pointer` or `#anchor`)
 *   that resolves, and no `$id` (a base URI would make fragments resolve elsewhere; nothing is
 *   ever fetched); `$dynamicRef`/`$dynamicAnchor` are refused because the validator does not
 *   implement them (the schema would silently constrain less than its author meant);
 * - loop without consuming data (`{"$ref": "#"}`), or unfold through shared `$ref`s into more
 *   than 10,000 subschemas (the schema analogue of "billion laughs");
 * - use a `pattern` (or `patternProperties` key) that does not compile with the `u` flag, is
 *   longer than 500 characters, or is not proven free of backtracking blow-up by `patternRisk`
 *   below; `format: "url"` (not a 2020-12 format, and the validator's regex for it is itself
 *   exponential: 36 characters take seconds);
 * - ask `uniqueItems` without `maxItems` of at most 256 (the check is quadratic in the array);
 * - use a keyword that is not draft 2020-12's (issue 42): a misspelling (`requried`) would
 *   otherwise be ignored and check nothing. The known keywords are those of the vocabularies the
 *   2020-12 meta-schema names (core, applicator, unevaluated, validation, format-annotation,
 *   content, meta-data), plus `definitions`, which that meta-schema keeps for compatibility;
 *   `x-` prefixed names are extensions (an OpenAPI habit) and pass, as annotations. Property
 *   names (under `properties`, `patternProperties`, `$defs`, `dependentSchemas`) are not keywords.
 * At validation time, strings (and, with `patternProperties`, object keys) longer than 1000
 * characters are not given to a regular expression: the linear-per-start-position patterns that
 * pass `patternRisk` still cost O(n^2) over an unanchored search, 1000^2 steps being ~2 ms.
 */
import { Validator } from "@cfworker/json-schema";
import { nearestWord } from "./nearest";

export type Result = { ok: true } | { ok: false; path: string; message: string };
export interface CompiledSchema {
  validate(data: unknown): Result;
}

export const MAX_SCHEMA_BYTES = 64 * 1024;
export const MAX_SCHEMA_DEPTH = 32;
export const MAX_PATTERN_LENGTH = 500;
/** Longest string (or key) a pattern is run on at validation; longer ones fail as too long. */
export const PATTERN_INPUT_MAX = 1000;
export const UNIQUE_ITEMS_MAX = 256;
/** Subschemas a schema may unfold to through `$ref` (each counted once per path reaching it). */
export const MAX_UNFOLDED = 10_000;
/** Data nesting a recursive schema (one with `$ref`) is validated to: the validator recurses per level. */
export const MAX_DATA_DEPTH = 256;

const DIALECT = "https://json-schema.org/draft/2020-12/schema";
const TYPES = new Set(["array", "boolean", "integer", "null", "number", "object", "string"]);
/** Keywords whose value is one subschema (JSON Schema Core 10.2, 10.3; Validation 6). */
const SCHEMA_KW = [
  "items",
  "contains",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
];
const SCHEMA_ARRAY_KW = ["allOf", "anyOf", "oneOf", "prefixItems"];
const SCHEMA_MAP_KW = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
/** Applicators that apply to the same instance: a cycle through these alone never ends. */
const IN_PLACE = new Set(["allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"]);
const NON_NEGATIVE_INT_KW = [
  "maxLength",
  "minLength",
  "maxItems",
  "minItems",
  "maxProperties",
  "minProperties",
  "maxContains",
  "minContains",
];
const NUMBER_KW = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
const REFUSED_KW: Record<string, string> = {
  $id: "is not accepted: an event schema is identified by its event type, and a base URI would make its references resolve elsewhere",
  $dynamicRef: "is not supported: use $ref",
  $dynamicAnchor: "is not supported: use $anchor",
  $recursiveRef: "is draft 2019-09: use $ref",
  $recursiveAnchor: "is draft 2019-09: use $anchor",
  dependencies: "is draft 7: use dependentRequired or dependentSchemas",
  additionalItems: "is draft 2019-09: use prefixItems and items",
};
/**
 * The keywords of draft 2020-12's vocabularies (Core 8, 10, 11; Validation 6, 7.2, 8, 9). What the
 * validator does with each is in ASSERTED and ANNOTATIONS below (the pages say it to their readers).
 */
const KNOWN_KW = new Set([
  // core
  "$schema",
  "$id",
  "$ref",
  "$anchor",
  "$dynamicRef",
  "$dynamicAnchor",
  "$vocabulary",
  "$comment",
  "$defs",
  // applicator
  "prefixItems",
  "items",
  "contains",
  "additionalProperties",
  "properties",
  "patternProperties",
  "dependentSchemas",
  "propertyNames",
  "if",
  "then",
  "else",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  // unevaluated
  "unevaluatedItems",
  "unevaluatedProperties",
  // validation
  "type",
  "const",
  "enum",
  "multipleOf",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "pattern",
  "maxItems",
  "minItems",
  "uniqueItems",
  "maxContains",
  "minContains",
  "maxProperties",
  "minProperties",
  "required",
  "dependentRequired",
  // format-annotation
  "format",
  // content
  "contentEncoding",
  "contentMediaType",
  "contentSchema",
  // meta-data
  "title",
  "description",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "examples",
  // kept by the 2020-12 meta-schema for compatibility (walked like $defs)
  "definitions",
]);
/** Extension keywords (OpenAPI's habit): accepted, and annotations only. */
export const EXTENSION_PREFIX = "x-";
/**
 * The `format` values @cfworker/json-schema asserts (its `format.js`: a string that does not match
 * fails); any other format is an annotation only. Draft 2020-12 makes `format` an annotation by
 * default; this validator asserts these whatever the dialect says.
 */
export const ASSERTED_FORMATS = [
  "date",
  "time",
  "date-time",
  "duration",
  "uri",
  "uri-reference",
  "uri-template",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "regex",
  "uuid",
  "json-pointer",
  "json-pointer-uri-fragment",
  "relative-json-pointer",
] as const;
/** Keywords that describe and check nothing (besides `format` with another value, and `x-` extensions). */
export const ANNOTATION_KEYWORDS = [
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$comment",
  "contentEncoding",
  "contentMediaType",
  "contentSchema",
] as const;
/** Keywords that name, identify or hold subschemas, and check nothing by themselves. */
const STRUCTURAL = new Set(["$schema", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$defs", "definitions"]);
/** Keywords the validator checks data against (`format` only with one of ASSERTED_FORMATS: listed apart). */
export const ASSERTED_KEYWORDS = [...KNOWN_KW].filter(
  (kw) => kw !== "format" && !STRUCTURAL.has(kw) && !(ANNOTATION_KEYWORDS as readonly string[]).includes(kw),
);
/** Hints for keywords of other dialects people carry over. */
const KEYWORD_HINTS: Record<string, string> = {
  example: 'use "examples" (an array)',
  nullable: 'an OpenAPI 3.0 keyword: use a type array with "null"',
  discriminator: "an OpenAPI keyword: use oneOf with const",
  exclusive: "use exclusiveMinimum or exclusiveMaximum (numbers)",
};

/** A local reference: a JSON pointer fragment of plain characters (RFC 6901 5), or an anchor (Core 8.2.2). */
const POINTER_REF = /^#(?:\/(?:[A-Za-z0-9_.$-]|~[01])*)*$/;
const ANCHOR = /^[A-Za-z_][A-Za-z0-9._-]*$/;

const fail = (path: string, message: string): Result => ({ ok: false, path, message });
const OK: Result = { ok: true };
const seg = (s: string | number): string => `/${String(s).replace(/~/g, "~0").replace(/\//g, "~1")}`;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Checks a schema before it is saved; the first problem found, with its JSON pointer. */
export function checkSchema(schema: Record<string, unknown>): Result {
  const bytes = new TextEncoder().encode(JSON.stringify(schema)).length;
  if (bytes > MAX_SCHEMA_BYTES) return fail("", `is ${bytes} bytes serialized; at most ${MAX_SCHEMA_BYTES}`);
  const deep = tooDeep(schema, "", 1);
  if (deep !== null) return fail(deep, `nests deeper than ${MAX_SCHEMA_DEPTH} levels`);

  const nodes = new Map<string, unknown>();
  const anchors = new Map<string, string>();
  const refs: { at: string; ref: string }[] = [];
  const shape = walk(schema, "", { nodes, anchors, refs });
  if (!shape.ok) return shape;
  if (schema.$schema !== undefined && schema.$schema !== DIALECT) return fail("/$schema", `must be ${DIALECT} (draft 2020-12) when given`);

  const targets = new Map<string, string>();
  for (const { at, ref } of refs) {
    const target = resolveRef(ref, nodes, anchors);
    if (target === null) return fail(`${at}/$ref`, "must be a local reference (#/json/pointer or #anchor) to a subschema of this schema");
    targets.set(at, target);
  }
  const loop = inPlaceCycle(nodes, targets);
  if (loop !== null) return fail(`${loop}/$ref`, "loops back to itself without descending into the data");
  if (unfolded("", nodes, targets, new Map(), new Set()) > MAX_UNFOLDED) {
    return fail("", `unfolds through $ref into more than ${MAX_UNFOLDED} subschemas`);
  }
  try {
    new Validator(prepare(schema) as Record<string, unknown>, "2020-12");
  } catch {
    return fail("", "defines the same anchor or location twice");
  }
  return OK;
}

function tooDeep(v: unknown, at: string, depth: number): string | null {
  if (typeof v !== "object" || v === null) return null;
  if (depth > MAX_SCHEMA_DEPTH) return at;
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  for (const [k, x] of entries) {
    const found = tooDeep(x, `${at}${seg(k)}`, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

interface Walk {
  nodes: Map<string, unknown>;
  anchors: Map<string, string>;
  refs: { at: string; ref: string }[];
}

/** The obvious of the draft 2020-12 meta-schema (each keyword's type), plus this module's bounds. */
function walk(s: unknown, at: string, w: Walk): Result {
  w.nodes.set(at, s);
  if (typeof s === "boolean") return OK;
  if (!isObject(s)) return fail(at, "must be a schema (an object or a boolean)");
  for (const [kw, why] of Object.entries(REFUSED_KW)) if (kw in s) return fail(`${at}${seg(kw)}`, why);
  for (const kw of Object.keys(s)) {
    if (!KNOWN_KW.has(kw) && !kw.startsWith(EXTENSION_PREFIX)) return fail(`${at}${seg(kw)}`, unknownKeyword(kw));
  }

  const t = s.type;
  if (t !== undefined) {
    const list = Array.isArray(t) ? t : [t];
    if (list.length === 0 || list.some((x) => typeof x !== "string" || !TYPES.has(x)) || new Set(list).size !== list.length) {
      return fail(`${at}/type`, `must be one of ${[...TYPES].join(", ")}, or an array of distinct ones`);
    }
  }
  for (const kw of NON_NEGATIVE_INT_KW) {
    const v = s[kw];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0)) return fail(`${at}${seg(kw)}`, "must be a non-negative integer");
  }
  for (const kw of NUMBER_KW) if (s[kw] !== undefined && typeof s[kw] !== "number") return fail(`${at}${seg(kw)}`, "must be a number");
  if (s.multipleOf !== undefined && !(typeof s.multipleOf === "number" && s.multipleOf > 0))
    return fail(`${at}/multipleOf`, "must be a number above 0");
  if (s.required !== undefined && !isStringSet(s.required)) return fail(`${at}/required`, "must be an array of distinct strings");
  if (s.enum !== undefined && !Array.isArray(s.enum)) return fail(`${at}/enum`, "must be an array");
  if (s.uniqueItems !== undefined && typeof s.uniqueItems !== "boolean") return fail(`${at}/uniqueItems`, "must be a boolean");
  if (s.uniqueItems === true && !(typeof s.maxItems === "number" && s.maxItems <= UNIQUE_ITEMS_MAX)) {
    return fail(
      `${at}/uniqueItems`,
      `needs maxItems of at most ${UNIQUE_ITEMS_MAX} beside it: its check is quadratic in the array's length`,
    );
  }
  if (s.dependentRequired !== undefined) {
    if (!isObject(s.dependentRequired) || !Object.values(s.dependentRequired).every(isStringSet)) {
      return fail(`${at}/dependentRequired`, "must map property names to arrays of distinct strings");
    }
  }
  if (s.format !== undefined) {
    if (typeof s.format !== "string") return fail(`${at}/format`, "must be a string");
    if (s.format === "url") return fail(`${at}/format`, 'is not a draft 2020-12 format: use "uri"');
  }
  if (s.$anchor !== undefined) {
    if (typeof s.$anchor !== "string" || !ANCHOR.test(s.$anchor))
      return fail(`${at}/$anchor`, "must be a plain name (letters, digits, _ . -)");
    if (w.anchors.has(s.$anchor)) return fail(`${at}/$anchor`, "is defined twice");
    w.anchors.set(s.$anchor, at);
  }
  if (s.$ref !== undefined) {
    if (typeof s.$ref !== "string") return fail(`${at}/$ref`, "must be a string");
    w.refs.push({ at, ref: s.$ref });
  }
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== "string") return fail(`${at}/pattern`, "must be a string");
    const bad = patternProblem(s.pattern);
    if (bad !== null) return fail(`${at}/pattern`, bad);
  }
  for (const kw of SCHEMA_KW) {
    if (s[kw] === undefined) continue;
    const r = walk(s[kw], `${at}${seg(kw)}`, w);
    if (!r.ok) return r;
  }
  for (const kw of SCHEMA_ARRAY_KW) {
    const v = s[kw];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length === 0) return fail(`${at}${seg(kw)}`, "must be a non-empty array of schemas");
    for (const [i, x] of v.entries()) {
      const r = walk(x, `${at}${seg(kw)}${seg(i)}`, w);
      if (!r.ok) return r;
    }
  }
  for (const kw of SCHEMA_MAP_KW) {
    const v = s[kw];
    if (v === undefined) continue;
    if (!isObject(v)) return fail(`${at}${seg(kw)}`, "must be an object of schemas");
    for (const [k, x] of Object.entries(v)) {
      if (kw === "patternProperties") {
        const bad = patternProblem(k);
        if (bad !== null) return fail(`${at}${seg(kw)}${seg(k)}`, `key ${bad}`);
      }
      const r = walk(x, `${at}${seg(kw)}${seg(k)}`, w);
      if (!r.ok) return r;
    }
  }
  return OK;
}

/**
 * Why an unknown keyword is refused, naming it when it is plain (errors never echo other client
 * text; the path names it anyway), with the keyword it is likely a misspelling of.
 */
function unknownKeyword(kw: string): string {
  const named = /^[A-Za-z0-9_$-]{1,40}$/.test(kw) ? `unknown keyword "${kw}"` : "unknown keyword";
  const hint = KEYWORD_HINTS[kw] ?? (kw.length <= 40 ? nearest(kw) : undefined);
  return `${named}: not a JSON Schema draft 2020-12 keyword${hint ? ` (${hint})` : ""}; extension keywords start with "${EXTENSION_PREFIX}"`;
}

/** The known keyword within two edits of `kw` (case aside), as "did you mean ...". */
function nearest(kw: string): string | undefined {
  const best = nearestWord(kw, KNOWN_KW);
  return best === undefined ? undefined : `did you mean "${best}"?`;
}

function isStringSet(v: unknown): boolean {
  return Array.isArray(v) && v.every((x) => typeof x === "string") && new Set(v).size === v.length;
}

/** The pointer of the subschema a local `$ref` names, or null when it names none. */
function resolveRef(ref: string, nodes: Map<string, unknown>, anchors: Map<string, string>): string | null {
  if (ref.startsWith("#/") || ref === "#") {
    if (!POINTER_REF.test(ref)) return null;
    const pointer = ref.slice(1);
    return nodes.has(pointer) ? pointer : null;
  }
  const anchor = ref.slice(1);
  return ref.startsWith("#") && ANCHOR.test(anchor) ? (anchors.get(anchor) ?? null) : null;
}

/** The child subschemas of a node: [pointer, whether it applies to the same instance]. */
function children(at: string, nodes: Map<string, unknown>, targets: Map<string, string>): [string, boolean][] {
  const s = nodes.get(at);
  if (!isObject(s)) return [];
  const out: [string, boolean][] = [];
  const target = targets.get(at);
  if (target !== undefined) out.push([target, true]);
  for (const kw of SCHEMA_KW) if (s[kw] !== undefined) out.push([`${at}${seg(kw)}`, IN_PLACE.has(kw)]);
  for (const kw of SCHEMA_ARRAY_KW) {
    const v = s[kw];
    if (Array.isArray(v)) for (let i = 0; i < v.length; i++) out.push([`${at}${seg(kw)}${seg(i)}`, IN_PLACE.has(kw)]);
  }
  for (const kw of SCHEMA_MAP_KW) {
    if (kw === "$defs" || kw === "definitions") continue; // reached only through $ref
    const v = s[kw];
    if (isObject(v)) for (const k of Object.keys(v)) out.push([`${at}${seg(kw)}${seg(k)}`, IN_PLACE.has(kw)]);
  }
  return out;
}

/** A `$ref` on a cycle of same-instance applicators (validation would recurse forever), or null. */
function inPlaceCycle(nodes: Map<string, unknown>, targets: Map<string, string>): string | null {
  const state = new Map<string, 1 | 2>();
  const visit = (at: string): string | null => {
    state.set(at, 1);
    for (const [child, inPlace] of children(at, nodes, targets)) {
      if (!inPlace) continue;
      if (state.get(child) === 1) return targets.has(at) ? at : child;
      if (state.get(child) === undefined) {
        const found = visit(child);
        if (found !== null) return found;
      }
    }
    state.set(at, 2);
    return null;
  };
  for (const at of targets.keys()) {
    if (state.get(at) === undefined) {
      const found = visit(at);
      if (found !== null) return found;
    }
  }
  return null;
}

/**
 * How many subschemas the schema unfolds to, `$ref`s inlined, a recursion (a node already on the
 * path, reached by descending into the data) counting nothing more: the work per data location is
 * bounded by it. Stops counting past the bound.
 */
function unfolded(
  at: string,
  nodes: Map<string, unknown>,
  targets: Map<string, string>,
  memo: Map<string, number>,
  onPath: Set<string>,
): number {
  const known = memo.get(at);
  if (known !== undefined) return known;
  if (onPath.has(at)) return 0;
  onPath.add(at);
  let total = 1;
  for (const [child] of children(at, nodes, targets)) {
    total += unfolded(child, nodes, targets, memo, onPath);
    if (total > MAX_UNFOLDED) break;
  }
  onPath.delete(at);
  memo.set(at, total);
  return total;
}

function patternProblem(p: string): string | null {
  if (p.length > MAX_PATTERN_LENGTH) return `must be at most ${MAX_PATTERN_LENGTH} characters`;
  try {
    new RegExp(p, "u");
  } catch {
    return "is not a valid regular expression (ECMA-262, with the u flag)";
  }
  const risk = patternRisk(p);
  return risk === null ? null : `can backtrack catastrophically: ${risk}`;
}

/*
 * Backtracking safety of a regular expression (ReDoS). A backtracking matcher (V8's Irregexp)
 * takes exponential time when the pattern is ambiguous under a star, e.g. `(a+)+`, `(a|a)*`
 * (Kirrage, Rathnayake, Thielecke, "Static Analysis for Regular Expression Denial-of-Service
 * Attacks", NSS 2013; Weideman et al., "Analyzing Matching Time Behavior of Backtracking Regular
 * Expression Matchers by Using Ambiguity of NFA", CIAA 2016: exponential iff the NFA has EDA), and
 * polynomial time when consecutive quantifiers can match the same text, e.g. `a*a*b`, `\d+\.?\d*`
 * (IDA, same paper; Davis et al., "The Impact of Regular Expression Denial of Service (ReDoS) in
 * Practice", FSE 2018: most real ReDoS are polynomial). Deciding EDA/IDA exactly is costly, so
 * this check is conservative (it refuses some safe patterns, never lets an ambiguous one through),
 * and refuses:
 * 1. a repeated group (`*`, `+`, `{n,m}` with m > 1) whose body holds a quantifier of variable count
 *    (star height > 1: `(a+)+`, `(.*a){20}`, `(a?){9}`) or can match the empty string;
 * 2. an alternation whose branches can start with the same character (`(a|a)*`, `(a|ab)`, `(\w|\d)`),
 *    unless every branch is a literal word and none is a prefix of another (`GET|POST|PUT`), or
 *    with an empty branch;
 * 3. a quantifier of variable count (`*`, `+`, `?`, `{n,m}`) followed by something that can start
 *    with a character it can match (`a*a*`, `\s+\s*`, `[^@]+\.[^@]+` -- `.` is in `[^@]`), so that
 *    where it stops is decided by the next character: each attempt is then linear;
 * 4. backreferences (matching with them is NP-hard: Aho, "Algorithms for Finding Patterns in
 *    Strings", 1990) and `\p{...}` inside checks it cannot compare (counted as matching anything).
 * An unanchored search still retries at each position (O(n^2): `\s+$` takes 18 s on 100,000
 * spaces), hence the 1000-character bound on what a pattern is run on at validation.
 */

type CharSet = [number, number][];
type Node =
  | { k: "chars"; set: CharSet; lit: boolean }
  | { k: "zero" }
  | { k: "group"; alt: Node[][]; look: boolean }
  | { k: "quant"; atom: Node; min: number; max: number }
  | { k: "backref" };

const MAX_CP = 0x10ffff;
const ALL: CharSet = [[0, MAX_CP]];
const DIGIT: CharSet = [[48, 57]];
const WORD: CharSet = [
  [48, 57],
  [65, 90],
  [95, 95],
  [97, 122],
];
const SPACE: CharSet = [
  [9, 13],
  [32, 32],
  [160, 160],
  [5760, 5760],
  [8192, 8202],
  [8232, 8233],
  [8239, 8239],
  [8287, 8287],
  [12288, 12288],
  [65279, 65279],
];

function normalize(set: CharSet): CharSet {
  const sorted = [...set].sort((a, b) => a[0] - b[0]);
  const out: CharSet = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}
function negate(set: CharSet): CharSet {
  const out: CharSet = [];
  let next = 0;
  for (const [lo, hi] of normalize(set)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return out;
}
const union = (a: CharSet, b: CharSet): CharSet => normalize([...a, ...b]);
const overlaps = (a: CharSet, b: CharSet): boolean => a.some(([l1, h1]) => b.some(([l2, h2]) => l1 <= h2 && l2 <= h1));

class Unsure extends Error {}

/** A parser of ECMA-262 u-mode patterns (the syntax is already known valid: `new RegExp(p, "u")`). */
class Parser {
  private i = 0;
  constructor(private readonly p: string) {}

  parse(): Node[][] {
    const alt = this.alternation();
    if (this.i < this.p.length) throw new Unsure("unbalanced parenthesis");
    return alt;
  }
  private peek(): string | undefined {
    return this.p[this.i];
  }
  private alternation(): Node[][] {
    const branches: Node[][] = [this.sequence()];
    while (this.peek() === "|") {
      this.i++;
      branches.push(this.sequence());
    }
    return branches;
  }
  private sequence(): Node[] {
    const seq: Node[] = [];
    for (let c = this.peek(); c !== undefined && c !== "|" && c !== ")"; c = this.peek()) {
      const atom = this.atom();
      seq.push(this.quantified(atom));
    }
    return seq;
  }
  private quantified(atom: Node): Node {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === "*" || c === "+" || c === "?") {
      this.i++;
      [min, max] = c === "*" ? [0, Number.POSITIVE_INFINITY] : c === "+" ? [1, Number.POSITIVE_INFINITY] : [0, 1];
    } else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.p.slice(this.i));
      if (m === null) throw new Unsure("brace");
      this.i += m[0].length;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? Number.POSITIVE_INFINITY : Number(m[3]);
    } else {
      return atom;
    }
    if (this.peek() === "?") this.i++; // lazy: the same ambiguity, explored in another order
    return { k: "quant", atom, min, max };
  }
  private atom(): Node {
    const c = this.p[this.i++];
    if (c === "^" || c === "$") return { k: "zero" };
    if (c === ".") return { k: "chars", set: ALL, lit: false };
    if (c === "[") return { k: "chars", set: this.charClass(), lit: false };
    if (c === "(") {
      let look = false;
      if (this.p.startsWith("?:", this.i)) this.i += 2;
      else if (/^\?<?[=!]/.test(this.p.slice(this.i))) {
        look = true;
        this.i += this.p[this.i + 1] === "<" ? 3 : 2;
      } else if (this.p.startsWith("?<", this.i)) this.i = this.p.indexOf(">", this.i) + 1;
      else if (this.peek() === "?") throw new Unsure("group modifier");
      const alt = this.alternation();
      if (this.p[this.i++] !== ")") throw new Unsure("unbalanced parenthesis");
      return { k: "group", alt, look };
    }
    if (c === "\\") return this.escape(false);
    if (c === undefined) throw new Unsure("end");
    const cp = this.p.codePointAt(this.i - 1) ?? 0;
    if (cp > 0xffff) this.i++;
    return { k: "chars", set: [[cp, cp]], lit: true };
  }
  /** After a backslash; in a class, `\b` is U+0008 and there are no backreferences. */
  private escape(inClass: boolean): Node {
    const c = this.p[this.i++];
    const set = (s: CharSet): Node => ({ k: "chars", set: s, lit: false });
    const one = (cp: number): Node => ({ k: "chars", set: [[cp, cp]], lit: true });
    switch (c) {
      case "d":
        return set(DIGIT);
      case "D":
        return set(negate(DIGIT));
      case "w":
        return set(WORD);
      case "W":
        return set(negate(WORD));
      case "s":
        return set(SPACE);
      case "S":
        return set(negate(SPACE));
      case "b":
        return inClass ? one(8) : { k: "zero" };
      case "B":
        return { k: "zero" };
      case "n":
        return one(10);
      case "r":
        return one(13);
      case "t":
        return one(9);
      case "v":
        return one(11);
      case "f":
        return one(12);
      case "0":
        return one(0);
      case "c":
        return one((this.p.charCodeAt(this.i++) ?? 0) % 32);
      case "p":
      case "P": {
        this.i = this.p.indexOf("}", this.i) + 1;
        return set(ALL);
      }
      case "x": {
        const hex = this.p.slice(this.i, this.i + 2);
        this.i += 2;
        return one(Number.parseInt(hex, 16));
      }
      case "u": {
        const m = /^\{([0-9a-fA-F]+)\}|^([0-9a-fA-F]{4})/.exec(this.p.slice(this.i));
        if (m === null) throw new Unsure("unicode escape");
        this.i += m[0].length;
        return one(Number.parseInt(m[1] ?? m[2] ?? "0", 16));
      }
      case "k":
        if (inClass) throw new Unsure("escape");
        return { k: "backref" };
      default:
        if (c !== undefined && /[1-9]/.test(c)) {
          if (inClass) throw new Unsure("escape");
          while (/\d/.test(this.peek() ?? "")) this.i++;
          return { k: "backref" };
        }
        if (c === undefined) throw new Unsure("escape");
        return one(c.codePointAt(0) ?? 0);
    }
  }
  private charClass(): CharSet {
    let negated = false;
    if (this.peek() === "^") {
      negated = true;
      this.i++;
    }
    let set: CharSet = [];
    const single = (): CharSet => {
      const c = this.p[this.i++];
      if (c === "\\") {
        const n = this.escape(true);
        if (n.k !== "chars") throw new Unsure("class escape");
        return n.set;
      }
      const cp = this.p.codePointAt(this.i - 1) ?? 0;
      if (cp > 0xffff) this.i++;
      return [[cp, cp]];
    };
    while (this.peek() !== "]") {
      if (this.peek() === undefined) throw new Unsure("class");
      const from = single();
      if (this.peek() === "-" && this.p[this.i + 1] !== "]" && from.length === 1 && from[0]?.[0] === from[0]?.[1]) {
        this.i++;
        const to = single();
        const lo = from[0]?.[0] ?? 0;
        const hi = to.length === 1 && to[0]?.[0] === to[0]?.[1] ? (to[0]?.[0] ?? MAX_CP) : MAX_CP;
        set = union(set, [[lo, hi]]);
      } else {
        set = union(set, from);
      }
    }
    this.i++;
    return negated ? negate(set) : set;
  }
}

const nullable = (n: Node): boolean =>
  n.k === "zero" || (n.k === "group" && (n.look || n.alt.some(seqNullable))) || (n.k === "quant" && (n.min === 0 || nullable(n.atom)));
const seqNullable = (seq: Node[]): boolean => seq.every(nullable);
function first(n: Node): CharSet {
  if (n.k === "chars") return n.set;
  if (n.k === "group") return n.look ? [] : n.alt.reduce<CharSet>((acc, seq) => union(acc, seqFirst(seq)), []);
  if (n.k === "quant") return first(n.atom);
  return [];
}
function seqFirst(seq: Node[]): CharSet {
  let out: CharSet = [];
  for (const n of seq) {
    out = union(out, first(n));
    if (!nullable(n)) break;
  }
  return out;
}
const variable = (n: Node): boolean =>
  n.k === "quant" ? n.min !== n.max || variable(n.atom) : n.k === "group" ? n.alt.some((s) => s.some(variable)) : false;
const literal = (seq: Node[]): string | null =>
  seq.every((n) => n.k === "chars" && n.lit)
    ? seq.map((n) => (n.k === "chars" ? String.fromCodePoint(n.set[0]?.[0] ?? 0) : "")).join("")
    : null;

/** Why a pattern can backtrack catastrophically under the rules above, or null when it cannot. */
export function patternRisk(pattern: string): string | null {
  let tree: Node[][];
  try {
    tree = new Parser(pattern).parse();
  } catch {
    return "its syntax is beyond what this check understands";
  }
  return checkAlt(tree, []);
}

function checkAlt(alt: Node[][], follow: CharSet): string | null {
  if (alt.length > 1) {
    if (alt.filter(seqNullable).length > 0) return "an alternation has an empty branch (use ? on the group)";
    const words = alt.map(literal);
    for (let a = 0; a < alt.length; a++) {
      for (let b = a + 1; b < alt.length; b++) {
        const wa = words[a];
        const wb = words[b];
        if (wa != null && wb != null) {
          if (wa.startsWith(wb) || wb.startsWith(wa)) return "an alternation has a branch that is a prefix of another";
        } else if (overlaps(seqFirst(alt[a] ?? []), seqFirst(alt[b] ?? []))) {
          return "an alternation has branches that can start with the same character";
        }
      }
    }
  }
  for (const seq of alt) {
    const found = checkSeq(seq, follow);
    if (found !== null) return found;
  }
  return null;
}

function checkSeq(seq: Node[], follow: CharSet): string | null {
  // follows[i]: the characters that can come right after seq[i].
  const follows: CharSet[] = new Array(seq.length);
  let after = follow;
  for (let i = seq.length - 1; i >= 0; i--) {
    follows[i] = after;
    const n = seq[i] as Node;
    after = nullable(n) ? union(first(n), after) : first(n);
  }
  for (const [i, n] of seq.entries()) {
    const next = follows[i] ?? [];
    if (n.k === "backref") return "backreferences are not accepted";
    if (n.k === "group") {
      const found = checkAlt(n.alt, n.look ? [] : next);
      if (found !== null) return found;
    }
    if (n.k === "quant") {
      const repeats = n.max > 1;
      if (repeats && nullable(n.atom)) return "a repeated part can match the empty string";
      if (repeats && n.atom.k === "group" && n.atom.alt.some((s) => s.some(variable))) return "a quantifier is nested in a repeated group";
      if (n.min !== n.max && overlaps(first(n.atom), next))
        return "a quantifier is followed by something that can start with what it matches";
      const inner = repeats ? union(first(n.atom), next) : next;
      if (n.atom.k === "group") {
        const found = checkAlt(n.atom.alt, n.atom.look ? [] : inner);
        if (found !== null) return found;
      }
      if (n.atom.k === "backref") return "backreferences are not accepted";
    }
  }
  return null;
}

/**
 * The schema the validator is given: a copy (the validator annotates what it is given), with each
 * `pattern` run only on strings of at most PATTERN_INPUT_MAX characters (a longer one fails as
 * `maxLength`) and `uniqueItems` checked only once `maxItems` holds (the validator checks every
 * keyword, so the quadratic check would otherwise run on any array). Moved into `allOf`, appended:
 * the existing pointers, which `$ref`s name, stay where they were.
 */
function prepare(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(prepare);
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema))
    out[k] = k === "enum" || k === "const" || k === "examples" || k === "default" ? v : prepare(v);
  const guards: unknown[] = [];
  if (typeof out.pattern === "string") {
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then (Core 10.2.2), not a thenable.
    guards.push({ if: { maxLength: PATTERN_INPUT_MAX }, then: { pattern: out.pattern }, else: { maxLength: PATTERN_INPUT_MAX } });
    delete out.pattern;
  }
  if (out.uniqueItems === true && typeof out.maxItems === "number") {
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then (Core 10.2.2), not a thenable.
    guards.push({ if: { maxItems: out.maxItems }, then: { uniqueItems: true } });
    delete out.uniqueItems;
  }
  if (guards.length > 0) out.allOf = [...(Array.isArray(out.allOf) ? out.allOf : []), ...guards];
  return out;
}

/** Keywords whose error only says "a subschema failed": the failure chosen is below them. */
const WRAPPERS = new Set([
  "$ref",
  "allOf",
  "anyOf",
  "oneOf",
  "if",
  "then",
  "else",
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "unevaluatedItems",
  "propertyNames",
  "dependentSchemas",
]);

/**
 * A validator for a schema `checkSchema` accepted. Short-circuits (the first failure of each
 * applicator ends it) since one failure is reported; the failure reported is the deepest in the
 * data among the keywords that say what is wrong (type, required, pattern...), not the applicator
 * above them, first in the validator's order on a tie.
 */
export function compileSchema(schema: Record<string, unknown>): CompiledSchema {
  const prepared = prepare(schema) as Record<string, unknown>;
  const text = JSON.stringify(schema);
  const recursive = text.includes('"$ref"');
  const keyed = text.includes('"patternProperties"');
  const validator = new Validator(prepared, "2020-12", true);
  return {
    validate(data: unknown): Result {
      const bound = dataBounds(data, recursive, keyed);
      if (bound !== null) return bound;
      let result: ReturnType<Validator["validate"]>;
      try {
        result = validator.validate(data);
      } catch {
        // A value JSON cannot hold, or a stack exhausted: refused, never a 5xx.
        return fail("", "could not be validated against the event type's schema");
      }
      if (result.valid) return OK;
      return chooseError(result.errors);
    },
  };
}

function dataBounds(data: unknown, recursive: boolean, keyed: boolean): Result | null {
  if (!recursive && !keyed) return null;
  const stack: [unknown, string, number][] = [[data, "", 0]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, at, depth] = top;
    if (typeof v !== "object" || v === null) continue;
    if (recursive && depth >= MAX_DATA_DEPTH) return fail(at, `nests deeper than ${MAX_DATA_DEPTH} levels`);
    if (Array.isArray(v)) for (const [i, x] of v.entries()) stack.push([x, `${at}${seg(i)}`, depth + 1]);
    else {
      for (const [k, x] of Object.entries(v)) {
        if (keyed && k.length > PATTERN_INPUT_MAX)
          return fail(`${at}${seg(k.slice(0, 40))}`, `has a property name longer than ${PATTERN_INPUT_MAX} characters`);
        stack.push([x, `${at}${seg(k)}`, depth + 1]);
      }
    }
  }
  return null;
}

interface OutputUnit {
  keyword: string;
  instanceLocation: string;
  error: string;
}

function chooseError(errors: OutputUnit[]): Result {
  const leaves = errors.filter((e) => !WRAPPERS.has(e.keyword));
  const pool = leaves.length > 0 ? leaves : errors;
  let best: OutputUnit | undefined;
  let bestDepth = -1;
  for (const e of pool) {
    const depth = pointerOf(e.instanceLocation).split("/").length;
    if (depth > bestDepth) {
      best = e;
      bestDepth = depth;
    }
  }
  if (best === undefined) return fail("", "does not match the event type's schema");
  const at = pointerOf(best.instanceLocation);
  if (best.keyword === "required") {
    const name = /property "(.*)"/.exec(best.error)?.[1];
    if (name !== undefined) return fail(`${at}${seg(name)}`, "is required");
  }
  return fail(at, messageOf(best));
}

/** The validator's instance locations are `#`-prefixed pointers. */
const pointerOf = (location: string): string => (location.startsWith("#") ? location.slice(1) : location);

/** The validator's text, without the client's value (error texts never echo input: errors.ts). */
function messageOf(e: OutputUnit): string {
  if (/^(minimum|maximum|exclusiveMinimum|exclusiveMaximum)$/.test(e.keyword)) {
    const i = e.error.indexOf(" is ");
    return i >= 0
      ? e.error
          .slice(i + 1)
          .replace(/\s+/g, " ")
          .replace(/\.$/, "")
      : `breaks ${e.keyword}`;
  }
  if (e.keyword === "false") return "is not allowed";
  return `breaks ${e.keyword}: ${e.error.replace(/\.$/, "")}`;
}

/** Each example against the schema; the first failure names the example's index and the path in it. */
export function checkExamples(schema: Record<string, unknown>, examples: unknown[]): Result {
  const compiled = compileSchema(schema);
  for (const [i, example] of examples.entries()) {
    const r = compiled.validate(example);
    if (!r.ok) return fail(`/${i}${r.path}`, r.message);
  }
  return OK;
}

/**
 * A JSON pointer (RFC 6901) as path segments, `~1` and `~0` undone: the input issue's path under
 * the field at fault (`["data", "items", "0", "price"]`), which each surface names its way.
 */
export function pointerSegments(pointer: string): string[] {
  return pointer === ""
    ? []
    : pointer
        .slice(1)
        .split("/")
        .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}
