/**
 * The in-place upgrade of an organization's webhooks from the first layout (one WebhookObject held
 * configurations, events, deliveries and attempts) to an EndpointObject per configuration
 * (objects/webhooks/legacy.ts): an object whose database version 1 wrote is constructed by the new
 * code, which hands every delivery, with its attempts and its place in the pipeline, to its
 * endpoint's object before it serves anything. Nothing is lost or sent twice by us: finished
 * deliveries keep their history, a ticket already in the Queue (v2) still begins its attempt, an
 * attempt in flight keeps its lease, a delivery owed a ticket gets one, and one whose configuration
 * was deleted fails without a request. The upgraded object ends with a new object's schema.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../src/config";
import { seal } from "../src/lib/aead";
import { newDeliveryId, newEventId, newWebhookConfigurationId } from "../src/lib/ids";
import { type Migration, migrate } from "../src/objects/sql";
import type { LegacyTicket } from "../src/schemas/webhooks";
import { DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { newSigningSecret } from "../src/webhooks/signature";
import { consume, fakeNetwork, receiver, WEBHOOK_URL } from "./fake-network";
import { createTenant, issueToken } from "./helpers";
import { api, attemptNow, createConfig, deliveryRow, endpointAlarm, getDelivery, inEndpoint, webhooksOf } from "./webhook-helpers";

/** WebhookObject's schema at version 1, as that release shipped it (src/objects/webhooks/schema.ts V1). */
const WEBHOOKS_V1: Migration = {
  version: 1,
  statements: [
    "CREATE TABLE meta (one INTEGER PRIMARY KEY CHECK (one = 1), organization_id TEXT NOT NULL)",
    `CREATE TABLE configurations (id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT, description TEXT,
        token_url TEXT NOT NULL, client_id TEXT NOT NULL, client_secret TEXT NOT NULL, token_cache INTEGER NOT NULL,
        signing_secrets TEXT NOT NULL, status TEXT NOT NULL, disabled_reason TEXT, failing_since INTEGER,
        last_delivered_ms INTEGER, version INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
    "CREATE TABLE events (id TEXT PRIMARY KEY, type TEXT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL, created_ms INTEGER NOT NULL)",
    "CREATE INDEX events_by_time ON events (created_ms)",
    `CREATE TABLE idempotency_keys (key TEXT PRIMARY KEY, request_hash TEXT NOT NULL, event_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL)`,
    `CREATE TABLE deliveries (id TEXT PRIMARY KEY, event_id TEXT NOT NULL, event_type TEXT NOT NULL,
        configuration_id TEXT NOT NULL, status TEXT NOT NULL, series INTEGER NOT NULL, series_attempts INTEGER NOT NULL,
        attempts INTEGER NOT NULL, next_attempt_ms INTEGER, dispatched_ms INTEGER, lease_until_ms INTEGER,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
    "CREATE INDEX deliveries_by_configuration ON deliveries (configuration_id)",
    "CREATE INDEX deliveries_by_event ON deliveries (event_id)",
    "CREATE INDEX deliveries_open ON deliveries (next_attempt_ms) WHERE status IN ('pending', 'retrying')",
    `CREATE TABLE attempts (delivery_id TEXT NOT NULL, number INTEGER NOT NULL, series INTEGER NOT NULL, at TEXT NOT NULL,
        step TEXT NOT NULL, http_status INTEGER, latency_ms INTEGER NOT NULL, outcome TEXT NOT NULL, error TEXT,
        PRIMARY KEY (delivery_id, number))`,
    "CREATE TABLE audit_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL)",
  ],
};

/** Every table's and index's definition, by name. */
const schemaOf = (sql: SqlStorage) =>
  Object.fromEntries(
    sql
      .exec<{ name: string; sql: string | null }>(
        "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
      )
      .toArray()
      .map((r) => [r.name, r.sql]),
  );

beforeAll(() => {
  for (const level of ["warn", "error", "info", "log"] as const) vi.spyOn(console, level).mockImplementation(() => {});
});

describe("WebhookObject: the upgrade to an object per endpoint", () => {
  it("hands version 1's deliveries to their endpoints in place: history kept, open deliveries carried on, nothing sent twice", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    // A new object's schema, for comparison.
    const other = await createTenant();
    await createConfig(other, await issueToken(other), "x");
    const fresh = await runInDurableObject(webhooksOf(other.orgId), (_i, s) => schemaOf(s.storage.sql));

    const keys = loadConfig(env).encryptionKeys;
    const now = Date.now();
    const at = (ms: number) => new Date(ms).toISOString();
    const live = newWebhookConfigurationId();
    const deleted = newWebhookConfigurationId();
    const sealedFor = async (id: string) => ({
      client_secret: JSON.stringify(await seal(keys, "v1-receiver-secret", `${t.orgId}:${id}:oauth_client_secret`)),
      signing: JSON.stringify([
        {
          secret: await seal(keys, newSigningSecret(), `${t.orgId}:${id}:signing_secret`),
          created_at: at(now - 86_400_000),
          expires_at: null,
        },
      ]),
    });
    const liveSecrets = await sealedFor(live);
    // Version 1's delivery ids were wholly random (they named no configuration).
    const d = Object.fromEntries(
      ["delivered", "failed", "owed", "queued", "inFlight", "orphan"].map((k) => [k, newDeliveryId(newWebhookConfigurationId())]),
    );
    const e = Object.fromEntries(Object.keys(d).map((k) => [k, newEventId()]));
    const failingSince = now - 3_600_000;

    // Version 1's database, as that release would have left it.
    const stub = webhooksOf(t.orgId);
    await runInDurableObject(stub, (_i, state) => {
      const sql = state.storage.sql;
      for (const { name } of sql
        .exec<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
        )
        .toArray()) {
        sql.exec(`DROP TABLE ${name}`);
      }
      migrate(state.storage, [WEBHOOKS_V1]);
      sql.exec("INSERT INTO meta (one, organization_id) VALUES (1, ?)", t.orgId);
      sql.exec(
        `INSERT INTO configurations (id, url, events, description, token_url, client_id, client_secret, token_cache, signing_secrets,
          status, disabled_reason, failing_since, last_delivered_ms, version, created_at, updated_at)
          VALUES (?, ?, NULL, 'orders', 'https://receiver.example/oauth/token', 'v1-client', ?, 0, ?, 'active', NULL, ?, ?, 3, ?, ?)`,
        live,
        WEBHOOK_URL,
        liveSecrets.client_secret,
        liveSecrets.signing,
        failingSince,
        now - 7_200_000,
        at(now - 86_400_000),
        at(now - 3_600_000),
      );
      for (const [k, id] of Object.entries(e)) {
        sql.exec(
          "INSERT INTO events (id, type, body, created_at, created_ms) VALUES (?, 'order.created', ?, ?, ?)",
          id,
          JSON.stringify({ id, type: "order.created", created_at: at(now - 60_000), data: { k } }),
          at(now - 60_000),
          now - 60_000,
        );
      }
      sql.exec(
        "INSERT INTO idempotency_keys (key, request_hash, event_id, created_ms) VALUES ('order-1', 'h', ?, ?)",
        e.delivered,
        now - 60_000,
      );
      const delivery = (
        k: string,
        config: string,
        status: string,
        seriesAttempts: number,
        attempts: number,
        next: number | null,
        dispatched: number | null,
        lease: number | null,
      ) =>
        sql.exec(
          `INSERT INTO deliveries (id, event_id, event_type, configuration_id, status, series, series_attempts, attempts, next_attempt_ms,
            dispatched_ms, lease_until_ms, created_at, updated_at) VALUES (?, ?, 'order.created', ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
          d[k],
          e[k],
          config,
          status,
          seriesAttempts,
          attempts,
          next,
          dispatched,
          lease,
          at(now - 60_000),
          at(now - 30_000),
        );
      const attempt = (k: string, n: number, outcome: string, status: number | null, error: string | null) =>
        sql.exec(
          "INSERT INTO attempts (delivery_id, number, series, at, step, http_status, latency_ms, outcome, error) VALUES (?, ?, 1, ?, 'webhook', ?, 12, ?, ?)",
          d[k],
          n,
          at(now - 50_000 + n),
          status,
          outcome,
          error,
        );
      delivery("delivered", live, "delivered", 1, 1, null, now - 55_000, null);
      attempt("delivered", 1, "delivered", 204, null);
      delivery("failed", live, "failed", 2, 2, null, now - 55_000, null);
      attempt("failed", 1, "retry", 503, "webhook URL answered 503");
      attempt("failed", 2, "failed", 400, "webhook URL answered 400");
      delivery("owed", live, "pending", 0, 0, now - 1_000, null, null);
      delivery("queued", live, "pending", 0, 0, now - 1_000, now - 500, null);
      delivery("inFlight", live, "retrying", 1, 2, now - 10_000, now - 10_000, now + 30_000);
      attempt("inFlight", 1, "retry", 500, "webhook URL answered 500");
      sql.exec(
        "INSERT INTO attempts (delivery_id, number, series, at, step, http_status, latency_ms, outcome, error) VALUES (?, 2, 1, ?, 'token', NULL, 0, 'in_flight', NULL)",
        d.inFlight,
        at(now - 1_000),
      );
      // A configuration deleted under version 1 left a delivery behind.
      delivery("orphan", deleted, "retrying", 1, 1, now - 1, null, null);
      attempt("orphan", 1, "retry", 502, "webhook URL answered 502");
    });
    const v1 = await runInDurableObject(stub, (_i, s) =>
      s.storage.sql.exec<{ version: number }>("SELECT version FROM _migrations").toArray(),
    );
    expect(v1).toEqual([{ version: 1 }]);

    // The new code starts on it.
    await evictDurableObject(stub);
    fakeNetwork(receiver());
    const after = await runInDurableObject(webhooksOf(t.orgId), (_i, s) => ({
      versions: s.storage.sql.exec<{ version: number }>("SELECT version FROM _migrations ORDER BY version").toArray(),
      schema: schemaOf(s.storage.sql),
    }));
    expect(after.versions.map((v) => v.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(after.schema).toEqual(fresh);

    // History kept, in the endpoint's object now.
    expect(await getDelivery(t, token, d.delivered!)).toMatchObject({
      status: "delivered",
      webhook_configuration_id: live,
      attempts: [expect.objectContaining({ number: 1, outcome: "delivered", http_status: 204 })],
    });
    expect((await getDelivery(t, token, d.failed!)).attempts.map((a) => [a.number, a.outcome, a.http_status])).toEqual([
      [1, "retry", 503],
      [2, "failed", 400],
    ]);
    const list = await api(t, token, `/v1/webhook-configurations/${live}/deliveries?limit=10`);
    expect(((await list.json()) as { data: { id: string }[] }).data.map((x) => x.id).sort()).toEqual(
      [d.delivered, d.failed, d.owed, d.queued, d.inFlight].sort(),
    );
    // The configuration, with its health, now kept by its endpoint.
    const config = (await (await api(t, token, `/v1/webhook-configurations/${live}`)).json()) as { data: Record<string, unknown> };
    expect(config.data).toMatchObject({ id: live, description: "orders", failing_since: new Date(failingSince).toISOString() });
    // The Idempotency-Key still answers its event.
    const replay = await api(t, token, "/v1/events", "POST", { type: "order.created", data: {} }, { "Idempotency-Key": "x" });
    expect(replay.status).toBe(202);

    // Open deliveries carry on. The ticket that was in the Queue (v2) still begins its attempt, and is the only one to.
    expect(await deliveryRow(t.orgId, d.queued!)).toMatchObject({ state: "queued", ticket: 0 });
    const legacy: LegacyTicket = { v: 2, organization_id: t.orgId, delivery_id: d.queued!, series: 1, attempt: 1 };
    const sent = fakeNetwork(receiver());
    expect((await consume(DELIVERY_QUEUE, [{ id: "v2", attempts: 1, body: legacy }])).acked).toEqual(["v2"]);
    expect((await getDelivery(t, token, d.queued!)).status).toBe("delivered");
    expect(sent.filter((s) => s.headers["webhook-id"] === d.queued)).toHaveLength(1);
    // The attempt in flight keeps its lease; once it runs out unreported, the delivery goes on by its schedule.
    expect(await deliveryRow(t.orgId, d.inFlight!)).toMatchObject({ state: "running", attempts: 2 });
    await inEndpoint(live, "UPDATE deliveries SET lease_until_ms = 1, wake_ms = 1 WHERE id = ?", d.inFlight!);
    await endpointAlarm(live);
    expect((await getDelivery(t, token, d.inFlight!)).attempts.map((a) => a.outcome)).toEqual(["retry", "retry"]);
    expect((await attemptNow(t, token, d.inFlight!)).record.status).toBe("delivered");
    // The one owed a ticket gets one and is delivered.
    expect((await attemptNow(t, token, d.owed!)).record.status).toBe("delivered");
    // The deleted configuration's delivery fails without a request.
    const orphan = await getDelivery(t, token, d.orphan!);
    expect(orphan.status).toBe("failed");
    expect(orphan.attempts.at(-1)).toMatchObject({ step: "configuration", error: "webhook configuration was deleted" });
    expect(sent.filter((s) => s.headers["webhook-id"] === d.orphan)).toEqual([]);
    expect((await api(t, token, "/v1/webhook-configurations")).status).toBe(200);
  });
});
