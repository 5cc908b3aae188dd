/**
 * QuotaObject: one SQLite-backed Durable Object per organization that has a shared quota (named
 * by the organization's id), the system of record for what the organization's API keys have used
 * of it together (ratelimit/quota.ts). Each request of such a key is decided in the key's object
 * (objects/key.ts), which asks this object once, from inside the same call the edge made: the
 * hot path stays one call from the Worker, and a key without a shared quota never calls here.
 *
 * Counting is exact: one call at a time, synchronous SQLite, the state written before the answer.
 * The key's object counts a request against its own limits before it asks and takes it back when
 * this object refuses or cannot be reached, so no request is ever admitted uncounted.
 *
 * Load: every request of every key of one organization with a quota, so one object's ceiling
 * (about 1,000 calls/s, docs/storage.md) is the organization's: the API refuses an organization
 * `per_second` above QUOTA_CEILING_PER_SECOND, and applies that figure when none is set. Past it,
 * the design is a budget leased in slices to each key's object (docs/storage.md, "Sharding a
 * shared quota"); not built. Rows: one.
 */
import { DurableObject } from "cloudflare:workers";
import { EMPTY_QUOTA, peekQuota, type QuotaDecision, type QuotaLimits, type QuotaState, takeQuota } from "../ratelimit/quota";
import { type Migration, migrate } from "./sql";

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

export class QuotaObject extends DurableObject<Env> {
  private state: QuotaState = EMPTY_QUOTA;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
    const row = ctx.storage.sql.exec<WindowsRow>("SELECT * FROM windows").toArray()[0];
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
   * holds the organization's latest limits), or refuses it without counting.
   */
  take(limits: QuotaLimits, now: number, cost: number): QuotaDecision {
    const { state, decision } = takeQuota(this.state, limits, now, cost);
    if (decision.allowed) {
      // Storage first: memory never counts a request that storage did not.
      this.ctx.storage.sql.exec(
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
    return decision;
  }

  /** Usage without counting (GET /v1/me, the operator API, the manager). */
  usage(limits: QuotaLimits, now: number): QuotaDecision {
    return peekQuota(this.state, limits, now);
  }

  /** The organization was erased: its counts go with it. */
  async erase(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.state = EMPTY_QUOTA;
  }
}
