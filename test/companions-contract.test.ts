/**
 * The companions' contract (docs/deploy.md, "The companions' contract"). `wrangler versions` rolls
 * the API Worker, keyway-graphql and keyway-people out one by one, so for a while the API Worker of
 * one release calls the companions of the release before or after it, and the engine calls back
 * into that API Worker's backend. The fixtures (test/fixtures/companions/) are this release's
 * calls and answers as recorded; each test holds one side as the code is now against the other
 * side as the fixtures have it: as recorded, with a field it does not know added, and without an
 * optional field, as a release ahead or behind sends them. The "still sends" tests fail when a
 * change drops or retypes a field the other side's previous release reads; the others fail when
 * a side stops taking the other's shapes.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, RpcTarget } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { depsFromEnv } from "../src/deps";
import type { GraphQLBackend } from "../src/graphql/backend";
import type { GraphQLAnswer, GraphQLCall } from "../src/graphql-worker";
import { GraphQLBackendTarget } from "../src/http/graphql-backend";
import worker, * as objects from "../src/index";
import { openPortal } from "../src/webhooks/portal";
import { fakeNetwork, receiver } from "./fake-network";
import { documents } from "./fixtures/companions/backend";
import * as graphql from "./fixtures/companions/graphql";
import * as people from "./fixtures/companions/people";
import { authed, callAt, createTenant, issueToken, type Tenant } from "./helpers";

/** What a release ahead adds: a field the other side has never heard of. */
const PROBE = { added_by_a_later_release: true };

const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/**
 * Where `live` lacks a field of `recorded` or gives it another JSON type ("$.a.b: missing").
 * Arrays are compared by their first element; extra fields in `live` are what a release may add.
 */
function lacking(live: unknown, recorded: unknown, path = "$"): string[] {
  if (kind(live) !== kind(recorded)) return [`${path}: ${kind(recorded)} recorded, ${kind(live)} now`];
  if (Array.isArray(recorded) && Array.isArray(live)) {
    return recorded.length > 0 && live.length > 0 ? lacking(live[0], recorded[0], `${path}[0]`) : [];
  }
  if (kind(recorded) !== "object") return [];
  const now = live as Record<string, unknown>;
  return Object.entries(recorded as Record<string, unknown>).flatMap(([key, value]) =>
    Object.hasOwn(now, key) ? lacking(now[key], value, `${path}.${key}`) : [`${path}.${key}: missing`],
  );
}

/** A deep copy of `value` with the field at `path` (dot-separated) set to `field`, or left out without one. */
function altered<T>(value: T, path: string, ...field: [unknown] | []): T {
  const copy = structuredClone(value);
  const keys = path.split(".");
  const last = keys.pop() ?? "";
  let at = copy as Record<string, unknown>;
  for (const key of keys) at = at[key] as Record<string, unknown>;
  if (field.length === 0) Reflect.deleteProperty(at, last);
  else at[last] = field[0];
  return copy;
}

/** How the route hands the backend to GraphQLEngine.run (an RPC stub on the engine's side). */
type EngineBackend = Parameters<typeof env.GRAPHQL.run>[1];

/**
 * A backend of another release: each method it has answers the Outcome given for it, and every
 * call is written down. A method it lacks is one that release did not have yet.
 */
function backendOf(answers: Record<string, unknown>, calls: { method: string; args: unknown[] }[] = []): EngineBackend {
  class OtherRelease extends RpcTarget {}
  for (const [method, outcome] of Object.entries(answers)) {
    Object.defineProperty(OtherRelease.prototype, method, {
      value: (...args: unknown[]) => {
        calls.push({ method, args });
        return outcome;
      },
    });
  }
  return new OtherRelease() as unknown as EngineBackend;
}

async function run(call: unknown, backend: EngineBackend) {
  const answer: GraphQLAnswer = await env.GRAPHQL.run(call as GraphQLCall, backend);
  return { status: answer.status, body: JSON.parse(answer.json) as unknown, allow: answer.allow };
}

