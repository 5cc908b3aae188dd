/**
 * Leased slices (src/ratelimit/lease.ts), as pure functions: a holder spends what it was granted
 * and no more, within the second the slice belongs to; a slice of an earlier second is gone; a
 * request stamped a little earlier spends from the current slice (the lease never moves
 * backwards, like the windows); and a holder asks for what it admitted in its last second, at
 * least the request's cost, at most the cap.
 */
import { describe, expect, it } from "vitest";
import { currentLease, NO_LEASE, receiveLease, spendLease, wantFor } from "../src/ratelimit/lease";

const S = 1_800_000_000_000; // a whole second

describe("leased slices", () => {
  it("spend what was granted, within its second, and no more", () => {
    let lease = receiveLease(NO_LEASE, S + 10, 3, 1);
    expect(lease).toMatchObject({ second: S / 1000, remaining: 2, admitted: 1 });
    lease = spendLease(lease, S + 20, 1) ?? NO_LEASE;
    lease = spendLease(lease, S + 30, 1) ?? NO_LEASE;
    expect(lease.remaining).toBe(0);
    expect(spendLease(lease, S + 40, 1)).toBeNull();
    // The next second: the rest of a slice is gone; what was admitted is the holder's rate.
    expect(spendLease(receiveLease(NO_LEASE, S, 5, 0), S + 1_000, 1)).toBeNull();
    expect(currentLease(lease, S + 1_000)).toEqual({ second: S / 1000 + 1, remaining: 0, admitted: 0, previous: 3 });
  });

  it("never move backwards: a request stamped in the second before spends from the current slice", () => {
    const lease = receiveLease(NO_LEASE, S + 1_000, 2, 0);
    expect(spendLease(lease, S + 999, 1)).toMatchObject({ second: S / 1000 + 1, remaining: 1 });
  });

  it("ask for the holder's rate: at least the cost, at most the cap", () => {
    expect(wantFor(NO_LEASE, S, 1, 50)).toBe(1);
    expect(wantFor(NO_LEASE, S, 3, 50)).toBe(3);
    const busy = { second: S / 1000 - 1, remaining: 0, admitted: 30, previous: 0 };
    expect(wantFor(busy, S, 1, 50)).toBe(31);
    expect(wantFor({ ...busy, admitted: 500 }, S, 1, 50)).toBe(50);
  });
});
