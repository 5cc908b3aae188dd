/**
 * POST /v1/graphql (and GET for queries): the GraphQL adapter. It sits behind the same API key,
 * rate limit and bearer checks as REST, so an unauthorized request is refused with the 401
 * envelope before any GraphQL work. The GraphQL engine itself is the keyway-graphql Worker
 * (src/graphql-worker.ts), called over the GRAPHQL service binding: it counts a request's
 * mutations before admission, then runs the admitted request against a backend bound to this
 * request's organization and actor (http/graphql-backend.ts). Answers are standard GraphQL
 * responses.
 */
import type { Context } from "hono";
import * as z from "zod";
import { meView } from "../../auth/tokens";
import { publicBaseUrl, telemetrySettings } from "../../config";
import { ApiError } from "../../errors";
import type { GraphQLRequest as Request } from "../../graphql/execute";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../lib/json";
import { currentRequestId } from "../../log";
import { reach } from "../../objects/stubs";
import { usageView } from "../../ratelimit/service";
import { GraphQLRequest, GraphQLResponse } from "../../schemas/graphql";
import { readFields, refuseDuplicateKeys, tooDeep } from "../body";
import type { AppEnv } from "../context";
import { ORG_ID } from "../examples";
import { GraphQLBackendTarget } from "../graphql-backend";
import { DEFAULT_MAX_BODY_BYTES } from "../input";
import { type Route, rawRoute } from "../route";

const ENGINE = "GraphQL engine";

async function answer(c: Context<AppEnv>, request: Request, method: "GET" | "POST"): Promise<Response> {
  const deps = c.get("deps");
  const principal = c.get("principal");
  const call = {
    request,
    method,
    viewer: { me: meView(principal, deps.now()), rate_limit: usageView(c.get("admitted").decision) },
    requestId: currentRequestId() ?? "",
    logFormat: telemetrySettings(c.env).logFormat,
  };
  const backend = new GraphQLBackendTarget(
    deps,
    principal.organizationId,
    c.get("actor"),
    { scopes: principal.scopes, scheme: principal.jkt === null ? "Bearer" : "DPoP" },
    // Portal links are made on the origin REST's route makes them on (http/routes/portal.ts); asked
    // only when a link is made, so a bad PUBLIC_BASE_URL fails that field alone, as it fails that route.
    () => publicBaseUrl(c.env).url ?? new URL(c.req.url).origin,
  );
  const ran = await reach(ENGINE, () => c.env.GRAPHQL.run(call, backend));
  return c.body(ran.json, ran.status, { "Content-Type": "application/json", ...(ran.allow ? { Allow: ran.allow } : {}) });
}

export const graphqlRoutes: Route[] = [
  rawRoute({
    method: "POST",
    path: "/v1/graphql",
    operationId: "graphql",
    summary: "Run a GraphQL query or mutation",
    description:
      "GraphQL over HTTP with a JSON body. Execution results answer 200; request errors (syntax, validation, variables, size and depth limits) answer 400 with `errors`. Authorization errors are the 401 envelope, before any GraphQL work.",
    tag: "GraphQL",
    auth: "client",
    body: { schema: GraphQLRequest, example: { query: "{ viewer { organizationId token { expiresAt } } }" } },
    response: {
      schema: GraphQLResponse,
      example: { data: { viewer: { organizationId: ORG_ID, token: { expiresAt: "2026-06-01T13:00:00.000Z" } } } },
    },
    wire: "json",
    errorStyle: "graphql",
    // Each mutation field counts as one request (product brief): known before admission, so a
    // request whose mutations do not fit is refused with 429 before any of them runs.
    cost: async (c) => {
      let fields: Record<string, unknown>;
      try {
        fields = await readFields(c.req.raw, ["json"], DEFAULT_MAX_BODY_BYTES);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        c.set("preread", err); // answered after the credentials, as for any request
        return 1;
      }
      c.set("preread", fields);
      // Only a mutation costs more than one, and a mutation needs the keyword: a document without
      // it is counted here, without asking the engine (most requests are queries).
      if (typeof fields.query !== "string" || !/\bmutation\b/.test(fields.query)) return 1;
      const request = { query: fields.query, variables: fields.variables, operationName: fields.operationName };
      return reach(ENGINE, () => c.env.GRAPHQL.cost(request));
    },
    reply: async (c) => {
      const fields = c.get("preread") ?? (await readFields(c.req.raw, ["json"], DEFAULT_MAX_BODY_BYTES));
      if (fields instanceof ApiError) throw fields;
      return answer(c, { query: fields.query, variables: fields.variables, operationName: fields.operationName }, "POST");
    },
  }),
  rawRoute({
    method: "GET",
    path: "/v1/graphql",
    operationId: "graphqlGet",
    summary: "Run a GraphQL query from the query string",
    description: "Queries only: a mutation sent with GET answers 405 with `Allow: POST`.",
    tag: "GraphQL",
    auth: "client",
    query: [
      { name: "query", description: "The GraphQL document.", schema: z.string(), required: true, example: "{ viewer { organizationId } }" },
      { name: "variables", description: "Variables, as a JSON-encoded object.", schema: z.string() },
      { name: "operationName", description: "Which operation of the document to run.", schema: z.string() },
    ],
    response: { schema: GraphQLResponse, example: { data: { viewer: { organizationId: ORG_ID } } } },
    wire: "json",
    errorStyle: "graphql",
    errors: [405],
    reply: (c) => {
      const raw = c.req.query("variables");
      let variables: unknown;
      if (raw !== undefined && raw !== "") {
        if (jsonNestsDeeperThan(raw, MAX_JSON_DEPTH)) throw tooDeep("The variables query parameter");
        try {
          variables = JSON.parse(raw);
        } catch {
          throw new ApiError("invalid_request", "The variables query parameter is not valid JSON.");
        }
        refuseDuplicateKeys(raw, "The variables query parameter");
      }
      return answer(c, { query: c.req.query("query"), variables, operationName: c.req.query("operationName") }, "GET");
    },
  }),
];
