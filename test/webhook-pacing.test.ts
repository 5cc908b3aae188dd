/**
 * How an endpoint's object paces its receiver (docs/webhooks.md), through its own dispatch: the
 * tickets it sends are read from its rows and handed to the consumer round by round, as the Queue
 * would, with outbound HTTP intercepted at `fetch` (test/fake-network.ts). Slow start and the
 * window, the circuit and its probes, a Retry-After pause and what resumes after it, the lanes, an
 * ordered endpoint's line, the shared receiver token (one fetch for a burst, one refetch after a
 * 401), and the rate limit's slot arithmetic. Clocks are moved by rewriting the objects' times.
 */
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { Db } from "../src/objects/db";
import { SlotBook } from "../src/objects/endpoints/slots";
import type { DeliveryTicket } from "../src/schemas/webhooks";
import { DELIVERY_QUEUE, forgetPause } from "../src/webhooks/consumer";
import { consume, fakeNetwork, type Handler, json, never, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { createTenant, issueToken, type Tenant } from "./helpers";
import {
  api,
  attemptNow,
  createConfig,
  endpointAlarm,
  endpointOf,
  endpointRow,
  getDelivery,
  inEndpoint,
  publishTo,
} from "./webhook-helpers";

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

const SECRET = "pacing-receiver-secret";
let t: Tenant;
let token: string;

beforeAll(async () => {
  for (const level of ["warn", "error", "info", "log"] as const) vi.spyOn(console, level).mockImplementation(() => {});
  t = await createTenant();
  token = await issueToken(t);
});

/** Each test its own organization when it needs many endpoints (an organization has at most 20). */
const newConfig = async (extra: Record<string, unknown> = {}, tenant = t, bearer = token) =>
  (await createConfig(tenant, bearer, SECRET, extra)).id;

interface Row {
  id: string;
  seq: number;
  status: string;
  state: string | null;
  ticket: number;
  lane: "fast" | "new" | "slow" | null;
  series: number;
  attempts: number;
  series_attempts: number;
  due_ms: number | null;
}

const rows = (configId: string): Promise<Row[]> =>
  runInDurableObject(endpointOf(configId), (_i, s) =>
    s.storage.sql
      .exec<Row & Record<string, SqlStorageValue>>(
        "SELECT id, seq, status, state, ticket, lane, series, attempts, series_attempts, due_ms FROM deliveries ORDER BY seq",
      )
      .toArray(),
  );

/** The tickets the endpoint's object has in the Queue right now. */
async function queued(orgId: string, configId: string): Promise<DeliveryTicket[]> {
  return (await rows(configId))
    .filter((r) => r.state === "queued")
    .map((r) => ({
      v: 3,
      kind: "attempt",
      organization_id: orgId,
      configuration_id: configId,
      delivery_id: r.id,
      series: r.series,
      attempt: r.attempts + 1,
      ticket: r.ticket,
      lane: r.lane ?? "new",
    }));
}

let batch = 0;
/** Hands the consumer every ticket the endpoint has queued, in one batch; returns how many there were. */
async function round(orgId: string, configId: string, overrides: Partial<Env> = {}): Promise<number> {
  const tickets = await queued(orgId, configId);
  if (tickets.length > 0) {
    await consume(
      DELIVERY_QUEUE,
      tickets.map((body, i) => ({ id: `p${++batch}-${i}`, attempts: 1, body })),
      overrides,
    );
  }
  return tickets.length;
}

/** Makes every waiting delivery due now (the schedule's delays, moved), and lets the object dispatch. */
async function dueNow(configId: string): Promise<void> {
  await inEndpoint(configId, "UPDATE deliveries SET due_ms = ? WHERE state = 'waiting'", Date.now() - 1);
  await endpointAlarm(configId);
}

const publishMany = async (configId: string, n: number, tenant = t, bearer = token) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await publishTo(tenant, bearer, configId));
  return ids;
};

const webhookAnswers = (status: (i: number) => number, headers: Record<string, string> = {}): Record<string, Handler> => ({
  ...receiver(),
  [WEBHOOK_URL]: (_r, i) => new Response(null, { status: status(i), headers }),
});

