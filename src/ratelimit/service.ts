/**
 * How rate-limit decisions (windows.ts, made by each API key's object) are shown: the 429 with
 * its message and Retry-After, the IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-
 * headers) every counted response carries, and usage as the operator API and GraphQL show it.
 */
import { ApiError } from "../errors";
import { isoTime } from "../lib/time";
import type { ApiKeyUsage } from "../schemas/admin";
import { type Decision, retryAfterSeconds, type WindowUsage } from "./windows";

/** The 429 for a refused decision, naming the window and when it resets. */
export function rateLimited(decision: Decision): ApiError {
  const retryAfter = retryAfterSeconds(decision);
  const window = decision.exceeded === "day" ? decision.day : decision.second;
  const allows =
    decision.exceeded === "day"
      ? `Daily limit exceeded: this API key allows ${window.limit} requests per UTC day`
      : `Rate limit exceeded: this API key allows ${window.limit} request${window.limit === 1 ? "" : "s"} per second`;
  // A GraphQL request counts one request per mutation field: say so when that is what did not fit.
  const message =
    decision.cost > 1
      ? `${allows}, and this request's ${decision.cost} mutation fields count as ${decision.cost} requests, more than the ${window.remaining} left in the window${decision.cost > window.limit ? " (more than the window ever allows: split the request)" : ""}.`
      : `${allows}.`;
  return new ApiError("rate_limited", `${message} The window resets at ${isoTime(window.resetAt)}; retry in ${retryAfter} s.`, {
    headers: { ...rateLimitHeaders(decision), "Retry-After": String(retryAfter) },
  });
}

/** `RateLimit-Policy` and `RateLimit` for a decision; `t` is whole seconds to the window's end. */
export function rateLimitHeaders(decision: Decision): Record<string, string> {
  const t = (resetAt: number) => Math.max(1, Math.ceil((resetAt - decision.now) / 1000));
  const { second, day } = decision;
  return {
    "RateLimit-Policy": `"second";q=${second.limit};w=1, "day";q=${day.limit};w=86400`,
    RateLimit: `"second";r=${second.remaining};t=${t(second.resetAt)}, "day";r=${day.remaining};t=${t(day.resetAt)}`,
  };
}

/** Usage of both windows as the operator API, the manager app and GraphQL show it. */
export function usageView(decision: Decision): ApiKeyUsage {
  const view = (w: WindowUsage) => ({ limit: w.limit, used: w.used, remaining: w.remaining, resets_at: isoTime(w.resetAt) });
  return { second: view(decision.second), day: view(decision.day) };
}
