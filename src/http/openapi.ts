/**
 * The OpenAPI 3.1 description, generated from the route declarations (route.ts): each route's
 * method, path, auth, request and response schemas with their examples, and its extra error
 * statuses become an operation; schemas registered with a public name (schemas/common.ts) are
 * published once under components.schemas and referenced. zod's own JSON Schema 2020-12 output
 * (the dialect of OpenAPI 3.1) describes them, so the description cannot drift from validation.
 * The error statuses of an operation are derived from its declaration (who may call it, whether
 * it takes a body, a query or path parameters), so no operation lacks its 4xx. The security
 * schemes say how each kind of caller authenticates (an OAuth 2.0 client-credentials flow at the
 * RFC 6749 token endpoint plus the API key, or the operator token), and the top-level `webhooks`
 * (OpenAPI 3.1 section 4.8.1) describe the two requests keyway itself sends to a receiver for
 * each delivery attempt (spec 4.3, Standard Webhooks). Served at /v1/openapi.json and rendered
 * at /docs (routes/index.ts), built once per isolate.
 */
import * as z from "zod";
import { ERROR_CODES, type ErrorCode } from "../errors";
import { Envelope, ErrorEnvelope, ListQuery, publicNames } from "../schemas/common";
import { GraphQLResponse } from "../schemas/graphql";
import { PlainTokenError } from "../schemas/oauth";
import { SCOPES } from "../schemas/scopes";
import { ReceiverTokenError, ReceiverTokenRequest, ReceiverTokenResponse, WebhookEvent } from "../schemas/webhooks";
import {
  ADMIN_TOKEN,
  CLIENT_ID,
  CONFIG_ID,
  DELIVERY_ID,
  EVENT_BODY,
  EXAMPLE_ORIGIN,
  KEY_ID,
  ORG_ID,
  PORTAL_SESSION,
  RECEIVER_TOKEN_REQUEST,
  RECOVERY_ID,
  USER_ID,
  WEBHOOK_HEADERS,
} from "./examples";
import { type Auth, type HttpMethod, type Route, TAGS } from "./route";

const ADMIN_TOKEN_ID = ADMIN_TOKEN.id;

/** Path parameters by name; `{id}` means a webhook configuration except after `/deliveries/`. */
const PATH_PARAMS: Record<string, { description: string; example: string }> = {
  org: { description: "Organization id (`org_...`).", example: ORG_ID },
  user: { description: "User id (`usr_...`).", example: USER_ID },
  key: { description: "API key id (`key_...`), not the secret.", example: KEY_ID },
  client: { description: "Client id (`kw_client_...`).", example: CLIENT_ID },
  id: { description: "Webhook configuration id (`whk_...`).", example: CONFIG_ID },
  token: { description: "Administrator token id (`oat_...`), not the token.", example: ADMIN_TOKEN_ID },
  name: { description: "Event type name (`group.event`).", example: "order.created" },
  recovery: { description: "Recovery id (`rcv_...`).", example: RECOVERY_ID },
  issuer: { description: "Trusted issuer id (`iss_...`), not the issuer's URL.", example: "iss_01jz8q3v0c4x2m9t6n5r7w1y3a" },
  session: { description: "Portal session id (`pts_...`).", example: PORTAL_SESSION.id },
  file: { description: "A file of the GraphQL explorer (`GET /explorer`): graphiql's and React's builds.", example: "graphiql.min.css" },
};
const DELIVERY_PARAM = { description: "Delivery id (`msg_...`), also the `webhook-id` the receiver sees.", example: DELIVERY_ID };

function pathParam(path: string, name: string): { description: string; example: string } {
  const param = name === "id" && path.includes("/deliveries/{id}") ? DELIVERY_PARAM : PATH_PARAMS[name];
  // A route with a new parameter name must describe it here; the test builds the document.
  if (param === undefined) throw new Error(`openapi: no description for path parameter {${name}} of ${path}`);
  return param;
}

const pathParamNames = (path: string): string[] => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? "");

/** The path with every parameter replaced by its example, as it appears in `_links.self`. */
export const examplePath = (path: string): string => path.replace(/\{(\w+)\}/g, (_, name: string) => pathParam(path, name).example);

