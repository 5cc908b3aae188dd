/**
 * Operational webhooks, one per change of state (issue 30, item 4): an endpoint whose circuit
 * opens announces `webhook.endpoint.paused` once, however often it re-opens after a failed probe;
 * its first success afterwards announces `webhook.endpoint.recovered` once; a Retry-After shorter
 * than the notice threshold announces nothing; an operator's disable announces
 * `webhook.endpoint.disabled`, and a push the organization's object did not answer is retried
 * without publishing twice. Attempts are made one by one through the consumer (the pacing is
 * lifted between them: test/webhook-helpers.ts `attemptNow`); the announcements are read as the
 * deliveries they became at the subscribed configuration.
 */

import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { CIRCUIT_THRESHOLD } from "../src/objects/endpoints/policy";
import type { DeliveryRecord } from "../src/schemas/webhooks";
import { fakeNetwork, json, RECEIVER, TOKEN_URL } from "./fake-network";
import { body, createTenant, issueToken, type Tenant, unreachable, withObjectEnv } from "./helpers";
import { api, attemptNow, createConfig, endpointAlarm, endpointOf, inWebhooks } from "./webhook-helpers";

const SECRET = "receiver-secret";
let t: Tenant;
let token: string;

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  vi.spyOn(console, "error").mockImplementation(() => {});
  t = await createTenant();
  token = await issueToken(t);
});

/** The operational events delivered (or owed) to a subscriber, oldest first. */
async function announced(subscriberId: string): Promise<{ type: string; id: string }[]> {
  const res = await api(t, token, `/v1/webhook-configurations/${subscriberId}/deliveries?limit=100`);
  const list = (await body<DeliveryRecord[]>(res)).data;
  return list.map((d) => ({ type: d.event_type, id: d.id })).reverse();
}

async function publishTo(configId: string): Promise<string> {
  const res = await api(t, token, "/v1/events", "POST", { type: "order.created", data: { n: 1 } });
  const json = await body<{ deliveries: { id: string; webhook_configuration_id: string }[] }>(res);
  return json.data.deliveries.find((d) => d.webhook_configuration_id === configId)?.id ?? "";
}

/** Operational events the endpoint's object still owes the organization's. */
const notices = (configId: string) =>
  runInDurableObject(
    endpointOf(configId),
    (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM notices").one().n,
  );

describe("operational webhooks, once per change of state", () => {
  it("a circuit that opens and re-opens announces one pause; the first success after it one recovery", async () => {
    let status = 500;
    fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: "tok", token_type: "Bearer", expires_in: 300 }),
      [`${RECEIVER}/flaky`]: () => new Response(null, { status }),
      [`${RECEIVER}/ops`]: () => new Response(null, { status: 204 }),
    });
    const ops = await createConfig(t, token, SECRET, {
      url: `${RECEIVER}/ops`,
      events: ["webhook.endpoint.paused", "webhook.endpoint.recovered", "webhook.endpoint.disabled"],
      operations: true,
    });
    const flaky = await createConfig(t, token, SECRET, { url: `${RECEIVER}/flaky`, events: ["order.created"] });
    const id = await publishTo(flaky.id);

    // Enough failures to open the circuit, then more: every attempt after the threshold re-opens it.
    for (let i = 0; i < CIRCUIT_THRESHOLD + 3; i++) await attemptNow(t, token, id);
    expect((await announced(ops.id)).map((e) => e.type)).toEqual(["webhook.endpoint.paused"]);

    status = 204;
    await attemptNow(t, token, id);
    const second = await publishTo(flaky.id);
    await attemptNow(t, token, second);
    expect((await announced(ops.id)).map((e) => e.type)).toEqual(["webhook.endpoint.paused", "webhook.endpoint.recovered"]);
    // The subscriber is not the endpoint the events are about, and the endpoint gets none of them.
    const own = (await body<DeliveryRecord[]>(await api(t, token, `/v1/webhook-configurations/${flaky.id}/deliveries`))).data;
    expect(own.every((d) => d.event_type === "order.created")).toBe(true);
  });

  it("a short Retry-After pause announces nothing; an operator's disable announces it once", async () => {
    fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: "tok", token_type: "Bearer", expires_in: 300 }),
      [`${RECEIVER}/busy`]: () => new Response(null, { status: 429, headers: { "Retry-After": "30" } }),
      [`${RECEIVER}/ops2`]: () => new Response(null, { status: 204 }),
    });
    const ops = await createConfig(t, token, SECRET, {
      url: `${RECEIVER}/ops2`,
      events: ["webhook.endpoint.paused", "webhook.endpoint.disabled"],
      operations: true,
    });
    const busy = await createConfig(t, token, SECRET, { url: `${RECEIVER}/busy`, events: ["order.created"] });
    const id = await publishTo(busy.id);
    await attemptNow(t, token, id);
    expect(await announced(ops.id)).toEqual([]);

    await api(t, token, `/v1/webhook-configurations/${busy.id}`, "PATCH", { status: "disabled" });
    await api(t, token, `/v1/webhook-configurations/${busy.id}`, "PATCH", { description: "still disabled" });
    const events = await announced(ops.id);
    expect(events.map((e) => e.type)).toEqual(["webhook.endpoint.disabled"]);
  });

  it("an announcement the organization's object did not take is kept and published once when the alarm retries", async () => {
    fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: "tok", token_type: "Bearer", expires_in: 300 }),
      [`${RECEIVER}/ops3`]: () => new Response(null, { status: 204 }),
      [`${RECEIVER}/later`]: () => new Response(null, { status: 204 }),
    });
    const ops = await createConfig(t, token, SECRET, { url: `${RECEIVER}/ops3`, events: ["webhook.endpoint.disabled"], operations: true });
    const target = await createConfig(t, token, SECRET, { url: `${RECEIVER}/later`, events: ["order.created"] });
    // The endpoint's object cannot reach the organization's WebhookObject to hand its notice over.
    const restore = await withObjectEnv(endpointOf(target.id), (real) => unreachable(real, "WEBHOOKS", "publishOperational"));
    await api(t, token, `/v1/webhook-configurations/${target.id}`, "PATCH", { status: "disabled" });
    expect(await notices(target.id)).toBe(1);
    expect(await announced(ops.id)).toEqual([]);

    await restore();
    await endpointAlarm(target.id);
    await endpointAlarm(target.id);
    expect(await notices(target.id)).toBe(0);
    expect((await announced(ops.id)).map((e) => e.type)).toEqual(["webhook.endpoint.disabled"]);
  });
});

