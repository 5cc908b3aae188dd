/**
 * Polling configurations (issue 45) through the REST API in the Workers runtime: creation (its
 * token shown once, no url, oauth or signing key), reads in publish order after a cursor, long
 * polling that returns on a publish, the credential of one configuration alone (another's token or
 * cursor reads nothing), rotation and revocation, retention's expired cursor, and the refusals of
 * what a polling configuration has no use for.
 */
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { api, endpointOf } from "./webhook-helpers";

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
  const res = await call(`/v1/polling-endpoints/${config.id}/events${query}`, { headers: { Authorization: `Bearer ${pollToken}` } });
  const json = await body<Page>(res.clone());
  return { status: res.status, page: json.data, res };
}

describe("polling configurations", () => {
  it("is created without url or oauth; its token is shown once and it has no signing key", async () => {
    const c = await createPolling();
    expect(c).toMatchObject({ delivery: "polling", url: null, oauth: null, signing_secret: null, signature_scheme: null });
    expect(c.polling.token).toMatch(/^kw_poll_[A-Za-z0-9_-]{43}$/);
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
});
