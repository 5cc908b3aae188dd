/**
 * GraphQL root resolvers: thin adapters over the operations of graphql/backend.ts, which the API
 * Worker answers with the domain functions REST uses. Inputs are renamed to the REST (snake_case)
 * shape and validated there by the same zod schemas; outputs are the REST views with camelCase
 * keys. No rule lives here: if REST refuses something, so does GraphQL.
 */
import { type GraphQLBackend, type PageArgs, unwrapOutcome } from "./backend";

/** What the API Worker knows of the admitted request, in REST's shapes. */
export interface ViewerData {
  /** GET /v1/me's view of the access token. */
  me: Record<string, unknown>;
  /** The API key's rate-limit usage as its object reported when it admitted this request. */
  rate_limit: Record<string, unknown>;
}

export interface GraphQLContext {
  backend: GraphQLBackend;
  viewer: ViewerData;
}

type Args = Record<string, unknown>;

export const toCamel = (key: string) => key.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
const toSnake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Renames keys recursively (plain objects and arrays only). */
function renameKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => renameKeys(v, rename));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [rename(k), renameKeys(v, rename)]));
}

export const camelize = (value: unknown): unknown => renameKeys(value, toCamel);

function withoutNulls(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, withoutNulls(v)]),
  );
}

const page = (args: Args): PageArgs => ({ limit: args.first, ...(typeof args.after === "string" ? { cursor: args.after } : {}) });

function connection<T>(result: { items: T[]; next_cursor: string | null }, node: (item: T) => unknown = camelize) {
  return {
    nodes: result.items.map((item) => node(item)),
    pageInfo: { hasNextPage: result.next_cursor !== null, endCursor: result.next_cursor },
  };
}

const id = (args: Args, name = "id") => String(args[name]);

/**
 * The caller's JSON (event data, a JSON Schema, examples) as plain JSON: graphql-js builds the
 * objects of a literal without a prototype, which an RPC call cannot carry. Its keys are the
 * caller's own and are never renamed.
 */
const plainJson = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/**
 * An event type's input in REST's shape: its own fields renamed (all single words today, but a
 * field added later may not be), `schema` and `examples` passed through untouched, since a JSON
 * Schema's keywords (`additionalProperties`, `$ref`) and an example's keys are the caller's.
 */
function eventTypeInput(input: unknown): Record<string, unknown> {
  const fields = Object.entries((input ?? {}) as Args).map(([k, v]) => [toSnake(k), k === "schema" || k === "examples" ? plainJson(v) : v]);
  return Object.fromEntries(fields);
}

/**
 * A configuration's view in camelCase, its filters as written: a filter's keys are the caller's
 * (operators such as `$startsWith`, the event's own field names) and are never renamed.
 */
function camelConfig(view: unknown): unknown {
  if (typeof view !== "object" || view === null) return view;
  const { filter, receiver_filter: receiverFilter, ...rest } = view as Record<string, unknown>;
  return {
    ...(camelize(rest) as Record<string, unknown>),
    ...(filter !== undefined ? { filter } : {}),
    ...(receiverFilter !== undefined ? { receiverFilter } : {}),
  };
}

/** A configuration's input in REST's shape, its filters passed through untouched (and as plain JSON). */
function configInput(input: unknown): Record<string, unknown> {
  const { filter, receiverFilter, ...rest } = (input ?? {}) as Record<string, unknown>;
  return {
    ...(renameKeys(rest, toSnake) as Record<string, unknown>),
    ...(filter !== undefined ? { filter: plainJson(filter) } : {}),
    ...(receiverFilter !== undefined ? { receiver_filter: plainJson(receiverFilter) } : {}),
  };
}

/** An event type's view with its own fields in camelCase; `schema` and `examples` are the caller's JSON, as saved. */
const camelEventType = (view: object): Record<string, unknown> => Object.fromEntries(Object.entries(view).map(([k, v]) => [toCamel(k), v]));

/** The configuration and the record of a path below it (recoveries, portal sessions). */
const scoped = (args: Args) => [id(args, "webhookConfigurationId"), id(args)] as const;

