/**
 * Every route the API Worker serves: what machines call (/v1, /admin/v1, the OAuth metadata and
 * the health check). GET /v1/openapi.json is here and asks the people's Worker for the document
 * over the PEOPLE service binding, so the generator stays out of this Worker's bundle. The pages
 * for people (GET /, /docs, /explorer, the manager, the portal) are the people's Worker's
 * (src/people-worker.ts); http/routes/index.ts lists both for the API description.
 */
import * as z from "zod";
import { publicBaseUrl } from "../../config";
import { derived } from "../../lib/cache";
import { reach } from "../../objects/stubs";
import type { OpenApiDocument } from "../openapi";
import { type Route, rawRoute } from "../route";
import { adminRoutes } from "./admin";
import { eventTypeRoutes, receiverJwksRoutes } from "./event-types";
import { graphqlRoutes } from "./graphql";
import { meRoutes } from "./me";
import { oauthRoutes } from "./oauth";
import { pollingRoutes } from "./polling";
import { portalRoutes } from "./portal";
import { serviceRoutes } from "./service";
import { operatorMirror, operatorWebhookRoutes, webhookRoutes } from "./webhooks";

const OpenApiDocumentShape = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

const openApiRoute: Route = rawRoute({
  method: "GET",
  path: "/v1/openapi.json",
  operationId: "getOpenApiDocument",
  summary: "This OpenAPI 3.1 document",
  description: "No credentials; cacheable for 5 minutes. `servers` names the configured public origin (`PUBLIC_BASE_URL`), or `/`.",
  tag: "Service",
  auth: "none",
  response: { schema: OpenApiDocumentShape, example: { openapi: "3.1.0", info: { title: "keyway", version: "v1" }, paths: {} } },
  wire: "json",
  // A malformed PUBLIC_BASE_URL (config.ts), or the people's Worker cannot be reached.
  errors: [503],
  // The document is cacheable, so `servers` never echoes the Host a caller sent: it names the
  // configured public origin, or "/" (relative to wherever the document was fetched from).
  // (X-Content-Type-Options: nosniff is on every response already, app.ts.)
  reply: async (c) =>
    c.json({ ...(await describedApi(c.env)), servers: [{ url: publicBaseUrl(c.env).url ?? "/" }] }, 200, {
      "Cache-Control": "public, max-age=300",
    }),
});

/** The API Worker's routes, in the order the API description lists them after GET /. */
export const API_ROUTES: readonly Route[] = [
  ...serviceRoutes,
  openApiRoute,
  ...oauthRoutes,
  ...meRoutes,
  ...webhookRoutes,
  ...pollingRoutes,
  ...portalRoutes,
  ...eventTypeRoutes,
  ...receiverJwksRoutes,
  ...graphqlRoutes,
  ...adminRoutes,
  ...operatorWebhookRoutes,
  // The operator's mirrors of the event catalog, the webhook settings and portal links and
  // sessions, under /admin/v1/organizations/{org} (the CLI's event-types, webhook-settings and
  // webhooks portal-* commands), by the one mechanism that mirrors the webhook routes.
  ...operatorMirror(eventTypeRoutes),
  ...operatorMirror(portalRoutes),
];

const DESCRIPTION = "API description";

/** How long an isolate keeps the document: as long as its answer may be cached (Cache-Control). */
const DESCRIBED_TTL_MS = 300_000;

/**
 * The OpenAPI document from the people's Worker, kept per isolate for DESCRIBED_TTL_MS: the people's
 * Worker is deployed after the API Worker (scripts/deploy.mjs), so an isolate that asked during a
 * rollout may hold the previous release's document, and asks again within minutes. A failed call
 * is not kept, so the next request asks again. Kept per PEOPLE binding (one per isolate when
 * deployed), so a document is only ever served by the binding that answered it.
 */
const describedBy = derived((_people: Env["PEOPLE"]) => ({
  entry: undefined as { document: Promise<OpenApiDocument>; at: number } | undefined,
}));
function describedApi(env: Env): Promise<OpenApiDocument> {
  const described = describedBy(env.PEOPLE);
  const now = Date.now();
  if (described.entry === undefined || now - described.entry.at >= DESCRIBED_TTL_MS) {
    const asked = reach(DESCRIPTION, () => env.PEOPLE.openApiDocument());
    const entry = { document: asked, at: now };
    described.entry = entry;
    asked.catch(() => {
      if (described.entry === entry) described.entry = undefined;
    });
  }
  return described.entry.document;
}
