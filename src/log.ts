/**
 * The one logger: structured JSON lines (Workers Logs indexes their fields), one per event, with
 * a level and a short fixed message. Callers pass identifiers and outcomes, never request data
 * or secrets; an error's description comes from `describeError`, which knows what of an error is
 * safe to log.
 */
import { ApiError } from "./errors";

export type LogFields = Record<string, string | number | boolean | null | undefined>;
type Level = "error" | "warn" | "info";

function write(level: Level, msg: string, fields: LogFields): void {
  const line = JSON.stringify({ level, msg, ...fields });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.info(line);
}

export const log = {
  error: (msg: string, fields: LogFields = {}) => write("error", msg, fields),
  warn: (msg: string, fields: LogFields = {}) => write("warn", msg, fields),
  info: (msg: string, fields: LogFields = {}) => write("info", msg, fields),
};

/**
 * What may be logged of a thrown value: an ApiError's code, message and internal detail (which
 * never reaches a response), or an Error's name and message. Our own messages carry no request
 * data; third-party errors (runtime, bindings) describe the failure, not the input.
 */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}: ${err.developerMessage}${err.detail ? ` (${err.detail})` : ""}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return "non-error thrown";
}
