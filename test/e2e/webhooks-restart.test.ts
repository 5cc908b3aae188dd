/**
 * Nothing published is lost in a real local run (`npm start`): 40 events are published to a
 * receiver on loopback, the worker is killed at once (SIGKILL: whatever was queued in the local
 * Queue's memory, or in flight, is gone), and started again on the same state. Every delivery
 * then reaches the receiver and ends `delivered` within the documented bound, sent again by the
 * webhook objects' alarms (their outbox), with none left pending.
 * It starts its own npm start, not the shared one (server.ts): it kills and restarts it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Keyway, type Receiver, sleep, startKeyway, startReceiver } from "./server";

const EVENTS = 40;
/**
 * README, "Webhooks": under npm start a lost message is sent again 10 s after it was due; an
 * attempt cut off in flight is concluded at the end of its lease (30 s + 10 s) and retried by the
 * schedule (5 s). With the restart itself, every delivery must be done within this.
 */
const BOUND_MS = 60_000;

describe("webhooks in a local run", () => {
  let keyway: Keyway | undefined;
  let receiver: Receiver | undefined;
  let persistDir = "";

  afterAll(async () => {
    await keyway?.stop();
    await receiver?.close();
    if (persistDir) await rm(persistDir, { recursive: true, force: true });
  });

  it(`delivers all ${EVENTS} events published just before a crash, after a restart on the same state`, async () => {
    persistDir = await mkdtemp(join(tmpdir(), "keyway-e2e-webhooks-"));
    // The webhook answers after a moment, so some attempts are in flight at the kill.
    receiver = await startReceiver({ delayMs: 150 });
    keyway = await startKeyway({ persistDir });
    const { demo, adminToken } = keyway;
    const base = () => keyway?.baseUrl ?? "";

    // A key that allows a burst (the demo key allows 1 request per second).
    const created = await fetch(`${base()}/admin/v1/organizations/${demo.organizationId}/api-keys`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "burst", limits: { per_second: 100, per_day: 10_000 } }),
    });
    const apiKey = ((await created.json()) as { data: { api_key: string } }).data.api_key;
    const issued = await fetch(`${base()}/v1/oauth`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": apiKey },
      body: JSON.stringify({ client_id: demo.clientId, client_secret: demo.clientSecret, grant_type: "client_credentials" }),
    });
    const token = ((await issued.json()) as { data: { access_token: string } }).data.access_token;
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${base()}${path}`, {
        ...init,
        headers: { "x-api-key": apiKey, Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
      });
    const config = await api("/v1/webhook-configurations", {
      method: "POST",
      body: JSON.stringify({
        url: `${receiver.url}/hook`,
        oauth: { token_url: `${receiver.url}/token`, client_id: "keyway", client_secret: "local-secret" },
      }),
    });
    expect(config.status).toBe(201);

    const deliveries: string[] = [];
    await Promise.all(
      Array.from({ length: EVENTS }, async (_, i) => {
        const res = await api("/v1/events", { method: "POST", body: JSON.stringify({ type: "order.created", data: { n: i } }) });
        expect(res.status).toBe(202);
        deliveries.push(((await res.json()) as { data: { deliveries: { id: string }[] } }).data.deliveries[0]!.id);
      }),
    );
    // restart() sends SIGKILL before its first await, so this counts what arrived before the crash.
    const restarting = keyway.restart({ crash: true });
    keyway = undefined;
    const receivedBeforeCrash = new Set(receiver.ids.keys());
    const restarted = Date.now();
    keyway = await restarting;
    const pending = new Set(deliveries);
    while (pending.size > 0 && Date.now() - restarted < BOUND_MS) {
      for (const id of [...pending]) {
        const res = await api(`/v1/deliveries/${id}`);
        const body = (await res.json()) as { data: { status: string } | null };
        expect(res.status, JSON.stringify(body)).toBe(200);
        if (body.data?.status === "delivered") pending.delete(id);
      }
      if (pending.size > 0) await sleep(1000);
    }
    const took = Date.now() - restarted;
    console.info(
      `webhooks-restart: ${receivedBeforeCrash.size} of ${EVENTS} received before the kill; all delivered ${took} ms after the restart began`,
    );
    expect([...pending]).toEqual([]);
    for (const id of deliveries) expect(receiver.ids.get(id) ?? 0).toBeGreaterThanOrEqual(1);
    // Some were lost with the crash (or the test proves nothing about recovery).
    expect(receivedBeforeCrash.size).toBeLessThan(EVENTS);
  });
});
