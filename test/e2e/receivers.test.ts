/**
 * Webhook receivers' way in (issue 30) against a real `npm start`, with receivers on loopback:
 * - an event type with a schema refuses a publish whose `data` breaks it (400 naming the path)
 *   and accepts a valid one; the catalog document parses as OpenAPI 3.1 (a standard parser,
 *   @readme/openapi-parser) with a `webhooks` entry per type;
 * - a receiver that failed for a while comes back and gets every failed delivery of the window
 *   from one `recover` call, each once, while a healthy endpoint beside it keeps its latency
 *   (figures printed: recovery throughput, the healthy endpoint's p50/p95 before and during);
 *   a second call sends nothing;
 * - a 410 produces one `webhook.endpoint.disabled` at a subscribed configuration, verified with
 *   the `standardwebhooks` library.
 * The outage's deliveries end `failed` the way a long outage ends them in production: the endpoint
 * is disabled (there after WEBHOOK_DISABLE_AFTER_SECONDS of failing, at least a minute; here by
 * the organization, so the run takes seconds) and its waiting deliveries conclude without a
 * request. The run's retry schedule is one retry after 1 s (KEYWAY_VAR_WEBHOOK_RETRY_SCHEDULE).
 * It starts its own npm start, not the shared one (server.ts): its retry schedule is a setting of
 * the server.
 */
import { validate } from "@readme/openapi-parser";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envelopeData, type Keyway, operatorCall, type ScriptedReceiver, sleep, startKeyway, startScriptedReceiver } from "./server";

let keyway: Keyway;
const receivers: ScriptedReceiver[] = [];

beforeAll(async () => {
  keyway = await startKeyway({ vars: { WEBHOOK_RETRY_SCHEDULE: "1s" } });
});

afterAll(async () => {
  await keyway?.stop();
  for (const r of receivers) await r.close();
});

const data = envelopeData;
const operator = (method: string, path: string, body?: unknown) => operatorCall(keyway, method, path, body);

type Api = (path: string, init?: RequestInit) => Promise<Response>;

async function tenant(): Promise<Api> {
  const org = await data<{ id: string }>(await operator("POST", "/organizations", { name: "Receivers" }));
  const user = await data<{ id: string }>(await operator("POST", `/organizations/${org.id}/users`, { name: "Ada" }));
  const cred = await data<{ client_id: string; client_secret: string }>(
    await operator("POST", `/organizations/${org.id}/users/${user.id}/client-credentials`, {}),
  );
  const key = await data<{ api_key: string }>(
    await operator("POST", `/organizations/${org.id}/api-keys`, { limits: { per_second: 1000, per_day: 1_000_000 } }),
  );
  const issued = await fetch(`${keyway.baseUrl}/v1/oauth`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": key.api_key },
    body: JSON.stringify({ client_id: cred.client_id, client_secret: cred.client_secret, grant_type: "client_credentials" }),
  });
  const token = (await data<{ access_token: string }>(issued)).access_token;
  return (path, init = {}) =>
    fetch(`${keyway.baseUrl}${path}`, {
      ...init,
      headers: { "x-api-key": key.api_key, Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
    });
}

const post = (api: Api, path: string, body: unknown) => api(path, { method: "POST", body: JSON.stringify(body) });

async function receiverWith(answer: Parameters<typeof startScriptedReceiver>[0]): Promise<ScriptedReceiver> {
  const r = await startScriptedReceiver(answer);
  receivers.push(r);
  return r;
}

async function configure(api: Api, r: ScriptedReceiver, extra: Record<string, unknown> = {}) {
  return data<{ id: string; signing_secret: string }>(
    await post(api, "/v1/webhook-configurations", {
      url: `${r.url}/hook`,
      oauth: { token_url: `${r.url}/token`, client_id: "keyway", client_secret: "receiver-secret" },
      ...extra,
    }),
  );
}

