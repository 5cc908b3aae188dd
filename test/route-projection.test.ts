/**
 * Responses are projected through the route's view schema (src/http/route.ts): whatever a
 * handler returns, an enveloped answer carries only the fields its view declares, so a secret or
 * stored-only field (`client_secret`, `secret_hash`) cannot reach a response by being forgotten
 * in a handler. Shown first with small declarations made by the project's own route helpers and
 * mounted by its own router, whose handlers return such fields on purpose; then on the real
 * routes: every enveloped GET route, called with real ids, answers with no field outside its
 * view schema's keys, at any depth.
 */
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import * as z from "zod";
import type { AppEnv } from "../src/http/context";
import { errorResponse } from "../src/http/errors";
import { envelopeRoute, listRoute, type Route } from "../src/http/route";
import { mountRoutes } from "../src/http/router";
import { ROUTES } from "../src/http/routes";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL, WORKLOAD_ISSUER, WORKLOAD_ISSUER_JWKS } from "./fake-network";
import { ADMIN_TOKEN, admin, authed, BASE, body, call, createTenant, issueToken } from "./helpers";
import { Browser } from "./manager-helpers";

const SECRET = "kw_live_cs_this-must-never-be-sent";
const HASH = "a".repeat(64);

/** The view: what a client may see. */
const ThingView = z.object({ id: z.string(), name: z.string(), owner: z.object({ id: z.string() }) });
type Stored = z.input<typeof ThingView> & { client_secret: string; secret_hash: string; owner: { id: string; secret_hash: string } };

/** A stored record: the view's fields and more, as a handler that forgets to shape it would return. */
const stored = (id: string): Stored => ({
  id,
  name: "Thing",
  client_secret: SECRET,
  secret_hash: HASH,
  owner: { id: "usr_1", secret_hash: HASH },
});
const projected = (id: string) => ({ id, name: "Thing", owner: { id: "usr_1" } });

const doc = { tag: "Service", auth: "none" } as const;
const declarations: Route[] = [
  envelopeRoute({
    ...doc,
    method: "GET",
    path: "/projection/things/{id}",
    operationId: "getThing",
    summary: "A thing",
    response: { schema: ThingView, example: projected("thing_1") },
    handle: (c) => stored(c.req.param("id") ?? ""),
  }),
  envelopeRoute({
    ...doc,
    method: "POST",
    path: "/projection/things",
    operationId: "createThing",
    summary: "Create a thing",
    status: 201,
    body: { schema: z.object({ name: z.string() }), example: { name: "Thing" } },
    response: { schema: ThingView, example: projected("thing_1") },
    handle: async () => stored("thing_new"),
    location: (thing) => `/projection/things/${thing.id}`,
  }),
  listRoute({
    ...doc,
    method: "GET",
    path: "/projection/things",
    operationId: "listThings",
    summary: "Things",
    response: { schema: ThingView, example: [projected("thing_1")] },
    handle: async () => ({ items: [stored("thing_1"), stored("thing_2")], next_cursor: null }),
  }),
  envelopeRoute({
    ...doc,
    method: "GET",
    path: "/projection/broken",
    operationId: "getBroken",
    summary: "A handler whose result lacks a field of the view",
    response: { schema: ThingView, example: projected("thing_1") },
    handle: () => {
      const { name: _name, ...rest } = stored("thing_1");
      return rest as unknown as Stored;
    },
  }),
];

/** An app with just these declarations, mounted by the project's router, errors answered as the Worker answers them. */
function appWith(routes: readonly Route[]): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError((err, c) => errorResponse(c, err));
  mountRoutes(app, routes, async (_c, next) => {
    await next();
  });
  return app;
}

