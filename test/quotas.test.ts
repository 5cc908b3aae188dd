/**
 * Limits the way API businesses sell them (issue 24, product brief "Quotas and credits"): the
 * ceiling of one key's object, which the API refuses to exceed rather than answer 503 under a
 * limit it accepted; route weights; credits that run out exactly and refill at the UTC boundary;
 * an organization's quota shared exactly by all its keys under concurrent bursts, failing closed
 * when its object cannot answer; and all of it visible in GET /v1/me and the headers.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import type { AppEnv } from "../src/http/context";
import { errorResponse } from "../src/http/errors";
import { provideDeps } from "../src/http/middleware/deps";
import { envelopeRoute } from "../src/http/route";
import { mountRoutes } from "../src/http/router";
import { API_ROUTES } from "../src/http/routes";
import { sha256Hex } from "../src/lib/crypto";
import type { QuotaObject } from "../src/objects/quota";
import { MAX_KEY_PER_SECOND } from "../src/schemas/records";
import {
  admin,
  adminCall,
  authed,
  BASE,
  body,
  call,
  callAt,
  counting,
  createTenant,
  issueToken,
  type Tenant,
  tokenRequest,
  withObjectEnv,
} from "./helpers";

describe("the ceiling of one API key", () => {
  it("refuses a per_second limit above what a key's shards serve, on create and on change, naming why", async () => {
    const t = await createTenant();
    for (const [method, path] of [
      ["POST", `/organizations/${t.orgId}/api-keys`],
      ["PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`],
    ] as const) {
      const res = await adminCall(method, path, { limits: { per_second: MAX_KEY_PER_SECOND + 1 } });
      const json = await body(res);
      expect(res.status, method).toBe(400);
      expect(json.error).toBe("invalid_request");
      expect(json.developer_message).toContain(`limits.per_second must be at most ${MAX_KEY_PER_SECOND}`);
      expect(json.developer_message).toContain("a key is served by up to 10 Durable Object shards");
    }
    const ok = await adminCall("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { limits: { per_second: MAX_KEY_PER_SECOND } });
    expect(ok.status).toBe(200);
  });
});

describe("route weights", () => {
  // A route of the real router declared with a weight, beside the real routes.
  const weighted = envelopeRoute({
    method: "GET",
    path: "/v1/weighted/{id}",
    operationId: "weightedTest",
    summary: "A test route that costs three requests",
    tag: "Access tokens",
    auth: "client",
    weight: 3,
    response: { schema: z.object({ id: z.string() }), example: { id: "x" } },
    handle: (c) => ({ id: c.req.param("id") ?? "" }),
  });
  const app = new Hono<AppEnv>();
  app.onError((err, c) => errorResponse(c, err));
  mountRoutes(app, [...API_ROUTES, weighted], provideDeps(Date.now));
  const send = async (path: string, init: RequestInit) => {
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(`${BASE}${path}`, init), env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };

  it("counts a call as the route's declared weight against the key's limits, and lists it in the API description", async () => {
    const t = await createTenant({ per_second: 5, per_day: 1000 });
    const bearer = await issueToken(t);
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5)); // a fresh second
    const first = await send("/v1/weighted/a", authed(t, bearer));
    expect(first.status).toBe(200);
    expect(first.headers.get("RateLimit")).toMatch(/"second";r=2;/);
    const second = await send("/v1/weighted/b", authed(t, bearer));
    expect(second.status).toBe(429);
    expect((await body(second)).developer_message).toMatch(
      /counts as 3 requests \(a route's weight, or one per GraphQL mutation field\), more than the 2 left/,
    );
    // A cheap route still fits in what is left.
    const me = await send("/v1/me", authed(t, bearer));
    expect(me.status).toBe(200);
    expect(me.headers.get("RateLimit")).toMatch(/"second";r=1;/);
    const doc = (await (await call("/v1/openapi.json")).json()) as { paths: Record<string, Record<string, { "x-keyway-cost"?: unknown }>> };
    expect(doc.paths["/v1/me"]?.get?.["x-keyway-cost"]).toBe(1);
    expect(doc.paths["/v1/graphql"]?.post?.["x-keyway-cost"]).toBe("1 per mutation field executed, at least 1");
    expect(doc.paths["/admin/v1/organizations"]?.get?.["x-keyway-cost"]).toBeUndefined();
  });
});

/** A second API key of the tenant's organization, with its own access token. */
async function secondKey(t: Tenant, limits = { per_second: 1000, per_day: 100_000 }): Promise<Tenant> {
  const key = await admin<{ id: string; api_key: string }>("POST", `/organizations/${t.orgId}/api-keys`, { name: "second", limits });
  return { ...t, apiKey: key.api_key, apiKeyId: key.id };
}

