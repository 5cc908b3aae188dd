/**
 * Schema migrations (src/objects/sql.ts, `migrate`): an object whose database an older version of
 * the code created upgrades in place when the new code constructs it, keeping every row. The
 * older schema is a frozen copy of what that version shipped (old migrations are never edited,
 * docs/storage.md), so these tests also catch an old migration being edited instead of a new one
 * being added: the upgraded database must end up exactly like a new object's.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { OrganizationObject } from "../src/objects/organization";
import { type Migration, migrate } from "../src/objects/sql";
import { admin, authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";

/** OrganizationObject's schema at version 1, as the first release shipped it (src/objects/organization.ts). */
const ORGANIZATION_V1: Migration = {
  version: 1,
  statements: [
    `CREATE TABLE organization (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, name TEXT NOT NULL,
        created_at TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0, in_directory INTEGER NOT NULL DEFAULT 0)`,
    "CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT, created_at TEXT NOT NULL)",
    `CREATE TABLE client_credentials (client_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT, secret_hash TEXT NOT NULL,
        created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT)`,
    "CREATE INDEX client_credentials_by_user ON client_credentials (user_id)",
    "CREATE TABLE revocations (revision INTEGER PRIMARY KEY, client_id TEXT NOT NULL, revoked_at TEXT NOT NULL)",
    `CREATE TABLE api_keys (id TEXT PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, key_hint TEXT NOT NULL, name TEXT,
        per_second INTEGER, per_day INTEGER, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT,
        version INTEGER NOT NULL DEFAULT 1, synced_version INTEGER NOT NULL DEFAULT 0, synced_revision INTEGER NOT NULL DEFAULT 0)`,
    `CREATE TABLE admin_tokens (id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, name TEXT, created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT)`,
    `CREATE TABLE sessions (id_hash TEXT PRIMARY KEY, admin_token_id TEXT NOT NULL, csrf TEXT NOT NULL, created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL)`,
    "CREATE INDEX sessions_by_token ON sessions (admin_token_id)",
    `CREATE TABLE audit_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
        resource_type TEXT NOT NULL, resource_id TEXT NOT NULL, detail TEXT)`,
    "CREATE TABLE pending_lookups (client_id TEXT PRIMARY KEY, op TEXT NOT NULL)",
  ],
};

type Rows = Record<string, SqlStorageValue>[];
const orgStub = (orgId: string) => env.ORGS.get(env.ORGS.idFromName(orgId));

/** The object's own tables (not SQLite's or the runtime's). */
function ownTables(sql: SqlStorage): string[] {
  return sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
    )
    .toArray()
    .map((r) => r.name);
}

/** Every table's and index's definition, by name: what "the same schema" means here. */
function schemaOf(sql: SqlStorage): Record<string, string | null> {
  const rows = sql
    .exec<{ name: string; sql: string | null }>(
      "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
    )
    .toArray();
  return Object.fromEntries(rows.map((r) => [r.name, r.sql]));
}

/** Every row of every own table except `_migrations`, with its rowid, by table. */
function contentsOf(sql: SqlStorage): Record<string, Rows> {
  const out: Record<string, Rows> = {};
  for (const table of ownTables(sql)) {
    if (table === "_migrations") continue;
    out[table] = sql.exec(`SELECT rowid AS _rowid, * FROM ${table} ORDER BY rowid`).toArray();
  }
  return out;
}

/**
 * Rewrites the object's database as version 1 of the code would have left it holding the same
 * data: every table dropped, version 1 applied alone, every row put back with its rowid (the
 * columns later versions added are left out). Returns the rows as they were.
 */
function downgradeToV1(storage: DurableObjectStorage): Record<string, Rows> {
  const sql = storage.sql;
  const before = contentsOf(sql);
  for (const table of ownTables(sql)) sql.exec(`DROP TABLE ${table}`);
  migrate(storage, [ORGANIZATION_V1]);
  for (const [table, rows] of Object.entries(before)) {
    const columns = sql
      .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
      .toArray()
      .map((c) => c.name);
    for (const row of rows) {
      const names = ["rowid", ...columns];
      const values = [row._rowid ?? null, ...columns.map((c) => row[c] ?? null)];
      sql.exec(`INSERT INTO ${table} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`, ...values);
    }
  }
  return before;
}

/** What the operator API shows of a tenant's organization: the views an upgrade must not change. */
async function viewsOf(t: Tenant) {
  const org = `/organizations/${t.orgId}`;
  return {
    organization: await admin("GET", org),
    users: await admin("GET", `${org}/users`),
    credentials: await admin("GET", `${org}/users/${t.userId}/client-credentials`),
    keys: await admin("GET", `${org}/api-keys`),
    adminTokens: await admin("GET", `${org}/admin-tokens`),
    audit: await admin("GET", `${org}/audit-log?limit=100`),
  };
}

