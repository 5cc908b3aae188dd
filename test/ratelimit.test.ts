/**
 * Per-API-key limits (spec 8) enforced by the RateLimiter Durable Object: exact counting under
 * concurrency, window edges (injected clock), overrides, independence, persistence across
 * eviction, IETF RateLimit headers, and the fail-closed policy.
 */
import { abortAllDurableObjects, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import { admin, adminCall, authed, body, call, callAt, createTenant, issueToken, type Tenant, tokenRequest } from "./helpers";

const DEFAULTS = { per_second: 1, per_day: 1000 };
/** 2026-06-01T12:00:00.000Z: a whole second, mid-day. */
const NOON = Date.UTC(2026, 5, 1, 12, 0, 0);
const MIDNIGHT = Date.UTC(2026, 5, 2, 0, 0, 0);

async function tokenAt(t: Tenant, now: number) {
  const res = await callAt(now, "/v1/oauth", tokenRequest(t));
  return { res, json: await body(res) };
}

describe("rate limits", () => {
  it("gives two token requests within one second 200 then 429 with Retry-After: 1 (default limits)", async () => {
    const t = await createTenant(DEFAULTS);
    const first = await tokenAt(t, NOON + 100);
    expect(first.res.status).toBe(200);
    const second = await tokenAt(t, NOON + 600);
    expect(second.res.status).toBe(429);
    expect(second.res.headers.get("retry-after")).toBe("1");
    expect(second.json).toMatchObject({ response_status: 429, error: "rate_limited", data: null });
    expect(second.json.developer_message).toBe(
      "Rate limit exceeded: this API key allows 1 request per second. The window resets at 2026-06-01T12:00:01.000Z; retry in 1 s.",
    );
    expect(second.json.user_message).toMatch(/Too many requests/);
  });

  it("lets exactly one of 50 simultaneous requests through at 1 per second, per key", async () => {
    const [a, b] = [await createTenant(DEFAULTS), await createTenant(DEFAULTS)];
    const burst = (t: Tenant) => Array.from({ length: 50 }, () => callAt(NOON, "/v1/oauth", tokenRequest(t)));
    const results = await Promise.all([...burst(a), ...burst(b)]);
    const statuses = results.map((r) => r.status);
    expect(statuses.slice(0, 50).filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.slice(0, 50).filter((s) => s === 429)).toHaveLength(49);
    // Keys are independent: the other key's burst got its own one.
    expect(statuses.slice(50).filter((s) => s === 200)).toHaveLength(1);
  });

  it("admits exactly per_second of a burst when the limit is higher", async () => {
    const t = await createTenant({ per_second: 7, per_day: 1000 });
    const results = await Promise.all(Array.from({ length: 30 }, () => callAt(NOON, "/v1/me", authed(t, "x"))));
    // Refused by the token check, but counted: 7 reached it, 23 were limited.
    expect(results.filter((r) => r.status === 401)).toHaveLength(7);
    expect(results.filter((r) => r.status === 429)).toHaveLength(23);
  });

  it("refuses at 0.999 s and admits at 1.000 s (second window edge)", async () => {
    const t = await createTenant(DEFAULTS);
    expect((await tokenAt(t, NOON)).res.status).toBe(200);
    const edge = await tokenAt(t, NOON + 999);
    expect(edge.res.status).toBe(429);
    expect(edge.res.headers.get("retry-after")).toBe("1");
    expect((await tokenAt(t, NOON + 1000)).res.status).toBe(200);
  });

  it("refuses at 23:59:59.999 and admits at 00:00:00.000 UTC (day window edge)", async () => {
    const t = await createTenant({ per_second: 100, per_day: 2 });
    expect((await tokenAt(t, MIDNIGHT - 1000)).res.status).toBe(200);
    expect((await tokenAt(t, MIDNIGHT - 500)).res.status).toBe(200);
    const edge = await tokenAt(t, MIDNIGHT - 1);
    expect(edge.res.status).toBe(429);
    expect(edge.res.headers.get("retry-after")).toBe("1");
    expect(edge.json.developer_message).toMatch(/allows 2 requests per UTC day. The window resets at 2026-06-02T00:00:00.000Z/);
    expect((await tokenAt(t, MIDNIGHT)).res.status).toBe(200);
  });

  it("counts a late-stamped request in the window it holds: it never moves a window backwards (second)", async () => {
    // An edge stamps `now` before it calls the key's object; a distant or slow edge's request of
    // second S-1 can arrive after one of second S. Counted in S, it cannot reset S's count.
    const t = await createTenant(DEFAULTS);
    const S = NOON + 5_000;
    expect((await tokenAt(t, S + 10)).res.status).toBe(200);
    expect((await tokenAt(t, S - 10)).res.status).toBe(429); // late: second S is already full
    expect((await tokenAt(t, S + 100)).res.status).toBe(429); // so is the next one of S
    expect((await tokenAt(t, S + 1_000)).res.status).toBe(200);
  });

  it("counts a late-stamped request in the window it holds: it never moves a window backwards (day)", async () => {
    const t = await createTenant({ per_second: 100, per_day: 2 });
    expect((await tokenAt(t, MIDNIGHT + 10)).res.status).toBe(200);
    expect((await tokenAt(t, MIDNIGHT - 10)).res.status).toBe(200); // late, counted in the new day
    const next = await tokenAt(t, MIDNIGHT + 100);
    expect(next.res.status).toBe(429); // exactly 2 admitted in the new day
    expect(next.json.developer_message).toMatch(/allows 2 requests per UTC day/);
  });

  it("admits the 1000th request of a day and refuses the 1001st until midnight", async () => {
    const t = await createTenant(DEFAULTS);
    const start = Date.UTC(2026, 5, 1, 1, 0, 0); // 01:00 UTC
    // The token request is the day's first (a window never moves backwards, so a request of
    // another day would not leave this one alone).
    const issued = await tokenAt(t, start - 1000);
    const token = (issued.json.data as { access_token: string }).access_token;
    for (let i = 0; i < 999; i++) {
      const res = await callAt(start + i * 1000, "/v1/me", authed(t, token));
      if (res.status !== 200) expect.fail(`request ${i + 2} answered ${res.status}`);
    }
    const refused = await callAt(start + 999 * 1000, "/v1/me", authed(t, token));
    expect(refused.status).toBe(429);
    // From 01:16:39 to midnight.
    expect(refused.headers.get("retry-after")).toBe(String(86_400 - 3600 - 999));
    expect(refused.headers.get("ratelimit")).toBe(`"day";r=0;t=${86_400 - 3600 - 999}`);
    // A thousand requests, one after another: a minute's room on a two-core machine running every tier.
  }, 60_000);

  it("does not count refused requests against the day", async () => {
    const t = await createTenant({ per_second: 1, per_day: 2 });
    expect((await tokenAt(t, NOON)).res.status).toBe(200);
    expect((await tokenAt(t, NOON + 10)).res.status).toBe(429);
    expect((await tokenAt(t, NOON + 20)).res.status).toBe(429);
    expect((await tokenAt(t, NOON + 1000)).res.status).toBe(200);
    expect((await tokenAt(t, NOON + 2000)).json.developer_message).toMatch(/per UTC day/);
  });

  it("counts requests that fail for other reasons, such as a wrong client secret", async () => {
    const t = await createTenant(DEFAULTS);
    const wrong = await callAt(NOON, "/v1/oauth", tokenRequest(t, { client_secret: "wrong" }));
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("ratelimit")).toBe(`"second";r=0;t=1`);
    expect((await tokenAt(t, NOON + 500)).res.status).toBe(429);
  });

  it("applies an operator's new per-key limit on the very next request", async () => {
    const t = await createTenant(DEFAULTS);
    expect((await tokenAt(t, NOON)).res.status).toBe(200);
    expect((await tokenAt(t, NOON + 100)).res.status).toBe(429);
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { limits: { per_second: 3 } });
    expect((await tokenAt(t, NOON + 200)).res.status).toBe(200);
    expect((await tokenAt(t, NOON + 300)).res.status).toBe(200);
    expect((await tokenAt(t, NOON + 400)).res.status).toBe(429);
    // null restores the default.
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { limits: { per_second: null } });
    expect((await tokenAt(t, NOON + 1000)).res.status).toBe(200);
    expect((await tokenAt(t, NOON + 1100)).res.status).toBe(429);
  });

  describe("headers", () => {
    it("carries RateLimit-Policy and RateLimit on success", async () => {
      const t = await createTenant(DEFAULTS);
      const { res } = await tokenAt(t, NOON + 250);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-policy")).toBe(`"second";q=1;w=1, "day";q=1000;w=86400`);
      // RateLimit names the policy closest to refusing (issue 24).
      expect(res.headers.get("ratelimit")).toBe(`"second";r=0;t=1`);
      expect(res.headers.get("retry-after")).toBeNull();
    });

    it("carries them, with Retry-After, on 429", async () => {
      const t = await createTenant({ per_second: 2, per_day: 500 });
      await tokenAt(t, NOON);
      await tokenAt(t, NOON);
      const { res } = await tokenAt(t, NOON + 400);
      expect(res.status).toBe(429);
      expect(res.headers.get("ratelimit-policy")).toBe(`"second";q=2;w=1, "day";q=500;w=86400`);
      expect(res.headers.get("ratelimit")).toBe(`"second";r=0;t=1`);
      expect(res.headers.get("retry-after")).toBe("1");
    });

    it("uses the RFC 6749 error body on /v1/oauth/token", async () => {
      const t = await createTenant(DEFAULTS);
      const init = { method: "POST", headers: { "x-api-key": t.apiKey } };
      await callAt(NOON, "/v1/oauth/token", init);
      const res = await callAt(NOON + 1, "/v1/oauth/token", init);
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual({ error: "rate_limited", error_description: expect.stringMatching(/per second/) });
    });
  });

  describe("the Durable Object", () => {
    it("is never reached without a well-formed key, and stores nothing for a key that was never issued", async () => {
      const before = (await listDurableObjectIds(env.KEYS)).length;
      await call("/v1/oauth", { method: "POST" });
      await call("/v1/me", { headers: { "x-api-key": "garbage" } });
      expect(await listDurableObjectIds(env.KEYS)).toHaveLength(before);
      // A well-formed key names its object by its hash, so a guess reaches one: it must write nothing.
      const guess = `kw_live_ak_${"B".repeat(43)}`;
      const res = await call("/v1/oauth", { method: "POST", headers: { "x-api-key": guess } });
      expect(res.status).toBe(401);
      const stub = env.KEYS.get(env.KEYS.idFromName(await sha256Hex(guess)));
      const tables = await runInDurableObject(stub, (_instance, state) =>
        state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one(),
      );
      expect(tables.n).toBe(0);
      // An issued key's object does hold its state: the check above can fail.
      const t = await createTenant(DEFAULTS);
      const issued = env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
      const stored = await runInDurableObject(issued, (_instance, state) =>
        state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one(),
      );
      expect(stored.n).toBeGreaterThan(0);
    });

    it("keeps its counts in storage across eviction", async () => {
      const t = await createTenant({ per_second: 100, per_day: 10 });
      for (let i = 0; i < 3; i++) await tokenAt(t, NOON + i);
      const keyHash = await sha256Hex(t.apiKey);
      const stub = env.KEYS.get(env.KEYS.idFromName(keyHash));
      const stored = await runInDurableObject(stub, (_instance, state) =>
        state.storage.sql.exec<{ day_count: number }>("SELECT day_count FROM windows").one(),
      );
      expect(stored.day_count).toBe(3);

      await abortAllDurableObjects(); // drops in-memory state, keeps storage
      const fresh = env.KEYS.get(env.KEYS.idFromName(keyHash));
      const usage = await fresh.usage({ per_second: 1, per_day: 1000 }, NOON + 5000);
      expect(usage?.day).toMatchObject({ used: 3, remaining: 7, limit: 10 });
      expect((await tokenAt(t, NOON + 5000)).res.headers.get("ratelimit")).toMatch(/"day";r=6;/);
    });

    it("shows a key's usage for the day in the operator API", async () => {
      const t = await createTenant({ per_second: 100, per_day: 50 });
      const token = await issueToken(t);
      await call("/v1/me", authed(t, token));
      const key = await admin<{ usage: { day: { used: number; remaining: number; limit: number; resets_at: string } } }>(
        "GET",
        `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`,
      );
      expect(key.usage.day).toMatchObject({ used: 2, remaining: 48, limit: 50 });
      expect(key.usage.day.resets_at).toMatch(/T00:00:00.000Z$/);
    });

    it("fails closed with a 503 and Retry-After when it cannot be reached", async () => {
      const t = await createTenant(DEFAULTS);
      // Fault injection at the binding boundary: every call to the object fails as a network
      // error would.
      const unreachable = {
        idFromName: (name: string) => env.KEYS.idFromName(name),
        get: () => ({
          admit: () => Promise.reject(new Error("Network connection lost.")),
        }),
      } as unknown as Env["KEYS"];
      const logged = vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await callAt(NOON, "/v1/oauth", tokenRequest(t), { ...env, KEYS: unreachable });
      expect(logged).toHaveBeenCalledWith(expect.stringContaining("API key object unreachable"));
      logged.mockRestore();
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      const json = await body(res);
      expect(json).toMatchObject({ response_status: 503, error: "service_unavailable", data: null });
      expect(JSON.stringify(json)).not.toMatch(/Network connection lost/);
      // Nothing was counted by the failed attempt.
      expect((await tokenAt(t, NOON + 1)).res.status).toBe(200);
    });
  });

  it("a revoked or unknown key is refused before counting (401, no RateLimit headers)", async () => {
    const t = await createTenant(DEFAULTS);
    await adminCall("DELETE", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    const res = await tokenAt(t, NOON);
    expect(res.res.status).toBe(401);
    expect(res.res.headers.get("ratelimit")).toBeNull();
  });

  it("counts each request in its hour within the windows' one row, and stores a finished hour once the next begins (also across a restart)", async () => {
    const t = await createTenant(DEFAULTS);
    const HOUR = 3_600_000;
    // The hour before the current one, so that the operator API's last-24-hours view shows both.
    const previous = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
    expect((await tokenAt(t, previous + 100)).res.status).toBe(200);
    expect((await tokenAt(t, previous + 200)).res.status).toBe(429);
    const stub = env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
    const stored = () =>
      runInDurableObject(stub, (_instance, state) => ({
        traffic: state.storage.sql.exec("SELECT hour_ms, admitted, refused FROM traffic ORDER BY hour_ms").toArray(),
        live: state.storage.sql.exec("SELECT hour_ms, hour_admitted, hour_refused FROM windows").one(),
      }));
    // Within the hour nothing but the windows row is written.
    expect(await stored()).toEqual({ traffic: [], live: { hour_ms: previous, hour_admitted: 1, hour_refused: 1 } });
    expect((await tokenAt(t, previous + HOUR + 100)).res.status).toBe(200);
    expect(await stored()).toEqual({
      traffic: [{ hour_ms: previous, admitted: 1, refused: 1 }],
      live: { hour_ms: previous + HOUR, hour_admitted: 1, hour_refused: 0 },
    });
    const hours = async () =>
      (
        await admin<{ hours: { start: string; admitted: number; refused: number }[] }>(
          "GET",
          `/organizations/${t.orgId}/api-keys/${t.apiKeyId}/traffic`,
        )
      ).hours
        .filter((h) => h.admitted + h.refused > 0)
        .map((h) => [Date.parse(h.start), h.admitted, h.refused]);
    expect(await hours()).toEqual([
      [previous, 1, 1],
      [previous + HOUR, 1, 0],
    ]);
    // The live hour is in storage, not only in memory.
    await abortAllDurableObjects();
    expect(await hours()).toEqual([
      [previous, 1, 1],
      [previous + HOUR, 1, 0],
    ]);
  });
});
