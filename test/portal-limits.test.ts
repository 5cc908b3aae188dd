/**
 * The portal's limits (issue 42 item 3; docs/receivers.md, "The portal's limits"), in workerd:
 * connection tests, test events, re-sends and recoveries from a portal session count against
 * limits of their own, per session and per configuration, kept by the configuration's
 * EndpointObject (objects/endpoints/meter.ts). The finding reproduced (25 rapid connection tests
 * and test events in one session: each was an outbound request or an event); a refused action
 * is a 429 page in words with Retry-After and sends nothing; refusals are not counted, so waiting
 * the Retry-After (the injected clock) gets through; the configuration's limit across two
 * sessions; another configuration's session unaffected; an action the domain refuses is given
 * back; counters are pruned by time. The decision itself is a pure function, tested last.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  CONNECTION_TEST_LIMITS,
  decide,
  type MeterCounter,
  RECOVER_LIMITS,
  RESEND_LIMITS,
  refund,
  TEST_EVENT_LIMITS,
} from "../src/objects/endpoints/meter";
import { fakeNetwork, receiver, TOKEN_URL } from "./fake-network";
import { ADMIN_TOKEN, BASE, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, createConfig, endpointOf } from "./webhook-helpers";

const SECRET = "receiver-client-secret-portal-limits-0123";
const MINUTE = 60_000;
const HOUR = 3_600_000;

interface Org {
  t: Tenant;
  bearer: string;
  configs: string[];
}

/** An organization with `n` configurations and no event (so nothing but the portal's actions reaches the network). */
async function org(n = 2): Promise<Org> {
  const t = await createTenant();
  const bearer = await issueToken(t);
  const configs: string[] = [];
  for (let i = 0; i < n; i++) configs.push((await createConfig(t, bearer, SECRET, { description: `endpoint ${i}` })).id);
  return { t, bearer, configs };
}

/** A portal session of configuration `config`, opened the way a browser opens its link. */
async function session(o: Org, config = 0): Promise<{ b: Browser; csrf: string }> {
  const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[config]}/portal-links`, "POST", {});
  const url = (await body<{ url: string }>(res)).data.url;
  const b = new Browser();
  const page = await (await b.get(url.slice(BASE.length))).text();
  const opened = await b.post("/portal/open", { csrf: Browser.csrf(page), token: new URL(url).searchParams.get("token") ?? "" });
  expect(opened.status).toBe(303);
  return { b, csrf: await b.csrfOf("/portal") };
}

/** A time `offset` ms into the next window of `size` ms (aligned to the clock, as the meter's windows are). */
const nextWindow = (size: number, offset = 100) => Math.ceil(Date.now() / size) * size + size + offset;

const retryAfter = (res: Response) => Number(res.headers.get("retry-after"));

async function deliveriesOf(o: Org, config: number, type: string): Promise<string[]> {
  const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[config]}/deliveries?event_type=${type}&limit=100`);
  return (await body<{ id: string }[]>(res)).data.map((d) => d.id);
}

/** The endpoint object's counters, as stored. */
const meterRows = (configId: string) =>
  runInDurableObject(endpointOf(configId), (_i, state) =>
    state.storage.sql
      .exec<MeterCounter & Record<string, SqlStorageValue>>("SELECT * FROM portal_meter ORDER BY expires_ms, scope")
      .toArray(),
  );

