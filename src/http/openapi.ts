/**
 * The OpenAPI 3.1 description of every HTTP route, served at /v1/openapi.json and rendered at
 * /docs. One registry (`operations()`) lists each operation with the very zod schemas its route
 * validates with and the views it answers with, plus an example of each; the document is derived
 * from it with zod's own JSON Schema 2020-12 output (the dialect of OpenAPI 3.1), so the
 * description cannot drift from validation. test/openapi.test.ts checks that the registry and
 * the router list the same routes and that every example passes its schema: a new route fails
 * that test until it is added here. The document is built once per isolate, on first use.
 */
import * as z from "zod";
import { ERROR_CODES, type ErrorCode } from "../errors";
import {
  ApiKeyView,
  ApiKeyWithUsageView,
  ClientCredentialView,
  CreateApiKeyInput,
  CreateClientCredentialInput,
  CreatedApiKeyView,
  CreatedClientCredentialView,
  CreateOrganizationInput,
  CreateUserInput,
  MintOrgAdminTokenInput,
  OrgAdminTokenView,
  OrganizationView,
  UpdateApiKeyInput,
  UserView,
} from "../schemas/admin";
import { Envelope, ErrorEnvelope, ListQuery, Timestamp } from "../schemas/common";
import { MeView, PlainTokenError, PlainTokenResponse, TokenData, TokenRequest } from "../schemas/oauth";
import {
  CreatedWebhookConfigurationView,
  CreateWebhookConfigurationInput,
  DeliveryView,
  PublishEventInput,
  PublishedEventView,
  UpdateWebhookConfigurationInput,
  WebhookConfigurationView,
} from "../schemas/webhooks";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/**
 * Who may call: `none` is public; `apiKey` is the token endpoints (the API key, then client
 * credentials in the body or HTTP Basic); `client` is the API key plus an access token; `admin`
 * is the operator token.
 */
export type Auth = "none" | "apiKey" | "client" | "admin";

/** A schema and an example of it; the test parses each example with its schema. */
export interface Sample {
  schema: z.ZodType;
  example: unknown;
}

export interface QueryParam {
  name: string;
  description: string;
  schema: z.ZodType;
  required?: boolean;
  example?: string;
}

export interface Operation {
  method: HttpMethod;
  /** OpenAPI style, `{param}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: TagName;
  auth: Auth;
  /** The schema the route validates its body with. `optional`: an empty body counts as `{}`. */
  body?: Sample & { optional?: boolean; form?: boolean };
  /** A list endpoint: `limit` and `cursor` query parameters, `_links.next` for the next page. */
  list?: boolean;
  query?: QueryParam[];
  status: 200 | 201 | 202;
  /** `data` of the envelope, or the whole body when `wire` says it is not enveloped. */
  response: Sample;
  wire?: "envelope" | "json" | "text" | "html";
  /** Error bodies other than the envelope: RFC 6749 5.2 on the plain token endpoint, GraphQL's own. */
  errorStyle?: "oauth" | "graphql";
  /** Statuses beyond those implied by auth, body and path parameters. */
  extraErrors?: number[];
}

const TAGS = {
  "Access tokens": "Exchange client credentials for an access token (spec 4.1), and inspect it.",
  "Webhook configurations": "Where and how events are delivered; scoped to the access token's organization.",
  "Events and deliveries": "Publish events and follow (or re-send) each delivery.",
  GraphQL: "The same data and operations as REST, behind the same credentials.",
  "Operator: organizations and users": "Operator API; `Authorization: Bearer <ADMIN_TOKEN>`.",
  "Operator: API keys": "Operator API. The secret `api_key` is shown only in the creation response.",
  "Operator: client credentials": "Operator API. The `client_secret` is shown only in the creation response.",
  Service: "Unauthenticated service routes: liveness, OAuth discovery and this description.",
} as const;
export type TagName = keyof typeof TAGS;

// ---------------------------------------------------------------------------------------------
// Schemas that exist only for the description (no route validates them): shapes of responses
// that are built inline by their handlers, and the GraphQL-over-HTTP envelope.

const RotatedWebhookConfigurationView = CreatedWebhookConfigurationView.extend({ previous_secret_expires_at: Timestamp });

const AuthorizationServerMetadata = z.object({
  issuer: z.url(),
  token_endpoint: z.url(),
  grant_types_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
});

const OpenApiDocumentShape = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

const GraphQLRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().nullable().optional(),
});

