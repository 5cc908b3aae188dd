/**
 * DPoP (RFC 9449): sender-constrained access tokens. A token request with a valid `DPoP` proof
 * gets a token bound to the proof key's thumbprint (`cnf.jkt`, token_type "DPoP"); every request
 * with that token must then say `Authorization: DPoP <token>` and carry a fresh proof by the same
 * key for this method and URL, with the token's hash (`ath`). A proof is used once: its id is
 * recorded by the ProofObject the id alone names (objects/proofs.ts), beside the request's call to
 * its API key's object (issue 41), and a second use is refused through any key, shard or endpoint.
 * A DPoP-bound token is also bound to the API key it was issued with. The proof's signature and
 * claims are checked with jose (lib/jwt.ts) before those calls, without I/O.
 */
import { ApiError } from "../errors";
import { DPOP_WINDOW_S, type DpopExpectation, JWT_ALGS, verifyDpopProof } from "../lib/jwt";

/** A DPoP proof that verified: its key's thumbprint, and its jti as the key's object records it. */
export interface DpopProof {
  jkt: string;
  /** Prefixed with the key's thumbprint (so one key's jti never collides with another's), and how long to keep it. */
  replay: { jti: string; expiresMs: number };
}

/** What a request's `DPoP` header holds: nothing, a proof that verified, or why it did not. */
export type PresentedProof = { kind: "none" } | { kind: "valid"; proof: DpopProof } | { kind: "invalid"; reason: string };

/** Reads and verifies the `DPoP` header (one proof, RFC 9449 4.3 point 1). */
export async function presentedProof(header: string | null | undefined, expect: DpopExpectation): Promise<PresentedProof> {
  if (header === null || header === undefined) return { kind: "none" };
  // Headers joins repeated fields with ", "; a compact JWS has no comma or space.
  if (/[, ]/.test(header.trim())) return { kind: "invalid", reason: "more than one DPoP header" };
  if (header.length > 8192) return { kind: "invalid", reason: "proof too long" };
  const verified = await verifyDpopProof(header.trim(), expect);
  if (!verified.ok) return { kind: "invalid", reason: verified.reason };
  return {
    kind: "valid",
    proof: {
      jkt: verified.jkt,
      replay: {
        // The key's thumbprint (its first 96 bits) and the jti as sent (at most 256 characters
        // here): one key's jti never collides with another key's, and no hash is needed.
        jti: `${verified.jkt.slice(0, 16)}.${verified.jti}`,
        // Past this, the proof's iat is out of the window anyway.
        expiresMs: (verified.iat + DPOP_WINDOW_S + 10) * 1000,
      },
    },
  };
}

/** RFC 9449 7.1: the challenge a resource answers with (also sent when a DPoP-bound token came as Bearer). */
export function dpopChallenge(error: string, description: string): string {
  return `DPoP realm="keyway", algs="${JWT_ALGS.join(" ")}", error="${error}", error_description="${description.replaceAll('"', "'")}"`;
}

/** A DPoP proof refused at a resource: 401 with the DPoP challenge. */
export function invalidProofAtResource(message: string): ApiError {
  return new ApiError("invalid_dpop_proof", message, { headers: { "WWW-Authenticate": dpopChallenge("invalid_dpop_proof", message) } });
}

/** A DPoP proof refused at the token endpoint: 400, as RFC 6749 5.2 errors are (RFC 9449 5). */
export function invalidProofAtTokenEndpoint(message: string): ApiError {
  return new ApiError("invalid_dpop_proof", message, { status: 400 });
}
