/**
 * Runs one GraphQL request (GraphQL over HTTP) with abuse limits applied before any execution:
 * document size, token count (bounded parse), then the document limits of limits.ts (fields,
 * depth, value nesting, introspection size), so a 5000-alias query is refused with errors and
 * never executed. Errors carry
 * `extensions.code` with the same codes as REST; request-level failures (syntax, validation,
 * variables, limits) answer 400, execution results 200.
 */
import {
  type DocumentNode,
  execute,
  GraphQLError,
  type GraphQLFormattedError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  getDirectiveValues,
  getVariableValues,
  Kind,
  type OperationDefinitionNode,
  parse,
  type SelectionNode,
  validate,
} from "graphql";
import { ApiError, describeInput } from "../errors";
import { IsolateCache } from "../lib/cache";
import { describeError, log } from "../log";
import { checkDocumentLimits, GRAPHQL_LIMITS } from "./limits";
import { type GraphQLContext, rootValue, toCamel } from "./resolvers";
import { schema } from "./schema";

/**
 * Documents that passed the limits and validation, by their text: clients send the same few
 * queries over and over, and parsing plus validating costs more than executing them. Only valid
 * documents are kept (bounded, oldest out), so the cache cannot be filled with garbage cheaply.
 */
const validDocuments = new IsolateCache<DocumentNode>({ maxEntries: 500 });

export interface GraphQLRequest {
  query: unknown;
  variables?: unknown;
  operationName?: unknown;
}

export interface GraphQLResult {
  status: 200 | 400 | 405;
  body: { data?: unknown; errors?: GraphQLFormattedError[] };
  allow?: string;
}

const requestError = (message: string, status: 400 | 405 = 400): GraphQLResult => ({
  status,
  body: { errors: [{ message, extensions: { code: status === 405 ? "method_not_allowed" : "invalid_request" } }] },
});

export async function runGraphQL(request: GraphQLRequest, context: GraphQLContext, method: "GET" | "POST"): Promise<GraphQLResult> {
  const { query, variables, operationName } = request;
  if (typeof query !== "string" || query.trim() === "") return requestError("query is required and must be a non-empty string.");
  if (query.length > GRAPHQL_LIMITS.maxDocumentLength) {
    return requestError(`The query document is ${query.length} characters; the limit is ${GRAPHQL_LIMITS.maxDocumentLength}.`);
  }
  if (variables !== undefined && variables !== null && (typeof variables !== "object" || Array.isArray(variables))) {
    return requestError("variables must be a JSON object.");
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== "string") {
    return requestError("operationName must be a string.");
  }

  const prepared = prepare(query);
  if ("status" in prepared) return prepared;
  const document = prepared.document;

  const operation = selectOperation(document, typeof operationName === "string" ? operationName : undefined);
  // The schema has no subscription type: graphql-js 16 would still run one and answer 200 with
  // only an error. A request the server cannot execute is a 400 (GraphQL over HTTP, 6.4.1).
  if (operation?.operation === "subscription") {
    return requestError("Subscriptions are not supported: keyway's GraphQL API answers queries and mutations over HTTP.");
  }
  if (operation?.operation === "mutation" && method === "GET") {
    return { ...requestError("Mutations must be sent with POST.", 405), allow: "POST" };
  }

  const result = await execute({
    schema,
    document,
    rootValue,
    contextValue: context,
    variableValues: (variables as Record<string, unknown> | null | undefined) ?? undefined,
    operationName: typeof operationName === "string" ? operationName : undefined,
  });
  // Variable coercion and operation selection fail before execution: no data at all.
  if (!("data" in result) || result.data === undefined) {
    return { status: 400, body: { errors: (result.errors ?? []).map(formatError) } };
  }
  return { status: 200, body: { data: result.data, ...(result.errors?.length ? { errors: result.errors.map(formatError) } : {}) } };
}

