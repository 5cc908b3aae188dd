/**
 * Recovery after an outage and operational webhooks on the real Queue and consumer (issue 30;
 * this project's retry schedule is 1 s, 1 s): a receiver that failed for a while and comes back
 * gets every failed delivery of the window from one `recover` call, each once, and a second call
 * sends nothing; a 410 produces one `webhook.endpoint.disabled` at a subscribed configuration,
 * exhausted retries one `webhook.delivery.exhausted` per delivery, signed and verified with the
 * `standardwebhooks` library, and an endpoint subscribed to every event receives none of them.
 */
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { compileSchema } from "../../src/lib/json-schema";
import { OPERATIONAL_SCHEMAS } from "../../src/schemas/operational";
import type { OperationalEventType, RecoveryView } from "../../src/schemas/receivers";
import type { DeliveryRecord } from "../../src/schemas/webhooks";
import { fakeNetwork, RECEIVER, receiver, type Sent } from "../fake-network";
import { body, createTenant, issueToken, type Tenant } from "../helpers";
import { api, createConfig, getDelivery, inEndpoint } from "../webhook-helpers";

const SECRET = "pipeline-receiver-secret";
let t: Tenant;
let token: string;

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  vi.spyOn(console, "error").mockImplementation(() => {});
  t = await createTenant({ per_second: 1000 });
  token = await issueToken(t);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(read: () => Promise<T>, until: (v: T) => boolean, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (until(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v).slice(0, 500)}`);
    await sleep(100);
  }
}

async function publish(type: string, data: unknown, to?: string): Promise<string[]> {
  const res = await api(t, token, "/v1/events", "POST", { type, data });
  const json = await body<{ deliveries: { id: string; webhook_configuration_id: string }[] }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data.deliveries.filter((d) => to === undefined || d.webhook_configuration_id === to).map((d) => d.id);
}

/**
 * Closes the endpoint's circuit: its probe delays (5 s, then 30 s) would make an outage of several
 * deliveries last minutes here; the deliveries still fail attempt by attempt, by the schedule.
 */
const closeCircuit = (configId: string) =>
  inEndpoint(configId, "UPDATE endpoint SET failures = 0, probes = 0, pause_kind = NULL, paused_until_ms = NULL, pause_reason = NULL");

/** Waits until every delivery failed, keeping the circuit closed meanwhile. */
async function allFailed(configId: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    await eventually(
      async () => {
        await closeCircuit(configId);
        return getDelivery(t, token, id);
      },
      (d) => d.status === "failed",
      `delivery ${id}`,
    );
  }
}

const webhooksTo = (sent: Sent[], path: string) => sent.filter((s) => s.url === `${RECEIVER}${path}` && s.method === "POST");

describe("recovery after an outage", () => {
  it("re-sends every failed delivery of the window once, paced by the endpoint; a second call sends nothing", async () => {
    let down = true;
    const sent = fakeNetwork({
      ...receiver(),
      [`${RECEIVER}/outage`]: () => new Response(null, { status: down ? 500 : 204 }),
    });
    const config = await createConfig(t, token, SECRET, { url: `${RECEIVER}/outage`, rate_limit: 5 });
    const since = new Date(Date.now() - 1000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(...(await publish("order.created", { n: i }, config.id)));
    expect(ids).toHaveLength(6);
    await allFailed(config.id, ids);

    down = false;
    await closeCircuit(config.id);
    const before = webhooksTo(sent, "/outage").length;
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/recover`, "POST", { since });
    const started = await body<RecoveryView>(res);
    expect(res.status, JSON.stringify(started)).toBe(202);
    expect(started.data).toMatchObject({ found: 6, status: expect.stringMatching(/running|done/) });
    const location = res.headers.get("location")!;
    expect(location).toBe(`/v1/webhook-configurations/${config.id}/recoveries/${started.data.id}`);

    const done = await eventually(
      async () => (await body<RecoveryView>(await api(t, token, location))).data,
      (r) => r.status === "done",
      "the recovery",
    );
    expect(done).toMatchObject({ found: 6, resent: 6, skipped: 0 });
    const records: DeliveryRecord[] = [];
    for (const id of ids)
      records.push(
        await eventually(
          () => getDelivery(t, token, id),
          (d) => d.status === "delivered",
          id,
        ),
      );
    // Each once after the receiver came back, with its own webhook-id, signed.
    const after = webhooksTo(sent, "/outage").slice(before);
    expect(after.map((s) => s.headers["webhook-id"]).sort()).toEqual([...ids].sort());
    for (const s of after) expect(() => new Webhook(config.signing_secret).verify(s.body, s.headers)).not.toThrow();

    // The same call again (an overlapping window): nothing is failed any more, nothing is sent.
    const again = await body<RecoveryView>(await api(t, token, `/v1/webhook-configurations/${config.id}/recover`, "POST", { since }));
    expect(again.data).toMatchObject({ found: 0, resent: 0, status: "done" });
    await sleep(1500);
    expect(webhooksTo(sent, "/outage").length).toBe(before + 6);
    const list = await body<RecoveryView[]>(await api(t, token, `/v1/webhook-configurations/${config.id}/recoveries`));
    expect(list.data.map((r) => r.id)).toEqual([again.data.id, started.data.id]);
  }, 90_000);

  it("never re-sends what a recovery already re-sent, even when it failed again", async () => {
    const sent = fakeNetwork({ ...receiver(), [`${RECEIVER}/still-down`]: () => new Response(null, { status: 500 }) });
    const config = await createConfig(t, token, SECRET, { url: `${RECEIVER}/still-down` });
    const since = new Date(Date.now() - 1000).toISOString();
    const [id] = await publish("order.created", { n: 1 }, config.id);
    await allFailed(config.id, [id!]);
    const first = await body<RecoveryView>(await api(t, token, `/v1/webhook-configurations/${config.id}/recover`, "POST", { since }));
    expect(first.data.found).toBe(1);
    await eventually(
      async () => {
        await closeCircuit(config.id);
        return getDelivery(t, token, id!);
      },
      (d) => d.status === "failed" && d.attempts.length === 6,
      "second failure",
    );
    const count = webhooksTo(sent, "/still-down").length;
    const second = await body<RecoveryView>(await api(t, token, `/v1/webhook-configurations/${config.id}/recover`, "POST", { since }));
    expect(second.data).toMatchObject({ found: 0, resent: 0 });
    await sleep(1500);
    expect(webhooksTo(sent, "/still-down").length).toBe(count);
  });
});

