/**
 * The authorization matrix over the route declarations (src/http/routes): every route is called
 * without an API key, without an access token (or operator token), and with another
 * organization's ids, and must refuse each as its declared `auth` says, so a new route is covered
 * the moment it is declared. What a route may declare is pinned separately: only the two token
 * endpoints go without an access token, and only service routes without any credential.
 * Requests carry the route's own example body, so a refusal is about credentials and ownership,
 * never about the input.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Route } from "../src/http/route";
import { ROUTES } from "../src/http/routes";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";

interface Org {
  tenant: Tenant;
  token: string;
  ids: Record<string, string>;
}

let a: Org;
let b: Org;

async function org(): Promise<Org> {
  const tenant = await createTenant();
  const token = await issueToken(tenant);
  const headers = { "x-api-key": tenant.apiKey, Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
  const post = async (path: string, payload: unknown) =>
    (await body<{ id: string; deliveries: { id: string }[] }>(await call(path, { method: "POST", headers, body: JSON.stringify(payload) })))
      .data;
  const config = await post("/v1/webhook-configurations", {
    url: WEBHOOK_URL,
    oauth: { token_url: TOKEN_URL, client_id: "kw", client_secret: "receiver-secret" },
  });
  const event = await post("/v1/events", { type: "order.created", data: {} });
  return {
    tenant,
    token,
    ids: {
      org: tenant.orgId,
      user: tenant.userId,
      key: tenant.apiKeyId,
      client: tenant.clientId,
      config: config.id,
      delivery: event.deliveries[0]?.id ?? "",
    },
  };
}

beforeAll(async () => {
  fakeNetwork(receiver());
  a = await org();
  b = await org();
});

/** The route's path with each parameter taken from `pick` (`{id}` is a delivery under /v1/deliveries). */
function pathOf(route: Route, pick: (name: string) => string): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    pick(name === "id" ? (route.path.startsWith("/v1/deliveries/") ? "delivery" : "config") : name),
  );
}

function request(route: Route, path: string, headers: Record<string, string>): Promise<Response> {
  const init: RequestInit = { method: route.method, headers: { ...headers } };
  if (route.body) {
    init.body = JSON.stringify(route.body.example);
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  return call(path, init);
}

/** The `error` code of an answer, from the envelope or an RFC 6749 5.2 body alike. */
async function errorCode(res: Response): Promise<string | undefined> {
  return ((await res.json()) as { error?: string }).error;
}

const name = (r: Route) => `${r.method} ${r.path}`;
const withAuth = (auth: Route["auth"]) => ROUTES.filter((r) => r.auth === auth).map((r) => [name(r), r] as const);

describe("the authorization matrix", () => {
  it("covers every declared route", () => {
    expect(ROUTES.length).toBeGreaterThan(30);
    expect(new Set(ROUTES.map(name)).size).toBe(ROUTES.length);
  });

  it("lets only the token endpoints go without an access token, and only service routes without credentials", () => {
    expect(withAuth("apiKey").map(([n]) => n)).toEqual(["POST /v1/oauth", "POST /v1/oauth/token"]);
    expect(withAuth("none").map(([n]) => n)).toEqual([
      "GET /healthz",
      "GET /.well-known/oauth-authorization-server",
      "GET /v1/openapi.json",
      "GET /docs",
    ]);
    for (const route of ROUTES) {
      if (route.path.startsWith("/admin/")) expect(route.auth, name(route)).toBe("admin");
    }
  });

  it.each(withAuth("none"))("%s needs no credentials", async (_name, route) => {
    const res = await request(
      route,
      pathOf(route, (p) => a.ids[p] ?? ""),
      {},
    );
    expect(res.status).toBe(200);
  });

  it.each([...withAuth("apiKey"), ...withAuth("client")])("%s refuses a request without an API key", async (_name, route) => {
    const res = await request(
      route,
      pathOf(route, (p) => a.ids[p] ?? ""),
      { Authorization: `Bearer ${a.token}` },
    );
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_api_key");
  });

  it.each(withAuth("client"))("%s refuses a request with an API key but no access token", async (_name, route) => {
    const res = await request(
      route,
      pathOf(route, (p) => a.ids[p] ?? ""),
      { "x-api-key": a.tenant.apiKey },
    );
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_token");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  it.each(withAuth("client"))("%s refuses another organization's access token with this organization's API key", async (_name, route) => {
    const res = await request(
      route,
      pathOf(route, (p) => a.ids[p] ?? ""),
      { "x-api-key": a.tenant.apiKey, Authorization: `Bearer ${b.token}` },
    );
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_token");
  });

  it.each(withAuth("admin"))("%s refuses a request without the operator token, or with an access token instead", async (_name, route) => {
    const path = pathOf(route, (p) => a.ids[p] ?? "");
    for (const headers of [
      {},
      { "x-api-key": a.tenant.apiKey, Authorization: `Bearer ${a.token}` },
      { Authorization: `Bearer ${ADMIN_TOKEN}x` },
    ] as Record<string, string>[]) {
      const res = await request(route, path, headers);
      expect(res.status).toBe(401);
      expect(await errorCode(res)).toBe("invalid_token");
    }
  });

  const scoped = ROUTES.filter((r) => r.auth === "client" && r.path.includes("{"));
  it.each(scoped.map((r) => [name(r), r] as const))(
    "%s does not find another organization's resource (404, nothing changed)",
    async (_name, route) => {
      const res = await request(
        route,
        pathOf(route, (p) => a.ids[p] ?? ""),
        authed(b.tenant, b.token).headers as Record<string, string>,
      );
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe("not_found");
    },
  );

  // The operator may reach every organization; what must hold is that a resource is found only
  // under the organization (and user) it belongs to.
  const nested = ROUTES.filter((r) => r.auth === "admin" && /\{org\}\/.*\{/.test(r.path));
  it.each(nested.map((r) => [name(r), r] as const))(
    "%s does not find a resource under another organization's path (404)",
    async (_name, route) => {
      const res = await request(
        route,
        pathOf(route, (p) => (p === "org" ? b.ids.org : a.ids[p]) ?? ""),
        { Authorization: `Bearer ${ADMIN_TOKEN}` },
      );
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe("not_found");
    },
  );

  it("left organization A's resources as they were", async () => {
    const config = await call(`/v1/webhook-configurations/${a.ids.config}`, authed(a.tenant, a.token));
    expect(config.status).toBe(200);
    const key = await admin<{ status: string }>("GET", `/organizations/${a.ids.org}/api-keys/${a.ids.key}`);
    expect(key.status).toBe("active");
    const credential = await admin<{ status: string }>(
      "GET",
      `/organizations/${a.ids.org}/users/${a.ids.user}/client-credentials/${a.ids.client}`,
    );
    expect(credential.status).toBe("active");
  });
});