export type JsonSchema = z.core.JSONSchema.BaseSchema;
// A type alias, not an interface, so that it is assignable to JSON Schema's index signature.
type Ref = { $ref: string };
export interface MediaTypeObject {
  schema: JsonSchema;
  example?: unknown;
}
export interface HeaderObject {
  description: string;
  schema: JsonSchema;
}
export interface ResponseObject {
  description: string;
  headers?: Record<string, HeaderObject | Ref>;
  content?: Record<string, MediaTypeObject>;
}
export interface ParameterObject {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description: string;
  schema: JsonSchema;
  example?: unknown;
}
export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters?: (ParameterObject | Ref)[];
  requestBody?: { description?: string; required: boolean; content: Record<string, MediaTypeObject> };
  responses: Record<string, ResponseObject | Ref>;
  /**
   * How many requests one call counts as against the API key's limits, its organization's quota
   * and its credits (route.ts `weight`); text when it depends on the request (GraphQL).
   */
  "x-keyway-cost"?: number | string;
}
export type PathItemObject = Partial<Record<Lowercase<HttpMethod>, OperationObject>>;
/** OpenAPI 3.1 section 4.8.27, the three kinds this document uses. */
export type SecuritySchemeObject =
  | { type: "apiKey"; in: "header"; name: string; description: string }
  | { type: "http"; scheme: "bearer"; description: string }
  | { type: "oauth2"; description: string; flows: { clientCredentials: { tokenUrl: string; scopes: Record<string, string> } } };
export interface OpenApiDocument {
  openapi: "3.1.0";
  /** `license.identifier` is an SPDX expression (OpenAPI 3.1 section 4.8.4). */
  info: { title: string; version: string; description: string; license: { name: string; identifier: string } };
  servers?: { url: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, PathItemObject>;
  /** Requests keyway sends, not receives (OpenAPI 3.1 section 4.8.1), keyed by a name of their own. */
  webhooks: Record<string, PathItemObject>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, ParameterObject>;
    headers: Record<string, HeaderObject>;
    responses: Record<string, ResponseObject>;
    securitySchemes: Record<string, SecuritySchemeObject>;
  };
}

/**
 * The project's license: the LICENSE file and package.json's `license` say the same
 * (test/e2e/toolchain.test.ts checks the three agree).
 */
export const LICENSE = { name: "MIT License", identifier: "MIT" };

/**
 * The plain RFC 6749 token endpoint (routes/oauth.ts), the tokenUrl of the client-credentials
 * flow. Relative: OpenAPI 3.1 (section 4.5) resolves it against `servers`, which names
 * PUBLIC_BASE_URL when it is set, so the document never echoes a Host header.
 */
export const TOKEN_URL = "/v1/oauth/token";

/** When each error code is answered; a Record so that a new code must be described here. */
const ERROR_WHEN: Record<ErrorCode, string> = {
  invalid_request: "malformed JSON or form body, wrong field types, missing or unknown fields, bad query parameters",
  invalid_client:
    "unknown `client_id`, wrong secret, a client assertion that does not verify (wrong key, `aud`, `iss`/`sub`, expired, too long-lived, or a `jti` already used), revoked credential, or a credential of another organization",
  invalid_scope: "a `scope` that does not exist, or that the client credential may not have",
  insufficient_scope: "the access token lacks the scope the operation needs; `WWW-Authenticate` names it",
  invalid_dpop_proof:
    "a DPoP proof that is missing (for a DPoP-bound token, or a credential that requires DPoP), malformed, signed by another key, for another method or URL, too old, without the token's `ath`, or already used; with `WWW-Authenticate: DPoP` (400 at the token endpoints)",
  unsupported_grant_type: "`grant_type` other than `client_credentials`",
  invalid_token:
    "missing, malformed, expired or revoked access token (or operator token), one of another organization, a DPoP-bound token sent as Bearer (or with another API key), or a Bearer token sent as DPoP; with `WWW-Authenticate`",
  invalid_api_key: "`x-api-key` missing, unknown or revoked",
  forbidden: "the credentials may not perform this operation",
  idempotency_key_reused: "an `Idempotency-Key` used in the last 24 hours for a different request",
  not_found: "unknown path, or a resource that does not exist or belongs to another organization",
  method_not_allowed: "the path does not take this method; `Allow` lists those it does",
  cursor_expired:
    "a polling read's cursor is older than what retention kept (events after it were deleted): read without `after` to start from the oldest event kept",
  conflict:
    "the organization already has the most webhook configurations or active API keys it may have, a delivery has an attempt in flight, or its configuration is disabled or deleted",
  payload_too_large: "body over 16 KiB (events: 100 KiB)",
  unsupported_media_type: "Content-Type other than JSON (or form, on the token endpoints)",
  rate_limited:
    "a per-second or per-day limit of the API key, or a per-second, per-day or per-month quota its organization shares across its keys, is reached; see `Retry-After` and the `RateLimit` field",
  credits_exhausted:
    "the API key's credits do not cover the request's cost; `Retry-After` says when they are refilled, when they are (an operator can top them up)",
  server_error: "a fault of ours, logged without request data",
  service_unavailable:
    "a secret or setting is missing or malformed, a Durable Object cannot be reached, or a change is recorded and still being applied (`Retry-After`)",
};

