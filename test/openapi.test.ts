/**
 * The API description: served without credentials, in step with the router (every registered
 * route documented, every documented route registered), its examples valid against the zod
 * schemas they were written for, its security schemes (OAuth 2.0 client credentials at the
 * RFC 6749 token endpoint plus the API key; the operator bearer) and license, every operation's
 * client errors documented and provoked for real, the `webhooks` it describes checked against a
 * real delivery attempt, and the /docs page locked down by a per-response CSP nonce. (Redocly
 * CLI lints the served document and a browser drives /docs in test/e2e/docs.browser.test.ts.)
 */

import { env, exports } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { createApp } from "../src/app";
import { SDL } from "../src/graphql/schema";
import { escapeHtml, renderDocsPage } from "../src/http/docs-page";
import { EVENT_BODY, EXAMPLE_ORIGIN, SIGNING_SECRET } from "../src/http/examples";
import { examplePath, type OperationObject, type ParameterObject, TOKEN_URL } from "../src/http/openapi";
import type { Auth, Route } from "../src/http/route";
import { openApiDocument, ROUTES } from "../src/http/routes";
import { createPeopleApp } from "../src/people-app";
import { Envelope, ErrorEnvelope } from "../src/schemas/common";
import { PlainTokenError } from "../src/schemas/oauth";
import { ReceiverTokenRequest, WebhookEvent } from "../src/schemas/webhooks";
import { fakeNetwork, TOKEN_URL as RECEIVER_TOKEN_URL, receiver, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, authed, call, callAt, createTenant, issueToken, type Tenant } from "./helpers";
import { attemptNow, createConfig, publishTo } from "./webhook-helpers";

interface Doc {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, unknown>>;
  components: { securitySchemes: Record<string, unknown> };
}

/** "GET /v1/me"-style keys of what the two Workers' routers serve; `:param` becomes `{param}`. */
function registeredRoutes(): Set<string> {
  return new Set(
    [...createApp().routes, ...createPeopleApp().routes]
      // "ALL" entries are middleware and the 405 fallbacks of http/route.ts, not operations;
      // /manager is the HTML manager app and /portal the receivers' portal, not part of the REST API.
      .filter((r) => r.method !== "ALL" && !r.path.startsWith("/manager") && !r.path.startsWith("/portal"))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
  );
}

const operations = () => ROUTES;

/**
 * What each kind of declared `auth` (src/http/route.ts) means for a caller, in OpenAPI terms:
 * nothing; the API key alone (the token endpoints); the API key and an access token from the
 * OAuth 2.0 flow, together; the operator's bearer token. Keyed by `Auth`, so a new kind of auth
 * does not compile until it is described here.
 */
const SECURITY_OF_AUTH: Record<Auth, Record<string, string[]>[]> = {
  none: [],
  apiKey: [{ apiKey: [] }],
  client: [{ apiKey: [], oauth2: [] }],
  admin: [{ admin: [] }],
  polling: [{ pollingToken: [] }],
};
const documentedRoutes = (): Set<string> => new Set(operations().map((op) => `${op.method} ${op.path}`));

