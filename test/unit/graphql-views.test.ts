/**
 * The GraphQL schema against the zod views and inputs REST uses: every GraphQL type that mirrors
 * a REST shape has exactly that shape's fields (camelCase), with the same nullability, list-ness
 * and kind of scalar, recursively. Resolvers return the REST views (camelized), so a field added
 * to a view without its GraphQL twin, or the reverse, fails here rather than in a client. A
 * mutation that takes REST's body as arguments (recoverDeliveries, createPortalLink) has its
 * arguments compared with that body's schema.
 */
import {
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLInputObjectType,
  type GraphQLObjectType,
  type GraphQLType,
  getNamedType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
} from "graphql";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { toCamel } from "../../src/graphql/resolvers";
import { schema } from "../../src/graphql/schema";
import { ApiKeyUsage } from "../../src/schemas/admin";
import { MeView } from "../../src/schemas/oauth";
import {
  CreateEventTypeInput,
  CreatePortalLinkInput,
  EventTypeView,
  PortalLinkView,
  PortalSessionView,
  RecoverInput,
  RecoveryView,
  UpdateEventTypeInput,
  UpdateWebhookSettingsInput,
  WebhookSettingsView,
} from "../../src/schemas/receivers";
import {
  AssertionKeyRotationView,
  ConnectionTestView,
  CreateWebhookConfigurationInput,
  DeliveryAttempt,
  DeliveryView,
  PublishedEventView,
  RotateSigningSecretInput,
  UpdateWebhookConfigurationInput,
  WebhookConfigurationView,
} from "../../src/schemas/webhooks";

type Kind = "string" | "number" | "boolean" | "object" | "json";
interface Shape {
  nullable: boolean;
  list: boolean;
  kind: Kind;
  object?: z.ZodObject;
}

/** What a zod schema says of one field: may it be null (or absent), is it a list, of what. */
function zodShape(field: z.ZodType): Shape {
  let s: z.ZodType = field;
  let nullable = false;
  let list = false;
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: z.ZodType; element?: z.ZodType };
    if (def.type === "nullable" || def.type === "optional") nullable = true;
    if ((def.type === "nullable" || def.type === "optional" || def.type === "default") && def.innerType) s = def.innerType;
    else if (def.type === "array" && def.element) {
      list = true;
      s = def.element;
    } else break;
  }
  const type = (s._zod.def as { type: string }).type;
  const KINDS: Record<string, Kind> = {
    object: "object",
    number: "number",
    int: "number",
    boolean: "boolean",
    unknown: "json",
    string: "string",
    enum: "string",
    // A record of arbitrary keys (an event type's JSON Schema) has no GraphQL object type: it is JSON.
    record: "json",
  };
  const kind = KINDS[type];
  // A kind this comparison does not know (a union, a record, a literal) must be taught, not guessed.
  if (kind === undefined) throw new Error(`no GraphQL counterpart known for a zod ${type}`);
  return { nullable, list, kind, ...(s instanceof z.ZodObject ? { object: s } : {}) };
}

/** The same of a GraphQL field's type. */
function graphqlShape(type: GraphQLType): Shape & { named: GraphQLType } {
  const nullable = !isNonNullType(type);
  const inner = isNonNullType(type) ? type.ofType : type;
  const list = isListType(inner);
  const named = getNamedType(type);
  const scalar = named.name;
  const kind: Kind =
    isObjectType(named) || isInputObjectType(named)
      ? "object"
      : scalar === "Int" || scalar === "Float"
        ? "number"
        : scalar === "Boolean"
          ? "boolean"
          : scalar === "JSON"
            ? "json"
            : "string";
  return { nullable, list, kind, named };
}

/**
 * Field-by-field comparison; returns the differences. `extra` names GraphQL fields with no REST
 * counterpart (resolved separately), which must then be absent from the view.
 */
function compare(typeName: string, view: z.ZodObject, extra: string[] = [], path = typeName, out: string[] = []): string[] {
  const type = schema.getType(typeName) as GraphQLObjectType | GraphQLInputObjectType | undefined;
  if (type === undefined) return [...out, `${path}: no GraphQL type ${typeName}`];
  return compareFields(type.getFields() as Record<string, GraphQLField<unknown, unknown> | GraphQLInputField>, view, extra, path, out);
}

/**
 * The same for a mutation whose REST body is spread over its arguments (recoverDeliveries'
 * `since` and `until`): the arguments against the body's schema, `extra` naming those of the path.
 */
function compareArguments(mutation: string, input: z.ZodObject, extra: string[]): string[] {
  const field = schema.getMutationType()?.getFields()[mutation];
  if (field === undefined) return [`Mutation.${mutation}: no such field`];
  return compareFields(Object.fromEntries(field.args.map((arg) => [arg.name, arg])), input, extra, `Mutation.${mutation}`, []);
}