const GraphQLResponse = z.object({
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

/** Named request schemas (`io: "input"`), published under components.schemas. */
const INPUTS = {
  TokenRequest,
  CreateOrganizationInput,
  CreateUserInput,
  CreateApiKeyInput,
  UpdateApiKeyInput,
  CreateClientCredentialInput,
  CreateWebhookConfigurationInput,
  UpdateWebhookConfigurationInput,
  PublishEventInput,
  GraphQLRequest,
} satisfies Record<string, z.ZodType>;

/** Named response schemas (`io: "output"`). */
const OUTPUTS = {
  TokenData,
  PlainTokenResponse,
  PlainTokenError,
  MeView,
  OrganizationView,
  UserView,
  ApiKeyView,
  ApiKeyWithUsageView,
  CreatedApiKeyView,
  ClientCredentialView,
  CreatedClientCredentialView,
  WebhookConfigurationView,
  CreatedWebhookConfigurationView,
  RotatedWebhookConfigurationView,
  PublishedEventView,
  DeliveryView,
  AuthorizationServerMetadata,
  GraphQLResponse,
} satisfies Record<string, z.ZodType>;

// ---------------------------------------------------------------------------------------------
// Examples. Typed against the schemas' input or output types, and parsed by the test.

const input = <S extends z.ZodType>(schema: S, example: z.input<S>): Sample => ({ schema, example });
const output = <S extends z.ZodType>(schema: S, example: z.output<S>): Sample => ({ schema, example });

export const EXAMPLE_ORIGIN = "https://keyway.example.com";
const T0 = "2026-06-01T12:00:00.000Z";
const T1 = "2026-06-01T12:00:05.000Z";
const ORG_ID = "org_yq6ymtqw52bpp8tnd8jmw91r06";
const USER_ID = "usr_g5ammfmmz6vkahde7tp71hp0ht";
const KEY_ID = "key_pmeknbx79htar7eqv3rajdcz8s";
const CLIENT_ID = "kw_client_8vYosraje_sknw5qe9bqOQ";
const CONFIG_ID = "whk_xevbgd907xwyy2z907sxd2vm7b";
const EVENT_ID = "evt_50vvhbyxb086rgxkmsp0wjsmfa";
const DELIVERY_ID = "msg_age6xqxzvpe76kqhjkas8kqhe0";
const ACCESS_TOKEN = "kw_at_k1.eyJ2IjoxLCJvcmciOiJvcmdfeXE2eW10cXc1MmJwcDh0bmQ4am13OTFyMDYifQ.Jm0lq3cOTEqYv1p6Xn0aQ2d8kV4sH7bZ9yR5tW1uE3g";

const ORG = { id: ORG_ID, name: "Acme", created_at: T0 };
const USER = { id: USER_ID, organization_id: ORG_ID, name: "Ada", email: "ada@acme.example", created_at: T0 };
const API_KEY = {
  id: KEY_ID,
  organization_id: ORG_ID,
  name: "laptop",
  hint: "kw_live_ak_...WQEE",
  limits: { per_second: 1, per_day: 1000 },
  limit_overrides: { per_second: false, per_day: false },
  status: "active" as const,
  created_at: T0,
  revoked_at: null,
};
const window = (limit: number, used: number, resets_at: string) => ({ limit, used, remaining: limit - used, resets_at });
const CREDENTIAL = {
  client_id: CLIENT_ID,
  organization_id: ORG_ID,
  user_id: USER_ID,
  name: "laptop",
  status: "active" as const,
  created_at: T0,
  last_used_at: null,
  revoked_at: null,
};
const TOKEN = { access_token: ACCESS_TOKEN, token_type: "Bearer" as const, expires_in: 3600, refresh_token: null };
const TOKEN_REQUEST = {
  grant_type: "client_credentials",
  client_id: CLIENT_ID,
  client_secret: "kw_live_cs_f15X1kPlpd3PtegbO4l9FuH0J4pX5cf68ST8mP-0VDE",
};
const WEBHOOK_INPUT = {
  url: "https://receiver.example.com/webhooks",
  events: ["order.created", "order.paid"],
  description: "Order updates",
  oauth: { token_url: "https://receiver.example.com/oauth/token", client_id: "keyway", client_secret: "receiver-client-secret" },
};
const CONFIG = {
  id: CONFIG_ID,
  organization_id: ORG_ID,
  url: WEBHOOK_INPUT.url,
  events: WEBHOOK_INPUT.events,
  description: WEBHOOK_INPUT.description,
  oauth: { token_url: WEBHOOK_INPUT.oauth.token_url, client_id: WEBHOOK_INPUT.oauth.client_id },
  token_cache: false,
  status: "active" as const,
  disabled_reason: null,
  signing_secret_rotated_at: T0,
  created_at: T0,
  updated_at: T0,
};
const SIGNING_SECRET = "whsec_sZ/yq9wk7vLLlqLSuaSK3/YS8duu8IZDDhGP0Q9gc8Q=";
const PUBLISHED = {
  id: EVENT_ID,
  type: "order.created",
  created_at: T0,
  deliveries: [{ id: DELIVERY_ID, webhook_configuration_id: CONFIG_ID, status: "pending" as const }],
};
const DELIVERY = {
  id: DELIVERY_ID,
  organization_id: ORG_ID,
  webhook_configuration_id: CONFIG_ID,
  event_id: EVENT_ID,
  event_type: "order.created",
  status: "delivered" as const,
  attempts: [
    { number: 1, at: T1, step: "webhook" as const, http_status: 200, latency_ms: 182, outcome: "delivered" as const, error: null },
  ],
  next_attempt_at: null,
  created_at: T0,
  updated_at: T1,
};
const FAILED_DELIVERY_RETRIED = { ...DELIVERY, status: "pending" as const, updated_at: T1 };

/** Path parameters by name; `{id}` means a webhook configuration except under /v1/deliveries. */
const PATH_PARAMS: Record<string, { description: string; example: string }> = {
  org: { description: "Organization id (`org_...`).", example: ORG_ID },
  user: { description: "User id (`usr_...`).", example: USER_ID },
  key: { description: "API key id (`key_...`), not the secret.", example: KEY_ID },
  client: { description: "Client id (`kw_client_...`).", example: CLIENT_ID },
  id: { description: "Webhook configuration id (`whk_...`).", example: CONFIG_ID },
};
const DELIVERY_PARAM = { description: "Delivery id (`msg_...`), also the `webhook-id` the receiver sees.", example: DELIVERY_ID };

function pathParam(path: string, name: string): { description: string; example: string } {
  const param = name === "id" && path.startsWith("/v1/deliveries/") ? DELIVERY_PARAM : PATH_PARAMS[name];
  // A route with a new parameter name must describe it here; the test builds the document.
  if (param === undefined) throw new Error(`openapi: no description for path parameter {${name}} of ${path}`);
  return param;
}

export const pathParamNames = (path: string): string[] => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? "");

/** The path with every parameter replaced by its example, as it appears in `_links.self`. */
export const examplePath = (path: string): string => path.replace(/\{(\w+)\}/g, (_, name: string) => pathParam(path, name).example);

// ---------------------------------------------------------------------------------------------
// The registry: every operation the router serves (HEAD follows GET and is not listed).

const ORGS = "/admin/v1/organizations";
const ORG_PATH = `${ORGS}/{org}`;
const KEYS = `${ORG_PATH}/api-keys`;
const USERS = `${ORG_PATH}/users`;
const CREDENTIALS = `${USERS}/{user}/client-credentials`;
const CONFIGS = "/v1/webhook-configurations";
const CONFIG_PATH = `${CONFIGS}/{id}`;

let registry: readonly Operation[] | undefined;

export function operations(): readonly Operation[] {
  registry ??= [
    // Access tokens
    {
      method: "POST",
      path: "/v1/oauth",
      operationId: "issueAccessToken",
      summary: "Exchange client credentials for an access token",
      description:
        "Spec 4.1. JSON or form body; the client authenticates with `client_id` and `client_secret` in the body or with HTTP Basic (not both). The credential must belong to the API key's organization.",
      tag: "Access tokens",
      auth: "apiKey",
      body: { ...input(TokenRequest, TOKEN_REQUEST), form: true },
      status: 200,
      response: output(TokenData, TOKEN),
    },
    {
      method: "POST",
      path: "/v1/oauth/token",
      operationId: "issueAccessTokenPlain",
      summary: "Token endpoint with plain RFC 6749 bodies",
      description:
        "The same grant as `POST /v1/oauth` for off-the-shelf OAuth clients: the answer is the RFC 6749 5.1 body, errors the RFC 6749 5.2 body, no envelope. Advertised by `/.well-known/oauth-authorization-server`.",
      tag: "Access tokens",
      auth: "apiKey",
      body: { ...input(TokenRequest, TOKEN_REQUEST), form: true },
      status: 200,
      response: output(PlainTokenResponse, { access_token: ACCESS_TOKEN, token_type: "Bearer", expires_in: 3600 }),
      wire: "json",
      errorStyle: "oauth",
    },
    {
      method: "GET",
      path: "/v1/me",
      operationId: "getMe",
      summary: "Who the access token speaks for",
      tag: "Access tokens",
      auth: "client",
      status: 200,
      response: output(MeView, {
        organization_id: ORG_ID,
        user_id: USER_ID,
        client_id: CLIENT_ID,
        api_key_id: KEY_ID,
        token: { id: "tok_qynxaqk1y3a0q5gpvhagb0tk3y", issued_at: T0, expires_at: "2026-06-01T13:00:00.000Z", expires_in: 3595 },
      }),
    },

    // Webhook configurations
    {
      method: "POST",
      path: CONFIGS,
      operationId: "createWebhookConfiguration",
      summary: "Create webhook configuration",
      description:
        "Spec 2.5. `url` and `oauth.token_url` must be public `https:` URLs. Without `events` the configuration receives every event type. The `signing_secret` is shown only here.",
      tag: "Webhook configurations",
      auth: "client",
      body: input(CreateWebhookConfigurationInput, WEBHOOK_INPUT),
      status: 201,
      response: output(CreatedWebhookConfigurationView, { ...CONFIG, signing_secret: SIGNING_SECRET }),
    },
    {
      method: "GET",
      path: CONFIGS,
      operationId: "listWebhookConfigurations",
      summary: "List webhook configurations",
      tag: "Webhook configurations",
      auth: "client",
      list: true,
      status: 200,
      response: output(z.array(WebhookConfigurationView), [CONFIG]),
    },
    {
      method: "GET",
      path: CONFIG_PATH,
      operationId: "getWebhookConfiguration",
      summary: "Get a webhook configuration",
      tag: "Webhook configurations",
      auth: "client",
      status: 200,
      response: output(WebhookConfigurationView, CONFIG),
    },
    {
      method: "PATCH",
      path: CONFIG_PATH,
      operationId: "updateWebhookConfiguration",
      summary: "Update a webhook configuration",
      description:
        'Absent fields are unchanged; `events: null` means every event; `status: "active"` re-enables a configuration disabled by a 410.',
      tag: "Webhook configurations",
      auth: "client",
      body: input(UpdateWebhookConfigurationInput, { events: null, status: "active" }),
      status: 200,
      response: output(WebhookConfigurationView, { ...CONFIG, events: null, updated_at: T1 }),
    },
    {
      method: "DELETE",
      path: CONFIG_PATH,
      operationId: "deleteWebhookConfiguration",
      summary: "Delete a webhook configuration",
      tag: "Webhook configurations",
      auth: "client",
      status: 200,
      response: output(WebhookConfigurationView, CONFIG),
    },
    {
      method: "POST",
      path: `${CONFIG_PATH}/rotate-signing-secret`,
      operationId: "rotateSigningSecret",
      summary: "Rotate the signing secret",
      description:
        "Returns the new `signing_secret` (shown only here); the previous one keeps signing, alongside, until `previous_secret_expires_at` (24 h).",
      tag: "Webhook configurations",
      auth: "client",
      status: 200,
      response: output(RotatedWebhookConfigurationView, {
        ...CONFIG,
        signing_secret_rotated_at: T1,
        signing_secret: "whsec_bvBOaXiiSVzOUVL2kfnOm8CybVW7mOaerWThG66xLx4=",
        previous_secret_expires_at: "2026-06-02T12:00:05.000Z",
      }),
    },
    {
      method: "POST",
      path: `${CONFIG_PATH}/test`,
      operationId: "sendTestEvent",
      summary: "Send a webhook.test event to this configuration",
      tag: "Webhook configurations",
      auth: "client",
      status: 202,
      response: output(PublishedEventView, { ...PUBLISHED, type: "webhook.test" }),
      extraErrors: [409],
    },
    {
      method: "GET",
      path: `${CONFIG_PATH}/deliveries`,
      operationId: "listDeliveries",
      summary: "List a configuration's deliveries, newest first",
      tag: "Events and deliveries",
      auth: "client",
      list: true,
      status: 200,
      response: output(z.array(DeliveryView), [DELIVERY]),
    },

    // Events and deliveries
    {
      method: "POST",
      path: "/v1/events",
      operationId: "publishEvent",
      summary: "Publish an event to every matching configuration",
      description:
        "The body may be at most 100 KiB serialized (413 otherwise). Answers with one pending delivery per matching active configuration.",
      tag: "Events and deliveries",
      auth: "client",
      body: input(PublishEventInput, { type: "order.created", data: { order_id: "1234", total: 42.5 } }),
      status: 202,
      response: output(PublishedEventView, PUBLISHED),
    },
    {
      method: "GET",
      path: "/v1/deliveries/{id}",
      operationId: "getDelivery",
      summary: "Get a delivery and its attempts",
      tag: "Events and deliveries",
      auth: "client",
      status: 200,
      response: output(DeliveryView, DELIVERY),
    },
    {
      method: "POST",
      path: "/v1/deliveries/{id}/retry",
      operationId: "retryDelivery",
      summary: "Re-send a failed delivery",
      description: "Only a `failed` delivery of an active configuration can be re-sent (409 otherwise); it keeps its `webhook-id`.",
      tag: "Events and deliveries",
      auth: "client",
      status: 202,
      response: output(DeliveryView, FAILED_DELIVERY_RETRIED),
      extraErrors: [409],
    },

    // GraphQL (src/http/routes/graphql.ts)
    {
      method: "POST",
      path: "/v1/graphql",
      operationId: "graphql",
      summary: "Run a GraphQL query or mutation",
      description:
        "GraphQL over HTTP with a JSON body. Execution results answer 200; request errors (syntax, validation, variables, size and depth limits) answer 400 with `errors`. Authorization errors are the 401 envelope, before any GraphQL work.",
      tag: "GraphQL",
      auth: "client",
      body: input(GraphQLRequest, { query: "{ viewer { organizationId token { expiresAt } } }" }),
      status: 200,
      response: output(GraphQLResponse, { data: { viewer: { organizationId: ORG_ID, token: { expiresAt: "2026-06-01T13:00:00.000Z" } } } }),
      wire: "json",
      errorStyle: "graphql",
    },
    {
      method: "GET",
      path: "/v1/graphql",
      operationId: "graphqlGet",
      summary: "Run a GraphQL query from the query string",
      description: "Queries only: a mutation sent with GET answers 405 with `Allow: POST`.",
      tag: "GraphQL",
      auth: "client",
      query: [
        {
          name: "query",
          description: "The GraphQL document.",
          schema: z.string(),
          required: true,
          example: "{ viewer { organizationId } }",
        },
        { name: "variables", description: "Variables, as a JSON-encoded object.", schema: z.string() },
        { name: "operationName", description: "Which operation of the document to run.", schema: z.string() },
      ],
      status: 200,
      response: output(GraphQLResponse, { data: { viewer: { organizationId: ORG_ID } } }),
      wire: "json",
      errorStyle: "graphql",
      extraErrors: [405],
    },

    // Operator: organizations and users
    {
      method: "POST",
      path: ORGS,
      operationId: "createOrganization",
      summary: "Create an organization",
      tag: "Operator: organizations and users",
      auth: "admin",
      body: input(CreateOrganizationInput, { name: "Acme" }),
      status: 201,
      response: output(OrganizationView, ORG),
    },
    {
      method: "GET",
      path: ORGS,
      operationId: "listOrganizations",
      summary: "List organizations",
      tag: "Operator: organizations and users",
      auth: "admin",
      list: true,
      status: 200,
      response: output(z.array(OrganizationView), [ORG]),
    },
    {
      method: "GET",
      path: ORG_PATH,
      operationId: "getOrganization",
      summary: "Get an organization",
      tag: "Operator: organizations and users",
      auth: "admin",
      status: 200,
      response: output(OrganizationView, ORG),
    },
    {
      method: "POST",
      path: USERS,
      operationId: "createUser",
      summary: "Create a user in an organization",
      tag: "Operator: organizations and users",
      auth: "admin",
      body: input(CreateUserInput, { name: "Ada", email: "ada@acme.example" }),
      status: 201,
      response: output(UserView, USER),
    },
    {
      method: "GET",
      path: USERS,
      operationId: "listUsers",
      summary: "List an organization's users",
      tag: "Operator: organizations and users",
      auth: "admin",
      list: true,
      status: 200,
      response: output(z.array(UserView), [USER]),
    },
    {
      method: "GET",
      path: `${USERS}/{user}`,
      operationId: "getUser",
      summary: "Get a user",
      tag: "Operator: organizations and users",
      auth: "admin",
      status: 200,
      response: output(UserView, USER),
    },
    {
      method: "DELETE",
      path: `${USERS}/{user}`,
      operationId: "removeUser",
      summary: "Remove a user, revoking every client credential they own first",
      tag: "Operator: organizations and users",
      auth: "admin",
      status: 200,
      response: output(UserView, USER),
    },
    {
      method: "POST",
      path: `${ORGS}/{org}/admin-tokens`,
      operationId: "mintOrgAdminToken",
      summary: "Mint a token that signs this organization's administrator into the manager app (shown once)",
      tag: "Operator: organizations and users",
      auth: "admin",
      body: input(MintOrgAdminTokenInput, { name: "Acme admin" }),
      status: 201,
      response: output(OrgAdminTokenView, {
        id: "oat_3f2a9c1d0e8b7a6f5e4d3c2b1a",
        organization_id: ORG_ID,
        name: "Acme admin",
        token: "kw_live_oa_Yk3vJ0pQz8rT1uWx5bN7mC2dF6gH9jK4lP0sR3tV8wZ",
        created_at: T0,
      }),
    },

    // Operator: API keys
    {
      method: "POST",
      path: KEYS,
      operationId: "createApiKey",
      summary: "Issue an API key",
      description: "Limits default to the service's vars; `api_key` is shown only here.",
      tag: "Operator: API keys",
      auth: "admin",
      body: { ...input(CreateApiKeyInput, { name: "laptop" }), optional: true },
      status: 201,
      response: output(CreatedApiKeyView, { ...API_KEY, api_key: "kw_live_ak_pZkKcQUSu60Tweq49nkDp36iTCUBlS7tiNksNt3WQEE" }),
    },
    {
      method: "GET",
      path: KEYS,
      operationId: "listApiKeys",
      summary: "List an organization's API keys",
      tag: "Operator: API keys",
      auth: "admin",
      list: true,
      status: 200,
      response: output(z.array(ApiKeyView), [API_KEY]),
    },
    {
      method: "GET",
      path: `${KEYS}/{key}`,
      operationId: "getApiKey",
      summary: "Get an API key with its current rate-limit usage",
      tag: "Operator: API keys",
      auth: "admin",
      status: 200,
      response: output(ApiKeyWithUsageView, {
        ...API_KEY,
        usage: { second: window(1, 0, "2026-06-01T12:00:01.000Z"), day: window(1000, 3, "2026-06-02T00:00:00.000Z") },
      }),
    },
    {
      method: "PATCH",
      path: `${KEYS}/{key}`,
      operationId: "updateApiKey",
      summary: "Rename an API key or change its limits",
      description: "A limit set to `null` returns to the default; absent fields are unchanged. Takes effect on the key's next request.",
      tag: "Operator: API keys",
      auth: "admin",
      body: input(UpdateApiKeyInput, { limits: { per_second: 5, per_day: null } }),
      status: 200,
      response: output(ApiKeyView, {
        ...API_KEY,
        limits: { per_second: 5, per_day: 1000 },
        limit_overrides: { per_second: true, per_day: false },
      }),
    },
    {
      method: "DELETE",
      path: `${KEYS}/{key}`,
      operationId: "revokeApiKey",
      summary: "Revoke an API key (idempotent)",
      tag: "Operator: API keys",
      auth: "admin",
      status: 200,
      response: output(ApiKeyView, { ...API_KEY, status: "revoked", revoked_at: T1 }),
    },

    // Operator: client credentials
    {
      method: "POST",
      path: CREDENTIALS,
      operationId: "createClientCredential",
      summary: "Issue a client credential to a user",
      description: "`client_secret` is shown only here.",
      tag: "Operator: client credentials",
      auth: "admin",
      body: { ...input(CreateClientCredentialInput, { name: "laptop" }), optional: true },
      status: 201,
      response: output(CreatedClientCredentialView, { ...CREDENTIAL, client_secret: TOKEN_REQUEST.client_secret }),
    },
    {
      method: "GET",
      path: CREDENTIALS,
      operationId: "listClientCredentials",
      summary: "List a user's client credentials",
      tag: "Operator: client credentials",
      auth: "admin",
      list: true,
      status: 200,
      response: output(z.array(ClientCredentialView), [CREDENTIAL]),
    },
    {
      method: "GET",
      path: `${CREDENTIALS}/{client}`,
      operationId: "getClientCredential",
      summary: "Get a client credential",
      tag: "Operator: client credentials",
      auth: "admin",
      status: 200,
      response: output(ClientCredentialView, CREDENTIAL),
    },
    {
      method: "DELETE",
      path: `${CREDENTIALS}/{client}`,
      operationId: "revokeClientCredential",
      summary: "Revoke a client credential (idempotent)",
      description: "Its access tokens stop working at once here and within about 60 s everywhere.",
      tag: "Operator: client credentials",
      auth: "admin",
      status: 200,
      response: output(ClientCredentialView, { ...CREDENTIAL, status: "revoked", revoked_at: T1 }),
    },

    // Service
    {
      method: "GET",
      path: "/healthz",
      operationId: "health",
      summary: "Liveness probe",
      tag: "Service",
      auth: "none",
      status: 200,
      response: output(z.literal("ok"), "ok"),
      wire: "text",
    },
    {
      method: "GET",
      path: "/.well-known/oauth-authorization-server",
      operationId: "getAuthorizationServerMetadata",
      summary: "OAuth authorization server metadata (RFC 8414)",
      tag: "Service",
      auth: "none",
      status: 200,
      response: output(AuthorizationServerMetadata, {
        issuer: EXAMPLE_ORIGIN,
        token_endpoint: `${EXAMPLE_ORIGIN}/v1/oauth/token`,
        grant_types_supported: ["client_credentials"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
        response_types_supported: [],
      }),
      wire: "json",
    },
    {
      method: "GET",
      path: "/v1/openapi.json",
      operationId: "getOpenApiDocument",
      summary: "This OpenAPI 3.1 document",
      description: "No credentials; cacheable for 5 minutes. `servers` names the origin it was fetched from.",
      tag: "Service",
      auth: "none",
      status: 200,
      response: output(OpenApiDocumentShape, { openapi: "3.1.0", info: { title: "keyway", version: "v1" }, paths: {} }),
      wire: "json",
    },
    {
      method: "GET",
      path: "/docs",
      operationId: "getDocs",
      summary: "Interactive API reference (this document, as HTML)",
      tag: "Service",
      auth: "none",
      status: 200,
      response: output(z.string(), "<!doctype html><title>keyway API reference</title>"),
      wire: "html",
    },
  ];
  return registry;
}

// ---------------------------------------------------------------------------------------------
// The document.

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
  in: "path" | "query";
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
  requestBody?: { required: boolean; content: Record<string, MediaTypeObject> };
  responses: Record<string, ResponseObject | Ref>;
}
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  servers?: { url: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Partial<Record<Lowercase<HttpMethod>, OperationObject>>>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, ParameterObject>;
    headers: Record<string, HeaderObject>;
    responses: Record<string, ResponseObject>;
    securitySchemes: Record<string, Record<string, string>>;
  };
}

