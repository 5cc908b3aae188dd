/**
 * GraphQL over HTTP: the request body of POST /v1/graphql and the response body (the GraphQL
 * specification's response format). Requests are checked field by field by the executor
 * (graphql/execute.ts); these shapes describe them for the API description.
 */
import * as z from "zod";
import { publicNames } from "./common";

export const GraphQLRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().nullable().optional(),
});

export const GraphQLResponse = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  errors: z
    .array(
      z.looseObject({
        message: z.string(),
        path: z.array(z.union([z.string(), z.number().int()])).optional(),
        extensions: z.looseObject({ code: z.string().optional() }).optional(),
      }),
    )
    .optional(),
});

// Public names in the API description (http/openapi.ts).
publicNames.add(GraphQLRequest, { name: "GraphQLRequest" });
publicNames.add(GraphQLResponse, { name: "GraphQLResponse" });
