/**
 * Entry point of the people's Worker (wrangler.people.toml): every page a person opens, the
 * manager, the receiver portal, GET / (the page of links, and the same links as JSON), the /docs
 * reference and the GraphQL explorer with its files (src/people-app.ts), and the API description
 * the API Worker serves at GET /v1/openapi.json. It has no route or URL of its own: the API Worker
 * forwards people's paths here over its PEOPLE service binding (`fetch`, http/people-paths.ts) and
 * asks `openApiDocument()` over RPC (same thread, no network hop), so everyone keeps the URLs
 * they had. It reaches the systems of record through Durable Object bindings to the API Worker's
 * classes (`script_name`), KV and the same secrets. It is a Worker of its own so that the pages
 * (about a third of the former single bundle), the description's generator, the renderers and
 * GraphiQL's page stay out of the bundle behind every token request, and so that a change to a
 * page never redeploys the token endpoint (docs/performance.md; `npm run check:deploy` prints each
 * Worker's gzipped size, test/e2e/deploy.test.ts holds each to its budget). Deployed apart, it
 * meets API Workers (and objects) of the release before and after its own: what each side accepts
 * is docs/deploy.md, "The companions' contract" (test/companions-contract.test.ts).
 */
import { WorkerEntrypoint } from "cloudflare:workers";
import type { OpenApiDocument } from "./http/openapi";
import { openApiDocument } from "./http/routes";
import { createPeopleApp } from "./people-app";

const app = createPeopleApp();

/** What the API Worker calls; `Service<People>` types its PEOPLE binding. */
export class People extends WorkerEntrypoint<Env> {
  /** A request for a person's page, as the client sent it (the API Worker forwards it unchanged). */
  override fetch(request: Request): Promise<Response> {
    return Promise.resolve(app.fetch(request, this.env, this.ctx));
  }

  /** The document without `servers`: the API Worker names its own configured origin. */
  openApiDocument(): OpenApiDocument {
    return openApiDocument();
  }
}

export default People;
