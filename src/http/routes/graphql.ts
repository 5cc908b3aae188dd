/**
 * POST /v1/graphql (and GET for queries): the GraphQL adapter. It sits behind the same API key,
 * rate limit and bearer middleware as REST, so an unauthorized request is refused with the 401
 * envelope before any GraphQL work. Answers are standard GraphQL responses.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { ApiError } from "../../errors";
import { type GraphQLRequest, runGraphQL } from "../../graphql/execute";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../lib/json";
import { readFields, tooDeep } from "../body";
import type { AppEnv } from "../context";
import { DEFAULT_MAX_BODY_BYTES } from "../input";
import { methods } from "../route";

export const graphql = new Hono<AppEnv>();

async function answer(c: Context<AppEnv>, request: GraphQLRequest, method: "GET" | "POST"): Promise<Response> {
  const result = await runGraphQL(request, { deps: c.get("deps"), principal: c.get("principal") }, method);
  return c.json(result.body, result.status, result.allow ? { Allow: result.allow } : {});
}

methods(graphql, "/v1/graphql", {
  POST: async (c) => {
    const fields = await readFields(c.req.raw, ["json"], DEFAULT_MAX_BODY_BYTES);
    return answer(c, { query: fields.query, variables: fields.variables, operationName: fields.operationName }, "POST");
  },
  GET: async (c) => {
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
});
