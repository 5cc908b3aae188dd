/**
 * Helpers for webhook tests in the "workers" project, where the objects' Queue messages go to a
 * queue nobody consumes: a test publishes through the API, then plays the Queue itself, handing
 * the consumer the ticket the object would have sent (and reading the object's rows to know it).
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { DeliveryMessage, DeliveryRecord } from "../src/schemas/webhooks";
import { DELIVERY_QUEUE } from "../src/webhooks/consumer";
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

export interface DeliveryRow {
  status: string;
  series: number;
  series_attempts: number;
  attempts: number;
  next_attempt_ms: number | null;
  dispatched_ms: number | null;
  lease_until_ms: number | null;
}

export const deliveryRow = (orgId: string, id: string): Promise<DeliveryRow> =>
  runInDurableObject(webhooksOf(orgId), (_i, state) =>
    state.storage.sql
      .exec<DeliveryRow & Record<string, SqlStorageValue>>(
        "SELECT status, series, series_attempts, attempts, next_attempt_ms, dispatched_ms, lease_until_ms FROM deliveries WHERE id = ?",
        id,
      )
      .one(),
  );

/** Runs SQL inside the organization's WebhookObject (to move clocks, or to simulate faults). */
export const inWebhooks = (orgId: string, statement: string, ...bindings: SqlStorageValue[]) =>
  runInDurableObject(webhooksOf(orgId), (_i, state) => void state.storage.sql.exec(statement, ...bindings));

/** The ticket the object sends for a delivery's next attempt. */
export async function ticketFor(orgId: string, id: string): Promise<DeliveryMessage> {
  const row = await deliveryRow(orgId, id);
  return { v: 2, organization_id: orgId, delivery_id: id, series: row.series, attempt: row.attempts + 1 };
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
 * Makes the delivery's next attempt due now and hands its ticket to the consumer, as the Queue
 * would; returns what the consumer acked or retried and the delivery afterwards.
 */
export async function attemptNow(
  tenant: Tenant,
  bearer: string,
  id: string,
  overrides: Partial<Env> = {},
): Promise<{ outcome: QueueOutcome; record: DeliveryRecord; last: DeliveryRecord["attempts"][number] }> {
  await inWebhooks(
    tenant.orgId,
    "UPDATE deliveries SET next_attempt_ms = ? WHERE id = ? AND next_attempt_ms IS NOT NULL",
    Date.now() - 1,
    id,
  );
  const ticket = await ticketFor(tenant.orgId, id);
  const outcome = await consume(DELIVERY_QUEUE, [{ id: `m${++messageCounter}`, attempts: 1, body: ticket }], overrides);
  const record = await getDelivery(tenant, bearer, id);
  return { outcome, record, last: record.attempts.at(-1)! };
}
