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
 *
 * It also records federated workload JWTs used under `assertion_reuse: "once"` (ids from
 * `federatedAssertionId`, asked by the organization's object once the signature verified), so a
 * JWT is used once per issuer rather than per organization; those rows live until the JWT expires
 * (at most a day), far fewer than the proofs since each is one token request.
 */
import { DurableObject } from "cloudflare:workers";
import { proofObjectName, proofShard } from "./proof-place";
import { ProofShell } from "./shells/proofs";

export { PROOF_SHARDS, proofObjectName, proofShard } from "./proof-place";

/** Records a proof id at the ProofObject it names, from another object (the Worker goes through objects/stubs.ts, which keeps the ids). */
export function recordProofAt(namespace: DurableObjectNamespace<ProofObject>, proof: { jti: string; expiresMs: number }): Promise<boolean> {
  return namespace.get(namespace.idFromName(proofObjectName(proofShard(proof.jti)))).record(proof.jti, proof.expiresMs);
}

export { PROOF_PRUNE_BATCH, PROOF_PRUNE_INTERVAL_MS } from "./shells/proofs";

export class ProofObject extends DurableObject<Env> {
  private readonly shell: ProofShell;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.shell = new ProofShell(ctx.storage, Date.now);
    void ctx.blockConcurrencyWhile(() => this.shell.start());
  }

  /** Records a proof id until `expiresMs`: true the first time, false for every later use (a replay). */
  record(id: string, expiresMs: number): boolean {
    return this.shell.record(id, expiresMs);
  }

  /** Deletes up to PROOF_PRUNE_BATCH expired proof ids; true when more are due at once. */
  prune(now: number): boolean {
    return this.shell.prune(now);
  }

  override alarm(): Promise<void> {
    return this.shell.alarm();
  }
}
