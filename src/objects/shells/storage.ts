/**
 * What an object's shell needs of its Durable Object's storage: SQLite statements, a synchronous
 * transaction, and the alarm. `DurableObjectStorage` is one host of it (production); the property
 * harness is the other (test/support/memory-storage.ts: the same statements over an in-memory
 * SQLite in Node), so the code under the properties is the code that runs in production
 * (docs/architecture.md, "Shells and their hosts").
 */

/** A statement's rows, as `SqlStorage.exec` returns them. */
export interface SqlCursor<T> extends Iterable<T> {
  toArray(): T[];
  /** The single row; throws when there is none or more than one. */
  one(): T;
  readonly rowsRead: number;
  readonly rowsWritten: number;
}

export interface Sql {
  exec<T extends Record<string, SqlStorageValue>>(query: string, ...bindings: SqlStorageValue[]): SqlCursor<T>;
}

export interface ShellStorage {
  readonly sql: Sql;
  /** Every statement of `fn` commits together or not at all. */
  transactionSync<T>(fn: () => T): T;
  getAlarm(): Promise<number | null>;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
  deleteAll(): Promise<void>;
}

/** The clock a shell reads (Date.now in production; the harness's model clock under the properties). */
export type Clock = () => number;
