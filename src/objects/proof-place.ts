/**
 * Where a DPoP proof's id is recorded (objects/proofs.ts explains why only the id decides): plain
 * functions, apart from the ProofObject's class, so the Worker, the objects and the property tests
 * in Node compute the same place.
 */

/** How many ProofObjects share the proof ids: fixed, since it chooses where each proof is recorded. */
export const PROOF_SHARDS = 64;

/** Which ProofObject records a proof id (0..PROOF_SHARDS-1): FNV-1a of the id, so only the id decides. */
export function proofShard(proofId: string): number {
  let h = 2166136261;
  for (let i = 0; i < proofId.length; i++) h = Math.imul(h ^ proofId.charCodeAt(i), 16777619);
  return (h >>> 0) % PROOF_SHARDS;
}

/** A ProofObject's name. */
export const proofObjectName = (index: number): string => `proofs:${index}`;
