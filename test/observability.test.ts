/**
 * What the service tells its operators (docs/observability.md): one outcome line and one
 * Analytics Engine data point per request, one line and one data point per delivery attempt, in
 * the documented layouts; a request id that links a 5xx's outcome line to the error handler's
 * detail; sampling of successful requests' lines only; readable lines for local runs; metrics
 * that cannot fail a request or a delivery; and no secret anywhere in any of it. Requests go
 * through the app with the test's real bindings, whose METRICS dataset is spied on (the real
 * writeDataPoint still runs), so every data point written can be read back.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { devLogFilter } from "../scripts/dev-log.mjs";
import { createApp } from "../src/app";
import { DEV_PROXY_LOG_HEADER } from "../src/http/middleware/observe";
import { prettyLine, setLogFormat } from "../src/log";
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { consume, fakeNetwork, json, never, receiver, TOKEN_URL } from "./fake-network";
import { ADMIN_TOKEN, adminCall, BASE, createTenant, issueToken, type Tenant, tokenRequest } from "./helpers";
import { attemptNow, createConfig, publishTo, ticketFor } from "./webhook-helpers";

const RECEIVER_SECRET = "observability-receiver-secret";
const RECEIVER_TOKEN = "observability-receiver-token";

type Line = Record<string, unknown> & { level: string; msg: string };
type Point = AnalyticsEngineDataPoint;

const logged: string[] = [];
let points: MockInstance<(point?: Point) => void>;
let realWrite: (point?: Point) => void;
let t: Tenant;
let token: string;

beforeAll(async () => {
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    });
  }
  realWrite = env.METRICS.writeDataPoint.bind(env.METRICS);
  points = vi.spyOn(env.METRICS, "writeDataPoint");
  t = await createTenant();
  token = await issueToken(t);
});

afterAll(() => {
  setLogFormat("json");
  vi.restoreAllMocks();
});

/** A request through the app with these bindings (the test's own by default), after its waitUntil work. */
async function request(path: string, init: RequestInit = {}, bindings: Env = env): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await createApp().fetch(new Request(`${BASE}${path}`, init), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

const withToken = (tenant: Tenant, bearer: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { "x-api-key": tenant.apiKey, Authorization: `Bearer ${bearer}`, ...(init.headers ?? {}) },
});

const jsonLines = (): Line[] =>
  logged.flatMap((text) => {
    try {
      const parsed: unknown = JSON.parse(text);
      return typeof parsed === "object" && parsed !== null && "msg" in parsed ? [parsed as Line] : [];
    } catch {
      return [];
    }
  });

/** The outcome lines of the request that answered `res`. */
function outcomeLines(res: Response): Line[] {
  const id = res.headers.get("x-request-id");
  expect(id).toBeTruthy();
  return jsonLines().filter((line) => line.msg === "request" && line.request_id === id);
}

/** The one outcome line of the request that answered `res`. */
function outcomeOf(res: Response): Line {
  const lines = outcomeLines(res);
  expect(lines).toHaveLength(1);
  return lines[0] as Line;
}

/** Data points written since `mark` (an index into the spy's calls), of one kind. */
const pointsSince = (mark: number, kind: "request" | "delivery"): Point[] =>
  points.mock.calls
    .slice(mark)
    .map(([point]) => point ?? {})
    .filter((point) => point.blobs?.[0] === kind);

