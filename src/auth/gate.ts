/**
 * The gate of every /v1 request (spec 5.1, 8): the API key it presents, in one call to that key's
 * object (objects/key.ts), which answers whether the key exists and is active, whether the client
 * credential the request presents has been revoked, and whether the key's limits admit the
 * request (counted exactly, whatever the request's outcome). Nothing here reads KV, so no stale
 * copy can let a revoked key or credential through, and there is exactly one Durable Object call
 * for the key. A request with a DPoP proof also has the proof's id recorded, beside that call and
 * in parallel with it, by the ProofObject the id alone names (objects/proofs.ts; issue 41): used
 * once whatever key, shard or endpoint it comes with. A missing or malformed key is refused before
 * any call; an unreachable object fails closed (503).
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { IsolateCache } from "../lib/cache";
import { sha256Hex } from "../lib/crypto";
import { API_KEY_PATTERN, apiKeyObjectId } from "../lib/ids";
import { identifyRequest } from "../log";
import { type Admission, type AdmitInput, pickShard } from "../objects/key";
import { keyObject, keyObjectById, keyObjectIdHex, keyShardObject, proofObject, reach, unavailable } from "../objects/stubs";
import { rateLimited } from "../ratelimit/service";
import type { Decision } from "../ratelimit/windows";

export const API_KEY_HEADER = "x-api-key";

/**
 * How many shards serve a key and its home object's id, by the key's object name (its hash, or the
 * id a rotated secret carries), as its home last said: kept briefly, so that a changed limit
 * reaches every isolate within seconds (a retired shard also answers "home").
 */
const shardsKnown = new IsolateCache<{ shards: number; homeId: string }>({ maxEntries: 10_000, ttlMs: 10_000 });

export interface Admitted {
  apiKey: { id: string; organizationId: string; hash: string };
  decision: Decision;
  /** The presented client credential has been revoked (or its user removed). */
  clientRevoked: boolean;
  /** The credential changed after the KV copy the request was judged by (`clientVersion`). */
  clientStale: boolean;
  /** The access token presented was revoked (RFC 7009). */
  tokenRevoked: boolean;
  /** The token asked about (introspection) was revoked, or its credential was. */
  inspectedTokenRevoked: boolean;
  /** The DPoP proof presented was used before. */
  proofReplayed: boolean;
}

/** What the request presents beyond its key, for the key's object to decide in the same call. */
export interface Presented {
  clientId?: string | undefined;
  /** The presented secret matched: a use of the credential to note. */
  authenticated?: boolean;
  clientVersion?: number | undefined;
  tokenId?: string | undefined;
  inspect?: { tokenId: string; clientId: string } | undefined;
  /**
   * A DPoP proof to record beside the admission: only one that cannot come from a stranger (a
   * resource request's proof for a token keyway signed, a token request whose secret KV vouched
   * for), so that no request of a made-up key writes to the shared ProofObjects.
   */
  proof?: ProofId | undefined;
}

/** Refuses a missing or malformed key without any call (keys we issue have one shape). */
export function presentedApiKey(presented: string | undefined): string {
  if (presented === undefined || presented === "") {
    throw new ApiError(
      "invalid_api_key",
      "The x-api-key header is missing. Every /v1 request needs the API key issued by the support team.",
    );
  }
  if (!API_KEY_PATTERN.test(presented)) throw invalidKey();
  return presented;
}

/**
 * Authenticates the key and counts the request as `cost` requests (GraphQL: one per mutation
 * field); `client` is the credential the request presents.
 */
export async function admit(deps: Deps, presented: string | undefined, client: Presented = {}, cost = 1): Promise<Admitted> {
  const key = presentedApiKey(presented);
  const hash = await sha256Hex(key);
  const now = deps.now();
  // A first secret's hash names its object; a rotated secret carries its object's id (lib/ids.ts).
  const objectId = apiKeyObjectId(key);
  const home = objectId === null ? keyObject(deps, hash) : keyObjectById(deps, objectId);
  if (home === null) throw invalidKey();
  const input: AdmitInput = {
    now,
    defaults: deps.config.defaultLimits,
    secretHash: hash,
    routed: objectId !== null,
    clientId: client.clientId,
    clientAuthenticated: client.authenticated ?? false,
    cost,
    clientVersion: client.clientVersion,
    tokenId: client.tokenId,
    inspect: client.inspect,
  };
  // A proof is used once, admitted or not: recorded beside the admission, not after it, so a DPoP
  // request waits for the slower of the two calls. Settled here so that a failure is answered in
  // its turn (after the key's own refusals), never left unhandled.
  const recorded = client.proof === undefined ? null : settled(recordProof(deps, client.proof));
  // A key past one object's capacity is served by shards (objects/key.ts): once its home has said
  // how many, this isolate sends its requests straight to one of them, still one call.
  const known = shardsKnown.get(objectId ?? hash, now);
  let admission: Admission;
  if (known === undefined) {
    admission = await reach("API key object", () => home.admit(input));
  } else {
    const index = pickShard(known.shards);
    admission = await reach("API key object", () => keyShardObject(deps, known.homeId, index).admit({ ...input, shard: index }));
    // The shard is not (or no longer) one: the key's limit changed. Its home decides, and says.
    if (admission.status === "home") admission = await reach("API key object", () => home.admit(input));
  }
  if (admission.status === "active" && admission.shards !== undefined) {
    shardsKnown.set(objectId ?? hash, { shards: admission.shards, homeId: objectId ?? keyObjectIdHex(deps, hash) }, now);
  } else if (known !== undefined) shardsKnown.delete(objectId ?? hash);
  if (admission.status === "unknown" || admission.status === "home") throw invalidKey();
  if (admission.status === "unconfirmed") throw unavailable("API key object");
  // Known from here on, refused or not: the request's log lines and its outcome name the key.
  identifyRequest({ api_key_id: admission.keyId, organization_id: admission.organizationId });
  if (admission.status === "revoked") throw new ApiError("invalid_api_key", "The API key has been revoked.");
  if (!admission.decision.allowed) throw rateLimited(admission.decision);
  const proofRecord = recorded === null ? null : await recorded;
  if (proofRecord !== null && "error" in proofRecord) throw proofRecord.error;
  return {
    apiKey: { id: admission.keyId, organizationId: admission.organizationId, hash },
    decision: admission.decision,
    clientRevoked: admission.clientRevoked,
    clientStale: admission.clientStale,
    tokenRevoked: admission.tokenRevoked,
    inspectedTokenRevoked: admission.inspectedTokenRevoked,
    proofReplayed: proofRecord !== null && !proofRecord.value,
  };
}

/**
 * Records a DPoP proof's id at the ProofObject its id names (objects/proofs.ts): true the first
 * time, false for a replay. Callers make it beside another call, never after one.
 */
export function recordProof(deps: Deps, proof: ProofId): Promise<boolean> {
  return reach("DPoP proof store", () => proofObject(deps, proof.jti).record(proof.jti, proof.expiresMs));
}

/** A proof's id as auth/dpop.ts makes it (key thumbprint prefix and jti), and until when it could be replayed. */
export interface ProofId {
  jti: string;
  expiresMs: number;
}

/** A call's outcome as a value, so that a failure is answered in its turn and never left unhandled. */
export function settled<T>(work: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return work.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

const invalidKey = () => new ApiError("invalid_api_key", "The x-api-key header does not hold a valid API key.");
