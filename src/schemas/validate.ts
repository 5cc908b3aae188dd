/**
 * Turns zod failures into one invalid_request ApiError with a precise, bounded message. Client
 * values are never echoed (they may be secrets); only field names are, truncated.
 */
import type { z } from "zod";
import { ApiError } from "../errors";

export function parseInput<T extends z.ZodType>(schema: T, value: unknown, label = "request body"): z.output<T> {
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const messages = result.error.issues.slice(0, 5).map((issue) => describe(issue, label));
  throw new ApiError("invalid_request", `Invalid ${label}: ${messages.join("; ")}.`);
}

function describe(issue: z.core.$ZodIssue, label: string): string {
  const where = issue.path.length > 0 ? issue.path.map((p) => safeName(String(p))).join(".") : label;
  if (issue.code === "invalid_type" && issue.input === undefined) return `${where} is required`;
  // Our schemas phrase custom messages as predicates ("must ...", "is ...").
  if (/^(must|is) /.test(issue.message)) return `${where} ${issue.message}`;
  if (issue.code === "invalid_type") return `${where} must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}`;
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.slice(0, 3).map(safeName).join(", ");
    return `unknown field${issue.keys.length > 1 ? "s" : ""} ${keys} in ${where}`;
  }
  return `${where} is invalid`;
}

const TYPE_NAMES: Record<string, string> = { object: "an object", int: "an integer", array: "an array" };

/** Field names come from the client: printable ASCII only, bounded, quoted when unusual. */
function safeName(name: string): string {
  if (/^[A-Za-z0-9_]{1,40}$/.test(name)) return name;
  const printable = name.replace(/[^\x20-\x7e]/g, "?");
  return JSON.stringify(printable.length > 40 ? `${printable.slice(0, 40)}...` : printable);
}
