/**
 * JSON Schema for event types (issue 30): validation with `@cfworker/json-schema`, which
 * interprets a schema (drafts 4 to 2020-12) without generating code, as Workers require (no eval,
 * no `new Function`). A schema is hostile input (product brief): `checkSchema` bounds it before it
 * is stored. Paths are answered as segments of the instance (`["items", "0", "price"]`), so each
 * surface names them its way.
 */
import { Validator } from "@cfworker/json-schema";

export interface SchemaProblem {
  path: string[];
  message: string;
}

export interface CompiledSchema {
  validate(data: unknown): { ok: true } | { ok: false; path: string[]; message: string };
}

/** "#/items/0/price" -> ["items", "0", "price"] (RFC 6901 escapes undone). */
function segments(location: string): string[] {
  return location
    .replace(/^#\/?/, "")
    .split("/")
    .filter((s) => s !== "")
    .map((s) => decodeURIComponent(s).replaceAll("~1", "/").replaceAll("~0", "~"));
}

export function compileSchema(schema: Record<string, unknown>): CompiledSchema {
  const validator = new Validator(schema, "2020-12", false);
  return {
    validate(data) {
      const result = validator.validate(data);
      if (result.valid) return { ok: true };
      // The deepest error is the one that names the failing value; the outer ones only say "did not match".
      const deepest = result.errors.reduce((a, b) => (b.instanceLocation.length > a.instanceLocation.length ? b : a));
      return { ok: false, path: segments(deepest.instanceLocation), message: deepest.error };
    },
  };
}

/** Null when the schema may be stored; else the first problem, with its place in the schema. */
export function checkSchema(schema: Record<string, unknown>): SchemaProblem | null {
  try {
    compileSchema(schema);
  } catch (err) {
    return { path: [], message: ` is not a usable JSON Schema (${err instanceof Error ? err.message : "invalid"})` };
  }
  return null;
}

/** Null when every example matches; else the first that does not, with the failing path. */
export function checkExamples(schema: Record<string, unknown>, examples: unknown[]): (SchemaProblem & { index: number }) | null {
  const compiled = compileSchema(schema);
  for (const [index, example] of examples.entries()) {
    const answer = compiled.validate(example);
    if (!answer.ok) return { index, path: answer.path, message: `does not match the schema: ${answer.message}` };
  }
  return null;
}