/** When each error code is answered; a Record so that a new code must be described here. */
const ERROR_WHEN: Record<ErrorCode, string> = {
  invalid_request: "malformed JSON or form body, wrong field types, missing or unknown fields, bad query parameters",
  invalid_client: "unknown `client_id`, wrong secret, revoked credential, or a credential of another organization",
  unsupported_grant_type: "`grant_type` other than `client_credentials`",
  invalid_token:
    "missing, malformed, expired or revoked access token (or operator token), or one of another organization; with `WWW-Authenticate: Bearer`",
  invalid_api_key: "`x-api-key` missing, unknown or revoked",
  forbidden: "the credentials may not perform this operation",
  not_found: "unknown path, or a resource that does not exist or belongs to another organization",
  method_not_allowed: "the path does not take this method; `Allow` lists those it does",
  conflict: "re-sending a delivery that has not failed, or testing a disabled configuration",
  payload_too_large: "body over 16 KiB (events: 100 KiB)",
  unsupported_media_type: "Content-Type other than JSON (or form, on the token endpoints)",
  rate_limited: "a per-second or per-day limit of the API key is reached; see `Retry-After`",
  server_error: "a fault of ours, logged without request data",
  service_unavailable: "a secret is missing or malformed, or the rate limiter cannot be reached (`Retry-After: 1`)",
};

