/**
 * KeyObject: one SQLite-backed Durable Object per API key, named by the SHA-256 of the key, so the
 * edge finds it from the presented key alone (no lookup). It is the one Durable Object call every
 * /v1 request makes. What it decides is decided in ratelimit/admission.ts, a pure core; what it does
 * besides being a Durable Object (load, perform, persist, the alarm) is its shell, shells/key.ts.
 * This class only hosts the shell over `ctx.storage` and the stubs of its peers.
 *
 * Its identity facts are a copy the key's OrganizationObject pushes after each change (`sync`),
 * versioned so that a late or repeated push never undoes a newer one, trusted for KEY_LEASE_MS
 * after the organization last confirmed it (then the next request asks first; an organization
 * that cannot answer within CONFIRM_TIMEOUT_MS makes the key fail closed). Uses of the key and of
 * credentials are noted here and flushed to the organization at most once a minute (an alarm).
 *
 * Shards (issue 33): a key allowed more than one object serves is served by ceil(per_second /
 * SHARD_CAPACITY) shard objects of this class, named `shard:<home id>:<i>`. The home keeps the exact
 * windows, credits and quota and grants shards slices; it passes every push on to its shards before
 * it answers (a shard behind the push's revisions gets the whole set), so revocations hold at every
 * shard's next request. The unspent rest of a slice comes back (ratelimit/lease.ts), carried by the
 * holder's next question or by its alarm. DPoP proof ids are not here: they are recorded once, by
 * the proof alone, in the ProofObjects (objects/proofs.ts).
 *
 * Load: the requests of one key (up to SHARD_CAPACITY = 1,000/s for one object, MAX_KEY_PER_SECOND
 * = 10,000/s over shards; docs/storage.md); rows: one per revoked credential of the organization,
 * the hourly traffic counts, one row of credits, tokens revoked one by one until they expire.
 */
import { DurableObject } from "cloudflare:workers";
import type { Limits } from "../schemas/records";
import { recordProofAt } from "./proofs";
import {
  type Admission,
  type AdmitInput,
  type Grant,
  type GrantRequest,
  type KeyPeers,
  KeyShell,
  type KeySnapshot,
  type OwedBack,
  type SyncAck,
  type TrafficRow,
} from "./shells/key";

export type { Admission, AdmitInput, Grant, GrantRequest, KeySnapshot, Revocation, Step, SyncAck, TrafficRow } from "./shells/key";
export {
  CONFIRM_TIMEOUT_MS,
  KEY_LEASE_MS,
  KEY_SLICE_CAP,
  MAX_SHARDS,
  PRUNE_BATCH,
  PRUNE_INTERVAL_MS,
  pickShard,
  QUOTA_SLICE_CAP,
  SETTLE_AFTER_MS,
  SHARD_CAPACITY,
  shardName,
  shardsFor,
  TRAFFIC_DAYS,
  USE_RESOLUTION_MS,
} from "./shells/key";

/**
 * The KeyObject's peers as Durable Object stubs, from the object's env as it is at each call (a
 * test's fault injection replaces it: test/helpers.ts `withObjectEnv`).
 */
function peersOf(env: () => Env): KeyPeers {
  return {
    home: (id) => env().KEYS.get(env().KEYS.idFromString(id)),
    shard: (name) => env().KEYS.get(env().KEYS.idFromName(name)),
    quota: (organizationId) => env().QUOTAS.get(env().QUOTAS.idFromName(organizationId)),
    organization: (organizationId) => env().ORGS.get(env().ORGS.idFromName(organizationId)),
    recordProof: (proof) => recordProofAt(env().PROOFS, proof),
  };
}

export class KeyObject extends DurableObject<Env> {
  private readonly shell: KeyShell;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.shell = new KeyShell({ storage: ctx.storage, peers: peersOf(() => this.env), clock: Date.now, id: ctx.id.toString() });
    void ctx.blockConcurrencyWhile(() => this.shell.start());
  }

  /** The hot path: authenticate the key, check the client's revocation, count the request. */
  admit(input: AdmitInput): Admission | Promise<Admission> {
    return this.shell.admit(input);
  }

  /** A shard asks for a slice of the current second's budget, and gives back what its last slices left. */
  grant(request: GrantRequest): Promise<Grant> {
    return this.shell.grant(request);
  }

  /** A quiet shard hands back what its slices left unspent (its alarm). */
  settle(returned: OwedBack[]): Promise<void> {
    return this.shell.settle(returned);
  }

  /** Applies what the organization pushed (and passes it on to the shards). */
  sync(snapshot: KeySnapshot, shard?: { home: string; index: number }): Promise<SyncAck> {
    return this.shell.sync(snapshot, shard);
  }

  /** The hourly traffic counts, summed over every shard the key ever had. */
  traffic(): Promise<TrafficRow[]> {
    return this.shell.traffic();
  }

  /** Current usage without counting a request (operator API, manager). */
  usage(defaults: Limits, now: number): ReturnType<KeyShell["usage"]> {
    return this.shell.usage(defaults, now);
  }

  /** Forgets everything, at every shard the key ever had. */
  erase(): Promise<void> {
    return this.shell.erase();
  }

  /** Deletes what has expired (tests call it directly). */
  prune(now: number): boolean {
    return this.shell.prune(now);
  }

  override alarm(): Promise<void> {
    return this.shell.alarm();
  }
}
