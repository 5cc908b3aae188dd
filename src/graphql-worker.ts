/**
 * Entry point of the keyway-graphql Worker (wrangler.graphql.toml): the GraphQL engine. It parses,
 * limits, validates and executes GraphQL requests (graphql/execute.ts) and holds no binding and no
 * secret: the API Worker authenticates and admits each request (one call to the key's object, as
 * for REST) and then calls `run` over its GRAPHQL service binding (Workers RPC, same thread, no
 * network hop), handing over what the request may see and a backend through which every resolver
 * reaches the domain (graphql/backend.ts, answered by http/graphql-backend.ts). `cost` counts a
 * request's mutation fields before admission. It is a Worker of its own so that graphql-js and
 * the engine, about 42 KiB gzipped, stay out of the bundle behind every other API request
 * (docs/performance.md). Being deployed apart, it meets API Workers of the release before and
 * after its own: GraphQLCall, GraphQLAnswer, GraphQLRequest, ViewerData and the backend change
 * only as docs/deploy.md, "The companions' contract", says (test/companions-contract.test.ts).
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import type { GraphQLBackend } from "./graphql/backend";
import { type GraphQLRequest, requestCost, runGraphQL } from "./graphql/execute";
import type { ViewerData } from "./graphql/resolvers";
import { inRequestContext, type LogFormat, setLogFormat } from "./log";

/** One admitted request, as the API Worker hands it over. */
export interface GraphQLCall {
  request: GraphQLRequest;
  method: "GET" | "POST";
  viewer: ViewerData;
  /** The API Worker's request id and log format, so that this Worker's lines match its own. */
  requestId: string;
  logFormat: LogFormat;
}

/** The HTTP answer: the GraphQL response as JSON text (serialized once, here), its status, and Allow for a 405. */
export interface GraphQLAnswer {
  status: 200 | 400 | 405;
  json: string;
  allow?: string;
}

export class GraphQLEngine extends WorkerEntrypoint {
  run(call: GraphQLCall, backend: GraphQLBackend): Promise<GraphQLAnswer> {
    setLogFormat(call.logFormat);
    return inRequestContext({ request_id: call.requestId }, async () => {
      const result = await runGraphQL(call.request, { backend, viewer: call.viewer }, call.method);
      return { status: result.status, json: JSON.stringify(result.body), ...(result.allow ? { allow: result.allow } : {}) };
    });
  }

  /** How many requests this one counts as against the API key's limits (one per mutation field). */
  cost(request: GraphQLRequest): number {
    return requestCost(request);
  }
}

export default GraphQLEngine;