/** components.responses names of the error statuses the routes answer with. */
export const ERROR_RESPONSES: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  413: "PayloadTooLarge",
  415: "UnsupportedMediaType",
  429: "TooManyRequests",
  500: "ServerError",
  503: "ServiceUnavailable",
};

const codesFor = (status: number): ErrorCode[] =>
  (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status === status);

/** The error statuses an operation can answer with, from what it takes and who may call it. */
export function errorStatuses(op: Operation): number[] {
  if (op.auth === "none") return [];
  const statuses = new Set([401, 500, 503, ...(op.extraErrors ?? [])]);
  if (op.auth !== "admin") statuses.add(429);
  if (op.body || op.list || op.query) statuses.add(400);
  if (op.body) statuses.add(413).add(415);
  if (op.path.includes("{")) statuses.add(404);
  return [...statuses].sort((a, b) => a - b);
}

const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  none: [],
  apiKey: [{ apiKey: [] }],
  client: [{ apiKey: [], bearer: [] }],
  admin: [{ admin: [] }],
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

function envelopeExample(status: number, data: unknown, path: string, error?: ErrorCode, message?: string): unknown {
  const href = `${EXAMPLE_ORIGIN}${path}`;
  if (error === undefined) {
    return { response_status: status, developer_message: "Success", user_message: "Success", data, _links: { self: { href } } };
  }
  const user = ERROR_CODES[error].user;
  return { response_status: status, developer_message: message ?? user, user_message: user, data: null, error, _links: { self: { href } } };
}

