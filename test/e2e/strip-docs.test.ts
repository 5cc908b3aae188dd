/**
 * What the API Worker's build leaves out (scripts/build/strip-docs.mjs, issue 43): the summary,
 * literal descriptions and examples of route declarations and query parameters, and schemas'
 * `.describe("...")`; never a description that is data, a handler, a schema or anything a request
 * runs. Run on snippets (each rule, each thing kept) and on the real route and schema files (every
 * one still parses, and every declared summary is gone from the built bundle while the error
 * messages a client reads are still in it).
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { buildApi } from "../../scripts/build/api.mjs";
import { stripDocs } from "../../scripts/build/strip-docs.mjs";
import { ROOT } from "./server";

const parses = (code: string) => {
  const file = ts.createSourceFile("x.ts", code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  return (file as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics.length === 0;
};

describe("stripDocs", () => {
  it("blanks a route declaration's summary, literal description and examples, and keeps its behaviour", () => {
    const source = `export const routes = [
  envelopeRoute({
    method: "POST",
    path: "/v1/things",
    summary: "Create a thing",
    description: "A long " + \`text\` + "about things.",
    auth: "client",
    body: { schema: ThingInput.describe("The thing."), example: { name: "a" } },
    response: { schema: ThingView, example: THING },
    handle: async (c, body) => ({ ...body, description: "kept: data, not docs" }),
  }),
];`;
    const { code, removed } = stripDocs(source, "routes.ts");
    expect(parses(code)).toBe(true);
    expect(removed).toBe(5);
    for (const gone of ["Create a thing", "A long", "about things", "The thing.", '{ name: "a" }', "THING"])
      expect(code).not.toContain(gone);
    for (const kept of ['path: "/v1/things"', 'auth: "client"', "schema: ThingInput,", "schema: ThingView", "kept: data, not docs"]) {
      expect(code).toContain(kept);
    }
  });

  it("keeps a description computed from data, and strips a query parameter's literal text, written in place or declared apart", () => {
    const source = `const FILTERS = [{ name: "status", description: "Only these.", schema: Status, example: "failed" }];
const HEADERS = [{ name: "webhook-id", description: "Served to receivers: data.", schema: Id, example: "msg_1" }];
const view = { description: row.description, summary: computed(row) };
envelopeRoute({ summary: "S", description: config.description, query: FILTERS });
listRoute({ summary: "L", query: [{ name: "q", description: "In place.", schema: Q, example: "x" }] });`;
    const { code } = stripDocs(source, "x.ts");
    expect(parses(code)).toBe(true);
    for (const gone of ["Only these.", '"failed"', "In place.", '"x"']) expect(code).not.toContain(gone);
    // An array no route's query names keeps its text, however much it looks like parameters.
    expect(code).toContain('description: "Served to receivers: data."');
    expect(code).toContain('example: "msg_1"');
    expect(code).toContain("description: row.description");
    expect(code).toContain("summary: computed(row)");
    expect(code).toContain("description: config.description");
    expect(code).toContain('name: "status"');
  });

  it("cuts nested describes and leaves a describe of a non-literal alone", () => {
    const source = `const A = z.object({ a: z.string().describe("inner") }).describe("outer " + "text");
const B = z.string().describe(TEXT);`;
    const { code } = stripDocs(source, "x.ts");
    expect(code).toBe(`const A = z.object({ a: z.string() });
const B = z.string().describe(TEXT);`);
  });

  it("leaves every real route and schema file parseable, and a file without docs byte for byte", async () => {
    let total = 0;
    for (const dir of ["src/http/routes", "src/schemas"]) {
      for (const name of await readdir(join(ROOT, dir))) {
        if (!name.endsWith(".ts")) continue;
        const text = await readFile(join(ROOT, dir, name), "utf8");
        const { code, removed } = stripDocs(text, name);
        expect(parses(code), `${dir}/${name}`).toBe(true);
        if (removed === 0) expect(code, `${dir}/${name}`).toBe(text);
        total += removed;
      }
    }
    expect(total).toBeGreaterThan(200);
  });
});

describe("the API Worker's built bundle", () => {
  it("has no route summary, description or example text, and still every error message a client reads", async () => {
    const built = await buildApi(join(ROOT, "dist", "api-build-test"));
    const bundle = await readFile(built.main, "utf8");
    // No page code at all: the manager, the portal, the pages and the description's generator are
    // the people's Worker's (issue 43), as are hono's JSX and secure headers.
    const inputs = Object.keys(built.metafile.inputs);
    const pageCode = inputs.filter((path) =>
      /src\/http\/(manager|portal)\/|src\/http\/(root-page|docs-page|explorer-page|openapi)\.ts|src\/people-|hono\/dist\/(jsx|middleware\/secure-headers)\//.test(
        path,
      ),
    );
    expect(pageCode).toEqual([]);
    expect(inputs.some((path) => path.includes("src/objects/key.ts"))).toBe(true);
    // Summaries and descriptions of routes, as the people's Worker's description shows them.
    for (const docText of [
      "Liveness probe",
      "OAuth authorization server metadata (RFC 8414)",
      "This OpenAPI 3.1 document",
      "No credentials; cacheable for 5 minutes.",
    ]) {
      expect(bundle.includes(docText), docText).toBe(false);
    }
    // zod's JSON Schema conversion is stubbed: its own messages are gone, its stub's is there.
    expect(bundle.includes("cannot be represented in JSON Schema")).toBe(false);
    expect(bundle.includes("JSON Schema conversion is not part of the API Worker")).toBe(true);
    // What requests read stays: error messages, the envelope, the health answer.
    for (const runtimeText of [
      "The x-api-key header is missing",
      "is temporarily unavailable",
      "developer_message",
      "Rate limit exceeded",
    ]) {
      expect(bundle.includes(runtimeText), runtimeText).toBe(true);
    }
  }, 60_000);
});