describe("a declared route's handler result", () => {
  const app = appWith(declarations);

  it("reaches the envelope through the view: fields the view does not declare are dropped, nested ones too", async () => {
    const res = await app.request("https://keyway.test/projection/things/thing_7");
    expect(res.status).toBe(200);
    const text = await res.text();
    expect((JSON.parse(text) as { data: unknown }).data).toEqual(projected("thing_7"));
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(HASH);
    expect(text).not.toMatch(/client_secret|secret_hash/);
  });

  it("is projected on a 201 with a body, in the answer and in the Location built from it", async () => {
    const res = await app.request("https://keyway.test/projection/things", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Thing" }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe("/projection/things/thing_new");
    const text = await res.text();
    expect((JSON.parse(text) as { data: unknown }).data).toEqual(projected("thing_new"));
    expect(text).not.toMatch(/client_secret|secret_hash/);
  });

  it("is projected item by item on a list", async () => {
    const res = await app.request("https://keyway.test/projection/things");
    expect(res.status).toBe(200);
    const text = await res.text();
    expect((JSON.parse(text) as { data: unknown }).data).toEqual([projected("thing_1"), projected("thing_2")]);
    expect(text).not.toMatch(/client_secret|secret_hash/);
  });

  it("that does not fit the view is a 500 carrying none of it, never a partial answer", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const res = await app.request("https://keyway.test/projection/broken");
      expect(res.status).toBe(500);
      const json = (await res.json()) as { error?: string; data: unknown };
      expect(json.error).toBe("server_error");
      expect(json.data).toBeNull();
      expect(JSON.stringify(json)).not.toMatch(/thing_1|client_secret|secret_hash/);
    } finally {
      logged.mockRestore();
    }
  });
});

/** Where (e.g. `data[0].oauth.client_secret`) `value` has a field that `schema` does not declare. */
function undeclared(schema: z.ZodType, value: unknown, at: string): string[] {
  if (schema instanceof z.ZodNullable || schema instanceof z.ZodOptional) {
    return value === null || value === undefined ? [] : undeclared(schema.unwrap() as z.ZodType, value, at);
  }
  if (schema instanceof z.ZodArray) {
    return Array.isArray(value) ? value.flatMap((item, i) => undeclared(schema.element as z.ZodType, item, `${at}[${i}]`)) : [at];
  }
  if (schema instanceof z.ZodObject) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return [at];
    const shape = schema.shape as Record<string, z.ZodType>;
    return Object.entries(value).flatMap(([key, field]) => {
      const declared = Object.hasOwn(shape, key) ? shape[key] : undefined;
      return declared ? undeclared(declared, field, `${at}.${key}`) : [`${at}.${key}`];
    });
  }
  return [];
}

/** The object view of a route's `data` (of each item, on a list). */
function objectView(route: Route): z.ZodObject {
  const schema = route.response.schema instanceof z.ZodArray ? (route.response.schema.element as z.ZodType) : route.response.schema;
  if (!(schema instanceof z.ZodObject)) throw new Error(`${route.method} ${route.path}: its view is not an object`);
  return schema;
}