describe("the outcome line of a request", () => {
  it("is one info line for a success, naming the route, method, status, latency, API key and organization", async () => {
    const res = await request("/v1/me", withToken(t, token));
    expect(res.status).toBe(200);
    const line = outcomeOf(res);
    expect(line).toMatchObject({
      level: "info",
      method: "GET",
      route: "/v1/me",
      status: 200,
      outcome: "ok",
      api_key_id: t.apiKeyId,
      organization_id: t.orgId,
    });
    expect(line).not.toHaveProperty("error");
    expect(line.latency_ms).toEqual(expect.any(Number));
    expect(line.latency_ms as number).toBeGreaterThanOrEqual(0);
  });

  it("takes the request id from a well-formed cf-ray and returns it as x-request-id", async () => {
    const ray = "8f1a2b3c4d5e6f70-LHR";
    const res = await request("/healthz", { headers: { "cf-ray": ray } });
    expect(res.headers.get("x-request-id")).toBe(ray);
    expect(outcomeOf(res)).toMatchObject({ request_id: ray, route: "/healthz", status: 200 });
  });

  it("makes up its own request id when cf-ray is not a Ray ID, and never logs that header", async () => {
    const forged = '"}{"level":"error","msg":"forged';
    const res = await request("/healthz", { headers: { "cf-ray": forged } });
    const id = res.headers.get("x-request-id") ?? "";
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(outcomeOf(res).request_id).toBe(id);
    expect(logged.join("\n")).not.toContain("forged");
  });

  it("names the route template, never the ids in the path or the query", async () => {
    const res = await request("/v1/webhook-configurations/whk_0000000000000000000000zzzz?cursor=abc123", withToken(t, token));
    expect(res.status).toBe(404);
    const line = outcomeOf(res);
    expect(line).toMatchObject({ route: "/v1/webhook-configurations/:id", status: 404, outcome: "client_error", error: "not_found" });
    const text = JSON.stringify(line);
    expect(text).not.toContain("whk_0000000000000000000000zzzz");
    expect(text).not.toContain("abc123");
  });

  it("logs a 401 for a missing API key with its error code, and no key or organization it could not know", async () => {
    const res = await request("/v1/webhook-configurations/whk_0000000000000000000000zzzz");
    expect(res.status).toBe(401);
    const line = outcomeOf(res);
    expect(line).toMatchObject({
      level: "info",
      route: "/v1/webhook-configurations/:id",
      method: "GET",
      status: 401,
      outcome: "client_error",
      error: "invalid_api_key",
    });
    expect(line).not.toHaveProperty("api_key_id");
    expect(line).not.toHaveProperty("organization_id");
  });

  it("logs a 401 for a wrong client secret with the API key and organization the key named", async () => {
    const res = await request("/v1/oauth", tokenRequest(t, { client_secret: "not-the-secret-0123456789" }));
    expect(res.status).toBe(401);
    expect(outcomeOf(res)).toMatchObject({
      route: "/v1/oauth",
      status: 401,
      error: "invalid_client",
      api_key_id: t.apiKeyId,
      organization_id: t.orgId,
    });
  });

  it("logs a 429 as rate_limited, naming the refused key and its organization", async () => {
    const limited = await createTenant({ per_second: 1, per_day: 1000 });
    // A fixed clock keeps both calls in the same one-second window.
    const at = Date.now();
    const ctx = createExecutionContext();
    const app = createApp({ now: () => at });
    const first = await app.fetch(new Request(`${BASE}/v1/oauth`, tokenRequest(limited)), env, ctx);
    const second = await app.fetch(new Request(`${BASE}/v1/oauth`, tokenRequest(limited)), env, ctx);
    await waitOnExecutionContext(ctx);
    expect([first.status, second.status]).toEqual([200, 429]);
    expect(outcomeOf(second)).toMatchObject({
      level: "info",
      route: "/v1/oauth",
      method: "POST",
      status: 429,
      outcome: "rate_limited",
      error: "rate_limited",
      api_key_id: limited.apiKeyId,
      organization_id: limited.orgId,
    });
  });

  it("logs a request with a revoked API key, naming the key and its organization", async () => {
    const revoked = await createTenant();
    expect((await adminCall("DELETE", `/organizations/${revoked.orgId}/api-keys/${revoked.apiKeyId}`)).status).toBe(200);
    const res = await request("/v1/oauth", tokenRequest(revoked));
    expect(res.status).toBe(401);
    expect(outcomeOf(res)).toMatchObject({
      status: 401,
      outcome: "client_error",
      error: "invalid_api_key",
      api_key_id: revoked.apiKeyId,
      organization_id: revoked.orgId,
    });
  });

  it("logs a 400 for an invalid body with the caller's key and organization", async () => {
    const res = await request(
      "/v1/webhook-configurations",
      withToken(t, token, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"url":"ftp://x"}' }),
    );
    expect(res.status).toBe(400);
    expect(outcomeOf(res)).toMatchObject({
      level: "info",
      route: "/v1/webhook-configurations",
      method: "POST",
      status: 400,
      outcome: "client_error",
      error: "invalid_request",
      api_key_id: t.apiKeyId,
      organization_id: t.orgId,
    });
  });

  it("logs hostile input (truncated JSON on the token endpoint) as one 4xx line, not a 5xx", async () => {
    const res = await request("/v1/oauth", {
      method: "POST",
      headers: { "x-api-key": t.apiKey, "Content-Type": "application/json" },
      body: '{"client_id": "a"',
    });
    expect(res.status).toBe(400);
    expect(outcomeOf(res)).toMatchObject({
      level: "info",
      route: "/v1/oauth",
      status: 400,
      outcome: "client_error",
      error: "invalid_request",
    });
  });

  it("names no route for a path nothing matches, and logs its 404 as not_found", async () => {
    const res = await request("/nothing/here/42");
    expect(res.status).toBe(404);
    expect(outcomeOf(res)).toMatchObject({ route: "(unmatched)", status: 404, error: "not_found" });
  });

  it("logs an operator call without the operator token", async () => {
    const res = await request("/admin/v1/organizations", { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(outcomeOf(res)).toMatchObject({ route: "/admin/v1/organizations", status: 200, outcome: "ok" });
  });

  it("logs a 5xx at error level, without the detail, which the error handler's line has under the same request id", async () => {
    const tenant = await createTenant();
    const access = await issueToken(tenant);
    const config = await createConfig(tenant, access, RECEIVER_SECRET);
    // A row an incompatible version could have written.
    await runInDurableObject(env.WEBHOOKS.get(env.WEBHOOKS.idFromName(tenant.orgId)), (_i, state) => {
      state.storage.sql.exec("UPDATE configurations SET signing_secrets = '{not json' WHERE id = ?", config.id);
    });
    const res = await request(`/v1/webhook-configurations/${config.id}`, withToken(tenant, access));
    expect(res.status).toBe(500);
    const line = outcomeOf(res);
    expect(line).toMatchObject({
      level: "error",
      route: "/v1/webhook-configurations/:id",
      status: 500,
      outcome: "server_error",
      error: "server_error",
      organization_id: tenant.orgId,
    });
    expect(line).not.toHaveProperty("detail");
    const others = jsonLines().filter((l) => l.request_id === line.request_id && l.msg !== "request");
    expect(others.length).toBeGreaterThan(0);
    expect(others.some((l) => l.level === "error" && typeof l.detail === "string")).toBe(true);
  });

  it("is logged for only the sampled share of successes (LOG_SUCCESS_SAMPLE_RATE), while errors and data points are all kept", async () => {
    const unsampled = { ...env, LOG_SUCCESS_SAMPLE_RATE: "0" };
    const mark = points.mock.calls.length;
    const ok = await request("/v1/me", withToken(t, token), unsampled);
    const refused = await request("/v1/me", {}, unsampled);
    expect([ok.status, refused.status]).toEqual([200, 401]);
    expect(outcomeLines(ok)).toHaveLength(0);
    expect(outcomeOf(refused)).toMatchObject({ status: 401, error: "invalid_api_key" });
    expect(pointsSince(mark, "request").map((p) => p.blobs?.[5])).toEqual(["200", "401"]);
  });
});

describe("request data points", () => {
  it("follow the documented layout: index organization; blobs kind, organization, key, route, method, status, outcome, error; doubles latency, 1, status", async () => {
    const mark = points.mock.calls.length;
    const res = await request("/v1/me", withToken(t, token));
    expect(res.status).toBe(200);
    const written = pointsSince(mark, "request");
    expect(written).toHaveLength(1);
    expect(written[0]).toEqual({
      indexes: [t.orgId],
      blobs: ["request", t.orgId, t.apiKeyId, "/v1/me", "GET", "200", "ok", ""],
      doubles: [expect.any(Number), 1, 200],
    });
  });

  it("count tokens issued on the token endpoint's route with status 200", async () => {
    const mark = points.mock.calls.length;
    const res = await request("/v1/oauth", tokenRequest(t));
    expect(res.status).toBe(200);
    expect(pointsSince(mark, "request")).toEqual([
      {
        indexes: [t.orgId],
        blobs: ["request", t.orgId, t.apiKeyId, "/v1/oauth", "POST", "200", "ok", ""],
        doubles: [expect.any(Number), 1, 200],
      },
    ]);
  });

  it("carry a 401's reason and no index when no organization is known", async () => {
    const mark = points.mock.calls.length;
    await request("/v1/me");
    expect(pointsSince(mark, "request")).toEqual([
      { blobs: ["request", "", "", "/v1/me", "GET", "401", "client_error", "invalid_api_key"], doubles: [expect.any(Number), 1, 401] },
    ]);
  });

  it("cannot fail a request: a writeDataPoint that throws leaves the response and its line as they were", async () => {
    points.mockImplementationOnce(() => {
      throw new Error("dataset unavailable");
    });
    const res = await request("/v1/me", withToken(t, token));
    expect(res.status).toBe(200);
    expect(outcomeOf(res)).toMatchObject({ status: 200, outcome: "ok" });
    expect(jsonLines().some((l) => l.msg === "metrics data point not written" && l.level === "warn")).toBe(true);
  });
});

describe("delivery attempts", () => {
  let configId: string;
  beforeAll(async () => {
    configId = (await createConfig(t, token, RECEIVER_SECRET)).id;
  });

  const attemptLines = (deliveryId: string): Line[] =>
    jsonLines().filter((l) => l.msg === "delivery attempt" && l.delivery_id === deliveryId);

  it("log one line and write one data point for a delivered attempt", async () => {
    fakeNetwork(receiver({ token: RECEIVER_TOKEN }));
    const id = await publishTo(t, token, configId);
    const mark = points.mock.calls.length;
    const { record } = await attemptNow(t, token, id);
    expect(record.status).toBe("delivered");
    const lines = attemptLines(id);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "info",
      delivery_id: id,
      configuration_id: configId,
      organization_id: t.orgId,
      attempt: 1,
      outcome: "delivered",
      disposition: "delivered",
      step: "webhook",
      http_status: 204,
      latency_ms: expect.any(Number),
    });
    expect(pointsSince(mark, "delivery")).toEqual([
      {
        indexes: [t.orgId],
        blobs: ["delivery", t.orgId, configId, "delivered", "webhook", "204", "delivered", id],
        doubles: [expect.any(Number), 1, 1, 204],
      },
    ]);
  });

  it("record a token endpoint's failure as token_failed, at warn level, with its status", async () => {
    fakeNetwork({ ...receiver(), [TOKEN_URL]: () => json({ error: "server_error" }, 500) });
    const id = await publishTo(t, token, configId);
    const mark = points.mock.calls.length;
    await attemptNow(t, token, id);
    expect(attemptLines(id)).toEqual([
      expect.objectContaining({ level: "warn", outcome: "token_failed", disposition: "retry", step: "token", http_status: 500 }),
    ]);
    expect(pointsSince(mark, "delivery").map((p) => p.blobs?.slice(3, 7))).toEqual([["token_failed", "token", "500", "retry"]]);
  });

  it("record an attempt cut off by its deadline as timeout", async () => {
    fakeNetwork({ ...receiver(), [TOKEN_URL]: never });
    const id = await publishTo(t, token, configId);
    await attemptNow(t, token, id, { WEBHOOK_TIMEOUT_SECONDS: "1" });
    expect(attemptLines(id)).toEqual([expect.objectContaining({ outcome: "timeout", step: "token", disposition: "retry" })]);
  });

  it("record a repeated ticket as skipped, with the object's reason", async () => {
    fakeNetwork(receiver({ token: RECEIVER_TOKEN }));
    const id = await publishTo(t, token, configId);
    await attemptNow(t, token, id);
    const repeated = { ...(await ticketFor(t.orgId, id)), attempt: 1 };
    await consume(DELIVERY_QUEUE, [{ id: "observability-repeat", attempts: 1, body: repeated }]);
    expect(attemptLines(id).map((l) => [l.outcome, l.reason ?? null])).toEqual([
      ["delivered", null],
      ["skipped", "already delivered"],
    ]);
  });

  it("record a dead-lettered message at error level", async () => {
    const id = await publishTo(t, token, configId);
    const mark = points.mock.calls.length;
    const dlq = await consume(DEAD_LETTER_QUEUE, [{ id: "observability-dlq", attempts: 1, body: await ticketFor(t.orgId, id) }]);
    expect(dlq.acked).toEqual(["observability-dlq"]);
    expect(attemptLines(id)).toEqual([expect.objectContaining({ level: "error", outcome: "dead_lettered", attempt: 1 })]);
    expect(pointsSince(mark, "delivery").map((p) => p.blobs?.[3])).toEqual(["dead_lettered"]);
  });

  it("cannot fail a delivery: a writeDataPoint that throws leaves the attempt delivered and acked", async () => {
    fakeNetwork(receiver({ token: RECEIVER_TOKEN }));
    const id = await publishTo(t, token, configId);
    points.mockImplementation(() => {
      throw new Error("dataset unavailable");
    });
    try {
      const { outcome, record } = await attemptNow(t, token, id);
      expect(outcome.acked).toHaveLength(1);
      expect(record.status).toBe("delivered");
    } finally {
      points.mockImplementation(realWrite);
    }
    expect(attemptLines(id)).toEqual([expect.objectContaining({ outcome: "delivered" })]);
  });
});

