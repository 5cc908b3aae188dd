/**
 * The API description, built from the route declarations (http/routes): the OpenAPI document
 * (openapi.ts) and the /docs page rendered from it (docs-page.ts). Built at build time, not in the
 * Worker: `npm run build` (scripts/build-description.mjs) writes both into the Worker's static
 * assets (description-assets.ts), which keeps the generator and zod's JSON Schema code out of the
 * Worker's bundle. Tests build it here too, and compare it with what the Worker serves.
 */
import { lazy } from "../lib/cache";
import { DESCRIPTION_ASSETS } from "./description-assets";
import { renderDocsPage } from "./docs-page";
import { buildOpenApiDocument, type OpenApiDocument } from "./openapi";
import { ROUTES } from "./routes";

/** The OpenAPI document of ROUTES, without `servers` (the Worker adds the configured origin). */
export const openApiDocument = lazy((): OpenApiDocument => buildOpenApiDocument(ROUTES));

/** The /docs page with a given CSP nonce. */
export const docsPage = (nonce: string): string => renderDocsPage(openApiDocument(), nonce);

/** The files `npm run build` writes, by their path among the static assets. */
export function descriptionFiles(): Record<string, string> {
  return {
    [DESCRIPTION_ASSETS.openapi]: JSON.stringify(openApiDocument()),
    [DESCRIPTION_ASSETS.docs]: docsPage(DESCRIPTION_ASSETS.noncePlaceholder),
  };
}
