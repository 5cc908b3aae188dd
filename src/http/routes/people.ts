/**
 * The routes of the people's Worker (src/people-worker.ts) that are declared like the API's, so
 * that the API description lists them: GET / (where everything is: a page of links for a browser,
 * the same links as JSON for anything else), GET /docs (the reference page rendered from the API
 * description), GET /explorer (GraphiQL) and the explorer's files. The API Worker never imports
 * this module: it forwards these paths to the people's Worker (http/people-paths.ts), so the page
 * renderers, GraphiQL's page and the description's generator stay out of its bundle. The manager
 * and the portal are HTML applications with routers of their own (http/manager, http/portal).
 */
import * as z from "zod";
import type { AppEnv } from "../context";
import { renderDocsPage } from "../docs-page";
import { EXPLORER_ASSETS, EXPLORER_CSP, renderExplorerPage } from "../explorer-page";
import { type Csp, htmlSecurity, NONCE, pageNonce } from "../middleware/html";
import type { OpenApiDocument } from "../openapi";
import { rootPage, SERVICE_LINKS, ServiceLinks, wantsHtml } from "../root-page";
import { type Route, rawRoute } from "../route";

/**
 * The people's Worker's own binding (wrangler.people.toml); `wrangler types` describes the API
 * Worker's Env, so it is declared here.
 */
interface PeopleBindings {
  ASSETS?: Fetcher;
}

/** The page of links has no script; its one inline style carries the nonce. */
const ROOT_CSP: Csp = {
  defaultSrc: ["'none'"],
  styleSrc: [NONCE],
  baseUri: ["'none'"],
  formAction: ["'none'"],
  frameAncestors: ["'none'"],
};
const rootPageSecurity = htmlSecurity<AppEnv>(ROOT_CSP);

/**
 * The people's routes, `describe` giving the API description the /docs page renders (built from
 * every route, these included, by http/routes/index.ts: passed in, so no module imports itself).
 */
export function peopleRoutes(describe: () => OpenApiDocument): Route[] {
  return [
    rawRoute({
      method: "GET",
      path: "/",
      operationId: "getServiceIndex",
      summary: "Where everything is",
      description:
        "Links to the API reference, this description, the OAuth metadata, the manager, the GraphQL explorer and the health check, as paths on this origin. " +
        "A browser (`Accept` preferring `text/html`) gets them as an HTML page, under a strict Content-Security-Policy; any other client gets this JSON.",
      tag: "Service",
      auth: "none",
      response: { schema: ServiceLinks, example: SERVICE_LINKS },
      wire: "json",
      // The JSON is a declared route's; the page is the same links for people. The page gets the
      // HTML security headers here because the router gives them to HTML routes only (router.ts).
      reply: async (c) => {
        if (!wantsHtml(c.req.header("Accept"))) {
          return c.json(SERVICE_LINKS, 200, { "Cache-Control": "public, max-age=300", Vary: "Accept" });
        }
        await rootPageSecurity(c, async () => {
          c.res = c.html(rootPage(pageNonce(c)), 200, { Vary: "Accept" });
        });
        return c.res;
      },
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
      reply: (c) => c.html(renderDocsPage(describe(), pageNonce(c))),
    }),
    rawRoute({
      method: "GET",
      path: "/explorer",
      operationId: "getGraphqlExplorer",
      summary: "GraphQL explorer (GraphiQL) for POST /v1/graphql",
      description:
        "A page to write and run GraphQL queries with your API key and an access token (its Headers tab). Served from npm packages by the people's Worker; nothing loads from another origin.",
      tag: "Service",
      auth: "none",
      response: { schema: z.string(), example: "<!doctype html><title>keyway GraphQL explorer</title>" },
      wire: "html",
      csp: EXPLORER_CSP,
      reply: (c) => c.html(renderExplorerPage(pageNonce(c))),
    }),
    rawRoute({
      method: "GET",
      path: `${EXPLORER_ASSETS}/{file}`,
      operationId: "getGraphqlExplorerFile",
      summary: "The GraphQL explorer's scripts and style sheet",
      description:
        "Files of the npm packages `graphiql`, `react` and `react-dom` (JavaScript or CSS, as the name says), static assets of the people's Worker. Revalidate with `If-None-Match`.",
      tag: "Service",
      auth: "none",
      response: { schema: z.string(), example: "/* graphiql.min.css */" },
      wire: "text",
      errors: [404],
      reply: async (c) => {
        // The people's Worker's static assets (wrangler.people.toml, `[assets]`); absent where this
        // app runs inside another Worker (the vitest projects, test/worker.ts).
        const { ASSETS: assets } = c.env as PeopleBindings;
        if (assets === undefined) return c.text("The explorer's files are not served here.\n", 404);
        // Only what a file request needs: the caller's cookies and credentials stay here.
        const conditional = c.req.header("If-None-Match");
        const asked = new Request(c.req.url, conditional === undefined ? {} : { headers: { "If-None-Match": conditional } });
        const res = await assets.fetch(asked);
        // A fresh Response: the binding's has immutable headers, and the app adds its own.
        return new Response(res.body, res);
      },
    }),
  ];
}
