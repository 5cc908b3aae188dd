/**
 * How an HTTP route is declared, once: method, path, who may call it, the request schema, the
 * response view and its example, extra error statuses and the API-description text, together
 * with the handler (as unkey's route files do). The router (router.ts), the token-endpoint
 * exemption from the bearer check, the OpenAPI document (openapi.ts) and the authorization-matrix
 * test are all derived from these declarations. Handlers of enveloped routes return plain data,
 * which is parsed through the route's view schema before it is sent: unknown fields are dropped,
 * so a sealed or secret field cannot reach a response by being forgotten.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod";
import type { Page } from "../objects/sql";
import type { Scope } from "../schemas/scopes";
import type { AppEnv } from "./context";
import { created, respond, respondPage } from "./envelope";
import { DEFAULT_MAX_BODY_BYTES, jsonBody, listQuery } from "./input";
import type { Csp } from "./middleware/html";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

/**
 * Who may call: `none` is public; `apiKey` is the token endpoints (the API key, then client
 * credentials in the body or HTTP Basic); `client` is the API key plus an access token; `admin`
 * is the operator token.
 */
/** `polling`: a polling configuration's own read credential, checked by the route (issue 45), mounted ahead of the /v1 checks like `none`. */
export type Auth = "none" | "apiKey" | "client" | "admin" | "polling";

/** Groups of operations in the API description, with their descriptions. */
export const TAGS = {
  "Access tokens": "Exchange client credentials for an access token (spec 4.1), and inspect it.",
  "Webhook configurations": "Where and how events are delivered; scoped to the access token's organization.",
  "Events and deliveries": "Publish events and follow (or re-send) each delivery.",
  "Event types":
    "The organization's event catalog: each type's JSON Schema for `data` and examples, checked when a client publishes; served to receivers as an OpenAPI 3.1 `webhooks` document. Also the organization's webhook settings.",
  GraphQL: "The same data and operations as REST, behind the same credentials.",
  "Operator: organizations and users": "Operator API; `Authorization: Bearer <ADMIN_TOKEN>`.",
  "Operator: API keys": "Operator API. The secret `api_key` is shown only in the creation response.",
  "Operator: client credentials": "Operator API. The `client_secret` is shown only in the creation response.",
  "Operator: trusted issuers":
    "Operator API. Workload identity issuers whose JWTs authenticate the organization's `federated_jwt` credentials (docs/clients.md).",
  "Operator: webhooks":
    "Operator API: an organization's webhook configurations, deliveries, event types, webhook settings, recoveries and portal links and sessions, as its clients see them under /v1 (create, read, change, pause and resume, test, re-send, recover).",
  Service: "Unauthenticated service routes: liveness, OAuth discovery and this description.",
} as const;
export type TagName = keyof typeof TAGS;

export interface QueryParam {
  name: string;
  description: string;
  schema: z.ZodType;
  required?: boolean;
  example?: string;
}

/** What is on the wire: the spec 2.3 envelope, or a body of the route's own. */
export type Wire = "envelope" | "json" | "text" | "html";

/** A route as the router and the API description see it (types erased). */
export interface Route {
  method: HttpMethod;
  /** OpenAPI style, `{param}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: TagName;
  auth: Auth;
  /** The request body: its schema and an example. `optional`: an empty body counts as `{}`. */
  body?: { schema: z.ZodType; example: unknown; optional?: boolean; form?: boolean };
  /** A list endpoint: `limit` and `cursor` query parameters, `_links.next` for the next page. */
  list: boolean;
  query?: QueryParam[];
  status: 200 | 201 | 202;
  /** `data` of the envelope, or the whole body when `wire` says it is not enveloped. */
  response: { schema: z.ZodType; example: unknown };
  wire: Wire;
  /** Error bodies other than the envelope: RFC 6749 5.2 on the plain token endpoint, GraphQL's own. */
  errorStyle?: "oauth" | "graphql";
  /** Statuses beyond those implied by auth, body and path parameters. */
  errors?: number[];
  /** HTML pages only: their Content-Security-Policy (the router adds it with the other security headers). */
  csp?: Csp;
  /**
   * How many requests one call counts as against the API key's limits, when that is not one
   * (GraphQL: one per mutation field). Runs before admission; it may read the body and keep
   * what it read in the context for the handler.
   */
  cost?(c: Context<AppEnv>): Promise<number>;
  /**
   * How many requests one call of a /v1 route counts as against the API key's limits, its
   * organization's quota and its credits, when that is fixed (an expensive route may cost more
   * than a cheap one); 1 when absent. Listed in the API description (`x-keyway-cost`). A route
   * whose cost depends on the request (GraphQL) declares `cost` instead.
   */
  weight?: number;
  /**
   * The scope an access token needs for this route (auth: "client"; auth/scopes.ts); none: any
   * token will do (GET /v1/me, GraphQL, whose fields check their own).
   */
  scope?: Scope;
  serve(c: Context<AppEnv>): Promise<Response> | Response;
}