let cached: OpenApiDocument | undefined;

/** The document, built on first use and kept for the isolate's life (it depends on no request). */
export function openApiDocument(): OpenApiDocument {
  cached ??= buildDocument();
  return cached;
}

function buildDocument(): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = {
    Envelope: toJsonSchema(Envelope(z.unknown()), "output"),
    ErrorEnvelope: {
      ...toJsonSchema(ErrorEnvelope, "output"),
      description: `The envelope of an error: \`data\` is null and \`error\` is one of ${(Object.keys(ERROR_CODES) as ErrorCode[]).map((c) => `\`${c}\``).join(", ")}.`,
    },
  };
  const names = new Map<z.ZodType, string>();
  for (const [io, group] of [
    ["input", INPUTS],
    ["output", OUTPUTS],
  ] as const) {
    for (const [name, schema] of Object.entries(group)) {
      schemas[name] = toJsonSchema(schema, io);
      names.set(schema, name);
    }
  }
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
  for (const op of operations()) {
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
      ].join("\n\n"),
    },
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
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
          description: "`Bearer` challenge (RFC 6750) when the access token is the problem.",
          schema: { type: "string" },
        },
        Location: { description: "Path of the created resource.", schema: { type: "string" } },
      },
      responses,
      securitySchemes: {
        apiKey: {
          type: "apiKey",
          in: "header",
          name: "x-api-key",
          description: "API key (`kw_live_ak_...`) issued by the operator; on every `/v1` request.",
        },
        bearer: { type: "http", scheme: "bearer", description: "Access token (`kw_at_...`) from `POST /v1/oauth`." },
        admin: { type: "http", scheme: "bearer", description: "The operator token `ADMIN_TOKEN`; `/admin/v1` only." },
      },
    },
  };
}

const rateLimitHeaderRefs: Record<string, Ref> = {
  RateLimit: { $ref: "#/components/headers/RateLimit" },
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
};

const STATUS_TEXT: Record<Operation["status"], string> = { 200: "OK", 201: "Created", 202: "Accepted" };
const MEDIA: Record<NonNullable<Operation["wire"]>, string> = {
  envelope: "application/json",
  json: "application/json",
  text: "text/plain",
  html: "text/html",
};

function operationObject(op: Operation, ref: (schema: z.ZodType, io: "input" | "output") => JsonSchema): OperationObject {
  const wire = op.wire ?? "envelope";
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

  const selfPath = examplePath(op.path);
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
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description !== undefined ? { description: op.description } : {}),
    tags: [op.tag],
    security: SECURITY[op.auth],
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

function errorResponse(op: Operation, status: number): ResponseObject | Ref {
  const name = ERROR_RESPONSES[status];
  if (name === undefined) throw new Error(`openapi: no error response for status ${status}`);
  const shared: Ref = { $ref: `#/components/responses/${name}` };
  if (op.errorStyle === "oauth") {
    const code = codesFor(status)[0] ?? "server_error";
    return {
      description: `RFC 6749 5.2 error body. ${codesFor(status)
        .map((c) => `\`${c}\``)
        .join(", ")}.`,
      content: {
        "application/json": {
          schema: schemaRef("PlainTokenError"),
          example: { error: code, error_description: ERROR_CODES[code].user },
        },
      },
    };
  }
  if (op.errorStyle === "graphql" && (status === 400 || status === 405)) {
    return {
      description:
        status === 400
          ? "A GraphQL request error (`errors`, each with `extensions.code`), or the error envelope when the body itself is unreadable."
          : "A mutation sent with GET; `Allow: POST`.",
      content: {
        "application/json": {
          schema: { anyOf: [schemaRef("GraphQLResponse"), schemaRef("ErrorEnvelope")] },
          example: { errors: [{ message: "Syntax Error: Expected Name, found <EOF>.", extensions: { code: "invalid_request" } }] },
        },
      },
    };
  }
  return shared;
}