/** The parsed document if it passes the limits and validation (cached), or the 400 to answer. */
function prepare(query: string): { document: DocumentNode } | GraphQLResult {
  let document = validDocuments.get(query);
  if (document !== undefined) return { document };
  try {
    document = parse(query, { maxTokens: GRAPHQL_LIMITS.maxTokens, noLocation: false });
  } catch (err) {
    return { status: 400, body: { errors: [formatError(err instanceof GraphQLError ? err : new GraphQLError("Syntax error."))] } };
  }
  const limitError = checkDocumentLimits(schema, document);
  if (limitError !== null) return requestError(limitError);
  const validationErrors = validate(schema, document);
  if (validationErrors.length > 0) return { status: 400, body: { errors: validationErrors.slice(0, 10).map(formatError) } };
  validDocuments.set(query, document);
  return { document };
}

/**
 * How many requests this GraphQL request counts as against the API key's limits (product brief):
 * one per mutation field it would execute, at least one. Fields are collected as execution
 * collects them (fragments expanded, @skip/@include applied, one per response key, since fields
 * sharing a key run once). A request that is not valid costs one: it will be answered 400.
 */
export function requestCost(request: GraphQLRequest): number {
  const { query, variables, operationName } = request;
  if (typeof query !== "string" || query.length > GRAPHQL_LIMITS.maxDocumentLength) return 1;
  const prepared = prepare(query);
  if ("status" in prepared) return 1;
  const operation = selectOperation(prepared.document, typeof operationName === "string" ? operationName : undefined);
  if (operation?.operation !== "mutation") return 1;
  const raw =
    typeof variables === "object" && variables !== null && !Array.isArray(variables) ? (variables as Record<string, unknown>) : {};
  // Variables as execution will see them: coerced, defaults applied. Variables that do not
  // coerce make execution fail before any field runs, so such a request costs one.
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], raw, { maxErrors: 1 });
  if (coerced.errors !== undefined) return 1;
  const vars = coerced.coerced;
  const fragments = new Map(
    prepared.document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d] as const),
  );
  const keys = new Set<string>();
  const visited = new Set<string>();
  const collect = (selections: readonly SelectionNode[]) => {
    for (const selection of selections) {
      if (!included(selection, vars)) continue;
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== "__typename") keys.add(selection.alias?.value ?? selection.name.value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet.selections);
      else if (!visited.has(selection.name.value)) {
        visited.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) collect(fragment.selectionSet.selections);
      }
    }
  };
  collect(operation.selectionSet.selections);
  return Math.max(1, keys.size);
}

/** GraphQL's @skip and @include, decided as graphql-js's execution decides them. */
function included(selection: SelectionNode, variables: Record<string, unknown>): boolean {
  if (getDirectiveValues(GraphQLSkipDirective, selection, variables)?.if === true) return false;
  if (getDirectiveValues(GraphQLIncludeDirective, selection, variables)?.if === false) return false;
  return true;
}

function selectOperation(document: DocumentNode, name: string | undefined): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  return name === undefined ? (operations.length === 1 ? operations[0] : undefined) : operations.find((o) => o.name?.value === name);
}

/**
 * Domain errors keep their REST code, with invalid input described in GraphQL's own field names
 * (camelCase, "input"); internal details and our own faults are logged, never sent.
 */
function formatError(error: GraphQLError): GraphQLFormattedError {
  const original = error.originalError;
  const where = { ...(error.locations ? { locations: error.locations } : {}), ...(error.path ? { path: error.path } : {}) };
  if (original instanceof ApiError) {
    if (original.detail !== undefined)
      log.error("graphql field failed", { code: original.code, path: error.path?.join("."), detail: original.detail });
    const message =
      original.input === undefined
        ? original.developerMessage
        : describeInput({ ...original.input, label: original.input.label === "request body" ? "input" : original.input.label }, toCamel);
    return { message, ...where, extensions: { code: original.code, status: original.status } };
  }
  if (error.path !== undefined && original !== undefined) {
    log.error("graphql resolver failed", { path: error.path.join("."), detail: describeError(original) });
    return { message: "An internal error occurred. It has been logged.", ...where, extensions: { code: "server_error", status: 500 } };
  }
  // Syntax, validation and variable errors describe the caller's document, not our internals.
  return { message: error.message, ...where, extensions: { code: "invalid_request", status: 400 } };
}
