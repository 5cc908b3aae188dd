/**
 * The companion Workers, out of reach. The API description comes from the keyway-docs Worker over
 * the DOCS service binding (src/http/routes/index.ts); GraphQL is run by the keyway-graphql Worker
 * over the GRAPHQL binding (src/http/routes/graphql.ts). When the description call fails in
 * transport, both routes answer the 503
 * envelope with Retry-After (never a 500, a hang or a stack trace); a failed call is not kept, so
 * the next request asks again; once the document has arrived it is kept for the isolate's life,
 * while /docs (one page per nonce) asks on every request. The fault is injected in front of the
 * real binding: the first calls fail as a lost connection does, later ones reach the real Worker.
 * This file runs in its own isolate, so nothing before it has cached the document.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { authed, body, callAt, createTenant, issueToken } from "./helpers";

/** The real DOCS binding behind a switch that makes its calls fail as a dropped connection does. */
function flakyDocs() {
  const state = { failing: true, calls: 0 };
  const docs = new Proxy(env.DOCS, {
    get(target, prop) {
      if (prop !== "openApiDocument" && prop !== "docsPage") return Reflect.get(target, prop);
      return (...args: [string]) => {
        state.calls += 1;
        if (state.failing) return Promise.reject(new Error("Network connection lost."));
        // An RPC stub answers any property, `apply` included, as a remote method: call it directly.
        return prop === "docsPage" ? target.docsPage(...args) : target.openApiDocument();
      };
    },
  });
  return { state, bindings: { ...env, DOCS: docs } as Env };
}

describe("the description Worker out of reach", () => {
  it("answers 503 with Retry-After on both routes, asks again next time, and keeps the document once it came", async () => {
    const { state, bindings } = flakyDocs();
    for (const path of ["/v1/openapi.json", "/docs"]) {
      const res = await callAt(Date.now(), path, {}, bindings);
      expect(res.status, path).toBe(503);
      expect(res.headers.get("retry-after"), path).toBe("1");
      const json = await body(res);
      expect(json.error).toBe("service_unavailable");
      expect(json.developer_message).toContain("API description");
      expect(JSON.stringify(json)).not.toContain("Network connection lost");
    }
    expect(state.calls).toBe(2);

    // Reachable again: the failure was not kept.
    state.failing = false;
    const doc = await callAt(Date.now(), "/v1/openapi.json", {}, bindings);
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { openapi: string }).openapi).toBe("3.1.0");
    expect((await callAt(Date.now(), "/docs", {}, bindings)).status).toBe(200);
    expect(state.calls).toBe(4);

    // Out of reach again: the document stays served from this isolate; the page needs the Worker.
    state.failing = true;
    expect((await callAt(Date.now(), "/v1/openapi.json", {}, bindings)).status).toBe(200);
    expect((await callAt(Date.now(), "/docs", {}, bindings)).status).toBe(503);
    expect(state.calls).toBe(5);
  });
});

describe("the GraphQL Worker out of reach", () => {
  it("answers 503 with Retry-After after admission, for a query and for a mutation's count alike, and GraphQL works again when it is back", async () => {
    const t = await createTenant({ per_second: 100, per_day: 10_000 });
    const token = await issueToken(t);
    const state = { failing: true };
    const engine = new Proxy(env.GRAPHQL, {
      get(target, prop) {
        if (prop !== "run" && prop !== "cost") return Reflect.get(target, prop);
        return (...args: unknown[]) => {
          if (state.failing) return Promise.reject(new Error("Network connection lost."));
          return prop === "run"
            ? target.run(...(args as Parameters<typeof target.run>))
            : target.cost(...(args as Parameters<typeof target.cost>));
        };
      },
    });
    const bindings = { ...env, GRAPHQL: engine } as Env;
    const post = (query: string) =>
      callAt(
        Date.now(),
        "/v1/graphql",
        authed(t, token, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query }) }),
        bindings,
      );
    for (const query of ["{ viewer { organizationId } }", 'mutation { publishEvent(type: "a.b", data: {}) { id } }']) {
      const res = await post(query);
      expect(res.status, query).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      const json = await body(res);
      expect(json.error).toBe("service_unavailable");
      expect(json.developer_message).toContain("GraphQL engine");
      expect(JSON.stringify(json)).not.toContain("Network connection lost");
    }
    state.failing = false;
    const back = await post("{ viewer { organizationId } }");
    expect(back.status).toBe(200);
    expect(await back.json()).toEqual({ data: { viewer: { organizationId: t.orgId } } });
  });
});
