/**
 * The property harness's host for the objects' shells (src/objects/shells/): a Durable Object's
 * storage as the shells use it (`ShellStorage`), over an in-memory SQLite of Node's own
 * (`node:sqlite`). The shells run the same statements against it as against `ctx.storage.sql`,
 * so the rows a restart reads back are the rows the statements wrote; a restart is a new shell
 * over the same `MemoryStorage`. The alarm is a number the harness reads and fires itself.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import type { ShellStorage, Sql, SqlCursor } from "../../src/objects/shells/storage";

type Row = Record<string, SqlStorageValue>;

class Cursor<T> implements SqlCursor<T> {
  constructor(
    private readonly rows: T[],
    readonly rowsRead: number,
    readonly rowsWritten: number,
  ) {}
  toArray(): T[] {
    return this.rows;
  }
  one(): T {
    if (this.rows.length !== 1) throw new Error(`Expected exactly one result from SQL query, got ${this.rows.length}`);
    return this.rows[0] as T;
  }
  [Symbol.iterator](): Iterator<T> {
    return this.rows[Symbol.iterator]();
  }
}

export class MemoryStorage implements ShellStorage {
  private db = new DatabaseSync(":memory:");
  /** Prepared statements by text: the shells run the same few statements thousands of times a run. */
  private prepared = new Map<string, StatementSync>();
  private depth = 0;
  /** SQLite's `total_changes()` after the last statement. */
  private total = 0;
  /** When the alarm is set for, or null. */
  alarm: number | null = null;
  /** Statements run so far (a restart's reads included), for tests that count them. */
  statements = 0;
  /** Called after each statement of the shell's that wrote: the harness checks the rows as they change. */
  onStatement: (() => void) | null = null;

  readonly sql: Sql = {
    exec: <T extends Row>(query: string, ...bindings: SqlStorageValue[]): SqlCursor<T> => {
      this.statements++;
      const rows = this.statement(query).all(...(bindings as SQLInputValue[])) as unknown as T[];
      // Rows as workerd gives them: plain objects (node:sqlite's have no prototype).
      const plain = rows.map((r) => ({ ...r }));
      // Rows written: SQLite's running count of changes since the last statement (the harness's
      // own reads write nothing), one read of it a statement.
      const total = this.changes();
      const cursor = new Cursor(plain, plain.length, total - this.total);
      this.total = total;
      if (cursor.rowsWritten > 0) this.onStatement?.();
      return cursor;
    },
  };

  /** The harness's own read of the rows (not a statement of the shell's: no hook, not counted). */
  peek<T extends Row>(query: string, ...bindings: SqlStorageValue[]): T[] {
    return (this.statement(query).all(...(bindings as SQLInputValue[])) as unknown as T[]).map((r) => ({ ...r }));
  }

  /** Tables known to exist (a table is never dropped but by `deleteAll`, which forgets them). */
  private tables = new Set<string>();

  hasTable(name: string): boolean {
    if (this.tables.has(name)) return true;
    const found = this.peek("SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = ?", name).length > 0;
    if (found) this.tables.add(name);
    return found;
  }

  private statement(query: string): StatementSync {
    let statement = this.prepared.get(query);
    if (statement === undefined) {
      statement = this.db.prepare(query);
      this.prepared.set(query, statement);
    }
    return statement;
  }

  private changes(): number {
    return Number((this.statement("SELECT total_changes() AS n").get() as { n: number }).n);
  }

  transactionSync<T>(fn: () => T): T {
    const name = `t${this.depth++}`;
    this.db.exec(`SAVEPOINT ${name}`);
    try {
      const value = fn();
      this.db.exec(`RELEASE ${name}`);
      return value;
    } catch (err) {
      this.db.exec(`ROLLBACK TO ${name}`);
      this.db.exec(`RELEASE ${name}`);
      throw err;
    } finally {
      this.depth--;
    }
  }

  async getAlarm(): Promise<number | null> {
    return this.alarm;
  }

  async setAlarm(at: number): Promise<void> {
    this.alarm = at;
  }

  async deleteAlarm(): Promise<void> {
    this.alarm = null;
  }

  async deleteAll(): Promise<void> {
    this.db.close();
    this.db = new DatabaseSync(":memory:");
    this.prepared = new Map();
    this.total = 0;
    this.tables = new Set();
    this.alarm = null;
  }
}