const recorded = { status: graphql.answer.status, body: JSON.parse(graphql.answer.json) as unknown, allow: undefined };
const recordedBackend = () => backendOf({ listWebhookConfigurations: graphql.listOutcome });

/** The recorded call with another document; the viewer and the rest as recorded. */
const callWith = (query: string, variables: Record<string, unknown>) => ({ ...graphql.call, request: { query, variables } });

describe("the GraphQL engine of this release serves the API Worker of the release before or after it", () => {
  it("answers the recorded call with the recorded answer, making the recorded backend call", async () => {
    const calls: { method: string; args: unknown[] }[] = [];
    expect(await run(graphql.call, backendOf({ listWebhookConfigurations: graphql.listOutcome }, calls))).toEqual(recorded);
    expect(calls).toEqual([{ method: "listWebhookConfigurations", args: [{ limit: 1 }] }]);
  });

  it.each(["", "request.", "viewer.", "viewer.me.", "viewer.me.token.", "viewer.rate_limit.", "viewer.rate_limit.second."])(
    "ignores a field it does not know in the call (at %s)",
    async (where) => {
      expect(await run(altered(graphql.call, `${where}added_by_a_later_release`, PROBE), recordedBackend())).toEqual(recorded);
    },
  );

  // variables and operationName are optional in GraphQLRequest (the recorded ones are the
  // defaults); quota and credits are fields the viewer gained later, nullable in the schema.
  it.each(["request.variables", "request.operationName", "viewer.rate_limit.quota", "viewer.rate_limit.credits"])(
    "answers a call without the optional %s as the recorded one",
    async (path) => {
      expect(await run(altered(graphql.call, path), recordedBackend())).toEqual(recorded);
    },
  );

  it("counts the recorded request for cost, also with a field it does not know", async () => {
    expect(await env.GRAPHQL.cost(graphql.costRequest)).toBe(graphql.cost);
    expect(await env.GRAPHQL.cost({ ...graphql.costRequest, ...PROBE })).toBe(graphql.cost);
    // operationName is optional: the recorded request has none.
    expect(Object.hasOwn(graphql.costRequest, "operationName")).toBe(false);
  });

  it("reads a backend's Outcome with fields it does not know", async () => {
    const outcome = graphql.listOutcome;
    const item = outcome.value.items[0];
    const richer = { ...outcome, ...PROBE, value: { ...outcome.value, ...PROBE, items: [{ ...item, ...PROBE }] } };
    expect(await run(graphql.call, backendOf({ listWebhookConfigurations: richer }))).toEqual(recorded);
  });

  const oneConfiguration = callWith("query($id: ID!) { webhookConfiguration(id: $id) { id } }", { id: "whk_1" });
  const fieldError = async (error: unknown) => {
    const answer = await run(oneConfiguration, backendOf({ getWebhookConfiguration: { ok: false, error } }));
    expect(answer.status).toBe(200);
    return (answer.body as { errors: { message: string; extensions: unknown }[] }).errors[0];
  };

  it("reads an error Outcome without the optional input, headers and status", async () => {
    expect(await fieldError({ code: "not_found", message: "Webhook configuration was not found." })).toMatchObject({
      message: "Webhook configuration was not found.",
      extensions: { code: "not_found", status: 404 },
    });
  });

  it("keeps the message and the status class of an error code it does not know (a later backend's)", async () => {
    const message = "The configuration is frozen by a later release's rule.";
    expect(await fieldError({ code: "frozen_configuration", message, status: 423 })).toEqual(
      expect.objectContaining({ message, extensions: { code: "invalid_request", status: 423 } }),
    );
    // A backend that sends no status: the engine cannot tell, so an error on the service's side.
    expect(await fieldError({ code: "frozen_configuration", message })).toEqual(
      expect.objectContaining({ message, extensions: { code: "server_error", status: 500 } }),
    );
  });

  it("fails only the fields that need a method a previous backend lacks", async () => {
    const query = "query($id: ID!) { viewer { organizationId } webhookConfiguration(id: $id) { id } }";
    const answer = await run(callWith(query, { id: "whk_1" }), backendOf({}));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      data: { viewer: { organizationId: graphql.call.viewer.me.organization_id }, webhookConfiguration: null },
      errors: [{ path: ["webhookConfiguration"], extensions: { code: "server_error", status: 500 } }],
    });
  });

  it("against an API Worker from before the receivers' methods, fails only the receivers' fields", async () => {
    // That backend answers the eleven first methods; the thirteen of issue 30 are not there yet.
    const query =
      "{ webhookConfigurations(first: 1) { nodes { id } } eventTypes { nodes { name } } webhookSettings { refuseUnknownEventTypes } }";
    const answer = await run(callWith(query, {}), recordedBackend());
    expect(answer.status).toBe(200);
    const body = answer.body as { data: Record<string, unknown>; errors: { path: string[]; extensions: unknown }[] };
    const items = graphql.listOutcome.value.items as { id: string }[];
    expect(body.data).toEqual({
      webhookConfigurations: { nodes: items.map(({ id }) => ({ id })) },
      eventTypes: null,
      webhookSettings: null,
    });
    expect(body.errors.map((e) => [e.path, e.extensions]).sort()).toEqual([
      [["eventTypes"], { code: "server_error", status: 500 }],
      [["webhookSettings"], { code: "server_error", status: 500 }],
    ]);
  });

  it("against an API Worker from before issue 31, answers its views' oauth without the new fields and fails only the new mutations", async () => {
    // That backend's configuration views have only tokenUrl and clientId in oauth, and it lacks the two methods.
    const view = documents.flatMap((d) => d.calls).find((c) => c.method === "getWebhookConfiguration")?.outcome;
    const fields = "tokenUrl clientId authMethod scope resource audience assertionAudience dpop dpopJkt jwksUri";
    const read = await run(
      callWith(`query($id: ID!) { webhookConfiguration(id: $id) { id oauth { ${fields} } } }`, { id: "whk_1" }),
      backendOf({ getWebhookConfiguration: view }),
    );
    expect((read.body as { errors?: unknown }).errors).toBeUndefined();
    expect((read.body as { data: { webhookConfiguration: { oauth: Record<string, unknown> } } }).data.webhookConfiguration.oauth).toEqual({
      tokenUrl: "https://receiver.example/oauth/token",
      clientId: "kw",
      authMethod: null,
      scope: null,
      resource: null,
      audience: null,
      assertionAudience: null,
      dpop: null,
      dpopJkt: null,
      jwksUri: null,
    });
    const mutation = 'mutation { rotateAssertionKey { kid } testWebhookConnection(id: "whk_1") { ok } }';
    const answer = await run(callWith(mutation, {}), backendOf({}));
    expect(answer.status).toBe(200);
    const body = answer.body as { data: Record<string, unknown>; errors: { path: string[]; extensions: unknown }[] };
    expect(body.data).toEqual({ rotateAssertionKey: null, testWebhookConnection: null });
    expect(body.errors.map((e) => [e.path, e.extensions]).sort()).toEqual([
      [["rotateAssertionKey"], { code: "server_error", status: 500 }],
      [["testWebhookConnection"], { code: "server_error", status: 500 }],
    ]);
  });

  it("against an API Worker from before issue 45, answers its views without the new fields and fails only what needs the new methods", async () => {
    // That backend's views have no delivery, signature_scheme, signing_public_key or polling, its
    // creation no pollingToken, and it lacks rotateSigningKey, rotatePollingToken and revokePollingToken.
    const calls = documents.flatMap((d) => d.calls);
    const view = calls.find((c) => c.method === "getWebhookConfiguration")?.outcome;
    const read = await run(
      callWith("query($id: ID!) { webhookConfiguration(id: $id) { id url delivery signatureScheme signingPublicKey polling { url } } }", {
        id: "whk_1",
      }),
      backendOf({ getWebhookConfiguration: view }),
    );
    expect((read.body as { errors?: unknown }).errors).toBeUndefined();
    expect((read.body as { data: { webhookConfiguration: Record<string, unknown> } }).data.webhookConfiguration).toMatchObject({
      url: "https://receiver.example/webhooks",
      delivery: null,
      signatureScheme: null,
      signingPublicKey: null,
      polling: null,
    });
    const created = calls.find((c) => c.method === "createWebhookConfiguration")?.outcome;
    const create = await run(
      callWith(
        "mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { signingSecret pollingToken } }",
        {
          input: { url: "https://receiver.example/webhooks", oauth: { tokenUrl: "https://receiver.example/oauth/token", clientId: "kw" } },
        },
      ),
      backendOf({ createWebhookConfiguration: created }),
    );
    expect(create.body).toEqual({
      data: { createWebhookConfiguration: { signingSecret: expect.stringMatching(/^whsec_/), pollingToken: null } },
    });
    // A rotation without a scheme is the method every backend has; with one, the new method, which fails alone and rotates nothing.
    const rotated = calls.find((c) => c.method === "rotateSigningSecret")?.outcome;
    const asked: { method: string; args: unknown[] }[] = [];
    const old = () => backendOf({ rotateSigningSecret: rotated }, asked);
    const plain = await run(callWith('mutation { rotateSigningSecret(id: "whk_1") { signingSecret } }', {}), old());
    expect((plain.body as { errors?: unknown }).errors).toBeUndefined();
    const withScheme = await run(
      callWith('mutation { rotateSigningSecret(id: "whk_1", signatureScheme: "v1a") { signingSecret } }', {}),
      old(),
    );
    // The payload is non-null, as it always was: its error nulls the answer's data.
    expect(withScheme.body).toMatchObject({
      data: null,
      errors: [{ path: ["rotateSigningSecret"], extensions: { code: "server_error" } }],
    });
    const polling = await run(
      callWith('mutation { rotatePollingToken(id: "whk_1") { token } revokePollingToken(id: "whk_1") { id } }', {}),
      old(),
    );
    expect(polling.status).toBe(200);
    const body = polling.body as { data: Record<string, unknown>; errors: { path: string[]; extensions: unknown }[] };
    expect(body.data).toEqual({ rotatePollingToken: null, revokePollingToken: null });
    expect(body.errors.map((e) => [e.path, e.extensions]).sort()).toEqual([
      [["revokePollingToken"], { code: "server_error", status: 500 }],
      [["rotatePollingToken"], { code: "server_error", status: 500 }],
    ]);
    expect(asked).toEqual([{ method: "rotateSigningSecret", args: ["whk_1"] }]);
  });

  it.each(documents.map((d) => [d.calls.map((c) => c.method).join(", "), d] as const))(
    "still makes the recorded backend calls (%s) with every recorded argument",
    async (_methods, doc) => {
      const calls: { method: string; args: unknown[] }[] = [];
      const answers = Object.fromEntries(doc.calls.map((c) => [c.method, c.outcome]));
      const answer = await run(callWith(doc.query, doc.variables ?? {}), backendOf(answers, calls));
      expect((answer.body as { errors?: unknown }).errors).toBeUndefined();
      // Fields of a query run concurrently: their calls are compared by method.
      const byMethod = <T extends { method: string }>(list: T[]) => [...list].sort((a, b) => a.method.localeCompare(b.method));
      expect(byMethod(calls).map((c) => c.method)).toEqual(byMethod(doc.calls).map((c) => c.method));
      for (const [i, live] of byMethod(calls).entries()) {
        const was = byMethod(doc.calls)[i]!;
        expect(live.args.length, live.method).toBeGreaterThanOrEqual(was.args.length);
        expect(
          was.args.flatMap((arg, n) => lacking(live.args[n], arg, `$[${n}]`)),
          live.method,
        ).toEqual([]);
      }
    },
  );
});

