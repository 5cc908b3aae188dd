/**
 * Webhook endpoints at scale (product brief), as a webhook sender's customers meet them: a real
 * `npm start` and receivers on loopback that behave as real ones do. The scenarios whose claim is an
 * order or a count, which hold on a busy machine: a 429 with Retry-After, a rate limit, an ordered
 * endpoint across a failure, a burst with a shared receiver token, a 401 to that token. The
 * scenarios whose claim is a latency (lanes beside hanging, failing and throttling endpoints, a
 * receiver that starts hanging, the first delivery) are in lanes.quiet.test.ts, which `npm test`
 * runs after every other tier, on a quiet machine.
 */
import { describe, expect, it } from "vitest";
import { endpointsKit, json, received, until } from "./endpoints-kit";
import { sharedKeyway } from "./server";

const { receiver, scripted, client } = endpointsKit(sharedKeyway());

describe("backpressure per endpoint", () => {
  it("a 429 with Retry-After pauses the endpoint: no request reaches it before the pause ends, and nothing is dropped", async () => {
    const c = await client();
    const r = await receiver((i) => (i < 2 ? { status: 429, headers: { "Retry-After": "4" } } : { status: 204 }));
    await c.config(r);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await c.publish()).id);
    await until(() => received(r, ids) === 10, 30_000);
    expect(received(r, ids)).toBe(10);
    const hooks = r.arrivals.filter((a) => a.kind === "webhook");
    const throttled = hooks.filter((a) => a.status === 429);
    expect(throttled).toHaveLength(2);
    for (const t of throttled) {
      const inside = hooks.filter((a) => a.at > t.at && a.at < t.at + 4_000 - 20);
      expect(inside, "requests inside the pause").toEqual([]);
    }
    console.info(`retry-after: ${hooks.length} requests for 10 events, none inside either 4 s pause`);
    expect(hooks).toHaveLength(12);
  });

  it("rate_limit: requests to the endpoint never exceed it in any one-second window; the excess waits, none dropped", async () => {
    const c = await client();
    const r = await receiver();
    await c.config(r, { rate_limit: 2 });
    const ids = (await Promise.all(Array.from({ length: 12 }, () => c.publish()))).map((e) => e.id);
    await until(() => received(r, ids) === 12, 30_000);
    expect(received(r, ids)).toBe(12);
    const times = r.arrivals.filter((a) => a.kind === "webhook").map((a) => a.at);
    let worst = 0;
    for (const t of times) worst = Math.max(worst, times.filter((x) => x >= t && x < t + 1_000).length);
    const span = Math.max(...times) - Math.min(...times);
    console.info(`rate_limit 2/s: 12 deliveries over ${Math.round(span)} ms, at most ${worst} in any one-second window`);
    expect(worst).toBeLessThanOrEqual(2);
  });
});

describe("ordered endpoints", () => {
  it("deliver in publish order across a failure: the failing delivery holds the line until it succeeds", async () => {
    const c = await client();
    let failed = false;
    const order: string[] = [];
    const r = await scripted((a) => {
      if (a.eventId === ids[2] && !failed) {
        failed = true;
        return { status: 500 };
      }
      order.push(a.eventId);
      return { status: 204 };
    });
    const ids: string[] = [];
    await c.config(r, { ordered: true });
    for (let i = 0; i < 6; i++) ids.push((await c.publish()).id);
    await until(() => order.length === 6, 30_000);
    console.info(
      `ordered: ${r.arrivals.filter((a) => a.kind === "webhook").length} requests; the third event failed once and held the line`,
    );
    expect(order).toEqual(ids);
  });
});

describe("one receiver token per endpoint, shared", () => {
  it("a burst of 20 events makes one token request", async () => {
    const c = await client();
    const r = await receiver(() => ({ status: 204 }), { expiresIn: 3600 });
    await c.config(r, { token_cache: true });
    const ids = (await Promise.all(Array.from({ length: 20 }, () => c.publish()))).map((e) => e.id);
    await until(() => received(r, ids) === 20, 30_000);
    expect(received(r, ids)).toBe(20);
    console.info(`token_cache: ${r.tokens()} token request for 20 deliveries`);
    expect(r.tokens()).toBe(1);
  });

  it("a 401 to the shared token is answered by one refetch, and that attempt is sent again with the new token", async () => {
    const c = await client();
    let valid = "Bearer tok-1";
    const r = await scripted((a) => ({ status: a.authorization === valid ? 204 : 401 }), { expiresIn: 3600 });
    const configId = await c.config(r, { token_cache: true });
    const first = await c.publish();
    await until(() => received(r, [first.id]) === 1, 10_000);
    valid = "Bearer tok-2"; // the receiver revokes its token
    const second = await c.publish();
    await until(() => received(r, [second.id]) === 1, 10_000);
    expect(r.tokens()).toBe(2);
    const deliveries = await json<{ event_id: string; status: string; attempts: { note: string | null }[] }[]>(
      await c.api(`/v1/webhook-configurations/${configId}/deliveries`),
    );
    const d = deliveries.find((x) => x.event_id === second.id);
    expect(d).toMatchObject({ status: "delivered" });
    expect(d?.attempts).toEqual([expect.objectContaining({ note: expect.stringMatching(/refused the endpoint's token \(401\)/) })]);
  });
});
