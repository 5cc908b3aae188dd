/** Request input for route handlers: a JSON body validated by a zod schema, list query strings. */
import type { Context } from "hono";
import type { z } from "zod";
import { ListQuery } from "../schemas/common";
import { parseInput } from "../schemas/validate";
import { readFields } from "./body";
import type { AppEnv } from "./context";

/** Most bodies are small; routes that take more (events) pass their own cap. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024;

export async function jsonBody<T extends z.ZodType>(
  c: Context<AppEnv>,
  schema: T,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
): Promise<z.output<T>> {
  const fields = await readFields(c.req.raw, ["json"], maxBytes);
  return parseInput(schema, fields);
}

export const listQuery = (c: Context<AppEnv>): ListQuery => parseInput(ListQuery, c.req.query(), "query string");
