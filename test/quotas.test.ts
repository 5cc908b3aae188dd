/**
 * Limits the way API businesses sell them (issue 24, product brief "Quotas and credits"): the
 * ceiling of one key's object, which the API refuses to exceed rather than answer 503 under a
 * limit it accepted; route weights; credits that run out exactly and refill at the UTC boundary;
 * an organization's quota shared exactly by all its keys under concurrent bursts, failing closed
 * when its object cannot answer; and all of it visible in GET /v1/me and the headers.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import type { AppEnv } from "../src/http/context";
import { errorResponse } from "../src/http/errors";
import { provideDeps } from "../src/http/middleware/deps";
import { envelopeRoute } from "../src/http/route";
import { mountRoutes } from "../src/http/router";
import { ROUTES } from "../src/http/routes";
import { MAX_KEY_PER_SECOND } from "../src/schemas/records";
import { adminCall, authed, BASE, body, call, createTenant, issueToken } from "./helpers";

describe("the ceiling of one API key's object", () => {
  it("refuses a per_second limit above what one key's object serves, on create and on change, naming why", async () => {
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
      expect(json.developer_message).toContain("one API key's Durable Object serves about");
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
  mountRoutes(app, [...ROUTES, weighted], provideDeps(Date.now));
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
    expect((await body(second)).developer_message).toMatch(/counts as 3 requests \(a route's weight, or one per GraphQL mutation field\), more than the 2 left/);
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
