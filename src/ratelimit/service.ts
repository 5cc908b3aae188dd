/**
 * What the rest of the service asks of rate limiting: count a request (one Durable Object call,
 * never retried, so a request is never counted twice), read usage, set a key's overrides, and
 * render the IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers). If the object
 * cannot be reached the request fails closed with a 503; it is never let through uncounted.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { derived, IsolateCache } from "../lib/cache";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import type { ApiKeyUsage } from "../schemas/admin";
import type { ApiKeyRecord, LimitOverrides } from "../schemas/records";
import type { RateLimiter } from "./limiter";
import { type Decision, retryAfterSeconds, type WindowUsage } from "./windows";

/** Retry-After of the 503 answered when the limiter is unreachable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

// idFromName hashes the name on every call; the id of a key never changes, so each isolate
// derives it once per namespace binding.
const limiterIds = derived((_namespace: DurableObjectNamespace<RateLimiter>) => new IsolateCache<DurableObjectId>({ maxEntries: 10_000 }));

function limiterFor(deps: Deps, keyId: string): DurableObjectStub<RateLimiter> {
  const namespace = deps.rateLimiter;
  const ids = limiterIds(namespace);
  let id = ids.get(keyId);
  if (id === undefined) {
    id = namespace.idFromName(keyId);
    ids.set(keyId, id);
  }
  return namespace.get(id);
}

async function callLimiter<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    log.error(`rate limiter ${what} failed`, { detail: describeError(err) });
    throw new ApiError(
      "service_unavailable",
      `Rate limiting is temporarily unavailable, so the request was not processed. Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} s.`,
      { headers: { "Retry-After": String(UNAVAILABLE_RETRY_AFTER_SECONDS) } },
    );
  }
}

/**
 * Counts one request against the key's limits. Returns the decision when admitted; throws a
 * 429 rate_limited ApiError (with Retry-After and the RateLimit fields) when not.
 */
export async function countRequest(deps: Deps, apiKey: ApiKeyRecord): Promise<Decision> {
  const now = deps.now();
  const decision = await callLimiter("hit", () => limiterFor(deps, apiKey.id).hit(deps.config.defaultLimits, now));
  if (decision.allowed) return decision;
  const retryAfter = retryAfterSeconds(decision);
  const window = decision.exceeded === "day" ? decision.day : decision.second;
  const message =
    decision.exceeded === "day"
      ? `Daily limit exceeded: this API key allows ${window.limit} requests per UTC day.`
      : `Rate limit exceeded: this API key allows ${window.limit} request${window.limit === 1 ? "" : "s"} per second.`;
  throw new ApiError("rate_limited", `${message} The window resets at ${isoTime(window.resetAt)}; retry in ${retryAfter} s.`, {
    headers: { ...rateLimitHeaders(decision), "Retry-After": String(retryAfter) },
  });
}

export function keyUsage(deps: Deps, keyId: string): Promise<Decision> {
  const now = deps.now();
  return callLimiter("usage", () => limiterFor(deps, keyId).usage(deps.config.defaultLimits, now));
}

export function setKeyLimits(deps: Deps, keyId: string, overrides: LimitOverrides): Promise<void> {
  return callLimiter("setLimits", () => limiterFor(deps, keyId).setLimits(overrides));
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
