/**
 * The gate of every /v1 request (spec 5.1, 8): the API key it presents, in one call to that key's
 * object (objects/key.ts), which answers whether the key exists and is active, whether the client
 * credential the request presents has been revoked, and whether the key's limits admit the
 * request (counted exactly, whatever the request's outcome). Nothing here reads KV, so no stale
 * copy can let a revoked key or credential through, and there is exactly one Durable Object call.
 * A missing or malformed key is refused before any call; an unreachable object fails closed (503).
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { IsolateCache } from "../lib/cache";
import { sha256Hex } from "../lib/crypto";
import { API_KEY_PATTERN, apiKeyObjectId } from "../lib/ids";
import { identifyRequest } from "../log";
import { type Admission, type AdmitInput, pickShard } from "../objects/key";
import { keyObject, keyObjectById, keyObjectIdHex, keyShardObject, reach, unavailable } from "../objects/stubs";
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
  proof?: { jti: string; expiresMs: number } | undefined;
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
    proof: client.proof,
  };
  // A key past one object's capacity is served by shards (objects/key.ts): once its home has said
  // how many, this isolate sends its requests straight to one of them, still one call.
  const known = shardsKnown.get(objectId ?? hash, now);
  let admission: Admission;
  if (known === undefined) {
    admission = await reach("API key object", () => home.admit(input));
  } else {
    const index = pickShard(known.shards, client.proof?.jti);
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
  return {
    apiKey: { id: admission.keyId, organizationId: admission.organizationId, hash },
    decision: admission.decision,
    clientRevoked: admission.clientRevoked,
    clientStale: admission.clientStale,
    tokenRevoked: admission.tokenRevoked,
    inspectedTokenRevoked: admission.inspectedTokenRevoked,
    proofReplayed: admission.proofReplayed,
  };
}

const invalidKey = () => new ApiError("invalid_api_key", "The x-api-key header does not hold a valid API key.");
