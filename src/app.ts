/**
 * Builds the API Worker's HTTP app: the declared API routes (http/routes/api.ts, mounted with their
 * credential checks by http/router.ts), what machines call. The pages for people (the manager, the
 * portal, GET /, /docs, /explorer) are the people's Worker's (src/people-app.ts), to which the
 * Worker's entry forwards them (src/index.ts). Errors and unknown routes map to the
 * envelope in one place (http/errors.ts). Every request, whichever part answers it, is observed
 * once (http/middleware/observe.ts: its id, its outcome line and data point), and every response
 * carries `X-Content-Type-Options: nosniff` (http/middleware/headers.ts `noSniff`).
 */
import type { Hono } from "hono";
import { HonoBase } from "hono/hono-base";
import { RegExpRouter } from "hono/router/reg-exp-router";
import type { AppEnv } from "./http/context";
import { errorResponse, notFoundResponse } from "./http/errors";
import { provideDeps } from "./http/middleware/deps";
import { noSniff } from "./http/middleware/headers";
import { observeRequests } from "./http/middleware/observe";
import { mountRoutes } from "./http/router";
import { API_ROUTES } from "./http/routes/api";

export interface AppOptions {
  /** Clock in milliseconds; tests inject one to cross expiry and window edges. */
  now?: () => number;
}

/**
 * What each of keyway's HTTP apps starts with, the API Worker's here and the people's Worker's
 * (people-app.ts): the router, the error and not-found answers, `nosniff` and observation.
 */
export function baseApp(): Hono<AppEnv> {
  // RegExpRouter: every route in one regular expression, built once per isolate, whose match is one
  // `exec` and a table lookup; the default (SmartRouter) had fallen back to TrieRouter, which walks
  // and allocates per request (issue 33: on this route table 2.0 to 2.3 µs a match against 0.06,
  // too little for the end-to-end bench to see). It takes no path segment that is both a literal and
  // a parameter (`/x/new` beside `/x/:id`) and refuses one when it is added, so such a route fails
  // every test instead of silently selecting the slower router.
  // HonoBase: Hono without its default router (SmartRouter, which brings TrieRouter), which this
  // app replaces anyway; the same class otherwise, about 2.4 KiB less in the bundle.
  const app: Hono<AppEnv> = new HonoBase<AppEnv>({ router: new RegExpRouter() });
  app.onError((err, c) => errorResponse(c, err));
  app.notFound(notFoundResponse);
  // Outermost, so that no answer goes without it: routes, the checks' refusals, 404s, 405s,
  // app.onError's pages, and an error thrown by observe itself.
  app.use("*", noSniff);
  // Next, so that it sees every answer (the checks' refusals, 404s, 405s) and its
  // request id is on every line logged on the way.
  app.use("*", observeRequests());
  return app;
}

export function createApp(options: AppOptions = {}): Hono<AppEnv> {
  const app = baseApp();
  // The API: every declared route, with the credential checks each declares (http/router.ts).
  mountRoutes(app, API_ROUTES, provideDeps(options.now ?? Date.now));
  return app;
}