const status = (res: Response) => res.status;

describe("credits", () => {
  it("are spent by each admitted request and refuse the next with 429 credits_exhausted, exactly at zero, spending nothing more", async () => {
    const t = await createTenant();
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { credits: { remaining: 4 } });
    const bearer = await issueToken(t); // 3 left
    const statuses = await Promise.all(Array.from({ length: 6 }, () => call("/v1/me", authed(t, bearer)).then(status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    const refused = await call("/v1/me", authed(t, bearer));
    const json = await body(refused);
    expect(refused.status).toBe(429);
    expect(json.error).toBe("credits_exhausted");
    expect(json.developer_message).toMatch(/credits are used up: 0 left\. An operator can top them up\./);
    expect(refused.headers.get("RateLimit")).toBe(`"credits";r=0`);
    expect(refused.headers.get("RateLimit-Policy")).toMatch(/"credits";q=0$/);
    expect(refused.headers.get("Retry-After")).toBeNull();
    // Refused requests spent nothing: the key's day window counts the 4 admitted only.
    const key = await admin<{ usage: { day: { used: number }; credits: { remaining: number } } }>(
      "GET",
      `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`,
    );
    expect(key.usage.day.used).toBe(4);
    expect(key.usage.credits.remaining).toBe(0);

    // A top-up adds to what is left; a reset sets it; both are audited.
    await admin("POST", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}/credits`, { add: 2 });
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200);
    const me = await body<{ usage: { credits: { remaining: number } } }>(await call("/v1/me", authed(t, bearer)));
    expect(me.data.usage.credits.remaining).toBe(0);
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(429);
    await admin("POST", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}/credits`, { set: 1 });
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200);
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(429);
    const audit = await admin<{ action: string; detail: unknown }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    expect(audit.map((e) => e.action)).toEqual(expect.arrayContaining(["api_key.credits_added", "api_key.credits_set", "api_key.updated"]));
    // Removing them makes the key unlimited again.
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { credits: null });
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200);
  });

  it("refill to their amount at the UTC boundary (the balance is replaced, not added to), with Retry-After until then", async () => {
    const t = await createTenant({ per_second: 10, per_day: 1000 });
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, {
      credits: { remaining: 2, refill: { amount: 5, interval: "day" } },
    });
    const now = Date.now();
    const midnight = now - (now % 86_400_000) + 86_400_000;
    expect((await callAt(now, "/v1/oauth", tokenRequest(t))).status).toBe(200);
    expect((await callAt(now + 1, "/v1/oauth", tokenRequest(t))).status).toBe(200);
    const refused = await callAt(now + 2, "/v1/oauth", tokenRequest(t));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe(String(Math.ceil((midnight - now - 2) / 1000)));
    expect((await body(refused)).developer_message).toContain(`They are refilled to 5 at ${new Date(midnight).toISOString()}`);
    // One millisecond before the boundary: still none. At it: five, so four after this request.
    expect((await callAt(midnight - 1, "/v1/oauth", tokenRequest(t))).status).toBe(429);
    const refilled = await callAt(midnight, "/v1/oauth", tokenRequest(t));
    expect(refilled.status).toBe(200);
    expect(refilled.headers.get("RateLimit")).toBe(`"credits";r=4;t=86400`);
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i++) statuses.push((await callAt(midnight + 100 * i, "/v1/oauth", tokenRequest(t))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });

  it("are not spent by a request the key's rate limit refused", async () => {
    const t = await createTenant({ per_second: 1, per_day: 1000 });
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { credits: { remaining: 10 } });
    const at = Date.now();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await callAt(at, "/v1/oauth", tokenRequest(t))).status);
    expect(statuses).toEqual([200, 429, 429, 429]);
    const key = await admin<{ usage: { credits: { remaining: number } } }>("GET", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    expect(key.usage.credits.remaining).toBe(9);
  });
});

