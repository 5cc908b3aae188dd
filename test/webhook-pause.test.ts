/**
 * A receiver's controls lose nothing (issue 42, item 4). Pause holds: a configuration `paused`
 * still takes what is published (its deliveries wait in the endpoint's object, no ticket is sent),
 * within a bound (policy.ts PAUSE_HOLD_MAX_DELIVERIES published during one pause, each held at
 * most PAUSE_HOLD_MAX_MS past its due time): past it a delivery is concluded `failed` with an
 * error that says so, and a recovery after resuming sends it. A test event, a re-send and a
 * recovery are refused while paused (409). Recover takes the window's deliveries still
 * `retrying`, due at once, and ends an open circuit's wait (its probe due now); a Retry-After pause
 * is kept. The Queue is held here (nobody consumes it): whether a ticket was sent is read from the
 * delivery's row (`queued`); the pipeline project (test/pipeline/pause.test.ts) delivers for real.
 */
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { PAUSE_HOLD_MAX_DELIVERIES, PAUSE_HOLD_MAX_MS } from "../src/objects/endpoints/policy";
import type { RecoveryView } from "../src/schemas/receivers";
import type { DeliveryRecord } from "../src/schemas/webhooks";
import { body, createTenant, issueToken, type Tenant } from "./helpers";
import { api, createConfig, deliveryRowAt, endpointOf, endpointRow, getDelivery, inEndpoint } from "./webhook-helpers";

const SECRET = "pause-receiver-secret";
let t: Tenant;
let token: string;

beforeAll(async () => {
  for (const level of ["warn", "error", "info", "log"] as const) vi.spyOn(console, level).mockImplementation(() => {});
  t = await createTenant({ per_second: 1000 });
  token = await issueToken(t);
});

const setStatus = async (configId: string, status: string) => {
  const res = await api(t, token, `/v1/webhook-configurations/${configId}`, "PATCH", { status });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await body<{ status: string; pause_reason: string | null }>(res)).data;
};

async function publish(configId: string, n: number): Promise<string> {
  const res = await api(t, token, "/v1/events", "POST", { type: "order.created", data: { n } });
  const json = await body<{ deliveries: { id: string; webhook_configuration_id: string }[] }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  const id = json.data.deliveries.find((d) => d.webhook_configuration_id === configId)?.id;
  expect(id, "the paused configuration takes its delivery").toBeDefined();
  return id as string;
}

const recover = (configId: string, since: number) =>
  api(t, token, `/v1/webhook-configurations/${configId}/recover`, "POST", { since: new Date(since).toISOString() });

const runAlarm = (configId: string) => runInDurableObject(endpointOf(configId), (instance) => instance.alarm());

describe("pause holds", () => {
  it("holds what is published while paused (no ticket), refuses test, re-send and recover with 409, and sends on resume", async () => {
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/held" });
    const paused = await setStatus(config.id, "paused");
    expect(paused.status).toBe("paused");
    expect(paused.pause_reason).toMatch(/held/);
    const id = await publish(config.id, 1);
    const row = await deliveryRowAt(config.id, id);
    expect(row).toMatchObject({ status: "pending", state: "waiting", attempts: 0 });
    expect((await getDelivery(t, token, id)).status).toBe("pending");

    const test = await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST");
    expect(test.status).toBe(409);
    expect(await test.text()).toMatch(/paused/);
    expect((await recover(config.id, Date.now() - 60_000)).status).toBe(409);
    expect((await api(t, token, `/v1/deliveries/${id}/retry`, "POST")).status).toBe(409);
    await runAlarm(config.id);
    expect((await deliveryRowAt(config.id, id)).state).toBe("waiting");

    const resumed = await setStatus(config.id, "active");
    expect(resumed.pause_reason).toBeNull();
    expect((await deliveryRowAt(config.id, id)).state).toBe("queued");
  });

  it("past the bound (count, then time) a held delivery is failed with an error that says so, and a recovery after resuming sends it", async () => {
    const since = Date.now() - 1000;
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/bound" });
    await setStatus(config.id, "paused");
    // The pause already holds one short of its bound: the next is held, the one after is failed.
    await inEndpoint(config.id, "UPDATE endpoint SET held = ?", PAUSE_HOLD_MAX_DELIVERIES - 1);
    const kept = await publish(config.id, 1);
    const over = await publish(config.id, 2);
    expect((await endpointRow(config.id)).held).toBe(PAUSE_HOLD_MAX_DELIVERIES);
    expect((await deliveryRowAt(config.id, kept)).state).toBe("waiting");
    const failed: DeliveryRecord = await getDelivery(t, token, over);
    expect(failed.status).toBe("failed");
    expect(failed.attempts.at(-1)?.error).toMatch(/paused and the pause already holds 10,000 deliveries/);

    // The held one, PAUSE_HOLD_MAX_MS past its due time, is concluded by the alarm.
    await inEndpoint(config.id, "UPDATE deliveries SET due_ms = ? WHERE id = ?", Date.now() - PAUSE_HOLD_MAX_MS - 1000, kept);
    await runAlarm(config.id);
    const tooLong = await getDelivery(t, token, kept);
    expect(tooLong.status).toBe("failed");
    expect(tooLong.attempts.at(-1)?.error).toMatch(/held for 7 days while deliveries to this endpoint were paused/);

    // Listed as failed, and recovered after resuming: each re-sent once, a new series.
    const list = await body<DeliveryRecord[]>(await api(t, token, `/v1/webhook-configurations/${config.id}/deliveries?status=failed`));
    expect(list.data.map((d) => d.id).sort()).toEqual([kept, over].sort());
    await setStatus(config.id, "active");
    expect((await endpointRow(config.id)).held).toBe(0);
    const res = await recover(config.id, since);
    const started = await body<RecoveryView>(res);
    expect(res.status, JSON.stringify(started)).toBe(202);
    expect(started.data).toMatchObject({ found: 2 });
    for (
      let i = 0;
      i < 5 && (await body<RecoveryView>(await api(t, token, res.headers.get("location") as string))).data.status === "running";
      i++
    )
      await runAlarm(config.id);
    for (const id of [kept, over]) expect(await deliveryRowAt(config.id, id)).toMatchObject({ status: "pending", series: 2 });
  });

  it("a configuration disabled keeps its meaning: nothing is fanned out to it", async () => {
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/off" });
    await setStatus(config.id, "disabled");
    const res = await api(t, token, "/v1/events", "POST", { type: "order.created", data: {} });
    const json = await body<{ deliveries: { webhook_configuration_id: string }[] }>(res);
    expect(json.data.deliveries.map((d) => d.webhook_configuration_id)).not.toContain(config.id);
  });
});

