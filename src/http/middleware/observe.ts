/**
 * Observes every request once, outermost (app.ts mounts it ahead of everything else): it gives
 * the request an id (Cloudflare's `cf-ray` when it is one, else a fresh one), returned as
 * `x-request-id` and added to every line logged while the request is handled; then, once the
 * response is ready, it records the outcome (log.ts `recordRequest`: one log line and one
 * Analytics Engine data point). What it records is what the service decided, never what the
 * client sent: the matched route's template (never the path, whose segments are ids, or the
 * query), the status, the error code the response carries, and the API key and organization
 * the credentials named. Headers are never read but for `cf-ray`, and only a well-formed one.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { telemetrySettings } from "../../config";
import { ApiError } from "../../errors";
import { inRequestContext, type LogFields, recordRequest, requestOutcomeOf, setLogFormat } from "../../log";
import type { AppEnv } from "../context";
import { setResponseHeaders } from "./headers";

export const REQUEST_ID_HEADER = "x-request-id";
/** The route of a request no route matched (answered 404, or refused by a path-wide check first). */
export const UNMATCHED_ROUTE = "(unmatched)";

// A Ray ID: 16 hex digits, then the data center in the copy the Worker sees. Anything else
// (a client's own cf-ray in local runs) is not trusted into the logs.
const RAY_ID = /^[0-9a-f]{16}(-[A-Z]{3})?$/;
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export function observeRequests(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Latency is real elapsed time, so Date.now rather than the app's clock (tests inject one).
    const startedAt = Date.now();
    const ray = c.req.header("cf-ray");
    const requestId = ray !== undefined && RAY_ID.test(ray) ? ray : crypto.randomUUID();
    const settings = telemetrySettings(c.env);
    setLogFormat(settings.logFormat);
    // Hono's compose answers a throwing handler through app.onError inside this call, so it
    // returns with the response set, and `c.error` holds what was thrown.
    const logged: LogFields = { request_id: requestId };
    await inRequestContext(logged, next);
    if (!c.res.headers.has(REQUEST_ID_HEADER)) setResponseHeaders(c, { [REQUEST_ID_HEADER]: requestId });
    const status = c.res.status;
    const route = routeTemplate(c);
    recordRequest(
      c.env.METRICS,
      {
        requestId,
        method: METHODS.has(c.req.method) ? c.req.method : "OTHER",
        route,
        status,
        outcome: requestOutcomeOf(status),
        error: errorCode(c.error, status, route),
        latencyMs: Math.max(0, Date.now() - startedAt),
        // Named by the gate (auth/gate.ts) as soon as the key's object answered, admitted or not.
        apiKeyId: stringField(logged.api_key_id),
        organizationId: stringField(logged.organization_id),
      },
      settings.successSampleRate,
      Math.random,
      // Under `wrangler dev` (LOG_FORMAT=pretty, local only), the line rides on the dev proxy's
      // request line: miniflare appends this header's value to the line it logs for every request
      // anyway and takes the header off before the client sees it (its entry worker,
      // `X-Mf-Additional-Response-Log`); npm start shows that line as ours (scripts/dev-log.mjs).
      // One line per request instead of two: about 0.17 ms of local CPU less, none of production's.
      settings.logFormat === "pretty" ? (line) => setResponseHeaders(c, { [DEV_PROXY_LOG_HEADER]: line }) : undefined,
    );
  };
}

/** The header miniflare's dev proxy appends to its request line, and removes (local runs only). */
export const DEV_PROXY_LOG_HEADER = "X-Mf-Additional-Response-Log";

/**
 * The template of the route that answers: the first matched route that is not a path-wide
 * middleware (`*` patterns: this one, the /v1 and /admin checks, the manager's session). A
 * request refused by a check before its handler ran still names the route it asked for.
 */
function routeTemplate(c: Context<AppEnv>): string {
  for (const route of matchedRoutes(c)) if (!route.path.endsWith("*")) return route.path;
  return UNMATCHED_ROUTE;
}

/** The code of the error the response renders; the notFound handler's for an unmatched 404. */
function errorCode(err: Error | undefined, status: number, route: string): string | null {
  if (status < 400) return null;
  if (err instanceof ApiError) return err.code;
  if (err !== undefined) return "server_error";
  return status === 404 && route === UNMATCHED_ROUTE ? "not_found" : null;
}

/** What the gate added to the request's context (log.identifyRequest), when it is a string. */
function stringField(value: LogFields[string]): string | null {
  return typeof value === "string" ? value : null;
}
