/**
 * What the webhook objects must not do at scale (issue 20's review of the organization-wide
 * object): send a ticket twice when calls overlap, send a delivered webhook again because its
 * report was lost, read the backlog on every call, multiply messages while the Queue is behind,
 * or grow the audit log with the publish rate. Each test counts what it is about: Queue messages,
 * requests to the receiver, rows read (the objects' metered SQL handle), audit entries, and the
 * query plans of the retention deletes.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { Db } from "../src/objects/db";
import type { AttemptCall } from "../src/objects/endpoints/attempts";
import { DELIVERY_ROW_BYTES, EVENT_ROW_BYTES, STORAGE_BUDGET_BYTES } from "../src/objects/webhooks/limits";
import type { DeliveryQueueMessage, DeliveryTicket, ReportMessage } from "../src/schemas/webhooks";
import { DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { consume, fakeNetwork, receiver, WEBHOOK_URL } from "./fake-network";
import { admin, createTenant, issueToken, type Tenant } from "./helpers";
import {
  api,
  attemptNow,
  createConfig,
  deliveryRow,
  endpointAlarm,
  endpointOf,
  getDelivery,
  inEndpoint,
  inWebhooks,
  publishTo,
  ticketFor,
  webhooksOf,
} from "./webhook-helpers";

const SECRET = "scale-receiver-secret";

beforeAll(() => {
  for (const level of ["warn", "error", "info", "log"] as const) vi.spyOn(console, level).mockImplementation(() => {});
});

async function tenantWithToken(): Promise<{ t: Tenant; token: string }> {
  const t = await createTenant();
  return { t, token: await issueToken(t) };
}

/** A Queue that records what is sent to it (and, after `delayMs`, says it took it). */
function recordingQueue(delayMs = 0): { queue: Queue; sent: DeliveryQueueMessage[] } {
  const sent: DeliveryQueueMessage[] = [];
  const take = async (bodies: DeliveryQueueMessage[]) => {
    if (delayMs > 0) await scheduler.wait(delayMs);
    sent.push(...bodies);
  };
  const queue = {
    send: (body: DeliveryQueueMessage) => take([body]),
    sendBatch: (messages: { body: DeliveryQueueMessage }[]) => take(messages.map((m) => m.body)),
  } as unknown as Queue;
  return { queue, sent };
}

/** Gives one endpoint object these Queue bindings (all three lanes). */
async function queuesOf(configId: string, queue: Queue): Promise<void> {
  await runInDurableObject(endpointOf(configId), (instance: unknown) => {
    const self = instance as { env: Env };
    const lanes = { WEBHOOK_QUEUE: queue, WEBHOOK_QUEUE_NEW: queue, WEBHOOK_QUEUE_SLOW: queue };
    Object.defineProperty(instance, "env", { value: { ...self.env, ...lanes }, configurable: true });
  });
}

/** Rows the object's SQL handle has read so far. */
const rowsRead = (stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>) =>
  runInDurableObject(stub, (instance: unknown) => (instance as { db: Db }).db.rowsRead);

/** Rows read by `call` in `stub`. */
async function readBy(stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>, call: () => Promise<unknown>): Promise<number> {
  const before = await rowsRead(stub);
  await call();
  return (await rowsRead(stub)) - before;
}

