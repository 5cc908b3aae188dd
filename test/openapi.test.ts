/**
 * The API description: served without credentials, in step with the router (every registered
 * route documented, every documented route registered), its examples valid against the zod
 * schemas they were written for, and the /docs page locked down by a per-response CSP nonce.
 */

import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { createApp } from "../src/app";
import { escapeHtml } from "../src/http/docs-page";
import { EXAMPLE_ORIGIN } from "../src/http/examples";
import { examplePath } from "../src/http/openapi";
import { docsPage, openApiDocument, ROUTES } from "../src/http/routes";
import { Envelope, ErrorEnvelope } from "../src/schemas/common";
import { PlainTokenError } from "../src/schemas/oauth";
import { call, callAt } from "./helpers";

interface Doc {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, unknown>>;
  components: { securitySchemes: Record<string, unknown> };
}

/** "GET /v1/me"-style keys of what the router serves; `:param` becomes `{param}`. */
function registeredRoutes(): Set<string> {
  return new Set(
    createApp()
      // "ALL" entries are middleware and the 405 fallbacks of http/route.ts, not operations;
      // /manager is the HTML manager app, not part of the REST API.
      .routes.filter((r) => r.method !== "ALL" && !r.path.startsWith("/manager"))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
  );
}

const operations = () => ROUTES;
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
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["admin", "apiKey", "bearer"]);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "x-api-key" });
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
    expect(missing, "add these to operations() in src/http/openapi.ts").toEqual([]);
  });

  it("documents only routes the router registers", () => {
    const registered = registeredRoutes();
    const extra = [...documentedRoutes()].filter((route) => !registered.has(route));
    expect(extra).toEqual([]);
  });

  it("gives every operation a unique operationId and the security its path requires", () => {
    const ops = operations();
    expect(new Set(ops.map((op) => op.operationId)).size).toBe(ops.length);
    const paths = openApiDocument().paths;
    for (const op of ops) {
      const security = paths[op.path]?.[op.method.toLowerCase() as "get"]?.security;
      const expected = op.path.startsWith("/admin/v1/")
        ? [{ admin: [] }]
        : op.path === "/v1/oauth" || op.path === "/v1/oauth/token"
          ? [{ apiKey: [] }]
          : op.path.startsWith("/v1/") && op.path !== "/v1/openapi.json"
            ? [{ apiKey: [], bearer: [] }]
            : [];
      expect(security, `${op.method} ${op.path}`).toEqual(expected);
    }
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
      expect(example).toMatchObject({ response_status: op.status, _links: { self: { href: `${EXAMPLE_ORIGIN}${examplePath(op.path)}` } } });
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
    expect(docsPage("n")).not.toContain("<script>alert");
  });
});