export const rootValue = {
  // Known from the admitted request: no call at all.
  viewer: (_args: Args, ctx: GraphQLContext) => ({
    ...(camelize(ctx.viewer.me) as Record<string, unknown>),
    rateLimit: camelize(ctx.viewer.rate_limit),
  }),

  webhookConfigurations: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listWebhookConfigurations(page(args))), camelConfig),

  webhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelConfig(unwrapOutcome(await ctx.backend.getWebhookConfiguration(id(args)))),

  deliveries: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listDeliveries(id(args, "webhookConfigurationId"), page(args)))),

  delivery: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.getDelivery(id(args)))),

  createWebhookConfiguration: async (args: Args, ctx: GraphQLContext) => {
    // On create, an explicit null is the same as leaving a field out.
    const created = unwrapOutcome(await ctx.backend.createWebhookConfiguration(withoutNulls(configInput(args.input))));
    // pollingToken: a polling configuration's read token (issue 45), shown only here; an API Worker before it sends none.
    return {
      webhookConfiguration: camelConfig(created.config),
      signingSecret: created.signingSecret,
      pollingToken: created.pollingToken ?? null,
    };
  },

  updateWebhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelConfig(unwrapOutcome(await ctx.backend.updateWebhookConfiguration(id(args), configInput(args.input)))),

  deleteWebhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelConfig(unwrapOutcome(await ctx.backend.deleteWebhookConfiguration(id(args)))),

  rotateSigningSecret: async (args: Args, ctx: GraphQLContext) => {
    // A new scheme goes to the method of issue 45, which an API Worker before it lacks (the field
    // then fails and nothing rotates); without one, the method every API Worker has.
    const rotated = unwrapOutcome(
      await (args.signatureScheme == null
        ? ctx.backend.rotateSigningSecret(id(args))
        : ctx.backend.rotateSigningKey(id(args), { signature_scheme: args.signatureScheme })),
    );
    return {
      webhookConfiguration: camelConfig(rotated.config),
      signingSecret: rotated.signingSecret,
      previousSecretExpiresAt: rotated.previousExpiresAt,
    };
  },

  // Polling configurations' read token (issue 45).
  rotatePollingToken: async (args: Args, ctx: GraphQLContext) => {
    const rotated = unwrapOutcome(await ctx.backend.rotatePollingToken(id(args)));
    return { webhookConfiguration: camelConfig(rotated.config), token: rotated.token };
  },

  revokePollingToken: async (args: Args, ctx: GraphQLContext) => camelConfig(unwrapOutcome(await ctx.backend.revokePollingToken(id(args)))),

  publishEvent: async (args: Args, ctx: GraphQLContext) => {
    // `data` is the caller's JSON, passed through untouched (no key renaming); as plain JSON,
    // because graphql-js builds objects without a prototype, which an RPC call cannot carry.
    const idempotencyKey = typeof args.idempotencyKey === "string" ? args.idempotencyKey : undefined;
    const data = plainJson(args.data);
    const channels = Array.isArray(args.channels) ? { channels: args.channels as string[] } : {};
    return camelize(unwrapOutcome(await ctx.backend.publishEvent({ type: args.type, data, ...channels }, idempotencyKey)));
  },

  sendTestEvent: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.sendTestEvent(id(args)))),

  retryDelivery: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.retryDelivery(id(args)))),

  // The receivers' features (issue 30), over the same domain functions as REST's routes.

  eventTypes: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listEventTypes(page(args))), camelEventType),

  eventType: async (args: Args, ctx: GraphQLContext) => camelEventType(unwrapOutcome(await ctx.backend.getEventType(id(args, "name")))),

  createEventType: async (args: Args, ctx: GraphQLContext) =>
    // On create, an explicit null is the same as leaving a field out (as createWebhookConfiguration).
    camelEventType(unwrapOutcome(await ctx.backend.createEventType(withoutNulls(eventTypeInput(args.input))))),

  updateEventType: async (args: Args, ctx: GraphQLContext) =>
    camelEventType(unwrapOutcome(await ctx.backend.updateEventType(id(args, "name"), eventTypeInput(args.input)))),

  deleteEventType: async (args: Args, ctx: GraphQLContext) =>
    camelEventType(unwrapOutcome(await ctx.backend.deleteEventType(id(args, "name")))),

  webhookSettings: async (_args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.getWebhookSettings())),

  updateWebhookSettings: async (args: Args, ctx: GraphQLContext) =>
    camelize(unwrapOutcome(await ctx.backend.updateWebhookSettings(renameKeys(args.input, toSnake)))),

  recoverDeliveries: async (args: Args, ctx: GraphQLContext) => {
    // REST's body: `until` left out when not given (null included), so it defaults to now.
    const input = { since: args.since, ...(args.until != null ? { until: args.until } : {}) };
    return camelize(unwrapOutcome(await ctx.backend.recoverDeliveries(id(args, "webhookConfigurationId"), input)));
  },

  recovery: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.getRecovery(...scoped(args)))),

  recoveries: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listRecoveries(id(args, "webhookConfigurationId"), page(args)))),

  createPortalLink: async (args: Args, ctx: GraphQLContext) => {
    const input = args.expiresIn != null ? { expires_in: args.expiresIn } : {};
    return camelize(unwrapOutcome(await ctx.backend.createPortalLink(id(args, "webhookConfigurationId"), input)));
  },

  portalSessions: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listPortalSessions(id(args, "webhookConfigurationId"), page(args)))),

  endPortalSession: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.endPortalSession(...scoped(args)))),

  // Issue 31: the receiver's token endpoint.

  rotateAssertionKey: async (_args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.rotateAssertionKey())),

  testWebhookConnection: async (args: Args, ctx: GraphQLContext) =>
    camelize(unwrapOutcome(await ctx.backend.testWebhookConnection(id(args)))),
};
