/**
 * Webhook configurations and events through the REST API: validation, the cap per organization,
 * the rule that moving a destination to another origin needs the client secret, Idempotency-Key,
 * and the full path publish -> ticket -> token request -> signed webhook, with both outbound
 * requests asserted byte for byte and the signature verified by the reference `standardwebhooks`
 * library. (The real Queue carries the tickets in test/pipeline/.)
 */
import { runInDurableObject } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_WEBHOOK_CONFIGURATIONS } from "../src/objects/webhooks/limits";
import type { DeliveryRecord } from "../src/schemas/webhooks";
import { fakeNetwork, receiver, type Sent, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { BASE, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { api, attemptNow, deliveryRow, inWebhooks, webhooksOf } from "./webhook-helpers";

const RECEIVER_SECRET = "receiver-client-secret-do-not-leak";

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
});

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

describe("webhook configurations", () => {
  it("creates a configuration: 201, a whsec_ signing secret shown once, the client secret never", async () => {
    const res = await api(t, token, "/v1/webhook-configurations", "POST", configInput({ events: ["order.created"] }));
    expect(res.status).toBe(201);
    const envelope = await body<Record<string, unknown>>(res);
    const created = envelope.data;
    // _links.self names the configuration created, not the collection (issue 23).
    expect(envelope._links.self.href).toBe(`${BASE}/v1/webhook-configurations/${created.id as string}`);
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
    const stored = await runInDurableObject(webhooksOf(t.orgId), (_i, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM configurations WHERE id = ?", created.id).one()),
    );
    expect(stored).not.toContain(RECEIVER_SECRET);
    expect(stored).not.toContain(created.signing_secret.slice("whsec_".length));
    const row = JSON.parse(stored) as { client_secret: string };
    expect(JSON.parse(row.client_secret)).toMatchObject({ kid: "e2", iv: expect.any(String), ct: expect.any(String) });
  });

  it(`caps an organization at ${MAX_WEBHOOK_CONFIGURATIONS} configurations (so one event's fan-out is bounded)`, async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    for (let i = 0; i < MAX_WEBHOOK_CONFIGURATIONS; i++) await createConfig({}, tenant, bearer);
    const res = await api(tenant, bearer, "/v1/webhook-configurations", "POST", configInput());
    expect(res.status).toBe(409);
    expect((await body(res)).developer_message).toMatch(/has 20 webhook configurations, the most it may have/);
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

  it("sets and clears the pacing fields, and refuses bad values of them with 400 naming the field", async () => {
    const created = await createConfig({ rate_limit: 5, ordered: true, token_cache: true });
    const path = `/v1/webhook-configurations/${created.id}`;
    expect((await body<Record<string, unknown>>(await api(t, token, path))).data).toMatchObject({
      rate_limit: 5,
      ordered: true,
      token_cache: true,
    });
    const cleared = await body<Record<string, unknown>>(await api(t, token, path, "PATCH", { rate_limit: null, ordered: false }));
    expect(cleared.data).toMatchObject({ rate_limit: null, ordered: false, token_cache: true });
    const bad: [Record<string, unknown>, string][] = [
      [{ rate_limit: 0 }, "rate_limit"],
      [{ rate_limit: 1001 }, "rate_limit"],
      [{ rate_limit: 1.5 }, "rate_limit"],
      [{ rate_limit: "5" }, "rate_limit"],
      [{ ordered: "yes" }, "ordered"],
      [{ ordered: null }, "ordered"],
      [{ token_cache: 1 }, "token_cache"],
      [{ status: "sleeping" }, "status"],
    ];
    for (const [patch, field] of bad) {
      for (const [method, target, payload] of [
        ["PATCH", path, patch],
        ["POST", "/v1/webhook-configurations", configInput(patch)],
      ] as const) {
        if (method === "POST" && field === "status") continue; // not a creation field (refused as unknown)
        const res = await api(t, token, target, method, payload);
        const json = await body(res);
        expect(res.status, `${method} ${JSON.stringify(patch)}`).toBe(400);
        expect(json.error).toBe("invalid_request");
        expect(json.developer_message, JSON.stringify(patch)).toContain(field);
      }
    }
    // Nothing was changed by the refused requests.
    expect((await body<Record<string, unknown>>(await api(t, token, path))).data).toMatchObject({ rate_limit: null, ordered: false });
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

describe("moving a destination to another origin needs the client secret in the same request", () => {
  it.each([
    ["url", { url: "https://collector.example/hook" }],
    ["oauth.token_url", { oauth: { token_url: "https://collector.example/token" } }],
  ])("refuses a %s on another origin without oauth.client_secret (400), and stores nothing", async (_field, patch) => {
    const created = await createConfig();
    const path = `/v1/webhook-configurations/${created.id}`;
    const res = await api(t, token, path, "PATCH", patch);
    expect(res.status).toBe(400);
    const json = await body(res);
    expect(json.error).toBe("invalid_request");
    expect(json.developer_message).toMatch(/oauth\.client_secret is required when .* moves to another origin/);
    const after = await body<{ url: string; oauth: { token_url: string } }>(await api(t, token, path));
    expect(after.data).toMatchObject({ url: WEBHOOK_URL, oauth: { token_url: TOKEN_URL } });
  });

  it("allows it with a new client secret, and allows a move within the same origin without one", async () => {
    const created = await createConfig();
    const path = `/v1/webhook-configurations/${created.id}`;
    expect((await api(t, token, path, "PATCH", { url: `${WEBHOOK_URL}/v2`, oauth: { token_url: `${TOKEN_URL}/v2` } })).status).toBe(200);
    const moved = await api(t, token, path, "PATCH", {
      url: "https://new-receiver.example/hook",
      oauth: { token_url: "https://new-receiver.example/token", client_secret: "their-own-secret" },
    });
    expect(moved.status).toBe(200);
    expect((await body<{ url: string }>(moved)).data.url).toBe("https://new-receiver.example/hook");
  });

  it("applies the same rule through GraphQL", async () => {
    const created = await createConfig();
    const res = await api(t, token, "/v1/graphql", "POST", {
      query: `mutation($id: ID!) { updateWebhookConfiguration(id: $id, input: { url: "https://collector.example/x" }) { id } }`,
      variables: { id: created.id },
    });
    const json = (await res.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect(json.errors[0]!.extensions.code).toBe("invalid_request");
    expect(json.errors[0]!.message).toMatch(/oauth\.clientSecret is required when url moves to another origin/);
  });
});

describe("Idempotency-Key on POST /v1/events", () => {
  it("answers a repeat within 24 hours with the original event and creates no deliveries", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const config = await createConfig({}, tenant, bearer);
    const send = (payload: unknown, key = "order-1234-created") =>
      api(tenant, bearer, "/v1/events", "POST", payload, { "Idempotency-Key": key });
    const first = await send({ type: "order.created", data: { id: 1234, total: 5 } });
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const original = (await body<{ id: string; deliveries: { id: string }[]; replayed: boolean }>(first)).data;
    expect(original.replayed).toBe(false);
    // The same request again (keys in another order): the same event, nothing new.
    const again = await send({ data: { total: 5, id: 1234 }, type: "order.created" });
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const replayed = (await body<{ id: string; deliveries: { id: string }[]; replayed: boolean }>(again)).data;
    expect(replayed).toMatchObject({ id: original.id, replayed: true, deliveries: [{ id: original.deliveries[0]!.id }] });
    const list = await body<unknown[]>(await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/deliveries`));
    expect(list.data).toHaveLength(1);
    // A different request under the same key is refused.
    const other = await send({ type: "order.created", data: { id: 9999 } });
    expect(other.status).toBe(422);
    expect((await body(other)).error).toBe("idempotency_key_reused");
    // A day later the key is free again.
    await inWebhooks(tenant.orgId, "UPDATE idempotency_keys SET created_ms = created_ms - 86400001");
    const later = await send({ type: "order.created", data: { id: 1234, total: 5 } });
    expect((await body<{ id: string }>(later)).data.id).not.toBe(original.id);
  });

  it("refuses a malformed key with 400", async () => {
    const res = await api(t, token, "/v1/events", "POST", { type: "a.b", data: {} }, { "Idempotency-Key": "x".repeat(256) });
    expect(res.status).toBe(400);
    expect((await body(res)).developer_message).toMatch(/"Idempotency-Key" must be at most 255 characters/);
  });

  it("is honoured by GraphQL's publishEvent too", async () => {
    const query = `mutation { publishEvent(type: "a.b", data: {n: 1}, idempotencyKey: "gql-1") { id replayed } }`;
    const first = (await (await api(t, token, "/v1/graphql", "POST", { query })).json()) as { data: { publishEvent: { id: string } } };
    const second = (await (await api(t, token, "/v1/graphql", "POST", { query })).json()) as {
      data: { publishEvent: { id: string; replayed: boolean } };
    };
    expect(second.data.publishEvent).toEqual({ id: first.data.publishEvent.id, replayed: true });
  });
});

describe("the full path: publish -> ticket -> token request -> webhook", () => {
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
    // The endpoint's object handed the ticket to the Queue (of the new lane: the endpoint has no history yet).
    expect(await deliveryRow(tenant.orgId, deliveryId)).toMatchObject({ state: "queued", ticket: 1, lane: "new" });

    const { record: delivered } = await attemptNow(tenant, bearer, deliveryId);
    expect(delivered).toMatchObject({
      status: "delivered",
      attempts: [{ number: 1, series: 1, step: "webhook", http_status: 204, outcome: "delivered", error: null }],
    });

    const tokenRequests = sent.filter((s) => s.url === TOKEN_URL);
    const webhooks = sent.filter((s) => s.url === WEBHOOK_URL);
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
    // The configuration's deliveries list shows it, and the configuration's health.
    const list = await body<DeliveryRecord[]>(await api(tenant, bearer, `/v1/webhook-configurations/${config.id}/deliveries`));
    expect(list.data.map((d) => d.id)).toEqual([deliveryId]);
    const health = await body<{ failing_since: null; last_delivered_at: string }>(
      await api(tenant, bearer, `/v1/webhook-configurations/${config.id}`),
    );
    expect(health.data).toMatchObject({ failing_since: null, last_delivered_at: expect.any(String) });
  });

  it("sends a webhook.test event to one configuration on POST .../test", async () => {
    const config = await createConfig({ events: ["only.this"] });
    const sent = fakeNetwork(receiver());
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST");
    expect(res.status).toBe(202);
    const published = (await body<{ type: string; deliveries: { id: string }[] }>(res)).data;
    expect(published.type).toBe("webhook.test");
    const id = published.deliveries[0]!.id;
    expect((await attemptNow(t, token, id)).record.status).toBe("delivered");
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
    expect((await attemptNow(t, token, id)).record.status).toBe("delivered");
    const webhook = sent.find((s: Sent) => s.headers["webhook-id"] === id)!;
    expect(webhook.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const secret of [rotated.data.signing_secret, config.signing_secret]) {
      expect(() => new Webhook(secret).verify(webhook.body, webhook.headers)).not.toThrow();
    }
  });

  it("signs with every secret within its grace, however many rotations (issue 42), up to 10 at once", async () => {
    const config = await createConfig();
    const rotate = async () =>
      body<{ signing_secret: string }>(await api(t, token, `/v1/webhook-configurations/${config.id}/rotate-signing-secret`, "POST"));
    const second = await rotate();
    const third = await rotate();
    const sent = fakeNetwork(receiver());
    const res = await api(t, token, `/v1/webhook-configurations/${config.id}/test`, "POST");
    const id = (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]!.id;
    expect((await attemptNow(t, token, id)).record.status).toBe("delivered");
    const webhook = sent.find((s: Sent) => s.headers["webhook-id"] === id)!;
    expect(webhook.headers["webhook-signature"]!.split(" ")).toHaveLength(3);
    // The first secret, rotated out twice within its grace, still verifies (it used to be dropped).
    for (const secret of [config.signing_secret, second.data.signing_secret, third.data.signing_secret]) {
      expect(() => new Webhook(secret).verify(webhook.body, webhook.headers)).not.toThrow();
    }
    for (let i = 3; i < 10; i++)
      expect((await api(t, token, `/v1/webhook-configurations/${config.id}/rotate-signing-secret`, "POST")).status).toBe(200);
    // The eleventh never fails for lack of a slot: it ends the oldest grace (the organization keeps its control).
    const eleventh = await api(t, token, `/v1/webhook-configurations/${config.id}/rotate-signing-secret`, "POST");
    expect(eleventh.status).toBe(200);
  });

  it("records every change in the organization's audit log, pushed from the webhook object", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const config = await createConfig({ url: "https://receiver.example/hook?token=receiver-query-secret" }, tenant, bearer);
    await api(tenant, bearer, `/v1/webhook-configurations/${config.id}`, "PATCH", { description: "x" });
    await api(tenant, bearer, "/v1/events", "POST", { type: "a.b", data: {} });
    const log = await call(`/admin/v1/organizations/${tenant.orgId}/audit-log`, {
      headers: { Authorization: "Bearer test-admin-token-0123456789abcdefghijklmnopqrstuv" },
    });
    const entries = (await body<{ action: string; actor: { type: string } }[]>(log)).data;
    expect(entries.slice(0, 3).map((e) => e.action)).toEqual([
      "event.published",
      "webhook_configuration.updated",
      "webhook_configuration.created",
    ]);
    expect(entries[0]!.actor).toMatchObject({ type: "api_client" });
    const text = JSON.stringify(entries);
    expect(text).not.toContain("receiver-query-secret");
    expect(text).not.toContain(RECEIVER_SECRET);
  });
});
