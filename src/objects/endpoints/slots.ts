/**
 * The rate limit's book of slots (`rate_limit` deliveries per second; policy.ts explains the
 * arithmetic). A slot [start, end] is the time within which one attempt's webhook leaves; a new
 * slot starts no earlier than the `rate`-th latest slot's end plus one second (and a little
 * jitter), so whatever moment in its slot each webhook leaves at, no one-second window holds more
 * than `rate` of them. The slots live in SQLite (so a restarted object keeps counting) and in
 * memory (so a call reads none of them); only ends within the last second matter, older ones
 * are pruned.
 */
import type { Db } from "../db";
import { RATE_JITTER_MS, RATE_SLOT_WAIT_MS } from "./policy";

const SECOND_MS = 1000;

export class SlotBook {
  /** Ends of the slots that still matter, ascending; loaded on first use. */
  private ends: number[] | null = null;

  constructor(private readonly db: Db) {}

  private current(now: number): number[] {
    if (this.ends === null) {
      this.ends = this.db
        .all<{ end_ms: number }>("SELECT end_ms FROM slots WHERE end_ms >= ? ORDER BY end_ms", horizon(now))
        .map((r) => r.end_ms);
    }
    const from = horizon(now);
    while (this.ends.length > 0 && (this.ends[0] ?? 0) < from) this.ends.shift();
    return this.ends;
  }

  /** The earliest a new slot may start at `rate` per second. */
  earliest(rate: number, now: number, extra: number[] = []): number {
    const ends = extra.length === 0 ? this.current(now) : [...this.current(now), ...extra].sort((a, b) => a - b);
    if (ends.length < rate) return now;
    const bound = ends[ends.length - rate] ?? 0;
    return Math.max(now, bound + SECOND_MS + RATE_JITTER_MS);
  }

  /** How many slots of `length` could be granted within RATE_SLOT_WAIT_MS from now, up to `want`. */
  grantable(rate: number, now: number, length: number, want: number): number {
    const extra: number[] = [];
    while (extra.length < want) {
      const start = this.earliest(rate, now, extra);
      if (start > now + RATE_SLOT_WAIT_MS) break;
      extra.push(start + length);
    }
    return extra.length;
  }

  /** Records a granted slot. */
  reserve(start: number, end: number, now: number): void {
    const ends = this.current(now);
    ends.push(end);
    ends.sort((a, b) => a - b);
    this.db.run("INSERT INTO slots (start_ms, end_ms) VALUES (?, ?)", start, end);
    this.db.run("DELETE FROM slots WHERE end_ms < ?", horizon(now));
  }
}

/** Slots that ended before this can no longer bound a new one. */
const horizon = (now: number) => now - SECOND_MS - RATE_JITTER_MS;

/** A slot may be granted only if it starts this soon: the delivery waits in the object otherwise. */
export const grantableAt = (start: number, now: number): boolean => start <= now + RATE_SLOT_WAIT_MS;