describe("one Queue message per ticket, however many calls overlap", () => {
  it("5 concurrent publishes to 3 endpoints send 15 tickets, no ticket twice", async () => {
    const { t, token } = await tenantWithToken();
    const { queue, sent } = recordingQueue(20); // a slow send, so that calls overlap it
    const configs = await Promise.all([1, 2, 3].map(() => createConfig(t, token, SECRET)));
    for (const c of configs) {
      await inEndpoint(c.id, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
      await queuesOf(c.id, queue);
    }
    const published = await Promise.all(
      Array.from({ length: 5 }, (_, i) => api(t, token, "/v1/events", "POST", { type: "order.created", data: { i } })),
    );
    expect(published.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    // The alarms (set for the sends' backoff and the fan-out) may run meanwhile; they too must send nothing twice.
    for (const c of configs) await endpointAlarm(c.id);
    await runDurableObjectAlarm(webhooksOf(t.orgId));
    const tickets = sent as DeliveryTicket[];
    expect(tickets).toHaveLength(15);
    expect(new Set(tickets.map((m) => `${m.delivery_id}:${m.ticket}`)).size).toBe(15);
    expect(new Set(tickets.map((m) => m.delivery_id)).size).toBe(15);
  });
});

describe("an attempt's outcome is never lost between the receiver's answer and the record", () => {
  /** The endpoints' namespace, with `finish` failing the first `failures` calls (the object unreachable for the report). */
  function flakyFinish(failures: number): Env["ENDPOINTS"] {
    let failed = 0;
    return {
      idFromName: env.ENDPOINTS.idFromName.bind(env.ENDPOINTS),
      get: (id: DurableObjectId) => {
        const real = env.ENDPOINTS.get(id);
        return {
          step: (call: AttemptCall, now: number) => {
            if (call.kind === "finish" && failed < failures) {
              failed++;
              return Promise.reject(new Error("endpoint unreachable for the report"));
            }
            return real.step(call, now);
          },
        };
      },
    } as unknown as Env["ENDPOINTS"];
  }

  it("retries the report a few times at once: delivered, one POST", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    const sent = fakeNetwork(receiver());
    const id = await publishTo(t, token, config.id);
    const { queue, sent: carried } = recordingQueue();
    const outcome = await consume(DELIVERY_QUEUE, [{ id: "r1", attempts: 1, body: await ticketFor(t.orgId, id) }], {
      ENDPOINTS: flakyFinish(2),
      WEBHOOK_QUEUE: queue,
    });
    expect(outcome.acked).toEqual(["r1"]);
    expect(carried).toEqual([]);
    expect((await getDelivery(t, token, id)).status).toBe("delivered");
    expect(sent.filter((s) => s.url === WEBHOOK_URL)).toHaveLength(1);
  });

  it("carries the report through the Queue when the object keeps refusing it; the lease net then sends nothing again", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    const sent = fakeNetwork(receiver());
    const id = await publishTo(t, token, config.id);
    const { queue, sent: carried } = recordingQueue();
    const outcome = await consume(DELIVERY_QUEUE, [{ id: "r2", attempts: 1, body: await ticketFor(t.orgId, id) }], {
      ENDPOINTS: flakyFinish(100),
      WEBHOOK_QUEUE: queue,
    });
    expect(outcome.acked).toEqual(["r2"]);
    expect(carried).toHaveLength(1);
    const report = carried[0] as ReportMessage;
    expect(report).toMatchObject({ v: 3, kind: "report", configuration_id: config.id, report: { delivery_id: id, outcome: "delivered" } });
    expect((await getDelivery(t, token, id)).status).toBe("pending");
    // The report message arrives: the outcome is recorded.
    expect((await consume(DELIVERY_QUEUE, [{ id: "r3", attempts: 1, body: report }])).acked).toEqual(["r3"]);
    expect((await getDelivery(t, token, id)).status).toBe("delivered");
    // Later, past the attempt's lease, the alarm finds nothing to conclude or send.
    await inEndpoint(config.id, "UPDATE deliveries SET lease_until_ms = 1, wake_ms = 1 WHERE id = ?", id);
    await endpointAlarm(config.id);
    expect((await getDelivery(t, token, id)).attempts).toEqual([expect.objectContaining({ number: 1, outcome: "delivered" })]);
    expect(sent.filter((s) => s.url === WEBHOOK_URL)).toHaveLength(1);
  });

  it("leaves the ticket to the Queue's retry (and the lease) only when neither the object nor the Queue takes the report", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    fakeNetwork(receiver());
    const id = await publishTo(t, token, config.id);
    const down = { send: () => Promise.reject(new Error("queue down")) } as unknown as Queue;
    const outcome = await consume(DELIVERY_QUEUE, [{ id: "r4", attempts: 1, body: await ticketFor(t.orgId, id) }], {
      ENDPOINTS: flakyFinish(100),
      WEBHOOK_QUEUE: down,
    });
    expect(outcome.retried.map((r) => r.msgId)).toEqual(["r4"]);
    expect(await deliveryRow(t.orgId, id)).toMatchObject({ state: "running" });
  });
});

