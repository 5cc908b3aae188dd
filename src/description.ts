/**
 * Entry point of the keyway-docs Worker (wrangler.docs.toml): the API description, built from the
 * route declarations (http/routes) by the OpenAPI generator (http/openapi.ts) and rendered as the
 * /docs page (http/docs-page.ts). It serves no HTTP of its own: the API Worker's two description
 * routes call these methods over the DOCS service binding (Workers RPC, same thread, no network
 * hop) and answer with their usual headers. It is a Worker of its own so that the generator, the
 * renderer and zod's JSON Schema code, about 11 KiB gzipped that no API request needs, stay out of
 * the bundle behind every API call (docs/performance.md). Being deployed apart, it meets API
 * Workers of the release before and after its own: its methods change only as docs/deploy.md,
 * "The companions' contract", says (test/companions-contract.test.ts).
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { renderDocsPage } from "./http/docs-page";
import { buildOpenApiDocument, type OpenApiDocument } from "./http/openapi";
import { ROUTES } from "./http/routes";
import { lazy } from "./lib/cache";

/** The OpenAPI document of ROUTES, built on first use and kept for the isolate's life. */
export const openApiDocument = lazy((): OpenApiDocument => buildOpenApiDocument(ROUTES));

/** The /docs page with a given CSP nonce (everything but the nonce is rendered once per isolate). */
export const docsPage = (nonce: string): string => renderDocsPage(openApiDocument(), nonce);

/** What the API Worker calls; `Service<Description>` types its DOCS binding. */
export class Description extends WorkerEntrypoint {
  /** The document without `servers`: the API Worker names its own configured origin. */
  openApiDocument(): OpenApiDocument {
    return openApiDocument();
  }

  docsPage(nonce: string): string {
    return docsPage(nonce);
  }
}

export default Description;
