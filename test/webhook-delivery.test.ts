/**
 * The Queue consumer, message by message: every failure mode of the receiver's token endpoint
 * and webhook URL, the retry policy (backoff, Retry-After, 410, 3xx, 4xx), per-message acks in a
 * batch, dead-lettering, the opt-in token cache, and secrets kept out of logs and records.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { DeliveryMessage, DeliveryRecord } from "../src/schemas/webhooks";
import { backoffSeconds, DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { consume, fakeNetwork, type Handler, json, never, RECEIVER, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";

const RECEIVER_SECRET = "receiver-secret-must-never-appear";
const logged: string[] = [];
let t: Tenant;
let token: string;

beforeAll(async () => {
  for (const level of ["log", "info", "warn", "error"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    });
  }
  t = await createTenant();
  token = await issueToken(t);
});

async function newConfig(extra: Record<string, unknown> = {}): Promise<{ id: string; signing_secret: string }> {
  const res = await call(
    "/v1/webhook-configurations",
    authed(t, token, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        url: WEBHOOK_URL,
        oauth: { token_url: TOKEN_URL, client_id: "kw", client_secret: RECEIVER_SECRET },
        ...extra,
      }),
    }),
  );
  expect(res.status).toBe(201);
  return (await body<{ id: string; signing_secret: string }>(res)).data;
}

let counter = 0;
function message(configId: string, overrides: Partial<DeliveryMessage> = {}): DeliveryMessage {
  counter++;
  return {
    v: 1,
    delivery_id: `msg_${String(counter).padStart(26, "0")}`,
    organization_id: t.orgId,
    webhook_configuration_id: configId,
    event_id: `evt_${String(counter).padStart(26, "0")}`,
    event_type: "order.created",
    body: JSON.stringify({ id: "evt", type: "order.created", created_at: new Date().toISOString(), data: { n: counter } }),
    created_at: new Date().toISOString(),
    ...overrides,
  };
}

async function deliverOnce(m: DeliveryMessage, attempts = 1, overrides: Partial<Env> = {}) {
  const outcome = await consume(DELIVERY_QUEUE, [{ id: m.delivery_id, attempts, body: m }], overrides);
  const record = JSON.parse((await env.KV.get(`delivery:${m.organization_id}:${m.delivery_id}`))!) as DeliveryRecord;
  return { outcome, record, last: record.attempts.at(-1)! };
}

const tokenRoute = (handler: Handler) => ({ ...receiver(), [TOKEN_URL]: handler });
const webhookRoute = (handler: Handler) => ({ ...receiver(), [WEBHOOK_URL]: handler });

describe("a misconfigured consumer", () => {
  it("fails the batch (so the Queue retries it) and logs which setting is wrong, never its value", async () => {
    const config = await newConfig();
    const before = logged.length;
    await expect(
      consume(DELIVERY_QUEUE, [{ id: "m-misconfigured", attempts: 1, body: message(config.id) }], { WEBHOOK_ENCRYPTION_KEYS: "" }),
    ).rejects.toThrow();
    const lines = logged.slice(before).join("\n");
    expect(lines).toContain("queue batch failed");
    expect(lines).toContain("WEBHOOK_ENCRYPTION_KEYS");
  });
});

describe("token endpoint failures are retried with backoff and never reach the webhook URL", () => {
  let configId: string;
  beforeAll(async () => {
    configId = (await newConfig()).id;
  });

  it.each<[string, Handler, RegExp, number | null]>([
    [
      "a 500 with a message (spec 2.4)",
      () => json({ message: "database down", description: "try later" }, 500),
      /token endpoint answered 500: database down - try later/,
      500,
    ],
    [
      "an HTML page",
      () => new Response("<html>login</html>", { headers: { "Content-Type": "text/html" } }),
      /did not answer a JSON object/,
      200,
    ],
    ["JSON without access_token", () => json({ token_type: "Bearer" }), /without a non-empty string access_token/, 200],
    ["an empty access_token", () => json({ access_token: "" }), /without a non-empty string access_token/, 200],
    ["non-JSON text", () => new Response("ok"), /did not answer a JSON object/, 200],
    [
      "a 401 that echoes our secret",
      () => json({ message: `bad secret ${RECEIVER_SECRET}` }, 401),
      /answered 401: bad secret \[redacted\]/,
      401,
    ],
    ["a redirect loop", () => new Response(null, { status: 307, headers: { Location: TOKEN_URL } }), /redirected more than 5 times/, 307],
    [
      "a 307 to another origin",
      () => new Response(null, { status: 307, headers: { Location: "https://evil.example/steal" } }),
      /redirected to another origin; credentials are not forwarded/,
      307,
    ],
    [
      "a redirect to a private address",
      () => new Response(null, { status: 302, headers: { Location: "https://10.0.0.7/token" } }),
      /token endpoint refused: url points to a private address/,
      null,
    ],
    [
      "a redirect to the metadata address",
      () => new Response(null, { status: 301, headers: { Location: "http://169.254.169.254/latest/meta-data" } }),
      /token endpoint refused: url must use https/,
      null,
    ],
    [
      "an unreachable host",
      () => Promise.reject(new TypeError("Network connection lost.")),
      /could not be reached \(network error\)/,
      null,
    ],
  ])("%s", async (_name, handler, error, httpStatus) => {
    const sent = fakeNetwork(tokenRoute(handler));
    const m = message(configId);
    const { outcome, record, last } = await deliverOnce(m);
    expect(outcome.acked).toEqual([]);
    expect(outcome.retried).toHaveLength(1);
    expect(outcome.retried[0]!.delaySeconds).toBeGreaterThanOrEqual(24);
    expect(outcome.retried[0]!.delaySeconds).toBeLessThanOrEqual(36);
    expect(record.status).toBe("retrying");
    expect(record.next_attempt_at).not.toBeNull();
    expect(last).toMatchObject({ number: 1, step: "token", outcome: "retry", http_status: httpStatus });
    expect(last.error).toMatch(error);
    expect(sent.some((s) => s.url === WEBHOOK_URL)).toBe(false);
    expect(sent.some((s) => s.url.startsWith("https://evil.example") || s.url.includes("10.0.0.7") || s.url.includes("169.254"))).toBe(
      false,
    );
  });

  it("follows at most 5 redirects (6 requests)", async () => {
    const sent = fakeNetwork(tokenRoute(() => new Response(null, { status: 308, headers: { Location: `${TOKEN_URL}?again` } })));
    await deliverOnce(message(configId));
    expect(sent.filter((s) => s.url.startsWith(TOKEN_URL))).toHaveLength(6);
  });

  it("follows a same-origin 307 with the credentials, and a 303 elsewhere as a GET without them", async () => {
    const moved = `${RECEIVER}/v2/token`;
    const other = "https://tokens.example/issue";
    const sent = fakeNetwork({
      [TOKEN_URL]: () => new Response(null, { status: 307, headers: { Location: "/v2/token" } }),
      [moved]: () => new Response(null, { status: 303, headers: { Location: other } }),
      [other]: () => json({ access_token: "via-get" }),
      [WEBHOOK_URL]: () => new Response(null, { status: 200 }),
    });
    const { outcome } = await deliverOnce(message(configId));
    expect(outcome.acked).toHaveLength(1);
    const [first, second, third, webhook] = sent;
    expect(second).toMatchObject({ method: "POST", url: moved, body: first!.body });
    expect(third).toMatchObject({ method: "GET", url: other, body: "" });
    expect(JSON.stringify(third)).not.toContain(RECEIVER_SECRET);
    expect(webhook!.headers.authorization).toBe("Bearer via-get");
  });

  it("times out a slow token endpoint", async () => {
    fakeNetwork(tokenRoute(never));
    const { last } = await deliverOnce(message(configId), 1, { WEBHOOK_TIMEOUT_SECONDS: "1" });
    expect(last.error).toBe("token endpoint timed out after 1 s");
  });

  it("refuses a token response over 64 KiB", async () => {
    fakeNetwork(tokenRoute(() => json({ access_token: "x".repeat(70_000) })));
    const { last } = await deliverOnce(message(configId));
    expect(last.error).toMatch(/answered more than 65536 bytes/);
  });
});

describe("webhook URL outcomes", () => {
  let configId: string;
  beforeAll(async () => {
    configId = (await newConfig()).id;
  });

  it.each([200, 201, 202, 204])("treats %i as delivered and acks", async (status) => {
    fakeNetwork(webhookRoute(() => new Response(status === 204 ? null : "thanks", { status })));
    const { outcome, record, last } = await deliverOnce(message(configId));
    expect(outcome.acked).toHaveLength(1);
    expect(record.status).toBe("delivered");
    expect(last).toMatchObject({ step: "webhook", http_status: status, outcome: "delivered", error: null });
  });

  it.each([500, 502, 503, 408])("retries a %i with backoff", async (status) => {
    fakeNetwork(webhookRoute(() => new Response(null, { status })));
    const { outcome, last } = await deliverOnce(message(configId), 3);
    expect(outcome.retried).toHaveLength(1);
    // Third attempt: 30 s x 2^2 = 120 s, +-20%.
    expect(outcome.retried[0]!.delaySeconds).toBeGreaterThanOrEqual(96);
    expect(outcome.retried[0]!.delaySeconds).toBeLessThanOrEqual(144);
    expect(last).toMatchObject({ number: 3, step: "webhook", http_status: status, outcome: "retry" });
  });

  it("honours Retry-After on a 429", async () => {
    fakeNetwork(webhookRoute(() => new Response(null, { status: 429, headers: { "Retry-After": "600" } })));
    const { outcome } = await deliverOnce(message(configId));
    expect(outcome.retried[0]!.delaySeconds).toBe(600);
  });

  it("retries a timeout", async () => {
    fakeNetwork(webhookRoute(never));
    const { outcome, last } = await deliverOnce(message(configId), 1, { WEBHOOK_TIMEOUT_SECONDS: "1" });
    expect(outcome.retried).toHaveLength(1);
    expect(last).toMatchObject({ step: "webhook", http_status: null, error: "webhook URL timed out after 1 s" });
  });

  it("fails a 3xx without following it", async () => {
    const sent = fakeNetwork(
      webhookRoute(() => new Response(null, { status: 301, headers: { Location: "https://receiver.example/new" } })),
    );
    const { outcome, record, last } = await deliverOnce(message(configId));
    expect(outcome.acked).toHaveLength(1);
    expect(record.status).toBe("failed");
    expect(last.error).toBe("webhook URL answered 301; redirects are not followed");
    expect(sent.some((s) => s.url === "https://receiver.example/new")).toBe(false);
  });

  it.each([400, 401, 404, 422])("fails a %i without retrying", async (status) => {
    fakeNetwork(webhookRoute(() => new Response(null, { status })));
    const { outcome, record } = await deliverOnce(message(configId));
    expect(outcome).toEqual({ acked: [expect.any(String)], retried: [] });
    expect(record.status).toBe("failed");
  });

  it("disables the configuration on 410 Gone", async () => {
    const gone = (await newConfig()).id;
    fakeNetwork(webhookRoute(() => new Response(null, { status: 410 })));
    const { outcome, record } = await deliverOnce(message(gone));
    expect(outcome.acked).toHaveLength(1);
    expect(record.status).toBe("failed");
    const config = await body<{ status: string; disabled_reason: string }>(
      await call(`/v1/webhook-configurations/${gone}`, authed(t, token)),
    );
    expect(config.data).toMatchObject({ status: "disabled", disabled_reason: "the webhook URL answered 410 Gone" });
    // Later deliveries to it fail at once, without any request.
    const sent = fakeNetwork(receiver());
    const next = await deliverOnce(message(gone));
    expect(next.last).toMatchObject({ step: "configuration", error: "webhook configuration is disabled" });
    expect(sent).toEqual([]);
  });

  it("acks each message of a batch on its own: one failure of ten is the only retry", async () => {
    const messages = Array.from({ length: 10 }, () => message(configId));
    const failing = messages[6]!.delivery_id;
    fakeNetwork(webhookRoute((req) => new Response(null, { status: req.headers["webhook-id"] === failing ? 500 : 204 })));
    const outcome = await consume(
      DELIVERY_QUEUE,
      messages.map((m) => ({ id: m.delivery_id, attempts: 1, body: m })),
    );
    expect(outcome.retried.map((r) => r.msgId)).toEqual([failing]);
    expect(outcome.acked.sort()).toEqual(
      messages
        .map((m) => m.delivery_id)
        .filter((id) => id !== failing)
        .sort(),
    );
  });
});

describe("exhaustion and the dead-letter queue", () => {
  it("marks the delivery failed on the last attempt and lets the Queue dead-letter it", async () => {
    const configId = (await newConfig()).id;
    fakeNetwork(webhookRoute(() => new Response(null, { status: 503 })));
    const m = message(configId);
    const { outcome, record, last } = await deliverOnce(m, 9); // WEBHOOK_MAX_RETRIES = 8
    expect(outcome.retried).toHaveLength(1); // the Queue moves it to the DLQ instead of retrying
    expect(record.status).toBe("failed");
    expect(last).toMatchObject({ number: 9, outcome: "failed", error: "webhook URL answered 503; retries exhausted" });
  });

  it("records dead-lettered deliveries as failed", async () => {
    const configId = (await newConfig()).id;
    fakeNetwork(webhookRoute(() => new Response(null, { status: 500 })));
    const m = message(configId);
    await deliverOnce(m, 2);
    const dlq = await consume(DEAD_LETTER_QUEUE, [{ id: "d1", attempts: 1, body: m }]);
    expect(dlq.acked).toEqual(["d1"]);
    const record = JSON.parse((await env.KV.get(`delivery:${t.orgId}:${m.delivery_id}`))!) as DeliveryRecord;
    expect(record).toMatchObject({ status: "failed", next_attempt_at: null });
    expect(record.attempts).toHaveLength(1);
  });

  it("records a dead letter even when the delivery record is not visible yet", async () => {
    const m = message("whk_00000000000000000000000000");
    await consume(DEAD_LETTER_QUEUE, [{ id: "d2", attempts: 1, body: m }]);
    const record = JSON.parse((await env.KV.get(`delivery:${t.orgId}:${m.delivery_id}`))!) as DeliveryRecord;
    expect(record).toMatchObject({ id: m.delivery_id, status: "failed", webhook_configuration_id: "whk_00000000000000000000000000" });
  });
});

describe("configuration lookups", () => {
  it("waits for a configuration that may not have propagated yet, then gives up on a deleted one", async () => {
    fakeNetwork(receiver());
    const young = await deliverOnce(message("whk_11111111111111111111111111"));
    expect(young.outcome.retried[0]!.delaySeconds).toBeGreaterThanOrEqual(30);
    expect(young.last).toMatchObject({ step: "configuration", outcome: "retry" });
    const old = await deliverOnce(message("whk_11111111111111111111111111", { created_at: new Date(Date.now() - 3600_000).toISOString() }));
    expect(old.outcome.acked).toHaveLength(1);
    expect(old.last).toMatchObject({ outcome: "failed", error: "webhook configuration was deleted" });
  });

  it("drops a malformed message with a log line instead of retrying it forever", async () => {
    const outcome = await consume(DELIVERY_QUEUE, [{ id: "bad", attempts: 1, body: { hello: "world" } as unknown as DeliveryMessage }]);
    expect(outcome).toEqual({ acked: ["bad"], retried: [] });
    expect(logged.some((l) => l.includes("malformed delivery message dropped"))).toBe(true);
  });
});

describe("token cache (opt-in)", () => {
  it("requests a token before every webhook by default (spec 4.3)", async () => {
    const configId = (await newConfig()).id;
    const sent = fakeNetwork(receiver());
    await deliverOnce(message(configId));
    await deliverOnce(message(configId));
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(2);
  });

  it("reuses the token until 60 s before expires_in when token_cache is on", async () => {
    const configId = (await newConfig({ token_cache: true })).id;
    const sent = fakeNetwork(receiver({ expiresIn: 3600 }));
    for (let i = 0; i < 3; i++) await deliverOnce(message(configId));
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(1);
    expect(sent.filter((s) => s.url === WEBHOOK_URL)).toHaveLength(3);
  });

  it("does not cache a token that expires within the refresh margin", async () => {
    const configId = (await newConfig({ token_cache: true })).id;
    const sent = fakeNetwork(receiver({ expiresIn: 30 }));
    await deliverOnce(message(configId));
    await deliverOnce(message(configId));
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(2);
  });
});

describe("backoff", () => {
  it("doubles from 30 s with +-20% jitter and caps at 12 h", () => {
    expect([1, 2, 3, 4].map((n) => backoffSeconds(n, () => 0.5))).toEqual([30, 60, 120, 240]);
    expect(backoffSeconds(1, () => 0)).toBe(24);
    expect(backoffSeconds(1, () => 1)).toBe(36);
    expect(backoffSeconds(30, () => 1)).toBe(43_200);
  });
});

afterAll(() => {
  // Nothing secret reached a log line or a delivery record.
  const all = logged.join("\n");
  expect(all).not.toContain(RECEIVER_SECRET);
  expect(all).not.toContain("receiver-token-1");
});
