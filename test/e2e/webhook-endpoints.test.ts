/**
 * Webhook endpoints at scale (product brief), as a webhook sender's customers meet them: a real
 * `npm start` and receivers on loopback that behave as real ones do. Each scenario of issue 20, run
 * exactly: a hanging and a failing endpoint beside healthy ones (in the same organization and in
 * another), a receiver that starts hanging, a 429 with Retry-After, a rate limit, an ordered
 * endpoint across a failure, a burst with a shared receiver token, a 401 to that token, and the
 * first delivery's latency. Latencies are measured from the publish's answer to the receiver's
 * receipt, on one clock; the figures are printed for the record.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, type Keyway, type ScriptedReceiver, sharedKeyway, sleep, startScriptedReceiver } from "./server";

let keyway: Keyway;
const receivers: ScriptedReceiver[] = [];

beforeAll(async () => {
  keyway = sharedKeyway();
});

afterAll(async () => {
  for (const r of receivers) await r.close();
});

async function receiver(answer: (index: number) => Answer = () => ({ status: 204 }), options: { expiresIn?: number } = {}) {
  const r = await startScriptedReceiver((_a, i) => answer(i), options);
  receivers.push(r);
  return r;
}

async function json<T>(res: Response): Promise<T> {
  const body = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

interface Client {
  api(path: string, init?: RequestInit): Promise<Response>;
  /** Publishes an event; resolves to its id and when the answer arrived (performance.now()). */
  publish(type?: string): Promise<{ id: string; answered: number }>;
  config(r: ScriptedReceiver, extra?: Record<string, unknown>): Promise<string>;
}

/** An organization with an API key that allows bursts, and a token. */
async function client(): Promise<Client> {
  const admin = (path: string, body: unknown) =>
    fetch(`${keyway.baseUrl}/admin/v1${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${keyway.adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => json<Record<string, string>>(r));
  const org = await admin("/organizations", { name: "Lanes" });
  const user = await admin(`/organizations/${org.id}/users`, { name: "Ada" });
  const cred = await admin(`/organizations/${org.id}/users/${user.id}/client-credentials`, {});
  const key = await admin(`/organizations/${org.id}/api-keys`, { limits: { per_second: 1000, per_day: 1_000_000 } });
  const issued = await fetch(`${keyway.baseUrl}/v1/oauth`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": key.api_key ?? "" },
    body: JSON.stringify({ client_id: cred.client_id, client_secret: cred.client_secret, grant_type: "client_credentials" }),
  });
  const token = (await json<{ access_token: string }>(issued)).access_token;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${keyway.baseUrl}${path}`, {
      ...init,
      headers: { "x-api-key": key.api_key ?? "", Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
    });
  return {
    api,
    publish: async (type = "order.created") => {
      const res = await api("/v1/events", { method: "POST", body: JSON.stringify({ type, data: { at: Date.now() } }) });
      const answered = performance.now();
      return { id: (await json<{ id: string }>(res)).id, answered };
    },
    config: async (r, extra = {}) => {
      const res = await api("/v1/webhook-configurations", {
        method: "POST",
        body: JSON.stringify({
          url: `${r.url}/hook`,
          oauth: { token_url: `${r.url}/token`, client_id: "keyway", client_secret: "loopback-secret" },
          ...extra,
        }),
      });
      return (await json<{ id: string }>(res)).id;
    },
  };
}

/** What a lane held behind the throttling receiver would wait at least: its Retry-After. */
const HELD_MS = 2_000;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN);
};

/** Publish-answer-to-receipt latencies of the events a receiver got (first receipt of each). */
function latencies(r: ScriptedReceiver, published: Map<string, number>): number[] {
  const first = new Map<string, number>();
  for (const a of r.arrivals) if (a.kind === "webhook" && !first.has(a.eventId)) first.set(a.eventId, a.at);
  return [...published].flatMap(([id, answered]) => (first.has(id) ? [(first.get(id) ?? 0) - answered] : []));
}

async function until(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await sleep(50);
}

const received = (r: ScriptedReceiver, ids: Iterable<string>) => {
  const got = new Set(r.arrivals.filter((a) => a.kind === "webhook" && a.status < 300).map((a) => a.eventId));
  return [...ids].filter((id) => got.has(id)).length;
};