describe("recovery of an ordered endpoint, asked twice at once", () => {
  it("re-sends in publish order, each delivery once: the second job finds them taken", async () => {
    let down = true;
    const sent = fakeNetwork({ ...receiver(), [`${RECEIVER}/ordered`]: () => new Response(null, { status: down ? 503 : 204 }) });
    const config = await createConfig(t, token, SECRET, { url: `${RECEIVER}/ordered`, ordered: true });
    const since = new Date(Date.now() - 1000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(...(await publish("order.created", { n: i }, config.id)));
    await allFailed(config.id, ids);
    down = false;
    await closeCircuit(config.id);
    const before = webhooksTo(sent, "/ordered").length;
    const path = `/v1/webhook-configurations/${config.id}/recover`;
    const [first, second] = await Promise.all([
      body<RecoveryView>(await api(t, token, path, "POST", { since })),
      body<RecoveryView>(await api(t, token, path, "POST", { since })),
    ]);
    for (const id of ids)
      await eventually(
        () => getDelivery(t, token, id),
        (d) => d.status === "delivered",
        id,
      );
    const done = async (id: string) =>
      eventually(
        async () => (await body<RecoveryView>(await api(t, token, `/v1/webhook-configurations/${config.id}/recoveries/${id}`))).data,
        (r) => r.status === "done",
        `recovery ${id}`,
      );
    const [a, b] = [await done(first!.data.id), await done(second!.data.id)];
    expect(a.resent + b.resent).toBe(4);
    await sleep(1500);
    const after = webhooksTo(sent, "/ordered")
      .slice(before)
      .map((s) => s.headers["webhook-id"]);
    // Once each, and in the order they were published.
    expect(after).toEqual(ids);
  }, 90_000);
});

describe("operational webhooks", () => {
  it("a 410 produces one webhook.endpoint.disabled, exhausted retries one webhook.delivery.exhausted, only at subscribers", async () => {
    // An organization of its own: the endpoints the tests above left failing are another's.
    t = await createTenant({ per_second: 1000 });
    token = await issueToken(t);
    const sent = fakeNetwork({
      ...receiver(),
      [`${RECEIVER}/ops`]: () => new Response(null, { status: 204 }),
      [`${RECEIVER}/gone`]: () => new Response(null, { status: 410 }),
      [`${RECEIVER}/failing`]: () => new Response(null, { status: 500 }),
      [`${RECEIVER}/everything`]: () => new Response(null, { status: 204 }),
    });
    const ops = await createConfig(t, token, SECRET, {
      url: `${RECEIVER}/ops`,
      events: ["webhook.endpoint.disabled", "webhook.delivery.exhausted", "webhook.endpoint.paused", "webhook.endpoint.recovered"],
      operations: true,
    });
    const gone = await createConfig(t, token, SECRET, { url: `${RECEIVER}/gone`, events: ["order.created"] });
    const failing = await createConfig(t, token, SECRET, { url: `${RECEIVER}/failing`, events: ["order.shipped"] });
    await createConfig(t, token, SECRET, { url: `${RECEIVER}/everything` });

    await publish("order.created", { n: 1 });
    await publish("order.created", { n: 2 });
    const [exhaustedId] = await publish("order.shipped", { n: 3 }, failing.id);
    await eventually(
      async () => (await body<{ status: string }>(await api(t, token, `/v1/webhook-configurations/${gone.id}`))).data.status,
      (s) => s === "disabled",
      "the 410's disable",
    );
    const typeOf = (s: Sent) => (JSON.parse(s.body) as { type: string }).type;
    const atOps = await eventually(
      async () => webhooksTo(sent, "/ops"),
      (list) => list.some((s) => typeOf(s) === "webhook.endpoint.disabled") && list.some((s) => typeOf(s) === "webhook.delivery.exhausted"),
      "operational events at the subscriber",
    );
    await sleep(1500);
    const final = webhooksTo(sent, "/ops");
    const disabled = final.filter((s) => typeOf(s) === "webhook.endpoint.disabled");
    expect(disabled).toHaveLength(1);
    const event = JSON.parse(disabled[0]!.body) as { data: Record<string, unknown> };
    expect(event.data).toMatchObject({ webhook_configuration_id: gone.id, reason: expect.stringContaining("410") });
    expect(() => new Webhook(ops.signing_secret).verify(disabled[0]!.body, disabled[0]!.headers)).not.toThrow();
    expect(disabled[0]!.headers.authorization).toMatch(/^Bearer /);

    const exhausted = final.filter((s) => typeOf(s) === "webhook.delivery.exhausted");
    expect(exhausted).toHaveLength(1);
    expect((JSON.parse(exhausted[0]!.body) as { data: Record<string, unknown> }).data).toMatchObject({
      webhook_configuration_id: failing.id,
      event_type: "order.shipped",
      delivery_id: exhaustedId,
    });
    expect(atOps.length).toBeGreaterThan(0);
    // Their data is what the catalog says it is.
    for (const s of [...disabled, ...exhausted]) {
      const event = JSON.parse(s.body) as { type: OperationalEventType; data: unknown };
      expect(compileSchema(OPERATIONAL_SCHEMAS[event.type].schema).validate(event.data), event.type).toEqual({ ok: true });
    }
    // "Every event" is every event of the organization's, not keyway's own.
    expect(
      webhooksTo(sent, "/everything")
        .map(typeOf)
        .filter((type) => type.startsWith("webhook.")),
    ).toEqual([]);
  });
});
