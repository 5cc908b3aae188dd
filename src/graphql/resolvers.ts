/**
 * GraphQL root resolvers: thin adapters over the domain functions REST uses. Inputs are turned
 * into the REST (snake_case) shape and validated by the same zod schemas; outputs are the REST
 * views with camelCase keys. No rule lives here: if REST refuses something, so does GraphQL.
 */
import { meView, type Principal } from "../auth/tokens";
import type { Deps } from "../deps";
import { usageView } from "../ratelimit/service";
import type { Decision } from "../ratelimit/windows";
import type { Actor } from "../schemas/audit";
import { ListQuery } from "../schemas/common";
import { parseInput } from "../schemas/validate";
import { CreateWebhookConfigurationInput, PublishEventInput, UpdateWebhookConfigurationInput } from "../schemas/webhooks";
import {
  createWebhookConfiguration,
  deleteWebhookConfiguration,
  getWebhookConfiguration,
  listWebhookConfigurations,
  rotateSigningSecret,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../webhooks/configurations";
import { getDelivery, idempotencyKeyOf, listDeliveries, publishEvent, retryDelivery, sendTestEvent } from "../webhooks/deliveries";

export interface GraphQLContext {
  deps: Deps;
  principal: Principal;
  /** The API key's rate-limit usage as its object reported when it admitted this request. */
  usage: Decision;
  /** Who makes changes, for the audit log. */
  actor: Actor;
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

function page(args: Args): ListQuery {
  return parseInput(ListQuery, { limit: args.first, ...(typeof args.after === "string" ? { cursor: args.after } : {}) }, "arguments");
}

function connection(result: { items: unknown[]; next_cursor: string | null }) {
  return { nodes: result.items.map(camelize), pageInfo: { hasNextPage: result.next_cursor !== null, endCursor: result.next_cursor } };
}

const org = (ctx: GraphQLContext) => ctx.principal.organizationId;
const id = (args: Args, name = "id") => String(args[name]);

export const rootValue = {
  viewer: (_args: Args, ctx: GraphQLContext) => ({
    ...(camelize(meView(ctx.principal, ctx.deps.now())) as Record<string, unknown>),
    // The usage the key's object reported when it admitted this request: no further call.
    rateLimit: () => camelize(usageView(ctx.usage)),
  }),

  webhookConfigurations: async (args: Args, ctx: GraphQLContext) => {
    const result = await listWebhookConfigurations(ctx.deps, org(ctx), page(args));
    return connection({ ...result, items: result.items.map(webhookConfigurationView) });
  },

  webhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelize(webhookConfigurationView(await getWebhookConfiguration(ctx.deps, org(ctx), id(args)))),

  deliveries: async (args: Args, ctx: GraphQLContext) =>
    connection(await listDeliveries(ctx.deps, org(ctx), id(args, "webhookConfigurationId"), page(args))),

  delivery: async (args: Args, ctx: GraphQLContext) => camelize(await getDelivery(ctx.deps, org(ctx), id(args))),

  createWebhookConfiguration: async (args: Args, ctx: GraphQLContext) => {
    // On create, an explicit null is the same as leaving a field out.
    const input = parseInput(CreateWebhookConfigurationInput, withoutNulls(renameKeys(args.input, toSnake)));
    const { config, signingSecret } = await createWebhookConfiguration(ctx.deps, org(ctx), input, ctx.actor);
    return { webhookConfiguration: camelize(webhookConfigurationView(config)), signingSecret };
  },

  updateWebhookConfiguration: async (args: Args, ctx: GraphQLContext) => {
    const input = parseInput(UpdateWebhookConfigurationInput, renameKeys(args.input, toSnake));
    return camelize(webhookConfigurationView(await updateWebhookConfiguration(ctx.deps, org(ctx), id(args), input, ctx.actor)));
  },

  deleteWebhookConfiguration: async (args: Args, ctx: GraphQLContext) =>
    camelize(webhookConfigurationView(await deleteWebhookConfiguration(ctx.deps, org(ctx), id(args), ctx.actor))),

  rotateSigningSecret: async (args: Args, ctx: GraphQLContext) => {
    const { config, signingSecret, previousExpiresAt } = await rotateSigningSecret(ctx.deps, org(ctx), id(args), ctx.actor);
    return { webhookConfiguration: camelize(webhookConfigurationView(config)), signingSecret, previousSecretExpiresAt: previousExpiresAt };
  },

  publishEvent: async (args: Args, ctx: GraphQLContext) => {
    // `data` is the caller's JSON, passed through untouched (no key renaming).
    const input = parseInput(PublishEventInput, { type: args.type, data: args.data });
    const idempotencyKey = typeof args.idempotencyKey === "string" ? idempotencyKeyOf(args.idempotencyKey) : undefined;
    return camelize(await publishEvent(ctx.deps, org(ctx), input, ctx.actor, { idempotencyKey }));
  },

  sendTestEvent: async (args: Args, ctx: GraphQLContext) => camelize(await sendTestEvent(ctx.deps, org(ctx), id(args), ctx.actor)),

  retryDelivery: async (args: Args, ctx: GraphQLContext) => camelize(await retryDelivery(ctx.deps, org(ctx), id(args), ctx.actor)),
};