describe("every webhook endpoint is its own lane", () => {
  it("a hanging, a failing and a throttling endpoint beside healthy ones, in the same organization and another: the healthy lanes' latency is unchanged", async () => {
    const [one, two] = [await client(), await client()];
    const a = await receiver();
    const b = await receiver();
    await one.config(a);
    await two.config(b);
    /** 30 events to each organization, 150 ms apart; the healthy receivers' latencies. */
    const run = async () => {
      const published = [new Map<string, number>(), new Map<string, number>()] as const;
      for (let i = 0; i < 30; i++) {
        const [e1, e2] = await Promise.all([one.publish(), two.publish()]);
        published[0].set(e1.id, e1.answered);
        published[1].set(e2.id, e2.answered);
        await sleep(150);
      }
      await until(() => received(a, published[0].keys()) === 30 && received(b, published[1].keys()) === 30, 30_000);
      return { a: latencies(a, published[0]), b: latencies(b, published[1]) };
    };
    const alone = await run();
    // A receiver that answers 503 after 8 s joins the first organization; one that fails at once and
    // one that throttles (429, Retry-After: 2), the second.
    const hanging = await receiver(() => ({ status: 503, delayMs: 8_000 }));
    const failing = await receiver(() => ({ status: 500 }));
    const throttling = await receiver(() => ({ status: 429, headers: { "Retry-After": "2" } }));
    const hangingId = await one.config(hanging);
    const failingId = await two.config(failing);
    const throttlingId = await two.config(throttling);
    const beside = await run();
    const figures = (xs: number[]) => `${xs.length}/30, p50 ${pct(xs, 50)} ms, p95 ${pct(xs, 95)} ms`;
    console.info(
      `lanes: alone a ${figures(alone.a)}, b ${figures(alone.b)}; beside a hanging, a failing and a throttling endpoint: a ${figures(beside.a)}, b ${figures(beside.b)}`,
    );
    for (const side of ["a", "b"] as const) {
      expect(beside[side]).toHaveLength(30);
      // Within noise: a healthy lane is not held by the others. Held, it would wait seconds: behind
      // the 8 s hang, or the 2 s Retry-After, so every event after the first would arrive 2 s late
      // or more. The median gets 100 ms of margin; the 95th percentile (the second slowest of 30)
      // 500 ms, and always under the 2 s a held lane waits. The margins are those of a two-core
      // machine running every tier beside this one, against one local server that is also retrying
      // the three unhealthy endpoints: one CI run saw a p95 of 705 ms beside 332 ms alone, a
      // sample that waited for the CPU, not for another lane.
      expect(pct(beside[side], 50)).toBeLessThanOrEqual(pct(alone[side], 50) + 100);
      expect(pct(beside[side], 95)).toBeLessThanOrEqual(pct(alone[side], 95) + 500);
      expect(pct(beside[side], 95)).toBeLessThan(HELD_MS);
    }
    // The hanging endpoint was moved to the slow lane; the failing one is being paced.
    const lane = async (c: Client, id: string) => (await json<{ lane: string }>(await c.api(`/v1/webhook-configurations/${id}`))).lane;
    expect(await lane(one, hangingId)).toBe("slow");
    expect(await lane(two, failingId)).toBe("fast");
    expect(failing.arrivals.filter((x) => x.kind === "webhook").length).toBeGreaterThan(0);
    // The throttling one was paused by its own answers: no request inside a pause it asked for.
    const hits = throttling.arrivals.filter((x) => x.kind === "webhook").map((x) => x.at);
    expect(hits.length).toBeGreaterThan(0);
    for (let i = 1; i < hits.length; i++) expect(hits[i]! - hits[i - 1]!).toBeGreaterThanOrEqual(1_900);
    expect(await lane(two, throttlingId)).toBe("fast");
  });

  it("a receiver that starts hanging holds the fast lane for at most the fast lane's deadline, once", async () => {
    const c = await client();
    const healthy = await receiver();
    let hang = false;
    const turning = await receiver(() => (hang ? { status: 204, delayMs: 20_000 } : { status: 204 }));
    await c.config(healthy);
    await c.config(turning);
    const published = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      if (i === 10) hang = true;
      const e = await c.publish();
      published.set(e.id, e.answered);
      await sleep(100);
    }
    await until(() => received(healthy, published.keys()) === 40, 30_000);
    const l = latencies(healthy, published);
    console.info(
      `lanes: beside a receiver that starts hanging: ${l.length}/40, p50 ${pct(l, 50)} ms, p95 ${pct(l, 95)} ms, max ${pct(l, 100)} ms`,
    );
    expect(l).toHaveLength(40);
    // The stall: its attempt is cut off by the fast lane's 2 s deadline, once; then it is in the slow
    // lane. So the events that waited for it were published within one deadline of each other (a lane
    // held again would hold a second group), none waited much past the deadline, and most waited for
    // nothing: a lane held at every attempt would put the median past 2 s. The bounds are those of
    // the hold, not of the machine: a CI run on two busy cores put this median past 150 ms.
    const answered = [...published.values()];
    const held = answered.filter((_, i) => (l[i] ?? 0) >= 1_500);
    if (held.length > 0) expect(Math.max(...held) - Math.min(...held)).toBeLessThan(HELD_MS + 1_000);
    expect(pct(l, 50)).toBeLessThan(HELD_MS / 2);
    expect(pct(l, 100)).toBeLessThan(3_000);
  });
});

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
    const r = await startScriptedReceiver((a) => {
      if (a.eventId === ids[2] && !failed) {
        failed = true;
        return { status: 500 };
      }
      order.push(a.eventId);
      return { status: 204 };
    });
    receivers.push(r);
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
    const r = await startScriptedReceiver((a) => ({ status: a.authorization === valid ? 204 : 401 }), { expiresIn: 3600 });
    receivers.push(r);
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

describe("a fast first delivery", () => {
  it("one event to a healthy receiver arrives within 150 ms (p50) of the publish's answer", async () => {
    const c = await client();
    const r = await receiver();
    await c.config(r);
    const published = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const e = await c.publish();
      published.set(e.id, e.answered);
      await sleep(250);
    }
    await until(() => received(r, published.keys()) === 20, 10_000);
    const l = latencies(r, published);
    console.info(`first delivery: publish answer to receipt p50 ${pct(l, 50)} ms, p95 ${pct(l, 95)} ms (20 events, nothing else running)`);
    expect(l).toHaveLength(20);
    expect(pct(l, 50)).toBeLessThanOrEqual(150);
  });
});
