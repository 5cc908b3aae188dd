/**
 * Leased budget slices (issues 33 and 41; docs/storage.md, "Limits past one object"): how a limit
 * larger than one Durable Object can count is served by several objects without ever admitting
 * more than the limit, and without charging any longer window for what was never served. One
 * object keeps the exact count (the coordinator: a key's home object for the key's windows and
 * credits, the QuotaObject for an organization's quota) and grants slices of a second's budget; a
 * holder (a key's shard, or a key's object for its organization's quota) admits requests from the
 * slice it holds and asks for another when it runs out.
 *
 * The coordinator counts a slice as used the moment it grants it, in every window (the second,
 * the day, the month) and the credits, so what all holders admit together never exceeds any limit.
 * The slice remembers what it was paid from (`Paid`: the day, the month, the credits balance). When
 * its second ends, its unspent rest is owed back (`Owed`) and the holder hands it over with its
 * next question (a busy holder asks at least once a second, so no extra call) or from its alarm
 * when it goes quiet: the coordinator gives it back to the day, the month and the credits if they
 * are still the ones it was paid from, never to the second, which is over. So the second may be
 * under-admitted (by the slices unspent when it ends), and every longer window and the credits pay
 * exactly for what was served. A return is handed over at most once (it is cleared before the call
 * that carries it): a call that fails loses what it carried, never counts it twice.
 *
 * The size a holder asks for follows its own rate: what it admitted in its last second or this one
 * so far, at least what the request lacks, at most the caller's cap. A holder serving one request a
 * second asks for that one request. These functions are pure; the holder keeps a Lease and the
 * coordinator counts with the windows' own rules (ratelimit/windows.ts, ratelimit/quota.ts).
 */
import { SECOND_MS } from "../lib/series";

/** What a slice was paid from at its coordinator: where its unspent rest goes back to. */
export interface Paid {
  /** The UTC day (days since the epoch) of the key's count it was added to. */
  day: number;
  /**
   * The day and the UTC month (year * 12 + month) of the organization quota's counts it was added
   * to (the quota's own windows: another key may have moved them past midnight first); 0 without one.
   */
  quotaDay: number;
  month: number;
  /** The credits balance it was spent from (its epoch and the end of its refill period); null without credits. */
  epoch: number | null;
  period: number | null;
}

export const NOTHING_PAID: Paid = { day: 0, quotaDay: 0, month: 0, epoch: null, period: null };

/** A slice held for one second's window. */
export interface Lease {
  /** The Unix second the slice belongs to. */
  second: number;
  /** What is left of the slice. */
  remaining: number;
  /** What this holder admitted in `second` (its rate, for the next want). */
  admitted: number;
  /** What it admitted in the second before. */
  previous: number;
  /** What the slice was paid from. */
  paid: Paid;
}

/** The unspent rest of slices whose second ended, to give back to what it was paid from. */
export interface Owed {
  amount: number;
  paid: Paid;
}

export const NO_LEASE: Lease = { second: 0, remaining: 0, admitted: 0, previous: 0, paid: NOTHING_PAID };

export const samePaid = (a: Paid, b: Paid): boolean =>
  a.day === b.day && a.quotaDay === b.quotaDay && a.month === b.month && a.epoch === b.epoch && a.period === b.period;

/**
 * What is owed with `more` added: one entry per balance it was paid from (a slice paid before a
 * credits reset or a quota's arrival and one paid after are returned apart, each to its own), so
 * nothing owed is ever dropped. Entries are as few as the balances a holder's slices came from
 * between two questions: one or two in practice.
 */
export function oweMore(owed: readonly Owed[], more: Owed | null): Owed[] {
  if (more === null || more.amount <= 0) return owed as Owed[];
  const same = owed.findIndex((o) => samePaid(o.paid, more.paid));
  if (same < 0) return [...owed, more];
  return owed.map((o, i) => (i === same ? { amount: o.amount + more.amount, paid: o.paid } : o));
}

/** How much is owed in all. */
export const owedAmount = (owed: readonly Owed[]): number => owed.reduce((sum, o) => sum + o.amount, 0);

/**
 * The lease as it stands at `now`, and what it owes back: a slice of an earlier second is over, its
 * rest owed. Like the windows (ratelimit/windows.ts), it never moves backwards: a request stamped a
 * little earlier by another isolate's clock spends from the current slice rather than dropping it.
 */
export function currentLease(lease: Lease, now: number): { lease: Lease; owed: Owed | null } {
  const second = Math.max(Math.floor(now / SECOND_MS), lease.second);
  if (second === lease.second) return { lease, owed: null };
  // Its rate carries over only from the second just before.
  return {
    lease: { second, remaining: 0, admitted: 0, previous: second === lease.second + 1 ? lease.admitted : 0, paid: NOTHING_PAID },
    owed: lease.remaining > 0 ? { amount: lease.remaining, paid: lease.paid } : null,
  };
}

/** Spends `cost` from a current lease (currentLease first), or null when the slice cannot cover it. */
export function spendLease(lease: Lease, cost: number): Lease | null {
  if (lease.remaining < cost) return null;
  return { ...lease, remaining: lease.remaining - cost, admitted: lease.admitted + cost };
}

/**
 * What to ask for with a current lease: at least what `cost` lacks, else the holder's rate (its
 * last second, or this one so far), at most `cap`. One request a second asks for one.
 */
export function wantFor(lease: Lease, cost: number, cap: number): { min: number; want: number } {
  const min = Math.max(1, cost - lease.remaining);
  return { min, want: Math.max(min, Math.min(cap, Math.max(lease.previous, lease.admitted))) };
}

/**
 * A current lease after a slice of `granted`, paid from `paid`, arrived. A rest held from a slice
 * paid from something else (a reset of the credits between two slices of one second) is owed back
 * rather than mixed in.
 */
export function receiveLease(lease: Lease, granted: number, paid: Paid): { lease: Lease; owed: Owed | null } {
  if (lease.remaining > 0 && !samePaid(lease.paid, paid)) {
    return { lease: { ...lease, remaining: granted, paid }, owed: { amount: lease.remaining, paid: lease.paid } };
  }
  return { lease: { ...lease, remaining: lease.remaining + granted, paid }, owed: null };
}

/** Drops what the lease holds (limits changed, or the object restarted without the answer's view): all of it is owed back. */
export function dropLease(lease: Lease): { lease: Lease; owed: Owed | null } {
  return { lease: { ...lease, remaining: 0 }, owed: lease.remaining > 0 ? { amount: lease.remaining, paid: lease.paid } : null };
}
