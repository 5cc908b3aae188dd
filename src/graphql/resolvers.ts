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

function connection(result: { items: unknown[]; next_cursor: string | null }) {
  return { nodes: result.items.map(camelize), pageInfo: { hasNextPage: result.next_cursor !== null, endCursor: result.next_cursor } };
}

const id = (args: Args, name = "id") => String(args[name]);

export const rootValue = {
  // Known from the admitted request: no call at all.
  viewer: (_args: Args, ctx: GraphQLContext) => ({
    ...(camelize(ctx.viewer.me) as Record<string, unknown>),
    rateLimit: camelize(ctx.viewer.rate_limit),
  }),

  webhookConfigurations: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listWebhookConfigurations(page(args)))),

  webhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelize(unwrapOutcome(await ctx.backend.getWebhookConfiguration(id(args)))),

  deliveries: async (args: Args, ctx: GraphQLContext) =>
    connection(unwrapOutcome(await ctx.backend.listDeliveries(id(args, "webhookConfigurationId"), page(args)))),

  delivery: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.getDelivery(id(args)))),

  createWebhookConfiguration: async (args: Args, ctx: GraphQLContext) => {
    // On create, an explicit null is the same as leaving a field out.
    const created = unwrapOutcome(await ctx.backend.createWebhookConfiguration(withoutNulls(renameKeys(args.input, toSnake))));
    return { webhookConfiguration: camelize(created.config), signingSecret: created.signingSecret };
  },

  updateWebhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelize(unwrapOutcome(await ctx.backend.updateWebhookConfiguration(id(args), renameKeys(args.input, toSnake)))),

  deleteWebhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelize(unwrapOutcome(await ctx.backend.deleteWebhookConfiguration(id(args)))),

  rotateSigningSecret: async (args: Args, ctx: GraphQLContext) => {
    const rotated = unwrapOutcome(await ctx.backend.rotateSigningSecret(id(args)));
    return {
      webhookConfiguration: camelize(rotated.config),
      signingSecret: rotated.signingSecret,
      previousSecretExpiresAt: rotated.previousExpiresAt,
    };
  },

  publishEvent: async (args: Args, ctx: GraphQLContext) => {
    // `data` is the caller's JSON, passed through untouched (no key renaming); as plain JSON,
    // because graphql-js builds objects without a prototype, which an RPC call cannot carry.
    const idempotencyKey = typeof args.idempotencyKey === "string" ? args.idempotencyKey : undefined;
    const data: unknown = args.data === undefined ? undefined : JSON.parse(JSON.stringify(args.data));
    return camelize(unwrapOutcome(await ctx.backend.publishEvent({ type: args.type, data }, idempotencyKey)));
  },

  sendTestEvent: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.sendTestEvent(id(args)))),

  retryDelivery: async (args: Args, ctx: GraphQLContext) => camelize(unwrapOutcome(await ctx.backend.retryDelivery(id(args)))),
};