describe("GET /v1/openapi.json", () => {
  it("serves an OpenAPI 3.1 document without any credentials, cacheable for five minutes", async () => {
    const res = await call("/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    const doc = (await res.json()) as Doc;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["admin", "apiKey", "oauth2", "pollingToken", "receiverToken"]);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "x-api-key" });
    expect(doc.components.securitySchemes.admin).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("describes access tokens as an OAuth 2.0 client-credentials flow whose tokenUrl is the plain RFC 6749 token endpoint", () => {
    const doc = openApiDocument();
    expect(doc.components.securitySchemes.oauth2).toMatchObject({
      type: "oauth2",
      flows: { clientCredentials: { tokenUrl: "/v1/oauth/token", scopes: {} } },
    });
    // The flow's token endpoint is a documented operation answering the RFC 6749 5.1 body.
    const token = doc.paths[TOKEN_URL]?.post;
    expect(token?.security).toEqual([{ apiKey: [] }]);
    expect(token?.requestBody?.content).toHaveProperty(["application/x-www-form-urlencoded"]);
    const answer = token?.responses["200"];
    expect(answer && "content" in answer ? answer.content?.["application/json"]?.schema : undefined).toEqual({
      $ref: "#/components/schemas/PlainTokenResponse",
    });
  });

  it("resolves tokenUrl against servers to the token_endpoint that OAuth discovery (RFC 8414) advertises", async () => {
    const bindings = { ...env, PUBLIC_BASE_URL: "https://api.example.com" };
    const doc = (await (await callAt(Date.now(), "/v1/openapi.json", {}, bindings)).json()) as Doc & {
      components: { securitySchemes: { oauth2: { flows: { clientCredentials: { tokenUrl: string } } } } };
    };
    const metadata = (await (await callAt(Date.now(), "/.well-known/oauth-authorization-server", {}, bindings)).json()) as {
      token_endpoint: string;
    };
    // OpenAPI 3.1 section 4.5: relative URLs resolve against the Server Object's url.
    const tokenUrl = new URL(doc.components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl, doc.servers[0]?.url).href;
    expect(tokenUrl).toBe("https://api.example.com/v1/oauth/token");
    expect(tokenUrl).toBe(metadata.token_endpoint);
  });

  it("reads as a reference, not a history: no description of the API or of the GraphQL schema names an issue of the project's tracker", () => {
    // History is CHANGELOG.md's (docs/README.md); SDL `#` comments are not part of the schema.
    const described = [
      JSON.stringify(openApiDocument()),
      ...[...SDL.matchAll(/"""([\s\S]*?)"""|"([^"\n]*)"/g)].map((m) => m[1] ?? m[2] ?? ""),
    ];
    for (const text of described) expect(text).not.toMatch(/\bissues? #?\d+/i);
  });

  it("names the project's license by its SPDX identifier, without a url (OpenAPI 3.1: they exclude each other)", () => {
    const license = openApiDocument().info.license as { name: string; identifier: string; url?: string };
    expect(license.name).not.toBe("");
    expect(license.identifier).toMatch(/^[A-Za-z0-9.+-]+$/);
    expect(license.url).toBeUndefined();
  });

  it("names a relative server when no public origin is configured, whatever Host the caller sent", async () => {
    for (const host of ["keyway.test", "evil.example"]) {
      const res = await exports.default.fetch(
        new Request(`https://${host}/v1/openapi.json`, { headers: { "X-Forwarded-Host": "evil.example" } }),
      );
      const doc = (await res.json()) as Doc;
      expect(doc.servers).toEqual([{ url: "/" }]);
    }
    expect(openApiDocument().servers).toBeUndefined();
  });

  it("is served even when a secret is missing: it depends on PUBLIC_BASE_URL only", async () => {
    const { ADMIN_TOKEN: _admin, ...withoutAdminToken } = env;
    const res = await callAt(Date.now(), "/v1/openapi.json", {}, withoutAdminToken as Env);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Doc).servers).toEqual([{ url: "/" }]);
  });

  it("names the configured PUBLIC_BASE_URL in servers", async () => {
    const res = await callAt(Date.now(), "/v1/openapi.json", {}, { ...env, PUBLIC_BASE_URL: "https://api.example.com/" });
    expect(((await res.json()) as Doc).servers).toEqual([{ url: "https://api.example.com" }]);
  });

  it.each([
    "api.example.com",
    "ftp://api.example.com",
    "https://api.example.com/v1",
    "https://user:pw@api.example.com",
    "https://api.example.com/?x=1",
  ])("refuses to run with PUBLIC_BASE_URL %s (503, the setting named in the log only)", async (value) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const res = await callAt(Date.now(), "/v1/openapi.json", {}, { ...env, PUBLIC_BASE_URL: value });
      expect(res.status).toBe(503);
      expect(await res.text()).not.toContain(value);
      const lines = logged.mock.calls.map((args) => args.map(String).join(" ")).join("\n");
      expect(lines).toContain("PUBLIC_BASE_URL");
      expect(lines).not.toContain(value);
    } finally {
      logged.mockRestore();
    }
  });

  it("answers other methods with the 405 envelope, still without credentials", async () => {
    const res = await call("/v1/openapi.json", { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("coverage", () => {
  it("documents every route the router registers", () => {
    const documented = documentedRoutes();
    const missing = [...registeredRoutes()].filter((route) => !documented.has(route));
    expect(missing, "declare these in src/http/routes (ROUTES): the document is generated from the declarations").toEqual([]);
  });

  it("documents only routes the router registers", () => {
    const registered = registeredRoutes();
    const extra = [...documentedRoutes()].filter((route) => !registered.has(route));
    expect(extra).toEqual([]);
  });

  it("gives every operation a unique operationId", () => {
    const ops = operations();
    const webhookIds = Object.values(openApiDocument().webhooks).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(new Set([...ops.map((op) => op.operationId), ...webhookIds]).size).toBe(ops.length + webhookIds.length);
  });

  it("gives every operation the security its declaration's auth and scope say, each naming a declared scheme and scope", () => {
    const doc = openApiDocument();
    const schemes = Object.keys(doc.components.securitySchemes);
    const oauth2 = doc.components.securitySchemes.oauth2 as { flows: { clientCredentials: { scopes: Record<string, string> } } };
    expect(Object.keys(oauth2.flows.clientCredentials.scopes)).toEqual([
      "webhooks:read",
      "webhooks:write",
      "events:write",
      "graphql:mutate",
    ]);
    for (const op of operations()) {
      const where = `${op.method} ${op.path} (auth "${op.auth}")`;
      const security = doc.paths[op.path]?.[op.method.toLowerCase() as "get"]?.security;
      expect(security, where).toEqual(op.scope === undefined ? SECURITY_OF_AUTH[op.auth] : [{ apiKey: [], oauth2: [op.scope] }]);
      if (op.scope !== undefined) expect(Object.keys(oauth2.flows.clientCredentials.scopes), where).toContain(op.scope);
      for (const requirement of security ?? []) for (const scheme of Object.keys(requirement)) expect(schemes, where).toContain(scheme);
    }
    // Every kind of auth is declared by some route, so each row of the table above is checked.
    expect(new Set(operations().map((op) => op.auth))).toEqual(new Set(Object.keys(SECURITY_OF_AUTH)));
  });

  it("resolves every $ref in the document", () => {
    const doc = openApiDocument();
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/([^"]+)"/g)].map((m) => m[1] ?? "");
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of new Set(refs)) {
      let node: unknown = doc;
      for (const key of ref.split("/")) node = (node as Record<string, unknown> | undefined)?.[key];
      expect(node, ref).toBeDefined();
    }
  });
});

/** Every operation of the served document, the webhooks included, with where it is. */
function documentedOperations(): { where: string; op: OperationObject }[] {
  const doc = openApiDocument();
  return [...Object.entries(doc.paths), ...Object.entries(doc.webhooks).map(([name, item]) => [`webhook ${name}`, item] as const)].flatMap(
    ([where, item]) =>
      Object.entries(item).map(([method, op]) => ({ where: `${method.toUpperCase()} ${where}`, op: op as OperationObject })),
  );
}

describe("client errors", () => {
  let t: Tenant;
  let token: string;
  beforeAll(async () => {
    t = await createTenant();
    token = await issueToken(t);
  });

  const statusesOf = (route: Route): string[] =>
    Object.keys(openApiDocument().paths[route.path]?.[route.method.toLowerCase() as "get"]?.responses ?? {});
  /** The credentials each kind of route takes, valid. */
  const credentials = (route: Route): Record<string, string> =>
    route.auth === "admin"
      ? { Authorization: `Bearer ${ADMIN_TOKEN}` }
      : route.auth === "client"
        ? (authed(t, token).headers as Record<string, string>)
        : route.auth === "apiKey"
          ? { "x-api-key": t.apiKey }
          : route.auth === "polling"
            ? { Authorization: "Bearer kw_poll_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }
            : {};
  const send = (route: Route, init: { method?: string; headers?: Record<string, string>; body?: string }) =>
    call(examplePath(route.path), {
      method: init.method ?? route.method,
      headers: init.headers ?? {},
      ...(init.body ? { body: init.body } : {}),
    });
  const withBody = ROUTES.filter((r) => r.body !== undefined);

  it("documents at least one 4xx answer for every operation, webhooks included", () => {
    const operations = documentedOperations();
    expect(operations.length).toBe(ROUTES.length + 2);
    for (const { where, op } of operations) {
      expect(
        Object.keys(op.responses).filter((status) => /^4(\d\d|XX)$/.test(status)),
        where,
      ).not.toEqual([]);
    }
  });

  it("every path answers a method it does not take with 405 and Allow, as every operation documents", async () => {
    for (const route of ROUTES) {
      const where = `${route.method} ${route.path}`;
      expect(statusesOf(route), where).toContain("405");
      const res = await send(route, { method: "PUT", headers: credentials(route) });
      expect(res.status, where).toBe(405);
      expect(res.headers.get("allow"), where).toContain(route.method);
    }
  });

  it("every operation that takes credentials answers 401 without them, as it documents", async () => {
    for (const route of ROUTES.filter((r) => r.auth !== "none")) {
      const where = `${route.method} ${route.path}`;
      expect(statusesOf(route), where).toContain("401");
      const body = route.body ? { body: JSON.stringify(route.body.example), headers: { "Content-Type": "application/json" } } : {};
      expect((await send(route, body)).status, where).toBe(401);
    }
  });

  it("every operation that takes a body answers 415 to text/plain and 400 to malformed JSON, as it documents", async () => {
    expect(withBody.length).toBeGreaterThan(5);
    for (const route of withBody) {
      const where = `${route.method} ${route.path}`;
      expect(statusesOf(route), where).toEqual(expect.arrayContaining(["400", "413", "415"]));
      const plain = await send(route, { headers: { ...credentials(route), "Content-Type": "text/plain" }, body: "x" });
      expect(plain.status, where).toBe(415);
      const malformed = await send(route, { headers: { ...credentials(route), "Content-Type": "application/json" }, body: "{" });
      expect(malformed.status, where).toBe(400);
    }
  });

  it("every operation with a path parameter answers 404 when it names nothing, as it documents", async () => {
    const withParams = ROUTES.filter((r) => r.path.includes("{"));
    expect(withParams.length).toBeGreaterThan(10);
    for (const route of withParams) {
      const where = `${route.method} ${route.path}`;
      expect(statusesOf(route), where).toContain("404");
      // The example ids are made up, so nothing in this test's storage has them.
      const body = route.body ? JSON.stringify(route.body.example) : undefined;
      const headers = { ...credentials(route), ...(body ? { "Content-Type": "application/json" } : {}) };
      // A route anyone can call answers a made-up id as it answers a wrong credential (401): no
      // caller learns which ids exist (docs/architecture.md, "Routes without an API key").
      const expected = route.auth === "polling" ? 401 : 404;
      expect((await send(route, { headers, ...(body ? { body } : {}) })).status, where).toBe(expected);
    }
  });
});

describe("webhooks keyway sends", () => {
  const doc = () => openApiDocument();
  const tokenOp = () => doc().webhooks.receiverToken?.post;
  const eventOp = () => doc().webhooks.event?.post;
  const eventHeaders = () => (eventOp()?.parameters ?? []) as ParameterObject[];

  it("describes the token request (form-encoded, no other credential) and the event (JSON, the receiver's bearer, Standard Webhooks headers)", () => {
    expect(Object.keys(doc().webhooks).sort()).toEqual(["event", "receiverToken"]);
    expect(Object.keys(tokenOp()?.requestBody?.content ?? {})).toEqual(["application/x-www-form-urlencoded"]);
    expect(tokenOp()?.security).toEqual([]);
    expect(Object.keys(eventOp()?.requestBody?.content ?? {})).toEqual(["application/json"]);
    expect(eventOp()?.security).toEqual([{ receiverToken: [] }]);
    expect(doc().components.securitySchemes.receiverToken).toMatchObject({ type: "http", scheme: "bearer" });
    expect(eventHeaders().map((p) => [p.name, p.in, p.required])).toEqual(
      expect.arrayContaining([
        ["webhook-id", "header", true],
        ["webhook-timestamp", "header", true],
        ["webhook-signature", "header", true],
      ]),
    );
  });

  it("a real delivery attempt sends exactly the two requests described, headers and bodies alike", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const sent = fakeNetwork(receiver({ token: "receiver-token-1" }));
    const config = await createConfig(t, token, "receiver-secret");
    const { last } = await attemptNow(t, token, await publishTo(t, token, config.id));
    expect(last.outcome).toBe("delivered");
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([`POST ${RECEIVER_TOKEN_URL}`, `POST ${WEBHOOK_URL}`]);
    const [tokenRequest, event] = sent;

    // The token request: its only headers are the media type and the Accept its description names.
    expect(Object.keys(tokenRequest!.headers).sort()).toEqual(["accept", "content-type"]);
    expect(tokenRequest!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(tokenRequest!.headers.accept).toBe("application/json");
    const form = Object.fromEntries(new URLSearchParams(tokenRequest!.body));
    expect(Object.keys(form).sort()).toEqual(Object.keys(doc().components.schemas.ReceiverTokenRequest?.properties ?? {}).sort());
    expect(ReceiverTokenRequest.parse(form)).toEqual({
      client_id: "keyway-at-receiver",
      client_secret: "receiver-secret",
      grant_type: "client_credentials",
    });

    // The event: documented headers, and nothing else but the media type and the bearer.
    const headers = event!.headers;
    expect(headers["content-type"]).toBe("application/json");
    expect(headers.authorization).toBe("Bearer receiver-token-1");
    const others = Object.keys(headers).filter((h) => h !== "content-type" && h !== "authorization" && h !== "content-length");
    expect(others.sort()).toEqual(
      eventHeaders()
        .map((p) => p.name.toLowerCase())
        .sort(),
    );
    for (const param of eventHeaders()) {
      const value = headers[param.name.toLowerCase()] ?? "";
      if (typeof param.schema.pattern === "string") expect(value, param.name).toMatch(new RegExp(param.schema.pattern));
    }
    const body = JSON.parse(event!.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(Object.keys(doc().components.schemas.WebhookEvent?.properties ?? {}));
    expect(WebhookEvent.safeParse(body).success).toBe(true);
    // And the receiver's own check, with the reference library.
    expect(() => new Webhook(config.signing_secret).verify(event!.body, headers)).not.toThrow();
  });

  it("documents a real signature: the example headers sign the example body with the example secret (standardwebhooks)", () => {
    const example = Object.fromEntries(eventHeaders().map((p) => [p.name, String(p.example)]));
    const documentedBody = eventOp()?.requestBody?.content["application/json"]?.example;
    expect(documentedBody).toEqual(EVENT_BODY);
    // The bytes a receiver gets are JSON.stringify of the event, in this key order (webhooks/deliveries.ts).
    const bytes = JSON.stringify(documentedBody);
    const signed = new Webhook(SIGNING_SECRET).sign(
      example["webhook-id"] ?? "",
      new Date(Number(example["webhook-timestamp"]) * 1000),
      bytes,
    );
    expect(example["webhook-signature"]).toBe(signed);
  });
});

describe("examples", () => {
  it("every request example passes the schema the route validates with", () => {
    for (const op of operations()) {
      if (op.body === undefined) continue;
      const result = op.body.schema.safeParse(op.body.example);
      expect(result.success, `${op.operationId}: ${result.error?.message}`).toBe(true);
    }
  });

  it("every response example passes its response schema", () => {
    for (const op of operations()) {
      const result = op.response.schema.safeParse(op.response.example);
      expect(result.success, `${op.operationId}: ${result.error?.message}`).toBe(true);
    }
  });

  it("every enveloped response example, as documented, is a valid envelope of its data", () => {
    const doc = openApiDocument();
    for (const op of operations()) {
      if ((op.wire ?? "envelope") !== "envelope") continue;
      const documented = doc.paths[op.path]?.[op.method.toLowerCase() as "get"]?.responses[String(op.status)];
      const example = documented && "content" in documented ? documented.content?.["application/json"]?.example : undefined;
      const result = Envelope(op.response.schema).safeParse(example);
      expect(result.success, `${op.operationId}: ${result.error?.message}`).toBe(true);
      // A created resource's envelope names the resource itself, under the collection it was posted to.
      const self = (example as { _links: { self: { href: string } } })._links.self.href;
      expect(example).toMatchObject({ response_status: op.status });
      if (op.status === 201) expect(self, op.operationId).toMatch(new RegExp(`^${EXAMPLE_ORIGIN}${examplePath(op.path)}/[^/]+$`));
      else expect(self, op.operationId).toBe(`${EXAMPLE_ORIGIN}${examplePath(op.path)}`);
    }
  });

  it("every error example is a valid error envelope, or an RFC 6749 error on the plain token endpoint", () => {
    const doc = openApiDocument();
    for (const response of Object.values(doc.components.responses)) {
      expect(ErrorEnvelope.safeParse(response.content?.["application/json"]?.example).success, response.description).toBe(true);
    }
    for (const [status, response] of Object.entries(doc.paths["/v1/oauth/token"]?.post?.responses ?? {})) {
      if (status.startsWith("2") || !("content" in response)) continue;
      expect(PlainTokenError.safeParse(response.content?.["application/json"]?.example).success, status).toBe(true);
    }
  });

  it("list operations document limit (1..100, default 50) and cursor", () => {
    const limit = openApiDocument().components.parameters.limit;
    expect(limit?.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 });
    for (const op of operations().filter((o) => o.list)) {
      expect(op.response.schema, op.operationId).toBeInstanceOf(z.ZodArray);
    }
  });
});

describe("GET /docs", () => {
  it("serves HTML under a strict CSP whose nonce is the inline script's and style's", async () => {
    const res = await call("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const csp = res.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([A-Za-z0-9_-]{16,})'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toBe(
      `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; ` +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
    expect(scripts).toEqual([` nonce="${nonce}"`]);
    const styles = [...html.matchAll(/<style([^>]*)>/g)].map((m) => m[1]);
    expect(styles).toEqual([` nonce="${nonce}"`]);
  });

  it("uses a fresh nonce on every response", async () => {
    const first = (await call("/docs")).headers.get("content-security-policy");
    const second = (await call("/docs")).headers.get("content-security-policy");
    expect(first).not.toBe(second);
  });

  it("shows every documented path and operation, and loads nothing from elsewhere", async () => {
    const html = await (await call("/docs")).text();
    for (const op of operations()) {
      expect(html, op.path).toContain(escapeHtml(op.path));
      expect(html, op.operationId).toContain(`id="${op.operationId}"`);
    }
    expect(html).not.toMatch(/<(script|link|img|iframe)[^>]+(src|href)=/i);
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/i);
  });

  it("gives every input and textarea a label", async () => {
    const html = await (await call("/docs")).text();
    const ids = [...html.matchAll(/<(?:input|textarea) id="([^"]+)"/g)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(4);
    for (const id of ids) expect(html, id).toContain(`<label for="${id}">`);
  });

  it("escapes markup in text it inserts into the page", () => {
    expect(escapeHtml(`"><script>alert('x')</script>&`)).toBe("&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;");
    expect(renderDocsPage(openApiDocument(), "n")).not.toContain("<script>alert");
  });
});