describe("the window: slow start, growth on success, halving on failure", () => {
  it("sends one ticket at first, one more after each delivery, up to the fast lane's ten", async () => {
    const configId = await newConfig();
    fakeNetwork(receiver());
    await publishMany(configId, 40);
    const sizes: number[] = [];
    for (let i = 0; i < 12; i++) {
      const n = await round(t.orgId, configId);
      if (n === 0) break;
      sizes.push(n);
    }
    // New lane (1), then the fast lane grows by one per delivery until ten are out at once.
    expect(sizes.slice(0, 4)).toEqual([1, 2, 4, 8]);
    expect(Math.max(...sizes)).toBe(10);
    expect((await rows(configId)).filter((r) => r.status === "delivered")).toHaveLength(40);
    expect(await endpointRow(configId)).toMatchObject({ lane: "fast", in_flight_limit: 10 });
  });

  it("halves the window on a failure and drops it to one on a 503", async () => {
    const configId = await newConfig();
    await inEndpoint(configId, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 8");
    fakeNetwork(webhookAnswers((i) => (i === 0 ? 500 : 204)));
    await publishMany(configId, 1);
    await round(t.orgId, configId);
    expect(await endpointRow(configId)).toMatchObject({ in_flight_limit: 4, failures: 1 });
    fakeNetwork(webhookAnswers(() => 503));
    await dueNow(configId);
    await round(t.orgId, configId);
    expect(await endpointRow(configId)).toMatchObject({ in_flight_limit: 1, failures: 2 });
  });
});

describe("the circuit: one probe at a time until one succeeds", () => {
  it("opens after five failures in a row, sends nothing until the probe, one probe at a time, and closes on a success", async () => {
    const configId = await newConfig();
    let healthy = false;
    const sent = fakeNetwork(webhookAnswers(() => (healthy ? 204 : 500)));
    await publishMany(configId, 12);
    for (let i = 0; i < 5; i++) {
      await dueNow(configId);
      expect(await round(t.orgId, configId)).toBeGreaterThan(0);
    }
    const open = await endpointRow(configId);
    expect(open).toMatchObject({ pause_kind: "circuit", failures: 5, probes: 0 });
    expect((open.paused_until_ms as number) - Date.now()).toBeGreaterThan(3_000);
    const view = (await (await api(t, token, `/v1/webhook-configurations/${configId}`)).json()) as { data: Record<string, unknown> };
    expect(view.data).toMatchObject({
      paused_until: expect.any(String),
      pause_reason: expect.stringMatching(/^circuit open after 5 failed attempts/),
    });

    // While open, however due the deliveries are, nothing is sent.
    const before = sent.length;
    await dueNow(configId);
    expect(await queued(t.orgId, configId)).toEqual([]);
    expect(sent.length).toBe(before);

    // The probe: one ticket; it fails, and the next probe waits longer.
    await inEndpoint(configId, "UPDATE endpoint SET paused_until_ms = ?", Date.now() - 1);
    // Half-open: not paused any more, but limited, and the view says so.
    const halfOpen = (await (await api(t, token, `/v1/webhook-configurations/${configId}`)).json()) as { data: Record<string, unknown> };
    expect(halfOpen.data).toMatchObject({
      paused_until: null,
      pause_reason: "circuit half-open after 5 failed attempts in a row: one attempt at a time until one succeeds",
    });
    await dueNow(configId);
    expect(await queued(t.orgId, configId)).toHaveLength(1);
    await round(t.orgId, configId);
    const reopened = await endpointRow(configId);
    expect(reopened).toMatchObject({ pause_kind: "circuit", probes: 1 });
    expect((reopened.paused_until_ms as number) - Date.now()).toBeGreaterThan(25_000);

    // The receiver is back: the next probe succeeds and the circuit closes; the rest follow.
    healthy = true;
    await inEndpoint(configId, "UPDATE endpoint SET paused_until_ms = ?", Date.now() - 1);
    await dueNow(configId);
    expect(await queued(t.orgId, configId)).toHaveLength(1);
    await round(t.orgId, configId);
    expect(await endpointRow(configId)).toMatchObject({ pause_kind: null, failures: 0, probes: 0 });
    for (let i = 0; i < 10 && (await rows(configId)).some((r) => r.status !== "delivered"); i++) {
      await dueNow(configId);
      await round(t.orgId, configId);
    }
    expect((await rows(configId)).every((r) => r.status === "delivered")).toBe(true);
  });
});

describe("a Retry-After pauses the whole endpoint", () => {
  it("sends nothing before the pause ends, puts back a ticket that arrives during it, and resumes in order of due time", async () => {
    const configId = await newConfig();
    await inEndpoint(configId, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 1");
    fakeNetwork(webhookAnswers((i) => (i === 0 ? 429 : 204), { "Retry-After": "4" }));
    const ids = await publishMany(configId, 4);
    await round(t.orgId, configId);
    const paused = await endpointRow(configId);
    expect(paused).toMatchObject({ pause_kind: "retry_after" });
    const left = (paused.paused_until_ms as number) - Date.now();
    expect(left).toBeGreaterThan(3_000);
    expect(left).toBeLessThanOrEqual(4_000);
    // Nothing is dispatched during the pause, even by the alarm; the alarm is set for its end.
    await endpointAlarm(configId);
    expect(await queued(t.orgId, configId)).toEqual([]);
    const alarm = await runInDurableObject(endpointOf(configId), (_i, s) => s.storage.getAlarm());
    expect(alarm).toBe(paused.paused_until_ms);
    // Every delivery shows its next attempt at the pause's end or later.
    for (const id of ids)
      expect(Date.parse((await getDelivery(t, token, id)).next_attempt_at ?? "")).toBeGreaterThanOrEqual(alarm as number);

    // The pause ends: deliveries go out again, the oldest-due first (the 429'd one is due after its retry delay).
    await inEndpoint(configId, "UPDATE endpoint SET paused_until_ms = ?", Date.now() - 1);
    forgetPause(configId); // this isolate's consumer saw the 429 too (src/webhooks/consumer.ts pausesSeen)
    await inEndpoint(configId, "UPDATE deliveries SET due_ms = due_ms - 10000 WHERE state = 'waiting'");
    await endpointAlarm(configId);
    const first = await queued(t.orgId, configId);
    expect(first).toHaveLength(1);
    expect(first[0]!.delivery_id).toBe(ids[1]);
    for (let i = 0; i < 10 && (await rows(configId)).some((r) => r.status !== "delivered"); i++) {
      await dueNow(configId);
      await round(t.orgId, configId);
    }
    expect((await rows(configId)).every((r) => r.status === "delivered")).toBe(true);
  });

  it("pauses the endpoint also when the 429 was a delivery's last try", async () => {
    const configId = await newConfig();
    fakeNetwork(webhookAnswers((i) => (i < 7 ? 500 : 429), { "Retry-After": "1800" }));
    const [id] = await publishMany(configId, 1);
    for (let i = 0; i < 7; i++) await attemptNow(t, token, id!);
    const { record, last } = await attemptNow(t, token, id!);
    expect(record.status).toBe("failed");
    expect(last).toMatchObject({ http_status: 429, outcome: "failed" });
    // The receiver asked for 30 minutes: the endpoint's other deliveries wait that long.
    expect(((await endpointRow(configId)).paused_until_ms as number) - Date.now()).toBeGreaterThan(1_790_000);
  });

  it("stops an attempt this isolate began before the pause was known: it sends nothing, and is not counted", async () => {
    const configId = await newConfig();
    await inEndpoint(configId, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 2");
    let tokens = 0;
    const sent = fakeNetwork({
      // The second attempt's token step is slow: by the time it could send, the first has its 429.
      [TOKEN_URL]: async () => {
        if (tokens++ === 1) await sleep(300);
        return json({ access_token: "tok", token_type: "Bearer", expires_in: 300 });
      },
      [WEBHOOK_URL]: () => new Response(null, { status: 429, headers: { "Retry-After": "30" } }),
    });
    const [first, second] = await publishMany(configId, 2);
    expect(await queued(t.orgId, configId)).toHaveLength(2);
    await round(t.orgId, configId);
    expect(sent.filter((s) => s.url === WEBHOOK_URL)).toHaveLength(1);
    expect(await endpointRow(configId)).toMatchObject({ pause_kind: "retry_after" });
    const answered = await getDelivery(t, token, first!);
    const held = await getDelivery(t, token, second!);
    const [sentOne, heldOne] = answered.attempts[0]?.http_status === 429 ? [answered, held] : [held, answered];
    expect(sentOne.attempts[0]).toMatchObject({ http_status: 429, outcome: "retry" });
    expect(heldOne.attempts[0]).toMatchObject({ http_status: null, outcome: "retry" });
    expect(heldOne.attempts[0]?.error).toMatch(/^not sent: the receiver had just answered another attempt/);
    // Not counted against its schedule: due again as soon as the pause ends.
    expect(Date.parse(heldOne.next_attempt_at ?? "")).toBeLessThanOrEqual(Date.parse(sentOne.next_attempt_at ?? ""));
  });

  it("reads Retry-After as an HTTP date too, and caps a pause at one hour", async () => {
    for (const [value, min, max] of [
      [new Date(Date.now() + 120_000).toUTCString(), 110_000, 121_000],
      ["999999", 3_590_000, 3_600_000],
    ] as const) {
      const configId = await newConfig();
      fakeNetwork(webhookAnswers(() => 503, { "Retry-After": value }));
      await publishMany(configId, 1);
      await round(t.orgId, configId);
      const left = ((await endpointRow(configId)).paused_until_ms as number) - Date.now();
      expect(left).toBeGreaterThan(min);
      expect(left).toBeLessThanOrEqual(max);
    }
  });
});

describe("lanes", () => {
  it("starts an endpoint in the new lane, moves it to the fast lane on a timely answer, to the slow lane on a cut-off, and back after three quick answers", async () => {
    const configId = await newConfig();
    let hang = false;
    fakeNetwork({ ...receiver(), [WEBHOOK_URL]: () => (hang ? never() : new Response(null, { status: 204 })) });
    await publishMany(configId, 1);
    expect((await queued(t.orgId, configId))[0]?.lane).toBe("new");
    await round(t.orgId, configId);
    expect(await endpointRow(configId)).toMatchObject({ lane: "fast" });

    // A receiver that stops answering is cut off by the fast lane's deadline (here 1 s).
    hang = true;
    const [cut] = await publishMany(configId, 1);
    expect((await queued(t.orgId, configId))[0]?.lane).toBe("fast");
    await round(t.orgId, configId, { WEBHOOK_TIMEOUT_SECONDS: "1" });
    expect(await endpointRow(configId)).toMatchObject({ lane: "slow", in_flight_limit: 1 });
    const d = await getDelivery(t, token, cut!);
    expect(d.attempts[0]).toMatchObject({ outcome: "retry", error: expect.stringMatching(/^no answer within the fast lane's 1 s/) });
    // Not counted against its schedule: due again at once, in the slow lane.
    expect((await rows(configId)).find((r) => r.id === cut)).toMatchObject({ series_attempts: 0, state: "queued", lane: "slow" });

    hang = false;
    for (let i = 0; i < 3; i++) {
      if (i > 0) await publishMany(configId, 1);
      expect((await queued(t.orgId, configId)).every((x) => x.lane === "slow")).toBe(true);
      await round(t.orgId, configId);
    }
    expect(await endpointRow(configId)).toMatchObject({ lane: "fast" });
  });

  it("drops a fast-lane ticket for an endpoint that has moved to the slow lane, and sends it again in the slow lane", async () => {
    const configId = await newConfig();
    fakeNetwork(receiver());
    await publishMany(configId, 1);
    const [stale] = await queued(t.orgId, configId);
    await inEndpoint(configId, "UPDATE endpoint SET lane = 'slow'");
    const begun = await endpointOf(configId).begin(stale!, Date.now());
    expect(begun).toEqual({ go: false, reason: "the endpoint moved to the slow lane" });
    const [again] = await queued(t.orgId, configId);
    expect(again).toMatchObject({ delivery_id: stale!.delivery_id, lane: "slow", ticket: stale!.ticket + 1 });
  });
});

describe("ordered endpoints", () => {
  it("deliver one at a time in publish order; a failing delivery holds the line until it succeeds", async () => {
    const configId = await newConfig({ ordered: true });
    await inEndpoint(configId, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
    const order: string[] = [];
    let failSecond = 2;
    fakeNetwork({
      ...receiver(),
      [WEBHOOK_URL]: (r) => {
        const id = r.headers["webhook-id"] ?? "";
        if (id === ids[1] && failSecond-- > 0) return new Response(null, { status: 500 });
        order.push(id);
        return new Response(null, { status: 204 });
      },
    });
    const ids = await publishMany(configId, 5);
    for (let i = 0; i < 15 && order.length < 5; i++) {
      const tickets = await queued(t.orgId, configId);
      expect(tickets.length).toBeLessThanOrEqual(1);
      await round(t.orgId, configId);
      await dueNow(configId);
    }
    expect(order).toEqual(ids);
    expect((await getDelivery(t, token, ids[1]!)).attempts.map((a) => a.outcome)).toEqual(["retry", "retry", "delivered"]);
  });

  it("move the line on once a delivery exhausts its retries (failed), and put a re-sent delivery at the head again", async () => {
    const configId = await newConfig({ ordered: true });
    const order: string[] = [];
    fakeNetwork({
      ...receiver(),
      [WEBHOOK_URL]: (r) => {
        const id = r.headers["webhook-id"] ?? "";
        if (id === ids[0] && !resent) return new Response(null, { status: 503 });
        order.push(id);
        return new Response(null, { status: 204 });
      },
    });
    let resent = false;
    const ids = await publishMany(configId, 3);
    // The head has spent its whole schedule but one attempt.
    await inEndpoint(configId, "UPDATE deliveries SET series_attempts = 7 WHERE id = ?", ids[0]!);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, ids[0]!)).status).toBe("failed");
    for (let i = 0; i < 6 && order.length < 2; i++) {
      await round(t.orgId, configId);
      await dueNow(configId);
    }
    expect(order).toEqual([ids[1], ids[2]]);
    // A re-sent delivery keeps its place in publish order: it is the head, so it goes next.
    resent = true;
    const more = await publishMany(configId, 1);
    await inEndpoint(configId, "UPDATE deliveries SET state = 'waiting', ticket = ticket + 1 WHERE id = ?", more[0]!);
    expect((await api(t, token, `/v1/deliveries/${ids[0]}/retry`, "POST")).status).toBe(202);
    expect((await queued(t.orgId, configId)).map((x) => x.delivery_id)).toEqual([ids[0]]);
    for (let i = 0; i < 6 && order.length < 4; i++) {
      await round(t.orgId, configId);
      await dueNow(configId);
    }
    expect(order).toEqual([ids[1], ids[2], ids[0], more[0]]);
  });
});

describe("one receiver token per endpoint (token_cache)", () => {
  it("fetches one token for a burst: one attempt fetches while the others wait in the object", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const configId = await newConfig({ token_cache: true }, tenant, bearer);
    await inEndpoint(configId, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
    const sent = fakeNetwork(receiver({ expiresIn: 3600 }));
    await publishMany(configId, 20, tenant, bearer);
    // Without a token, one attempt at a time (the one that fetches it).
    expect(await queued(tenant.orgId, configId)).toHaveLength(1);
    for (let i = 0; i < 10 && (await rows(configId)).some((r) => r.status !== "delivered"); i++) await round(tenant.orgId, configId);
    expect((await rows(configId)).every((r) => r.status === "delivered")).toBe(true);
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(1);
    expect(sent.filter((s) => s.url === WEBHOOK_URL)).toHaveLength(20);
    // Kept sealed: the stored value is ciphertext, never the token.
    const ep = await endpointRow(configId);
    expect(String(ep.token)).not.toContain("receiver-token-1");
    expect(JSON.parse(String(ep.token))).toMatchObject({ kid: expect.any(String), iv: expect.any(String), ct: expect.any(String) });
  });

  it("makes a second attempt that begins while the token is being fetched wait, without a request", async () => {
    const configId = await newConfig({ token_cache: true });
    await publishMany(configId, 2);
    const [first] = await queued(t.orgId, configId);
    expect((await endpointOf(configId).begin(first!, Date.now())).go).toBe(true);
    // A second ticket forced out while the first holds the fetch lease.
    const second = (await rows(configId)).find((r) => r.state === "waiting")!;
    await inEndpoint(configId, "UPDATE deliveries SET state = 'queued', ticket = ticket + 1, lane = 'new' WHERE id = ?", second.id);
    const ticket: DeliveryTicket = { ...first!, delivery_id: second.id, ticket: second.ticket + 1, attempt: 1 };
    expect(await endpointOf(configId).begin(ticket, Date.now())).toEqual({
      go: false,
      reason: "waiting for the endpoint's receiver token",
    });
    expect((await rows(configId)).find((r) => r.id === second.id)).toMatchObject({ state: "waiting", attempts: 0 });
  });

  it("answers a 401 to the cached token by one refetch, and sends that attempt again with the new token, recorded as such", async () => {
    const configId = await newConfig({ token_cache: true });
    let issued = 0;
    let valid = "tok-1";
    const sent = fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: `tok-${++issued}`, token_type: "Bearer", expires_in: 3600 }),
      [WEBHOOK_URL]: (r) => new Response(null, { status: r.headers.authorization === `Bearer ${valid}` ? 204 : 401 }),
    });
    const [a] = await publishMany(configId, 1);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, a!)).status).toBe("delivered");
    // The receiver revokes its token.
    valid = "tok-2";
    const [b] = await publishMany(configId, 1);
    await round(t.orgId, configId);
    const d = await getDelivery(t, token, b!);
    expect(d.status).toBe("delivered");
    expect(d.attempts).toEqual([
      expect.objectContaining({
        number: 1,
        outcome: "delivered",
        note: "the receiver refused the endpoint's token (401); a new token was fetched and the webhook sent again",
      }),
    ]);
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(2);
    expect(sent.filter((s) => s.url === WEBHOOK_URL).map((s) => s.headers.authorization)).toEqual([
      "Bearer tok-1",
      "Bearer tok-1",
      "Bearer tok-2",
    ]);
    // The new token is the endpoint's from now on.
    const [c] = await publishMany(configId, 1);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, c!)).status).toBe("delivered");
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(2);
  });

  it("drops a token the receiver refuses: one it has just issued, and the one a refetch brought; neither is used again", async () => {
    const configId = await newConfig({ token_cache: true });
    let issued = 0;
    const refused = new Set(["tok-1", "tok-3"]);
    const sent = fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: `tok-${++issued}`, token_type: "Bearer", expires_in: 3600 }),
      [WEBHOOK_URL]: (r) => new Response(null, { status: refused.has(r.headers.authorization?.slice(7) ?? "") ? 401 : 204 }),
    });
    const [a] = await publishMany(configId, 1);
    // tok-1, just fetched and kept, is refused: dropped, and the delivery retried on its schedule.
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, a!)).attempts.at(-1)).toMatchObject({ outcome: "retry", http_status: 401 });
    expect((await endpointRow(configId)).token).toBeNull();
    await dueNow(configId);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, a!)).status).toBe("delivered");
    // tok-2 is now the endpoint's; the receiver revokes it, and refuses the refetched tok-3 too.
    refused.add("tok-2");
    const [b] = await publishMany(configId, 1);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, b!)).attempts.at(-1)).toMatchObject({ outcome: "retry", http_status: 401 });
    expect((await endpointRow(configId)).token).toBeNull();
    await dueNow(configId);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, b!)).status).toBe("delivered");
    // Each refused token was sent once and never again.
    expect(sent.filter((s) => s.url === WEBHOOK_URL).map((s) => s.headers.authorization)).toEqual([
      "Bearer tok-1",
      "Bearer tok-2",
      "Bearer tok-2",
      "Bearer tok-3",
      "Bearer tok-4",
    ]);
  });

  it("reuses the shared token until 60 s before it expires, then fetches the next one", async () => {
    const configId = await newConfig({ token_cache: true });
    let issued = 0;
    const sent = fakeNetwork({
      ...receiver(),
      [TOKEN_URL]: () => json({ access_token: `tok-${++issued}`, token_type: "Bearer", expires_in: 3600 }),
    });
    await publishMany(configId, 1);
    await round(t.orgId, configId);
    // 61 s left: still reused.
    await inEndpoint(configId, "UPDATE endpoint SET token_expires_ms = ?", Date.now() + 61_000);
    await publishMany(configId, 1);
    await round(t.orgId, configId);
    // 59 s left: a new one.
    await inEndpoint(configId, "UPDATE endpoint SET token_expires_ms = ?", Date.now() + 59_000);
    await publishMany(configId, 1);
    await round(t.orgId, configId);
    expect(sent.filter((s) => s.url === WEBHOOK_URL).map((s) => s.headers.authorization)).toEqual([
      "Bearer tok-1",
      "Bearer tok-1",
      "Bearer tok-2",
    ]);
  });

  it("shares a token without expires_in for five minutes; with a short-lived one, lets every attempt fetch its own, several at once", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const noExpiry = await newConfig({ token_cache: true }, tenant, bearer);
    await inEndpoint(noExpiry, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
    let sent = fakeNetwork({ ...receiver(), [TOKEN_URL]: () => json({ access_token: "no-expiry", token_type: "Bearer" }) });
    await publishMany(noExpiry, 5, tenant, bearer);
    for (let i = 0; i < 5 && (await rows(noExpiry)).some((r) => r.status !== "delivered"); i++) await round(tenant.orgId, noExpiry);
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(1);
    const kept = await endpointRow(noExpiry);
    expect((kept.token_expires_ms as number) - Date.now()).toBeGreaterThan(290_000);
    expect((kept.token_expires_ms as number) - Date.now()).toBeLessThanOrEqual(300_000);

    // expires_in 30: nothing to share, so nothing held to one fetcher either.
    const shortLived = await newConfig({ token_cache: true }, tenant, bearer);
    await inEndpoint(shortLived, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
    sent = fakeNetwork(receiver({ expiresIn: 30 }));
    await publishMany(shortLived, 1, tenant, bearer);
    await round(tenant.orgId, shortLived);
    expect(await endpointRow(shortLived)).toMatchObject({ token: null, token_short_key: expect.any(String) });
    await publishMany(shortLived, 4, tenant, bearer);
    await endpointAlarm(shortLived);
    expect(await queued(tenant.orgId, shortLived)).toHaveLength(4);
    await round(tenant.orgId, shortLived);
    expect((await rows(shortLived)).every((r) => r.status === "delivered")).toBe(true);
    expect(sent.filter((s) => s.url === TOKEN_URL)).toHaveLength(5);
  });

  it("forgets the token when the credentials change, and without token_cache fetches one before every webhook (spec 4.3)", async () => {
    const cached = await newConfig({ token_cache: true });
    const sent = fakeNetwork(receiver({ expiresIn: 3600 }));
    await publishMany(cached, 1);
    await round(t.orgId, cached);
    expect((await endpointRow(cached)).token).not.toBeNull();
    await api(t, token, `/v1/webhook-configurations/${cached}`, "PATCH", { oauth: { client_id: "another" } });
    expect((await endpointRow(cached)).token).toBeNull();
    const plain = await newConfig();
    await inEndpoint(plain, "UPDATE endpoint SET lane = 'fast', in_flight_limit = 10");
    const before = sent.filter((s) => s.url === TOKEN_URL).length;
    await publishMany(plain, 3);
    for (let i = 0; i < 3; i++) await round(t.orgId, plain);
    expect(sent.filter((s) => s.url === TOKEN_URL).length - before).toBe(3);
  });
});

