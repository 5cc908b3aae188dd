/**
 * SQLite helpers for the Durable Objects that are the service's systems of record: versioned
 * schema migrations (each applied once, in order, inside one transaction with its version row),
 * opaque list cursors over rowids, and the Result type that object methods return instead of
 * throwing (an error thrown across Durable Object RPC arrives without its class or code).
 */
import { describeInput, type ErrorCode, type InvalidInput } from "../errors";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "../lib/encoding";
import type { ShellStorage, Sql } from "./shells/storage";

export interface Migration {
  version: number;
  statements: string[];
}

/**
 * The schema a list of migrations leaves, created at once in a new database: the statements
 * SQLite keeps in `sqlite_master` after the whole history ran (an ALTER TABLE rewrites its
 * table's CREATE there), in the order it keeps them. A new object of a kind whose history is long
 * runs these few instead of every CREATE and ALTER since its first version (the KeyObject's: 10
 * statements for 24, each ALTER re-reading the schema), which matters for a kind made by the
 * thousand (a key's shards). `test/unit/schema-baselines.test.ts` holds each baseline equal,
 * entry for entry, to what its history leaves, so a new migration without its baseline fails there.
 */
export interface Baseline {
  /** The last migration's version: the baseline stands for every version up to it. */
  version: number;
  statements: readonly string[];
}

/**
 * Applies the migrations newer than the stored version; call from the object's constructor. A new
 * database (no version yet) given a `baseline` of the last version gets the baseline instead, with
 * a version row for every migration, the rows the history would have left.
 */
export function migrate(
  storage: Pick<ShellStorage, "sql" | "transactionSync">,
  migrations: readonly Migration[],
  baseline?: Baseline,
): void {
  const sql = storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const current = sql.exec<{ v: number | null }>("SELECT max(version) AS v FROM _migrations").one().v ?? 0;
  if (current === 0 && baseline !== undefined && baseline.version === migrations.at(-1)?.version) {
    storage.transactionSync(() => {
      for (const statement of baseline.statements) sql.exec(statement);
      const now = Date.now();
      sql.exec(
        `INSERT INTO _migrations (version, applied_at) VALUES ${migrations.map(() => "(?, ?)").join(", ")}`,
        ...migrations.flatMap((m) => [m.version, now]),
      );
    });
    return;
  }
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    storage.transactionSync(() => {
      for (const statement of migration.statements) sql.exec(statement);
      sql.exec("INSERT INTO _migrations (version, applied_at) VALUES (?, ?)", migration.version, Date.now());
    });
  }
}

/**
 * Deletes up to `limit` rows of `table` whose `expiry` is before `now`, oldest first, through the
 * index on `expiry` (every table with an expiry has one: docs/storage.md, "What expires"), and
 * answers how many went: a caller that got `limit` has more to delete. `filter` narrows the rows
 * (a partial index's condition). Names come from the objects' own code, never from input.
 */
export function pruneExpired(
  sql: Sql,
  table: string,
  key: string,
  expiry: string,
  now: number | string,
  limit: number,
  filter = "1",
): number {
  return sql
    .exec(
      `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${filter} AND ${expiry} < ? ORDER BY ${expiry} LIMIT ?) RETURNING 1`,
      now,
      limit,
    )
    .toArray().length;
}

/** What an object method answers: a value, or an error the Worker turns into an ApiError. */
export type Result<T> = { ok: true; value: T } | { ok: false; code: ErrorCode; message: string; input?: InvalidInput };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T = never>(code: ErrorCode, message: string): Result<T> => ({ ok: false, code, message });
export const missing = <T = never>(what: string): Result<T> => fail("not_found", `${what} was not found.`);
/** Invalid input found by the object itself (a rule that needs the stored state), field by field. */
export const invalid = <T = never>(path: string[], text: string): Result<T> => {
  const input: InvalidInput = { label: "request body", issues: [{ path, text }] };
  return { ok: false, code: "invalid_request", message: describeInput(input), input };
};

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

export interface Page<T> {
  items: T[];
  /** Opaque cursor for the next page, or null on the last page. */
  next_cursor: string | null;
}

/** The rowid a cursor continues after; null for a cursor this service did not issue. */
export function cursorRowid(cursor: string | undefined): number | null {
  if (cursor === undefined) return 0;
  const bytes = base64UrlDecode(cursor);
  const text = bytes === null ? null : decodeUtf8(bytes);
  const match = text === null ? null : /^r(\d{1,15})$/.exec(text);
  return match ? Number(match[1]) : null;
}

/**
 * One page of rows ordered by rowid (`ascending`, oldest first) or newest first. `query` selects
 * rows with `rowid > ?` (or `< ?` when descending) and is given the bound and LIMIT.
 */
export function pageOf<R extends { rowid: number }, T>(
  rows: (after: number, limit: number) => R[],
  request: PageRequest,
  view: (row: R) => T,
  descending = false,
): Result<Page<T>> {
  const after = cursorRowid(request.cursor);
  if (after === null) return fail("invalid_request", "cursor is invalid or expired.");
  const bound = descending && request.cursor === undefined ? Number.MAX_SAFE_INTEGER : after;
  const found = rows(bound, request.limit + 1);
  const items = found.slice(0, request.limit);
  const last = items.at(-1);
  const next = found.length > request.limit && last ? base64UrlEncode(encodeUtf8(`r${last.rowid}`)) : null;
  return ok({ items: items.map(view), next_cursor: next });
}

/**
 * A page of every row of `table`, in insertion order. `table` is one of the caller's own table
 * names, never input: it is spliced into the statement, since SQL parameters cannot name a table.
 */
export function pageOfTable<R extends { rowid: number }, T>(
  sql: SqlStorage,
  table: string,
  request: PageRequest,
  view: (row: R) => T,
): Result<Page<T>> {
  return pageOf(
    (after, limit) => sql.exec<R>(`SELECT rowid, * FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT ?`, after, limit).toArray(),
    request,
    view,
  );
}
