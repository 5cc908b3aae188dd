/**
 * The manager's and the portal's forms check what was typed with the API's own zod schemas
 * (src/schemas/*), so a form and the REST route it mirrors refuse the same input with the same
 * words. Unlike parseInput, which names at most five issues, a form needs every issue at once:
 * a person fixes them all in one go instead of submitting once per mistake. Each issue's path
 * (`oauth.token_url`, `events.2`) is mapped to the form field that holds it, and the first
 * message per field is shown beside it.
 */
import type { z } from "zod";
import type { Deps } from "../../deps";
import { ApiError, type InputIssue, invalidInput } from "../../errors";
import { checkTarget } from "../../lib/ssrf";
import { toIssue } from "../../schemas/validate";

/**
 * `value` parsed by `schema`, or one invalid_request ApiError naming every issue: `extra` and the
 * schema's (checks the domain makes after the schema, such as the SSRF guard's on a URL, run early
 * so their refusals come with the schema's instead of one submit later).
 */
export function checkedInput<T extends z.ZodType>(schema: T, value: unknown, extra: InputIssue[] = []): z.output<T> {
  const result = schema.safeParse(value, { reportInput: true });
  // `extra` first: where both name a field, its issue (text that is not JSON, say) is the more basic one.
  const issues = [...extra, ...(result.success ? [] : result.error.issues.map(toIssue))];
  if (result.success && issues.length === 0) return result.data;
  throw invalidInput({ label: "request body", issues });
}

/** Why a form was refused: keyway's message (as the API words it) and each field's own message. */
export interface FormErrors<F extends string> {
  message: string;
  fields: Partial<Record<F, string>>;
}

/**
 * A refusal the person can correct in the form (invalid input, and a conflict such as a taken
 * name or a full list), with each input issue placed on its field: `fieldOf` names the field an
 * issue's path belongs to (null: none, the message above the form says it), `say` words it
 * (by default the field's label then the issue's text). Anything else (not found, unavailable)
 * is the error page's: null.
 */
export function formErrorsOf<F extends string>(
  err: unknown,
  fieldOf: (path: string[]) => F | null,
  say: (field: F, issue: InputIssue) => string,
): (FormErrors<F> & { status: 400 | 409 }) | null {
  if (!(err instanceof ApiError)) return null;
  if (err.code === "conflict") return { message: err.developerMessage, fields: {}, status: 409 };
  if (err.code !== "invalid_request") return null;
  const fields: Partial<Record<F, string>> = {};
  for (const issue of err.input?.issues ?? []) {
    const field = fieldOf(issue.path);
    if (field !== null && fields[field] === undefined) fields[field] = say(field, issue);
  }
  return { message: err.developerMessage, fields, status: 400 };
}

/** The text of a posted field, trimmed ("" when absent). */
export const text = (fields: Record<string, unknown>, name: string): string =>
  typeof fields[name] === "string" ? (fields[name] as string).trim() : "";

/**
 * A JSON field of a form parsed, or the issue that says it is not JSON (the schema then says what
 * else is wrong at once; its own issue about the field comes second and is not shown over this).
 */
export function jsonField(raw: string, path: string[]): { value: unknown; issues: InputIssue[] } {
  if (raw === "") return { value: undefined, issues: [] };
  try {
    return { value: JSON.parse(raw) as unknown, issues: [] };
  } catch {
    return { value: undefined, issues: [{ path, text: " is not valid JSON" }] };
  }
}

/** The usual wording: the field's label, then the issue's text (" must be ...", ": <reason>"). */
export const labelled =
  <F extends string>(labels: Record<F, string>) =>
  (field: F, issue: InputIssue): string =>
    "text" in issue ? `${labels[field]}${issue.text}` : `${labels[field]} is invalid`;

/** Where inside a field an issue's path points: an item of a list (the segment at `list` is its index) or a path in JSON (from `json` on). */
export type Inside = { list: number } | { json: number };

/**
 * A field's message with the place inside it the issue names: `Event types: number 3 is ...` for
 * a list's item, `Payload filter: data.amount is ...` for a path inside a JSON field; otherwise
 * the label then the issue's text, as `labelled` words it.
 */
export function placedMessage(label: string, issue: InputIssue, inside?: Inside): string {
  if (!("text" in issue)) return `${label} is invalid`;
  if (inside !== undefined && "json" in inside && issue.path.length > inside.json) {
    return `${label}: ${issue.path.slice(inside.json).join(".")}${issue.text}`;
  }
  const index = inside !== undefined && "list" in inside ? Number(issue.path[inside.list]) : Number.NaN;
  return Number.isInteger(index) ? `${label}: number ${index + 1}${issue.text}` : `${label}${issue.text}`;
}

/** A field named by the path's first segment when the form has one of that name. */
export const topLevelField =
  <F extends string>(labels: Record<F, string>) =>
  (path: string[]): F | null => {
    const name = path[0];
    return name !== undefined && Object.hasOwn(labels, name) ? (name as F) : null;
  };

/**
 * The SSRF guard's verdict on a configuration's two URLs, as the domain words it
 * (webhooks/configurations.ts validTarget calls the same checkTarget with the same policy), made
 * beside the schema's checks: the domain only reaches them once the schema passes, and then stops
 * at the first, so a form would learn of a bad URL one submit after its other mistakes. An empty
 * URL is the schema's to name.
 */
export function targetIssues(deps: Deps, urls: { url: string; token_url: string }): InputIssue[] {
  const policy = { allowInsecure: deps.config.allowInsecureTargets };
  const issues: InputIssue[] = [];
  for (const [field, path] of [
    ["url", ["url"]],
    ["token_url", ["oauth", "token_url"]],
  ] as const) {
    if (urls[field] === "") continue;
    const check = checkTarget(urls[field], policy);
    if (!check.ok) issues.push({ path: [...path], text: `: ${check.reason}` });
  }
  return issues;
}
