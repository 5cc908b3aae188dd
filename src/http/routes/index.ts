/**
 * Every declared HTTP route, and the two that serve the API description built from them: GET
 * /v1/openapi.json (the OpenAPI document) and GET /docs (the reference page rendered from it),
 * declared here because they describe all the others, themselves included. The description is
 * generated at build time (http/description.ts, by `npm run build`) into the Worker's static
 * assets, so its generator and zod's JSON Schema code stay out of the Worker's bundle; these two
 * routes read it through the ASSETS binding and add what depends on the deployment or the response
 * (`servers`, the CSP nonce). The manager app (http/manager) is an HTML application with its own
 * router and is not part of the API.
 */
import * as z from "zod";
import { publicBaseUrl } from "../../config";
import { ApiError } from "../../errors";
import { derivedAsync } from "../../lib/cache";
import { DESCRIPTION_ASSETS } from "../description-assets";
import { NONCE, pageNonce } from "../middleware/html";
import { type Route, rawRoute } from "../route";
import { adminRoutes } from "./admin";
import { graphqlRoutes } from "./graphql";
import { meRoutes } from "./me";
import { oauthRoutes } from "./oauth";
import { serviceRoutes } from "./service";
import { webhookRoutes } from "./webhooks";

const OpenApiDocumentShape = z.looseObject({
  openapi: z.literal("3.1.0"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

const descriptionRoutes: Route[] = [
  rawRoute({
    method: "GET",
    path: "/v1/openapi.json",
    operationId: "getOpenApiDocument",
    summary: "This OpenAPI 3.1 document",
    description: "No credentials; cacheable for 5 minutes. `servers` names the configured public origin (`PUBLIC_BASE_URL`), or `/`.",
    tag: "Service",
    auth: "none",
    response: { schema: OpenApiDocumentShape, example: { openapi: "3.1.0", info: { title: "keyway", version: "v1" }, paths: {} } },
    wire: "json",
    // A malformed PUBLIC_BASE_URL (config.ts).
    errors: [503],
    // The document is cacheable, so `servers` never echoes the Host a caller sent: it names the
    // configured public origin, or "/" (relative to wherever the document was fetched from).
    reply: async (c) =>
      c.body(await openApiServed(c.env), 200, {
        "Content-Type": "application/json",
        "Cache-Control": "public, max-age=300",
        "X-Content-Type-Options": "nosniff",
      }),
  }),
  rawRoute({
    method: "GET",
    path: "/docs",
    operationId: "getDocs",
    summary: "Interactive API reference (this document, as HTML)",
    tag: "Service",
    auth: "none",
    response: { schema: z.string(), example: "<!doctype html><title>keyway API reference</title>" },
    wire: "html",
    // "Try it" may call this origin only; nothing else loads.
    csp: {
      defaultSrc: ["'none'"],
      scriptSrc: [NONCE],
      styleSrc: [NONCE],
      connectSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
    },
    reply: async (c) => c.html((await docsServed(c.env)).replaceAll(DESCRIPTION_ASSETS.noncePlaceholder, pageNonce(c))),
  }),
];

/** Every route the Worker serves over HTTP, apart from the manager app. */
export const ROUTES: readonly Route[] = [
  ...serviceRoutes,
  ...descriptionRoutes,
  ...oauthRoutes,
  ...meRoutes,
  ...webhookRoutes,
  ...graphqlRoutes,
  ...adminRoutes,
];

/** Reads a prebuilt description file; its absence is a deployment fault (503), named in the log. */
async function asset(env: Env, path: string): Promise<string> {
  const res = await env.ASSETS.fetch(new Request(`https://assets.invalid${path}`));
  if (!res.ok) {
    await res.body?.cancel();
    throw new ApiError("service_unavailable", "The API description is not available. Operators: see the logs.", {
      detail: `static asset ${path} answered ${res.status}: run \`npm run build\` before wrangler dev or deploy`,
    });
  }
  return res.text();
}

/**
 * The description as served, read once per isolate (the assets and PUBLIC_BASE_URL are fixed for a
 * deployment): the document with its `servers`, which name the configured public origin rather
 * than any Host a caller sent (the document is cacheable), and the page, its nonce still to fill.
 */
const openApiServed = derivedAsync(async (env: Env) => {
  const doc = JSON.parse(await asset(env, DESCRIPTION_ASSETS.openapi)) as Record<string, unknown>;
  return JSON.stringify({ ...doc, servers: [{ url: publicBaseUrl(env).url ?? "/" }] });
});
const docsServed = derivedAsync((env: Env) => asset(env, DESCRIPTION_ASSETS.docs));
