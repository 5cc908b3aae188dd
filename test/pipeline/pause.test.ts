/**
 * A receiver's controls lose nothing (issue 42, item 4), on the real Queue and consumer (this
 * project's retry schedule is 1 s, 1 s). Pause holds: events published while a configuration is
 * `paused` reach the receiver after it is resumed, an ordered endpoint's in publish order, and
 * nothing is sent meanwhile. Recover after a short outage: the deliveries still `retrying` are
 * re-sent at once, even with the circuit open and its next probe a minute away, each once; a
 * Retry-After the receiver asked for is still waited out.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { RecoveryView } from "../../src/schemas/receivers";
import { fakeNetwork, RECEIVER, receiver, type Sent } from "../fake-network";
import { body, createTenant, issueToken, type Tenant } from "../helpers";
import { api, createConfig, endpointRow, getDelivery, inEndpoint } from "../webhook-helpers";

const SECRET = "pipeline-pause-secret";
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
    await sleep(50);
  }
}

async function publish(n: number, to: string): Promise<string> {
  const res = await api(t, token, "/v1/events", "POST", { type: "order.created", data: { n } });
  const json = await body<{ deliveries: { id: string; webhook_configuration_id: string }[] }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  const id = json.data.deliveries.find((d) => d.webhook_configuration_id === to)?.id;
  expect(id, `event ${n} fans out to ${to}`).toBeDefined();
  return id as string;
}

const setStatus = async (configId: string, status: string) => {
  const res = await api(t, token, `/v1/webhook-configurations/${configId}`, "PATCH", { status });
  expect(res.status, await res.clone().text()).toBe(200);
};

const webhooksTo = (sent: Sent[], path: string) => sent.filter((s) => s.url === `${RECEIVER}${path}` && s.method === "POST");

describe("pause holds", () => {
  it("events published while paused are delivered after resume, an ordered endpoint's in publish order", async () => {
    const sent = fakeNetwork({ ...receiver(), [`${RECEIVER}/held`]: () => new Response(null, { status: 204 }) });
    const config = await createConfig(t, token, SECRET, { url: `${RECEIVER}/held`, ordered: true });
    await setStatus(config.id, "paused");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await publish(i, config.id));
    await sleep(1500);
    expect(webhooksTo(sent, "/held"), "nothing is sent while paused").toHaveLength(0);
    for (const id of ids) expect((await getDelivery(t, token, id)).status).toBe("pending");

    const resumedAt = Date.now();
    await setStatus(config.id, "active");
    for (const id of ids)
      await eventually(
        () => getDelivery(t, token, id),
        (d) => d.status === "delivered",
        id,
      );
    console.info(`held deliveries: last delivered ${Date.now() - resumedAt} ms after resume`);
    expect(webhooksTo(sent, "/held").map((s) => s.headers["webhook-id"])).toEqual(ids);
  });
});

describe("recover after a short outage", () => {
  it("re-sends the retrying deliveries at once, with the circuit open and its probe a minute away, each once", async () => {
    let down = true;
    const sent = fakeNetwork({ ...receiver(), [`${RECEIVER}/outage`]: () => new Response(null, { status: down ? 500 : 204 }) });
    const config = await createConfig(t, token, SECRET, { url: `${RECEIVER}/outage` });
    const since = Date.now() - 1000;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await publish(i, config.id));
    // Five failures in a row open the circuit; the deliveries wait in it, retrying, not spending retries.
    await eventually(
      () => endpointRow(config.id),
      (ep) => ep.pause_kind === "circuit",
      "the circuit",
    );
    // Its next probe as after two failed ones: a minute away.
    await inEndpoint(config.id, "UPDATE endpoint SET probes = 2, paused_until_ms = ? WHERE pause_kind = 'circuit'", Date.now() + 60_000);
    const retrying = (await Promise.all(ids.map((id) => getDelivery(t, token, id)))).filter((d) => d.status === "retrying").length;
    expect(retrying).toBeGreaterThan(0);

    down = false;
    const before = webhooksTo(sent, "/outage").length;
    const recoveredAt = Date.now();
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/recover`, "POST", { since: new Date(since).toISOString() });
    const started = await body<RecoveryView>(res);
    expect(res.status, JSON.stringify(started)).toBe(202);
    expect(started.data.found).toBeGreaterThanOrEqual(retrying);
    expect(started.data.resent).toBeGreaterThanOrEqual(retrying);
    for (const id of ids)
      await eventually(
        () => getDelivery(t, token, id),
        (d) => d.status === "delivered",
        id,
        10_000,
      );
    const took = Date.now() - recoveredAt;
    console.info(`recover to the last delivery: ${took} ms (the circuit's probe was 60,000 ms away)`);
    expect(took).toBeLessThan(10_000);
    await sleep(1500);
    // Each once after the receiver came back.
    const after = webhooksTo(sent, "/outage").slice(before);
    expect(after.map((s) => s.headers["webhook-id"]).sort()).toEqual([...ids].sort());
  }, 60_000);

  it("keeps a Retry-After pause the receiver asked for", async () => {
    let calls = 0;
    const sent = fakeNetwork({
      ...receiver(),
      [`${RECEIVER}/throttled`]: () =>
        ++calls === 1 ? new Response(null, { status: 429, headers: { "Retry-After": "4" } }) : new Response(null, { status: 204 }),
    });
    const config = await createConfig(t, token, SECRET, { url: `${RECEIVER}/throttled` });
    const since = Date.now() - 1000;
    const id = await publish(1, config.id);
    const ep = await eventually(
      () => endpointRow(config.id),
      (row) => row.pause_kind === "retry_after",
      "the Retry-After pause",
    );
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/recover`, "POST", { since: new Date(since).toISOString() });
    expect((await body<RecoveryView>(res)).data).toMatchObject({ found: 1, resent: 1 });
    expect((await endpointRow(config.id)).paused_until_ms).toBe(ep.paused_until_ms);
    const delivered = await eventually(
      () => getDelivery(t, token, id),
      (d) => d.status === "delivered",
      id,
    );
    const webhooks = webhooksTo(sent, "/throttled");
    expect(webhooks).toHaveLength(2);
    // The second one left no earlier than the receiver asked.
    expect(Date.parse(delivered.updated_at)).toBeGreaterThanOrEqual((ep.paused_until_ms as number) - 50);
  });
});
