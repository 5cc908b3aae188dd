/**
 * Helpers for webhook tests in the "workers" project, where the endpoints' tickets go to queues
 * nobody consumes: a test publishes through the API, then plays the Queue itself, handing the
 * consumer the ticket the endpoint's object sent (read from the object's rows).
 *
 * `attemptNow` also plays the dispatcher, and one that ignores pacing: it lifts the endpoint's
 * pause, makes the delivery due and claims its ticket even beyond the window, so that tests of the
 * attempt itself (the receiver's answers, the state machine) can make many attempts of one
 * delivery in a row. Pacing (window, pause, circuit, rate limit, order) is tested through the
 * objects' own dispatch: the pipeline project, test/webhook-pacing.test.ts and the e2e tests.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { DeliveryRecord, DeliveryTicket } from "../src/schemas/webhooks";
import { DELIVERY_QUEUE, forgetPause } from "../src/webhooks/consumer";
import { consume, type QueueOutcome, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { authed, body, call, type Tenant } from "./helpers";

export const api = (
  tenant: Tenant,
  bearer: string,
  path: string,
  method = "GET",
  payload?: unknown,
  headers: Record<string, string> = {},
) =>
  call(
    path,
    authed(tenant, bearer, {
      method,
      headers: { ...(payload !== undefined ? { "Content-Type": "application/json" } : {}), ...headers },
      ...(payload !== undefined ? { body: JSON.stringify(payload) } : {}),
    }),
  );

export const configInput = (secret: string, overrides: Record<string, unknown> = {}) => ({
  url: WEBHOOK_URL,
  description: "orders",
  oauth: { token_url: TOKEN_URL, client_id: "keyway-at-receiver", client_secret: secret },
  ...overrides,
});

export async function createConfig(
  tenant: Tenant,
  bearer: string,
  secret: string,
  overrides: Record<string, unknown> = {},
): Promise<{ id: string; signing_secret: string; version?: number }> {
  const res = await api(tenant, bearer, "/v1/webhook-configurations", "POST", configInput(secret, overrides));
  const json = await body<{ id: string; signing_secret: string }>(res);
  expect(res.status, JSON.stringify(json)).toBe(201);
  return json.data;
}

export const webhooksOf = (orgId: string) => env.WEBHOOKS.get(env.WEBHOOKS.idFromName(orgId));
export const endpointOf = (configId: string) => env.ENDPOINTS.get(env.ENDPOINTS.idFromName(configId));

/** Which configuration (endpoint) a delivery belongs to, as the organization's fan-out index says. */
export async function configOf(orgId: string, deliveryId: string): Promise<string> {
  const configId = await webhooksOf(orgId).locate(deliveryId);
  expect(configId, `delivery ${deliveryId} is not in the organization's index`).not.toBeNull();
  return configId as string;
}

export interface DeliveryRow {
  status: string;
  series: number;
  series_attempts: number;
  attempts: number;
  due_ms: number | null;
  state: "waiting" | "queued" | "running" | null;
  ticket: number;
  lane: "fast" | "new" | "slow" | null;
  queued_ms: number | null;
  redispatches: number;
  lease_until_ms: number | null;
  wake_ms: number | null;
}

export const deliveryRow = async (orgId: string, id: string): Promise<DeliveryRow> => deliveryRowAt(await configOf(orgId, id), id);

/** The delivery's row in its endpoint's object (also once its organization, and so the index, is gone). */
export const deliveryRowAt = async (configId: string, id: string): Promise<DeliveryRow> =>
  runInDurableObject(endpointOf(configId), (_i, state) =>
    state.storage.sql
      .exec<DeliveryRow & Record<string, SqlStorageValue>>(
        `SELECT status, series, series_attempts, attempts, due_ms, state, ticket, lane, queued_ms, redispatches, lease_until_ms, wake_ms
          FROM deliveries WHERE id = ?`,
        id,
      )
      .one(),
  );

/** Runs SQL inside the organization's WebhookObject (to move clocks, or to simulate faults). */
export const inWebhooks = (orgId: string, statement: string, ...bindings: SqlStorageValue[]) =>
  runInDurableObject(webhooksOf(orgId), (_i, state) => void state.storage.sql.exec(statement, ...bindings));

/** Runs SQL inside an endpoint's object. */
export const inEndpoint = (configId: string, statement: string, ...bindings: SqlStorageValue[]) =>
  runInDurableObject(endpointOf(configId), (_i, state) => void state.storage.sql.exec(statement, ...bindings));