describe("the real routes", () => {
  const enveloped = ROUTES.filter((r) => r.method === "GET" && r.wire === "envelope");

  it("include enveloped reads of every kind whose views are objects", () => {
    expect(enveloped.length).toBeGreaterThan(10);
    expect(enveloped.filter((r) => r.list).length).toBeGreaterThan(5);
    for (const route of enveloped) expect(objectView(route), `${route.method} ${route.path}`).toBeInstanceOf(z.ZodObject);
  });

  it("never answer an enveloped GET with a field outside the view schema's keys, nor a stored secret or hash", async () => {
    fakeNetwork(receiver());
    const t = await createTenant();
    const token = await issueToken(t);
    const client = authed(t, token).headers as Record<string, string>;
    const post = async <T>(path: string, payload: unknown) => {
      const res = await call(path, {
        method: "POST",
        headers: { ...client, "Content-Type": "application/json" },
        body: JSON.stringify(payload),
      });
      expect(res.status, path).toBeLessThan(300);
      return (await body<T>(res)).data;
    };
    const receiverSecret = "projection-receiver-secret";
    const config = await post<{ id: string; signing_secret: string }>("/v1/webhook-configurations", {
      url: WEBHOOK_URL,
      oauth: { token_url: TOKEN_URL, client_id: "kw", client_secret: receiverSecret },
    });
    // Issue 45: a polling configuration, read with its own token.
    const polling = await post<{ id: string; polling: { token: string } }>("/v1/webhook-configurations", { delivery: "polling" });
    const event = await post<{ deliveries: { id: string }[] }>("/v1/events", { type: "order.created", data: {} });
    const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, {});
    // Issue 44: a trusted issuer (its key set served by the fake network's receiver routes).
    const issuer = await admin<{ id: string }>("POST", `/organizations/${t.orgId}/trusted-issuers`, {
      issuer: WORKLOAD_ISSUER,
      jwks_uri: WORKLOAD_ISSUER_JWKS,
    });
    // Issue 30: an event type, a recovery and a portal session (opened as a browser does).
    await post("/v1/event-types", { name: "order.created", schema: { type: "object" } });
    const recovery = await post<{ id: string }>(`/v1/webhook-configurations/${config.id}/recover`, {
      since: new Date(Date.now() - 60_000).toISOString(),
    });
    const link = await post<{ url: string }>(`/v1/webhook-configurations/${config.id}/portal-links`, {});
    const browser = new Browser();
    const page = await (await browser.get(link.url.slice(BASE.length))).text();
    const linkToken = new URL(link.url).searchParams.get("token") ?? "";
    expect((await browser.post("/portal/open", { csrf: Browser.csrf(page), token: linkToken })).status).toBe(303);
    const sessions = await call(`/v1/webhook-configurations/${config.id}/portal-sessions`, { headers: client });
    const ids: Record<string, string> = {
      name: "order.created",
      recovery: recovery.id,
      session: (await body<{ id: string }[]>(sessions)).data[0]?.id ?? "",
      org: t.orgId,
      user: t.userId,
      key: t.apiKeyId,
      client: t.clientId,
      token: minted.id,
      config: config.id,
      polling: polling.id,
      delivery: event.deliveries[0]?.id ?? "",
      issuer: issuer.id,
    };
    const secrets = [
      t.clientSecret,
      t.apiKey,
      token,
      minted.token,
      config.signing_secret,
      polling.polling.token,
      receiverSecret,
      linkToken,
      linkToken.split(".")[0] ?? "",
    ];

    for (const route of enveloped) {
      const where = `${route.method} ${route.path}`;
      const path = route.path.replace(/\{(\w+)\}/g, (_, param: string) => {
        const name =
          param === "id"
            ? route.path.includes("/deliveries/{id}")
              ? "delivery"
              : route.path.startsWith("/v1/polling-endpoints/")
                ? "polling"
                : "config"
            : param;
        const id = ids[name];
        if (!id) throw new Error(`${where}: no id for {${param}}; add one to this test`);
        return id;
      });
      const headers =
        route.auth === "admin"
          ? { Authorization: `Bearer ${ADMIN_TOKEN}` }
          : route.auth === "polling"
            ? { Authorization: `Bearer ${polling.polling.token}` }
            : client;
      const res = await call(path, { headers });
      const text = await res.text();
      expect(res.status, `${where}: ${text}`).toBe(200);
      const data = (JSON.parse(text) as { data: unknown }).data;
      const view = objectView(route);
      const items = route.list ? (data as unknown[]) : [data];
      // A list with nothing in it would check nothing.
      expect(items.length, where).toBeGreaterThan(0);
      for (const item of items) {
        expect(
          Object.keys(item as object).filter((key) => !Object.hasOwn(view.shape, key)),
          where,
        ).toEqual([]);
      }
      expect(undeclared(route.response.schema, data, "data"), where).toEqual([]);
      expect(text, where).not.toMatch(/secret_hash|key_hash|token_hash|client_secret"/);
      for (const secret of secrets) expect(text.includes(secret), `${where} carries a secret`).toBe(false);
    }
  });
});