type C = Context<AppEnv>;
type Doc = Pick<
  Route,
  "method" | "path" | "operationId" | "summary" | "description" | "tag" | "auth" | "query" | "errors" | "scope" | "weight"
>;

/** A route answered in the envelope, its `data` the handler's result parsed through `response.schema`. */
export function envelopeRoute<B extends z.ZodType, R extends z.ZodType>(
  spec: EnvelopeDoc<R> & {
    /** A JSON body, validated before the handler runs. `optional`: an empty body counts as `{}`. */
    body: { schema: B; example: z.input<B>; optional?: boolean; maxBytes?: number };
    handle(c: C, body: z.output<B>): Promise<z.input<R>>;
  },
): Route;
export function envelopeRoute<R extends z.ZodType>(
  spec: EnvelopeDoc<R> & {
    /** `form`: a JSON or form body the handler reads itself (with HTTP Basic, RFC 6749 2.3.1). */
    body?: { schema: z.ZodType; example: unknown; form: true };
    handle(c: C): Promise<z.input<R>> | z.input<R>;
  },
): Route;
export function envelopeRoute(
  spec: EnvelopeDoc<z.ZodType> & {
    body?: { schema: z.ZodType; example: unknown; optional?: boolean; maxBytes?: number; form?: true };
    handle(c: C, body?: unknown): Promise<unknown> | unknown;
  },
): Route {
  const { handle, location, headers, body, prebuilt, ...doc } = spec;
  const status = spec.status ?? 200;
  const parsed = body !== undefined && body.form !== true ? body : undefined;
  return {
    ...doc,
    status,
    list: false,
    wire: "envelope",
    ...(body
      ? {
          body: {
            schema: body.schema,
            example: body.example,
            ...(body.optional ? { optional: true } : {}),
            ...(body.form ? { form: true } : {}),
          },
        }
      : {}),
    async serve(c) {
      const input = parsed ? await jsonBody(c, parsed.schema, parsed.maxBytes ?? DEFAULT_MAX_BODY_BYTES) : undefined;
      // A prebuilt view is answered as built (its test holds it equal to its parse); every other
      // is parsed, which also drops a key the view should not carry.
      const view = await handle(c, input);
      const data = prebuilt === true ? view : spec.response.schema.parse(view);
      // 201 for a created resource; 202 for a job accepted, whose progress is at Location.
      if (location) return created(c, data, location(data, c), status === 202 ? 202 : 201);
      return respond(c, data, { status: status as ContentfulStatusCode, ...(headers ? { headers } : {}) });
    },
  };
}

type EnvelopeDoc<R extends z.ZodType> = Doc & {
  status?: 200 | 201 | 202;
  response: { schema: R; example: z.output<R> };
  /** Headers every answer of the route carries (e.g. `Pragma: no-cache` on tokens). */
  headers?: Record<string, string>;
  /** For 201: where the created resource lives; for 202, where the accepted job's progress is read. */
  location?(data: z.output<R>, c: C): string;
  /**
   * The handler builds the view field by field, of a schema without transforms or defaults, so
   * the answer is not parsed per request: on the hot path (issue 33) that parse was a third of
   * keyway's own CPU for `GET /v1/me`. test/prebuilt-views.test.ts holds each such route's answers
   * equal to their parse (nothing missing, nothing extra, every type right).
   */
  prebuilt?: true;
};

/** A list endpoint: `limit`/`cursor` in, a page of items (each parsed through the item view) out. */
export function listRoute<R extends z.ZodType>(
  spec: Doc & {
    response: { schema: R; example: z.output<R>[] };
    handle(c: C, query: ReturnType<typeof listQuery>): Promise<Page<z.input<R>>>;
  },
): Route {
  const { handle, response, ...doc } = spec;
  const items = z.array(response.schema);
  return {
    ...doc,
    status: 200,
    list: true,
    wire: "envelope",
    response: { schema: items, example: response.example },
    async serve(c) {
      const page = await handle(c, listQuery(c));
      return respondPage(c, { items: items.parse(page.items), next_cursor: page.next_cursor });
    },
  };
}

/**
 * A route that builds its own response: a body that is not the envelope (the plain RFC 6749
 * token endpoint, GraphQL, the API description, /healthz), or one whose request needs its own
 * parsing (form bodies with HTTP Basic). `body` and `response` describe it for the API
 * description; what it sends is up to `reply`.
 */
export function rawRoute(
  spec: Doc & {
    status?: 200;
    wire: Wire;
    errorStyle?: "oauth" | "graphql";
    csp?: Csp;
    body?: { schema: z.ZodType; example: unknown; form?: boolean };
    response: { schema: z.ZodType; example: unknown };
    cost?(c: C): Promise<number>;
    reply(c: C): Promise<Response> | Response;
  },
): Route {
  const { reply, ...doc } = spec;
  return { ...doc, status: 200, list: false, serve: reply };
}

/** Value of a path parameter; the router only matches paths that have it. */
export const param = (c: C, name: string): string => c.req.param(name) ?? "";

/** The Hono path of a route: `{param}` becomes `:param`. */
export const honoPath = (path: string): string => path.replace(/\{(\w+)\}/g, ":$1");