describe("the rate limit with a shared token", () => {
  it("gives the webhook sent again after a 401 a slot of its own: never two in one second at rate_limit 1", async () => {
    const configId = await newConfig({ token_cache: true, rate_limit: 1 });
    let issued = 0;
    let valid = "tok-1";
    const sends: number[] = [];
    fakeNetwork({
      [TOKEN_URL]: () => json({ access_token: `tok-${++issued}`, token_type: "Bearer", expires_in: 3600 }),
      [WEBHOOK_URL]: (r) => {
        sends.push(Date.now());
        return new Response(null, { status: r.headers.authorization === `Bearer ${valid}` ? 204 : 401 });
      },
    });
    const [a] = await publishMany(configId, 1);
    await round(t.orgId, configId);
    expect((await getDelivery(t, token, a!)).status).toBe("delivered");
    await sleep(1_300); // the rate limit's window after the first send (1 s, the slot and its jitter)
    valid = "tok-2"; // the receiver revokes the shared token
    const [b] = await publishMany(configId, 1);
    await round(t.orgId, configId);
    // On a busy machine the first round may still find the first send's window open (the attempt
    // then sends nothing and waits for its slot): rounds go on until the shared token is refused.
    const refused = async () => (await getDelivery(t, token, b!)).attempts.some((x) => x.http_status === 401);
    for (let i = 0; i < 20 && !(await refused()); i++) {
      await sleep(200);
      await endpointAlarm(configId);
      await round(t.orgId, configId);
    }
    // No slot for a second webhook within this second: the token is dropped, the delivery retried at once.
    expect((await getDelivery(t, token, b!)).attempts.at(-1)).toMatchObject({ http_status: 401, outcome: "retry" });
    expect((await endpointRow(configId)).token).toBeNull();
    for (let i = 0; i < 20 && (await getDelivery(t, token, b!)).status !== "delivered"; i++) {
      await sleep(200);
      await endpointAlarm(configId);
      await round(t.orgId, configId);
    }
    expect((await getDelivery(t, token, b!)).status).toBe("delivered");
    expect(sends).toHaveLength(3);
    expect(sends[2]! - sends[1]!).toBeGreaterThanOrEqual(1_000);
  });
});

