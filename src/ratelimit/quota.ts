/**
 * An organization's shared quota (product brief, "Quotas and credits"): optional limits per
 * second, per UTC day and per UTC month, counted exactly over all of the organization's API keys,
 * as pure functions over a small state (the QuotaObject keeps it, objects/quota.ts). Like a key's
 * own windows (windows.ts), each window is aligned to the clock and never moves backwards: a
 * request stamped before the window the state holds (a late arrival, a clock behind) is counted
 * in that window, so a late request can never reopen a full one. A request is admitted only if
 * every window that has a limit has room for its whole cost; only admitted requests count.
 */
import { DAY_MS, SECOND_MS } from "../lib/series";

/** Limits an operator may set on an organization; an absent one does not apply. */
export interface QuotaLimits {
  per_second?: number | undefined;
  per_day?: number | undefined;
  per_month?: number | undefined;
}

export type QuotaWindow = "org_second" | "org_day" | "org_month";

/** Each quota window's unit, as the API (`usage.quota[].window`), messages and the manager name it. */
export const QUOTA_UNITS = { org_second: "second", org_day: "day", org_month: "month" } as const satisfies Record<QuotaWindow, string>;

export interface QuotaState {
  second: number;
  secondCount: number;
  day: number;
  dayCount: number;
  /** UTC year * 12 + month (0-based). */
  month: number;
  monthCount: number;
}

/** One window of the quota as the request saw it. */
export interface QuotaUsage {
  name: QuotaWindow;
  limit: number;
  used: number;
  remaining: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
  /** The window's length in seconds (the `w` of RateLimit-Policy; a month is counted as 30 days there). */
  windowSeconds: number;
}

export interface QuotaDecision {
  allowed: boolean;
  exceeded: QuotaWindow | null;
  windows: QuotaUsage[];
}

export const EMPTY_QUOTA: QuotaState = { second: 0, secondCount: 0, day: 0, dayCount: 0, month: 0, monthCount: 0 };

/** The UTC month holding `ms`, as year * 12 + month. */
export function monthOf(ms: number): number {
  const d = new Date(ms);
  return d.getUTCFullYear() * 12 + d.getUTCMonth();
}

/** When UTC month `month` (year * 12 + month) ends. */
export function monthEnd(month: number): number {
  const next = month + 1;
  return Date.UTC(Math.floor(next / 12), next % 12, 1);
}

/** The state moved to the windows `now` falls in, never backwards. */
function current(state: QuotaState, now: number): QuotaState {
  const second = Math.max(Math.floor(now / SECOND_MS), state.second);
  const day = Math.max(Math.floor(now / DAY_MS), state.day);
  const month = Math.max(monthOf(now), state.month);
  return {
    second,
    secondCount: state.second === second ? state.secondCount : 0,
    day,
    dayCount: state.day === day ? state.dayCount : 0,
    month,
    monthCount: state.month === month ? state.monthCount : 0,
  };
}

function windowsOf(state: QuotaState, limits: QuotaLimits): QuotaUsage[] {
  const out: QuotaUsage[] = [];
  const add = (name: QuotaWindow, limit: number | undefined, used: number, resetAt: number, windowSeconds: number) => {
    if (limit !== undefined) out.push({ name, limit, used, remaining: Math.max(0, limit - used), resetAt, windowSeconds });
  };
  add("org_second", limits.per_second, state.secondCount, (state.second + 1) * SECOND_MS, 1);
  add("org_day", limits.per_day, state.dayCount, (state.day + 1) * DAY_MS, 86_400);
  add("org_month", limits.per_month, state.monthCount, monthEnd(state.month), 30 * 86_400);
  return out;
}

/**
 * Decides one request counting as `cost`: admitted only if every limited window has room for all
 * of it. The longest window is named first when several are full (it is the one that lasts).
 */
