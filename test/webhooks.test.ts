/**
 * Webhook configurations and events through the REST API, and the full path publish -> Queue ->
 * token request -> signed webhook, with both outbound requests asserted byte for byte and the
 * signature verified by the reference `standardwebhooks` library.
 */
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import type { DeliveryRecord } from "../src/schemas/webhooks";
import { DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { consume, fakeNetwork, receiver, type Sent, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";

const RECEIVER_SECRET = "receiver-client-secret-do-not-leak";

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
});

const api = (tenant: Tenant, bearer: string, path: string, method = "GET", payload?: unknown) =>
  call(
    path,
    authed(tenant, bearer, {
      method,
      ...(payload !== undefined ? { body: JSON.stringify(payload), headers: { "Content-Type": "application/json" } } : {}),
    }),
  );

const configInput = (overrides: Record<string, unknown> = {}) => ({
  url: WEBHOOK_URL,
  description: "orders",
  oauth: { token_url: TOKEN_URL, client_id: "keyway-at-receiver", client_secret: RECEIVER_SECRET },
  ...overrides,
});

async function createConfig(overrides: Record<string, unknown> = {}, tenant = t, bearer = token) {
  const res = await api(tenant, bearer, "/v1/webhook-configurations", "POST", configInput(overrides));
  const json = await body<Record<string, unknown> & { id: string; signing_secret: string }>(res);
  expect(res.status, JSON.stringify(json)).toBe(201);
  return json.data;
}

