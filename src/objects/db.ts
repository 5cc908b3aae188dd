/**
 * A Durable Object's SQLite, as the webhook objects' modules use it: a few typed helpers over
 * `ctx.storage.sql` that also count the rows each statement read and wrote. The counts are how
 * tests hold every per-call query to reading rows in proportion to what is due (issue 20: a test
 * with 100,000 open deliveries reads them after each call); production code never reads them.
 */
type Row = Record<string, SqlStorageValue>;

export class Db {
  /** Rows read and written by every statement run through this handle so far. */
  rowsRead = 0;
  rowsWritten = 0;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** Every row of a query. */
  all<T extends Row>(query: string, ...bindings: SqlStorageValue[]): T[] {
    const cursor = this.storage.sql.exec<T>(query, ...bindings);
    const rows = cursor.toArray();
    this.meter(cursor);
    return rows;
  }

  /** The first row, or undefined. Queries that may match many rows should say LIMIT 1. */
  first<T extends Row>(query: string, ...bindings: SqlStorageValue[]): T | undefined {
    return this.all<T>(query, ...bindings)[0];
  }

  /** The single value of a one-row, one-column query (an aggregate); null when empty. */
  value<T extends SqlStorageValue>(query: string, ...bindings: SqlStorageValue[]): T | null {
    const row = this.first<Row>(query, ...bindings);
    if (row === undefined) return null;
    const [v] = Object.values(row);
    return (v ?? null) as T | null;
  }

  /** Runs a statement (its row count is not returned: SQLite's rowsWritten also counts index entries). */
  run(query: string, ...bindings: SqlStorageValue[]): void {
    const cursor = this.storage.sql.exec(query, ...bindings);
    cursor.toArray();
    this.meter(cursor);
  }

  /** One transaction: every statement of `fn` commits together or not at all. */
  txn<T>(fn: () => T): T {
    return this.storage.transactionSync(fn);
  }

  private meter(cursor: SqlStorageCursor<Row>): void {
    this.rowsRead += cursor.rowsRead;
    this.rowsWritten += cursor.rowsWritten;
  }
}
