/**
 * An API key's credits (product brief, "Quotas and credits"; unkey's `remaining` and `refill`):
 * a balance each admitted request spends its cost from, refused at zero with 429
 * `credits_exhausted`, and an optional refill that sets the balance back to `amount` at each UTC
 * day or month boundary (a refill replaces the balance, it does not add to it, as unkey's does).
 * Pure functions over a small state that the key's object keeps (objects/key.ts); the refill is
 * applied by the first request (or read) at or after the boundary, which is indistinguishable
 * from applying it at the boundary itself, since nothing reads the balance in between.
 */
import { DAY_MS } from "../lib/series";
import { monthEnd, monthOf } from "./quota";

export type RefillInterval = "day" | "month";

export interface CreditsRefill {
  amount: number;
  interval: RefillInterval;
}

export interface CreditsState {
  remaining: number;
  refill: CreditsRefill | null;
  /** When the next refill is due (ms since the epoch); null without a refill. */
  nextRefillMs: number | null;
}

/** The first UTC boundary of `interval` after `now`. */
export function nextBoundary(interval: RefillInterval, now: number): number {
  return interval === "day" ? (Math.floor(now / DAY_MS) + 1) * DAY_MS : monthEnd(monthOf(now));
}

/** The state at `now`: refilled if a boundary has passed since the last refill. */
export function refilled(state: CreditsState, now: number): CreditsState {
  if (state.refill === null || state.nextRefillMs === null || now < state.nextRefillMs) return state;
  return { ...state, remaining: state.refill.amount, nextRefillMs: nextBoundary(state.refill.interval, now) };
}

/** Spends `cost` if the balance (after any refill due) covers all of it; a refused request spends nothing. */
export function spend(state: CreditsState, now: number, cost: number): { state: CreditsState; allowed: boolean } {
  const current = refilled(state, now);
  if (current.remaining < cost) return { state: current, allowed: false };
  return { state: { ...current, remaining: current.remaining - cost }, allowed: true };
}
