/**
 * The credential checks of every /v1 request, in one Durable Object call (auth/gate.ts): the API
 * key (spec 5.1), its rate limits (spec 8), and, except on the token endpoints, the access token
 * (spec 5.2, RFC 6750) with its credential's revocation. The token endpoints (router.ts passes
 * the paths of the routes declared `auth: "apiKey"`) are admitted by their handler, since their
 * admission names the client credential the body presents; only the key's presence is checked
 * here, before any body is read. Every answer to a counted request carries the RateLimit fields.
 */
import type { Context, MiddlewareHandler } from "hono";
import { type Admitted, API_KEY_HEADER, admit, presentedApiKey } from "../../auth/gate";
import { authenticateRequest, bearerVerifies } from "../../auth/tokens";
import { ApiError, withHeaders } from "../../errors";
import { rateLimitHeaders } from "../../ratelimit/service";
import { type AppEnv, keywayOrigin } from "../context";
import { setResponseHeaders } from "./headers";

/**
 * What a request counts as: a route's declared weight, a function reading the request (GraphQL,
 * run only for a well-formed key and a genuine token), or nothing (1).
 */
export type RequestCost = number | (() => Promise<number>) | undefined;

export function requireCredentials(
  tokenEndpoints: ReadonlySet<string>,
  /** How many requests this one counts as, when not one (router.ts: declared weights and costs). */
  costOf: (c: Context<AppEnv>) => RequestCost = () => undefined,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const deps = c.get("deps");
    const presented = c.req.header(API_KEY_HEADER);
    const onAdmitted = (admitted: Admitted) => c.set("admitted", admitted);
    try {
      if (tokenEndpoints.has(c.req.path)) {
        if (c.req.method === "POST") presentedApiKey(presented);
        else onAdmitted(await admit(deps, presented));
      } else {
        // A route that counts as more than one request (GraphQL mutations) says how many first,
        // reading its body only for a well-formed key and a genuine access token: anyone else is
        // refused as usual, having cost no parsing.
        let n = 1;
        const declared = costOf(c);
        if (typeof declared === "number") n = declared;
        else if (declared !== undefined) {
          presentedApiKey(presented);
          if (await bearerVerifies(deps, c.req.header("authorization"), keywayOrigin(c))) n = await declared();
        }
        const request = {
          authorization: c.req.header("authorization"),
          dpop: c.req.raw.headers.get("dpop"),
          method: c.req.method,
          url: c.req.url,
          issuer: keywayOrigin(c),
        };
        const principal = await authenticateRequest(deps, presented, request, onAdmitted, n);
        c.set("principal", principal);
        c.set("actor", { type: "api_client", id: principal.clientId, api_key_id: principal.apiKeyId });
      }
    } catch (err) {
      const admitted = c.get("admitted");
      throw err instanceof ApiError && admitted ? withHeaders(err, rateLimitHeaders(admitted.decision)) : err;
    }
    await next();
    const admitted = c.get("admitted");
    if (admitted) setResponseHeaders(c, rateLimitHeaders(admitted.decision));
  };
}