async function until<T>(read: () => Promise<T> | T, done: (v: T) => boolean, what: string, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v).slice(0, 300)}`);
    await sleep(100);
  }
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

describe("the event catalog", () => {
  it("refuses a publish whose data breaks its type's schema, accepts a valid one, and serves an OpenAPI 3.1 catalog", async () => {
    const api = await tenant();
    const schema = {
      type: "object",
      required: ["order_id", "total"],
      properties: { order_id: { type: "string" }, total: { type: "number", minimum: 0 } },
    };
    const created = await post(api, "/v1/event-types", { name: "order.created", schema, examples: [{ order_id: "o-1", total: 5 }] });
    expect(created.status).toBe(201);
    await post(api, "/v1/event-types", { name: "order.cancelled", description: "No schema: any data." });

    const bad = await post(api, "/v1/events", { type: "order.created", data: { order_id: "o-2", total: -3 } });
    const refusal = (await bad.json()) as { error: string; developer_message: string };
    expect(bad.status).toBe(400);
    expect(refusal.error).toBe("invalid_request");
    expect(refusal.developer_message).toContain("data.total");
    expect((await post(api, "/v1/events", { type: "order.created", data: { order_id: "o-2", total: 3 } })).status).toBe(202);

    const doc = (await (await api("/v1/event-catalog")).json()) as { openapi: string; webhooks: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.webhooks)).toEqual(
      expect.arrayContaining(["order.created", "order.cancelled", "webhook.endpoint.disabled", "webhook.delivery.exhausted"]),
    );
    const parsed = await validate(structuredClone(doc) as never);
    expect(parsed.valid, JSON.stringify(parsed)).toBe(true);
  });
});

describe("recovery after an outage", () => {
  it("re-sends every failed delivery of the window once from one call, while a healthy endpoint keeps its latency", async () => {
    const api = await tenant();
    let down = true;
    const outage = await receiverWith(() => ({ status: down ? 503 : 204 }));
    const healthy = await receiverWith(() => ({ status: 204 }));
    // Its rate limit paces the recovery (and everything else sent to it).
    const RATE = 25;
    const broken = await configure(api, outage, { events: ["order.created"], rate_limit: RATE });
    await configure(api, healthy, { events: ["ping.sent"] });

    // The healthy endpoint's publish-to-receipt time, before anything else happens.
    const sentAt = new Map<string, number>();
    const ping = async () => {
      const at = performance.now();
      const event = await data<{ id: string }>(await post(api, "/v1/events", { type: "ping.sent", data: { at } }));
      sentAt.set(event.id, at);
    };
    const latencies = (from: number) =>
      healthy.arrivals
        .filter((a) => a.kind === "webhook" && a.at >= from && sentAt.has(a.eventId))
        .map((a) => a.at - (sentAt.get(a.eventId) ?? a.at));
    const baselineStart = performance.now();
    for (let i = 0; i < 20; i++) {
      await ping();
      await sleep(100);
    }
    await until(
      () => latencies(baselineStart).length,
      (n) => n >= 20,
      "baseline pings",
    );
    const baseline = latencies(baselineStart);

    // The outage: events published while the receiver answers 503.
    const since = new Date(Date.now() - 1000).toISOString();
    const N = 200;
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const event = await data<{ deliveries: { id: string }[] }>(await post(api, "/v1/events", { type: "order.created", data: { n: i } }));
      ids.push(...event.deliveries.map((d) => d.id));
    }
    expect(ids).toHaveLength(N);
    await until(
      () => outage.arrivals.filter((a) => a.kind === "webhook").length,
      (n) => n >= 3,
      "attempts during the outage",
    );
    // Long enough, the endpoint is disabled (keyway does it after the disable period); what it still owed fails without a request.
    await api(`/v1/webhook-configurations/${broken.id}`, { method: "PATCH", body: JSON.stringify({ status: "disabled" }) });
    await until(
      async () => {
        const failed = await data<unknown[]>(await api(`/v1/webhook-configurations/${broken.id}/deliveries?status=failed&limit=100`));
        const open = await data<unknown[]>(await api(`/v1/webhook-configurations/${broken.id}/deliveries?status=retrying&limit=1`));
        const pending = await data<unknown[]>(await api(`/v1/webhook-configurations/${broken.id}/deliveries?status=pending&limit=1`));
        return open.length + pending.length === 0 ? failed : [];
      },
      (failed) => failed.length === 100,
      "every delivery of the outage failed",
    );

    // The receiver is back; the endpoint re-enabled; one recover call.
    down = false;
    await api(`/v1/webhook-configurations/${broken.id}`, { method: "PATCH", body: JSON.stringify({ status: "active" }) });
    const webhooksAt = (r: ScriptedReceiver) => r.arrivals.filter((a) => a.kind === "webhook");
    const before = webhooksAt(outage).length;
    const recoverStart = performance.now();
    const res = await post(api, `/v1/webhook-configurations/${broken.id}/recover`, { since });
    expect(res.status).toBe(202);
    const started = (await res.json()) as { data: { found: number } };
    expect(started.data.found).toBe(N);
    const location = res.headers.get("location") ?? "";
    let pinging = true;
    const pings = (async () => {
      // Stops with the test, whatever its outcome (a failed expectation below ends it too).
      for (const deadline = Date.now() + 120_000; pinging && Date.now() < deadline; ) {
        await ping();
        await sleep(100);
      }
    })();
    // `done` once every failed delivery of the window is handed back to the endpoint's pipeline.
    const progress = await until(
      async () => data<{ status: string; resent: number }>(await api(location)),
      (r) => r.status === "done",
      "the recovery",
    );
    expect(progress.resent).toBe(N);
    await until(
      () =>
        new Set(
          webhooksAt(outage)
            .slice(before)
            .map((a) => a.webhookId),
        ).size,
      (n) => n === N,
      "every recovered delivery received",
    );
    const recoverMs =
      Math.max(
        ...webhooksAt(outage)
          .slice(before)
          .map((a) => a.at),
      ) - recoverStart;
    pinging = false;
    await pings;
    await sleep(1000);
    const during = latencies(recoverStart).filter((l) => l < 60_000);

    // Each once, and a second call sends nothing.
    const received = webhooksAt(outage)
      .slice(before)
      .map((a) => a.webhookId);
    expect(received.sort()).toEqual([...ids].sort());
    const again = await data<{ found: number; resent: number }>(
      await post(api, `/v1/webhook-configurations/${broken.id}/recover`, { since }),
    );
    expect(again).toMatchObject({ found: 0, resent: 0 });
    await sleep(1500);
    expect(webhooksAt(outage).length).toBe(before + N);

    const figures = {
      recovered: N,
      recover_ms: Math.round(recoverMs),
      recover_per_s: Math.round((N / recoverMs) * 1000 * 10) / 10,
      healthy_before_p50_ms: Math.round(percentile(baseline, 50)),
      healthy_before_p95_ms: Math.round(percentile(baseline, 95)),
      healthy_during_p50_ms: Math.round(percentile(during, 50)),
      healthy_during_p95_ms: Math.round(percentile(during, 95)),
      healthy_during_samples: during.length,
    };
    console.log(`recovery beside a healthy endpoint: ${JSON.stringify(figures)}`);
    expect(during.length).toBeGreaterThan(20);
    // Paced by the endpoint's rate limit: never more than RATE a second (a little over a second of slack).
    expect(N / (recoverMs / 1000)).toBeLessThanOrEqual(RATE * 1.1);
  });
});

describe("operational webhooks", () => {
  it("a 410 produces one webhook.endpoint.disabled at a subscribed configuration", async () => {
    const api = await tenant();
    const ops = await receiverWith(() => ({ status: 204 }));
    const gone = await receiverWith(() => ({ status: 410 }));
    const everything = await receiverWith(() => ({ status: 204 }));
    const subscriber = await configure(api, ops, { events: ["webhook.endpoint.disabled", "webhook.endpoint.recovered"], operations: true });
    const target = await configure(api, gone, { events: ["order.created"] });
    await configure(api, everything);

    await post(api, "/v1/events", { type: "order.created", data: { n: 1 } });
    await post(api, "/v1/events", { type: "order.created", data: { n: 2 } });
    await until(
      async () => (await data<{ status: string }>(await api(`/v1/webhook-configurations/${target.id}`))).status,
      (s) => s === "disabled",
      "the 410's disable",
    );
    const disabled = await until(
      () => ops.arrivals.filter((a) => a.eventType === "webhook.endpoint.disabled"),
      (list) => list.length >= 1,
      "webhook.endpoint.disabled at the subscriber",
    );
    await sleep(2000);
    expect(ops.arrivals.filter((a) => a.eventType === "webhook.endpoint.disabled")).toHaveLength(1);
    const event = JSON.parse(disabled[0]?.body ?? "{}") as { data: { webhook_configuration_id: string; reason: string } };
    expect(event.data.webhook_configuration_id).toBe(target.id);
    expect(event.data.reason).toContain("410");
    expect(() => new Webhook(subscriber.signing_secret).verify(disabled[0]?.body ?? "", disabled[0]?.headers ?? {})).not.toThrow();
    expect(disabled[0]?.authorization).toMatch(/^Bearer tok-/);
    // "Every event" means the organization's events, not keyway's own.
    expect(everything.arrivals.filter((a) => a.eventType?.startsWith("webhook.")).length).toBe(0);
  }, 60_000);
});