async function auditActions(orgId: string, action: string): Promise<number> {
  const res = await call(`/admin/v1/organizations/${orgId}/audit-log?limit=100`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  return (await body<{ action: string }[]>(res)).data.filter((e) => e.action === action).length;
}

describe("the portal's limits: the finding reproduced", () => {
  it("25 connection tests in 0.9 s from one session: one token request, 24 answers 429 in words with Retry-After; after it, admitted again", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const sent = fakeNetwork(receiver());
    const t0 = nextWindow(MINUTE);
    const answers: Response[] = [];
    for (let i = 0; i < 25; i++) answers.push(await b.post("/portal/test-connection", { csrf }, t0 + Math.round((i * 900) / 24)));
    const statuses = answers.map((r) => r.status);
    const admitted = statuses.filter((s) => s === 200).length;
    expect(admitted, statuses.join(",")).toBe(CONNECTION_TEST_LIMITS.session.limit);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25 - admitted);
    expect(sent.filter((r) => r.url === TOKEN_URL)).toHaveLength(admitted);
    const refused = answers.filter((r) => r.status === 429);
    const waits = refused.map(retryAfter);
    // The session's window of 5 s began at t0 - 100 ms: 5 s at t0, 4 s by t0 + 900 ms.
    expect(Math.max(...waits)).toBe(5);
    expect(Math.min(...waits)).toBe(4);
    const first = refused[0] as Response;
    expect(first.headers.get("ratelimit-policy")).toBe('"session";q=1;w=5, "configuration";q=10;w=60');
    expect(first.headers.get("ratelimit")).toBe('"session";r=0;t=5');
    const page = await first.text();
    expect(page).toMatch(/<title>[^<]*Too many requests/);
    expect(page).toContain("Too many connection tests: a portal session may make 1 every 5 s.");
    expect(page).toContain("No request was made to the token endpoint. Try again in 5 s (at ");
    // Waiting the last Retry-After gets through: refusals were not counted.
    const last = t0 + 900;
    const again = await b.post("/portal/test-connection", { csrf }, last + waits.at(-1)! * 1000);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain("Connection test: a token was issued");
    expect(sent.filter((r) => r.url === TOKEN_URL)).toHaveLength(admitted + 1);
  });

  it("25 test events in 2.1 s from one session: one event a second, the rest 429 and published nothing", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const t0 = nextWindow(MINUTE);
    const statuses: number[] = [];
    const waits: number[] = [];
    for (let i = 0; i < 25; i++) {
      const res = await b.post("/portal/test", { csrf }, t0 + Math.round((i * 2100) / 24));
      statuses.push(res.status);
      if (res.status === 429) waits.push(retryAfter(res));
    }
    // t0 is 100 ms into a second: the 25 span the seconds t0, t0 + 1 s and t0 + 2 s.
    const admitted = statuses.filter((s) => s === 303).length;
    expect(admitted, statuses.join(",")).toBe(3 * TEST_EVENT_LIMITS.session.limit);
    expect(statuses.filter((s) => s === 429)).toHaveLength(22);
    expect(new Set(waits)).toEqual(new Set([1]));
    expect(await deliveriesOf(o, 0, "webhook.test")).toHaveLength(admitted);
    const page = await (await b.post("/portal/test", { csrf }, t0 + 2100)).text();
    expect(page).toContain("Too many test events: a portal session may make 1 a second. No test event was sent.");
  });
});

