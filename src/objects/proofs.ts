/**
 * ProofObject: where a DPoP proof's id is recorded once for its lifetime (RFC 9449 11.1, issue 41),
 * at a place chosen by the proof alone: PROOF_SHARDS objects named `proofs:<i>`, `i` a hash of the
 * proof's id (the DPoP key's thumbprint prefix and its jti, auth/dpop.ts). Nothing about the request
 * picks the place (not the API key, its shard count or limits, the organization or the endpoint), so
 * a proof is met by the same object whatever it comes with next: replay is refused across keys,
 * shards, limit changes, the token endpoint and the resources alike.
 *
 * The edge calls it beside the key's object (auth/gate.ts), in parallel, so a DPoP request waits
 * for the slower of two calls rather than for two in a row; no object of one organization is on
 * every DPoP request.
 *
 * Load: every DPoP request of the service, spread by hash over PROOF_SHARDS objects of about 1,000
 * short calls/s each (64,000/s in all); rows: the proofs of the last DPOP_WINDOW_S + 10 s (70 s)
 * plus up to PRUNE_INTERVAL_MS, two B-tree entries each (the id and its expiry index), pruned by
 * time by the alarm. More capacity is more objects, but PROOF_SHARDS is fixed for ever: a new count
 * would send a proof recorded under the old one to another object. Raising it means checking both
 * places for one proof lifetime (70 s) after the change (docs/storage.md, "DPoP proof ids").
 */
import { DurableObject } from "cloudflare:workers";
import { proofObjectName, proofShard } from "./proof-place";
import { type Migration, migrate, pruneExpired } from "./sql";

export { PROOF_SHARDS, proofObjectName, proofShard } from "./proof-place";

/** Records a proof id at the ProofObject it names, from another object (the Worker goes through objects/stubs.ts, which keeps the ids). */
export function recordProofAt(namespace: DurableObjectNamespace<ProofObject>, proof: { jti: string; expiresMs: number }): Promise<boolean> {
  return namespace.get(namespace.idFromName(proofObjectName(proofShard(proof.jti)))).record(proof.jti, proof.expiresMs);
}

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      "CREATE TABLE proofs (id TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL) WITHOUT ROWID",
      "CREATE INDEX proofs_by_expiry ON proofs (expires_ms)",
    ],
  },
];

/** Expired proof ids are deleted by the alarm at most this often, PROOF_PRUNE_BATCH a run (again at once while more are due). */
export const PROOF_PRUNE_INTERVAL_MS = 60_000;
export const PROOF_PRUNE_BATCH = 5_000;

export class ProofObject extends DurableObject<Env> {
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  /**
   * Records a proof id until it could no longer be accepted anyway (`expiresMs`); true the first
   * time, false for every later use (a replay). One statement: the primary key decides.
   */
  record(id: string, expiresMs: number): boolean {
    const written = this.ctx.storage.sql.exec("INSERT OR IGNORE INTO proofs (id, expires_ms) VALUES (?, ?)", id, expiresMs).rowsWritten;
    if (this.alarmAt === null) {
      this.alarmAt = Math.max(expiresMs, Date.now() + PROOF_PRUNE_INTERVAL_MS);
      void this.ctx.storage.setAlarm(this.alarmAt);
    }
    return written > 0;
  }

  /** Deletes up to PROOF_PRUNE_BATCH expired proof ids through their expiry index; true when more are due at once. */
  prune(now: number): boolean {
    return pruneExpired(this.ctx.storage.sql, "proofs", "id", "expires_ms", now, PROOF_PRUNE_BATCH) === PROOF_PRUNE_BATCH;
  }

  /** Prunes, then sets itself for the next expiry (no sooner than PROOF_PRUNE_INTERVAL_MS), or at once while more are due. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const more = this.prune(now);
    const soonest = this.ctx.storage.sql.exec<{ t: number | null }>("SELECT min(expires_ms) AS t FROM proofs").one().t;
    this.alarmAt = more ? now : soonest === null ? null : Math.max(soonest, now + PROOF_PRUNE_INTERVAL_MS);
    if (this.alarmAt !== null) await this.ctx.storage.setAlarm(this.alarmAt);
  }
}
