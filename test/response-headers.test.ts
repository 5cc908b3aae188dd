/**
 * `X-Content-Type-Options: nosniff` on every response the Worker gives (issue 29, item 5): each
 * declared route (src/http/routes ROUTES) without credentials and with them, unknown paths under
 * each prefix, methods a path does not take, HEAD, the manager's sign-in page and its redirect,
 * and an unexpected error answered by app.onError. The walk is over the route table, so a new
 * route is covered when it is declared. The caching headers the public routes had are kept: the
 * header is added alone, never with a `Cache-Control: no-store` the route did not ask for.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { createApp } from "../src/app";
import type { Route } from "../src/http/route";
import { ROUTES } from "../src/http/routes";
import { ADMIN_TOKEN, BASE, call, createTenant, issueToken, type Tenant } from "./helpers";

let tenant: Tenant;
let token: string;

beforeAll(async () => {
  tenant = await createTenant();
  token = await issueToken(tenant);
});

/** An id for each path parameter: the tenant's own where it has one, else one that exists nowhere. */
function pathOf(route: Route, real: boolean): string {
  const ids: Record<string, string> = real ? { org: tenant.orgId, user: tenant.userId, key: tenant.apiKeyId, client: tenant.clientId } : {};
  return route.path.replace(/\{(\w+)\}/g, (_, param: string) => ids[param] ?? `missing-${param}`);
}

function credentialsFor(route: Route): Record<string, string> {
  if (route.auth === "admin") return { Authorization: `Bearer ${ADMIN_TOKEN}` };
  if (route.auth === "client") return { "x-api-key": tenant.apiKey, Authorization: `Bearer ${token}` };
  if (route.auth === "apiKey") return { "x-api-key": tenant.apiKey };
  return {};
}

function request(route: Route, path: string, headers: Record<string, string>): Promise<Response> {
  const init: RequestInit = { method: route.method, headers: { ...headers } };
  if (route.body) {
    init.body = JSON.stringify(route.body.example);
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  return call(path, init);
}

/** What lacks the header, as `where (status)`, so one failure lists them all. */
async function withoutNosniff(calls: [string, () => Promise<Response>][]): Promise<string[]> {
  const missing: string[] = [];
  for (const [where, make] of calls) {
    const res = await make();
    await res.arrayBuffer();
    if (res.headers.get("x-content-type-options") !== "nosniff") missing.push(`${where} (${res.status})`);
  }
  return missing;
}

const name = (r: Route) => `${r.method} ${r.path}`;

describe("X-Content-Type-Options: nosniff on every response", () => {
  it("on every declared route, without credentials", async () => {
    expect(ROUTES.length).toBeGreaterThan(30);
    const missing = await withoutNosniff(ROUTES.map((r) => [name(r), () => request(r, pathOf(r, false), {})]));
    expect(missing).toEqual([]);
  });

  it("on every declared route, with its credentials (reads of the tenant's own records, changes of records that do not exist)", async () => {
    // Changes go to ids that exist nowhere, so the walk answers without changing the tenant.
    const missing = await withoutNosniff(ROUTES.map((r) => [name(r), () => request(r, pathOf(r, r.method === "GET"), credentialsFor(r))]));
    expect(missing).toEqual([]);
  });

  it("on unknown paths, methods a path does not take, HEAD, and the manager's pages", async () => {
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const missing = await withoutNosniff([
      ["GET /", () => call("/")],
      ["GET /nope", () => call("/nope")],
      ["GET /.well-known/nope", () => call("/.well-known/nope")],
      ["GET /v1/nope", () => call("/v1/nope")],
      ["GET /admin/v1/nope (operator)", () => call("/admin/v1/nope", { headers: admin })],
      ["POST /healthz", () => call("/healthz", { method: "POST" })],
      ["DELETE /.well-known/oauth-authorization-server", () => call("/.well-known/oauth-authorization-server", { method: "DELETE" })],
      ["HEAD /healthz", () => call("/healthz", { method: "HEAD" })],
      ["GET /manager/sign-in", () => call("/manager/sign-in")],
      ["GET /manager (signed out: a redirect)", () => call("/manager", { redirect: "manual" })],
      ["GET /manager/nope", () => call("/manager/nope", { redirect: "manual" })],
    ]);
    expect(missing).toEqual([]);
  });

  it("on an unexpected error, answered by app.onError with a 500", async () => {
    const app = createApp();
    // Added after createApp's own middleware, so it runs under it as any route does.
    app.get("/boom", () => {
      throw new Error("boom");
    });
    // The "unhandled error" line it logs is expected here.
    const lines: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(`${BASE}/boom`), env, ctx);
    await waitOnExecutionContext(ctx);
    spy.mockRestore();
    expect(lines.join("\n")).toContain("unhandled error");
    expect(res.status).toBe(500);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("keeps the public routes' caching headers as they were", async () => {
    const health = await call("/healthz");
    expect(await health.text()).toBe("ok");
    expect(health.headers.get("x-content-type-options")).toBe("nosniff");
    expect(health.headers.get("cache-control")).toBeNull();
    // No PUBLIC_BASE_URL in the tests: the metadata names the request's origin, so it is not stored.
    const metadata = await call("/.well-known/oauth-authorization-server");
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get("x-content-type-options")).toBe("nosniff");
    expect(metadata.headers.get("cache-control")).toBe("no-store");
    const document = await call("/v1/openapi.json");
    expect(document.status).toBe(200);
    expect(document.headers.get("x-content-type-options")).toBe("nosniff");
    expect(document.headers.get("cache-control")).toBe("public, max-age=300");
  });
});
