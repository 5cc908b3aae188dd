/**
 * The companion Workers, out of reach. The API description comes from the keyway-people Worker
 * over the PEOPLE service binding (src/http/routes/api.ts), which also serves every people's page
 * the API Worker forwards (src/http/forward.ts); GraphQL is run by the keyway-graphql Worker over
 * the GRAPHQL binding (src/http/routes/graphql.ts). When the description call fails in transport,
 * GET /v1/openapi.json answers the 503 envelope with Retry-After (never a 500, a hang or a stack
 * trace); a failed call is not kept, so the next request asks again; once the document has
 * arrived it is kept for the isolate's life. A people's page answers a short 503 page with
 * Retry-After meanwhile, and every API route works on. The fault is injected in front of the real
 * binding: the first calls fail as a lost connection does, later ones reach the real Worker.
 * This file runs in its own isolate, so nothing before it has cached the document.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import { authed, BASE, body, callAt, createTenant, issueToken } from "./helpers";

/** The real PEOPLE binding behind a switch that makes its calls fail as a dropped connection does. */
function flakyPeople() {
  const state = { failing: true, calls: 0 };
  const people = new Proxy(env.PEOPLE, {
    get(target, prop) {
      if (prop !== "openApiDocument" && prop !== "fetch") return Reflect.get(target, prop);
      return (...args: [Request]) => {
        state.calls += 1;
        if (state.failing) return Promise.reject(new Error("Network connection lost."));
        // An RPC stub answers any property, `apply` included, as a remote method: call it directly.
        return prop === "fetch" ? target.fetch(...args) : target.openApiDocument();
      };
    },
  });
  return { state, bindings: { ...env, PEOPLE: people } as Env };
}

/** A request through the API Worker's entry (src/index.ts) with the given bindings. */
async function viaEntry(path: string, bindings: Env): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`${BASE}${path}`), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("the people's Worker out of reach", () => {
  it("answers 503 with Retry-After for the description and every page, asks again next time, and keeps the document once it came", async () => {
    const { state, bindings } = flakyPeople();
    const res = await viaEntry("/v1/openapi.json", bindings);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const json = await body(res);
    expect(json.error).toBe("service_unavailable");
    expect(json.developer_message).toContain("API description");
    expect(JSON.stringify(json)).not.toContain("Network connection lost");
    for (const path of ["/docs", "/manager/login", "/portal/open", "/", "/explorer"]) {
      const page = await viaEntry(path, bindings);
      expect(page.status, path).toBe(503);
      expect(page.headers.get("retry-after"), path).toBe("1");
      expect(page.headers.get("content-type"), path).toContain("text/html");
      expect(await page.text(), path).not.toContain("Network connection lost");
    }
    expect(state.calls).toBe(6);
    // The API itself never depends on it.
    expect((await viaEntry("/healthz", bindings)).status).toBe(200);
    expect((await viaEntry("/.well-known/oauth-authorization-server", bindings)).status).toBe(200);
    expect(state.calls).toBe(6);

    // Reachable again: the failure was not kept.
    state.failing = false;
    const doc = await viaEntry("/v1/openapi.json", bindings);
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { openapi: string }).openapi).toBe("3.1.0");
    expect((await viaEntry("/docs", bindings)).status).toBe(200);
    expect(state.calls).toBe(8);

    // Out of reach again: the document stays served from this isolate; the page needs the Worker.
    state.failing = true;
    expect((await viaEntry("/v1/openapi.json", bindings)).status).toBe(200);
    expect((await viaEntry("/docs", bindings)).status).toBe(503);
    expect(state.calls).toBe(9);
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