export function takeQuota(
  state: QuotaState,
  limits: QuotaLimits,
  now: number,
  cost: number,
): { state: QuotaState; decision: QuotaDecision } {
  const w = current(state, now);
  const over = (count: number, limit: number | undefined) => limit !== undefined && count + cost > limit;
  const exceeded: QuotaWindow | null = over(w.monthCount, limits.per_month)
    ? "org_month"
    : over(w.dayCount, limits.per_day)
      ? "org_day"
      : over(w.secondCount, limits.per_second)
        ? "org_second"
        : null;
  if (exceeded !== null) return { state: w, decision: { allowed: false, exceeded, windows: windowsOf(w, limits) } };
  const next = { ...w, secondCount: w.secondCount + cost, dayCount: w.dayCount + cost, monthCount: w.monthCount + cost };
  return { state: next, decision: { allowed: true, exceeded: null, windows: windowsOf(next, limits) } };
}

/**
 * Takes back a request counted as `cost` in the windows `counted` held (issue 29: a key's object
 * that gave up waiting for the answer refused the request, so it must not stay counted). Only the
 * windows still current are changed: a window that has ended took its count with it.
 */
export function returnQuota(state: QuotaState, counted: Pick<QuotaState, "second" | "day" | "month">, cost: number): QuotaState {
  return {
    ...state,
    secondCount: state.second === counted.second ? Math.max(0, state.secondCount - cost) : state.secondCount,
    dayCount: state.day === counted.day ? Math.max(0, state.dayCount - cost) : state.dayCount,
    monthCount: state.month === counted.month ? Math.max(0, state.monthCount - cost) : state.monthCount,
  };
}

/**
 * Gives back the unspent rest of a slice (ratelimit/lease.ts) to the day and the month it was
 * counted in, if they are still the current ones; never to the second, which is over.
 */
export function giveBackQuota(state: QuotaState, paid: { day: number; month: number }, amount: number): QuotaState {
  return {
    ...state,
    dayCount: state.day === paid.day ? Math.max(0, state.dayCount - amount) : state.dayCount,
    monthCount: state.month === paid.month ? Math.max(0, state.monthCount - amount) : state.monthCount,
  };
}

/** What a quota answers a key's object: its decision, what it granted, and the day and month it counted in. */
export type QuotaTaken = QuotaDecision & { granted: number; paid: { day: number; month: number } };

/**
 * The QuotaObject's decision on a take (`want` undefined: exactly `min`, an exact quota's request)
 * or a slice (at most `want`, at least `min`, what the tightest window has left in between), after
 * what the key's object returned is given back. Pure; the object persists `state`.
 */
export function quotaCharge(
  state: QuotaState,
  limits: QuotaLimits,
  now: number,
  min: number,
  want: number | undefined,
  returned: readonly { amount: number; paid: { day: number; month: number } }[],
): { state: QuotaState; answer: QuotaTaken } {
  const back = returned.reduce((st, r) => giveBackQuota(st, r.paid, r.amount), state);
  const size =
    want === undefined ? min : Math.max(min, Math.min(want, Math.min(...peekQuota(back, limits, now).windows.map((w) => w.remaining))));
  const taken = takeQuota(back, limits, now, size);
  const next = taken.decision.allowed ? taken.state : back;
  return {
    state: next,
    answer: { ...taken.decision, granted: taken.decision.allowed ? size : 0, paid: { day: next.day, month: next.month } },
  };
}

/** The quota's windows at `now`, without counting a request. */
export function peekQuota(state: QuotaState, limits: QuotaLimits, now: number): QuotaDecision {
  return { allowed: true, exceeded: null, windows: windowsOf(current(state, now), limits) };
}

/** Whether any limit is set (an organization without one makes no quota call). */
export const hasQuota = (limits: QuotaLimits | null | undefined): limits is QuotaLimits =>
  limits !== null &&
  limits !== undefined &&
  (limits.per_second !== undefined || limits.per_day !== undefined || limits.per_month !== undefined);