/**
 * Fields added to a view after the first recorded release that the view never has null: nullable
 * in GraphQL all the same, since an API Worker of the release before answers the view without
 * them (docs/deploy.md, "The companions' contract", rule 2), and a non-null field's error would
 * null the whole object around it.
 */
const ADDED_TO_A_VIEW = new Set([
  "WebhookConfiguration.oauth.authMethod",
  "WebhookConfiguration.oauth.dpop",
  "WebhookConfiguration.operations",
  // Issue 45's delivery; its other fields (signatureScheme, signingPublicKey, polling) are nullable in the view too.
  "WebhookConfiguration.delivery",
  "Viewer.token.format",
]);

function compareFields(
  fields: Record<string, { type: GraphQLType }>,
  view: z.ZodObject,
  extra: string[],
  path: string,
  out: string[],
): string[] {
  const viewFields = new Map(Object.entries(view.shape as Record<string, z.ZodType>).map(([k, v]) => [toCamel(k), v]));
  for (const name of Object.keys(fields)) {
    if (!viewFields.has(name) && !extra.includes(name)) out.push(`${path}.${name}: in GraphQL, not in the view`);
  }
  for (const [name, zodField] of viewFields) {
    const field = fields[name];
    if (field === undefined) {
      out.push(`${path}.${name}: in the view, not in GraphQL`);
      continue;
    }
    const z = zodShape(zodField);
    const g = graphqlShape(field.type);
    const added = ADDED_TO_A_VIEW.has(`${path}.${name}`);
    if (added && !g.nullable) out.push(`${path}.${name}: added to the view after the recorded release, so nullable in GraphQL`);
    for (const key of ["nullable", "list", "kind"] as const) {
      if (added && key === "nullable") continue;
      if (z[key] !== g[key]) out.push(`${path}.${name}: ${key} is ${z[key]} in the view, ${g[key]} in GraphQL`);
    }
    if (z.object && g.kind === "object") compare(g.named.toString(), z.object, [], `${path}.${name}`, out);
  }
  return out;
}

describe("the GraphQL schema matches the REST views", () => {
  it.each([
    ["WebhookConfiguration", WebhookConfigurationView],
    ["Delivery", DeliveryView],
    ["DeliveryAttempt", DeliveryAttempt],
    ["PublishedEvent", PublishedEventView],
    ["RateLimitUsage", ApiKeyUsage],
    ["CreateWebhookConfigurationInput", CreateWebhookConfigurationInput],
    ["UpdateWebhookConfigurationInput", UpdateWebhookConfigurationInput],
    ["EventType", EventTypeView],
    ["CreateEventTypeInput", CreateEventTypeInput],
    ["UpdateEventTypeInput", UpdateEventTypeInput],
    ["WebhookSettings", WebhookSettingsView],
    ["UpdateWebhookSettingsInput", UpdateWebhookSettingsInput],
    ["Recovery", RecoveryView],
    ["PortalLink", PortalLinkView],
    ["PortalSession", PortalSessionView],
    ["AssertionKeyRotation", AssertionKeyRotationView],
    ["ConnectionTest", ConnectionTestView],
  ] as const)("%s, field by field", (typeName, view) => {
    expect(compare(typeName, view as z.ZodObject)).toEqual([]);
  });

  it.each([
    ["recoverDeliveries", RecoverInput],
    ["createPortalLink", CreatePortalLinkInput],
  ] as const)("%s's arguments, with the configuration's id of REST's path, against REST's body", (mutation, input) => {
    expect(compareArguments(mutation, input as z.ZodObject, ["webhookConfigurationId"])).toEqual([]);
  });

  it("rotateSigningSecret's arguments, with the configuration's id of REST's path, against REST's optional body", () => {
    expect(compareArguments("rotateSigningSecret", RotateSigningSecretInput, ["id"])).toEqual([]);
  });

  it("Viewer, with rateLimit resolved from the rate limiter on demand", () => {
    expect(compare("Viewer", MeView, ["rateLimit"])).toEqual([]);
  });

  it("finds a difference when there is one", () => {
    const drifted = WebhookConfigurationView.extend({ retries: z.number().int() }).omit({ description: true });
    expect(compare("WebhookConfiguration", drifted)).toEqual([
      "WebhookConfiguration.description: in GraphQL, not in the view",
      "WebhookConfiguration.retries: in the view, not in GraphQL",
    ]);
    const nullability = WebhookConfigurationView.extend({ status: z.string().nullable(), url: z.string() });
    expect(compare("WebhookConfiguration", nullability)).toEqual([
      "WebhookConfiguration.url: nullable is false in the view, true in GraphQL",
      "WebhookConfiguration.status: nullable is true in the view, false in GraphQL",
    ]);
  });
});
