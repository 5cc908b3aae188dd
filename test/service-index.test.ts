/**
 * The first hour's way in (issue 32): GET / answers a browser with a page of links and any other
 * client with the same links as JSON, and GET /explorer is the GraphQL explorer's page, rendered
 * by the people's Worker (in-process here, test/worker.ts) under a strict CSP. The explorer's
 * files are the people's Worker's static assets, which only exist where wrangler runs that
 * Worker (npm start, deployed); here, without them, the route answers 404 rather than failing.
 * GraphiQL running a query in Chromium is test/e2e/docs.browser.test.ts.
 */
import { describe, expect, it } from "vitest";
import { call } from "./helpers";

const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const PATHS = ["/docs", "/v1/openapi.json", "/.well-known/oauth-authorization-server", "/manager", "/explorer", "/v1/graphql", "/healthz"];

interface Links {
  name: string;
  links: Record<string, { href: string; type: string; title: string }>;
}

describe("GET /", () => {
  it("answers an API client with the links as JSON, whatever else it accepts that is not HTML first", async () => {
    for (const accept of [undefined, "application/json", "*/*", "application/json, text/html;q=0.5", "text/plain"]) {
      const res = await call("/", accept === undefined ? {} : { headers: { Accept: accept } });
      expect(res.status, String(accept)).toBe(200);
      expect(res.headers.get("content-type"), String(accept)).toMatch(/^application\/json/);
      expect(res.headers.get("vary")).toBe("Accept");
      const json = (await res.json()) as Links;
      expect(json.name).toBe("keyway");
      expect(Object.keys(json.links)).toEqual(["docs", "openapi", "oauth_metadata", "manager", "graphql_explorer", "graphql", "health"]);
      expect(Object.values(json.links).map((l) => l.href)).toEqual(PATHS);
      for (const link of Object.values(json.links)) expect(link.title.length).toBeGreaterThan(0);
    }
  });

  it("answers a browser with a page linking every one of them, under a strict CSP whose nonce is on its only style", async () => {
    for (const accept of [BROWSER_ACCEPT, "text/html", "application/json;q=0.5, text/html"]) {
      const res = await call("/", { headers: { Accept: accept } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(res.headers.get("vary")).toBe("Accept");
      expect(res.headers.get("cache-control")).toBe("no-store");
      const csp = res.headers.get("content-security-policy") ?? "";
      const nonce = /style-src 'nonce-([\w-]+)'/.exec(csp)?.[1];
      expect(csp).toContain("default-src 'none'");
      expect(nonce).toBeDefined();
      const html = await res.text();
      expect(html).toContain(`<style nonce="${nonce}">`);
      expect(html).not.toContain("<script");
      for (const path of PATHS) expect(html).toContain(`href="${path}"`);
    }
  });

  it("is in the API description, as JSON", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as {
      paths: Record<string, { get?: { operationId: string; responses: Record<string, { content: Record<string, unknown> }> } }>;
    };
    expect(doc.paths["/"]?.get?.operationId).toBe("getServiceIndex");
    expect(Object.keys(doc.paths["/"]?.get?.responses["200"]?.content ?? {})).toEqual(["application/json"]);
    expect(doc.paths["/explorer"]?.get?.operationId).toBe("getGraphqlExplorer");
  });
});

describe("GET /explorer", () => {
  it("serves GraphiQL's page from this origin only: nonce'd scripts from /explorer/assets, requests to 'self', the Headers tab prefilled", async () => {
    const res = await call("/explorer");
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([\w-]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:/);
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1] ?? "");
    expect(scripts).toHaveLength(4);
    for (const attrs of scripts) expect(attrs).toContain(`nonce="${nonce}"`);
    for (const file of ["react.production.min.js", "react-dom.production.min.js", "graphiql.min.js", "graphiql.min.css"]) {
      expect(html).toContain(`/explorer/assets/${file}`);
    }
    expect(html).not.toMatch(/(src|href)="https?:/);
    expect(html).toContain("x-api-key");
    expect(html).toContain("Bearer <an access token");
    expect(html).toContain("shouldPersistHeaders:false");
  });

  it("answers a file the people's Worker does not serve with 404", async () => {
    const res = await call("/explorer/assets/graphiql.min.js");
    expect(res.status).toBe(404);
  });
});

describe("GET /docs", () => {
  it("links the GraphQL explorer and follows the system's colour scheme", async () => {
    const html = await (await call("/docs")).text();
    expect(html).toContain('href="/explorer"');
    expect(html).toContain('<meta name="color-scheme" content="light dark">');
    expect(html).toContain("prefers-color-scheme:dark");
  });
});
