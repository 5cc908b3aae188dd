/**
 * JSON helpers. A bound on how deeply client JSON may nest, checked on the text before it is parsed: JSON.parse
 * accepts any depth, but everything after it that walks the value (schema validation,
 * JSON.stringify, structured clone into a Queue message or Durable Object call) recurses, and a
 * 20,000-deep array overflows the stack there. One linear, non-recursive scan over the text
 * refuses such input before any of that work starts. And a canonical serialization, so equal
 * requests compare equal whatever their key order.
 */

/** The documented limit (README, "Errors"): the top-level object or array is level 1. */
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