/** The endpoint's row (lane, window, pause, token ...). */
export const endpointRow = (configId: string) =>
  runInDurableObject(endpointOf(configId), (_i, state) => state.storage.sql.exec("SELECT * FROM endpoint").one());

/** Puts an endpoint in the slow lane, whose attempts get the whole WEBHOOK_TIMEOUT_SECONDS. */
/** The last attempt of a delivery as its endpoint's object recorded it: its step, outcome and error. */
export const lastAttempt = (configId: string, delivery: string) =>
  runInDurableObject(endpointOf(configId), (_i, state) =>
    state.storage.sql
      .exec<{ step: string; error: string | null; outcome: string }>(
        "SELECT step, error, outcome FROM attempts WHERE delivery_id = ? ORDER BY number DESC LIMIT 1",
        delivery,
      )
      .one(),
  );

export const slowLane = (configId: string) => inEndpoint(configId, "UPDATE endpoint SET lane = 'slow'");

/**
 * The ticket for the delivery's next attempt: the one its endpoint sent, or (if the delivery is
 * waiting for its turn) one claimed here as the dispatcher would, ignoring pacing.
 */
export async function ticketFor(orgId: string, id: string): Promise<DeliveryTicket> {
  const configId = await configOf(orgId, id);
  let row = await deliveryRow(orgId, id);
  if (row.state === "waiting") {
    const ep = (await endpointRow(configId)) as { lane: "fast" | "new" | "slow" };
    await inEndpoint(
      configId,
      "UPDATE deliveries SET state = 'queued', ticket = ticket + 1, lane = ?, queued_ms = ?, wake_ms = ? WHERE id = ?",
      ep.lane,
      Date.now(),
      Date.now() + 120_000,
      id,
    );
    row = await deliveryRow(orgId, id);
  }
  return {
    v: 3,
    kind: "attempt",
    organization_id: orgId,
    configuration_id: configId,
    delivery_id: id,
    series: row.series,
    attempt: row.attempts + 1,
    ticket: row.ticket,
    lane: row.lane ?? "new",
  };
}

export async function getDelivery(tenant: Tenant, bearer: string, id: string): Promise<DeliveryRecord> {
  const res = await api(tenant, bearer, `/v1/deliveries/${id}`);
  expect(res.status).toBe(200);
  return (await body<DeliveryRecord>(res)).data;
}

/** Publishes `webhook.test` to one configuration; returns its delivery id. */
export async function publishTo(tenant: Tenant, bearer: string, configId: string): Promise<string> {
  const res = await api(tenant, bearer, `/v1/webhook-configurations/${configId}/test`, "POST");
  const json = await body<{ deliveries: { id: string }[] }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data.deliveries[0]!.id;
}

let messageCounter = 0;

/**
 * Makes the delivery's next attempt due now, lifts its endpoint's pause, and hands its ticket to
 * the consumer, as the Queue would; returns what the consumer acked or retried and the delivery
 * afterwards. (A dispatcher that ignores pacing: see the module's comment.)
 */
export async function attemptNow(
  tenant: Tenant,
  bearer: string,
  id: string,
  overrides: Partial<Env> = {},
): Promise<{ outcome: QueueOutcome; record: DeliveryRecord; last: DeliveryRecord["attempts"][number] }> {
  const configId = await configOf(tenant.orgId, id);
  await inEndpoint(
    configId,
    "UPDATE endpoint SET pause_kind = NULL, paused_until_ms = NULL, pause_reason = NULL WHERE pause_kind != 'gone'",
  );
  forgetPause(configId); // and what this isolate's consumer remembers of it (src/webhooks/consumer.ts)
  await inEndpoint(configId, "UPDATE deliveries SET due_ms = ? WHERE id = ? AND due_ms IS NOT NULL", Date.now() - 1, id);
  const ticket = await ticketFor(tenant.orgId, id);
  const outcome = await consume(DELIVERY_QUEUE, [{ id: `m${++messageCounter}`, attempts: 1, body: ticket }], overrides);
  const record = await getDelivery(tenant, bearer, id);
  return { outcome, record, last: record.attempts.at(-1)! };
}

/** Runs the endpoint's alarm now (its dispatch, recovery and housekeeping). */
export const endpointAlarm = (configId: string) => runDurableObjectAlarm(endpointOf(configId));
