/**
 * The rate-limit algorithm (spec section 8), as pure functions over a small state. Two fixed
 * windows per API key: the Unix second and the UTC day. A request is admitted only if both
 * windows have room, and only admitted requests are counted, so a client that is refused does
 * not burn its daily quota. Windows are aligned to the clock (not to the first request), which
 * is what `Retry-After` and the `RateLimit` header's `t` describe: the time until the window
 * ends. The edge behaviour is that of any fixed window: up to 2 x per_second requests can pass
 * within a few milliseconds around a second boundary (and likewise at UTC midnight).
 */
import { DAY_MS, SECOND_MS } from "../lib/series";
import type { Limits } from "../schemas/records";
import type { CreditsRefill } from "./credits";
import type { QuotaUsage, QuotaWindow } from "./quota";

// Unix time has no leap seconds: every UTC day is 86400 s (lib/series.ts).
export { DAY_MS, SECOND_MS };

export interface WindowState {
  second: number;
  secondCount: number;
  day: number;
  dayCount: number;
}

export interface WindowUsage {
  limit: number;
  used: number;
  remaining: number;
  /** When the window ends (milliseconds since the epoch). */
  resetAt: number;
}

/** A key's credits as a request saw them (after it spent its cost, when admitted). */
export interface CreditsUsage {
  remaining: number;
  refill: CreditsRefill | null;
  /** When the next refill is due (ms since the epoch); null without a refill. */
  nextRefillAt: number | null;
}

export interface Decision {
  allowed: boolean;
  /**
   * What refused the request: one of the key's windows (the day first when both are full), one of
   * its organization's shared quota (ratelimit/quota.ts), or its credits (ratelimit/credits.ts).
   */
  exceeded: "second" | "day" | QuotaWindow | "credits" | null;
  second: WindowUsage;
  day: WindowUsage;
  /** When the request was decided (milliseconds since the epoch). */
  now: number;
  /** How many requests it counts as (a route's weight; a GraphQL request: one per mutation field). */
  cost: number;
  /** The organization's shared quota, when it has one. */
  quota?: QuotaUsage[];
  /** The key's credits, when it has them. */
  credits?: CreditsUsage;
}

export const EMPTY_STATE: WindowState = { second: 0, secondCount: 0, day: 0, dayCount: 0 };

/**
 * Counts of the windows `now` falls in (a window that has ended counts as empty). A window never
 * moves backwards: a request stamped before the window the state holds (an edge whose request
 * arrived late, or whose clock is behind) is counted in that window. Otherwise a request stamped
 * in second S-1 arriving after one of second S would reset S's count, and the next request of S
 * would pass over the limit (issue 22); the day window at midnight likewise.
 */
function current(state: WindowState, now: number): WindowState {
  const second = Math.max(Math.floor(now / SECOND_MS), state.second);
  const day = Math.max(Math.floor(now / DAY_MS), state.day);
  return {
    second,
    secondCount: state.second === second ? state.secondCount : 0,
    day,
    dayCount: state.day === day ? state.dayCount : 0,
  };
}

function usage(limit: number, used: number, resetAt: number): WindowUsage {
  return { limit, used, remaining: Math.max(0, limit - used), resetAt };
}

function describe(state: WindowState, limits: Limits, now: number, allowed: boolean, exceeded: Decision["exceeded"], cost = 1): Decision {
  return {
    allowed,
    exceeded,
    second: usage(limits.per_second, state.secondCount, (state.second + 1) * SECOND_MS),
    day: usage(limits.per_day, state.dayCount, (state.day + 1) * DAY_MS),
    now,
    cost,
  };
}

/**
 * Decides one request that counts as `cost` requests, and returns the state to store (unchanged
 * when refused): admitted only if both windows have room for all of it.
 */
export function admit(state: WindowState, limits: Limits, now: number, cost = 1): { state: WindowState; decision: Decision } {
  const windows = current(state, now);
  const exceeded = windows.dayCount + cost > limits.per_day ? "day" : windows.secondCount + cost > limits.per_second ? "second" : null;
  if (exceeded !== null) return { state: windows, decision: describe(windows, limits, now, false, exceeded, cost) };
  const next = { ...windows, secondCount: windows.secondCount + cost, dayCount: windows.dayCount + cost };
  return { state: next, decision: describe(next, limits, now, true, null, cost) };
}

/** The usage a request at `now` would see, without counting one. */
export function peek(state: WindowState, limits: Limits, now: number): Decision {
  return describe(current(state, now), limits, now, true, null);
}

/** Whole seconds until the refusing window ends: never earlier than its end (RFC 9110 10.2.3). */
export function retryAfterSeconds(decision: Decision): number {
  const window = decision.exceeded === "day" ? decision.day : decision.second;
  return Math.max(1, Math.ceil((window.resetAt - decision.now) / 1000));
}

/** Usage of a key with no requests yet (its object has not counted one). */
export function emptyUsage(limits: Limits, now: number): Decision {
  return peek(EMPTY_STATE, limits, now);
}