/** components.responses names of the error statuses the routes answer with. */
export const ERROR_RESPONSES: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Gone",
  413: "PayloadTooLarge",
  415: "UnsupportedMediaType",
  422: "UnprocessableContent",
  429: "TooManyRequests",
  500: "ServerError",
  503: "ServiceUnavailable",
};

const codesFor = (status: number): ErrorCode[] =>
  (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status === status);

/**
 * The error statuses an operation can answer with, from its declaration: every path answers the
 * methods it does not take with 405 (router.ts, RFC 9110 15.5.6), whoever calls; credentials can
 * be refused (401) and, on /v1, rate-limited (429); input can be malformed (400), too large (413)
 * or of another media type (415); a path parameter can name nothing (404). Statuses that depend
 * on state (409, 422) or on a setting (503 of the public routes) are declared by the route.
 */
function errorStatuses(op: Pick<Route, "auth" | "body" | "list" | "query" | "path" | "errors" | "scope">): number[] {
  const statuses = new Set([405, ...(op.errors ?? [])]);
  if (op.scope !== undefined) statuses.add(403);
  if (op.auth !== "none") statuses.add(401).add(500).add(503);
  if (op.auth === "apiKey" || op.auth === "client") statuses.add(429);
  if (op.body || op.list || op.query) statuses.add(400);
  if (op.body) statuses.add(413).add(415);
  if (op.path.includes("{")) statuses.add(404);
  return [...statuses].sort((a, b) => a - b);
}

/**
 * Security requirements (OpenAPI 3.1 section 4.8.30): the keys of one object are all required
 * together, so a /v1 call needs the API key and an access token; the token endpoints take the
 * API key (the client authenticates with its credentials in the body or HTTP Basic, RFC 6749
 * 2.3.1); public routes need nothing (an empty list overrides any default).
 */
const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  none: [],
  apiKey: [{ apiKey: [] }],
  client: [{ apiKey: [], oauth2: [] }],
  admin: [{ admin: [] }],
  polling: [{ pollingToken: [] }],
};