describe("the API Worker's backend of this release answers the engine of the release before or after it", () => {
  let t: Tenant;
  beforeAll(async () => {
    fakeNetwork(receiver());
    t = await createTenant();
  });

  const backend = () =>
    new GraphQLBackendTarget(
      depsFromEnv(env, () => Date.now()),
      t.orgId,
      { type: "api_client", id: t.clientId, api_key_id: t.apiKeyId },
      { scopes: ["webhooks:read", "webhooks:write", "events:write", "graphql:mutate"], scheme: "Bearer" },
      () => "https://keyway.test",
    );
  type Method = (...args: unknown[]) => Promise<{ ok: boolean; value?: unknown; error?: { code: string } }>;
  const callOn = (target: GraphQLBackendTarget, method: string, args: unknown[]) =>
    (target[method as keyof GraphQLBackend] as unknown as Method).apply(target, args);

  it("answers every recorded call, in order, with an Outcome of the recorded shape", async () => {
    const target = backend();
    const ids: Record<string, string> = {};
    const resolve = (value: unknown): unknown =>
      JSON.parse(JSON.stringify(value).replace(/"\$(config|delivery|recovery|session)"/g, (m) => JSON.stringify(ids[m.slice(1, -1)])));
    const seen = new Set<string>();
    for (const { method, args, outcome } of documents.flatMap((d) => d.calls)) {
      const answer = await callOn(target, method, resolve(args) as unknown[]);
      expect(lacking(answer, outcome), `${method}: ${JSON.stringify(answer.error)}`).toEqual([]);
      seen.add(method);
      const value = answer.value as { config?: { id: string }; items?: { id: string }[]; id?: string; url?: string };
      if (method === "createWebhookConfiguration") ids.$config = value.config!.id;
      if (method === "listDeliveries") ids.$delivery = value.items![0]!.id;
      if (method === "recoverDeliveries") ids.$recovery = value.id!;
      if (method === "listPortalSessions") ids.$session = value.items![0]!.id;
      // The recorded sessions are the ones the link opened, as a receiver opens it.
      if (method === "createPortalLink") {
        const opened = await openPortal(
          depsFromEnv(env, () => Date.now()),
          new URL(value.url!).searchParams.get("token")!,
        );
        expect(opened.ok).toBe(true);
      }
    }
    // The recording covers every method of GraphQLBackend.
    const methods = Object.getOwnPropertyNames(GraphQLBackendTarget.prototype).filter((m) => m !== "constructor" && m !== "need");
    expect([...seen].sort()).toEqual(methods.sort());
  });

  it("takes the recorded calls with an argument and a PageArgs field it does not know", async () => {
    const target = backend();
    const listed = await callOn(target, "listWebhookConfigurations", [{ limit: 1, ...PROBE }, PROBE]);
    expect(listed).toMatchObject({ ok: true });
    expect((listed.value as { items: unknown[] }).items.length).toBeLessThanOrEqual(1); // the limit was read
    const missing = await callOn(target, "getWebhookConfiguration", ["whk_unknown", PROBE]);
    expect(missing).toMatchObject({ ok: false, error: { code: "not_found" } });
  });

  it("takes the recorded calls without their optional arguments", async () => {
    const target = backend();
    expect(await callOn(target, "listWebhookConfigurations", [{}])).toMatchObject({ ok: true });
    const published = await callOn(target, "publishEvent", [{ type: "order.created", data: { n: 1 } }, undefined]);
    expect(published).toMatchObject({ ok: true, value: { replayed: false } });
  });

  it("refuses an input field it does not know as REST does: inputs are the client's, checked once, here", async () => {
    const create = documents.flatMap((d) => d.calls).find((c) => c.method === "createWebhookConfiguration")!;
    const input = { ...(create.args[0] as Record<string, unknown>), ...PROBE };
    expect(await callOn(backend(), "createWebhookConfiguration", [input])).toMatchObject({ ok: false, error: { code: "invalid_request" } });
  });
});

