/**
 * KeyObject: one SQLite-backed Durable Object per API key, named by the SHA-256 of the key, so
 * the edge finds it from the presented key alone (no lookup). It is the one Durable Object call
 * every /v1 request makes, and in that call it decides everything the request's credentials need:
 * whether the key exists and is active, whether the client credential the request presents (in
 * its body or its access token) has been revoked, and whether the key's rate limits admit the
 * request (spec 8, counted exactly: one call at a time, synchronous SQLite).
 *
 * Its identity facts are a copy that the key's OrganizationObject pushes after each change
 * (`sync`), versioned so that a late or repeated push never undoes a newer one: the key's status
 * and limit overrides, and every revocation of a client credential in the organization, by
 * organization revision. The copy is trusted for KEY_LEASE_MS after the organization last
 * confirmed it; past that, the next request first asks the organization (`confirmKey`), so a
 * push that never arrived can let a revoked secret through for at most the lease, and an
 * organization that cannot be asked, or does not answer within CONFIRM_TIMEOUT_MS, makes the key fail
 * closed. Uses of the key and of credentials are noted here and flushed to the
 * organization at most once a minute each (an alarm), so "last used" needs no blind write.
 *
 * Credits and the organization's shared quota (issue 24) are decided here too: the key's credits
 * live in this object; the quota is asked of the organization's QuotaObject (objects/quota.ts)
 * from inside this call, only for a key whose organization has one.
 *
 * A rotated key (issue 29) keeps this object: it answers to the secrets the organization pushes
 * (the current one, and the one a rotation replaced until its grace ends), whichever way the
 * request found it (a first secret's hash names it, a rotated secret carries its id).
 *
 * Shards (issue 33): a key allowed more than one object serves (SHARD_CAPACITY) is served by
 * ceil(per_second / SHARD_CAPACITY) shard objects of this class, named by this object's id and an
 * index. This object, the key's home, keeps the exact windows, credits and quota, and grants each
 * shard slices of the current second (ratelimit/lease.ts); it passes every push from the
 * organization on to the shards before it answers, so revocations hold at every shard's next
 * request. The edge sends each request to one shard (still one call), told how many by the home.
 *
 * Load: the requests of one key (its per-second limit, at most SHARD_CAPACITY = 1,000/s for one
 * object, MAX_KEY_PER_SECOND = 10,000/s over shards; docs/storage.md); rows: one per revoked credential of the organization, the
 * hourly traffic counts, one row of credits, and what expires (seen DPoP proofs, tokens revoked one
 * by one), pruned by time by the alarm (docs/storage.md, "What expires").
 */
import { DurableObject } from "cloudflare:workers";
import { digestsEqual } from "../lib/crypto";
import { SingleFlight } from "../lib/flight";
import { DAY_MS, hourOf } from "../lib/series";
import { withTimeout } from "../lib/time";
import { describeError, log } from "../log";
import { type CreditsRefill, type CreditsState, nextBoundary, refilled, spend } from "../ratelimit/credits";
import { type Lease, NO_LEASE, receiveLease, spendLease, wantFor } from "../ratelimit/lease";
import type { QuotaDecision, QuotaUsage } from "../ratelimit/quota";
import { admit, type Decision, EMPTY_STATE, peek, type WindowState } from "../ratelimit/windows";
import { USE_RESOLUTION_MS } from "../schemas/admin";
import {
  type KeyCredits,
  type LimitOverrides,
  type Limits,
  MAX_KEY_PER_SECOND,
  type OrgQuota,
  QUOTA_EXACT_PER_SECOND,
  SINGLE_OBJECT_PER_SECOND,
} from "../schemas/records";
import { type Migration, migrate, pruneExpired } from "./sql";

/**
 * One revision of the organization since the key's: a credential revoked (no kind), a credential
 * changed (its KV copy is stale below `version`), or one access token revoked until it expires.
 */
export type Revocation =
  | { client_id: string; revision: number; kind?: "client" }
  | { client_id: string; revision: number; kind: "changed"; version: number }
  | { client_id: string; revision: number; kind: "token"; token_id: string; expires_ms: number };

/** What the organization pushes: the key's state at `version`, revocations up to `revision`. */
export interface KeySnapshot {
  id: string;
  organization_id: string;
  status: "active" | "revoked";
  limits: LimitOverrides;
  version: number;
  revision: number;
  /** What happened since the revision this key last acknowledged. */
  revocations: Revocation[];
  /** The key's credits as its organization keeps them (applied by epoch and `added`); null: none. */
  credits?: KeyCredits | null;
  /** The organization's shared quota at `revision`; null: none (no quota call). */
  quota?: OrgQuota | null;
  /**
   * The secrets the key answers to at `version` (issue 29), as hashes: the current one, and the one
   * a rotation replaced with when its grace ends. Absent (an older organization object): the
   * object's name, the hash of the key's only secret, is the check.
   */
  secrets?: KeySecrets;
}

export interface KeySecrets {
  current: string;
  previous: string | null;
  previous_until_ms: number | null;
}

export interface SyncAck {
  version: number;
  revision: number;
}

export interface AdmitInput {
  now: number;
  defaults: Limits;
  /** SHA-256 (hex) of the presented key: one of the secrets the key answers to, or the request is refused. */
  secretHash?: string | undefined;
  /** The presented key found this object by the id it carries (a rotated secret), not by its hash. */
  routed?: boolean;
  /** The client credential the request presents (token endpoint) or its token was issued to. */
  clientId?: string | undefined;
  /** The presented client secret matched: a use of the credential to note. */
  clientAuthenticated?: boolean;
  /** How many requests this one counts as (GraphQL mutations); 1 when absent. */
  cost?: number;
  /** The version of the credential's KV copy the edge decided on: stale if a change came since. */
  clientVersion?: number | undefined;
  /** The access token presented (its jti): revoked or not. */
  tokenId?: string | undefined;
  /** Another token asked about (introspection): revoked, or its credential revoked, or not. */
  inspect?: { tokenId: string; clientId: string } | undefined;
  /** A DPoP proof's jti (hashed) and until when it could be replayed: used once, or refused. */
  proof?: { jti: string; expiresMs: number } | undefined;
  /** The shard of a sharded key the edge sent this to (1..n); absent: the key's home object. */
  shard?: number | undefined;
}

export type Admission =
  | { status: "unknown" }
  /** A shard that is not (or no longer) one of its key's: ask the key's home object. */
  | { status: "home" }
  | { status: "revoked"; keyId: string; organizationId: string }
  /** The copy's lease has lapsed and the organization could not confirm it: fail closed. */
  | { status: "unconfirmed" }
  | {
      status: "active";
      keyId: string;
      organizationId: string;
      decision: Decision;
      clientRevoked: boolean;
      /** The credential changed after the KV copy the edge read (`clientVersion`). */
      clientStale: boolean;
      tokenRevoked: boolean;
      inspectedTokenRevoked: boolean;
      /** The DPoP proof's jti was seen before. */
      proofReplayed: boolean;
      /** How many shards serve the key (absent: its home object alone), for the edge to spread its requests. */
      shards?: number;
    };

