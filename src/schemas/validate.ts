/**
 * Turns zod failures into one invalid_request ApiError whose issues name the fields at fault
 * (errors.ts renders them per surface). Client values are never echoed (they may be secrets);
 * only field names are, truncated.
 */
import type { z } from "zod";
import { type InputIssue, invalidInput } from "../errors";

export function parseInput<T extends z.ZodType>(schema: T, value: unknown, label = "request body"): z.output<T> {
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  throw invalidInput({ label, issues: result.error.issues.slice(0, 5).map(toIssue) });
}

/** One zod issue as an input issue (exported for the manager's forms, which map every issue to its field). */
export function toIssue(issue: z.core.$ZodIssue): InputIssue {
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys") return { path, unknownKeys: issue.keys };
  return { path, text: ` ${phrase(issue)}` };
}

function phrase(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
  // Our schemas phrase custom messages as predicates ("must ...", "is ...").
  if (/^(must|is) /.test(issue.message)) return issue.message;
  if (issue.code === "invalid_type") return `must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}`;
  return "is invalid";
}

const TYPE_NAMES: Record<string, string> = { object: "an object", int: "an integer", array: "an array" };