describe("an organization's shared quota", () => {
  it("admits exactly the quota between two keys under a concurrent burst, and counts with each key's own limits", async () => {
    const a = await createTenant();
    const b = await secondKey(a);
    const [ta, tb] = [await issueToken(a), await issueToken(b)];
    const org = await admin<{ limits: unknown }>("PATCH", `/organizations/${a.orgId}`, { limits: { per_day: 10 } });
    expect(org.limits).toEqual({ per_day: 10 });
    const burst = await Promise.all([
      ...Array.from({ length: 15 }, () => call("/v1/me", authed(a, ta))),
      ...Array.from({ length: 15 }, () => call("/v1/me", authed(b, tb))),
    ]);
    const admitted = burst.filter((r) => r.status === 200).length;
    expect(admitted).toBe(10);
    const refused = burst.filter((r) => r.status === 429);
    expect(refused).toHaveLength(20);
    const one = await body(refused[0] as Response);
    expect(one.error).toBe("rate_limited");
    expect(one.developer_message).toMatch(
      /organization's shared quota is used up: it allows 10 requests per UTC day across all its API keys/,
    );
    expect((refused[0] as Response).headers.get("RateLimit")).toMatch(/^"org-day";r=0;t=\d+$/);
    // Each key counted only its admitted requests (a refusal by the quota is given back).
    const keyA = await admin<{ usage: { day: { used: number }; quota: { window: string; used: number }[] } }>(
      "GET",
      `/organizations/${a.orgId}/api-keys/${a.apiKeyId}`,
    );
    const keyB = await admin<{ usage: { day: { used: number } } }>("GET", `/organizations/${a.orgId}/api-keys/${b.apiKeyId}`);
    expect(keyA.usage.day.used + keyB.usage.day.used).toBe(2 + 10); // the two token requests came before the quota
    // Its per_second applies at what its one object serves (1,000) when not set.
    expect(keyA.usage.quota).toEqual([
      expect.objectContaining({ window: "second", limit: 1000 }),
      expect.objectContaining({ window: "day", used: 10, limit: 10, remaining: 0 }),
    ]);
    // GET /v1/me of a key under a quota shows it (after the quota is raised).
    await admin("PATCH", `/organizations/${a.orgId}`, { limits: { per_day: 100, per_month: 1000 } });
    const me = await body<{ limits: unknown; usage: { quota: { window: string; used: number; limit: number }[] } }>(
      await call("/v1/me", authed(a, ta)),
    );
    expect(me.data.usage.quota.slice(1).map((q) => [q.window, q.used, q.limit])).toEqual([
      ["day", 11, 100],
      ["month", 11, 1000], // every window counts from when the quota was set, limited or not
    ]);
    // Removing the quota: no quota call, no quota in /v1/me.
    await admin("PATCH", `/organizations/${a.orgId}`, { limits: null });
    const free = await body<{ usage: { quota: unknown } }>(await call("/v1/me", authed(a, ta)));
    expect(free.data.usage.quota).toBeNull();
  });

  it("counts per second exactly across keys, and refuses a per_second above what its object and its keys' slices serve", async () => {
    const a = await createTenant();
    const b = await secondKey(a);
    await admin("PATCH", `/organizations/${a.orgId}`, { limits: { per_second: 5 } });
    const at = Date.now() + 5_000;
    const burst = await Promise.all([
      ...Array.from({ length: 6 }, () => callAt(at, "/v1/oauth", tokenRequest(a))),
      ...Array.from({ length: 6 }, () => callAt(at, "/v1/oauth", tokenRequest(b))),
    ]);
    expect(burst.filter((r) => r.status === 200)).toHaveLength(5);
    const tooMuch = await adminCall("PATCH", `/organizations/${a.orgId}`, { limits: { per_second: 10_001 } });
    expect(tooMuch.status).toBe(400);
    expect((await body(tooMuch)).developer_message).toContain("limits.per_second must be at most 10000");
  });

  it("fails closed when its object cannot be reached: 503, and the key's own count is given back", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_day: 100 } });
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200);
    // The organization's quota object stops taking requests (its method is gone: every call fails).
    const quota = env.QUOTAS.get(env.QUOTAS.idFromName(t.orgId));
    await runInDurableObject(quota, (instance: QuotaObject) => {
      instance.take = () => new Promise(() => {}) as never;
    });
    const res = await call("/v1/me", authed(t, bearer));
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("1");
    const key = await admin<{ usage: { day: { used: number } } }>("GET", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    expect(key.usage.day.used).toBe(2); // the token and the first /v1/me: the 503 was not counted
  });
});

