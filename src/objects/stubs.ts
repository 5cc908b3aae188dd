/**
 * How the Worker reaches the systems of record: the objects of an organization (by its id), of a
 * webhook endpoint (by its configuration's id), of an API key (by the key's SHA-256), and the
 * directory; each id derived once per isolate. A call that fails in transport is logged and
 * answered 503 with Retry-After, never retried blindly (a retry could count a request twice); an
 * object's refusal (a Result that is not ok) becomes the
 * ApiError it names.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { derived, IsolateCache } from "../lib/cache";
import { describeError, log } from "../log";
import { type KeyObject, shardName } from "./key";
import { proofObjectName, proofShard } from "./proofs";
import type { Result } from "./sql";

/** Retry-After of the 503 answered when an object cannot be reached. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

const idsOf = derived((_namespace: DurableObjectNamespace) => new IsolateCache<DurableObjectId>({ maxEntries: 10_000 }));

function idOf<T extends Rpc.DurableObjectBranded | undefined>(namespace: DurableObjectNamespace<T>, name: string): DurableObjectId {
  const ids = idsOf(namespace as unknown as DurableObjectNamespace);
  let id = ids.get(name);
  if (id === undefined) {
    // idFromName hashes the name on every call; an object's id never changes.
    id = namespace.idFromName(name);
    ids.set(name, id);
  }
  return id;
}

function stub<T extends Rpc.DurableObjectBranded | undefined>(namespace: DurableObjectNamespace<T>, name: string): DurableObjectStub<T> {
  return namespace.get(idOf(namespace, name));
}

export const organizationObject = (deps: Deps, orgId: string) => stub(deps.orgs, orgId);
export const keyObject = (deps: Deps, keyHash: string) => stub(deps.keys, keyHash);
/** The id (hex) of a key's home object named by the key's hash: what its shards are named after. */
export const keyObjectIdHex = (deps: Deps, keyHash: string): string => idOf(deps.keys, keyHash).toString();
/** Shard `index` of a key served by shards (objects/key.ts), by its home object's id. */
export const keyShardObject = (deps: Deps, homeId: string, index: number) => stub(deps.keys, shardName(homeId, index));
/** A key's object by the id a rotated secret carries (lib/ids.ts); null for an id that is not one of this namespace's. */
export function keyObjectById(deps: Deps, idHex: string): DurableObjectStub<KeyObject> | null {
  try {
    return deps.keys.get(deps.keys.idFromString(idHex));
  } catch {
    return null;
  }
}
export const directoryObject = (deps: Deps) => stub(deps.directory, "directory");
/** The ProofObject that records a DPoP proof id: chosen by the id alone (objects/proofs.ts). */
export const proofObject = (deps: Deps, proofId: string) => stub(deps.proofs, proofObjectName(proofShard(proofId)));
export const webhookObject = (deps: Deps, orgId: string) => stub(deps.webhooks, orgId);
export const endpointObject = (deps: Deps, configurationId: string) => stub(deps.endpoints, configurationId);

/**
 * Runs one call to an object. A failure to reach it (the runtime's: overloaded, reset, network)
 * is a logged 503 with Retry-After; an exception the object's own code threw (`remote`, a fault
 * of ours such as a corrupt row) is a logged 500. Neither says more than that to the caller.
 */
export async function reach<T>(what: string, call: () => T): Promise<Awaited<T>> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    const remote = typeof err === "object" && err !== null && (err as { remote?: unknown }).remote === true;
    const overloaded = typeof err === "object" && err !== null && (err as { overloaded?: unknown }).overloaded === true;
    if (remote && !overloaded) {
      throw new ApiError("server_error", "An internal error occurred. It has been logged.", {
        detail: `${what} failed: ${describeError(err)}`,
      });
    }
    log.error(`${what} unreachable`, { detail: describeError(err) });
    throw unavailable(what);
  }
}

/** The 503 for a part of the service that cannot answer now. */
export function unavailable(what: string): ApiError {
  return new ApiError(
    "service_unavailable",
    `A part of the service (${what}) is temporarily unavailable, so the request was not processed. Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} s.`,
    { headers: { "Retry-After": String(UNAVAILABLE_RETRY_AFTER_SECONDS) } },
  );
}

/** The value of an object's answer, or the ApiError it refused with. */
export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw new ApiError(result.code, result.message, result.input ? { input: result.input } : {});
}
