/**
 * The event-type catalog as an OpenAPI 3.1.0 document (issue 30; product brief, "Webhook
 * receivers' way in"): its top-level `webhooks` (OpenAPI 3.1 4.8.1) has one `post` per event type,
 * the body being what keyway sends (webhooks/deliveries.ts `eventBody`: `{id, type, created_at,
 * data}`) with the type's schema as `data`, the Standard Webhooks headers, and the OAuth 2.0
 * client-credentials request keyway makes to the receiver's token URL before each webhook (RFC
 * 6749 4.4). keyway's own operational types are in every catalog, with their schemas from
 * schemas/operational.ts.
 * Pure: it builds a value; the route serves it.
 */

import { OPERATIONAL_SCHEMAS } from "../schemas/operational";
import type { EventTypeView } from "../schemas/receivers";
import { OPERATIONAL_EVENT_TYPES } from "../schemas/receivers";

const HEADERS = [
  {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "The delivery id (`msg_...`), the same on every attempt: deduplicate on it (Standard Webhooks).",
    schema: { type: "string" },
  },
  {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix seconds of this attempt; refuse one far from your clock (e.g. 5 minutes) to stop replays.",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description:
      "`v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64-decoded part of the configuration's `whsec_` secret; during a rotation one per live secret, space-separated (Standard Webhooks).",
    schema: { type: "string" },
  },
];

const AUTHORIZATION =
  "Each webhook carries `Authorization: Bearer <access_token>`, the token your OAuth server issued to keyway just before: keyway first POSTs `grant_type=client_credentials` (form-encoded, RFC 6749 4.4.2) with the configuration's client credentials to its `oauth.token_url` (or reuses a cached one with `token_cache`).";

const componentKey = (name: string): string => `${name}.data`;

/** An event schema moved to `#/components/schemas/<key>`: its local `$ref`s follow it. */
function relocate(schema: Record<string, unknown>, key: string): Record<string, unknown> {
  const base = `#/components/schemas/${key}`;
  const anchors = new Map<string, string>();
  const find = (v: unknown, at: string): void => {
    if (typeof v !== "object" || v === null) return;
    if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) find(x, `${at}/${i}`);
      return;
    }
    const o = v as Record<string, unknown>;
    if (typeof o.$anchor === "string") anchors.set(o.$anchor, at);
    for (const [k, x] of Object.entries(o)) if (!DATA_KEYWORDS.has(k)) find(x, `${at}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`);
  };
  find(schema, "");
  const rewrite = (v: unknown): unknown => {
    if (typeof v !== "object" || v === null) return v;
    if (Array.isArray(v)) return v.map(rewrite);
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      // $anchor is document-wide in OpenAPI 3.1 (the document is one resource): two types could
      // clash, so anchors become pointers; $schema is only allowed at a resource's root.
      if (k === "$anchor" || k === "$schema") continue;
      if (k === "$ref" && typeof x === "string" && x.startsWith("#")) {
        const anchored = x.startsWith("#/") || x === "#" ? x.slice(1) : anchors.get(x.slice(1));
        out[k] = anchored === undefined ? x : `${base}${anchored}`;
      } else out[k] = DATA_KEYWORDS.has(k) ? x : rewrite(x);
    }
    return out;
  };
  return rewrite(schema) as Record<string, unknown>;
}
/** Keywords whose values are data, not schemas: nothing in them is a reference. */
const DATA_KEYWORDS = new Set(["enum", "const", "examples", "default"]);

/** The catalog of an organization's event types (and keyway's operational ones) as OpenAPI 3.1.0. */
export function catalogDocument(
  org: { id: string; name?: string },
  types: EventTypeView[],
  base: { apiUrl: string },
): Record<string, unknown> {
  const who = org.name === undefined ? org.id : `${org.name} (${org.id})`;
  const all = new Map<
    string,
    { description: string | null; schema: Record<string, unknown> | null; examples: unknown[]; deprecated: boolean }
  >();
  for (const t of types) all.set(t.name, t);
  for (const name of OPERATIONAL_EVENT_TYPES) {
    const known = all.get(name);
    all.set(name, {
      description: known?.description ?? OPERATIONAL_SCHEMAS[name].description,
      schema: known?.schema ?? OPERATIONAL_SCHEMAS[name].schema,
      examples: known?.examples ?? [OPERATIONAL_SCHEMAS[name].example],
      deprecated: known?.deprecated ?? false,
    });
  }
  const schemas: Record<string, unknown> = {};
  const webhooks: Record<string, unknown> = {};
  for (const [name, t] of [...all].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    let data: Record<string, unknown> = {};
    if (t.schema !== null) {
      schemas[componentKey(name)] = relocate(t.schema, componentKey(name));
      data = { $ref: `#/components/schemas/${componentKey(name)}` };
    }
    const body = {
      type: "object",
      required: ["id", "type", "created_at", "data"],
      properties: {
        id: { type: "string", description: "Event id (`evt_...`)." },
        type: { const: name },
        created_at: { type: "string", format: "date-time" },
        data,
      },
    };
    const examples = Object.fromEntries(
      t.examples.map((ex, i) => [
        `example_${i + 1}`,
        { value: { id: "evt_example", type: name, created_at: "2025-01-01T00:00:00Z", data: ex } },
      ]),
    );
    webhooks[name] = {
      post: {
        operationId: `event_${name}`,
        summary: t.description ?? name,
        description: `${t.description ?? name}\n\n${AUTHORIZATION} The body is the exact bytes the signature covers: verify before parsing.`,
        ...(t.deprecated ? { deprecated: true } : {}),
        security: [{ receiverToken: [] }],
        parameters: HEADERS,
        requestBody: {
          required: true,
          content: { "application/json": { schema: body, ...(t.examples.length > 0 ? { examples } : {}) } },
        },
        responses: {
          "2XX": { description: "Delivered." },
          "410": { description: "The delivery fails and the configuration is disabled." },
          default: { description: "Retried by the schedule (a 429 or 503 with Retry-After pauses the endpoint)." },
        },
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: `${org.name ?? org.id}: webhook events`,
      version: "1",
      description: `The events ${who} publishes through keyway, as the webhooks your endpoint receives. ${AUTHORIZATION}`,
    },
    externalDocs: { description: "keyway API", url: base.apiUrl },
    webhooks,
    components: {
      schemas,
      securitySchemes: {
        receiverToken: {
          type: "oauth2",
          description: `${AUTHORIZATION} The token URL is the configuration's \`oauth.token_url\` (yours); the one below is a placeholder.`,
          flows: { clientCredentials: { tokenUrl: "https://receiver.example/oauth/token", scopes: {} } },
        },
      },
    },
  };
}
