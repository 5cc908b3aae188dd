/**
 * Every declared HTTP route, the API Worker's (http/routes/api.ts) and the people's Worker's
 * (http/routes/people.ts), and the API description built from them: the OpenAPI document that GET
 * /v1/openapi.json serves and GET /docs renders, which describes every route, those two included.
 * Only the people's Worker (src/people-worker.ts), the tests and the tools import this module; the
 * API Worker imports api.ts alone, so the generator and the pages stay out of its bundle. The
 * manager and the portal (http/manager, http/portal) are HTML applications with their own routers
 * and are not part of the API.
 */
import { lazy } from "../../lib/cache";
import { buildOpenApiDocument, type OpenApiDocument } from "../openapi";
import type { Route } from "../route";
import { API_ROUTES } from "./api";
import { peopleRoutes } from "./people";

/** The OpenAPI document of ROUTES, built on first use and kept for the isolate's life. */
export const openApiDocument = lazy((): OpenApiDocument => buildOpenApiDocument(ROUTES));

/** The people's Worker's declared routes: GET /, /docs, /explorer and the explorer's files. */
export const PEOPLE_ROUTES: readonly Route[] = peopleRoutes(openApiDocument);

const [root, ...pages] = PEOPLE_ROUTES;

/** Every route keyway serves over HTTP, apart from the manager and the portal: GET / first. */
export const ROUTES: readonly Route[] = [...(root ? [root] : []), ...API_ROUTES, ...pages];

export { API_ROUTES };