describe("the portal's limits per configuration", () => {
  it("are shared by a configuration's sessions; another configuration's session is not affected; waiting Retry-After admits again", async () => {
    const o = await org(2);
    const one = await session(o, 0);
    const two = await session(o, 0);
    const other = await session(o, 1);
    const sent = fakeNetwork(receiver());
    const t0 = nextWindow(MINUTE);
    // Each session may test once every 5 s; together they reach the configuration's 10 a minute in 25 s.
    for (let step = 0; step < 5; step++) {
      for (const s of [one, two]) expect((await s.b.post("/portal/test-connection", { csrf: s.csrf }, t0 + step * 5000)).status).toBe(200);
    }
    expect(sent).toHaveLength(CONNECTION_TEST_LIMITS.configuration.limit);
    const at = t0 + 25_000;
    for (const s of [one, two]) {
      const res = await s.b.post("/portal/test-connection", { csrf: s.csrf }, at);
      expect(res.status).toBe(429);
      // The minute's window began 100 ms before t0.
      expect(retryAfter(res)).toBe(35);
      expect(res.headers.get("ratelimit")).toBe('"configuration";r=0;t=35');
      expect(await res.text()).toContain(
        "Too many connection tests for this endpoint: its portal sessions together may make 10 a minute. No request was made to the token endpoint. Try again in 35 s",
      );
    }
    expect(sent).toHaveLength(10);
    // Isolation: the other configuration's session tests at once.
    expect((await other.b.post("/portal/test-connection", { csrf: other.csrf }, at)).status).toBe(200);
    expect(sent).toHaveLength(11);
    // After the Retry-After the configuration's window is new.
    expect((await one.b.post("/portal/test-connection", { csrf: one.csrf }, at + 35_000)).status).toBe(200);
    expect(sent).toHaveLength(12);
  });

  it("meter re-sends (5 a second a session) and recoveries (one every 10 s a session, 6 an hour an endpoint)", async () => {
    const o = await org(1);
    fakeNetwork(receiver());
    const event = await body<{ deliveries: { id: string }[] }>(
      await api(o.t, o.bearer, "/v1/events", "POST", { type: "order.created", data: { n: 1 } }),
    );
    const delivery = event.data.deliveries[0]?.id ?? "";
    const { b, csrf } = await session(o);
    const t0 = nextWindow(HOUR);
    const resends: number[] = [];
    for (let i = 0; i < 8; i++) resends.push((await b.post(`/portal/deliveries/${delivery}/resend`, { csrf }, t0 + i * 10)).status);
    expect(resends, resends.join(",")).toEqual([...Array(RESEND_LIMITS.session.limit).fill(303), 429, 429, 429]);
    expect(await auditActions(o.t.orgId, "delivery.resent")).toBe(RESEND_LIMITS.session.limit);

    const since = new Date(t0 - HOUR).toISOString().slice(0, 16);
    const statuses: number[] = [];
    // Two sessions, every 10 s: the endpoint's 6 an hour are reached in 30 s.
    const second = await session(o);
    for (let step = 0; step < 4; step++) {
      for (const s of [{ b, csrf }, second]) {
        statuses.push((await s.b.post("/portal/recover", { csrf: s.csrf, since, until: "" }, t0 + step * 10_000)).status);
      }
    }
    expect(statuses).toEqual([303, 303, 303, 303, 303, 303, 429, 429]);
    const limited = await b.post("/portal/recover", { csrf, since, until: "" }, t0 + 40_000);
    expect(limited.status).toBe(429);
    expect(retryAfter(limited)).toBe(Math.ceil((HOUR - 40_100) / 1000));
    expect(await limited.text()).toContain(
      `Too many recoveries for this endpoint: its portal sessions together may make ${RECOVER_LIMITS.configuration.limit} an hour. No recovery was started.`,
    );
    const started = await body<unknown[]>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]}/recoveries?limit=100`));
    expect(started.data).toHaveLength(RECOVER_LIMITS.configuration.limit);
  });

  it("give back an action the domain refuses before it starts anything, so a corrected form is not limited", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const t0 = nextWindow(MINUTE);
    // A window in the future, a window older than the deliveries kept: refused by the domain (400), given back.
    for (const window of [
      { since: "2099-01-01T00:00", until: "" },
      { since: "2001-01-01T00:00", until: "2001-01-02T00:00" },
    ]) {
      expect((await b.post("/portal/recover", { csrf, ...window }, t0)).status).toBe(400);
    }
    // Not the form's own check (zod: nothing reached the meter), but the domain's, after the meter admitted it.
    const since = new Date(t0 - HOUR).toISOString().slice(0, 16);
    expect((await b.post("/portal/recover", { csrf, since, until: "" }, t0 + 40)).status).toBe(303);
    // That one counted: the next within 10 s is refused.
    expect((await b.post("/portal/recover", { csrf, since, until: "" }, t0 + 50)).status).toBe(429);
    const counters = await meterRows(o.configs[0] ?? "");
    expect(counters.filter((r) => r.action === "recover").map((r) => r.count)).toEqual([1, 1]);
  });

  it("keep a counter until its window ends: each call prunes those past", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    fakeNetwork(receiver());
    const t0 = nextWindow(MINUTE);
    for (let i = 0; i < 5; i++) expect((await b.post("/portal/test-connection", { csrf }, t0 + i * 5000)).status).toBe(200);
    const rows = () => meterRows(o.configs[0] ?? "");
    // The session's windows of 5 s ended but the last; the configuration's minute goes on.
    expect(await rows()).toHaveLength(2);
    expect((await b.post("/portal/test", { csrf }, t0 + 2 * MINUTE)).status).toBe(303);
    const left = await rows();
    expect(left.every((r) => Number(r.expires_ms) > t0 + 2 * MINUTE)).toBe(true);
    expect(left).toHaveLength(2);
  });
});

describe("the portal's meter, as a pure function", () => {
  const request = { action: "connection_test" as const, session: "pts_a" };

  it("admits while both windows have room, counting in each; refuses the window ending last, counting nothing", () => {
    const now = 120_000;
    const first = decide([], request, now);
    expect(first.admitted).toBe(true);
    expect(first.writes).toEqual([
      { action: "connection_test", scope: "session:pts_a", window_start_ms: 120_000, count: 1, expires_ms: 125_000 },
      { action: "connection_test", scope: "configuration", window_start_ms: 120_000, count: 1, expires_ms: 180_000 },
    ]);
    const second = decide(first.writes, request, now + 1000);
    expect(second).toMatchObject({ admitted: false, writes: [], refusal: { scope: "session", retryAfterSeconds: 4, resetAt: 125_000 } });
    // Both full: the configuration's minute ends last, so its Retry-After is the one that admits.
    const full: MeterCounter[] = [
      { action: "connection_test", scope: "session:pts_a", window_start_ms: 120_000, count: 1, expires_ms: 125_000 },
      { action: "connection_test", scope: "configuration", window_start_ms: 120_000, count: 10, expires_ms: 180_000 },
    ];
    expect(decide(full, request, now + 1000)).toMatchObject({
      admitted: false,
      refusal: { scope: "configuration", retryAfterSeconds: 59 },
    });
    // Another session of the configuration: refused by the configuration's window only.
    expect(decide(full, { ...request, session: "pts_b" }, now + 1000)).toMatchObject({
      admitted: false,
      refusal: { scope: "configuration" },
    });
    // Another action's counters do not count.
    expect(decide(full, { action: "resend", session: "pts_a" }, now + 1000).admitted).toBe(true);
  });

  it("never moves a window backwards (a clock behind counts in the newest window), and refunds what a charge counted", () => {
    const stored: MeterCounter[] = [
      { action: "test_event", scope: "session:pts_a", window_start_ms: 10_000, count: 1, expires_ms: 11_000 },
    ];
    expect(decide(stored, { action: "test_event", session: "pts_a" }, 9_500)).toMatchObject({
      admitted: false,
      refusal: { scope: "session", resetAt: 11_000, retryAfterSeconds: 2 },
    });
    const admitted = decide([], { action: "test_event", session: "pts_a" }, 20_000);
    if (!admitted.admitted) throw new Error("expected an admission");
    expect(refund(admitted.writes, admitted.charge).map((w) => w.count)).toEqual([0, 0]);
    // A counter already pruned (its window over) needs nothing.
    expect(refund([], admitted.charge)).toEqual([]);
  });
});

// The object's own table, as a new endpoint object has it.
describe("the portal's meter table", () => {
  it("exists in a new endpoint's object, with its index on the expiry", async () => {
    const o = await org(1);
    const tables = await runInDurableObject(endpointOf(o.configs[0] ?? ""), (_instance, state) =>
      state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'portal_meter%'")
        .toArray()
        .map((r) => r.name),
    );
    expect(tables.sort()).toEqual(["portal_meter", "portal_meter_expiry"]);
  });
});