describe("the API Worker of this release takes the answers of the GraphQL engine of the release before or after it", () => {
  let t: Tenant;
  let token: string;
  beforeAll(async () => {
    t = await createTenant();
    token = await issueToken(t);
  });

  const engineAnswering = (answer: unknown, cost = 1) => {
    const asked: { run: unknown[]; cost: unknown[] } = { run: [], cost: [] };
    const engine = {
      run: async (call: unknown) => {
        asked.run.push(call);
        return answer;
      },
      cost: async (request: unknown) => {
        asked.cost.push(request);
        return cost;
      },
    };
    return { asked, bindings: { ...env, GRAPHQL: engine } as unknown as Env };
  };
  const post = (query: string, bindings: Env, variables?: unknown) =>
    callAt(
      Date.now(),
      "/v1/graphql",
      authed(t, token, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query, variables }) }),
      bindings,
    );

  it.each([
    ["as recorded", graphql.answer],
    ["with a field it does not know", { ...graphql.answer, ...PROBE }],
  ])("answers with the engine's answer %s, and no Allow without `allow`", async (_name, answer) => {
    const res = await post("{ viewer { organizationId } }", engineAnswering(answer).bindings);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.headers.get("allow")).toBeNull();
    expect(await res.text()).toBe(graphql.answer.json);
  });

  it("sets Allow from an answer's `allow` and leaves it out without one", async () => {
    const query = `{ viewer { organizationId } }`;
    const withAllow = await callAt(
      Date.now(),
      `/v1/graphql?query=${encodeURIComponent(query)}`,
      authed(t, token),
      engineAnswering(graphql.mutationOnGetAnswer).bindings,
    );
    expect(withAllow.status).toBe(405);
    expect(withAllow.headers.get("allow")).toBe("POST");
    const { allow: _, ...withoutAllow } = graphql.mutationOnGetAnswer;
    const without = await callAt(
      Date.now(),
      `/v1/graphql?query=${encodeURIComponent(query)}`,
      authed(t, token),
      engineAnswering(withoutAllow).bindings,
    );
    expect(without.status).toBe(405);
    expect(without.headers.get("allow")).toBeNull();
    expect(await without.text()).toBe(withoutAllow.json);
  });

  it("still sends GraphQLEngine.run every field of the recorded call, and cost every field of the recorded request", async () => {
    const { asked, bindings } = engineAnswering(graphql.answer, graphql.cost);
    const { query, variables, operationName } = graphql.call.request;
    const res = await callAt(
      Date.now(),
      "/v1/graphql",
      authed(t, token, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query, variables, operationName }),
      }),
      bindings,
    );
    expect(res.status).toBe(200);
    expect(asked.run).toHaveLength(1);
    expect(lacking(asked.run[0], graphql.call)).toEqual([]);
    await post(graphql.costRequest.query, bindings, graphql.costRequest.variables);
    expect(asked.cost).toHaveLength(1);
    expect(lacking(asked.cost[0], graphql.costRequest)).toEqual([]);
  });

  it("still gets from the engine every field of the recorded answer", async () => {
    const live = await env.GRAPHQL.run(graphql.call as GraphQLCall, recordedBackend());
    expect(lacking(live, graphql.answer)).toEqual([]);
    expect(lacking(JSON.parse(live.json), JSON.parse(graphql.answer.json))).toEqual([]);
  });
});

