/**
 * Entry point of the keyway-docs Worker (wrangler.docs.toml): the API description, built from the
 * route declarations (http/routes) by the OpenAPI generator (http/openapi.ts) and rendered as the
 * /docs page (http/docs-page.ts), and the GraphQL explorer (http/explorer-page.ts). It is reached
 * only through the API Worker: its description and explorer routes call these methods over the
 * DOCS service binding (Workers RPC, same thread, no network hop) and answer with their usual
 * headers, and the explorer's scripts and style sheet, static assets of this Worker, are fetched
 * through the same binding (`fetch`). It is a Worker of its own so that the generator, the
 * renderers and zod's JSON Schema code, which no API request needs, stay out of the bundle behind
 * every API call (docs/performance.md; `npm run check:deploy` prints each Worker's gzipped size,
 * and test/e2e/deploy.test.ts holds each to its budget). Being deployed apart, it meets API
 * Workers of the release before and after its own: its methods change only as docs/deploy.md,
 * "The companions' contract", says (test/companions-contract.test.ts).
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import { renderDocsPage } from "./http/docs-page";
import { renderExplorerPage } from "./http/explorer-page";
import { buildOpenApiDocument, type OpenApiDocument } from "./http/openapi";
import { ROUTES } from "./http/routes";
import { lazy } from "./lib/cache";

/** The OpenAPI document of ROUTES, built on first use and kept for the isolate's life. */
export const openApiDocument = lazy((): OpenApiDocument => buildOpenApiDocument(ROUTES));

/** The /docs page with a given CSP nonce (everything but the nonce is rendered once per isolate). */
export const docsPage = (nonce: string): string => renderDocsPage(openApiDocument(), nonce);

/**
 * This Worker's own bindings (wrangler.docs.toml). `wrangler types` describes the API Worker's,
 * so they are declared here. ASSETS is absent where the entrypoint runs inside another Worker
 * (the vitest projects, test/worker.ts).
 */
interface DocsEnv {
  ASSETS?: Fetcher;
}

/** What the API Worker calls; `Service<Description>` types its DOCS binding. */
export class Description extends WorkerEntrypoint<DocsEnv> {
  /** The explorer's static files (GET /explorer/assets/*, forwarded by the API Worker). */
  override fetch(request: Request): Promise<Response> | Response {
    const assets = this.env.ASSETS;
    if (assets === undefined) return new Response("The explorer's files are not served here.\n", { status: 404 });
    return assets.fetch(request);
  }

  /** The document without `servers`: the API Worker names its own configured origin. */
  openApiDocument(): OpenApiDocument {
    return openApiDocument();
  }

  docsPage(nonce: string): string {
    return docsPage(nonce);
  }

  /** The GraphQL explorer's page (GET /explorer) with a given CSP nonce. */
  explorerPage(nonce: string): string {
    return renderExplorerPage(nonce);
  }
}

export default Description;
