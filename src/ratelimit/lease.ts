/**
 * Leased budget slices (issue 33; docs/storage.md, "Limits past one object"): how a limit larger
 * than one Durable Object can count is served by several objects without ever admitting more than
 * the limit. One object keeps the exact count (the coordinator: a key's home object for the key's
 * windows, the QuotaObject for an organization's quota) and grants slices of a window's budget; a
 * holder (a key's shard, or a key's object for its organization's quota) admits requests from the
 * slice it holds, in memory, and asks for another slice when it runs out. The coordinator counts a
 * slice as used the moment it grants it, so what all holders admit together never exceeds the
 * limit in any window: a slice not spent by the end of its second is lost (under-admission, never
 * over-admission), and so is a slice held by an object that restarts.
 *
 * The size a holder asks for follows its own rate: what it admitted in its last second (at least
 * the request's cost), capped at the caller's maximum. A quiet holder asks for one request at a
 * time (no budget is burnt ahead of demand); a busy one asks about once per `cap` requests. So the
 * under-admission in any window is at most `holders x cap` (each holder's unspent slice), and the
 * coordinator is asked about `rate / cap` times per second. These functions are pure: the holder
 * keeps a Lease in memory and the coordinator's counting is the windows' own (ratelimit/windows.ts,
 * ratelimit/quota.ts).
 */
import { SECOND_MS } from "../lib/series";

/** A slice held for one second's window. */
export interface Lease {
  /** The Unix second the slice belongs to. */
  second: number;
  /** What is left of the slice. */
  remaining: number;
  /** What this holder admitted in `second` (its rate, for the next want). */
  admitted: number;
  /** What it admitted in the second before (what it asks for when it needs a slice). */
  previous: number;
}

export const NO_LEASE: Lease = { second: 0, remaining: 0, admitted: 0, previous: 0 };

/**
 * The lease as it stands at `now`: a slice of an earlier second is gone (its rest unspent). Like the
 * windows (ratelimit/windows.ts), it never moves backwards: a request stamped a little earlier by
 * another isolate's clock spends from the current slice rather than dropping it.
 */
export function currentLease(lease: Lease, now: number): Lease {
  const second = Math.max(Math.floor(now / SECOND_MS), lease.second);
  if (second === lease.second) return lease;
  // Its rate carries over only from the second just before.
  return { second, remaining: 0, admitted: 0, previous: second === lease.second + 1 ? lease.admitted : 0 };
}

/** Spends `cost` from the slice held at `now`, or null when the slice cannot cover it (ask for one). */
export function spendLease(lease: Lease, now: number, cost: number): Lease | null {
  const held = currentLease(lease, now);
  if (held.remaining < cost) return null;
  return { ...held, remaining: held.remaining - cost, admitted: held.admitted + cost };
}

/** How much to ask for: this holder's rate (its last second, or this one so far), at least `cost`, at most `cap`. */
export function wantFor(lease: Lease, now: number, cost: number, cap: number): number {
  const held = currentLease(lease, now);
  return Math.max(cost, Math.min(cap, Math.max(held.previous, held.admitted) + cost));
}

/** The lease after a slice of `granted` arrived for a request of `cost`, which it pays for at once. */
export function receiveLease(lease: Lease, now: number, granted: number, cost: number): Lease {
  const held = currentLease(lease, now);
  return { ...held, remaining: held.remaining + granted - cost, admitted: held.admitted + cost };
}
