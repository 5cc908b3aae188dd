/**
 * Unauthenticated service routes: GET / (where everything is: a page of links for a browser, the
 * same links as JSON for anything else), GET /healthz (liveness probe and the benchmark's floor;
 * no I/O on purpose), GET /.well-known/oauth-authorization-server (RFC 8414), which lets standard
 * OAuth clients discover the token endpoint, and the GraphQL explorer (GET /explorer and its
 * files), which the keyway-docs Worker renders and serves: these routes only forward to it over
 * the DOCS service binding, so GraphiQL and React stay out of this Worker's bundle. The
 * metadata's issuer is PUBLIC_BASE_URL when it is set (clients should discover from there) and
 * otherwise the origin it is served from: RFC 8414 section 3.3 requires the issuer to be the one
 * the client used for discovery.
 */
import * as z from "zod";
import { publicBaseUrl } from "../../config";
import { JWT_ALGS } from "../../lib/jwt";
import { reach } from "../../objects/stubs";
import { AuthorizationServerMetadata } from "../../schemas/oauth";
import { ALL_SCOPES } from "../../schemas/scopes";
import type { AppEnv } from "../context";
import { EXAMPLE_ORIGIN } from "../examples";
import { EXPLORER_ASSETS, EXPLORER_CSP } from "../explorer-page";
import { type Csp, htmlSecurity, NONCE, pageNonce } from "../middleware/html";
import { rootPage, SERVICE_LINKS, ServiceLinks, wantsHtml } from "../root-page";
import { type Route, rawRoute } from "../route";

const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"];

/** The page of links has no script; its one inline style carries the nonce. */
const ROOT_CSP: Csp = {
  defaultSrc: ["'none'"],
  styleSrc: [NONCE],
  baseUri: ["'none'"],
  formAction: ["'none'"],
  frameAncestors: ["'none'"],
};
const rootPageSecurity = htmlSecurity<AppEnv>(ROOT_CSP);

const EXPLORER = "GraphQL explorer";

export const serviceRoutes: Route[] = [
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
    path: "/healthz",
    operationId: "health",
    summary: "Liveness probe",
    tag: "Service",
    auth: "none",
    response: { schema: z.literal("ok"), example: "ok" },
    wire: "text",
    reply: (c) => c.text("ok"),
  }),
  rawRoute({
    method: "GET",
    path: "/.well-known/oauth-authorization-server",
    operationId: "getAuthorizationServerMetadata",
    summary: "OAuth authorization server metadata (RFC 8414)",
    tag: "Service",
    auth: "none",
    description:
      "Every endpoint it names needs `x-api-key`, like every /v1 request. The token, revocation and introspection endpoints take the same client authentication methods.",
    response: { schema: AuthorizationServerMetadata, example: metadataOf(EXAMPLE_ORIGIN) },
    wire: "json",
    // A malformed PUBLIC_BASE_URL (config.ts).
    errors: [503],
    reply: (c) => {
      const configured = publicBaseUrl(c.env).url;
      // Built from the request's Host when no origin is configured: a shared cache must not hand
      // one host's issuer to another host's clients (a cache keyed without Host would), so that
      // answer is not stored. With PUBLIC_BASE_URL (production requires it) it is one document.
      return c.json(metadataOf(configured ?? new URL(c.req.url).origin), 200, {
        "Cache-Control": configured === null ? "no-store" : "public, max-age=3600",
      });
    },
  }),
  rawRoute({
    method: "GET",
    path: "/explorer",
    operationId: "getGraphqlExplorer",
    summary: "GraphQL explorer (GraphiQL) for POST /v1/graphql",
    description:
      "A page to write and run GraphQL queries with your API key and an access token (its Headers tab). Served from npm packages by the description Worker; nothing loads from another origin.",
    tag: "Service",
    auth: "none",
    response: { schema: z.string(), example: "<!doctype html><title>keyway GraphQL explorer</title>" },
    wire: "html",
    csp: EXPLORER_CSP,
    // The description Worker cannot be reached, or (rolled back) does not have the explorer yet.
    errors: [503],
    reply: async (c) => c.html(await reach(EXPLORER, () => c.env.DOCS.explorerPage(pageNonce(c)))),
  }),
  rawRoute({
    method: "GET",
    path: `${EXPLORER_ASSETS}/{file}`,
    operationId: "getGraphqlExplorerFile",
    summary: "The GraphQL explorer's scripts and style sheet",
    description:
      "Files of the npm packages `graphiql`, `react` and `react-dom` (JavaScript or CSS, as the name says), static assets of the description Worker. Revalidate with `If-None-Match`.",
    tag: "Service",
    auth: "none",
    response: { schema: z.string(), example: "/* graphiql.min.css */" },
    wire: "text",
    errors: [404, 503],
    reply: async (c) => {
      // Only what a file request needs: the caller's cookies and credentials stay here.
      const conditional = c.req.header("If-None-Match");
      const asked = new Request(c.req.url, conditional === undefined ? {} : { headers: { "If-None-Match": conditional } });
      const res = await reach(EXPLORER, () => c.env.DOCS.fetch(asked));
      // A fresh Response: the service binding's has immutable headers, and the app adds its own.
      return new Response(res.body, res);
    },
  }),
];

/** RFC 8414 section 2, with RFC 9449's dpop_signing_alg_values_supported. */
function metadataOf(issuer: string): AuthorizationServerMetadata {
  return {
    issuer,
    token_endpoint: `${issuer}/v1/oauth/token`,
    grant_types_supported: ["client_credentials"],
    token_endpoint_auth_methods_supported: AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: JWT_ALGS,
    // RFC 8414 makes this field required; there is no authorization endpoint, hence none.
    response_types_supported: [],
    scopes_supported: [...ALL_SCOPES],
    dpop_signing_alg_values_supported: JWT_ALGS,
    revocation_endpoint: `${issuer}/v1/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: JWT_ALGS,
    introspection_endpoint: `${issuer}/v1/oauth/introspect`,
    introspection_endpoint_auth_methods_supported: AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: JWT_ALGS,
  };
}
