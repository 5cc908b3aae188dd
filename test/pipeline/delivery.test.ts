/**
 * The webhook pipeline end to end on the real Queue and its consumer (this project's schedule is
 * 1 s, 1 s and its recovery bound 1 s): a published event reaches the receiver; a failing
 * receiver gets its retries from the object's schedule; and nothing published is lost when the
 * Queue refuses the messages (a crash between commit and send) or accepts and then loses them.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { DeliveryRecord } from "../../src/schemas/webhooks";
import { fakeNetwork, receiver, WEBHOOK_URL } from "../fake-network";
import { createTenant, issueToken, type Tenant } from "../helpers";
import { api, createConfig, endpointOf, getDelivery } from "../webhook-helpers";

const SECRET = "pipeline-receiver-secret";
let t: Tenant;
let token: string;

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  vi.spyOn(console, "error").mockImplementation(() => {});
  t = await createTenant();
  token = await issueToken(t);
});

async function waitFor(id: string, until: (d: DeliveryRecord) => boolean, ms = 20_000): Promise<DeliveryRecord> {
  const deadline = Date.now() + ms;
  for (;;) {
    const d = await getDelivery(t, token, id);
    if (until(d)) return d;
    if (Date.now() > deadline) throw new Error(`delivery ${id} stuck at ${d.status}: ${JSON.stringify(d.attempts)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function publish(configId: string): Promise<string> {
  const res = await api(t, token, `/v1/webhook-configurations/${configId}/test`, "POST");
  return ((await res.json()) as { data: { deliveries: { id: string }[] } }).data.deliveries[0]!.id;
}

/** Replaces the endpoint object's Queue bindings, all three lanes (fault injection), until the returned function restores them. */
async function queueOfObject(configId: string, queue: Partial<Queue>) {
  await runInDurableObject(endpointOf(configId), (instance: unknown) => {
    const self = instance as { env: Env };
    const lanes = { WEBHOOK_QUEUE: queue, WEBHOOK_QUEUE_NEW: queue, WEBHOOK_QUEUE_SLOW: queue };
    Object.defineProperty(instance, "env", { value: { ...self.env, ...lanes }, configurable: true });
  });
  return () =>
    runInDurableObject(endpointOf(configId), (instance: unknown) => {
      Object.defineProperty(instance, "env", { value: env, configurable: true });
    });
}

describe("the real Queue", () => {
  it("carries a published event to the receiver, signed, with a token from the receiver", async () => {
    const config = await createConfig(t, token, SECRET);
    const sent = fakeNetwork(receiver({ token: "pipeline-token" }));
    const id = await publish(config.id);
    const d = await waitFor(id, (x) => x.status === "delivered");
    expect(d.attempts).toEqual([expect.objectContaining({ number: 1, outcome: "delivered", http_status: 204 })]);
    const webhook = sent.find((s) => s.url === WEBHOOK_URL && s.headers["webhook-id"] === id)!;
    expect(webhook.headers.authorization).toBe("Bearer pipeline-token");
    expect(() => new Webhook(config.signing_secret).verify(webhook.body, webhook.headers)).not.toThrow();
  });

  it("retries a failing receiver by the object's schedule until it answers", async () => {
    const config = await createConfig(t, token, SECRET, { url: "https://receiver.example/flaky" });
    let calls = 0;
    fakeNetwork({ ...receiver(), "https://receiver.example/flaky": () => new Response(null, { status: ++calls < 3 ? 503 : 204 }) });
    const id = await publish(config.id);
    const d = await waitFor(id, (x) => x.status === "delivered");
    expect(d.attempts.map((a) => [a.number, a.outcome, a.http_status])).toEqual([
      [1, "retry", 503],
      [2, "retry", 503],
      [3, "delivered", 204],
    ]);
  });
});

describe("nothing published is lost", () => {
  it("sends the messages once the Queue works again, when it refused them at publish time (a crash between commit and send)", async () => {
    const config = await createConfig(t, token, SECRET);
    fakeNetwork(receiver());
    const restore = await queueOfObject(config.id, {
      send: () => Promise.reject(new Error("queue down")),
      sendBatch: () => Promise.reject(new Error("queue down")),
    });
    const id = await publish(config.id);
    await new Promise((r) => setTimeout(r, 300));
    expect((await getDelivery(t, token, id)).status).toBe("pending");
    await restore();
    await waitFor(id, (x) => x.status === "delivered");
  });

  it("sends again a message the Queue accepted and then lost", async () => {
    const config = await createConfig(t, token, SECRET);
    fakeNetwork(receiver());
    const lost = { metadata: {} } as unknown as QueueSendBatchResponse;
    const restore = await queueOfObject(config.id, { sendBatch: () => Promise.resolve(lost) });
    const id = await publish(config.id);
    await restore();
    const d = await waitFor(id, (x) => x.status === "delivered");
    expect(d.attempts).toHaveLength(1);
  });
});
