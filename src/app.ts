/**
 * Builds the router. Order matters and reads top to bottom: public routes, then for /v1 the API
 * key (spec 5.1), its rate limits (spec 8) and, except on the token endpoints, the access token
 * (spec 5.2); for /admin/v1 the operator token. Errors and unknown routes map to the envelope in one place.
 */
import { Hono } from "hono";
import type { AppEnv } from "./http/context";
import { errorResponse, notFoundResponse } from "./http/errors";
import { managerApp } from "./http/manager/routes";
import { requireApiKey } from "./http/middleware/api-key";
import { requireAccessToken } from "./http/middleware/bearer";
import { provideDeps } from "./http/middleware/deps";
import { apiHeaders } from "./http/middleware/headers";
import { requireOperator } from "./http/middleware/operator";
import { rateLimit } from "./http/middleware/rate-limit";
import { admin } from "./http/routes/admin";
import { docs } from "./http/routes/docs";
import { graphql } from "./http/routes/graphql";
import { health } from "./http/routes/health";
import { me } from "./http/routes/me";
import { oauth, plainOAuthErrors } from "./http/routes/oauth";
import { webhooks } from "./http/routes/webhooks";
import { wellKnown } from "./http/routes/well-known";

export interface AppOptions {
  /** Clock in milliseconds; tests inject one to cross expiry and window edges. */
  now?: () => number;
}

export function createApp(options: AppOptions = {}): Hono<AppEnv> {
  const deps = provideDeps(options.now ?? Date.now);
  const app = new Hono<AppEnv>();
  app.onError((err, c) => errorResponse(c, err));
  app.notFound(notFoundResponse);

  app.route("/", health);
  app.route("/", wellKnown);
  // Registered ahead of the /v1 middleware, so the API description needs no credentials.
  app.route("/", docs);

  app.use("/v1/oauth/token", plainOAuthErrors);
  app.use("/v1/*", apiHeaders, deps, requireApiKey, rateLimit, requireAccessToken);
  app.route("/", oauth);
  app.route("/", me);
  app.route("/", webhooks);
  app.route("/", graphql);

  app.use("/admin/*", apiHeaders, deps, requireOperator);
  app.route("/", admin);

  // The manager app has its own sessions, HTML error pages and security headers.
  app.route("/", managerApp(options.now ?? Date.now));
  return app;
}