const SECURITY_SCHEMES: Record<string, SecuritySchemeObject> = {
  apiKey: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "API key (`kw_live_ak_...`) issued by the operator; on every `/v1` request, the token requests included.",
  },
  oauth2: {
    type: "oauth2",
    description:
      "Access token (`kw_at_...`) from the client-credentials grant (RFC 6749 4.4) at the token endpoint, which also takes the `x-api-key` of the same organization; `POST /v1/oauth` issues the same token in the envelope. Sent as `Authorization: Bearer` (RFC 6750), or, when it is DPoP-bound (`token_type: DPoP`), as `Authorization: DPoP` with a fresh `DPoP` proof of its key for each request (RFC 9449), with the API key it was issued with. A token speaks for its client credential's user and organization, within its scopes; each operation names the scope it needs (403 `insufficient_scope` without it).",
    flows: { clientCredentials: { tokenUrl: TOKEN_URL, scopes: { ...SCOPES } } },
  },
  admin: { type: "http", scheme: "bearer", description: "The operator token `ADMIN_TOKEN`; `/admin/v1` only." },
  pollingToken: {
    type: "http",
    scheme: "bearer",
    description:
      "A polling configuration's read credential (`kw_poll_...`), shown once when the configuration is created or its token rotated: it reads that configuration's events and nothing else, and is not the organization's API key.",
  },
  receiverToken: {
    type: "http",
    scheme: "bearer",
    description:
      "On webhooks keyway sends: the access token the receiver's own token endpoint (the configuration's `oauth.token_url`) issued to keyway just before, by the `receiverToken` request. With `oauth.dpop` the token is DPoP-bound and goes as `Authorization: DPoP <token>` with a `DPoP` proof (`htm` POST, `htu` the webhook URL, `ath`, a fresh `jti`) of the configuration's key, whose thumbprint is the view's `oauth.dpop_jkt` (RFC 9449 7.1); a 401 `use_dpop_nonce` with `DPoP-Nonce` is answered once.",
  },
};

const schemaRef = (name: string): Ref => ({ $ref: `#/components/schemas/${name}` });

/**
 * zod's JSON Schema 2020-12, without what only adds noise to a reader: the `$schema` of each
 * fragment, the regex zod adds next to a `format` (date-time, email), and the safe-integer
 * bounds of every `.int()`.
 */
function toJsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const json: JsonSchema = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: ({ jsonSchema: s }) => {
      if (s.format !== undefined) delete s.pattern;
      if (s.minimum === Number.MIN_SAFE_INTEGER) delete s.minimum;
      if (s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum;
    },
  });
  delete json.$schema;
  return json;
}

function createdIdOf(example: unknown): string | null {
  if (typeof example !== "object" || example === null) return null;
  // A client credential is named by its client_id, an event type by its name, everything else by its id.
  const { client_id, id, name } = example as { client_id?: unknown; id?: unknown; name?: unknown };
  return typeof client_id === "string" ? client_id : typeof id === "string" ? id : typeof name === "string" ? name : null;
}

function envelopeExample(status: number, data: unknown, path: string, error?: ErrorCode, message?: string): unknown {
  const href = `${EXAMPLE_ORIGIN}${path}`;
  if (error === undefined) {
    return { response_status: status, developer_message: "Success", user_message: "Success", data, _links: { self: { href } } };
  }
  const user = ERROR_CODES[error].user;
  return { response_status: status, developer_message: message ?? user, user_message: user, data: null, error, _links: { self: { href } } };
}

