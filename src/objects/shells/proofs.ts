/**
 * The ProofObject's shell: where a proof id is recorded once, and its pruning alarm (objects/
 * proofs.ts explains the object and where each proof is recorded; docs/architecture.md, "Shells
 * and their hosts"). Hosted by objects/proofs.ts over `ctx.storage`, and by the property harness
 * over an in-memory SQLite.
 */
import { type Migration, migrate, pruneExpired } from "../sql";
import type { Clock, ShellStorage } from "./storage";

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

export class ProofShell {
  private alarmAt: number | null = null;

  constructor(
    private readonly storage: ShellStorage,
    private readonly now: Clock,
  ) {
    migrate(storage, MIGRATIONS);
  }

  /** Reads back the alarm a restart left set; the host runs it before any call (blockConcurrencyWhile). */
  async start(): Promise<void> {
    this.alarmAt = await this.storage.getAlarm();
  }

  /**
   * Records a proof id until it could no longer be accepted anyway (`expiresMs`); true the first
   * time, false for every later use (a replay). One statement: the primary key decides.
   */
  record(id: string, expiresMs: number): boolean {
    const written = this.storage.sql.exec("INSERT OR IGNORE INTO proofs (id, expires_ms) VALUES (?, ?)", id, expiresMs).rowsWritten;
    // Set when none is, or earlier when this row expires well before it: a federated JWT's row
    // (up to a day) must not hold back the pruning of the proofs recorded after it (70 s each).
    // The margin keeps a steady stream of proofs from setting the alarm on every call.
    if (this.alarmAt === null || expiresMs + PROOF_PRUNE_INTERVAL_MS < this.alarmAt) {
      this.alarmAt = Math.max(expiresMs, this.now() + PROOF_PRUNE_INTERVAL_MS);
      void this.storage.setAlarm(this.alarmAt);
    }
    return written > 0;
  }

  /** Deletes up to PROOF_PRUNE_BATCH expired proof ids through their expiry index; true when more are due at once. */
  prune(now: number): boolean {
    return pruneExpired(this.storage.sql, "proofs", "id", "expires_ms", now, PROOF_PRUNE_BATCH) === PROOF_PRUNE_BATCH;
  }

  /** Prunes, then sets itself for the next expiry (no sooner than PROOF_PRUNE_INTERVAL_MS), or at once while more are due. */
  async alarm(): Promise<void> {
    const now = this.now();
    const more = this.prune(now);
    const soonest = this.storage.sql.exec<{ t: number | null }>("SELECT min(expires_ms) AS t FROM proofs").one().t;
    this.alarmAt = more ? now : soonest === null ? null : Math.max(soonest, now + PROOF_PRUNE_INTERVAL_MS);
    if (this.alarmAt !== null) await this.storage.setAlarm(this.alarmAt);
  }
}
