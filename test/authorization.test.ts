/**
 * The authorization matrix over the route declarations (src/http/routes): every route is called
 * without an API key, without an access token (or operator token), and with another
 * organization's ids, and must refuse each as its declared `auth` says, so a new route is covered
 * the moment it is declared (a path parameter this file has no id for fails the run, rather than
 * being called with an empty segment). The token endpoints refuse another organization's API key
 * with this organization's client credentials, and the operator API refuses an organization
 * administrator's token. What a route may declare is pinned separately: only the two token
 * endpoints go without an access token, and only service routes without any credential.
 * Requests carry the route's own example body, so a refusal is about credentials and ownership,
 * never about the input.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Route } from "../src/http/route";
import { ROUTES } from "../src/http/routes";
import { ALL_SCOPES } from "../src/schemas/scopes";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL, WORKLOAD_ISSUER, WORKLOAD_ISSUER_JWKS } from "./fake-network";
import { ADMIN_TOKEN, admin, authed, BASE, basic, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";

interface Org {
  tenant: Tenant;
  token: string;
  /** The secret of an organization administrator token (it signs into the manager app only). */
  adminToken: string;
  /** An id of this organization's for every path parameter a route declares. */
  ids: Record<string, string>;
}

let a: Org;
let b: Org;
/** An organization deleted in beforeAll, with every kind of resource it had. */
let gone: Org;

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
  // A private_key_jwt configuration (issue 31): it publishes its own keys (GET /v1/receiver-jwks/{org}/{id}, issue 42); the
  // organization's set of issue 31 (GET /v1/receiver-jwks/{org}) has a key once the organization-wide key is rotated.
  const jwtConfig = await post("/v1/webhook-configurations", {
    url: `${WEBHOOK_URL}/jwt`,
    events: ["never.sent"],
    oauth: { token_url: TOKEN_URL, client_id: "kw", auth_method: "private_key_jwt" },
  });
  await post("/v1/webhook-settings/rotate-assertion-key", {});
  const event = await post("/v1/events", { type: "order.created", data: {} });
  // A name of this organization's own, so another organization's token asking for it is refused for the right reason.
  const eventType = `matrix.${tenant.orgId.slice(4, 14)}`;
  await post("/v1/event-types", { name: eventType });
  const recovery = await post(`/v1/webhook-configurations/${config.id}/recover`, { since: new Date(Date.now() - 60_000).toISOString() });
  const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${tenant.orgId}/admin-tokens`, { name: "matrix" });
  const issuer = await admin<{ id: string }>("POST", `/organizations/${tenant.orgId}/trusted-issuers`, {
    issuer: WORKLOAD_ISSUER,
    jwks_uri: WORKLOAD_ISSUER_JWKS,
  });
  return {
    tenant,
    token,
    adminToken: minted.token,
    ids: {
      org: tenant.orgId,
      user: tenant.userId,
      key: tenant.apiKeyId,
      client: tenant.clientId,
      config: config.id,
      jwtConfig: jwtConfig.id,
      delivery: event.deliveries[0]?.id ?? "",
      token: minted.id,
      name: eventType,
      recovery: recovery.id,
      issuer: issuer.id,
      session: await portalSession(post, config.id, headers),
    },
  };
}

/** A portal session of the configuration, opened as a receiver's browser does (GET the link's page, POST its form). */
async function portalSession(
  post: (path: string, payload: unknown) => Promise<{ id: string }>,
  configId: string,
  headers: Record<string, string>,
): Promise<string> {
  const link = (await post(`/v1/webhook-configurations/${configId}/portal-links`, {})) as unknown as { url: string };
  const browser = new Browser();
  const page = await (await browser.get(link.url.slice(BASE.length))).text();
  const opened = await browser.post("/portal/open", { csrf: Browser.csrf(page), token: new URL(link.url).searchParams.get("token") ?? "" });
  expect(opened.status).toBe(303);
  const sessions = await body<{ id: string }[]>(await call(`/v1/webhook-configurations/${configId}/portal-sessions`, { headers }));
  return sessions.data[0]?.id ?? "";
}

beforeAll(async () => {
  fakeNetwork(receiver());
  a = await org();
  b = await org();
  gone = await org();
  const deleted = await call(`/admin/v1/organizations/${gone.ids.org}`, {
    method: "DELETE",
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(deleted.status).toBe(200);
});

/** Which entry of `ids` a path parameter takes: `{id}` is a delivery under /v1/deliveries, else a configuration. */
const idName = (route: Route, param: string): string =>
  param === "id"
    ? route.path.includes("/deliveries/{id}")
      ? "delivery"
      : route.path.startsWith("/v1/receiver-jwks/")
        ? "jwtConfig"
        : "config"
    : param;

/** Path parameters of public routes that name no organization's resource: one value for everybody. */
const PUBLIC_PARAMS: Record<string, string> = { file: "graphiql.min.css" };

const paramsOf = (route: Route): string[] =>
  [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => idName(route, m[1] ?? "")).filter((param) => !(param in PUBLIC_PARAMS));

/**
 * The route's path with the ids of `from` (organization A by default), but `{org}` that of `org`
 * (the same organization unless given). A parameter without an id throws: an empty segment would
 * make every check on the route pass for the wrong reason.
 */
function pathOf(route: Route, from: Org = a, org: Org = from): string {
  return route.path.replace(/\{(\w+)\}/g, (_, param: string) => {
    const fixed = PUBLIC_PARAMS[param];
    if (fixed !== undefined) return fixed;
    const name = idName(route, param);
    const id = (name === "org" ? org : from).ids[name];
    if (id === undefined || id === "")
      throw new Error(`${route.method} ${route.path}: no id for {${param}}; add one to org() in this file`);
    return id;
  });
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

  it("has an id of each organization for every path parameter a route declares", () => {
    const missing = ROUTES.flatMap((route) =>
      paramsOf(route)
        .filter((param) => !a.ids[param] || !b.ids[param])
        .map((param) => `${name(route)}: ${param}`),
    );
    expect(missing, "add these ids to org() in this file").toEqual([]);
    // Every id is one of its own organization's, and the two organizations share none.
    for (const [param, id] of Object.entries(a.ids)) expect(b.ids[param], param).not.toBe(id);
  });

  it("lets only the token endpoints go without an access token, and only service routes without credentials", () => {
    expect(withAuth("apiKey").map(([n]) => n)).toEqual([
      "POST /v1/oauth",
      "POST /v1/oauth/token",
      "POST /v1/oauth/revoke",
      "POST /v1/oauth/introspect",
    ]);
    expect(withAuth("none").map(([n]) => n)).toEqual([
      // Issue 32: where everything is (the people's Worker's since issue 43).
      "GET /",
      "GET /healthz",
      "GET /.well-known/oauth-authorization-server",
      // RFC 9728: the /v1 API's protected resource metadata.
      "GET /.well-known/oauth-protected-resource",
      "GET /v1/openapi.json",
      "GET /.well-known/jwks.json",
      // Issue 31: keyway's public keys, which receivers' OAuth servers fetch as its jwks_uri.
      "GET /v1/receiver-jwks/{org}",
      // Issue 42: one configuration's own keys (its jwks_uri).
      "GET /v1/receiver-jwks/{org}/{id}",
      // The people's Worker's pages (issue 43): the reference, the GraphQL explorer with its files.
      "GET /docs",
      "GET /explorer",
      "GET /explorer/assets/{file}",
    ]);
    for (const route of ROUTES) {
      if (route.path.startsWith("/admin/")) expect(route.auth, name(route)).toBe("admin");
    }
  });

  it.each(withAuth("none"))("%s needs no credentials", async (_name, route) => {
    const res = await request(route, pathOf(route), {});
    // The explorer's files are the people's Worker's static assets, which only wrangler serves
    // (npm start, deployed: test/e2e/docs.browser.test.ts); in-process its entrypoint has none.
    expect(res.status).toBe(route.path.startsWith("/explorer/assets/") ? 404 : 200);
  });

  it.each([...withAuth("apiKey"), ...withAuth("client")])("%s refuses a request without an API key", async (_name, route) => {
    const res = await request(route, pathOf(route), { Authorization: `Bearer ${a.token}` });
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_api_key");
  });

  it.each(withAuth("apiKey"))(
    "%s refuses this organization's client credentials with another organization's API key (401 invalid_client), in the body or by HTTP Basic",
    async (_name, route) => {
      // What each of them needs beside the client's credentials (a token to revoke or inspect is
      // ignored by the token endpoints, RFC 6749 3.2).
      const grant = { grant_type: "client_credentials", token: "kw_at_unknown" };
      const inBody = (apiKey: string): RequestInit => ({
        method: route.method,
        headers: { "Content-Type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({ ...grant, client_id: a.tenant.clientId, client_secret: a.tenant.clientSecret }),
      });
      const byBasic = (apiKey: string): RequestInit => ({
        method: route.method,
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "x-api-key": apiKey,
          Authorization: basic(a.tenant.clientId, a.tenant.clientSecret),
        },
        body: new URLSearchParams(grant).toString(),
      });
      for (const init of [inBody, byBasic]) {
        // The same request with the credentials' own organization's API key is granted, so the
        // refusal below is about the organizations differing and nothing else.
        expect((await call(route.path, init(a.tenant.apiKey))).status, init.name).toBe(200);
        const res = await call(route.path, init(b.tenant.apiKey));
        expect(res.status, init.name).toBe(401);
        const json = (await res.json()) as { error?: string; developer_message?: string; error_description?: string };
        expect(json.error, init.name).toBe("invalid_client");
        expect(json.developer_message ?? json.error_description, init.name).toMatch(/different organization/);
        expect(JSON.stringify(json), init.name).not.toContain("access_token");
      }
    },
  );

  it.each(withAuth("client"))("%s refuses a request with an API key but no access token", async (_name, route) => {
    const res = await request(route, pathOf(route), { "x-api-key": a.tenant.apiKey });
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_token");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  it.each(withAuth("client"))("%s refuses another organization's access token with this organization's API key", async (_name, route) => {
    const res = await request(route, pathOf(route), { "x-api-key": a.tenant.apiKey, Authorization: `Bearer ${b.token}` });
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_token");
  });

  // Each route's declared scope (http/route.ts) is what it needs: a token with every other scope
  // is refused with 403 insufficient_scope naming it, before anything is read or changed.
  const needScope = ROUTES.filter((r) => r.scope !== undefined);
  it.each(needScope.map((r) => [`${name(r)} (${r.scope})`, r] as const))(
    "%s refuses a token that has every scope but the one it needs (403 insufficient_scope)",
    async (_name, route) => {
      const others = ALL_SCOPES.filter((s) => s !== route.scope).join(" ");
      const res = await call("/v1/oauth/token", {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": a.tenant.apiKey },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          client_id: a.tenant.clientId,
          client_secret: a.tenant.clientSecret,
          scope: others,
        }).toString(),
      });
      const narrowed = String(((await res.json()) as { access_token: string }).access_token);
      const refused = await request(route, pathOf(route), { "x-api-key": a.tenant.apiKey, Authorization: `Bearer ${narrowed}` });
      expect(refused.status).toBe(403);
      expect(await errorCode(refused)).toBe("insufficient_scope");
      expect(refused.headers.get("www-authenticate")).toContain(`scope="${route.scope}"`);
    },
  );

  it("declares a scope on every webhook and event route, and none on /v1/me and GraphQL (whose fields check their own)", () => {
    const unscoped = ROUTES.filter((r) => r.auth === "client" && r.scope === undefined).map(name);
    expect(unscoped).toEqual(["GET /v1/me", "POST /v1/graphql", "GET /v1/graphql"]);
  });

  it.each(withAuth("admin"))("%s refuses a request without the operator token, or with an access token instead", async (_name, route) => {
    const path = pathOf(route);
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

  // An organization administrator token signs into the manager app, for its organization only;
  // it is no operator credential, not even on its own organization's paths.
  it.each(withAuth("admin"))(
    "%s refuses an organization administrator token, even on its own organization's paths",
    async (_name, route) => {
      const res = await request(route, pathOf(route), { Authorization: `Bearer ${a.adminToken}` });
      expect(res.status).toBe(401);
      expect(await errorCode(res)).toBe("invalid_token");
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
    },
  );

  const scoped = ROUTES.filter((r) => r.auth === "client" && r.path.includes("{"));
  it.each(scoped.map((r) => [name(r), r] as const))(
    "%s does not find another organization's resource (404, nothing changed)",
    async (_name, route) => {
      const res = await request(route, pathOf(route), authed(b.tenant, b.token).headers as Record<string, string>);
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe("not_found");
      // The ids name something real: their own organization reads it (only reads, to change nothing).
      if (route.method === "GET")
        expect((await request(route, pathOf(route), authed(a.tenant, a.token).headers as Record<string, string>)).status).toBe(200);
    },
  );

  // The operator may reach every organization; what must hold is that a resource is found only
  // under the organization (and user) it belongs to.
  const nested = ROUTES.filter((r) => r.auth === "admin" && /\{org\}\/.*\{/.test(r.path));
  it.each(nested.map((r) => [name(r), r] as const))(
    "%s does not find a resource under another organization's path (404)",
    async (_name, route) => {
      const operator = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      const res = await request(route, pathOf(route, a, b), operator);
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe("not_found");
      // Under their own organization the same ids are found (only reads, to change nothing).
      if (route.method === "GET") expect((await request(route, pathOf(route), operator)).status).toBe(200);
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
    const adminToken = await admin<{ status: string }>("GET", `/organizations/${a.ids.org}/admin-tokens/${a.ids.token}`);
    expect(adminToken.status).toBe("active");
    const user = await admin<{ id: string }>("GET", `/organizations/${a.ids.org}/users/${a.ids.user}`);
    expect(user.id).toBe(a.ids.user);
  });
});

// Issue 29: once an organization is deleted, no route of it may create, change or list anything.
// Every operator route under its path answers 404 (a second DELETE too), and every /v1 route
// refuses its API key (401), whatever the method, with the route's own example body.
describe("a deleted organization", () => {
  const operatorRoutes = ROUTES.filter((r) => r.auth === "admin" && r.path.includes("{org}"));
  it.each(operatorRoutes.map((r) => [name(r), r] as const))("%s answers 404 for it", async (_name, route) => {
    const res = await request(route, pathOf(route, gone), { Authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe("not_found");
  });

  it.each([...withAuth("apiKey"), ...withAuth("client")])("%s refuses its API key (401)", async (_name, route) => {
    const res = await request(route, pathOf(route, gone), {
      "x-api-key": gone.tenant.apiKey,
      Authorization: `Bearer ${gone.token}`,
    });
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("invalid_api_key");
  });

  it("is not listed, and nothing was created under it by the calls above", async () => {
    const listed = await admin<{ id: string }[]>("GET", "/organizations?limit=100");
    expect(listed.map((o) => o.id)).not.toContain(gone.ids.org);
    const res = await call(`/admin/v1/organizations/${gone.ids.org}/api-keys`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(404);
  });
});
