/**
 * An organization's shared quota (src/ratelimit/quota.ts) as examples: every limited window must
 * have room for all of a request, the longest full window is named, windows never move backwards
 * and start empty when they end, what was taken or given back leaves only the current windows, and
 * a slice is what the tightest window has left between `min` and `want`. The unit tier's, which the
 * mutation check (docs/testing.md, "Mutation testing") runs; the routes are in test/quotas.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  EMPTY_QUOTA,
  giveBackQuota,
  hasQuota,
  monthEnd,
  monthOf,
  peekQuota,
  quotaCharge,
  returnQuota,
  takeQuota,
} from "../../src/ratelimit/quota";

const S = Date.UTC(2026, 11, 31, 23, 59, 58); // two seconds before a new day, month and year
const SEC = S / 1000;
const DAY = Math.floor(S / 86_400_000);
const MONTH = monthOf(S);
const NEW_YEAR = Date.UTC(2027, 0, 1);
const ALL = { per_second: 2, per_day: 3, per_month: 4 };

describe("organization quota", () => {
  it("admit while every limited window has room, and show each with its reset and length", () => {
    const { state, decision } = takeQuota(EMPTY_QUOTA, ALL, S, 1);
    expect(state).toEqual({ second: SEC, secondCount: 1, day: DAY, dayCount: 1, month: MONTH, monthCount: 1 });
    expect(decision).toEqual({
      allowed: true,
      exceeded: null,
      windows: [
        { name: "org_second", limit: 2, used: 1, remaining: 1, resetAt: S + 1000, windowSeconds: 1 },
        { name: "org_day", limit: 3, used: 1, remaining: 2, resetAt: NEW_YEAR, windowSeconds: 86_400 },
        { name: "org_month", limit: 4, used: 1, remaining: 3, resetAt: NEW_YEAR, windowSeconds: 2_592_000 },
      ],
    });
    expect(monthEnd(MONTH)).toBe(NEW_YEAR);
    // Only the windows that are limited are shown.
    expect(takeQuota(EMPTY_QUOTA, { per_day: 3 }, S, 1).decision.windows.map((w) => w.name)).toEqual(["org_day"]);
  });

  it("refuse what does not fit whole, naming the longest full window, and count nothing refused", () => {
    const second = takeQuota(EMPTY_QUOTA, ALL, S, 2);
    expect(second.decision.allowed).toBe(true);
    const refused = takeQuota(second.state, ALL, S + 1, 1);
    expect(refused.decision).toMatchObject({ allowed: false, exceeded: "org_second" });
    expect(refused.state).toEqual(second.state);
    expect(takeQuota(second.state, ALL, S + 1000, 2).decision.exceeded).toBe("org_day");
    expect(takeQuota({ ...second.state, dayCount: 3, monthCount: 4 }, ALL, S + 1000, 1).decision.exceeded).toBe("org_month");
    // Filling a window exactly is admitted.
    expect(takeQuota(second.state, { per_day: 3 }, S + 1000, 1).decision).toMatchObject({
      allowed: true,
      windows: [{ used: 3, remaining: 0 }],
    });
  });

  it("start each window empty when it ends, and never move one backwards", () => {
    const full = { second: SEC + 1, secondCount: 2, day: DAY, dayCount: 3, month: MONTH, monthCount: 4 };
    const next = takeQuota(full, ALL, NEW_YEAR, 1);
    expect(next.state).toEqual({ second: NEW_YEAR / 1000, secondCount: 1, day: DAY + 1, dayCount: 1, month: MONTH + 1, monthCount: 1 });
    // A request stamped before the windows held counts in them.
    const late = peekQuota({ ...full, secondCount: 1, month: MONTH + 1 }, ALL, S);
    expect(late).toMatchObject({ allowed: true, exceeded: null });
    expect(late.windows).toEqual([
      { name: "org_second", limit: 2, used: 1, remaining: 1, resetAt: (SEC + 2) * 1000, windowSeconds: 1 },
      { name: "org_day", limit: 3, used: 3, remaining: 0, resetAt: NEW_YEAR, windowSeconds: 86_400 },
      { name: "org_month", limit: 4, used: 4, remaining: 0, resetAt: Date.UTC(2027, 1, 1), windowSeconds: 2_592_000 },
    ]);
    // Limits lowered below the counts: nothing remaining, never less.
    expect(peekQuota(full, { per_day: 1 }, S + 1000).windows[0]?.remaining).toBe(0);
  });

  it("take back and give back only in the windows still current, never below zero", () => {
    const state = { second: SEC, secondCount: 2, day: DAY, dayCount: 3, month: MONTH, monthCount: 4 };
    expect(returnQuota(state, { second: SEC, day: DAY, month: MONTH }, 1)).toEqual({
      ...state,
      secondCount: 1,
      dayCount: 2,
      monthCount: 3,
    });
    expect(returnQuota(state, { second: SEC - 1, day: DAY - 1, month: MONTH - 1 }, 1)).toEqual(state);
    expect(returnQuota(state, { second: SEC, day: DAY, month: MONTH }, 9)).toEqual({
      ...state,
      secondCount: 0,
      dayCount: 0,
      monthCount: 0,
    });
    expect(giveBackQuota(state, { day: DAY, month: MONTH }, 2)).toEqual({ ...state, dayCount: 1, monthCount: 2 });
    expect(giveBackQuota(state, { day: DAY - 1, month: MONTH - 1 }, 2)).toEqual(state);
    expect(giveBackQuota(state, { day: DAY, month: MONTH }, 9)).toEqual({ ...state, dayCount: 0, monthCount: 0 });
  });

  it("grant a slice of what the tightest window has left, between min and want, after what was returned", () => {
    const limits = { per_second: 10, per_day: 6 };
    const used = { ...EMPTY_QUOTA, second: SEC, secondCount: 1, day: DAY, dayCount: 4, month: MONTH, monthCount: 4 };
    expect(quotaCharge(used, limits, S, 1, 5, []).answer).toMatchObject({ allowed: true, granted: 2, paid: { day: DAY, month: MONTH } });
    expect(quotaCharge(used, limits, S, 1, 5, [{ amount: 2, paid: { day: DAY, month: MONTH } }]).answer.granted).toBe(4);
    expect(quotaCharge(used, limits, S, 1, undefined, []).answer.granted).toBe(1);
    const refused = quotaCharge(used, limits, S, 3, 5, []);
    expect(refused.answer).toMatchObject({ allowed: false, granted: 0 });
    expect(refused.state).toBe(used);
  });

  it("apply only when some limit is set", () => {
    expect(hasQuota(null)).toBe(false);
    expect(hasQuota(undefined)).toBe(false);
    expect(hasQuota({})).toBe(false);
    expect(hasQuota({ per_second: 1 })).toBe(true);
    expect(hasQuota({ per_day: 1 })).toBe(true);
    expect(hasQuota({ per_month: 1 })).toBe(true);
  });
});