/** The document for a set of routes; routes/index.ts builds it once per isolate. */
export function buildOpenApiDocument(routes: readonly Route[]): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = {
    Envelope: toJsonSchema(Envelope(z.unknown()), "output"),
    ErrorEnvelope: {
      ...toJsonSchema(ErrorEnvelope, "output"),
      description: `The envelope of an error: \`data\` is null and \`error\` is one of ${(Object.keys(ERROR_CODES) as ErrorCode[]).map((c) => `\`${c}\``).join(", ")}.`,
    },
  };
  // Every named schema a route takes or answers with (or an array of one), plus the error bodies
  // that are not envelopes and the bodies of the webhooks keyway sends, published once.
  const names = new Map<z.ZodType, string>();
  const publish = (schema: z.ZodType, io: "input" | "output") => {
    const target = schema instanceof z.ZodArray ? (schema.element as z.ZodType) : schema;
    const name = publicNames.get(target)?.name;
    if (name === undefined || names.has(target)) return;
    names.set(target, name);
    schemas[name] = toJsonSchema(target, io);
  };
  for (const route of routes) {
    if (route.body) publish(route.body.schema, "input");
    publish(route.response.schema, "output");
  }
  publish(PlainTokenError, "output");
  publish(GraphQLResponse, "output");
  for (const schema of OUTBOUND_SCHEMAS) publish(schema, "output");

  /** A named schema by reference, an array of one likewise, anything else inline. */
  const ref = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
    const name = names.get(schema);
    if (name !== undefined) return schemaRef(name);
    if (schema instanceof z.ZodArray) {
      const item = names.get(schema.element as z.ZodType);
      if (item !== undefined) return { type: "array", items: schemaRef(item) };
    }
    return toJsonSchema(schema, io);
  };

  const responses: Record<string, ResponseObject> = {};
  for (const [status, name] of Object.entries(ERROR_RESPONSES)) {
    const codes = codesFor(Number(status));
    const headers: Record<string, Ref> = {};
    if (status === "429") Object.assign(headers, rateLimitHeaderRefs, { "Retry-After": { $ref: "#/components/headers/Retry-After" } });
    if (status === "503") headers["Retry-After"] = { $ref: "#/components/headers/Retry-After" };
    if (status === "401") headers["WWW-Authenticate"] = { $ref: "#/components/headers/WWW-Authenticate" };
    if (status === "405") headers.Allow = { $ref: "#/components/headers/Allow" };
    const first = codes[0] ?? "server_error";
    responses[name] = {
      description: codes.map((code) => `\`${code}\`: ${ERROR_WHEN[code]}.`).join(" "),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: {
        "application/json": { schema: schemaRef("ErrorEnvelope"), example: envelopeExample(Number(status), null, "/v1/me", first) },
      },
    };
  }

  const paths: OpenApiDocument["paths"] = {};
  for (const op of routes) {
    const item = paths[op.path] ?? {};
    paths[op.path] = item;
    item[op.method.toLowerCase() as Lowercase<HttpMethod>] = operationObject(op, ref);
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "keyway",
      version: "v1",
      description: [
        "Issues access tokens to API clients and authorizes outbound webhooks.",
        "Every `/v1` request carries the API key in `x-api-key`; all but the token endpoints also carry an access token as `Authorization: Bearer`. The operator API (`/admin/v1`) takes `Authorization: Bearer <ADMIN_TOKEN>`.",
        "Every `/v1` and `/admin/v1` response, success or error, is the envelope `{response_status, developer_message, user_message, data, _links}` (errors add `error` and carry `data: null`), with `Cache-Control: no-store`; except `/v1/oauth/token` (plain RFC 6749 bodies), `/v1/graphql` (GraphQL responses) and this document.",
        "Each `/v1` request with a valid API key counts against its rate limits and its answer carries `RateLimit` and `RateLimit-Policy`; over a limit the answer is 429 with `Retry-After`.",
        "A method a path does not take answers 405 `method_not_allowed` with `Allow`. `/v1` paths check the API key first, so an unknown `/v1` path without a key answers 401.",
        "`webhooks` describes what keyway sends to a webhook configuration's receiver on each delivery attempt: a client-credentials token request to its `oauth.token_url`, then the signed event to its `url`.",
      ].join("\n\n"),
      license: LICENSE,
    },
    tags: [...Object.entries(TAGS).map(([name, description]) => ({ name, description })), WEBHOOKS_TAG],
    paths,
    webhooks: outboundWebhooks(ref),
    components: {
      schemas,
      parameters: {
        limit: {
          name: "limit",
          in: "query",
          required: false,
          description: "Page size.",
          schema: toJsonSchema(ListQuery.shape.limit, "input"),
        },
        cursor: {
          name: "cursor",
          in: "query",
          required: false,
          description: "Opaque cursor from the previous page's `_links.next.href`.",
          schema: toJsonSchema(ListQuery.shape.cursor, "input"),
        },
      },
      headers: {
        RateLimit: {
          description:
            'What remains of each window of the API key and the seconds until it resets, e.g. `"second";r=0;t=1, "day";r=997;t=51234` (draft-ietf-httpapi-ratelimit-headers).',
          schema: { type: "string" },
        },
        "RateLimit-Policy": {
          description: 'The API key\'s limits, e.g. `"second";q=1;w=1, "day";q=1000;w=86400`.',
          schema: { type: "string" },
        },
        "Retry-After": {
          description: "Whole seconds to wait; never earlier than the window's end.",
          schema: { type: "integer", minimum: 0 },
        },
        "WWW-Authenticate": {
          description:
            "`Bearer` challenge (RFC 6750), or `DPoP` (RFC 9449), when the access token is the problem. On /v1 it names the protected resource metadata in `resource_metadata` (RFC 9728 5.1): `GET /.well-known/oauth-protected-resource`.",
          schema: { type: "string" },
        },
        Allow: { description: "The methods the path takes (RFC 9110 10.2.1), e.g. `GET, HEAD`.", schema: { type: "string" } },
        Location: { description: "Path of the created resource.", schema: { type: "string" } },
      },
      responses,
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

const rateLimitHeaderRefs: Record<string, Ref> = {
  RateLimit: { $ref: "#/components/headers/RateLimit" },
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
};

const STATUS_TEXT: Record<Route["status"], string> = { 200: "OK", 201: "Created", 202: "Accepted" };
const MEDIA: Record<Route["wire"], string> = {
  envelope: "application/json",
  json: "application/json",
  text: "text/plain",
  html: "text/html",
};

function operationObject(op: Route, ref: (schema: z.ZodType, io: "input" | "output") => JsonSchema): OperationObject {
  const wire = op.wire;
  const parameters: (ParameterObject | Ref)[] = pathParamNames(op.path).map((name) => {
    const { description, example } = pathParam(op.path, name);
    return { name, in: "path", required: true, description, schema: { type: "string" }, example };
  });
  if (op.list) parameters.push({ $ref: "#/components/parameters/limit" }, { $ref: "#/components/parameters/cursor" });
  for (const q of op.query ?? []) {
    parameters.push({
      name: q.name,
      in: "query",
      required: q.required ?? false,
      description: q.description,
      schema: ref(q.schema, "input"),
      ...(q.example !== undefined ? { example: q.example } : {}),
    });
  }

  // A 201 names the resource it created (http/envelope.ts `created`): the collection's path and
  // the new resource's id (a client credential's client_id), as every route's `location` builds it.
  const createdId = op.status === 201 ? createdIdOf(op.response.example) : null;
  const selfPath = createdId === null ? examplePath(op.path) : `${examplePath(op.path)}/${createdId}`;
  const dataSchema = ref(op.response.schema, "output");
  const success: ResponseObject = {
    description: wire === "envelope" ? `${STATUS_TEXT[op.status]}: the envelope, \`data\` as below.` : STATUS_TEXT[op.status],
    content: {
      [MEDIA[wire]]:
        wire === "envelope"
          ? {
              schema: { allOf: [schemaRef("Envelope"), { type: "object", properties: { data: dataSchema }, required: ["data"] }] },
              example: envelopeExample(op.status, op.response.example, selfPath),
            }
          : { schema: dataSchema, example: op.response.example },
    },
  };
  const headers: Record<string, Ref> = op.auth === "apiKey" || op.auth === "client" ? { ...rateLimitHeaderRefs } : {};
  if (op.status === 201) headers.Location = { $ref: "#/components/headers/Location" };
  if (Object.keys(headers).length > 0) success.headers = headers;

  const responses: Record<string, ResponseObject | Ref> = { [String(op.status)]: success };
  for (const status of errorStatuses(op)) responses[String(status)] = errorResponse(op, status);

  const body = op.body;
  const counted = op.auth === "client" || op.auth === "apiKey";
  return {
    ...(counted ? { "x-keyway-cost": op.cost !== undefined ? "1 per mutation field executed, at least 1" : (op.weight ?? 1) } : {}),
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description !== undefined ? { description: op.description } : {}),
    tags: [op.tag],
    security: op.scope === undefined ? SECURITY[op.auth] : [{ apiKey: [], oauth2: [op.scope] }],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body !== undefined
      ? {
          requestBody: {
            required: !body.optional,
            content: Object.fromEntries(
              (body.form ? ["application/json", "application/x-www-form-urlencoded"] : ["application/json"]).map((media) => [
                media,
                { schema: ref(body.schema, "input"), example: body.example },
              ]),
            ),
          },
        }
      : {}),
    responses,
  };
}

