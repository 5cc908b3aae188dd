/**
 * Typed access to Workers KV: values are JSON validated by a zod schema on every read, and list
 * pages map onto the service's cursor pagination. A value that fails its schema is a server
 * fault (logged by key, never by content), not something to hand to callers.
 */
import type { z } from "zod";
import { ApiError } from "../errors";
import type { Page } from "../objects/sql";
import type { ListQuery } from "../schemas/common";

export async function getRecord<T extends z.ZodType>(kv: KVNamespace, key: string, schema: T): Promise<z.output<T> | null> {
  const value = await kv.get(key, "json");
  if (value === null) return null;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    // The kind of record, never its key (which may hold an id) or content.
    throw new ApiError("server_error", "A stored record is corrupt.", { detail: `stored value failed its schema: ${key.split(":")[0]}` });
  }
  return parsed.data;
}

export async function putRecord<T extends z.ZodType>(
  kv: KVNamespace,
  key: string,
  schema: T,
  value: z.input<T>,
  options?: KVNamespacePutOptions,
): Promise<void> {
  // Validate on the way in too: a bad write would otherwise only show up on a later read.
  await kv.put(key, JSON.stringify(schema.parse(value)), options);
}

export type { Page } from "../objects/sql";

/** Lists keys under a prefix and loads each item; items that vanished meanwhile are skipped. */
export async function listPage<T>(
  kv: KVNamespace,
  prefix: string,
  query: ListQuery,
  load: (key: string) => Promise<T | null>,
): Promise<Page<Awaited<T>>> {
  let listed: KVNamespaceListResult<unknown, string>;
  try {
    listed = await kv.list({ prefix, limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) });
  } catch {
    // KV rejects cursors it did not issue.
    throw new ApiError("invalid_request", "cursor is invalid or expired.");
  }
  const loaded = await Promise.all(listed.keys.map((k) => load(k.name)));
  return {
    items: loaded.filter((item): item is Awaited<T> => item !== null),
    next_cursor: listed.list_complete ? null : listed.cursor,
  };
}
