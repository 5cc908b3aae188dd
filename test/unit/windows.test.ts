/**
 * The key's fixed windows (src/ratelimit/windows.ts) as examples: both windows must have room for
 * all of a request's cost, only admitted requests count, the day is named first when both are
 * full, a window never moves backwards, and Retry-After is the time until the refusing window
 * ends. The workers tier tests them through the routes (test/ratelimit.test.ts); these are the
 * unit tier's, which the mutation check (docs/testing.md, "Mutation testing") runs.
 */
import { describe, expect, it } from "vitest";
import { admit, DAY_MS, EMPTY_STATE, emptyUsage, peek, retryAfterSeconds, SECOND_MS, type WindowState } from "../../src/ratelimit/windows";

const S = 1_800_000_000_000; // a whole second, mid-day (UTC)
const SEC = S / SECOND_MS;
const DAY = Math.floor(S / DAY_MS);
const DAY_END = (DAY + 1) * DAY_MS;
const LIMITS = { per_second: 2, per_day: 3 };

describe("fixed windows", () => {
  it("admit while both windows have room, count only what they admit, and refuse the second first within a day with room", () => {
    const first = admit(EMPTY_STATE, LIMITS, S + 10);
    expect(first.state).toEqual({ second: SEC, secondCount: 1, day: DAY, dayCount: 1 });
    expect(first.decision).toEqual({
      allowed: true,
      exceeded: null,
      second: { limit: 2, used: 1, remaining: 1, resetAt: S + SECOND_MS },
      day: { limit: 3, used: 1, remaining: 2, resetAt: DAY_END },
      now: S + 10,
      cost: 1,
    });
    // The last request the second has room for is admitted; the next is refused and not counted.
    const second = admit(first.state, LIMITS, S + 20);
    expect(second.decision.allowed).toBe(true);
    expect(second.state.secondCount).toBe(2);
    const third = admit(second.state, LIMITS, S + 30);
    expect(third.decision).toMatchObject({ allowed: false, exceeded: "second", second: { used: 2, remaining: 0 }, day: { used: 2 } });
    expect(third.state).toEqual(second.state);
    expect(retryAfterSeconds(third.decision)).toBe(1);
  });

  it("start a new second at its boundary, and name the day when it is full", () => {
    const full: WindowState = { second: SEC, secondCount: 2, day: DAY, dayCount: 2 };
    const next = admit(full, LIMITS, S + SECOND_MS);
    expect(next.decision.allowed).toBe(true);
    expect(next.state).toEqual({ second: SEC + 1, secondCount: 1, day: DAY, dayCount: 3 });
    // Both full in the same second: the day is named, and Retry-After runs to midnight.
    const both = admit({ ...next.state, secondCount: 2 }, LIMITS, S + SECOND_MS + 500);
    expect(both.decision).toMatchObject({ allowed: false, exceeded: "day" });
    expect(retryAfterSeconds(both.decision)).toBe(Math.ceil((DAY_END - (S + SECOND_MS + 500)) / 1000));
    // The next day starts empty.
    const tomorrow = admit(next.state, LIMITS, DAY_END);
    expect(tomorrow.state).toEqual({ second: DAY_END / SECOND_MS, secondCount: 1, day: DAY + 1, dayCount: 1 });
  });

  it("refuse a request whose cost does not fit whole, and admit one that fills the window exactly", () => {
    const one = admit(EMPTY_STATE, LIMITS, S).state;
    expect(admit(one, LIMITS, S + 1, 2).decision).toMatchObject({ allowed: false, exceeded: "second", cost: 2 });
    const filled = admit(one, { per_second: 10, per_day: 3 }, S + 1, 2);
    expect(filled.decision).toMatchObject({ allowed: true, cost: 2, day: { used: 3, remaining: 0 } });
    expect(filled.state).toMatchObject({ secondCount: 3, dayCount: 3 });
  });

  it("count a request stamped before the window held in that window, never moving it back", () => {
    const held: WindowState = { second: SEC + 1, secondCount: 1, day: DAY, dayCount: 1 };
    const late = admit(held, LIMITS, S + 999);
    expect(late.state).toEqual({ second: SEC + 1, secondCount: 2, day: DAY, dayCount: 2 });
    const yesterday: WindowState = { second: SEC, secondCount: 1, day: DAY + 1, dayCount: 1 };
    expect(admit(yesterday, LIMITS, S).state).toEqual({ second: SEC, secondCount: 2, day: DAY + 1, dayCount: 2 });
  });

  it("show usage without counting, with no remaining below zero when the limits were lowered", () => {
    const over: WindowState = { second: SEC, secondCount: 5, day: DAY, dayCount: 7 };
    expect(peek(over, LIMITS, S + 1)).toEqual({
      allowed: true,
      exceeded: null,
      second: { limit: 2, used: 5, remaining: 0, resetAt: S + SECOND_MS },
      day: { limit: 3, used: 7, remaining: 0, resetAt: DAY_END },
      now: S + 1,
      cost: 1,
    });
    expect(emptyUsage(LIMITS, S + 1)).toMatchObject({
      second: { used: 0, remaining: 2 },
      day: { used: 0, remaining: 3, resetAt: DAY_END },
    });
  });

  it("never answer a Retry-After below one second", () => {
    const refused = admit({ second: SEC, secondCount: 2, day: DAY, dayCount: 0 }, LIMITS, S + 999).decision;
    expect(refused.exceeded).toBe("second");
    expect(retryAfterSeconds(refused)).toBe(1);
    expect(retryAfterSeconds({ ...refused, now: S + 5 * SECOND_MS })).toBe(1);
  });
});