describe("readable lines for local runs (LOG_FORMAT=pretty)", () => {
  it("lead with method, route, status, error and latency, then the ids, the request id last", () => {
    const at = new Date("2026-01-01T12:00:01Z");
    const fields = { request_id: "r1", method: "GET", route: "/v1/me", status: 200, outcome: "ok", latency_ms: 3 };
    expect(prettyLine("info", "request", { ...fields, api_key_id: "key_1", organization_id: "org_1" }, at)).toBe(
      "12:00:01 INFO  GET /v1/me 200 3ms key=key_1 org=org_1 rid=r1",
    );
    expect(prettyLine("info", "request", { ...fields, status: 401, outcome: "client_error", error: "invalid_api_key" }, at)).toBe(
      "12:00:01 INFO  GET /v1/me 401 invalid_api_key 3ms rid=r1",
    );
    expect(prettyLine("error", "unhandled error", { detail: "TypeError: x is undefined", request_id: "r1" }, at)).toBe(
      '12:00:01 ERROR unhandled error detail="TypeError: x is undefined" rid=r1',
    );
  });

  it("are what a request logs when LOG_FORMAT is pretty: carried on the dev proxy's own request line, not a console line of its own", async () => {
    const before = logged.length;
    try {
      const res = await request("/v1/me", withToken(t, token), { ...env, LOG_FORMAT: "pretty" });
      expect(res.status).toBe(200);
      const rid = res.headers.get("x-request-id");
      // The header miniflare's dev proxy appends to the line it logs for the request, and removes.
      const line = res.headers.get(DEV_PROXY_LOG_HEADER);
      expect(line).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d INFO  GET /v1/me 200 \\d+ms key=${t.apiKeyId} org=${t.orgId} rid=${rid}$`));
      expect(logged.slice(before).some((l) => l.includes(`rid=${rid}`) && l.includes("GET /v1/me"))).toBe(false);
    } finally {
      setLogFormat("json");
    }
    // Deployed Workers (JSON lines) never send it.
    const json = await request("/v1/me", withToken(t, token));
    expect(json.headers.get(DEV_PROXY_LOG_HEADER)).toBeNull();
  });

  it("are shown by npm start as keyway's, from the end of wrangler's request line, which alone is dropped", () => {
    const filter = devLogFilter();
    const esc = "\u001b";
    const carried = `[wrangler:info] ${esc}[1mGET${esc}[22m /v1/orgs/org_1 ${esc}[32m200 OK${esc}[39m ${esc}[90m(3ms)${esc}[39m ${esc}[90m12:00:01 INFO  GET /v1/me 200 3ms rid=r1${esc}[39m`;
    expect(filter(carried)).toEqual(["[keyway] 12:00:01 INFO  GET /v1/me 200 3ms rid=r1"]);
    expect(filter("[wrangler:info] GET /v1/orgs/org_1 200 OK (3ms)")).toEqual([]);
  });
});

describe("secrets", () => {
  it("never reach a log line or a data point: API key, client secret, access tokens, operator token, receiver secrets", () => {
    const all = `${logged.join("\n")}\n${JSON.stringify(points.mock.calls)}`;
    for (const secret of [t.apiKey, t.clientSecret, token, ADMIN_TOKEN, RECEIVER_SECRET, RECEIVER_TOKEN]) {
      expect(all).not.toContain(secret);
    }
    // The spies were live.
    expect(jsonLines().filter((l) => l.msg === "request").length).toBeGreaterThan(10);
  });
});
