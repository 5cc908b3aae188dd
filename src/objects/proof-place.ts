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

/**
 * A federated workload JWT's id as a ProofObject records it (objects/organization.ts
 * `authenticateAssertion`): `iss:` and the SHA-256 hex of its issuer and jti. The jti is the
 * issuer's (RFC 7519 4.1.7: unique for that issuer), so one JWT has one record whichever
 * organization or credential it is presented to. A DPoP proof id starts with 16 base64url
 * characters and a "." (auth/dpop.ts), never "iss:", so the two kinds cannot collide.
 */
export const federatedAssertionId = (issuerJtiHash: string): string => `iss:${issuerJtiHash}`;