/** A shard's question to its key's home object: a slice of the current second's budget (ratelimit/lease.ts). */
export interface GrantRequest {
  now: number;
  defaults: Limits;
  /** The request that asks pays `cost`; the slice is `want` at most, `cost` at least. */
  cost: number;
  want: number;
}

export type Grant =
  | { status: "granted"; granted: number; decision: Decision }
  | { status: "refused"; decision: Decision }
  | { status: "unavailable" };

/**
 * What one object serves (about 1,000 short calls/s, docs/storage.md): a key allowed more per
 * second is served by ceil(per_second / SHARD_CAPACITY) shards, up to MAX_KEY_PER_SECOND.
 */
export const SHARD_CAPACITY = SINGLE_OBJECT_PER_SECOND;
/** The most a shard asks its home for at once: the home is asked about rate / KEY_SLICE_CAP times a second. */
export const KEY_SLICE_CAP = 50;
/**
 * The most a key's object asks its organization's QuotaObject for at once, for a quota past
 * QUOTA_EXACT_PER_SECOND: at the ceiling the QuotaObject is asked about QUOTA_CEILING_PER_SECOND /
 * QUOTA_SLICE_CAP = 500 times a second, and each active key holds at most this much unspent.
 */
export const QUOTA_SLICE_CAP = 20;

/** How many shards serve a key allowed `perSecond` requests a second (0: its home object alone). */
export function shardsFor(perSecond: number): number {
  return perSecond > SHARD_CAPACITY ? Math.ceil(perSecond / SHARD_CAPACITY) : 0;
}

/** A shard's object name: its home object's id and its index (1..n). */
export const shardName = (homeId: string, index: number): string => `shard:${homeId}:${index}`;

/**
 * Which shard (1..n) serves a request: a DPoP proof always goes to the same one (its jti's hash),
 * so that a replay meets the shard that recorded it; anything else to any of them.
 */
export function pickShard(n: number, proofJti: string | undefined): number {
  if (proofJti === undefined) return 1 + Math.floor(Math.random() * n);
  let h = 2166136261;
  for (let i = 0; i < proofJti.length; i++) h = Math.imul(h ^ proofJti.charCodeAt(i), 16777619);
  return 1 + ((h >>> 0) % n);
}

/** A use is noted at most this often per subject, and flushed to the organization as often (schemas/admin.ts). */
export { USE_RESOLUTION_MS };
/**
 * How long the copy is trusted without word from the organization: the bound on a missed push.
 * At most one extra call per key per lease, and only for a key in use.
 */
export const KEY_LEASE_MS = 10_000;
/**
 * How long a request waits for the organization to confirm the copy before the key fails closed
 * (503, retry in 1 s): a hung organization object must not hold every request of its keys.
 * Generous against a healthy confirmation (one SQL read, a few ms) and well under a client's
 * patience. The deadline is the shared confirmation's own, so a call that never answers is given
 * up and the next request asks again: requests do not pile up behind it.
 */