describe("the rate limit's slots", () => {
  it("never lets more than `rate` sends into any one-second window, wherever in its slot each send falls", async () => {
    const configId = await newConfig();
    await runInDurableObject(endpointOf(configId), (_i, state) => {
      const book = new SlotBook(new Db(state.storage));
      // A deterministic pseudo-random sequence, so a failure can be replayed.
      let seed = 42;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      for (const rate of [1, 3, 10]) {
        const sends: number[] = [];
        const from = 1_000_000 * rate;
        let now = from;
        for (let i = 0; i < 400; i++) {
          now += Math.floor(rand() * (600 / rate));
          const start = book.earliest(rate, now);
          if (start > now + 50) continue; // not grantable now: the delivery waits in the object
          const length = rand() < 0.5 ? 100 : 150 + Math.floor(rand() * 850);
          book.reserve(start, start + length, now);
          sends.push(start + Math.floor(rand() * (length + 1)));
        }
        sends.sort((a, b) => a - b);
        let worst = 0;
        for (let i = 0; i < sends.length; i++) {
          let j = i;
          while (j < sends.length && (sends[j] ?? 0) < (sends[i] ?? 0) + 1000) j++;
          worst = Math.max(worst, j - i);
        }
        expect(worst, `rate ${rate}`).toBeLessThanOrEqual(rate);
        // Demand runs above the limit, so the limit is what bounds the sends: at least half of it is used.
        expect(sends.length, `rate ${rate}: the limit is used, not starved`).toBeGreaterThan((0.5 * rate * (now - from)) / 1000);
      }
    });
  });
});
