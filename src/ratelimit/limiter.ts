/**
 * RateLimiter: one SQLite-backed Durable Object per API key (addressed by the key's id) that
 * counts its requests exactly. A Durable Object runs one call at a time and the SQL API is
 * synchronous, so each `hit` reads, decides and writes with nothing interleaved: a burst of
 * simultaneous requests is admitted exactly up to the limit. State lives in the object's SQLite
 * storage, so counts survive eviction and restarts. The object also holds the key's limit
 * overrides, so an operator's change takes effect on the very next request everywhere.
 */
import { DurableObject } from "cloudflare:workers";
import type { LimitOverrides, Limits } from "../schemas/records";
import { admit, type Decision, EMPTY_STATE, peek, type WindowState } from "./windows";

type Row = {
  second: number;
  second_count: number;
  day: number;
  day_count: number;
  per_second: number | null;
  per_day: number | null;
};

export class RateLimiter extends DurableObject<Env> {
  private state: WindowState = EMPTY_STATE;
  private overrides: LimitOverrides = {};

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS limiter (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      second INTEGER NOT NULL, second_count INTEGER NOT NULL,
      day INTEGER NOT NULL, day_count INTEGER NOT NULL,
      per_second INTEGER, per_day INTEGER)`);
    const row = sql.exec<Row>("SELECT * FROM limiter WHERE id = 1").toArray()[0];
    if (row) {
      this.state = { second: row.second, secondCount: row.second_count, day: row.day, dayCount: row.day_count };
      this.overrides = {
        ...(row.per_second !== null ? { per_second: row.per_second } : {}),
        ...(row.per_day !== null ? { per_day: row.per_day } : {}),
      };
    }
  }

  /** Counts one request if both windows have room. `defaults` come from the Worker's vars. */
  hit(defaults: Limits, now: number): Decision {
    const { state, decision } = admit(this.state, this.limits(defaults), now);
    if (decision.allowed) {
      this.state = state;
      this.save();
    }
    return decision;
  }

  /** Current usage without counting a request (operator API). */
  usage(defaults: Limits, now: number): Decision {
    return peek(this.state, this.limits(defaults), now);
  }

  /** Replaces the key's overrides; an absent field means "use the default". */
  setLimits(overrides: LimitOverrides): void {
    this.overrides = { ...overrides };
    this.save();
  }

  private limits(defaults: Limits): Limits {
    return {
      per_second: this.overrides.per_second ?? defaults.per_second,
      per_day: this.overrides.per_day ?? defaults.per_day,
    };
  }

  private save(): void {
    const { second, secondCount, day, dayCount } = this.state;
    this.ctx.storage.sql.exec(
      // An upsert updates the one row in place (REPLACE would delete and re-insert it).
      `INSERT INTO limiter (id, second, second_count, day, day_count, per_second, per_day) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)
       ON CONFLICT (id) DO UPDATE SET second = ?1, second_count = ?2, day = ?3, day_count = ?4, per_second = ?5, per_day = ?6`,
      second,
      secondCount,
      day,
      dayCount,
      this.overrides.per_second ?? null,
      this.overrides.per_day ?? null,
    );
  }
}