async function waitForDelivery(id: string, until: (d: DeliveryRecord) => boolean, tenant = t, bearer = token): Promise<DeliveryRecord> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await api(tenant, bearer, `/v1/deliveries/${id}`);
    const record = (await body<DeliveryRecord>(res)).data;
    if (until(record)) return record;
    if (Date.now() > deadline) throw new Error(`delivery ${id} stuck at ${record.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("webhook configurations", () => {
  it("creates a configuration: 201, a whsec_ signing secret shown once, the client secret never", async () => {
    const res = await api(t, token, "/v1/webhook-configurations", "POST", configInput({ events: ["order.created"] }));
    expect(res.status).toBe(201);
    const created = (await body<Record<string, unknown>>(res)).data;
    expect(created).toMatchObject({
      id: expect.stringMatching(/^whk_/),
      organization_id: t.orgId,
      url: WEBHOOK_URL,
      events: ["order.created"],
      description: "orders",
      oauth: { token_url: TOKEN_URL, client_id: "keyway-at-receiver" },
      token_cache: false,
      status: "active",
      signing_secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(res.headers.get("location")).toBe(`/v1/webhook-configurations/${created.id as string}`);
    const shown = [
      JSON.stringify(created),
      await (await api(t, token, `/v1/webhook-configurations/${created.id as string}`)).text(),
      await (await api(t, token, "/v1/webhook-configurations")).text(),
    ];
    for (const text of shown) expect(text).not.toContain(RECEIVER_SECRET);
    expect(shown[1]).not.toContain(created.signing_secret as string);
    expect(shown[2]).not.toContain(created.signing_secret as string);
    expect(shown[1]).not.toContain('signing_secret"');
  });

  it("stores the receiver's client secret and the signing secret only encrypted", async () => {
    const created = await createConfig();
    const stored = await env.KV.get(`webhook:${t.orgId}:${created.id}`);
    expect(stored).not.toBeNull();
    expect(stored).not.toContain(RECEIVER_SECRET);
    expect(stored).not.toContain(created.signing_secret.slice("whsec_".length));
    expect(JSON.parse(stored!).oauth.client_secret).toMatchObject({ kid: "e2", iv: expect.any(String), ct: expect.any(String) });
  });

  it.each([
    ["an http URL", { url: "http://receiver.example/webhooks" }, /url: url must use https/],
    ["a loopback URL", { url: "https://127.0.0.1/webhooks" }, /url: url points to a loopback address/],
    [
      "a metadata token URL",
      { oauth: { token_url: "https://169.254.169.254/latest", client_id: "a", client_secret: "b" } },
      /oauth.token_url: url points to a link-local/,
    ],
    ["a URL with credentials", { url: "https://user:pw@receiver.example/x" }, /url must not contain credentials/],
    ["no oauth", { oauth: undefined }, /oauth is required/],
    [
      "an empty client secret",
      { oauth: { token_url: TOKEN_URL, client_id: "a", client_secret: "" } },
      /oauth.client_secret must not be empty/,
    ],
    ["a bad event type", { events: ["Order Created"] }, /events.0 must be dot-separated/],
    ["an unknown field", { retries: 3 }, /unknown field retries/],
  ])("refuses %s with 400", async (_name, overrides, message) => {
    const res = await api(t, token, "/v1/webhook-configurations", "POST", configInput(overrides));
    expect(res.status).toBe(400);
    const json = await body(res);
    expect(json.error).toBe("invalid_request");
    expect(json.developer_message).toMatch(message);
  });

  it("updates, disables and deletes a configuration", async () => {
    const created = await createConfig();
    const path = `/v1/webhook-configurations/${created.id}`;
    const patched = await body<Record<string, unknown>>(
      await api(t, token, path, "PATCH", { events: ["a.b"], description: null, status: "disabled" }),
    );
    expect(patched.data).toMatchObject({
      events: ["a.b"],
      description: null,
      status: "disabled",
      disabled_reason: "disabled through the API",
    });
    expect((await api(t, token, path, "PATCH", { url: "https://10.0.0.1/x" })).status).toBe(400);
    expect((await api(t, token, path, "DELETE")).status).toBe(200);
    expect((await api(t, token, path)).status).toBe(404);
  });

  it("keeps organizations apart: another organization's configuration is not found", async () => {
    const created = await createConfig();
    const other = await createTenant();
    const otherToken = await issueToken(other);
    const path = `/v1/webhook-configurations/${created.id}`;
    for (const [method, suffix, payload] of [
      ["GET", "", undefined],
      ["PATCH", "", { description: "mine now" }],
      ["DELETE", "", undefined],
      ["POST", "/test", undefined],
      ["POST", "/rotate-signing-secret", undefined],
      ["GET", "/deliveries", undefined],
    ] as const) {
      const res = await api(other, otherToken, `${path}${suffix}`, method, payload);
      expect(res.status, `${method} ${suffix}`).toBe(404);
    }
    const list = await body<unknown[]>(await api(other, otherToken, "/v1/webhook-configurations"));
    expect(list.data).toEqual([]);
    // And publishing in the other organization delivers nothing to this one.
    const published = await body<{ deliveries: unknown[] }>(
      await api(other, otherToken, "/v1/events", "POST", { type: "order.created", data: {} }),
    );
    expect(published.data.deliveries).toEqual([]);
  });

  it("needs the access token: no token is a 401 before any work", async () => {
    const res = await call("/v1/webhook-configurations", { method: "POST", headers: { "x-api-key": t.apiKey } });
    expect(res.status).toBe(401);
  });
});

describe("events", () => {
  it("creates one delivery per matching configuration; a configuration without events matches all", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const all = await createConfig({}, tenant, bearer);
    const orders = await createConfig({ events: ["order.created"] }, tenant, bearer);
    await createConfig({ events: ["invoice.paid"] }, tenant, bearer);
    const paused = await createConfig({}, tenant, bearer);
    await api(tenant, bearer, `/v1/webhook-configurations/${paused.id}`, "PATCH", { status: "disabled" });

    fakeNetwork(receiver());
    const res = await api(tenant, bearer, "/v1/events", "POST", { type: "order.created", data: { order: 1 } });
    expect(res.status).toBe(202);
    const published = (await body<{ id: string; deliveries: { webhook_configuration_id: string; status: string }[] }>(res)).data;
    expect(published.id).toMatch(/^evt_/);
    expect(published.deliveries.map((d) => d.webhook_configuration_id).sort()).toEqual([all.id, orders.id].sort());
    expect(published.deliveries.every((d) => d.status === "pending")).toBe(true);
  });

  it.each([
    ["a missing type", { data: {} }, 400, /type is required/],
    ["missing data", { type: "a.b" }, 400, /data is required/],
    ["a type with spaces", { type: "a b", data: {} }, 400, /type must be dot-separated/],
    ["a request body over the cap", { type: "a.b", data: "x".repeat(101 * 1024) }, 413, /exceeds 103424 bytes/],
    ["an event over 100 KiB once serialized", { type: "a.b", data: "x".repeat(102_350) }, 413, /once serialized; the limit is 102400/],
  ])("refuses %s", async (_name, payload, status, message) => {
    const res = await api(t, token, "/v1/events", "POST", payload);
    expect(res.status).toBe(status);
    expect((await body(res)).developer_message).toMatch(message);
  });
});

describe("the full path: publish -> queue -> token request -> webhook", () => {
  it("fetches a token with a form-encoded client-credentials grant, then sends the signed webhook with it", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const oauth = { token_url: TOKEN_URL, client_id: "full-path-client", client_secret: RECEIVER_SECRET };
    const config = await createConfig({ events: ["order.created"], oauth }, tenant, bearer);
    const sent = fakeNetwork(receiver({ token: "tok-from-receiver" }));
    const res = await api(tenant, bearer, "/v1/events", "POST", { type: "order.created", data: { order_id: "1234", total: "9.99" } });
    const published = (await body<{ id: string; deliveries: { id: string }[] }>(res)).data;
    expect(published.deliveries).toHaveLength(1);
    const deliveryId = published.deliveries[0]!.id;

    // The real Queue delivers the message to the Worker's consumer.
    const delivered = await waitForDelivery(deliveryId, (d) => d.status !== "pending", tenant, bearer);
    expect(delivered).toMatchObject({
      status: "delivered",
      attempts: [{ number: 1, step: "webhook", http_status: 204, outcome: "delivered", error: null }],
    });

    // Deliveries left over from earlier tests may share the fake receiver: pick this test's.
    const tokenRequests = sent.filter((s) => s.url === TOKEN_URL && s.body.includes("full-path-client"));
    const webhooks = sent.filter((s) => s.url === WEBHOOK_URL && s.headers["webhook-id"] === deliveryId);
    expect(tokenRequests).toHaveLength(1);
    expect(webhooks).toHaveLength(1);
    const [tokenRequest, webhook] = [tokenRequests[0], webhooks[0]];
    // Spec 4.3, byte for byte.
    expect(tokenRequest).toMatchObject({ method: "POST", url: TOKEN_URL });
    expect(tokenRequest!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(tokenRequest!.body).toBe(`client_id=full-path-client&client_secret=${RECEIVER_SECRET}&grant_type=client_credentials`);
    expect(tokenRequest!.headers.authorization).toBeUndefined();

    expect(webhook).toMatchObject({ method: "POST", url: WEBHOOK_URL });
    expect(webhook!.headers).toMatchObject({
      authorization: "Bearer tok-from-receiver",
      "content-type": "application/json",
      "webhook-id": deliveryId,
      "webhook-timestamp": expect.stringMatching(/^\d{10}$/),
    });
    expect(JSON.parse(webhook!.body)).toEqual({
      id: published.id,
      type: "order.created",
      created_at: expect.any(String),
      data: { order_id: "1234", total: "9.99" },
    });
    const verified = new Webhook(config.signing_secret).verify(webhook!.body, webhook!.headers);
    expect(verified).toMatchObject({ id: published.id });
    // The configuration's deliveries list shows it.
    const list = await body<DeliveryRecord[]>(await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/deliveries`));
    expect(list.data.map((d) => d.id)).toEqual([deliveryId]);
  });

  it("sends a webhook.test event to one configuration on POST .../test", async () => {
    const config = await createConfig({ events: ["only.this"] });
    const sent = fakeNetwork(receiver());
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST");
    expect(res.status).toBe(202);
    const published = (await body<{ type: string; deliveries: { id: string }[] }>(res)).data;
    expect(published.type).toBe("webhook.test");
    const id = published.deliveries[0]!.id;
    await waitForDelivery(id, (d) => d.status === "delivered");
    const webhook = sent.find((s) => s.headers["webhook-id"] === id);
    expect(JSON.parse(webhook!.body)).toMatchObject({ type: "webhook.test", data: { webhook_configuration_id: config.id } });
  });

  it("signs with both secrets for 24 h after a rotation", async () => {
    const config = await createConfig();
    const rotated = await body<{ signing_secret: string; previous_secret_expires_at: string }>(
      await api(t, token, `/v1/webhook-configurations/${config.id}/rotate-signing-secret`, "POST"),
    );
    expect(rotated.data.signing_secret).not.toBe(config.signing_secret);
    const sent = fakeNetwork(receiver());
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST");
    const id = (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]!.id;
    await waitForDelivery(id, (d) => d.status === "delivered");
    const webhook = sent.find((s: Sent) => s.headers["webhook-id"] === id)!;
    expect(webhook.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const secret of [rotated.data.signing_secret, config.signing_secret]) {
      expect(() => new Webhook(secret).verify(webhook.body, webhook.headers)).not.toThrow();
    }
  });

  it("re-sends a failed delivery with the same webhook-id", async () => {
    const config = await createConfig();
    fakeNetwork({ ...receiver(), [WEBHOOK_URL]: () => new Response(null, { status: 400 }) });
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST");
    const id = (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]!.id;
    await waitForDelivery(id, (d) => d.status === "failed");

    const sent = fakeNetwork(receiver());
    const retry = await api(t, token, `/v1/deliveries/${id}/retry`, "POST");
    expect(retry.status).toBe(202);
    const done = await waitForDelivery(id, (d) => d.status === "delivered");
    expect(done.attempts.map((a) => a.outcome)).toEqual(["failed", "delivered"]);
    expect(sent.filter((s) => s.url === WEBHOOK_URL && s.headers["webhook-id"] === id)).toHaveLength(1);
    // Only failed deliveries can be re-sent.
    expect((await api(t, token, `/v1/deliveries/${id}/retry`, "POST")).status).toBe(409);
  });
});