// The API Worker keeps the OpenAPI document for its isolate's life (http/routes/api.ts), and
// this file has an isolate of its own: the first test here is the only one that fetches it.
describe("the API Worker and the people's Worker, each of this release, take the other's previous shapes", () => {
  /** A people's Worker of another release: answers the document and any page as given, and writes each call down. */
  const peopleAnswering = (doc: unknown, page: Response) => {
    const asked: { method: string; args: unknown[] }[] = [];
    const people = {
      openApiDocument: async (...args: unknown[]) => {
        asked.push({ method: "openApiDocument", args });
        return doc;
      },
      fetch: async (request: Request) => {
        asked.push({ method: "fetch", args: [request] });
        return page.clone();
      },
    };
    return { asked, bindings: { ...env, PEOPLE: people } as unknown as Env };
  };
  const recordedPage = () => new Response(people.pageAnswer.body, { status: people.pageAnswer.status, headers: people.pageAnswer.headers });

  it("serves a previous document with a field it does not know and without the optional ones, adding its own servers, and asks for it as recorded", async () => {
    let doc: Record<string, unknown> = { ...people.document, ...PROBE };
    for (const optional of ["tags", "webhooks", "components"]) doc = altered(doc, optional);
    const { asked, bindings } = peopleAnswering(doc, recordedPage());
    const res = await viaEntry("/v1/openapi.json", {}, bindings);
    expect(res.status).toBe(200);
    const served = (await res.json()) as Record<string, unknown>;
    expect(served).toEqual({ ...doc, servers: [expect.objectContaining({ url: expect.any(String) })] });
    expect(asked).toHaveLength(1);
    expect(lacking(asked[0], people.calls[0])).toEqual([]);
  });

  it("forwards a page request as the client sent it, and passes the answer through as it came, headers it does not know included", async () => {
    const { asked, bindings } = peopleAnswering(people.document, recordedPage());
    const { method, path, headers } = people.pageRequest;
    const res = await viaEntry(path, { method, headers }, bindings);
    expect(res.status).toBe(people.pageAnswer.status);
    for (const [name, value] of Object.entries(people.pageAnswer.headers)) expect(res.headers.get(name), name).toBe(value);
    expect(await res.text()).toBe(people.pageAnswer.body);
    expect(asked.map((a) => a.method)).toEqual(["fetch"]);
    const forwarded = asked[0]!.args[0] as Request;
    expect(forwarded.method).toBe(method);
    expect(new URL(forwarded.url).pathname + new URL(forwarded.url).search).toBe(path);
    for (const [name, value] of Object.entries(headers)) expect(forwarded.headers.get(name), name).toBe(value);
  });

  it("the people's Worker answers the recorded calls in the recorded shapes, also with an argument it does not know, and a forwarded request of the recorded shape", async () => {
    type Loose = { openApiDocument(...args: unknown[]): Promise<unknown> };
    const loose = env.PEOPLE as unknown as Loose;
    for (const extra of [[], [PROBE]]) expect(lacking(await loose.openApiDocument(...extra), people.document)).toEqual([]);
    const { method, path, headers } = people.pageRequest;
    const page = await env.PEOPLE.fetch(
      new Request(`https://keyway.test${path}`, { method, headers: { ...headers, "X-Added-By-A-Later-Release": "1" } }),
    );
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    // A path a later API Worker forwards and this release does not know is a page's 404, not a failure.
    const unknown = await env.PEOPLE.fetch(new Request("https://keyway.test/explorer/a-page-of-a-later-release"));
    expect(unknown.status).toBe(404);
  });

  it("the objects keep every method the previous release's pages may call (removing one takes two releases)", () => {
    for (const [name, methods] of Object.entries(people.objectMethods)) {
      const cls = (objects as Record<string, unknown>)[name] as { prototype: object } | undefined;
      expect(cls, name).toBeDefined();
      const now = new Set(Object.getOwnPropertyNames(cls!.prototype));
      expect(
        methods.filter((m) => !now.has(m)),
        name,
      ).toEqual([]);
    }
  });
});

/** A request through the API Worker's entry (src/index.ts) with the given bindings. */
async function viaEntry(path: string, init: RequestInit, bindings: Env): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`https://keyway.test${path}`, init), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}
