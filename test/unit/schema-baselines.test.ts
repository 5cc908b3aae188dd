/**
 * Schema baselines (src/objects/sql.ts, `Baseline`): a new object of a kind with a long history
 * creates the schema its migrations leave in a few statements. Each baseline is held equal to its
 * history here, table by table, column by column and index by index, with the same version rows,
 * so a migration added without its baseline (or a baseline edited by hand) fails this file, and
 * an object created new is exactly an object upgraded from its first version.
 */
import { describe, expect, it } from "vitest";
import { BASELINE as KEY_BASELINE, MIGRATIONS as KEY_MIGRATIONS } from "../../src/objects/shells/key-rows";
import { type Baseline, type Migration, migrate } from "../../src/objects/sql";
import { MemoryStorage } from "./memory-storage";

type Row = Record<string, SqlStorageValue>;

/** Everything SQLite knows of a schema: each entry's text (whitespace folded), columns, indexes and their columns. */
function schemaOf(storage: MemoryStorage): unknown {
  const entries = storage
    .peek<{ type: string; name: string; tbl_name: string; sql: string | null }>(
      "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name",
    )
    .map((e) => ({ ...e, sql: e.sql?.replace(/\s+/g, " ") ?? null }));
  const tables = entries.filter((e) => e.type === "table").map((e) => e.name);
  return {
    entries,
    columns: tables.map((t) => ({ t, columns: storage.peek<Row>(`SELECT * FROM pragma_table_xinfo('${t}')`) })),
    indexes: tables.map((t) => ({
      t,
      indexes: storage.peek<{ name: string } & Row>(`SELECT * FROM pragma_index_list('${t}') ORDER BY name`).map((i) => ({
        ...i,
        columns: storage.peek<Row>(`SELECT * FROM pragma_index_xinfo('${i.name}')`),
      })),
    })),
    versions: storage.peek<{ version: number }>("SELECT version FROM _migrations ORDER BY version").map((v) => v.version),
  };
}

const kinds: { kind: string; migrations: readonly Migration[]; baseline: Baseline }[] = [
  { kind: "KeyObject", migrations: KEY_MIGRATIONS, baseline: KEY_BASELINE },
];

describe("a schema baseline is what its migrations leave", () => {
  for (const { kind, migrations, baseline } of kinds) {
    it(`${kind}: created from the baseline, the same tables, columns, indexes and version rows as after every migration`, () => {
      const history = new MemoryStorage();
      migrate(history, migrations);
      const fresh = new MemoryStorage();
      migrate(fresh, migrations, baseline);
      expect(schemaOf(fresh)).toEqual(schemaOf(history));
      // The baseline ran (not the history): far fewer statements.
      expect(fresh.statements).toBeLessThan(history.statements);
    });
  }

  it("a baseline behind the last migration is not used: the history runs, and the schema is still the history's", () => {
    const later: Migration[] = [...KEY_MIGRATIONS, { version: 99, statements: ["CREATE TABLE later (id TEXT PRIMARY KEY)"] }];
    const history = new MemoryStorage();
    migrate(history, later);
    const fresh = new MemoryStorage();
    migrate(fresh, later, KEY_BASELINE);
    expect(schemaOf(fresh)).toEqual(schemaOf(history));
    expect(fresh.statements).toBe(history.statements);
  });

  it("an object upgraded from an older version keeps its history's path: the baseline is for new objects only", () => {
    const upgraded = new MemoryStorage();
    migrate(upgraded, KEY_MIGRATIONS.slice(0, 3));
    upgraded.sql.exec("INSERT INTO revoked_clients (client_id, revision) VALUES ('c', 1)");
    migrate(upgraded, KEY_MIGRATIONS, KEY_BASELINE);
    const history = new MemoryStorage();
    migrate(history, KEY_MIGRATIONS);
    expect(schemaOf(upgraded)).toEqual(schemaOf(history));
    expect(upgraded.peek("SELECT client_id FROM revoked_clients")).toEqual([{ client_id: "c" }]);
  });
});
