/**
 * POST /v1/graphql (and GET for queries): the GraphQL adapter. It sits behind the same API key,
 * rate limit and bearer checks as REST, so an unauthorized request is refused with the 401
 * envelope before any GraphQL work. Answers are standard GraphQL responses.
 */
import type { Context } from "hono";
import * as z from "zod";
import { ApiError } from "../../errors";
import { type GraphQLRequest as Request, requestCost, runGraphQL } from "../../graphql/execute";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../lib/json";
import { GraphQLRequest, GraphQLResponse } from "../../schemas/graphql";
import { readFields, tooDeep } from "../body";
import type { AppEnv } from "../context";
import { ORG_ID } from "../examples";
import { DEFAULT_MAX_BODY_BYTES } from "../input";
import { type Route, rawRoute } from "../route";

async function answer(c: Context<AppEnv>, request: Request, method: "GET" | "POST"): Promise<Response> {
  const context = { deps: c.get("deps"), principal: c.get("principal"), usage: c.get("admitted").decision, actor: c.get("actor") };
  const result = await runGraphQL(request, context, method);
  return c.json(result.body, result.status, result.allow ? { Allow: result.allow } : {});
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
      return requestCost({ query: fields.query, variables: fields.variables, operationName: fields.operationName });
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
      }
      return answer(c, { query: c.req.query("query"), variables, operationName: c.req.query("operationName") }, "GET");
    },
  }),
];
