/**
 * JSON helpers. A bound on how deeply client JSON may nest, checked on the text before it is parsed: JSON.parse
 * accepts any depth, but everything after it that walks the value (schema validation,
 * JSON.stringify, structured clone into a Queue message or Durable Object call) recurses, and a
 * 20,000-deep array overflows the stack there. One linear, non-recursive scan over the text
 * refuses such input before any of that work starts. Duplicate member names, which JSON.parse
 * resolves silently (the last wins) while other parsers keep the first or refuse, are found by a
 * second linear scan (RFC 8259 4: names SHOULD be unique; a parser differential between us and
 * whatever sits in front of us is a known smuggling vector). And a canonical serialization, so
 * equal requests compare equal whatever their key order.
 */

/** The documented limit (docs/api.md, "Errors"): the top-level object or array is level 1. */
export const MAX_JSON_DEPTH = 64;

/**
 * True when the JSON text nests objects and arrays deeper than `maxDepth`. Brackets inside
 * strings do not count; the text need not be valid JSON (the parser judges that afterwards).
 */
export function jsonNestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c /* \ */) i++;
      else if (ch === 0x22 /* " */) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x5b /* [ */ || ch === 0x7b /* { */) {
      if (++depth > maxDepth) return true;
    } else if (ch === 0x5d /* ] */ || ch === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/**
 * JSON with object keys sorted at every level: two requests that differ only in key order give
 * the same text (Idempotency-Key compares requests this way). Depth is already bounded above.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A member name that appears twice in one object, and where (`$.a[2].b`), for the error message. */
export interface DuplicateKey {
  key: string;
  path: string;
}

type Frame =
  | { kind: "object"; keys: Set<string>; expectKey: boolean; key: string | null; at: string }
  | { kind: "array"; index: number; at: string };

/**
 * The first duplicate member name in `text`, which must already have parsed as JSON (so the scan
 * can trust its shape); null when every object's names are unique. Names are compared after
 * unescaping, so `"a"` and `"\u0061"` are the same name. Linear in the text; no recursion.
 */
export function findDuplicateKey(text: string): DuplicateKey | null {
  const stack: Frame[] = [];
  const here = (): string => {
    const top = stack[stack.length - 1];
    if (top === undefined) return "$";
    return top.kind === "object" ? `${top.at}.${top.key ?? ""}` : `${top.at}[${top.index}]`;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x5c /* \ */) {
          escaped = true;
          i++;
        } else if (c === 0x22) break;
      }
      const top = stack[stack.length - 1];
      if (top?.kind === "object" && top.expectKey) {
        const raw = text.slice(start, i + 1);
        const key = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (top.keys.has(key)) return { key, path: top.at };
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
    } else if (ch === 0x7b /* { */) {
      stack.push({ kind: "object", keys: new Set(), expectKey: true, key: null, at: here() });
    } else if (ch === 0x5b /* [ */) {
      stack.push({ kind: "array", index: 0, at: here() });
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      stack.pop();
    } else if (ch === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.kind === "object") top.expectKey = true;
      else if (top?.kind === "array") top.index++;
    }
  }
  return null;
}