describe("consumer isolation", () => {
  it("keeps the webhook-id across retries of one delivery", async () => {
    const config = await createConfig();
    const published = await body<{ id: string; deliveries: { id: string }[] }>(
      await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST"),
    );
    const id = published.data.deliveries[0]!.id;
    await waitForDelivery(id, (d) => d.status !== "pending").catch(() => undefined);
    // Replay the same message twice through the consumer: first the receiver fails, then works.
    const record = await env.KV.get(`event-body:${t.orgId}:${published.data.id}`);
    const message = {
      v: 1 as const,
      delivery_id: id,
      organization_id: t.orgId,
      webhook_configuration_id: config.id,
      event_id: published.data.id,
      event_type: "webhook.test",
      body: record!,
      created_at: new Date().toISOString(),
    };
    const sent = fakeNetwork({ ...receiver(), [WEBHOOK_URL]: (_r, i) => new Response(null, { status: i === 0 ? 503 : 204 }) });
    const first = await consume(DELIVERY_QUEUE, [{ id: "m1", attempts: 1, body: message }]);
    expect(first.retried).toHaveLength(1);
    const second = await consume(DELIVERY_QUEUE, [{ id: "m1", attempts: 2, body: message }]);
    expect(second.acked).toEqual(["m1"]);
    const ids = sent.filter((s) => s.url === WEBHOOK_URL && s.headers["webhook-id"] === id).map((s) => s.headers["webhook-id"]);
    expect(ids).toEqual([id, id]);
  });
});