export const CONFIRM_TIMEOUT_MS = 2_000;

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE key (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, organization_id TEXT NOT NULL,
        status TEXT NOT NULL, per_second INTEGER, per_day INTEGER, version INTEGER NOT NULL, revision INTEGER NOT NULL)`,
      `CREATE TABLE windows (one INTEGER PRIMARY KEY CHECK (one = 1), second INTEGER NOT NULL, second_count INTEGER NOT NULL,
        day INTEGER NOT NULL, day_count INTEGER NOT NULL)`,
      "CREATE TABLE revoked_clients (client_id TEXT PRIMARY KEY, revision INTEGER NOT NULL)",
      "CREATE TABLE uses (subject TEXT PRIMARY KEY, at INTEGER NOT NULL, flushed_at INTEGER NOT NULL DEFAULT 0)",
    ],
  },
  {
    // Issue 21: credentials whose facts changed, access tokens revoked one by one, DPoP proofs seen.
    version: 2,
    statements: [
      "CREATE TABLE changed_clients (client_id TEXT PRIMARY KEY, version INTEGER NOT NULL)",
      "CREATE TABLE revoked_tokens (token_id TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)",
      // No index on expires_ms: one more B-tree write per DPoP request costs more than the
      // occasional scan that prunes (PRUNE_EVERY).
      "CREATE TABLE proof_jtis (jti TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL) WITHOUT ROWID",
    ],
  },
  {
    // Issue 23: requests admitted and refused by the limits, per hour, for the traffic charts
    // (kept TRAFFIC_DAYS; at most 24 x TRAFFIC_DAYS rows).
    version: 3,
    statements: [
      "CREATE TABLE traffic (hour_ms INTEGER PRIMARY KEY, admitted INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0)",
    ],
  },
  {
    // Issue 24: the organization's shared quota (OrgQuota JSON, as of the key's revision) and the
    // key's credits: the live balance, the epoch and top-ups applied, the refill and when it is due.
    version: 4,
    statements: [
      "ALTER TABLE key ADD COLUMN quota TEXT",
      `CREATE TABLE credits (one INTEGER PRIMARY KEY CHECK (one = 1), remaining INTEGER NOT NULL, epoch INTEGER NOT NULL,
        added INTEGER NOT NULL, refill TEXT, next_refill_ms INTEGER)`,
    ],
  },
  {
    // Issue 29: what expires is pruned by time, by the alarm, through these indexes (one more
    // B-tree entry per DPoP proof, the price of a table that returns to its steady-state size).
    version: 5,
    statements: [
      "CREATE INDEX proof_jtis_by_expiry ON proof_jtis (expires_ms)",
      "CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_ms)",
      // A key rotated with a grace period answers to two secrets for a while (KeySecrets); NULL
      // (a key never told): the object's name, its first secret's hash, is the check.
      "ALTER TABLE key ADD COLUMN secret_hash TEXT",
      "ALTER TABLE key ADD COLUMN previous_hash TEXT",
      "ALTER TABLE key ADD COLUMN previous_until_ms INTEGER",
    ],
  },
  {
    // Issue 33: the current hour's traffic counts live in the windows row, so that a request
    // writes one row (the design floor), not two; the hour's row of `traffic` is written once,
    // when the next hour begins (`tally`).
    version: 6,
    statements: [
      "ALTER TABLE windows ADD COLUMN hour_ms INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE windows ADD COLUMN hour_admitted INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE windows ADD COLUMN hour_refused INTEGER NOT NULL DEFAULT 0",
    ],
  },
  {
    // Issue 33: a shard of a key past one object's capacity knows its home object and its index.
    version: 7,
    statements: ["ALTER TABLE key ADD COLUMN shard_home TEXT", "ALTER TABLE key ADD COLUMN shard_index INTEGER"],
  },
];

/** The current hour's requests, admitted and refused by the limits (the live row of the traffic charts). */
interface HourCounts {
  hour: number;
  admitted: number;
  refused: number;
}

const NO_HOUR: HourCounts = { hour: 0, admitted: 0, refused: 0 };

/** How long the hourly traffic counts are kept: the 30 days the charts show, and one to spare. */
export const TRAFFIC_DAYS = 31;

export interface TrafficRow extends Record<string, SqlStorageValue> {
  hour_ms: number;
  admitted: number;
  refused: number;
}

/**
 * Expired rows (seen DPoP proofs, revoked tokens, flushed uses) are deleted by the alarm at most
 * this often, PRUNE_BATCH per table and run (the alarm runs again at once while more are due): a
 * proof's table so holds at most the proofs of its acceptance window plus this interval.
 */
export const PRUNE_INTERVAL_MS = 60_000;
export const PRUNE_BATCH = 5_000;
/**
 * Revocation facts read from SQL are remembered in memory up to this many entries (then forgotten
 * all at once and read again): the hot path reads SQL only for a credential or token this object
 * has not met since it started, and a restart loads nothing proportional to history.
 */
const FACTS_CACHED = 10_000;

/** The key's credits as its object holds them: the live balance, and the epoch and top-ups applied. */
type KeyCreditsState = CreditsState & { epoch: number; added: number };

interface KeyRow extends Record<string, SqlStorageValue> {
  id: string;
  organization_id: string;
  status: "active" | "revoked";
  per_second: number | null;
  per_day: number | null;
  version: number;
  revision: number;
  secret_hash: string | null;
  previous_hash: string | null;
  previous_until_ms: number | null;
  /** A shard's home object (its id) and index; null for a key's home object. */
  shard_home: string | null;
  shard_index: number | null;
}

const KEY_COLUMNS =
  "id, organization_id, status, per_second, per_day, version, revision, secret_hash, previous_hash, previous_until_ms, shard_home, shard_index";

export class KeyObject extends DurableObject<Env> {
  private key: KeyRow | null = null;
  private windows: WindowState = EMPTY_STATE;
  /**
   * What the revocation tables say of a credential or token, remembered after the first read
   * (FACTS_CACHED): `r:<client_id>` 1 when revoked, `c:<client_id>` the version below which its KV
   * copy is stale, `t:<token_id>` until when it is revoked (0: it is not). `sync` writes what it
   * commits; nothing is loaded when the object starts.
   */
  private readonly facts = new Map<string, number>();
  /** When the alarm last pruned expired rows (memory: a restarted object prunes at its first alarm). */
  private prunedAt = 0;
  /** The current hour's traffic counts, stored in the windows row (`tally`). */
  private hourly: HourCounts = NO_HOUR;
  /** The organization's shared quota as of the key's revision; null: none, and no quota call. */
  private quota: OrgQuota | null = null;
  /** The key's credits (the live balance is here); null: none. */
  private credits: KeyCreditsState | null = null;
  /** Last noted use per subject ("key" or a client_id), in memory to skip most writes. */
  private readonly noted = new Map<string, number>();
  /** When the flush alarm is set for, or null when none is. */
  private alarmAt: number | null = null;
  /** When the organization last confirmed the copy (memory only: a restarted object asks first). */
  private confirmedAt = 0;
  private readonly confirming = new SingleFlight();
  /** A shard's slice of the current second (ratelimit/lease.ts), in memory: a restart loses it (under-admission only). */
  private lease: Lease = NO_LEASE;
  /** What the home answered with the slice: the usage a request admitted from it reports. */
  private leaseView: Decision | null = null;
  /** The home's last refusal, repeated without asking until the refusing window ends. */
  private refusal: { decision: Decision; until: number } | null = null;
  private readonly granting = new SingleFlight<"ok" | "unconfirmed">();
  /** This key's slice of its organization's quota (a quota past QUOTA_EXACT_PER_SECOND), in memory. */
  private quotaLease: Lease = NO_LEASE;
  private quotaView: QuotaUsage[] | null = null;
  private quotaRefusal: { decision: QuotaDecision; until: number } | null = null;
  private readonly quotaSlicing = new SingleFlight<"ok" | "unconfirmed">();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // An object that never received a key (any well-formed key that was never issued, say from
    // someone guessing) writes nothing: it answers "unknown" from an empty database, so
    // guesses cannot fill storage. Its tables are created by the first sync.
    const sql = ctx.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").toArray().length === 0) return;
    migrate(ctx.storage, MIGRATIONS);
    this.key = sql.exec<KeyRow>(`SELECT ${KEY_COLUMNS} FROM key`).toArray()[0] ?? null;
    const w = sql
      .exec<{
        second: number;
        second_count: number;
        day: number;
        day_count: number;
        hour_ms: number;
        hour_admitted: number;
        hour_refused: number;
      }>("SELECT * FROM windows")
      .toArray()[0];
    if (w) {
      this.windows = { second: w.second, secondCount: w.second_count, day: w.day, dayCount: w.day_count };
      this.hourly = { hour: w.hour_ms, admitted: w.hour_admitted, refused: w.hour_refused };
    }
    // Uses are pruned once flushed and a minute old (`prune`): this is the last minute's subjects.
    for (const u of sql.exec<{ subject: string; at: number }>("SELECT subject, at FROM uses")) this.noted.set(u.subject, u.at);
    this.loadQuotaAndCredits();
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  /** The hot path: authenticate the key, check the client's revocation, count the request. */
  async admit(input: AdmitInput): Promise<Admission> {
    // A shard that was never told its key: the edge's idea of the key's shards is ahead of them.
    if (this.key === null) return input.shard === undefined ? { status: "unknown" } : { status: "home" };
    if (Date.now() - this.confirmedAt > KEY_LEASE_MS) {
      try {
        await this.confirm();
      } catch (err) {
        log.warn("API key lease not confirmed; refusing until it is", { key: this.key.id, detail: describeError(err) });
        return { status: "unconfirmed" };
      }
    }
    const key = this.key;
    if (!this.answersTo(key, input.secretHash, input.routed === true, input.now)) return { status: "unknown" };
    if (key.status !== "active") return { status: "revoked", keyId: key.id, organizationId: key.organization_id };
    const shards = shardsFor(this.limits(input.defaults).per_second);
    if (key.shard_index !== null) {
      // A shard past its key's current count (the limit came down) serves nothing: the home decides.
      if (key.shard_index > shards) return { status: "home" };
    } else if (shards > 0 && input.shard === undefined) {
      // The home of a sharded key hands an edge's first request to a shard, as the edge will from
      // now on (the answer says how many there are); only if that shard is not ready does it count here.
      const index = pickShard(shards, input.proof?.jti);
      const answer = await this.shard(index).admit({ ...input, shard: index });
      if (answer.status !== "home") return answer.status === "active" ? { ...answer, shards } : answer;
    }
    const clientRevoked = input.clientId !== undefined && this.clientRevoked(input.clientId);
    const clientStale =
      input.clientId !== undefined && input.clientVersion !== undefined && this.changedVersion(input.clientId) > input.clientVersion;
    const revokedToken = (id: string | undefined) => id !== undefined && this.tokenRevokedUntil(id) > input.now;
    // A proof is used once, admitted or not: the first use records it, every later one is a replay.
    const proofReplayed = input.proof !== undefined && !this.recordProof(input.proof);
    // decide() counts the request in its hour's traffic in the same write as its windows; a shard
    // admits from its slice and writes only that count.
    const decision =
      key.shard_index === null ? await this.decide(input.now, input.cost ?? 1, input.defaults) : await this.decideFromSlice(input);
    if (decision === "unconfirmed") return { status: "unconfirmed" };
    if (decision.allowed) {
      this.noteUse("key", input.now);
      if (input.clientId !== undefined && input.clientAuthenticated && !clientRevoked) this.noteUse(input.clientId, input.now);
    }
    return {
      status: "active",
      keyId: key.id,
      organizationId: key.organization_id,
      decision,
      clientRevoked,
      clientStale,
      tokenRevoked: revokedToken(input.tokenId),
      inspectedTokenRevoked:
        input.inspect !== undefined && (revokedToken(input.inspect.tokenId) || this.clientRevoked(input.inspect.clientId)),
      proofReplayed,
      ...(shards > 0 ? { shards } : {}),
    };
  }

  /**
   * A shard's decision: from the slice it holds, else from a new slice its home grants (one call,
   * shared by the requests that arrive meanwhile), else the home's refusal, repeated until the
   * refusing window ends. The home counted the slice when it granted it, so every shard together
   * never admits more than the limit.
   */
  private async decideFromSlice(input: AdmitInput): Promise<Decision | "unconfirmed"> {
    const cost = input.cost ?? 1;
    const now = input.now;
    for (let attempt = 0; attempt < 3; attempt++) {
      const admitted = this.spendSlice(now, cost);
      if (admitted !== null) return admitted;
      const refusal = this.refusal;
      if (refusal !== null && refusal.until > now) {
        this.writeWindows(this.windows, this.tally(now, "refused"));
        return { ...refusal.decision, now, cost };
      }
      const asked = await this.granting.run(() => this.askHome(now, cost, input.defaults));
      if (asked === "unconfirmed") return "unconfirmed";
    }
    // Still nothing after three slices went to other requests: a slice of exactly this request.
    const asked = await this.askHome(now, cost, input.defaults, cost);
    if (asked === "unconfirmed") return "unconfirmed";
    return this.decideFromSliceOnce(now, cost);
  }

  /** A request paid from the slice held (counted in its hour), or null when the slice cannot cover it. */
  private spendSlice(now: number, cost: number): Decision | null {
    const spent = spendLease(this.lease, now, cost);
    if (spent === null || this.leaseView === null) return null;
    this.lease = spent;
    this.writeWindows(this.windows, this.tally(now, "admitted"));
    return { ...this.leaseView, allowed: true, exceeded: null, now, cost };
  }

  private decideFromSliceOnce(now: number, cost: number): Decision {
    const admitted = this.spendSlice(now, cost);
    if (admitted !== null) return admitted;
    const refused = this.refusal?.decision ?? {
      ...peek(EMPTY_STATE, { per_second: 0, per_day: 0 }, now),
      allowed: false,
      exceeded: "second",
    };
    this.writeWindows(this.windows, this.tally(now, "refused"));
    return { ...refused, now, cost };
  }

  /** Asks the home for a slice sized to this shard's rate; the lease or the refusal is updated. */
  private async askHome(now: number, cost: number, defaults: Limits, exactly?: number): Promise<"ok" | "unconfirmed"> {
    const key = this.key as KeyRow;
    const want = exactly ?? wantFor(this.lease, now, cost, KEY_SLICE_CAP);
    let grant: Grant;
    try {
      const home = this.env.KEYS.get(this.env.KEYS.idFromString(key.shard_home as string));
      grant = await withTimeout<Grant>(home.grant({ now, defaults, cost, want }), CONFIRM_TIMEOUT_MS, "the key's home object");
    } catch (err) {
      log.warn("key home unreachable; refusing", { key: key.id, detail: describeError(err) });
      return "unconfirmed";
    }
    if (grant.status === "unavailable") return "unconfirmed";
    if (grant.status === "refused") {
      const d = grant.decision;
      const until = d.exceeded === "day" ? d.day.resetAt : d.second.resetAt;
      this.refusal = { decision: d, until };
      return "ok";
    }
    this.refusal = null;
    this.lease = receiveLease(this.lease, now, grant.granted, 0);
    this.leaseView = grant.decision;
    return "ok";
  }

  /**
   * A shard asks for a slice of the current second's budget: the home decides it as one request of
   * that size, through the same windows, credits and quota as any request (counted now, whether the
   * shard spends it or not), shrunk to what is left, but never below the asking request's cost.
   */
  async grant(request: GrantRequest): Promise<Grant> {
    const key = this.key;
    if (key === null || key.shard_index !== null) return { status: "unavailable" };
    if (Date.now() - this.confirmedAt > KEY_LEASE_MS) {
      try {
        await this.confirm();
      } catch {
        return { status: "unavailable" };
      }
    }
    if ((this.key as KeyRow).status !== "active") return { status: "unavailable" };
    const limits = this.limits(request.defaults);
    const left = peek(this.windows, limits, request.now);
    const room = Math.min(
      left.second.remaining,
      left.day.remaining,
      this.credits === null ? Number.POSITIVE_INFINITY : refilled(this.credits, request.now).remaining,
    );
    const size = Math.max(request.cost, Math.min(request.want, room));
    const decision = await this.decide(request.now, size, request.defaults, false);
    if (decision === "unconfirmed") return { status: "unavailable" };
    return decision.allowed ? { status: "granted", granted: size, decision } : { status: "refused", decision };
  }

  /** The stub of this key's shard `index`. */
  private shard(index: number): DurableObjectStub<KeyObject> {
    return this.env.KEYS.get(this.env.KEYS.idFromName(shardName(this.ctx.id.toString(), index)));
  }

  /**
   * Whether the presented secret is one the key answers to now: the current one, or the one a
   * rotation replaced, until its grace ends (compared in constant time). A key never rotated, or
   * told by an organization object of the previous release, has no hashes here: the object's name
   * is the hash of its only secret, so reaching it was the check (a rotated secret carries the
   * object's id instead, and is never accepted without the hashes).
   */
  private answersTo(key: KeyRow, secretHash: string | undefined, routed: boolean, now: number): boolean {
    if (key.secret_hash === null || secretHash === undefined) return !routed;
    if (digestsEqual(secretHash, key.secret_hash)) return true;
    return key.previous_hash !== null && (key.previous_until_ms ?? 0) > now && digestsEqual(secretHash, key.previous_hash);
  }

  /**
   * Decides a request of `cost`: the key's windows, then its credits, then its organization's
   * shared quota, in that order (a request refused by the first spends nothing of the others, as
   * in unkey's order: limits, then credits). The key's own counts and credits are written before
   * the quota is asked, so concurrent requests of this key, which may run while the question is
   * out, see them; if the quota refuses, or cannot answer within CONFIRM_TIMEOUT_MS, they are
   * given back and the request is refused (429) or fails closed (503): never admitted uncounted.
   */
  private async decide(now: number, cost: number, defaults: Limits, count = true): Promise<Decision | "unconfirmed"> {
    const limits = this.limits(defaults);
    const { state, decision } = admit(this.windows, limits, now, cost);
    // A refusal after the windows admitted: they show what they hold without this request.
    const refusedBy = (exceeded: Decision["exceeded"]): Decision => ({
      ...peek(this.windows, limits, now),
      allowed: false,
      exceeded,
      cost,
    });
    const before = this.credits;
    // A refusal writes the windows row too, but only for its hour's count (one row either way).
    if (!decision.allowed) {
      if (count) this.writeWindows(this.windows, this.tally(now, "refused"));
      return this.withExtras(decision, before, now);
    }
    let credits = before;
    if (before !== null) {
      const spent = spend(before, now, cost);
      credits = { ...before, ...spent.state };
      if (!spent.allowed) {
        if (count) this.writeWindows(this.windows, this.tally(now, "refused"));
        return this.withExtras(refusedBy("credits"), credits, now);
      }
    }
    // Storage first: memory never counts a request that storage did not. Counted as admitted in
    // its hour now; a refusal by the quota below moves it to refused (giveBack).
    this.writeWindows(state, count ? this.tally(now, "admitted") : this.hourly);
    if (credits !== null) this.writeCredits(credits);
    const quota = this.quotaLimits();
    if (quota === null) return this.withExtras(decision, credits, now);
    // The balance this request spent from: the same epoch (no reset since) and refill period.
    const spentFrom = credits === null ? null : { epoch: credits.epoch, nextRefillMs: credits.nextRefillMs };
    if ((quota.per_second ?? 0) > QUOTA_EXACT_PER_SECOND) {
      const sliced = await this.fromQuotaSlice(quota, now, cost);
      if (sliced === "unconfirmed" || !sliced.allowed) {
        this.giveBack(state, cost, spentFrom, sliced === "unconfirmed" ? null : "refused", count);
        if (sliced === "unconfirmed") return "unconfirmed";
        return { ...this.withExtras(refusedBy(sliced.exceeded), this.credits, now), quota: sliced.windows };
      }
      return { ...this.withExtras(decision, credits, now), quota: sliced.windows };
    }
    const quotaObject = this.quotaObject();
    const takeId = crypto.randomUUID();
    let answer: QuotaDecision;
    try {
      answer = await withTimeout(quotaObject.take(quota, now, cost, takeId), CONFIRM_TIMEOUT_MS, "the organization's quota");
    } catch (err) {
      log.warn("organization quota unreachable; refusing", { key: this.key?.id, detail: describeError(err) });
      this.giveBack(state, cost, spentFrom, null, count);
      // Answered 503: the quota must not keep it, whether its take has landed, lands later or never.
      quotaObject.release(takeId).catch((e: unknown) => log.warn("quota release failed", { key: this.key?.id, detail: describeError(e) }));
      return "unconfirmed";
    }
    if (!answer.allowed) {
      this.giveBack(state, cost, spentFrom, "refused", count);
      return { ...this.withExtras(refusedBy(answer.exceeded), this.credits, now), quota: answer.windows };
    }
    return { ...this.withExtras(decision, credits, now), quota: answer.windows };
  }

  /**
   * A quota past QUOTA_EXACT_PER_SECOND: the request is paid from this key's slice of the second's
   * budget, else from a new slice the QuotaObject grants (one call, shared by the requests that
   * arrive meanwhile), else refused as the QuotaObject last refused, until that window ends.
   */
  private async fromQuotaSlice(quota: OrgQuota, now: number, cost: number): Promise<QuotaDecision | "unconfirmed"> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const spent = spendLease(this.quotaLease, now, cost);
      if (spent !== null && this.quotaView !== null) {
        this.quotaLease = spent;
        return { allowed: true, exceeded: null, windows: this.quotaView };
      }
      const refusal = this.quotaRefusal;
      if (refusal !== null && refusal.until > now) return refusal.decision;
      const asked = await this.quotaSlicing.run(() => this.askQuota(quota, now, wantFor(this.quotaLease, now, cost, QUOTA_SLICE_CAP)));
      if (asked === "unconfirmed") return "unconfirmed";
    }
    const asked = await this.askQuota(quota, now, cost);
    if (asked === "unconfirmed") return "unconfirmed";
    const spent = spendLease(this.quotaLease, now, cost);
    if (spent === null || this.quotaView === null)
      return this.quotaRefusal?.decision ?? { allowed: false, exceeded: "org_second", windows: [] };
    this.quotaLease = spent;
    return { allowed: true, exceeded: null, windows: this.quotaView };
  }

  /** Asks the QuotaObject for a slice of `want`; the slice or the refusal is kept. */
  private async askQuota(quota: OrgQuota, now: number, want: number): Promise<"ok" | "unconfirmed"> {
    const quotaObject = this.quotaObject();
    const takeId = crypto.randomUUID();
    let answer: QuotaDecision & { granted: number };
    try {
      answer = await withTimeout(quotaObject.grant(quota, now, 1, want, takeId), CONFIRM_TIMEOUT_MS, "the organization's quota");
    } catch (err) {
      log.warn("organization quota unreachable; refusing", { key: this.key?.id, detail: describeError(err) });
      quotaObject.release(takeId).catch((e: unknown) => log.warn("quota release failed", { key: this.key?.id, detail: describeError(e) }));
      return "unconfirmed";
    }
    if (!answer.allowed) {
      const window = answer.windows.find((w) => w.name === answer.exceeded);
      this.quotaRefusal = { decision: answer, until: window?.resetAt ?? (Math.floor(now / 1000) + 1) * 1000 };
      return "ok";
    }
    this.quotaRefusal = null;
    this.quotaLease = receiveLease(this.quotaLease, now, answer.granted, 0);
    this.quotaView = answer.windows;
    return "ok";
  }

  /** The decision with the key's credits (as they stand) attached. */
  private withExtras(decision: Decision, credits: KeyCreditsState | null, now: number): Decision {
    if (credits === null) return decision;
    const current = refilled(credits, now);
    return { ...decision, credits: { remaining: current.remaining, refill: current.refill, nextRefillAt: current.nextRefillMs } };
  }

  /**
   * The one row a request writes: the windows and the current hour's traffic counts together.
   * An upsert updates it in place (REPLACE would delete and re-insert it).
   */
  private writeWindows(state: WindowState, hourly: HourCounts): void {
    this.ctx.storage.sql.exec(
      `INSERT INTO windows (one, second, second_count, day, day_count, hour_ms, hour_admitted, hour_refused)
       VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)
       ON CONFLICT (one) DO UPDATE SET second = ?1, second_count = ?2, day = ?3, day_count = ?4,
         hour_ms = ?5, hour_admitted = ?6, hour_refused = ?7`,
      state.second,
      state.secondCount,
      state.day,
      state.dayCount,
      hourly.hour,
      hourly.admitted,
      hourly.refused,
    );
    this.windows = state;
    this.hourly = hourly;
  }

  /**
   * The hour's counts with one more request `as` admitted or refused by the limits: the counts the
   * charts draw, written with the windows (no extra row on the hot path). When a new hour begins,
   * the finished hour goes to its row of `traffic` and rows past TRAFFIC_DAYS are deleted: two
   * statements once an hour. A request stamped before the live hour (another isolate's clock at
   * the boundary) is added to its own hour's row directly.
   */
  private tally(now: number, as: "admitted" | "refused"): HourCounts {
    const hour = hourOf(now);
    const current = this.hourly;
    if (hour < current.hour) {
      this.addTraffic(hour, as === "admitted" ? 1 : 0, as === "refused" ? 1 : 0);
      return current;
    }
    const base = hour === current.hour ? current : { hour, admitted: 0, refused: 0 };
    if (hour > current.hour && current.hour > 0) {
      if (current.admitted + current.refused > 0) this.addTraffic(current.hour, current.admitted, current.refused);
      this.ctx.storage.sql.exec("DELETE FROM traffic WHERE hour_ms < ?", hour - TRAFFIC_DAYS * DAY_MS);
    }
    return as === "admitted" ? { ...base, admitted: base.admitted + 1 } : { ...base, refused: base.refused + 1 };
  }

  private addTraffic(hour: number, admitted: number, refused: number): void {
    this.ctx.storage.sql.exec(
      `INSERT INTO traffic (hour_ms, admitted, refused) VALUES (?1, ?2, ?3)
       ON CONFLICT (hour_ms) DO UPDATE SET admitted = admitted + ?2, refused = refused + ?3`,
      hour,
      admitted,
      refused,
    );
  }

  private writeCredits(credits: KeyCreditsState): void {
    this.ctx.storage.sql.exec(
      `INSERT INTO credits (one, remaining, epoch, added, refill, next_refill_ms) VALUES (1, ?1, ?2, ?3, ?4, ?5)
       ON CONFLICT (one) DO UPDATE SET remaining = ?1, epoch = ?2, added = ?3, refill = ?4, next_refill_ms = ?5`,
      credits.remaining,
      credits.epoch,
      credits.added,
      credits.refill === null ? null : JSON.stringify(credits.refill),
      credits.nextRefillMs,
    );
    this.credits = credits;
  }

  /**
   * Takes back a request the quota refused or did not answer: its cost leaves the windows it was
   * counted in (if they are still the current ones) and returns to the balance it was spent from,
   * if that is still the balance: a reset (a new epoch) or a refill (a new period) while the quota
   * was asked replaced it, and the replacement gets nothing back (issue 29: else the key could
   * spend one cost more than it was given). A top-up meanwhile only added to the same balance.
   * Its hour's count moves from admitted to refused (`as`), or, for a 503, is taken out (null).
   */
  private giveBack(
    counted: WindowState,
    cost: number,
    spentFrom: { epoch: number; nextRefillMs: number | null } | null,
    as: "refused" | null,
    tallied = true,
  ): void {
    const w = this.windows;
    // Taken out of its hour's counts only if it was put in (a shard's slice is counted by the shard).
    const h = tallied
      ? this.hourly
      : { ...this.hourly, admitted: this.hourly.admitted + 1, refused: this.hourly.refused - (as === "refused" ? 1 : 0) };
    this.writeWindows(
      {
        ...w,
        secondCount: w.second === counted.second ? Math.max(0, w.secondCount - cost) : w.secondCount,
        dayCount: w.day === counted.day ? Math.max(0, w.dayCount - cost) : w.dayCount,
      },
      { ...h, admitted: Math.max(0, h.admitted - 1), refused: h.refused + (as === "refused" ? 1 : 0) },
    );
    const c = this.credits;
    if (spentFrom !== null && c !== null && c.epoch === spentFrom.epoch && c.nextRefillMs === spentFrom.nextRefillMs) {
      this.writeCredits({ ...c, remaining: c.remaining + cost });
    }
  }

  /**
   * The organization's quota as it is counted: its `per_second` at QUOTA_EXACT_PER_SECOND when
   * not set, since all of its keys' requests then pass through its one QuotaObject, which must not
   * be asked more than it serves (an accepted quota never turns into 503s under load).
   */
  private quotaLimits(): OrgQuota | null {
    return this.quota === null ? null : { ...this.quota, per_second: this.quota.per_second ?? QUOTA_EXACT_PER_SECOND };
  }

  private quotaObject() {
    const orgId = (this.key as KeyRow).organization_id;
    return this.env.QUOTAS.get(this.env.QUOTAS.idFromName(orgId));
  }

  private loadQuotaAndCredits(): void {
    const sql = this.ctx.storage.sql;
    const q = sql.exec<{ quota: string | null }>("SELECT quota FROM key").toArray()[0];
    this.quota = q?.quota ? (JSON.parse(q.quota) as OrgQuota) : null;
    this.credits = this.readCredits();
  }

  /**
   * Applies the organization's record of the key's credits: a newer epoch is a reset (the balance
   * becomes base + added), a larger `added` a top-up (the difference is added); the refill is
   * taken as given, its next boundary counted from now. Late or repeated pushes change nothing.
   */
  private syncCredits(given: KeyCredits | null | undefined, now: number): void {
    if (given === undefined) return;
    const sql = this.ctx.storage.sql;
    if (given === null) {
      sql.exec("DELETE FROM credits");
      return;
    }
    const current = this.readCredits();
    let next: KeyCreditsState;
    if (current === null || given.epoch > current.epoch) {
      next = { remaining: given.base + given.added, epoch: given.epoch, added: given.added, refill: given.refill, nextRefillMs: null };
    } else if (given.epoch === current.epoch) {
      next = {
        ...current,
        remaining: current.remaining + Math.max(0, given.added - current.added),
        added: Math.max(current.added, given.added),
        refill: given.refill,
      };
    } else return;
    const refillChanged = JSON.stringify(next.refill) !== JSON.stringify(current?.refill ?? null);
    if (next.refill === null) next.nextRefillMs = null;
    else if (refillChanged || next.nextRefillMs === null) next.nextRefillMs = nextBoundary(next.refill.interval, now);
    this.writeCredits(next);
  }

  private readCredits(): KeyCreditsState | null {
    const c = this.ctx.storage.sql
      .exec<{ remaining: number; epoch: number; added: number; refill: string | null; next_refill_ms: number | null }>(
        "SELECT * FROM credits",
      )
      .toArray()[0];
    return c
      ? {
          remaining: c.remaining,
          epoch: c.epoch,
          added: c.added,
          refill: c.refill === null ? null : (JSON.parse(c.refill) as CreditsRefill),
          nextRefillMs: c.next_refill_ms,
        }
      : null;
  }

  /**
   * Records a DPoP proof's jti; false if it was recorded before (a replay). One statement: the
   * primary key decides. Seen proofs are kept until they could no longer be accepted anyway, then
   * pruned by the alarm (`prune`), which this makes sure is set.
   */
  private recordProof(proof: { jti: string; expiresMs: number }): boolean {
    const written = this.ctx.storage.sql.exec(
      "INSERT OR IGNORE INTO proof_jtis (jti, expires_ms) VALUES (?, ?)",
      proof.jti,
      proof.expiresMs,
    ).rowsWritten;
    this.schedule(Math.max(proof.expiresMs, this.prunedAt + PRUNE_INTERVAL_MS));
    return written > 0;
  }

  /** Whether the credential is revoked (the organization's revocations only ever add to this). */
  private clientRevoked(clientId: string): boolean {
    return (
      this.fact(
        `r:${clientId}`,
        () => this.ctx.storage.sql.exec("SELECT 1 FROM revoked_clients WHERE client_id = ?", clientId).toArray().length,
      ) > 0
    );
  }

  /** The credential's version below which a KV copy of it is stale; 0 when it never changed. */
  private changedVersion(clientId: string): number {
    return this.fact(
      `c:${clientId}`,
      () =>
        this.ctx.storage.sql.exec<{ version: number }>("SELECT version FROM changed_clients WHERE client_id = ?", clientId).toArray()[0]
          ?.version ?? 0,
    );
  }

  /** Until when the access token is revoked (RFC 7009); 0 when it is not. */
  private tokenRevokedUntil(tokenId: string): number {
    return this.fact(
      `t:${tokenId}`,
      () =>
        this.ctx.storage.sql.exec<{ expires_ms: number }>("SELECT expires_ms FROM revoked_tokens WHERE token_id = ?", tokenId).toArray()[0]
          ?.expires_ms ?? 0,
    );
  }

  /** A revocation fact from memory, or read once and remembered (all forgotten past FACTS_CACHED). */
  private fact(name: string, read: () => number): number {
    const known = this.facts.get(name);
    if (known !== undefined) return known;
    if (this.facts.size >= FACTS_CACHED) this.facts.clear();
    const value = read();
    this.facts.set(name, value);
    return value;
  }

  /**
   * Deletes what has expired, PRUNE_BATCH rows per table through their expiry indexes: DPoP proofs
   * past their acceptance window, tokens revoked one by one past their own expiry, and uses already
   * flushed to the organization and older than USE_RESOLUTION_MS. True when more are due at once.
   */
  prune(now: number): boolean {
    const sql = this.ctx.storage.sql;
    let more = false;
    this.ctx.storage.transactionSync(() => {
      const proofs = pruneExpired(sql, "proof_jtis", "jti", "expires_ms", now, PRUNE_BATCH);
      const tokens = pruneExpired(sql, "revoked_tokens", "token_id", "expires_ms", now, PRUNE_BATCH);
      sql.exec("DELETE FROM uses WHERE flushed_at >= at AND at < ?", now - USE_RESOLUTION_MS);
      more = proofs === PRUNE_BATCH || tokens === PRUNE_BATCH;
    });
    for (const [subject, at] of this.noted) if (at < now - USE_RESOLUTION_MS) this.noted.delete(subject);
    this.prunedAt = now;
    return more;
  }

  /** When the next expired row is due for pruning (indexed minimums), no sooner than PRUNE_INTERVAL_MS after the last run. */
  private nextPrune(): number | null {
    const sql = this.ctx.storage.sql;
    const soonest = sql
      .exec<{ t: number | null }>(
        "SELECT min(t) AS t FROM (SELECT min(expires_ms) AS t FROM proof_jtis UNION ALL SELECT min(expires_ms) FROM revoked_tokens)",
      )
      .one().t;
    return soonest === null ? null : Math.max(soonest, this.prunedAt + PRUNE_INTERVAL_MS);
  }

  /**
   * The hourly traffic counts (oldest first), for the charts and the operator API: the stored hours
   * and the live one, summed over the key's shards when it has them (each counts what it served).
   */
  async traffic(): Promise<TrafficRow[]> {
    const key = this.key;
    if (key === null) return [];
    const own = this.ownTraffic();
    const shards = key.shard_index === null ? shardsFor(key.per_second ?? 0) : 0;
    if (shards === 0) return own;
    const byHour = new Map<number, TrafficRow>(own.map((r) => [r.hour_ms, { ...r }]));
    const parts = await Promise.all(Array.from({ length: shards }, (_, i) => this.shard(i + 1).traffic()));
    for (const row of parts.flat()) {
      const sum = byHour.get(row.hour_ms);
      if (sum === undefined) byHour.set(row.hour_ms, { ...row });
      else {
        sum.admitted += row.admitted;
        sum.refused += row.refused;
      }
    }
    return [...byHour.values()].sort((x, y) => x.hour_ms - y.hour_ms);
  }

  private ownTraffic(): TrafficRow[] {
    const rows = this.ctx.storage.sql.exec<TrafficRow>("SELECT hour_ms, admitted, refused FROM traffic ORDER BY hour_ms").toArray();
    const live = this.hourly;
    if (live.admitted + live.refused === 0) return rows;
    const same = rows.find((r) => r.hour_ms === live.hour);
    if (same !== undefined) {
      same.admitted += live.admitted;
      same.refused += live.refused;
      return rows;
    }
    return [...rows, { hour_ms: live.hour, admitted: live.admitted, refused: live.refused }].sort((x, y) => x.hour_ms - y.hour_ms);
  }

  /** Current usage without counting a request (operator API, manager). */
  async usage(defaults: Limits, now: number): Promise<Decision | null> {
    if (this.key === null) return null;
    const decision = this.withExtras(peek(this.windows, this.limits(defaults), now), this.credits, now);
    if (this.quota === null) return decision;
    const quota = await withTimeout(
      this.quotaObject().usage(this.quotaLimits() as OrgQuota, now),
      CONFIRM_TIMEOUT_MS,
      "the organization's quota",
    );
    return { ...decision, quota: quota.windows };
  }

  /**
   * Applies what the organization pushed; older versions and revisions change nothing. The home of
   * a sharded key passes it on to every shard (and to the shards a lowered limit retires) before it
   * answers, so a revocation the organization sees acknowledged holds at every shard's next request.
   */
  async sync(snapshot: KeySnapshot, shard?: { home: string; index: number }): Promise<SyncAck> {
    const before = this.key === null || this.key.shard_index !== null ? 0 : shardsFor(this.key.per_second ?? 0);
    const ack = this.apply(snapshot, shard);
    const key = this.key as KeyRow | null;
    if (key !== null && key.shard_index === null) {
      const count = Math.max(before, shardsFor(key.per_second ?? 0));
      if (count > 0) {
        const home = this.ctx.id.toString();
        await Promise.all(Array.from({ length: count }, (_, i) => this.shard(i + 1).sync(snapshot, { home, index: i + 1 })));
      }
    }
    return ack;
  }

  private apply(snapshot: KeySnapshot, shard: { home: string; index: number } | undefined): SyncAck {
    migrate(this.ctx.storage, MIGRATIONS);
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      const current = this.key;
      if (current === null || snapshot.version > current.version) {
        sql.exec(
          `INSERT INTO key (one, id, organization_id, status, per_second, per_day, version, revision) VALUES (1, ?, ?, ?, ?, ?, ?, 0)
           ON CONFLICT (one) DO UPDATE SET status = excluded.status, per_second = excluded.per_second,
             per_day = excluded.per_day, version = excluded.version`,
          snapshot.id,
          snapshot.organization_id,
          snapshot.status,
          snapshot.limits.per_second ?? null,
          snapshot.limits.per_day ?? null,
          snapshot.version,
        );
        if (snapshot.secrets !== undefined) {
          sql.exec(
            "UPDATE key SET secret_hash = ?, previous_hash = ?, previous_until_ms = ?",
            snapshot.secrets.current,
            snapshot.secrets.previous,
            snapshot.secrets.previous_until_ms,
          );
        }
      }
      for (const r of snapshot.revocations) {
        if (r.kind === "changed") {
          sql.exec(
            "INSERT INTO changed_clients (client_id, version) VALUES (?, ?) ON CONFLICT (client_id) DO UPDATE SET version = max(version, excluded.version)",
            r.client_id,
            r.version,
          );
        } else if (r.kind === "token") {
          sql.exec("INSERT OR IGNORE INTO revoked_tokens (token_id, expires_ms) VALUES (?, ?)", r.token_id, r.expires_ms);
        } else {
          sql.exec("INSERT OR IGNORE INTO revoked_clients (client_id, revision) VALUES (?, ?)", r.client_id, r.revision);
        }
      }
      // The quota as of the newest revision pushed: a late push of an older one changes nothing.
      if (snapshot.quota !== undefined) {
        sql.exec(
          "UPDATE key SET quota = ? WHERE revision <= ?",
          snapshot.quota === null ? null : JSON.stringify(snapshot.quota),
          snapshot.revision,
        );
      }
      if (current === null || snapshot.version >= current.version) this.syncCredits(snapshot.credits, Date.now());
      sql.exec("UPDATE key SET revision = max(revision, ?)", snapshot.revision);
      if (shard !== undefined) sql.exec("UPDATE key SET shard_home = ?, shard_index = ?", shard.home, shard.index);
    });
    // Limits may have changed: a refusal given under the old ones is not repeated.
    this.refusal = null;
    this.quotaRefusal = null;
    this.loadQuotaAndCredits();
    // Only after the transaction committed: memory never holds what storage does not.
    for (const r of snapshot.revocations) {
      if (r.kind === "changed") this.facts.set(`c:${r.client_id}`, Math.max(this.facts.get(`c:${r.client_id}`) ?? 0, r.version));
      else if (r.kind === "token") this.facts.set(`t:${r.token_id}`, r.expires_ms);
      else this.facts.set(`r:${r.client_id}`, 1);
    }
    const tokenExpiries = snapshot.revocations.flatMap((r) => (r.kind === "token" ? [r.expires_ms] : []));
    if (tokenExpiries.length > 0) this.schedule(Math.max(Math.min(...tokenExpiries), this.prunedAt + PRUNE_INTERVAL_MS));
    this.key = sql.exec<KeyRow>(`SELECT ${KEY_COLUMNS} FROM key`).one();
    this.confirmedAt = Date.now();
    return { version: this.key.version, revision: this.key.revision };
  }

  /**
   * Asks the organization for what this copy lacks; concurrent requests share one call. A failure
   * is thrown to the request (a 503), and the next request asks again.
   */
  private confirm(): Promise<void> {
    return this.confirming.run(async () => {
      const key = this.key as KeyRow;
      const org = this.env.ORGS.get(this.env.ORGS.idFromName(key.organization_id));
      const snapshot = await withTimeout(org.confirmKey(key.id, key.revision), CONFIRM_TIMEOUT_MS, "the organization's confirmation");
      // The organization creates every key before pushing it: one it does not know is refused.
      if (snapshot === null) throw new Error("the organization does not know this API key");
      await this.sync(snapshot);
    });
  }

  /**
   * The organization was deleted and its retention has passed: the key's object forgets
   * everything, and answers "unknown" (401) from then on, as for a key never issued.
   */
  async erase(): Promise<void> {
    const key = this.key;
    const shards = key === null || key.shard_index !== null ? 0 : shardsFor(key.per_second ?? 0);
    await Promise.all(Array.from({ length: shards }, (_, i) => this.shard(i + 1).erase()));
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.key = null;
  }

  /**
   * Flushes noted uses to the organization (at most once a minute; retried until it lands) and
   * prunes what has expired, then sets itself for whichever is due next.
   */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const key = this.key;
    if (key === null) return;
    const sql = this.ctx.storage.sql;
    const more = this.prune(Date.now());
    const due = sql.exec<{ subject: string; at: number }>("SELECT subject, at FROM uses WHERE at > flushed_at").toArray();
    if (due.length > 0) {
      try {
        const org = this.env.ORGS.get(this.env.ORGS.idFromName(key.organization_id));
        await org.recordUses(key.id, due);
        for (const u of due) sql.exec("UPDATE uses SET flushed_at = ? WHERE subject = ?", u.at, u.subject);
      } catch (err) {
        log.warn("last-used flush failed; retrying", { key: key.id, detail: describeError(err) });
        this.planFlush();
      }
    }
    const next = more ? Date.now() : this.nextPrune();
    if (next !== null) this.schedule(next);
  }

  private noteUse(subject: string, now: number): void {
    const last = this.noted.get(subject) ?? 0;
    if (now - last < USE_RESOLUTION_MS) return;
    this.ctx.storage.sql.exec(
      "INSERT INTO uses (subject, at) VALUES (?, ?) ON CONFLICT (subject) DO UPDATE SET at = max(at, excluded.at)",
      subject,
      now,
    );
    this.noted.set(subject, now);
    this.planFlush();
  }

  /** Sets the flush alarm unless one is set: moving it on every use would postpone it for ever. */
  private planFlush(): void {
    this.schedule(Date.now() + USE_RESOLUTION_MS);
  }

  /** Sets the alarm for `at` unless it is already set to go off no later. */
  private schedule(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  /** The key's limits; a per-second limit stored before the ceiling is served at MAX_KEY_PER_SECOND. */
  private limits(defaults: Limits): Limits {
    const perSecond = this.key?.per_second ?? defaults.per_second;
    return { per_second: Math.min(perSecond, MAX_KEY_PER_SECOND), per_day: this.key?.per_day ?? defaults.per_day };
  }
}