describe("OrganizationObject schema migrations", () => {
  it("upgrades an organization created at version 1 in place, keeping every row, to the schema a new object has", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    await admin("POST", `/organizations/${t.orgId}/admin-tokens`, { name: "ops" });
    // A revoked credential too, so the revocation rows and the revision are part of what must survive.
    const extra = await admin<{ client_id: string }>("POST", `/organizations/${t.orgId}/users/${t.userId}/client-credentials`, {});
    await admin("DELETE", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${extra.client_id}`);
    const views = await viewsOf(t);
    const stub = orgStub(t.orgId);
    const fresh = await runInDurableObject(stub, (_i: OrganizationObject, state) => schemaOf(state.storage.sql));

    const before = await runInDurableObject(stub, (_i: OrganizationObject, state) => downgradeToV1(state.storage));
    const old = await runInDurableObject(stub, (_i: OrganizationObject, state) => ({
      versions: state.storage.sql.exec<{ version: number }>("SELECT version FROM _migrations").toArray(),
      keyColumns: state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('api_keys')").toArray(),
    }));
    // The database is now what version 1 left: its version row only, none of the later columns.
    expect(old.versions).toEqual([{ version: 1 }]);
    expect(old.keyColumns.map((c) => c.name)).not.toContain("location_hint");
    expect(before.users).toHaveLength(1);
    expect(before.client_credentials).toHaveLength(2);
    expect(before.revocations).toHaveLength(1);
    expect(before.api_keys).toHaveLength(1);
    expect(before.admin_tokens).toHaveLength(1);
    expect(before.audit_log?.length).toBeGreaterThanOrEqual(6);

    // The new code starts on it: the next call constructs the object, which migrates.
    await evictDurableObject(stub);
    expect(await viewsOf(t)).toEqual(views);

    const after = await runInDurableObject(stub, (_i: OrganizationObject, state) => ({
      versions: state.storage.sql.exec<{ version: number }>("SELECT version FROM _migrations ORDER BY version").toArray(),
      schema: schemaOf(state.storage.sql),
      contents: contentsOf(state.storage.sql),
    }));
    expect(after.versions.map((v) => v.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(after.schema).toEqual(fresh);
    // Every row kept, with its rowid; the columns added by later versions are NULL on old rows.
    for (const [table, rows] of Object.entries(before)) {
      expect(
        after.contents[table]?.map((row) =>
          Object.fromEntries(Object.entries(row).filter(([column]) => column !== "location_hint" && column !== "source_key")),
        ),
        table,
      ).toEqual(
        rows.map((row) =>
          Object.fromEntries(Object.entries(row).filter(([column]) => column !== "location_hint" && column !== "source_key")),
        ),
      );
    }
    expect(after.contents.api_keys?.map((k) => k.location_hint)).toEqual([null]);
    expect(after.contents.audit_log?.every((e) => e.source_key === null)).toBe(true);

    // The upgraded organization works: its key, credential and token, and the later versions' features.
    expect((await call("/v1/me", authed(t, token))).status).toBe(200);
    expect((await issueToken(t)).length).toBeGreaterThan(0);
    const hinted = await admin<{ location_hint: string | null }>("POST", `/organizations/${t.orgId}/api-keys`, { location_hint: "weur" });
    expect(hinted.location_hint).toBe("weur");
    const pushed = { at: new Date().toISOString(), actor: { type: "operator" as const }, action: "webhook_configuration.created" };
    const entry = {
      ...pushed,
      resource_type: "webhook_configuration",
      resource_id: "whk_00000000000000000000000000",
      detail: null,
      key: "webhooks:1",
    };
    await stub.appendAudit([entry]);
    await stub.appendAudit([entry]); // a repeated push adds nothing (migration 2's unique source_key)
    const log = await admin<{ action: string }[]>("GET", `/organizations/${t.orgId}/audit-log?limit=100`);
    expect(log.filter((e) => e.action === "webhook_configuration.created")).toHaveLength(1);
  });

  it("applies only the migrations newer than the stored version, each once", async () => {
    const t = await createTenant();
    const stub = orgStub(t.orgId);
    const applied = await runInDurableObject(stub, (_i: OrganizationObject, state) =>
      state.storage.sql
        .exec<{ version: number; applied_at: number }>("SELECT version, applied_at FROM _migrations ORDER BY version")
        .toArray(),
    );
    expect(applied.map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Constructed again on the same database: nothing is re-applied (a second ALTER TABLE ADD COLUMN would throw).
    await evictDurableObject(stub);
    expect(
      (await body(await call(`/admin/v1/organizations/${t.orgId}`, { headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` } }))).data,
    ).toMatchObject({
      id: t.orgId,
    });
    const again = await runInDurableObject(stub, (_i: OrganizationObject, state) =>
      state.storage.sql
        .exec<{ version: number; applied_at: number }>("SELECT version, applied_at FROM _migrations ORDER BY version")
        .toArray(),
    );
    expect(again).toEqual(applied);
  });
});
