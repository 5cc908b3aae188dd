/**
 * The QuotaObject's shell: everything the object does besides being a Durable Object (objects/
 * quota.ts explains the object; docs/architecture.md, "Shells and their hosts"). The rules are
 * ratelimit/quota.ts's; the shell keeps the windows row, the takes that can still be released and
 * the releases whose take has not come. Hosted by objects/quota.ts over `ctx.storage`, and by the
 * property harness over an in-memory SQLite, where a restart is a new shell over the same row.
 */
import type { Owed } from "../../ratelimit/lease";
import {
  EMPTY_QUOTA,
  giveBackQuota,
  peekQuota,
  type QuotaDecision,
  type QuotaLimits,
  type QuotaState,
  type QuotaTaken,
  quotaCharge,
  returnQuota,
} from "../../ratelimit/quota";
import { type Migration, migrate } from "../sql";
import type { Clock, ShellStorage } from "./storage";

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE windows (one INTEGER PRIMARY KEY CHECK (one = 1), second INTEGER NOT NULL, second_count INTEGER NOT NULL,
        day INTEGER NOT NULL, day_count INTEGER NOT NULL, month INTEGER NOT NULL, month_count INTEGER NOT NULL)`,
    ],
  },
];

interface WindowsRow extends Record<string, SqlStorageValue> {
  second: number;
  second_count: number;
  day: number;
  day_count: number;
  month: number;
  month_count: number;
}

/** How long a take can be released, and a release waits for its take: well past the key's CONFIRM_TIMEOUT_MS. */
export const RELEASE_WINDOW_MS = 30_000;

interface Taken {
  second: number;
  day: number;
  month: number;
  cost: number;
  at: number;
}

export class QuotaShell {
  private state: QuotaState = EMPTY_QUOTA;
  /** Takes of the last RELEASE_WINDOW_MS by id, oldest first, with the windows they were counted in. */
  private readonly taken = new Map<string, Taken>();
  /** Releases whose take has not arrived (yet): id -> when it was released. */
  private readonly released = new Map<string, number>();

  /** What a restart reads back: the windows row (the takes and releases in memory are lost with it). */
  constructor(
    private readonly storage: ShellStorage,
    private readonly now: Clock,
  ) {
    migrate(storage, MIGRATIONS);
    const row = storage.sql.exec<WindowsRow>("SELECT * FROM windows").toArray()[0];
    if (row) {
      this.state = {
        second: row.second,
        secondCount: row.second_count,
        day: row.day,
        dayCount: row.day_count,
        month: row.month,
        monthCount: row.month_count,
      };
    }
  }

  /**
   * Counts a request of `cost` against the organization's `limits` (sent by the key's object, which
   * holds the organization's latest limits), or refuses it without counting; `returned` is what the
   * key's object gives back first (the unspent rest of slices). The answer says which day and month
   * it was counted in, what a return of it will name (ratelimit/quota.ts `quotaCharge`).
   */
  take(limits: QuotaLimits, now: number, cost: number, id?: string, returned?: Owed[]): QuotaTaken {
    return this.charge(limits, now, cost, undefined, id, returned);
  }

  /**
   * A slice of the organization's budget for a key's object that holds slices (a quota past
   * QUOTA_EXACT_PER_SECOND, ratelimit/lease.ts): `want` at most, what is left of the tightest window,
   * but at least `min` (what the asking request lacks: a slice too small to pay for it would be
   * counted and wasted), counted as one take (released as one, by its id, if the key gives up waiting).
   */
  grant(limits: QuotaLimits, now: number, min: number, want: number, id?: string, returned?: Owed[]): QuotaTaken {
    return this.charge(limits, now, min, want, id, returned);
  }

  /** What a key's slices left unspent: back to the day and the month they were counted in, if still current. */
  settle(returned: Owed[]): void {
    if (returned.length > 0) this.write(returned.reduce((st, r) => giveBackQuota(st, r.paid, r.amount), this.state));
  }

  private charge(limits: QuotaLimits, now: number, min: number, want: number | undefined, id?: string, returned?: Owed[]): QuotaTaken {
    this.forget(this.now());
    if (returned !== undefined) this.settle(returned);
    if (id !== undefined && this.released.delete(id)) {
      // Its key's object already answered 503 and took it back: counted nowhere.
      return { ...peekQuota(this.state, limits, now), allowed: false, granted: 0, paid: { day: this.state.day, month: this.state.month } };
    }
    const { state, answer } = quotaCharge(this.state, limits, now, min, want, []);
    if (answer.allowed) {
      this.write(state);
      if (id !== undefined)
        this.taken.set(id, { second: state.second, day: state.day, month: state.month, cost: answer.granted, at: this.now() });
    }
    return answer;
  }

  /** A take its key's object gave up waiting for (and answered 503): taken back, or refused when it comes. */
  release(id: string): void {
    const now = this.now();
    this.forget(now);
    const taken = this.taken.get(id);
    if (taken === undefined) {
      this.released.set(id, now);
      return;
    }
    this.taken.delete(id);
    this.write(returnQuota(this.state, taken, taken.cost));
  }

  /** Drops what is older than RELEASE_WINDOW_MS (both maps are in arrival order). */
  private forget(now: number): void {
    for (const [id, t] of this.taken) {
      if (t.at >= now - RELEASE_WINDOW_MS) break;
      this.taken.delete(id);
    }
    for (const [id, at] of this.released) {
      if (at >= now - RELEASE_WINDOW_MS) break;
      this.released.delete(id);
    }
  }

  /** Storage first: memory never counts a request that storage did not. */
  private write(state: QuotaState): void {
    this.storage.sql.exec(
      `INSERT INTO windows (one, second, second_count, day, day_count, month, month_count) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)
       ON CONFLICT (one) DO UPDATE SET second = ?1, second_count = ?2, day = ?3, day_count = ?4, month = ?5, month_count = ?6`,
      state.second,
      state.secondCount,
      state.day,
      state.dayCount,
      state.month,
      state.monthCount,
    );
    this.state = state;
  }

  /** Usage without counting (GET /v1/me, the operator API, the manager). */
  usage(limits: QuotaLimits, now: number): QuotaDecision {
    return peekQuota(this.state, limits, now);
  }

  /** The organization was erased: its counts go with it. */
  async erase(): Promise<void> {
    await this.storage.deleteAll();
    this.state = EMPTY_QUOTA;
  }
}