function errorResponse(op: Route, status: number): ResponseObject | Ref {
  const name = ERROR_RESPONSES[status];
  if (name === undefined) throw new Error(`openapi: no error response for status ${status}`);
  const shared: Ref = { $ref: `#/components/responses/${name}` };
  if (op.errorStyle === "oauth") {
    const code = codesFor(status)[0] ?? "server_error";
    return {
      description: `RFC 6749 5.2 error body. ${codesFor(status)
        .map((c) => `\`${c}\``)
        .join(", ")}.`,
      ...(status === 405 ? { headers: { Allow: { $ref: "#/components/headers/Allow" } } } : {}),
      content: {
        "application/json": {
          schema: schemaRef("PlainTokenError"),
          example: { error: code, error_description: ERROR_CODES[code].user },
        },
      },
    };
  }
  // GraphQL request errors answer 400 with `errors`; a mutation sent with GET answers 405 so.
  if (op.errorStyle === "graphql" && (status === 400 || (status === 405 && op.method === "GET"))) {
    return {
      description:
        status === 400
          ? "A GraphQL request error (`errors`, each with `extensions.code`), or the error envelope when the body itself is unreadable."
          : "A mutation sent with GET (GraphQL `errors`), or a method the path does not take (the error envelope); `Allow` lists those it does.",
      ...(status === 405 ? { headers: { Allow: { $ref: "#/components/headers/Allow" } } } : {}),
      content: {
        "application/json": {
          schema: { anyOf: [schemaRef("GraphQLResponse"), schemaRef("ErrorEnvelope")] },
          example:
            status === 400
              ? { errors: [{ message: "Syntax Error: Expected Name, found <EOF>.", extensions: { code: "invalid_request" } }] }
              : { errors: [{ message: "Mutations must be sent with POST.", extensions: { code: "method_not_allowed" } }] },
        },
      },
    };
  }
  return shared;
}

// ---------------------------------------------------------------------------------------------
// Webhooks keyway sends (OpenAPI 3.1 `webhooks`): per delivery attempt, the client-credentials
// grant at the receiver's token_url (spec 4.3, RFC 6749 4.4.2; webhooks/outbound.ts), then the
// event at its url with the Standard Webhooks headers (webhooks/consumer.ts, signature.ts). The
// OpenAPI test sends a real delivery and checks both requests against what is written here.

const WEBHOOKS_TAG = {
  name: "Webhooks sent by keyway",
  description:
    "What a receiver gets on each delivery attempt: a token request to the configuration's `oauth.token_url`, then the event at its `url`. Redirects: followed for the token request (at most 5; 307/308 only within the origin), never for the event.",
};

const OUTBOUND_SCHEMAS: z.ZodType[] = [WebhookEvent, ReceiverTokenRequest, ReceiverTokenResponse, ReceiverTokenError];

/** The headers keyway sets on the event request, besides `Content-Type` and `Authorization` (the security). */
export const WEBHOOK_EVENT_HEADERS: ParameterObject[] = [
  {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "The delivery id (`msg_...`), the same on every attempt and re-send: deduplicate on it (delivery is at least once).",
    schema: { type: "string" },
    example: WEBHOOK_HEADERS["webhook-id"],
  },
  {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix seconds of this attempt; refuse one far from your clock (Standard Webhooks suggests 5 minutes) to stop replays.",
    schema: { type: "string", pattern: "^[0-9]+$" },
    example: WEBHOOK_HEADERS["webhook-timestamp"],
  },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description:
      "`v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64-decoded part of the configuration's `whsec_` signing secret (Standard Webhooks). During a rotation, one signature per live secret, space-separated: accept the request if any matches. The example is the real signature of the example body with the example `signing_secret` of `createWebhookConfiguration`.",
    schema: { type: "string", pattern: "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$" },
    example: WEBHOOK_HEADERS["webhook-signature"],
  },
  {
    name: "User-Agent",
    in: "header",
    required: true,
    description: "Names keyway's delivery worker.",
    schema: { type: "string" },
    example: "keyway-webhooks/1",
  },
];

