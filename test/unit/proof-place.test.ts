/**
 * Where a DPoP proof id is recorded (src/objects/proof-place.ts): FNV-1a of the id alone, modulo
 * PROOF_SHARDS, so the Worker, the objects and the property tests compute the same place. The
 * property tests (admission-properties.test.ts, 4) hold for any function of the id alone, a
 * constant one included; these pin the hash itself and that it spreads the ids over every shard.
 */
import { describe, expect, it } from "vitest";
import { federatedAssertionId, PROOF_SHARDS, proofObjectName, proofShard } from "../../src/objects/proof-place";

describe("proof places", () => {
  it("hash the id with 32-bit FNV-1a (its published test vectors), modulo the shard count", () => {
    expect(PROOF_SHARDS).toBe(64);
    expect(proofShard("")).toBe(0x811c9dc5 % 64);
    expect(proofShard("a")).toBe(0xe40c292c % 64);
    expect(proofShard("foobar")).toBe(0xbf9cf968 % 64);
  });

  it("spread proof ids over every shard", () => {
    const used = new Set(Array.from({ length: 2_000 }, (_, i) => proofShard(`jkt${i % 7}.jti-${i}`)));
    expect(used.size).toBe(PROOF_SHARDS);
  });

  it("name the objects and the federated assertion ids as stored", () => {
    expect(proofObjectName(7)).toBe("proofs:7");
    expect(federatedAssertionId("ab12")).toBe("iss:ab12");
  });
});