describe("every per-call query reads rows in proportion to what is due, not to the backlog", () => {
  it("with 100,000 open deliveries, no call reads more than a few hundred rows", { timeout: 120_000 }, async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    const stub = endpointOf(config.id);
    const future = Date.now() + 3_600_000;
    // A receiver down for a day: 100,000 deliveries waiting for their next retry.
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
          INSERT INTO deliveries (id, seq, event_id, event_type, body, status, series, series_attempts, attempts, due_ms, state,
            created_ms, created_at, updated_at)
          SELECT 'msg_backlog' || i, -i, 'evt_backlog', 'order.created', '{}', 'retrying', 1, 2, 2, ? + i, 'waiting', ?, ?, ?
          FROM n`,
        future,
        Date.now(),
        new Date().toISOString(),
        new Date().toISOString(),
      );
    });
    fakeNetwork(receiver());
    const reads: Record<string, number> = {};
    // A new event: the fan-out, the hand-over and the dispatch of its ticket.
    let id = "";
    reads.publish = await readBy(stub, async () => {
      id = await publishTo(t, token, config.id);
    });
    // Its attempt: begin and finish.
    reads.attempt = await readBy(stub, async () => {
      expect((await attemptNow(t, token, id)).record.status).toBe("delivered");
    });
    reads.alarm = await readBy(stub, () => endpointAlarm(config.id));
    reads.view = await readBy(stub, async () => {
      expect((await api(t, token, `/v1/webhook-configurations/${config.id}`)).status).toBe(200);
    });
    reads.delivery = await readBy(stub, () => getDelivery(t, token, id));
    reads.list = await readBy(stub, async () => {
      expect((await api(t, token, `/v1/webhook-configurations/${config.id}/deliveries?limit=20`)).status).toBe(200);
    });
    reads.resend = await readBy(stub, async () => {
      expect((await api(t, token, `/v1/deliveries/${id}/retry`, "POST")).status).toBe(202);
    });
    for (const [call, n] of Object.entries(reads)) expect(n, `${call} read ${n} rows`).toBeLessThan(300);
  });

  it("with 100,000 events and deliveries in the organization's index, a publish and a lookup read a handful of rows", {
    timeout: 120_000,
  }, async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    const org = webhooksOf(t.orgId);
    await runInDurableObject(org, (_i, state) => {
      const now = Date.now();
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
          INSERT INTO events (id, type, body, created_at, created_ms) SELECT 'evt_old' || i, 'order.created', NULL, ?, ? FROM n`,
        new Date(now).toISOString(),
        now,
      );
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
          INSERT INTO fanout (delivery_id, event_id, configuration_id, created_ms, handed) SELECT 'msg_old' || i, 'evt_old' || i, ?, ?, 1 FROM n`,
        config.id,
        now,
      );
    });
    fakeNetwork(receiver());
    let id = "";
    const publish = await readBy(org, async () => {
      id = await publishTo(t, token, config.id);
    });
    const lookup = await readBy(org, () => getDelivery(t, token, id));
    const alarm = await readBy(org, () => runDurableObjectAlarm(org));
    expect(publish, `publish read ${publish} rows`).toBeLessThan(100);
    expect(lookup, `lookup read ${lookup} rows`).toBeLessThan(20);
    expect(alarm, `alarm read ${alarm} rows`).toBeLessThan(100);
  });
});

describe("the organization's object grows with its events, not with their deliveries", () => {
  it("keeps no row per delivery once its endpoint has it, and still finds every delivery by its id, a deleted configuration's too", async () => {
    const { t, token } = await tenantWithToken();
    const configs = await Promise.all([1, 2, 3].map(() => createConfig(t, token, SECRET)));
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await api(t, token, "/v1/events", "POST", { type: "order.created", data: { i } });
      ids.push(...((await res.json()) as { data: { deliveries: { id: string }[] } }).data.deliveries.map((d) => d.id));
    }
    expect(ids).toHaveLength(30);
    const rows = await runInDurableObject(webhooksOf(t.orgId), (_i, s) => ({
      fanout: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM fanout").one().n,
      events: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM events").one().n,
      bodies: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM events WHERE body IS NOT NULL").one().n,
    }));
    expect(rows).toEqual({ fanout: 0, events: 10, bodies: 0 });
    // A delivery id starts with its configuration's, which is how its endpoint is found.
    for (const id of ids) expect((await getDelivery(t, token, id)).id).toBe(id);
    const gone = configs[0]!.id;
    expect((await api(t, token, `/v1/webhook-configurations/${gone}`, "DELETE")).status).toBe(200);
    const ofGone = ids.filter((id) => id.slice(4, 12) === gone.slice(4, 12));
    expect(ofGone).toHaveLength(10);
    for (const id of ofGone) expect((await getDelivery(t, token, id)).webhook_configuration_id).toBe(gone);
    // Another organization's delivery id is not found, even with the same route.
    const other = await tenantWithToken();
    expect((await api(other.t, other.token, `/v1/deliveries/${ids[0]}`)).status).toBe(404);
  });
});

describe("an object never runs out of space: past its storage budget, its oldest finished records go early", () => {
  it("counts what an endpoint's deliveries hold, and past the budget prunes its oldest finished deliveries, never an open one", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    fakeNetwork(receiver());
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await publishTo(t, token, config.id));
    for (const id of ids.slice(0, 3)) expect((await attemptNow(t, token, id)).record.status).toBe("delivered");
    const stored = await runInDurableObject(endpointOf(config.id), (_i, s) => ({
      counted: s.storage.sql.exec<{ b: number }>("SELECT stored_bytes AS b FROM endpoint").one().b,
      bodies: s.storage.sql.exec<{ b: number }>("SELECT sum(length(CAST(body AS BLOB))) AS b FROM deliveries").one().b,
    }));
    expect(stored.counted).toBe(stored.bodies + 5 * DELIVERY_ROW_BYTES);
    // As if the endpoint's rows had grown past the budget.
    await inEndpoint(config.id, "UPDATE endpoint SET stored_bytes = ?", STORAGE_BUDGET_BYTES + 1);
    await endpointAlarm(config.id);
    const left = await runInDurableObject(endpointOf(config.id), (_i, s) =>
      s.storage.sql.exec<{ id: string; status: string }>("SELECT id, status FROM deliveries ORDER BY seq").toArray(),
    );
    expect(left.map((d) => d.id)).toEqual(ids.slice(3));
    expect(left.every((d) => d.status === "pending")).toBe(true);
    for (const id of ids.slice(0, 3)) expect((await api(t, token, `/v1/deliveries/${id}`)).status).toBe(404);
  });

  it("past the organization's budget, prunes its oldest events beyond the Idempotency-Key window", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    fakeNetwork(receiver());
    for (let i = 0; i < 3; i++) await publishTo(t, token, config.id);
    await inWebhooks(
      t.orgId,
      "UPDATE events SET created_ms = created_ms - ? WHERE rowid IN (SELECT rowid FROM events ORDER BY rowid LIMIT 2)",
      2 * 86_400_000,
    );
    const before = await runInDurableObject(
      webhooksOf(t.orgId),
      (_i, s) => s.storage.sql.exec<{ b: number }>("SELECT stored_bytes AS b FROM meta").one().b,
    );
    expect(before).toBe(3 * EVENT_ROW_BYTES);
    await inWebhooks(t.orgId, "UPDATE meta SET stored_bytes = ?", STORAGE_BUDGET_BYTES + 1);
    await runDurableObjectAlarm(webhooksOf(t.orgId));
    const events = await runInDurableObject(
      webhooksOf(t.orgId),
      (_i, s) => s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM events").one().n,
    );
    expect(events).toBe(1);
  });
});

describe("a backlog in the Queue does not multiply messages", () => {
  it("50 deliveries whose tickets never arrive for two hours cost 10 tickets per presumed loss, at doubling intervals", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    await inEndpoint(config.id, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
    const { queue, sent } = recordingQueue();
    await queuesOf(config.id, queue);
    for (let i = 0; i < 50; i++) await publishTo(t, token, config.id);
    expect(sent).toHaveLength(10);
    // The Queue is stuck: each time the tickets out are presumed lost, time jumps to that moment.
    let elapsed = 0;
    while (elapsed < 2 * 3_600_000) {
      const wake = await runInDurableObject(endpointOf(config.id), (_i, s) =>
        s.storage.sql
          .exec<{ w: number; q: number }>("SELECT min(wake_ms) AS w, min(queued_ms) AS q FROM deliveries WHERE state = 'queued'")
          .one(),
      );
      elapsed += wake.w - wake.q;
      await inEndpoint(config.id, "UPDATE deliveries SET wake_ms = ? WHERE state = 'queued'", Date.now() - 1);
      await endpointAlarm(config.id);
    }
    // 2, 4, 8, 16, 32, 64 minutes: six losses in two hours, ten tickets each (the window), plus the first ten.
    // (One message per pending delivery every 2 minutes would have been 50 x 60 = 3,000.)
    expect(sent).toHaveLength(70);
    expect(new Set((sent as DeliveryTicket[]).map((m) => m.delivery_id)).size).toBe(10);
  });
});

describe("the audit log does not grow with the publish rate", () => {
  it("summarises an actor's publishes of an hour in one entry, updated in place", async () => {
    const { t, token } = await tenantWithToken();
    await createConfig(t, token, SECRET);
    fakeNetwork(receiver());
    for (let i = 0; i < 30; i++) {
      expect((await api(t, token, "/v1/events", "POST", { type: i % 2 ? "order.paid" : "order.created", data: { i } })).status).toBe(202);
    }
    await runDurableObjectAlarm(webhooksOf(t.orgId));
    const log = await admin<{ action: string; detail: Record<string, unknown> }[]>("GET", `/organizations/${t.orgId}/audit-log?limit=100`);
    const published = log.filter((e) => e.action === "event.published");
    expect(published).toHaveLength(1);
    expect(published[0]!.detail).toMatchObject({ count: 30, types: ["order.created", "order.paid"] });
    // Each event keeps who published it, for as long as the event is kept.
    const actors = await runInDurableObject(webhooksOf(t.orgId), (_i, s) =>
      s.storage.sql.exec<{ actor: string }>("SELECT DISTINCT actor FROM events").toArray(),
    );
    expect(actors.map((a) => JSON.parse(a.actor))).toEqual([expect.objectContaining({ type: "api_client", id: t.clientId })]);
  });

  it("deletes through an index when retention runs, in every webhook object and in the audit log", async () => {
    const { t, token } = await tenantWithToken();
    const config = await createConfig(t, token, SECRET);
    await publishTo(t, token, config.id);
    const plan = (stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>, query: string) =>
      runInDurableObject(stub, (_i, s) =>
        s.storage.sql
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, 0, 10)
          .toArray()
          .map((r) => r.detail)
          .join("; "),
      );
    const orgObject = env.ORGS.get(env.ORGS.idFromName(t.orgId));
    const cases: [DurableObjectStub<Rpc.DurableObjectBranded | undefined>, string, RegExp][] = [
      [
        endpointOf(config.id),
        "SELECT id FROM deliveries WHERE created_ms < ? ORDER BY created_ms LIMIT ?",
        /USING (COVERING )?INDEX deliveries_created/,
      ],
      [
        webhooksOf(t.orgId),
        "SELECT id FROM events WHERE created_ms < ? ORDER BY created_ms LIMIT ?",
        /USING (COVERING )?INDEX events_by_created/,
      ],
      [
        webhooksOf(t.orgId),
        "SELECT seq FROM fanout WHERE created_ms < ? AND handed = 1 ORDER BY created_ms LIMIT ?",
        /USING INDEX fanout_by_created/,
      ],
      [
        webhooksOf(t.orgId),
        "SELECT key FROM idempotency_keys WHERE created_ms < ? ORDER BY created_ms LIMIT ?",
        /USING INDEX idempotency_by_created/,
      ],
      [orgObject, "DELETE FROM audit_log WHERE at < ? AND ? > 0", /USING (COVERING )?INDEX audit_log_by_time/],
    ];
    for (const [stub, query, index] of cases) expect(await plan(stub, query), query).toMatch(index);
  });
});
