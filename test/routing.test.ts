/** Routing edges: health probe, unknown paths (404) and wrong methods (405) as envelopes. */
import { RegExpRouter } from "hono/router/reg-exp-router";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { adminCall, authed, BASE, body, call, createTenant, issueToken } from "./helpers";

describe("routing", () => {
  it("matches with Hono's RegExpRouter, which refuses a route it cannot take instead of falling back", () => {
    // app.ts: one regular expression for every route (issue 33); SmartRouter had silently chosen the
    // TrieRouter, 2 µs a match, because two manager pages put a literal where others put a parameter.
    const app = createApp();
    expect(app.router.name).toBe("RegExpRouter");
    const router = new RegExpRouter<number>();
    router.add("GET", "/x/new", 1);
    expect(() => router.add("GET", "/x/:id", 2)).toThrow(/\/x\/:id/);
  });

  it("serves GET /healthz without any credentials", async () => {
    const res = await call("/healthz");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
  });

  it("answers a wrong method on /v1/oauth with a 405 envelope and Allow", async () => {
    const t = await createTenant();
    const res = await call("/v1/oauth", { headers: { "x-api-key": t.apiKey } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await body(res)).toMatchObject({ response_status: 405, error: "method_not_allowed", data: null });
  });

  it("answers a wrong method on an admin resource with 405 and the allowed methods", async () => {
    const res = await adminCall("PUT", "/organizations");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST, GET, HEAD");
  });

  it("answers unknown paths with a 404 envelope", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const res = await call("/v1/nothing-here", authed(t, token));
    expect(res.status).toBe(404);
    const json = await body(res);
    expect(json).toMatchObject({ response_status: 404, error: "not_found", data: null });
    expect(json._links.self.href).toBe(`${BASE}/v1/nothing-here`);
    expect((await call("/nowhere")).status).toBe(404);
  });

  it("asks for an API key before revealing whether a /v1 path exists", async () => {
    expect((await call("/v1/nothing-here")).status).toBe(401);
  });
});