/** Ranges are allowed in OpenAPI responses (section 4.8.16); an exact status takes precedence over its range. */
function outboundWebhooks(ref: (schema: z.ZodType, io: "input" | "output") => JsonSchema): Record<string, PathItemObject> {
  const outcome = (description: string): ResponseObject => ({ description });
  return {
    receiverToken: {
      post: {
        operationId: "requestReceiverToken",
        summary: "keyway asks the receiver's token endpoint for an access token",
        description:
          "Sent to the configuration's `oauth.token_url` before each event (or, with `token_cache: true`, when the cached token is within 60 s of expiry), with `Accept: application/json`. By default (`oauth.auth_method: client_secret_post`, spec 4.3) the client authenticates with `client_id` and `client_secret` in the body, exactly as below. A configuration may instead choose `client_secret_basic` (HTTP Basic with the id and secret form-urlencoded, RFC 6749 2.3.1; the body then has `grant_type` only) or `private_key_jwt` (`client_id`, `client_assertion_type` and an ES256 `client_assertion` keyed at the configuration's own `oauth.jwks_uri`, RFC 7523), and may add `scope`, `resource` (RFC 8707, repeated) and `audience`; with `oauth.dpop` the request carries a `DPoP` proof (RFC 9449) and a `use_dpop_nonce` answer is answered once (docs/receiver-oauth.md). Any failure is recorded as a `token` step and the attempt is retried by the schedule.",
        tags: [WEBHOOKS_TAG.name],
        // The client credentials are in the body, so the request carries no other credential.
        security: [],
        requestBody: {
          description: "RFC 6749 4.4.2, form-encoded.",
          required: true,
          content: {
            "application/x-www-form-urlencoded": { schema: ref(ReceiverTokenRequest, "output"), example: RECEIVER_TOKEN_REQUEST },
          },
        },
        responses: {
          "2XX": {
            description: "A JSON object with a non-empty string `access_token` (64 KiB at most); keyway sends it with the event.",
            content: {
              "application/json": {
                schema: ref(ReceiverTokenResponse, "output"),
                example: { access_token: "receiver-issued-token", token_type: "Bearer", expires_in: 3600 },
              },
            },
          },
          "3XX": outcome(
            "Followed by hand, at most 5 hops, each through the SSRF guard: 307/308 repeat the POST only within the same origin; 301/302/303 continue as a GET without the body.",
          ),
          "4XX": {
            description: "A refusal: recorded with the `error` code and `message` (when free of the secret), then retried.",
            content: {
              "application/json": {
                schema: ref(ReceiverTokenError, "output"),
                example: { error: "invalid_client", message: "Unknown client." },
              },
            },
          },
          "5XX": outcome("Retried by the schedule; a 503 `Retry-After` is honoured when longer."),
        },
      },
    },
    event: {
      post: {
        operationId: "deliverEvent",
        summary: "keyway delivers an event to the configuration's url",
        description:
          "Sent for each matching configuration of a published event, and again on each retry or re-send with the same `webhook-id`. The body is the exact byte string the signature covers: verify before parsing.",
        tags: [WEBHOOKS_TAG.name],
        security: [{ receiverToken: [] }],
        parameters: WEBHOOK_EVENT_HEADERS,
        requestBody: {
          required: true,
          content: { "application/json": { schema: ref(WebhookEvent, "output"), example: EVENT_BODY } },
        },
        responses: {
          "2XX": outcome("Delivered; the body is not read."),
          "3XX": outcome("Not followed; retried by the schedule."),
          "401": outcome(
            "Retried by the schedule. With `token_cache`, the endpoint's token is dropped and never sent again; a 401 to the shared token is answered at once by one new token request and the webhook sent again.",
          ),
          "410": outcome(
            "The delivery fails and the configuration is disabled (`disabled_reason`), unless its `url` changed after the attempt began.",
          ),
          "429": outcome(
            "Retried by the schedule; with `Retry-After` (at most one hour) the whole endpoint is paused: nothing reaches it before the pause ends.",
          ),
          "4XX": outcome("Retried by the schedule, as every answer but a 2xx or a 410."),
          "5XX": outcome("Retried by the schedule; a 503 with `Retry-After` pauses the whole endpoint, as a 429 does."),
        },
      },
    },
  };
}
