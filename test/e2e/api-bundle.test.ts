/**
 * The API Worker as deployed (issue 43): `npm run deploy` uploads the bundle scripts/build/api.mjs
 * builds (route docs, schema descriptions and zod's JSON Schema conversion left out), not what
 * wrangler would bundle from src/index.ts. Here `npm start` runs exactly that bundle
 * (KEYWAY_API_BUNDLE) beside the people's and GraphQL Workers, and the paths that run what the
 * build touched answer as they do from the sources: schemas refusing bad input with their
 * messages, an event type's JSON Schema checked (a ReDoS pattern refused) and applied at publish,
 * the description (the people's Worker's, with every summary), the people's pages and GraphQL.
 * It starts its own npm start, not the shared one (server.ts): this one runs the built bundle.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../scripts/build/api.mjs";
import { type E2eTenant, type Keyway, ROOT, startKeyway, tenantOn } from "./server";

const OUT = join(ROOT, "dist", "api-build-e2e");
let keyway: Keyway;
let tenant: E2eTenant;

beforeAll(async () => {
  const built = await buildApi(OUT);
  process.env.KEYWAY_API_BUNDLE = built.main;
  try {
    keyway = await startKeyway();
  } finally {
    delete process.env.KEYWAY_API_BUNDLE;
  }
  tenant = await tenantOn(keyway, "Bundle");
});
afterAll(async () => {
  await keyway?.stop();
  await rm(OUT, { recursive: true, force: true });
});

const json = async (res: Response) => (await res.json()) as { data: Record<string, unknown>; error?: string; developer_message: string };

describe("npm start serving the API Worker's built bundle", () => {
  it("is that bundle: npm start handed it to wrangler", () => {
    expect(keyway.output).toContain(`The API Worker runs from the built bundle ${join(OUT, "index.js")} (KEYWAY_API_BUNDLE).`);
  });

  it("refuses a bad webhook configuration with every schema message, as from the sources", async () => {
    const res = await tenant.api("/v1/webhook-configurations", {
      method: "POST",
      body: JSON.stringify({ url: "ftp://x", events: "all", oauth: { token_url: 5 } }),
    });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.error).toBe("invalid_request");
    expect(body.developer_message).toMatch(/url/);
    expect(body.developer_message).toMatch(/events/);
  });

  it("checks an event type's schema (refusing a ReDoS pattern) and applies it when an event is published", async () => {
    const redos = await tenant.api("/v1/event-types", {
      method: "POST",
      body: JSON.stringify({ name: "order.bad", schema: { type: "object", properties: { a: { type: "string", pattern: "^(a+)+$" } } } }),
    });
    expect(redos.status).toBe(400);
    const created = await tenant.api("/v1/event-types", {
      method: "POST",
      body: JSON.stringify({
        name: "order.created",
        schema: { type: "object", properties: { total: { type: "integer" } }, required: ["total"] },
      }),
    });
    expect(created.status).toBe(201);
    const refused = await tenant.api("/v1/events", {
      method: "POST",
      body: JSON.stringify({ type: "order.created", data: { total: "x" } }),
    });
    expect(refused.status).toBe(400);
    const published = await tenant.api("/v1/events", {
      method: "POST",
      body: JSON.stringify({ type: "order.created", data: { total: 3 } }),
    });
    expect(published.status).toBe(202);
  });

  it("serves the description from the people's Worker, every summary in it, and the people's pages", async () => {
    const doc = (await (await fetch(`${keyway.baseUrl}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { summary?: string }>>;
    };
    const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
    expect(operations.length).toBeGreaterThan(50);
    expect(operations.every((op) => typeof op.summary === "string" && op.summary.length > 0)).toBe(true);
    expect(doc.paths["/healthz"]?.get?.summary).toBe("Liveness probe");
    for (const page of ["/docs", "/manager/login", "/explorer"]) {
      const res = await fetch(`${keyway.baseUrl}${page}`, { headers: { Accept: "text/html" } });
      expect(res.status, page).toBe(200);
      expect(res.headers.get("content-type"), page).toContain("text/html");
    }
  });

  it("answers GraphQL", async () => {
    const res = await tenant.api("/v1/graphql", { method: "POST", body: JSON.stringify({ query: "{ viewer { organizationId } }" }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { viewer: { organizationId: tenant.orgId } } });
  });
});
