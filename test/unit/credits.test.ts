/**
 * A key's credits (src/ratelimit/credits.ts) as examples: a request spends its cost only when the
 * balance covers all of it, and a refill replaces the balance at the first request at or after its
 * UTC day or month boundary, then waits for the next one. The unit tier's, which the mutation check
 * (docs/testing.md, "Mutation testing") runs; the routes are tested in test/quotas.test.ts.
 */
import { describe, expect, it } from "vitest";
import { type CreditsState, nextBoundary, refilled, spend } from "../../src/ratelimit/credits";

const MIDNIGHT = Date.UTC(2026, 11, 31);
const NEXT_MIDNIGHT = Date.UTC(2027, 0, 1);

describe("credits", () => {
  it("name the next UTC midnight or first of the month after a time, never the time itself", () => {
    expect(nextBoundary("day", MIDNIGHT + 1)).toBe(NEXT_MIDNIGHT);
    expect(nextBoundary("day", MIDNIGHT)).toBe(NEXT_MIDNIGHT);
    expect(nextBoundary("day", NEXT_MIDNIGHT - 1)).toBe(NEXT_MIDNIGHT);
    expect(nextBoundary("month", Date.UTC(2026, 11, 15, 12))).toBe(NEXT_MIDNIGHT);
    expect(nextBoundary("month", Date.UTC(2026, 1, 1))).toBe(Date.UTC(2026, 2, 1));
  });

  it("refill to the amount at the boundary, not before, and wait for the next one", () => {
    const state: CreditsState = { remaining: 2, refill: { amount: 10, interval: "day" }, nextRefillMs: NEXT_MIDNIGHT };
    expect(refilled(state, NEXT_MIDNIGHT - 1)).toBe(state);
    expect(refilled(state, NEXT_MIDNIGHT)).toEqual({ remaining: 10, refill: state.refill, nextRefillMs: NEXT_MIDNIGHT + 86_400_000 });
    const monthly: CreditsState = { remaining: 0, refill: { amount: 5, interval: "month" }, nextRefillMs: NEXT_MIDNIGHT };
    expect(refilled(monthly, NEXT_MIDNIGHT + 3)).toEqual({ remaining: 5, refill: monthly.refill, nextRefillMs: Date.UTC(2027, 1, 1) });
    const never: CreditsState = { remaining: 2, refill: null, nextRefillMs: null };
    expect(refilled(never, NEXT_MIDNIGHT)).toBe(never);
  });

  it("spend the whole cost or nothing, from the balance after a refill that is due", () => {
    const state: CreditsState = { remaining: 3, refill: null, nextRefillMs: null };
    expect(spend(state, MIDNIGHT, 3)).toEqual({ state: { ...state, remaining: 0 }, allowed: true });
    expect(spend(state, MIDNIGHT, 4)).toEqual({ state, allowed: false });
    const due: CreditsState = { remaining: 0, refill: { amount: 4, interval: "day" }, nextRefillMs: MIDNIGHT };
    expect(spend(due, MIDNIGHT, 3)).toEqual({
      state: { remaining: 1, refill: due.refill, nextRefillMs: NEXT_MIDNIGHT },
      allowed: true,
    });
  });
});
