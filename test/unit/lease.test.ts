/**
 * Leased slices (src/ratelimit/lease.ts), as examples of the pure functions: a holder spends what
 * it was granted and no more, within the second the slice belongs to; when the second ends, the
 * rest is owed back with what it was paid from; a request stamped a little earlier spends from the
 * current slice (the lease never moves backwards, like the windows); a holder asks for what its
 * request lacks at least and for its rate at most the cap, and one request a second asks for one
 * (issue 41: not `previous + cost`). The rules as properties are in test/admission-properties.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  currentLease,
  dropLease,
  NO_LEASE,
  NOTHING_PAID,
  oweMore,
  type Paid,
  receiveLease,
  samePaid,
  spendLease,
  wantFor,
} from "../../src/ratelimit/lease";

const S = 1_800_000_000_000; // a whole second
const PAID: Paid = { day: Math.floor(S / 86_400_000), quotaDay: 0, month: 0, epoch: 1, period: null };

const at = (now: number) => currentLease(NO_LEASE, now).lease;

describe("leased slices", () => {
  it("spend what was granted, within its second, and owe back the rest when it ends", () => {
    let lease = receiveLease(at(S + 10), 3, PAID).lease;
    lease = spendLease(lease, 1) ?? NO_LEASE;
    expect(lease).toMatchObject({ second: S / 1000, remaining: 2, admitted: 1 });
    lease = spendLease(lease, 2) ?? NO_LEASE;
    expect(lease.remaining).toBe(0);
    expect(spendLease(lease, 1)).toBeNull();
    // The next second: nothing is held; what was admitted is the holder's rate; nothing was left.
    expect(currentLease(lease, S + 1_000)).toEqual({
      lease: { second: S / 1000 + 1, remaining: 0, admitted: 0, previous: 3, paid: NOTHING_PAID },
      owed: null,
    });
    // A slice of 5 of which one was spent: 4 owed back, with what they were paid from.
    const rest = spendLease(receiveLease(at(S), 5, PAID).lease, 1) ?? NO_LEASE;
    expect(currentLease(rest, S + 1_000).owed).toEqual({ amount: 4, paid: PAID });
    expect(dropLease(rest).owed).toEqual({ amount: 4, paid: PAID });
  });

  it("never move backwards: a request stamped in the second before spends from the current slice", () => {
    const lease = receiveLease(at(S + 1_000), 2, PAID).lease;
    const current = currentLease(lease, S + 999);
    expect(current.owed).toBeNull();
    expect(spendLease(current.lease, 1)).toMatchObject({ second: S / 1000 + 1, remaining: 1 });
  });

  it("ask for what the request lacks at least, the holder's rate at most the cap; one a second asks for one", () => {
    expect(wantFor(at(S), 1, 50)).toEqual({ min: 1, want: 1 });
    expect(wantFor(at(S), 3, 50)).toEqual({ min: 3, want: 3 });
    // One request in the last second: it asks for one, not two.
    expect(wantFor({ ...at(S), previous: 1 }, 1, 50)).toEqual({ min: 1, want: 1 });
    expect(wantFor({ ...at(S), previous: 30 }, 1, 50)).toEqual({ min: 1, want: 30 });
    expect(wantFor({ ...at(S), admitted: 500 }, 1, 50)).toEqual({ min: 1, want: 50 });
    // Two of a weighted request's five are held: it lacks three.
    expect(wantFor({ ...at(S), remaining: 2 }, 5, 50)).toEqual({ min: 3, want: 3 });
  });

  it("keep returns of different balances apart, each to go back to its own, and drop none", () => {
    const other = { ...PAID, epoch: 2 };
    expect(oweMore([{ amount: 2, paid: PAID }], { amount: 3, paid: PAID })).toEqual([{ amount: 5, paid: PAID }]);
    expect(oweMore([{ amount: 2, paid: PAID }], { amount: 3, paid: other })).toEqual([
      { amount: 2, paid: PAID },
      { amount: 3, paid: other },
    ]);
    expect(oweMore([], null)).toEqual([]);
    // A slice paid from another balance than the rest held: the rest is owed, not mixed in.
    const held = receiveLease(at(S), 2, PAID).lease;
    expect(receiveLease(held, 4, other)).toEqual({ lease: { ...held, remaining: 4, paid: other }, owed: { amount: 2, paid: PAID } });
  });

  it("tell balances apart by every field they were paid from, and owe nothing for an empty rest", () => {
    for (const field of ["day", "quotaDay", "month", "epoch", "period"] as const) {
      const other = { ...PAID, [field]: 7 };
      expect(samePaid(PAID, other)).toBe(false);
      expect(oweMore([{ amount: 2, paid: PAID }], { amount: 3, paid: other })).toHaveLength(2);
    }
    expect(samePaid(PAID, { ...PAID })).toBe(true);
    // Only the entry of the same balance grows.
    const other = { ...PAID, epoch: 2 };
    const both = [
      { amount: 2, paid: PAID },
      { amount: 1, paid: other },
    ];
    expect(oweMore(both, { amount: 3, paid: other })).toEqual([
      { amount: 2, paid: PAID },
      { amount: 4, paid: other },
    ]);
    // Nothing owed adds no entry.
    expect(oweMore(both, { amount: 0, paid: { ...PAID, day: 9 } })).toBe(both);
    expect(dropLease(at(S)).owed).toBeNull();
  });

  it("carry the rate over from the second just before only, and add a slice paid alike to the rest held", () => {
    const busy = spendLease(receiveLease(at(S), 5, PAID).lease, 3) ?? NO_LEASE;
    expect(currentLease(busy, S + 1_000).lease.previous).toBe(3);
    expect(currentLease(busy, S + 2_000).lease.previous).toBe(0);
    expect(receiveLease(busy, 4, PAID)).toEqual({ lease: { ...busy, remaining: 6 }, owed: null });
    // An empty slice paid from another balance owes nothing back.
    const spent = spendLease(busy, 2) ?? NO_LEASE;
    const other = { ...PAID, epoch: 2 };
    expect(receiveLease(spent, 4, other)).toEqual({ lease: { ...spent, remaining: 4, paid: other }, owed: null });
  });
});
