/**
 * QuotaObject: one SQLite-backed Durable Object per organization that has a shared quota (named
 * by the organization's id), the system of record for what the organization's API keys have used
 * of it together (ratelimit/quota.ts). Each request of such a key is decided in the key's object
 * (objects/key.ts), which asks this object once, from inside the same call the edge made: the
 * hot path stays one call from the Worker, and a key without a shared quota never calls here.
 *
 * Counting is exact: one call at a time, synchronous SQLite, the state written before the answer.
 * The key's object counts a request against its own limits before it asks and takes it back when
 * this object refuses or cannot be reached, so no request is ever admitted uncounted. A key's
 * object that gives up waiting (CONFIRM_TIMEOUT_MS) answers 503 and sends `release` with the
 * take's id: a take counted here is taken back, and a take that arrives after its release is
 * refused uncounted, so a request answered 503 does not spend the organization's quota (issue 29).
 * What is remembered for that lives in memory for RELEASE_WINDOW_MS; a restart in between leaves
 * the request counted (never too many admitted, one too few at worst).
 *
 * Load: up to QUOTA_EXACT_PER_SECOND (one object's 1,000 calls/s), every request of every key of
 * the organization, counted exactly; that figure applies when no `per_second` is set. Past it (up
 * to QUOTA_CEILING_PER_SECOND), each key's object holds slices of the second's budget (`grant`,
 * ratelimit/lease.ts) and asks about once per QUOTA_SLICE_CAP requests: never more admitted than
 * the quota, at most the keys' unspent slices fewer in a second (docs/storage.md, "Limits past one
 * object"). What a slice left unspent, and what a key's shards returned of slices its key paid
 * here, comes back with the key's next call (`returned`) or its alarm (`settle`), to the day and
 * the month it was counted in (issue 41): those windows count exactly what was served.
 * Rows: one.
 */
import { DurableObject } from "cloudflare:workers";
import type { Owed } from "../ratelimit/lease";
import type { QuotaDecision, QuotaLimits, QuotaTaken } from "../ratelimit/quota";
import { QuotaShell } from "./shells/quota";

export { RELEASE_WINDOW_MS } from "./shells/quota";

export class QuotaObject extends DurableObject<Env> {
  private readonly shell: QuotaShell;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.shell = new QuotaShell(ctx.storage, Date.now);
  }

  /** Counts a request of `cost` against the organization's `limits`, or refuses it uncounted. */
  take(limits: QuotaLimits, now: number, cost: number, id?: string, returned?: Owed[]): QuotaTaken {
    return this.shell.take(limits, now, cost, id, returned);
  }

  /** A slice of the organization's budget for a key's object that holds slices. */
  grant(limits: QuotaLimits, now: number, min: number, want: number, id?: string, returned?: Owed[]): QuotaTaken {
    return this.shell.grant(limits, now, min, want, id, returned);
  }

  /** What a key's slices left unspent, back to the day and the month they were counted in. */
  settle(returned: Owed[]): void {
    this.shell.settle(returned);
  }

  /** A take its key's object gave up waiting for (and answered 503). */
  release(id: string): void {
    this.shell.release(id);
  }

  /** Usage without counting (GET /v1/me, the operator API, the manager). */
  usage(limits: QuotaLimits, now: number): QuotaDecision {
    return this.shell.usage(limits, now);
  }

  /** The organization was erased: its counts go with it. */
  erase(): Promise<void> {
    return this.shell.erase();
  }
}