describe("the hot path with quotas and credits", () => {
  it("still makes one Durable Object call from the Worker: the key's, which asks the quota object itself", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_day: 1000 } });
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { credits: { remaining: 100 } });
    const { bindings, calls } = counting();
    const res = await callAt(Date.now(), "/v1/me", authed(t, bearer), bindings);
    expect(res.status).toBe(200);
    expect(calls).toEqual(["KEYS.admit"]);
    // And it was counted by the quota object and spent from the credits.
    const me = await body<{ usage: { quota: { window: string; used: number }[]; credits: { remaining: number } } }>(
      await call("/v1/me", authed(t, bearer)),
    );
    expect(me.data.usage.quota.find((q) => q.window === "day")?.used).toBe(2);
    expect(me.data.usage.credits.remaining).toBe(98);
  });

  it("shows the quota and the credits in GraphQL's viewer.rateLimit", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_month: 5000 } });
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, {
      credits: { remaining: 10, refill: { amount: 10, interval: "month" } },
    });
    const res = await call(
      "/v1/graphql",
      authed(t, bearer, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          query: "{ viewer { rateLimit { quota { window limit used } credits { remaining refill { amount interval } } } } }",
        }),
      }),
    );
    const json = (await res.json()) as { data: { viewer: { rateLimit: { quota: unknown[]; credits: unknown } } } };
    expect(json.data.viewer.rateLimit.quota).toEqual([
      { window: "second", limit: 1000, used: 1 },
      { window: "month", limit: 5000, used: 1 },
    ]);
    expect(json.data.viewer.rateLimit.credits).toEqual({ remaining: 9, refill: { amount: 10, interval: "month" } });
  });
});

/** A gate a test opens: `wait()` resolves once `open()` is called. */
function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((done) => {
    open = done;
  });
  return { open, wait: () => opened };
}

/**
 * Fault injection in the key's object: its calls to the organization's QuotaObject go through a
 * stub whose `take` first runs `before`, then reaches the real object, then runs `after` before
 * its answer returns (`release` and `usage` pass straight through).
 */
async function wrapTake(t: Tenant, wrap: { before?: () => Promise<void>; after?: () => Promise<void> }) {
  const key = env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
  await withObjectEnv(key, (real) => ({
    QUOTAS: {
      ...real.QUOTAS,
      idFromName: real.QUOTAS.idFromName.bind(real.QUOTAS),
      get: (id: DurableObjectId) => {
        const stub = real.QUOTAS.get(id);
        return {
          take: async (...args: Parameters<QuotaObject["take"]>) => {
            await wrap.before?.();
            const answer = await stub.take(...args);
            await wrap.after?.();
            return answer;
          },
          release: (id: string) => stub.release(id),
          usage: (...args: Parameters<QuotaObject["usage"]>) => stub.usage(...args),
        };
      },
    } as unknown as Env["QUOTAS"],
  }));
  return env.QUOTAS.get(env.QUOTAS.idFromName(t.orgId));
}

const quotaDayUsed = async (quota: DurableObjectStub<QuotaObject>) =>
  (await quota.usage({ per_day: 1000 }, Date.now())).windows.find((w) => w.name === "org_day")?.used;

describe("credits and quotas exact at their edges (issue 29)", () => {
  // While the quota is asked (the request has spent one of 9 credits: 8), an operator changes the credits.
  it.each([
    // Not 6: the refused request's credit was spent from the balance the reset replaced.
    ["gives nothing back to a balance reset while the quota was asked", { set: 5 }, 5],
    // 9 + 2: the refused request's credit came back to the same balance.
    ["gives its cost back to the same balance, topped up meanwhile", { add: 2 }, 11],
  ])("a request the quota refuses %s", async (_name, change, remaining) => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { credits: { remaining: 10 } });
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_day: 1 } });
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200); // the quota's one request; 9 credits left
    const asked = gate();
    const answer = gate();
    await wrapTake(t, {
      before: async () => {
        asked.open();
        await answer.wait();
      },
    });
    const pending = call("/v1/me", authed(t, bearer));
    await asked.wait();
    await admin("POST", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}/credits`, change);
    answer.open();
    expect((await pending).status).toBe(429);
    const key = await admin<{ usage: { credits: { remaining: number } } }>("GET", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    expect(key.usage.credits.remaining).toBe(remaining);
  });

  const late = () => new Promise<void>((done) => setTimeout(done, 2_500));
  it.each([
    ["a take that lands after the key gave up (503) is not counted by the quota", { before: late }],
    ["a take counted but answered after the key gave up (503) is taken back", { after: late }],
  ])("%s", async (_name, wrap) => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_day: 1000 } });
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200);
    const quota = await wrapTake(t, wrap);
    const res = await call("/v1/me", authed(t, bearer));
    expect(res.status).toBe(503);
    await new Promise((done) => setTimeout(done, 1_000)); // the late take or answer has come, and the release
    expect(await quotaDayUsed(quota)).toBe(1);
    const key = await admin<{ usage: { day: { used: number } } }>("GET", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    expect(key.usage.day.used).toBe(2); // the token and the first /v1/me
  });
});
