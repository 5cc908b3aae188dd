/**
 * Builds the people's Worker's HTTP app (src/people-worker.ts): the declared pages (GET /, /docs,
 * /explorer and its files: http/routes/people.ts), the manager app (http/manager) and the receiver
 * portal (http/portal). The API Worker forwards these paths here (http/people-paths.ts) and
 * answers everything else itself (src/app.ts). As there, every request is observed once
 * (http/middleware/observe.ts) and every response carries `X-Content-Type-Options: nosniff`; the
 * manager and the portal keep their own sessions, HTML error pages and security headers.
 */
import type { Hono } from "hono";
import { type AppOptions, baseApp } from "./app";
import type { AppEnv } from "./http/context";
import { managerApp } from "./http/manager/routes";
import { provideDeps } from "./http/middleware/deps";
import { htmlSecurity } from "./http/middleware/html";
import { portalApp } from "./http/portal/routes";
import { mountRoutes } from "./http/router";
import { PEOPLE_ROUTES } from "./http/routes";

export function createPeopleApp(options: AppOptions = {}): Hono<AppEnv> {
  const now = options.now ?? Date.now;
  const app = baseApp();
  mountRoutes(app, PEOPLE_ROUTES, provideDeps(now), htmlSecurity);
  app.route("/", managerApp(now));
  app.route("/", portalApp(now));
  return app;
}