describe("recover takes retrying deliveries and ends the circuit's wait", () => {
  /** A delivery waiting for its next retry an hour from now, as after a failed attempt. */
  const retrying = (configId: string, id: string) =>
    inEndpoint(
      configId,
      "UPDATE deliveries SET status = 'retrying', state = 'waiting', attempts = 1, series_attempts = 1, due_ms = ?, queued_ms = NULL, wake_ms = NULL WHERE id = ?",
      Date.now() + 3_600_000,
      id,
    );

  it("an open circuit's probe is due now, and the retrying delivery is sent at once, counted once", async () => {
    const since = Date.now() - 1000;
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/circuit" });
    const id = await publish(config.id, 1);
    await retrying(config.id, id);
    const probeAt = Date.now() + 60_000;
    await inEndpoint(
      config.id,
      "UPDATE endpoint SET pause_kind = 'circuit', failures = 5, probes = 2, paused_until_ms = ?, pause_reason = 'circuit open'",
      probeAt,
    );
    const res = await recover(config.id, since);
    const started = await body<RecoveryView>(res);
    expect(res.status, JSON.stringify(started)).toBe(202);
    expect(started.data).toMatchObject({ found: 1, resent: 1 });
    const ep = await endpointRow(config.id);
    expect(ep.pause_kind).toBe("circuit");
    expect(ep.paused_until_ms as number).toBeLessThanOrEqual(Date.now());
    // Claimed (its ticket sent) by the recovery's own pump: the probe.
    expect(await deliveryRowAt(config.id, id)).toMatchObject({ status: "retrying", state: "queued" });
    // The same window again finds nothing more: a recovery never sends a series twice.
    await retrying(config.id, id);
    expect((await body<RecoveryView>(await recover(config.id, since))).data).toMatchObject({ found: 0, resent: 0 });
  });

  it("a Retry-After pause the receiver asked for is kept", async () => {
    const since = Date.now() - 1000;
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/retry-after" });
    const id = await publish(config.id, 1);
    await retrying(config.id, id);
    const until = Date.now() + 60_000;
    await inEndpoint(
      config.id,
      "UPDATE endpoint SET pause_kind = 'retry_after', paused_until_ms = ?, pause_reason = 'the receiver answered 429 with Retry-After'",
      until,
    );
    const started = await body<RecoveryView>(await recover(config.id, since));
    expect(started.data).toMatchObject({ found: 1, resent: 1 });
    const ep = await endpointRow(config.id);
    expect(ep).toMatchObject({ pause_kind: "retry_after", paused_until_ms: until });
    const row = await deliveryRowAt(config.id, id);
    // Due now, but waiting for the receiver's time: no ticket.
    expect(row.state).toBe("waiting");
    expect(row.due_ms as number).toBeLessThanOrEqual(Date.now());
  });

  it("paused time is not failing time: pausing and resuming start the health count again (a resume after a long pause is not disabled by its first failure)", async () => {
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/failing-then-paused" });
    // Failing for six days, past the five-day disable period, then paused.
    await inEndpoint(config.id, "UPDATE endpoint SET failing_since_ms = ?", Date.now() - 6 * 24 * 3600 * 1000);
    await setStatus(config.id, "paused");
    expect((await endpointRow(config.id)).failing_since_ms).toBeNull();
    await inEndpoint(config.id, "UPDATE endpoint SET failing_since_ms = ?", Date.now() - 6 * 24 * 3600 * 1000);
    await setStatus(config.id, "active");
    expect((await endpointRow(config.id)).failing_since_ms).toBeNull();
  });
});