describe("operational events belong to the organization (issue 42, finding 2)", () => {
  it("only an operations configuration may name them or receive one; every other endpoint never hears of another", async () => {
    fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: "tok", token_type: "Bearer", expires_in: 300 }),
      [`${RECEIVER}/ops4`]: () => new Response(null, { status: 204 }),
      [`${RECEIVER}/everything`]: () => new Response(null, { status: 204 }),
      [`${RECEIVER}/gone`]: () => new Response(null, { status: 204 }),
    });
    // Naming an operational type without `operations: true` is refused, naming the entry.
    const refused = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: `${RECEIVER}/sneaky`,
      events: ["order.created", "webhook.endpoint.disabled"],
      oauth: { token_url: TOKEN_URL, client_id: "c", client_secret: SECRET },
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("events.1");
    const ops = await createConfig(t, token, SECRET, { url: `${RECEIVER}/ops4`, events: ["webhook.endpoint.disabled"], operations: true });
    // Every event (events: null) is every event but the operational ones; a PATCH cannot add them either.
    const everything = await createConfig(t, token, SECRET, { url: `${RECEIVER}/everything` });
    const patched = await api(t, token, `/v1/webhook-configurations/${everything.id}`, "PATCH", { events: ["webhook.endpoint.disabled"] });
    expect(patched.status).toBe(400);
    const gone = await createConfig(t, token, SECRET, { url: `${RECEIVER}/gone`, events: ["order.created"] });
    await api(t, token, `/v1/webhook-configurations/${gone.id}`, "PATCH", { status: "disabled" });
    expect((await announced(ops.id)).map((e) => e.type)).toEqual(["webhook.endpoint.disabled"]);
    expect(await announced(everything.id)).toEqual([]);
    // The organization may turn a configuration into an operations one, and back.
    const turned = await api(t, token, `/v1/webhook-configurations/${everything.id}`, "PATCH", {
      operations: true,
      events: ["webhook.endpoint.disabled"],
    });
    expect(turned.status).toBe(200);
    expect((await body<{ operations: boolean }>(turned)).data.operations).toBe(true);
  });
});

describe("operational names from before issue 42 (migration 7 leaves them inert)", () => {
  it("are kept, receive nothing, and do not block a change of the configuration's other types; a new one is refused", async () => {
    fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: "tok", token_type: "Bearer", expires_in: 300 }),
      [`${RECEIVER}/inert`]: () => new Response(null, { status: 204 }),
      [`${RECEIVER}/gone2`]: () => new Response(null, { status: 204 }),
    });
    const inert = await createConfig(t, token, SECRET, { url: `${RECEIVER}/inert`, events: ["order.created"] });
    // As a receiver's portal subscription of issue 30 left it, and migration 7 kept it: named, not an operations configuration.
    await inWebhooks(
      t.orgId,
      "UPDATE configurations SET events = ? WHERE id = ?",
      JSON.stringify(["order.created", "webhook.endpoint.disabled"]),
      inert.id,
    );
    const kept = await api(t, token, `/v1/webhook-configurations/${inert.id}`, "PATCH", {
      events: ["order.created", "order.paid", "webhook.endpoint.disabled"],
    });
    expect(kept.status).toBe(200);
    const added = await api(t, token, `/v1/webhook-configurations/${inert.id}`, "PATCH", {
      events: ["order.created", "webhook.endpoint.disabled", "webhook.delivery.exhausted"],
    });
    expect(added.status).toBe(400);
    expect(await added.text()).toContain("events.2");
    const gone = await createConfig(t, token, SECRET, { url: `${RECEIVER}/gone2`, events: ["order.created"] });
    await api(t, token, `/v1/webhook-configurations/${gone.id}`, "PATCH", { status: "disabled" });
    expect((await announced(inert.id)).filter((e) => e.type.startsWith("webhook."))).toEqual([]);
  });
});
