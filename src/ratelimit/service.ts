/**
 * How admission decisions (made by each API key's object: its windows, windows.ts; its
 * organization's shared quota, quota.ts; its credits, credits.ts) are shown: the 429 with its
 * message and Retry-After, the IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers)
 * every counted response carries, and usage as the operator API, GET /v1/me and GraphQL show it.
 */
import { ApiError } from "../errors";
import { isoTime } from "../lib/time";
import type { ApiKeyUsage } from "../schemas/admin";
import { QUOTA_UNITS, type QuotaUsage } from "./quota";
import { type Decision, retryAfterSeconds, type WindowUsage } from "./windows";

/** The 429 for a refused decision, naming what refused it and when that ends. */
export function rateLimited(decision: Decision): ApiError {
  const headers = rateLimitHeaders(decision);
  const costs = (remaining: number, limit: number) =>
    decision.cost > 1
      ? `, and this request counts as ${decision.cost} requests (a route's weight, or one per GraphQL mutation field), more than the ${remaining} left${decision.cost > limit ? " (more than the window ever allows: split the request)" : ""}`
      : "";
  if (decision.exceeded === "credits") {
    const credits = decision.credits;
    const left = credits?.remaining ?? 0;
    const refill =
      credits?.refill && credits.nextRefillAt !== null
        ? ` They are refilled to ${credits.refill.amount} at ${isoTime(credits.nextRefillAt)}.`
        : " An operator can top them up.";
    const retry = credits?.nextRefillAt ? Math.max(1, Math.ceil((credits.nextRefillAt - decision.now) / 1000)) : null;
    return new ApiError(
      "credits_exhausted",
      `This API key's credits are used up: ${left} left${decision.cost > 1 ? `, and this request costs ${decision.cost}` : ""}.${refill}`,
      { headers: { ...headers, ...(retry !== null ? { "Retry-After": String(retry) } : {}) } },
    );
  }
  if (decision.exceeded !== null && decision.exceeded in QUOTA_UNITS) {
    const w = decision.quota?.find((q) => q.name === decision.exceeded) as QuotaUsage;
    const unit = w.name === "org_second" ? "second" : `UTC ${QUOTA_UNITS[w.name]}`;
    const retryAfter = Math.max(1, Math.ceil((w.resetAt - decision.now) / 1000));
    return new ApiError(
      "rate_limited",
      `Your organization's shared quota is used up: it allows ${w.limit} request${w.limit === 1 ? "" : "s"} per ${unit} across all its API keys${costs(w.remaining, w.limit)}. The window resets at ${isoTime(w.resetAt)}; retry in ${retryAfter} s.`,
      { headers: { ...headers, "Retry-After": String(retryAfter) } },
    );
  }
  const retryAfter = retryAfterSeconds(decision);
  const window = decision.exceeded === "day" ? decision.day : decision.second;
  const allows =
    decision.exceeded === "day"
      ? `Daily limit exceeded: this API key allows ${window.limit} requests per UTC day`
      : `Rate limit exceeded: this API key allows ${window.limit} request${window.limit === 1 ? "" : "s"} per second`;
  return new ApiError(
    "rate_limited",
    `${allows}${costs(window.remaining, window.limit)}. The window resets at ${isoTime(window.resetAt)}; retry in ${retryAfter} s.`,
    { headers: { ...headers, "Retry-After": String(retryAfter) } },
  );
}

/** One policy of the RateLimit fields: its name, quota, window (s), what is left, and seconds to reset. */
interface Policy {
  name: string;
  q: number;
  w: number | null;
  r: number;
  t: number | null;
}

/** Every policy that applies to the request: the key's windows, its organization's quota, its credits. */
function policies(decision: Decision): Policy[] {
  const t = (resetAt: number) => Math.max(1, Math.ceil((resetAt - decision.now) / 1000));
  const out: Policy[] = [
    { name: "second", q: decision.second.limit, w: 1, r: decision.second.remaining, t: t(decision.second.resetAt) },
    { name: "day", q: decision.day.limit, w: 86_400, r: decision.day.remaining, t: t(decision.day.resetAt) },
  ];
  for (const q of decision.quota ?? []) {
    out.push({ name: q.name.replace("_", "-"), q: q.limit, w: q.windowSeconds, r: q.remaining, t: t(q.resetAt) });
  }
  const c = decision.credits;
  if (c) {
    const refill = c.refill;
    out.push({
      name: "credits",
      q: refill ? refill.amount : c.remaining,
      w: refill ? (refill.interval === "day" ? 86_400 : 30 * 86_400) : null,
      r: c.remaining,
      t: c.nextRefillAt !== null ? t(c.nextRefillAt) : null,
    });
  }
  return out;
}

/**
 * `RateLimit-Policy` lists every policy that applies; `RateLimit` names the one closest to
 * refusing (the least left; on a tie the one listed last, the longer-lasting), with what is left
 * and the seconds until it resets (`t`, absent for credits that are never refilled).
 */
export function rateLimitHeaders(decision: Decision): Record<string, string> {
  const all = policies(decision);
  const closest = all.reduce((a, b) => (b.r <= a.r ? b : a));
  return {
    "RateLimit-Policy": all.map((p) => `"${p.name}";q=${p.q}${p.w !== null ? `;w=${p.w}` : ""}`).join(", "),
    RateLimit: `"${closest.name}";r=${closest.r}${closest.t !== null ? `;t=${closest.t}` : ""}`,
  };
}

/**
 * Usage as the operator API, GET /v1/me, the manager app and GraphQL show it: the key's windows,
 * its organization's quota (null without one) and its credits (null without them).
 */
export function usageView(decision: Decision): ApiKeyUsage {
  const view = (w: WindowUsage) => ({ limit: w.limit, used: w.used, remaining: w.remaining, resets_at: isoTime(w.resetAt) });
  const c = decision.credits;
  return {
    second: view(decision.second),
    day: view(decision.day),
    quota: decision.quota ? decision.quota.map((q) => ({ window: QUOTA_UNITS[q.name], ...view(q) })) : null,
    credits: c
      ? { remaining: c.remaining, refill: c.refill, next_refill_at: c.nextRefillAt === null ? null : isoTime(c.nextRefillAt) }
      : null,
  };
}
