/**
 * Polling configurations (issue 45) through the REST API in the Workers runtime: creation (its
 * token shown once, no url, oauth or signing key), reads in publish order after a cursor, long
 * polling that returns on a publish, the credential of one configuration alone (another's token or
 * cursor reads nothing), rotation and revocation, retention's expired cursor, the refusals of what
 * a polling configuration has no use for, and the at-least-once rule as a property (a read from any
 * earlier cursor answers exactly what was published after it).
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import { EVENT_RETENTION_DAYS } from "../src/objects/webhooks/limits";
import { body, call, callAt, counting, createTenant, issueToken, type Tenant, unreachable, withObjectEnv } from "./helpers";
import { api, endpointOf, webhooksOf } from "./webhook-helpers";

/** This file's own client address: refused reads are rate-limited per client (webhooks/polling.ts). */
const CLIENT = `10.45.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant({ per_second: 1000, per_day: 1_000_000 });
  token = await issueToken(t);
});

interface Created {
  id: string;
  url: string | null;
  oauth: unknown;
  delivery: string;
  signing_secret: string | null;
  signature_scheme: string | null;
  polling: { url: string; token: string; token_active: boolean; backlog: number; last_polled_at: string | null };
}

async function createPolling(overrides: Record<string, unknown> = {}): Promise<Created> {
  const res = await api(t, token, "/v1/webhook-configurations", "POST", { delivery: "polling", description: "pull", ...overrides });
  const json = await body<Created>(res);
  expect(res.status, JSON.stringify(json)).toBe(201);
  return json.data;
}

async function publish(type = "order.created", data: unknown = { n: 1 }): Promise<string> {
  const res = await api(t, token, "/v1/events", "POST", { type, data });
  const json = await body<{ id: string }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data.id;
}

interface Page {
  events: { id: string; type: string; created_at: string; data: unknown }[];
  next_cursor: string;
  has_more: boolean;
}

async function read(config: Pick<Created, "id">, pollToken: string, query = ""): Promise<{ status: number; page: Page; res: Response }> {
  const res = await call(`/v1/polling-endpoints/${config.id}/events${query}`, {
    headers: { Authorization: `Bearer ${pollToken}`, "cf-connecting-ip": CLIENT },
  });
  const json = await body<Page>(res.clone());
  return { status: res.status, page: json.data, res };
}

describe("polling configurations", () => {
  it("is created without url or oauth; its token is shown once and it has no signing key", async () => {
    const c = await createPolling();
    expect(c).toMatchObject({ delivery: "polling", url: null, oauth: null, signing_secret: null, signature_scheme: null });
    expect(c.polling.token).toMatch(/^kw_poll_[A-Za-z0-9-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(c.polling.url).toMatch(new RegExp(`/v1/polling-endpoints/${c.id}/events$`));
    const view = await body<Record<string, unknown>>(await api(t, token, `/v1/webhook-configurations/${c.id}`));
    expect(JSON.stringify(view)).not.toContain(c.polling.token);
    expect(view.data.polling).toMatchObject({ token_active: true, backlog: 0, last_polled_at: null });
  });

  it("reads three events in order in one page, nothing after the cursor, then exactly the next one", async () => {
    const c = await createPolling();
    const ids = [await publish("order.created", { n: 1 }), await publish("order.paid", { n: 2 }), await publish("order.created", { n: 3 })];
    const first = await read(c, c.polling.token);
    expect(first.status).toBe(200);
    expect(first.page.events.map((e) => e.id)).toEqual(ids);
    expect(first.page.events[1]).toMatchObject({ type: "order.paid", data: { n: 2 } });
    expect(first.page.has_more).toBe(false);
    const empty = await read(c, c.polling.token, `?after=${first.page.next_cursor}`);
    expect(empty.page.events).toEqual([]);
    expect(empty.page.next_cursor).toBe(first.page.next_cursor);
    const fourth = await publish("order.created", { n: 4 });
    const next = await read(c, c.polling.token, `?after=${first.page.next_cursor}`);
    expect(next.page.events.map((e) => e.id)).toEqual([fourth]);
  });

  it("a read makes exactly one Durable Object call (the configuration's endpoint object), and none for a malformed token", async () => {
    const c = await createPolling();
    await publish();
    const { bindings, calls } = counting();
    const res = await callAt(
      Date.now(),
      `/v1/polling-endpoints/${c.id}/events`,
      { headers: { Authorization: `Bearer ${c.polling.token}` } },
      bindings,
    );
    expect(res.status).toBe(200);
    expect(calls).toEqual(["ENDPOINTS.poll"]);
    calls.length = 0;
    const refused = await callAt(
      Date.now(),
      `/v1/polling-endpoints/${c.id}/events`,
      { headers: { Authorization: "Bearer kw_at_x" } },
      bindings,
    );
    expect(refused.status).toBe(401);
    expect(calls).toEqual([]);
  });

  it("a waiting read returns as soon as an event is published, and one configuration's wait holds up no other's read", async () => {
    const a = await createPolling();
    const b = await createPolling();
    const startA = await read(a, a.polling.token);
    const started = Date.now();
    const waiting = read(a, a.polling.token, `?after=${startA.page.next_cursor}&wait=20`);
    // B reads (and A's object takes hand-overs) while A's read waits.
    const other = await read(b, b.polling.token, "?wait=0");
    expect(other.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    await new Promise((r) => setTimeout(r, 200));
    const published = Date.now();
    const id = await publish("order.created", { waited: true });
    const got = await waiting;
    expect(got.page.events.map((e) => e.id)).toContain(id);
    expect(Date.now() - published).toBeLessThan(2000);
  });

  it("an empty read with wait answers empty when the wait ends", async () => {
    const c = await createPolling({ events: ["nothing.ever"] });
    const started = Date.now();
    const got = await read(c, c.polling.token, "?wait=1");
    expect(got.status).toBe(200);
    expect(got.page.events).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("reads only its own events, filtered by type like any configuration", async () => {
    const only = await createPolling({ events: ["invoice.sent"] });
    await publish("order.created", { skip: true });
    const sentId = await publish("invoice.sent", { keep: true });
    const got = await read(only, only.polling.token);
    expect(got.page.events.map((e) => e.id)).toEqual([sentId]);
  });

  it("another configuration's token reads nothing (401) and its cursor reads nothing (404)", async () => {
    const a = await createPolling();
    const b = await createPolling();
    await publish("order.created", { secret: "a's" });
    const wrongToken = await read(a, b.polling.token);
    expect(wrongToken.status).toBe(401);
    expect(wrongToken.res.headers.get("www-authenticate")).toMatch(/^Bearer realm="keyway-polling"/);
    const refusal = (await wrongToken.res.json()) as { user_message: string };
    expect(JSON.stringify(refusal)).not.toContain("a's");
    // A machine's credential was refused: nobody is "signed in" here.
    expect(refusal.user_message).toBe("The polling token was not accepted: it is missing, mistyped, rotated or revoked.");
    const none = (await (await call(`/v1/polling-endpoints/${a.id}/events`)).json()) as { user_message: string };
    expect(none.user_message).toMatch(/^The polling token was not accepted/);
    const bCursor = (await read(b, b.polling.token)).page.next_cursor;
    const wrongCursor = await read(a, a.polling.token, `?after=${bCursor}`);
    expect(wrongCursor.status).toBe(404);
    // No token, an API key's access token, garbage, and an unknown configuration.
    expect((await call(`/v1/polling-endpoints/${a.id}/events`)).status).toBe(401);
    expect((await call(`/v1/polling-endpoints/${a.id}/events`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(401);
    expect((await read(a, "kw_poll_not-a-real-token")).status).toBe(401);
    // An unknown configuration answers as a wrong token does: no caller learns which ids exist.
    expect((await read({ id: "whk_00000000000000000000000000" }, a.polling.token)).status).toBe(401);
    // Bad query parameters are 400, never a 5xx.
    for (const q of ["?limit=0", "?limit=101", "?wait=21", "?wait=-1", "?limit=abc", `?after=${"x".repeat(600)}`, "?after=%E0%A4%A"]) {
      expect([400, 404], q).toContain((await read(a, a.polling.token, q)).status);
    }
    expect((await read(a, a.polling.token, "?after=bm90LWEtY3Vyc29y")).status).toBe(404);
  });

  it("a rotated-out or revoked token reads nothing; a read waiting with it ends; a rotated-in token reads", async () => {
    const c = await createPolling();
    await publish();
    const first = await read(c, c.polling.token);
    const waiting = read(c, c.polling.token, `?after=${first.page.next_cursor}&wait=20`);
    await new Promise((r) => setTimeout(r, 200));
    const revoked = await api(t, token, `/v1/webhook-configurations/${c.id}/polling-token`, "DELETE");
    expect(revoked.status).toBe(200);
    expect((await body<{ polling: { token_active: boolean } }>(revoked)).data.polling.token_active).toBe(false);
    const ended = await waiting;
    expect(ended.status).toBe(401);
    expect((await read(c, c.polling.token)).status).toBe(401);
    const rotated = await api(t, token, `/v1/webhook-configurations/${c.id}/rotate-polling-token`, "POST");
    const next = (await body<{ polling: { token: string; token_active: boolean } }>(rotated)).data.polling;
    expect(next.token_active).toBe(true);
    expect((await read(c, next.token)).status).toBe(200);
    expect((await read(c, c.polling.token)).status).toBe(401);
    const again = await api(t, token, `/v1/webhook-configurations/${c.id}/rotate-polling-token`, "POST");
    const third = (await body<{ polling: { token: string } }>(again)).data.polling.token;
    expect((await read(c, next.token)).status).toBe(401);
    expect((await read(c, third)).status).toBe(200);
  });

  it("refuses what a polling configuration has no use for, and push-only actions on it", async () => {
    const bad = await api(t, token, "/v1/webhook-configurations", "POST", { delivery: "polling", url: "https://receiver.example/hook" });
    expect(bad.status).toBe(400);
    const noUrl = await api(t, token, "/v1/webhook-configurations", "POST", { events: ["order.created"] });
    expect(noUrl.status).toBe(400);
    const c = await createPolling();
    for (const patch of [{ url: "https://receiver.example/x" }, { status: "paused" }, { rate_limit: 5 }, { ordered: false }]) {
      expect((await api(t, token, `/v1/webhook-configurations/${c.id}`, "PATCH", patch)).status, JSON.stringify(patch)).toBe(400);
    }
    expect((await api(t, token, `/v1/webhook-configurations/${c.id}`, "PATCH", { description: "renamed" })).status).toBe(200);
    expect((await api(t, token, `/v1/webhook-configurations/${c.id}/rotate-signing-secret`, "POST")).status).toBe(409);
    expect((await api(t, token, `/v1/webhook-configurations/${c.id}/test-connection`, "POST")).status).toBe(409);
    const test = await api(t, token, `/v1/webhook-configurations/${c.id}/test`, "POST");
    expect(test.status).toBe(202);
    const delivery = (await body<{ deliveries: { id: string }[] }>(test)).data.deliveries[0]!.id;
    expect((await api(t, token, `/v1/deliveries/${delivery}/retry`, "POST")).status).toBe(409);
    const push = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: "https://receiver.example/hook",
      oauth: { token_url: "https://receiver.example/token", client_id: "k", client_secret: "s" },
    });
    const pushId = (await body<{ id: string }>(push)).data.id;
    expect((await api(t, token, `/v1/webhook-configurations/${pushId}/rotate-polling-token`, "POST")).status).toBe(409);
    expect((await api(t, token, `/v1/webhook-configurations/${pushId}/polling-token`, "DELETE")).status).toBe(409);
  });

  it("marks what the receiver read past as delivered, and shows the backlog and the last read", async () => {
    const c = await createPolling({ events: ["backlog.item"] });
    for (let i = 0; i < 3; i++) await publish("backlog.item", { i });
    const before = (
      await body<{ polling: { backlog: number; last_polled_at: string | null } }>(await api(t, token, `/v1/webhook-configurations/${c.id}`))
    ).data;
    expect(before.polling).toMatchObject({ backlog: 3, last_polled_at: null });
    const page = await read(c, c.polling.token, "?limit=2");
    expect(page.page.has_more).toBe(true);
    await read(c, c.polling.token, `?after=${page.page.next_cursor}`);
    const after = (
      await body<{ polling: { backlog: number; last_polled_at: string | null } }>(await api(t, token, `/v1/webhook-configurations/${c.id}`))
    ).data;
    expect(after.polling.backlog).toBe(1);
    expect(after.polling.last_polled_at).not.toBeNull();
    const deliveries = (await body<{ status: string }[]>(await api(t, token, `/v1/webhook-configurations/${c.id}/deliveries`))).data;
    expect(deliveries.map((d) => d.status).sort()).toEqual(["delivered", "delivered", "pending"]);
  });

  it("refuses a cursor below what retention deleted (410), rather than skip events silently", async () => {
    const c = await createPolling({ events: ["old.event"] });
    await publish("old.event", { n: 1 });
    const start = await read(c, ""); // 401: an empty token
    expect(start.status).toBe(401);
    const first = await read(c, c.polling.token);
    // Age the event past retention and run the endpoint's housekeeping.
    await runInDurableObject(endpointOf(c.id), (_o, state) => {
      state.storage.sql.exec("UPDATE deliveries SET created_ms = created_ms - ?", (EVENT_RETENTION_DAYS + 1) * 86_400_000);
    });
    await publish("old.event", { n: 2 });
    await runDurableObjectAlarm(endpointOf(c.id));
    const zero = await read(c, c.polling.token, `?after=${encodeURIComponent(btoa(`${c.id}:0`).replaceAll("=", ""))}`);
    expect(zero.status).toBe(410);
    expect(JSON.stringify(await zero.res.json())).toContain("cursor_expired");
    // The receiver's own cursor, past the deleted event, still reads.
    const next = await read(c, c.polling.token, `?after=${first.page.next_cursor}`);
    expect(next.status).toBe(200);
    expect(next.page.events.map((e) => e.data)).toEqual([{ n: 2 }]);
  });
});

describe("polling: hand-overs repeated, late or concurrent", () => {
  // A tenant of its own: an organization holds at most 20 configurations.
  beforeAll(async () => {
    t = await createTenant({ per_second: 1000, per_day: 1_000_000 });
    token = await issueToken(t);
  });

  const delivery = (configId: string, seq: number, n: number) => ({
    id: `${configId}_d${n}`,
    seq,
    event_id: `evt_late${n}`,
    event_type: "order.created",
    body: JSON.stringify({ id: `evt_late${n}`, type: "order.created", created_at: new Date().toISOString(), data: { n } }),
    created_ms: Date.now(),
    created_at: new Date().toISOString(),
  });

  it("a repeated hand-over adds nothing; a late one (lower publish sequence, after a read) is read next, never skipped", async () => {
    const c = await createPolling({ events: ["never.published"] });
    const stub = endpointOf(c.id);
    expect((await stub.accept(null, [delivery(c.id, 1_000_002, 2)], Date.now())).accepted).toBe(true);
    await stub.accept(null, [delivery(c.id, 1_000_002, 2)], Date.now());
    const first = await read(c, c.polling.token);
    expect(first.page.events.map((e) => e.data)).toEqual([{ n: 2 }]);
    // A delivery of an earlier publish arrives only now (a hand-over retried after a failure).
    await stub.accept(null, [delivery(c.id, 1_000_001, 1)], Date.now());
    const next = await read(c, c.polling.token, `?after=${first.page.next_cursor}`);
    expect(next.page.events.map((e) => e.data)).toEqual([{ n: 1 }]);
    const rows = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("SELECT count(*) AS n FROM deliveries").one().n);
    expect(rows).toBe(2);
  });

  it("reads whose wait ran out leave no trace: ten of them, then an eleventh still waits", async () => {
    const c = await createPolling({ events: ["quiet.event"] });
    await Promise.all(Array.from({ length: 10 }, () => read(c, c.polling.token, "?wait=1")));
    const began = Date.now();
    const eleventh = await read(c, c.polling.token, "?wait=2");
    expect(eleventh.page.events).toEqual([]);
    expect(Date.now() - began).toBeGreaterThanOrEqual(1800);
  });

  it("a cursor past the last position given is refused (404), and the accounting stays right", async () => {
    const c = await createPolling({ events: ["ahead.event"] });
    const ahead = btoa(`${c.id}:1000000`).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
    expect((await read(c, c.polling.token, `?after=${ahead}`)).status).toBe(404);
    await publish("ahead.event", { n: 1 });
    await publish("ahead.event", { n: 2 });
    const view = async () =>
      (await body<{ polling: { backlog: number } }>(await api(t, token, `/v1/webhook-configurations/${c.id}`))).data.polling.backlog;
    expect(await view()).toBe(2);
    const page = await read(c, c.polling.token);
    expect(page.page.events).toHaveLength(2);
    await read(c, c.polling.token, `?after=${page.page.next_cursor}`);
    expect(await view()).toBe(0);
  });

  it("without a cursor, a read starts at the oldest event kept, even when retention deleted one handed over later", async () => {
    const c = await createPolling({ events: ["never.published"] });
    const stub = endpointOf(c.id);
    await stub.accept(null, [delivery(c.id, 2_000_001, 11)], Date.now());
    const old = { ...delivery(c.id, 2_000_000, 10), created_ms: Date.now() - (EVENT_RETENTION_DAYS + 1) * 86_400_000 };
    await stub.accept(null, [old], Date.now());
    await runDurableObjectAlarm(stub);
    const fresh = await read(c, c.polling.token);
    expect(fresh.page.events.map((e) => e.data)).toEqual([{ n: 11 }]);
    // A cursor before the deleted one cannot tell what it missed: 410, not a silent gap.
    const zero = btoa(`${c.id}:0`).replaceAll("=", "");
    expect((await read(c, c.polling.token, `?after=${zero}`)).status).toBe(410);
  });

  it("disabling a polling configuration announces nothing (it has no endpoint in trouble)", async () => {
    const c = await createPolling();
    expect((await api(t, token, `/v1/webhook-configurations/${c.id}`, "PATCH", { status: "disabled" })).status).toBe(200);
    const notices = await runInDurableObject(
      endpointOf(c.id),
      (_o, state) => state.storage.sql.exec("SELECT count(*) AS n FROM notices").one().n,
    );
    expect(notices).toBe(0);
    // Disabled, nothing is handed over (the status contract): 409, at the edge and in the object.
    expect((await read(c, c.polling.token)).status).toBe(409);
  });

  it("a revocation its endpoint has not taken is not answered as done (503), and holds once the push lands", async () => {
    const c = await createPolling();
    expect((await read(c, c.polling.token)).status).toBe(200);
    const restore = await withObjectEnv(webhooksOf(t.orgId), (real) => unreachable(real, "ENDPOINTS", "sync", "accept"));
    const pending = await api(t, token, `/v1/webhook-configurations/${c.id}/polling-token`, "DELETE");
    expect(pending.status).toBe(503);
    expect(pending.headers.get("retry-after")).not.toBeNull();
    await restore();
    // The organization's alarm pushes what its endpoint lacks; the old token reads nothing after.
    await runDurableObjectAlarm(webhooksOf(t.orgId));
    expect((await read(c, c.polling.token)).status).toBe(401);
    const again = await api(t, token, `/v1/webhook-configurations/${c.id}/polling-token`, "DELETE");
    expect(again.status).toBe(200);
  });

  it("a caller's clock skewed an hour ahead does not lengthen a read's wait", async () => {
    const c = await createPolling({ events: ["never.published"] });
    const began = Date.now();
    const got = await endpointOf(c.id).poll(
      { token_hash: await sha256Hex(c.polling.token), cursor: null, limit: 10, wait_ms: 1000 },
      Date.now() + 3_600_000,
    );
    expect(got.ok).toBe(true);
    expect(Date.now() - began).toBeGreaterThanOrEqual(900);
    expect(Date.now() - began).toBeLessThan(5000);
  });

  it("ten reads waiting at once are all answered by one publish; an eleventh is answered at once", async () => {
    const c = await createPolling({ events: ["fanin.event"] });
    const start = (await read(c, c.polling.token)).page.next_cursor;
    const waiting = Array.from({ length: 10 }, () => read(c, c.polling.token, `?after=${start}&wait=20`));
    await new Promise((r) => setTimeout(r, 300));
    const began = Date.now();
    const eleventh = await read(c, c.polling.token, `?after=${start}&wait=20`);
    expect(eleventh.page.events).toEqual([]);
    expect(Date.now() - began).toBeLessThan(2000);
    const id = await publish("fanin.event", { all: true });
    for (const got of await Promise.all(waiting)) expect(got.page.events.map((e) => e.id)).toEqual([id]);
  });
});

/**
 * The at-least-once rule as a model of the reader (polling.ts, docs/receivers.md "Polling"): every
 * cursor the reader was ever given is kept with the position it stands for (the number of this
 * configuration's published events up to it; the start, no `after`, is 0). A read from any kept
 * cursor answers exactly the published events after that position, in order, up to `limit` (the
 * prefix of that suffix), whatever later reads acknowledged meanwhile: an acknowledgement marks
 * deliveries `delivered`, it never hides them from an earlier cursor. No cursor here is refused:
 * none is past what was given, and nothing is old enough for retention (the run checks
 * `pruned_pos` stays 0; the 410 below it is the example test above).
 */
interface KeptCursor {
  cursor: string | null;
  /** How many of the published events come before it. */
  at: number;
}

interface ReaderModel {
  published: string[];
  kept: KeptCursor[];
  /** The cursor the reader follows (an index into `kept`). */
  latest: number;
  /** The highest position a read presented: what the endpoint holds as delivered. */
  acked: number;
  /** What reads following next_cursor saw, in order. */
  seen: string[];
  /** The cursor string each position was answered with: one position, one cursor. */
  cursorAt: Map<number, string>;
}

interface ReaderReal {
  config: Created;
  type: string;
  limit: number;
}

/** Rereads from a cursor older than the reader's own, after a later read acknowledged past it, that had events to answer. */
let rereadsPastAck = 0;

async function readPage(r: ReaderReal, from: string | null): Promise<Page> {
  const got = await read(r.config, r.config.polling.token, `?limit=${r.limit}${from === null ? "" : `&after=${from}`}`);
  expect(got.status, JSON.stringify(await got.res.clone().json())).toBe(200);
  return got.page;
}

/** A read from `from`: exactly the published suffix after it, up to the limit; its next_cursor is kept. */
async function readFrom(m: ReaderModel, r: ReaderReal, from: KeptCursor): Promise<{ ids: string[]; next: KeptCursor }> {
  const page = await readPage(r, from.cursor);
  const ids = page.events.map((e) => e.id);
  const expected = m.published.slice(from.at, from.at + r.limit);
  expect(ids, `read after position ${from.at} of ${m.published.length}`).toEqual(expected);
  expect(page.has_more).toBe(m.published.length > from.at + r.limit);
  const at = from.at + expected.length;
  const known = m.cursorAt.get(at);
  if (known !== undefined) expect(page.next_cursor, `the cursor of position ${at}`).toBe(known);
  else m.cursorAt.set(at, page.next_cursor);
  m.acked = Math.max(m.acked, from.at);
  let next = m.kept.find((k) => k.cursor === page.next_cursor);
  if (next === undefined) {
    next = { cursor: page.next_cursor, at };
    m.kept.push(next);
  }
  return { ids, next };
}

/** The reader reads after its own cursor, keeps what it saw and follows next_cursor. */
async function follow(m: ReaderModel, r: ReaderReal): Promise<boolean> {
  const { ids, next } = await readFrom(m, r, m.kept[m.latest]!);
  m.seen.push(...ids);
  m.latest = m.kept.indexOf(next);
  return next.at < m.published.length;
}

class PublishCommand implements fc.AsyncCommand<ReaderModel, ReaderReal> {
  check = () => true;
  async run(m: ReaderModel, r: ReaderReal): Promise<void> {
    m.published.push(await publish(r.type, { n: m.published.length }));
  }
  toString = () => "publish";
}

/** The reader reads on from its own cursor. */
class ReadCommand implements fc.AsyncCommand<ReaderModel, ReaderReal> {
  check = () => true;
  async run(m: ReaderModel, r: ReaderReal): Promise<void> {
    await follow(m, r);
  }
  toString = () => "read";
}

/** A read again from any cursor the reader was given before its own position (the start included); the reader's own cursor stays. */
class RereadCommand implements fc.AsyncCommand<ReaderModel, ReaderReal> {
  constructor(readonly pick: number) {}
  private earlier = (m: Readonly<ReaderModel>) => m.kept.filter((k) => k.at < m.kept[m.latest]!.at);
  check = (m: Readonly<ReaderModel>) => this.earlier(m).length > 0;
  async run(m: ReaderModel, r: ReaderReal): Promise<void> {
    const earlier = this.earlier(m);
    const from = earlier[this.pick % earlier.length]!;
    const pastAck = m.acked > from.at && m.published.length > from.at;
    await readFrom(m, r, from);
    if (pastAck) rereadsPastAck++;
  }
  toString = () => `reread(${this.pick})`;
}

describe("polling: the reader's rule as a property", () => {
  beforeAll(async () => {
    t = await createTenant({ per_second: 1000, per_day: 1_000_000 });
    token = await issueToken(t);
  });

  it("a read from any cursor ever given answers exactly the published events after it, even those a later read acknowledged; following next_cursor sees each once, in order", async () => {
    rereadsPastAck = 0;
    let shrinking = false;
    // Publishes cost a fan-out each, reads a call to the endpoint alone: mostly reads and rereads.
    const commands = fc.commands(
      [
        fc.oneof(
          { weight: 1, arbitrary: fc.constant(new PublishCommand()) },
          { weight: 2, arbitrary: fc.constant(new ReadCommand()) },
          { weight: 3, arbitrary: fc.nat({ max: 63 }).map((pick) => new RereadCommand(pick)) },
        ),
      ],
      { maxCommands: 40, size: "max" },
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), commands, async (limit, cmds) => {
        // A short sequence seldom gets past an acknowledgement before it ends: 24 to 40 commands,
        // until a run has failed (then fast-check shrinks it as short as it fails).
        fc.pre(shrinking || [...cmds].length >= 24);
        const type = `prop.e${Math.random().toString(36).slice(2, 8)}`;
        const config = await createPolling({ events: [type] });
        const model: ReaderModel = {
          published: [],
          kept: [{ cursor: null, at: 0 }],
          latest: 0,
          acked: 0,
          seen: [],
          cursorAt: new Map(),
        };
        const real: ReaderReal = { config, type, limit };
        try {
          await fc.asyncModelRun(() => ({ model, real }), cmds);
          // Drain: the reader following next_cursor ends with every event, once, in publish order.
          while (await follow(model, real));
          expect(model.seen).toEqual(model.published);
          // The endpoint holds what the model says: every event given a position, acknowledged
          // up to the highest cursor presented, and nothing deleted (so no kept cursor is refused).
          const row = await runInDurableObject(endpointOf(config.id), (_o, state) =>
            state.storage.sql
              .exec<{ poll_pos: number; acked_pos: number; pruned_pos: number }>("SELECT poll_pos, acked_pos, pruned_pos FROM endpoint")
              .one(),
          );
          expect(row).toEqual({ poll_pos: model.published.length, acked_pos: model.acked, pruned_pos: 0 });
        } catch (failed) {
          shrinking = true;
          throw failed;
        } finally {
          // At most 20 configurations per organization: each run removes its own.
          expect((await api(t, token, `/v1/webhook-configurations/${config.id}`, "DELETE")).status).toBe(200);
        }
      }),
      { numRuns: 6 },
    );
    // The generator reached the rule: rereads from behind an acknowledgement that had events to answer.
    expect(rereadsPastAck).toBeGreaterThanOrEqual(20);
  });
});
