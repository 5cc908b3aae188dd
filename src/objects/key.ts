/**
 * KeyObject: one SQLite-backed Durable Object per API key, named by the SHA-256 of the key, so the
 * edge finds it from the presented key alone (no lookup). It is the one Durable Object call every
 * /v1 request makes. What it decides is decided in ratelimit/admission.ts, a pure core (issue 41):
 * this object loads the state, hands each request to `plan`, performs the one call a step names
 * (the organization's confirmation, a shard, the home's grant, the organization's QuotaObject),
 * resumes the core with the answer, and persists the step's writes with the same one-row upserts as
 * always. Storage and calls only; every rule is in the core.
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
import { SingleFlight } from "../lib/flight";
import { withTimeout } from "../lib/time";
import { describeError, log } from "../log";
import {
  type Admission,
  type AdmissionState,
  type AdmitInput,
  type AdmitPending,
  type Answer,
  type Applied,
  type Asking,
  applySnapshot,
  type Context,
  drive,
  EMPTY_ADMISSION,
  type Facts,
  type Grant,
  type GrantPending,
  type GrantRequest,
  type Holding,
  type KeyCopy,
  type KeyCreditsState,
  type KeySnapshot,
  limitsOf,
  type Need,
  type Owed,
  plan,
  planGrant,
  type QuotaAnswer,
  quotaLimits,
  type Revocation,
  restored,
  resume,
  resumeGrant,
  type Step,
  type SyncAck,
  settlement,
  shardsCounted,
  shardsEverHad,
  shardsToSync,
  takeBack,
  type Write,
  withCredits,
} from "../ratelimit/admission";
import type { CreditsRefill } from "../ratelimit/credits";
import { type Lease, NO_LEASE, type Owed as OwedBack, owedAmount, type Paid } from "../ratelimit/lease";
import type { QuotaDecision } from "../ratelimit/quota";
import { type Decision, peek } from "../ratelimit/windows";
import { USE_RESOLUTION_MS } from "../schemas/admin";
import type { Limits, OrgQuota } from "../schemas/records";
import { recordProofAt } from "./proofs";
import type { QuotaObject } from "./quota";
import { type Migration, migrate, pruneExpired } from "./sql";

export {
  KEY_LEASE_MS,
  KEY_SLICE_CAP,
  MAX_SHARDS,
  QUOTA_SLICE_CAP,
  SHARD_CAPACITY,
  shardsFor,
  TRAFFIC_DAYS,
} from "../ratelimit/admission";
export type { Admission, AdmitInput, Grant, GrantRequest, KeySnapshot, Revocation, SyncAck };

/** A shard's object name: its home object's id and its index (1..n). */
export const shardName = (homeId: string, index: number): string => `shard:${homeId}:${index}`;

/** Which shard (1..n) serves a request: any of them (DPoP proofs no longer need one: objects/proofs.ts). */
export function pickShard(n: number): number {
  return 1 + Math.floor(Math.random() * n);
}

/** A use is noted at most this often per subject, and flushed to the organization as often (schemas/admin.ts). */
export { USE_RESOLUTION_MS };
/**
 * How long a request waits for another object (the organization's confirmation, the key's home,
 * the quota) before it fails closed (503, retry in 1 s): a hung object must not hold every request
 * of its keys. Generous against a healthy call (a few ms) and well under a client's patience.
 */
export const CONFIRM_TIMEOUT_MS = 2_000;
/**
 * A holder's alarm hands back what its slices left unspent this long after their second ended, if
 * no question of its own carried it before (a busy holder asks at least once a second).
 */
export const SETTLE_AFTER_MS = 2_000;

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
      "CREATE TABLE proof_jtis (jti TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL) WITHOUT ROWID",
    ],
  },
  {
    // Issue 23: requests admitted and refused by the limits, per hour, for the traffic charts.
    version: 3,
    statements: [
      "CREATE TABLE traffic (hour_ms INTEGER PRIMARY KEY, admitted INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0)",
    ],
  },
  {
    // Issue 24: the organization's shared quota (OrgQuota JSON) and the key's credits.
    version: 4,
    statements: [
      "ALTER TABLE key ADD COLUMN quota TEXT",
      `CREATE TABLE credits (one INTEGER PRIMARY KEY CHECK (one = 1), remaining INTEGER NOT NULL, epoch INTEGER NOT NULL,
        added INTEGER NOT NULL, refill TEXT, next_refill_ms INTEGER)`,
    ],
  },
  {
    // Issue 29: what expires is pruned by time through these indexes; the secrets a rotated key answers to.
    version: 5,
    statements: [
      "CREATE INDEX proof_jtis_by_expiry ON proof_jtis (expires_ms)",
      "CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_ms)",
      "ALTER TABLE key ADD COLUMN secret_hash TEXT",
      "ALTER TABLE key ADD COLUMN previous_hash TEXT",
      "ALTER TABLE key ADD COLUMN previous_until_ms INTEGER",
    ],
  },
  {
    // Issue 33: the current hour's traffic counts live in the windows row (one row per request).
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
  {
    // Issue 41: the slices held and what is owed back live in the windows row (still one row per
    // request), so a restart returns them instead of losing them; a home's high-water mark of
    // shards (NULL for a copy older than this: erasure then reaches MAX_SHARDS); DPoP proof ids
    // moved to the ProofObjects (objects/proofs.ts).
    version: 8,
    statements: [
      "ALTER TABLE windows ADD COLUMN slice TEXT",
      "ALTER TABLE windows ADD COLUMN quota_slice TEXT",
      "ALTER TABLE key ADD COLUMN shard_high INTEGER",
      "DROP TABLE proof_jtis",
    ],
  },
];

export interface TrafficRow extends Record<string, SqlStorageValue> {
  hour_ms: number;
  admitted: number;
  refused: number;
}

/**
 * Expired rows (tokens revoked one by one, flushed uses) are deleted by the alarm at most this
 * often, PRUNE_BATCH per table and run (the alarm runs again at once while more are due).
 */
export const PRUNE_INTERVAL_MS = 60_000;
export const PRUNE_BATCH = 5_000;
/**
 * Revocation facts read from SQL are remembered in memory up to this many entries (then forgotten
 * all at once and read again): the hot path reads SQL only for a credential or token this object
 * has not met since it started, and a restart loads nothing proportional to history.
 */
const FACTS_CACHED = 10_000;

type KeyRow = KeyCopy & Record<string, SqlStorageValue>;

/** The key row as the core reads it: the copy's columns; the quota column goes to the state apart. */
const keyCopyOf = ({ quota: _quota, ...copy }: KeyRow & { quota: string | null }): KeyCopy => copy;

const KEY_COLUMNS =
  "id, organization_id, status, per_second, per_day, version, revision, secret_hash, previous_hash, previous_until_ms, shard_home, shard_index, shard_high";

interface WindowsRow extends Record<string, SqlStorageValue> {
  second: number;
  second_count: number;
  day: number;
  day_count: number;
  hour_ms: number;
  hour_admitted: number;
  hour_refused: number;
  slice: string | null;
  quota_slice: string | null;
}

export class KeyObject extends DurableObject<Env> {
  /** What admission decides on (ratelimit/admission.ts): the rows below, and what lives in memory. */
  private state: AdmissionState = EMPTY_ADMISSION;
  /**
   * What the revocation tables say of a credential or token, remembered after the first read
   * (FACTS_CACHED): `r:<client_id>` 1 when revoked, `c:<client_id>` the version below which its KV
   * copy is stale, `t:<token_id>` until when it is revoked (0: it is not). `sync` writes what it
   * commits; nothing is loaded when the object starts.
   */
  private readonly facts = new Map<string, number>();
  /** When the alarm last pruned expired rows (memory: a restarted object prunes at its first alarm). */
  private prunedAt = 0;
  /** Last noted use per subject ("key" or a client_id), in memory to skip most writes. */
  private readonly noted = new Map<string, number>();
  /** When the alarm is set for, or null when none is. */
  private alarmAt: number | null = null;
  private readonly confirming = new SingleFlight();
  /** A shard's shared question to its home, and a key's to its QuotaObject (requests meanwhile wait for it). */
  private readonly askingHome = new SingleFlight<Answer>();
  private readonly askingQuota = new SingleFlight<Answer>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // An object that never received a key (any well-formed key that was never issued, say from
    // someone guessing) writes nothing: it answers "unknown" from an empty database, so guesses
    // cannot fill storage. Its tables are created by the first sync.
    const sql = ctx.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").toArray().length === 0) return;
    migrate(ctx.storage, MIGRATIONS);
    const row = sql.exec<KeyRow & { quota: string | null }>(`SELECT ${KEY_COLUMNS}, quota FROM key`).toArray()[0];
    const w = sql.exec<WindowsRow>("SELECT * FROM windows").toArray()[0];
    const slice = decodeHolding(w?.slice ?? null);
    const quotaSlice = decodeHolding(w?.quota_slice ?? null);
    this.state = {
      ...EMPTY_ADMISSION,
      key: row === undefined ? null : keyCopyOf(row),
      windows: w ? { second: w.second, secondCount: w.second_count, day: w.day, dayCount: w.day_count } : EMPTY_ADMISSION.windows,
      hourly: w ? { hour: w.hour_ms, admitted: w.hour_admitted, refused: w.hour_refused } : EMPTY_ADMISSION.hourly,
      credits: this.readCredits(),
      quota: row?.quota ? (JSON.parse(row.quota) as OrgQuota) : null,
      // A restart lost the answers that came with the slices: their rest is owed back.
      slice: restored<Decision>(slice.lease, slice.owed),
      quotaSlice: restored<QuotaDecision>(quotaSlice.lease, quotaSlice.owed),
    };
    // Uses are pruned once flushed and a minute old (`prune`): this is the last minute's subjects.
    for (const u of sql.exec<{ subject: string; at: number }>("SELECT subject, at FROM uses")) this.noted.set(u.subject, u.at);
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
      this.scheduleSettle();
    });
  }

  // -------------------------------------------------------------------------------------------
  // The hot path and the home's grant: the core decides, this object performs and persists

  /** The hot path: authenticate the key, check the client's revocation, count the request. */
  admit(input: AdmitInput): Admission | Promise<Admission> {
    const ctx: Context = { asking: this.askingNow, facts: () => this.factsOf(input) };
    const answer = drive<Admission, AdmitPending>(plan(this.state, input, Date.now(), ctx), {
      state: () => this.state,
      persist: (state, writes) => this.persist(state, writes),
      perform: (need) => this.perform(need, input),
      resume: (state, pending, a) => resume(state, pending, a, ctx),
    });
    const admitted = answer instanceof Promise ? answer.then((a) => this.used(input, a)) : this.used(input, answer);
    return input.proof === undefined ? admitted : this.withLegacyProof(input.proof, admitted);
  }

  /**
   * The gate of the release before issue 41 sends a DPoP proof here and reads `proofReplayed`: the
   * proof is recorded where this release records it (objects/proofs.ts), so a rollout opens no gap.
   */
  private async withLegacyProof(proof: { jti: string; expiresMs: number }, admitted: Admission | Promise<Admission>): Promise<Admission> {
    const [answer, fresh] = await Promise.all([admitted, recordProofAt(this.env.PROOFS, proof)]);
    return answer.status === "active" ? { ...answer, proofReplayed: !fresh } : answer;
  }

  /** Notes the uses an admitted request makes (the key's, and a credential's whose secret matched). */
  private used(input: AdmitInput, answer: Admission): Admission {
    if (answer.status === "active" && answer.decision.allowed) {
      this.noteUse("key", input.now);
      if (input.clientId !== undefined && input.clientAuthenticated && !answer.clientRevoked) this.noteUse(input.clientId, input.now);
    }
    return answer;
  }

  /** A shard asks for a slice of the current second's budget, and gives back what its last slices left. */
  async grant(request: GrantRequest): Promise<Grant> {
    const key = this.state.key;
    if ((key === null || key.shard_index !== null) && owedAmount(request.returned ?? []) > 0) {
      // Not a key's home (erased, or asked by mistake): what the shard returned has nowhere to go.
      log.warn("slice return lost (never counted twice)", { lost_return: owedAmount(request.returned ?? []) });
    }
    return drive<Grant, GrantPending>(planGrant(this.state, request, Date.now(), this.askingNow), {
      state: () => this.state,
      persist: (state, writes) => this.persist(state, writes),
      perform: (need) => this.perform(need),
      resume: (state, pending, a) => resumeGrant(state, pending, a, this.askingNow),
    });
  }

  /** A quiet shard hands back what its slices left unspent (its alarm). */
  async settle(returned: OwedBack[]): Promise<void> {
    if (this.state.key === null) return;
    const back = takeBack(this.state, returned);
    this.persist(back.state, back.writes);
  }

  /** What is in flight, read by the core at each step (one object for the object's life). */
  private readonly askingNow: Asking = {
    get home(): boolean {
      return this.owner.askingHome.running !== null;
    },
    get quota(): boolean {
      return this.owner.askingQuota.running !== null;
    },
    owner: this,
  } as Asking & { owner: KeyObject };

  /** The one call a step needs; every failure is an answer (the core fails closed on it). */
  private async perform(need: Need, input?: AdmitInput): Promise<Answer> {
    switch (need.kind) {
      case "confirm":
        try {
          await this.confirm();
          return { kind: "confirmed" };
        } catch (err) {
          log.warn("API key lease not confirmed; refusing until it is", { key: this.state.key?.id, detail: describeError(err) });
          return { kind: "failed" };
        }
      case "shard": {
        const index = pickShard(need.count);
        try {
          const admission = this.shard(index).admit({ ...(input as AdmitInput), shard: index });
          return { kind: "shard", admission: await withTimeout(Promise.resolve(admission), CONFIRM_TIMEOUT_MS, "the key's shard") };
        } catch (err) {
          // The shard may have counted it before its answer was lost: under-admission, never over.
          log.warn("key shard unreachable; the home counts the request", { key: this.state.key?.id, detail: describeError(err) });
          return { kind: "failed" };
        }
      }
      case "grant":
        return need.shared ? this.askingHome.run(() => this.askHome(need.request)) : this.askHome(need.request);
      case "take":
        return this.askQuota(need.returned, (quota, id) => quota.take(need.limits, need.now, need.cost, id, need.returned));
      case "quotaSlice": {
        const ask = () =>
          this.askQuota(need.returned, (quota, id) => quota.grant(need.limits, need.now, need.min, need.want, id, need.returned));
        return need.shared ? this.askingQuota.run(ask) : ask();
      }
      case "wait": {
        const running = need.on === "home" ? this.askingHome.running : this.askingQuota.running;
        if (running !== null) await running.catch(() => undefined);
        return { kind: "waited" };
      }
    }
  }

  private async askHome(request: GrantRequest): Promise<Answer> {
    const key = this.state.key as KeyCopy;
    try {
      return { kind: "grant", grant: await withTimeout<Grant>(this.home(key).grant(request), CONFIRM_TIMEOUT_MS, "the key's home object") };
    } catch (err) {
      log.warn("key home unreachable; refusing", {
        key: key.id,
        detail: describeError(err),
        lost_return: owedAmount(request.returned ?? []),
      });
      return { kind: "grant", grant: { status: "unavailable" } };
    }
  }

  /**
   * One call to the organization's QuotaObject, identified so that a call given up on (and answered
   * 503) is released there: taken back if it was counted, refused uncounted if it lands later.
   */
  private async askQuota(
    returned: Owed[],
    call: (quota: DurableObjectStub<QuotaObject>, id: string) => Promise<QuotaAnswer>,
  ): Promise<Answer> {
    const quota = this.quotaObject();
    const id = crypto.randomUUID();
    try {
      return { kind: "quota", answer: await withTimeout(call(quota, id), CONFIRM_TIMEOUT_MS, "the organization's quota") };
    } catch (err) {
      log.warn("organization quota unreachable; refusing", {
        key: this.state.key?.id,
        detail: describeError(err),
        lost_return: owedAmount(returned),
      });
      quota.release(id).catch((e: unknown) => log.warn("quota release failed", { key: this.state.key?.id, detail: describeError(e) }));
      return { kind: "failed" };
    }
  }

  /**
   * Persists a step: its writes, from its state, then the state becomes this object's (storage
   * first: memory never counts what storage did not). The windows row, however many times a step
   * names it, is one upsert.
   */
  private persist(state: AdmissionState, writes: Write[]): void {
    const sql = this.ctx.storage.sql;
    let windows = false;
    for (const w of writes) {
      switch (w.kind) {
        case "windows":
          windows = true;
          break;
        case "credits":
          if (state.credits === null) sql.exec("DELETE FROM credits");
          else writeCredits(sql, state.credits);
          break;
        case "traffic":
          sql.exec(
            `INSERT INTO traffic (hour_ms, admitted, refused) VALUES (?1, ?2, ?3)
             ON CONFLICT (hour_ms) DO UPDATE SET admitted = admitted + ?2, refused = refused + ?3`,
            w.hour,
            w.admitted,
            w.refused,
          );
          break;
        case "trafficPrune":
          sql.exec("DELETE FROM traffic WHERE hour_ms < ?", w.before);
          break;
      }
    }
    if (windows) writeWindows(sql, state);
    this.state = state;
    this.scheduleSettle();
  }

  /** A slice held, or a rest owed: the alarm hands it back if no question carries it first. */
  private scheduleSettle(): void {
    const due = Math.min(settleAt(this.state.slice), settleAt(this.state.quotaSlice));
    if (due !== Number.POSITIVE_INFINITY) this.schedule(Math.max(Date.now(), due) + SETTLE_AFTER_MS);
  }

  // -------------------------------------------------------------------------------------------
  // What the organization pushes

  /**
   * Applies what the organization pushed; older versions and revisions change nothing. The home of
   * a sharded key passes it on to every shard (and to the shards a lowered limit retires) before it
   * answers; a shard behind the push's revisions is sent the whole set, so a revocation the
   * organization sees acknowledged holds at every shard's next request.
   */
  async sync(snapshot: KeySnapshot, shard?: { home: string; index: number }): Promise<SyncAck> {
    const before = this.state.key;
    const ack = this.apply(snapshot, shard);
    const count = shardsToSync(before, this.state.key);
    if (count > 0) {
      const home = this.ctx.id.toString();
      await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const target = { home, index: i + 1 };
          const answer = await this.shard(i + 1).sync(snapshot, target);
          // A shard behind the push gets the whole set, unless this home is behind too: then its
          // set has the same gap, and the shard stays behind (it asks the organization itself).
          if (answer.behind && ack.behind !== true) await this.shard(i + 1).sync(this.wholeSet(snapshot), target);
        }),
      );
    }
    return ack;
  }

  private apply(snapshot: KeySnapshot, shard: { home: string; index: number } | undefined): SyncAck {
    migrate(this.ctx.storage, MIGRATIONS);
    const applied: Applied = applySnapshot(this.state, snapshot, shard, Date.now());
    const sql = this.ctx.storage.sql;
    const key = applied.state.key as KeyCopy;
    this.ctx.storage.transactionSync(() => {
      sql.exec(
        `INSERT INTO key (one, id, organization_id, status, per_second, per_day, version, revision, secret_hash, previous_hash,
           previous_until_ms, shard_home, shard_index, shard_high, quota)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (one) DO UPDATE SET status = ?3, per_second = ?4, per_day = ?5, version = ?6, revision = ?7,
           secret_hash = ?8, previous_hash = ?9, previous_until_ms = ?10, shard_home = ?11, shard_index = ?12,
           shard_high = ?13, quota = ?14`,
        key.id,
        key.organization_id,
        key.status,
        key.per_second,
        key.per_day,
        key.version,
        key.revision,
        key.secret_hash,
        key.previous_hash,
        key.previous_until_ms,
        key.shard_home,
        key.shard_index,
        key.shard_high,
        applied.state.quota === null ? null : JSON.stringify(applied.state.quota),
      );
      for (const r of applied.revocations) {
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
      if (applied.credits) {
        if (applied.state.credits === null) sql.exec("DELETE FROM credits");
        else writeCredits(sql, applied.state.credits);
      }
      if (applied.dropped) writeWindows(sql, applied.state);
    });
    // Only after the transaction committed: memory never holds what storage does not.
    this.state = applied.state;
    for (const r of applied.revocations) {
      if (r.kind === "changed") this.facts.set(`c:${r.client_id}`, Math.max(this.facts.get(`c:${r.client_id}`) ?? 0, r.version));
      else if (r.kind === "token") this.facts.set(`t:${r.token_id}`, r.expires_ms);
      else this.facts.set(`r:${r.client_id}`, 1);
    }
    const tokenExpiries = applied.revocations.flatMap((r) => (r.kind === "token" ? [r.expires_ms] : []));
    if (tokenExpiries.length > 0) this.schedule(Math.max(Math.min(...tokenExpiries), this.prunedAt + PRUNE_INTERVAL_MS));
    this.scheduleSettle();
    return applied.ack;
  }

  /** The push with every revocation this copy holds (since 0), for a shard that was behind it. */
  private wholeSet(snapshot: KeySnapshot): KeySnapshot {
    const sql = this.ctx.storage.sql;
    const now = Date.now();
    const revocations: Revocation[] = [
      ...sql
        .exec<{ client_id: string; revision: number }>("SELECT client_id, revision FROM revoked_clients")
        .toArray()
        .map((r) => ({ client_id: r.client_id, revision: r.revision })),
      ...sql
        .exec<{ client_id: string; version: number }>("SELECT client_id, version FROM changed_clients")
        .toArray()
        .map((r) => ({ client_id: r.client_id, revision: 0, kind: "changed" as const, version: r.version })),
      ...sql
        .exec<{ token_id: string; expires_ms: number }>("SELECT token_id, expires_ms FROM revoked_tokens WHERE expires_ms > ?", now)
        .toArray()
        .map((r) => ({ client_id: "", revision: 0, kind: "token" as const, token_id: r.token_id, expires_ms: r.expires_ms })),
    ];
    return { ...snapshot, since: 0, revision: (this.state.key as KeyCopy).revision, revocations };
  }

  /**
   * Asks the organization for what this copy lacks; concurrent requests share one call. A failure
   * is thrown to the request (a 503), and the next request asks again.
   */
  private confirm(): Promise<void> {
    return this.confirming.run(async () => {
      const key = this.state.key as KeyCopy;
      const org = this.env.ORGS.get(this.env.ORGS.idFromName(key.organization_id));
      const snapshot = await withTimeout(org.confirmKey(key.id, key.revision), CONFIRM_TIMEOUT_MS, "the organization's confirmation");
      // The organization creates every key before pushing it: one it does not know is refused.
      if (snapshot === null) throw new Error("the organization does not know this API key");
      await this.sync(snapshot);
    });
  }

  // -------------------------------------------------------------------------------------------
  // Reads, erasure, and the alarm

  /**
   * The hourly traffic counts (oldest first), for the charts and the operator API: the stored hours
   * and the live one, summed over every shard the key ever had (each counts what it served).
   */
  async traffic(): Promise<TrafficRow[]> {
    const key = this.state.key;
    if (key === null) return [];
    const own = this.ownTraffic();
    const shards = shardsCounted(key);
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
    const live = this.state.hourly;
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
    const s = this.state;
    if (s.key === null) return null;
    const decision = withCredits(peek(s.windows, limitsOf(s.key, defaults), now), s.credits, now);
    const quota = quotaLimits(s.quota);
    if (quota === null) return decision;
    const usage = await withTimeout(this.quotaObject().usage(quota, now), CONFIRM_TIMEOUT_MS, "the organization's quota");
    return { ...decision, quota: usage.windows };
  }

  /**
   * The organization was deleted and its retention has passed: the key's object, and every shard it
   * ever had, forget everything, and answer "unknown" (401) from then on, as for a key never issued.
   */
  async erase(): Promise<void> {
    const shards = shardsEverHad(this.state.key);
    await Promise.all(Array.from({ length: shards }, (_, i) => this.shard(i + 1).erase()));
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.state = EMPTY_ADMISSION;
    this.facts.clear();
  }

  /**
   * Hands back what the slices left unspent (to the home, or to the QuotaObject), flushes noted
   * uses to the organization (at most once a minute; retried until it lands), prunes what has
   * expired, then sets itself for whichever is due next.
   */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const key = this.state.key;
    if (key === null) return;
    const now = Date.now();
    await this.settleHoldings(now);
    // A slice still current when this alarm ran (set by an earlier one) is handed back by the next.
    this.scheduleSettle();
    const sql = this.ctx.storage.sql;
    const more = this.prune(now);
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

  /** A quiet holder's returns: handed over at most once (cleared before the call that carries them). */
  private async settleHoldings(now: number): Promise<void> {
    const key = this.state.key as KeyCopy;
    const due = settlement(this.state, now);
    if (due === null) return;
    this.persist(due.state, due.writes);
    const { toHome, toQuota } = due;
    const calls: Promise<void>[] = [];
    if (toHome !== null) calls.push(this.home(key).settle(toHome));
    if (toQuota !== null) calls.push(this.quotaObject().settle(toQuota));
    const results = await Promise.allSettled(calls);
    for (const r of results) {
      if (r.status === "rejected") log.warn("slice return lost (never counted twice)", { key: key.id, detail: describeError(r.reason) });
    }
  }

  /**
   * Deletes what has expired, PRUNE_BATCH rows per table through their expiry indexes: tokens
   * revoked one by one past their own expiry, and uses already flushed to the organization and
   * older than USE_RESOLUTION_MS. True when more are due at once.
   */
  prune(now: number): boolean {
    const sql = this.ctx.storage.sql;
    let more = false;
    this.ctx.storage.transactionSync(() => {
      const tokens = pruneExpired(sql, "revoked_tokens", "token_id", "expires_ms", now, PRUNE_BATCH);
      sql.exec("DELETE FROM uses WHERE flushed_at >= at AND at < ?", now - USE_RESOLUTION_MS);
      more = tokens === PRUNE_BATCH;
    });
    for (const [subject, at] of this.noted) if (at < now - USE_RESOLUTION_MS) this.noted.delete(subject);
    this.prunedAt = now;
    return more;
  }

  /** When the next expired row is due for pruning (indexed minimum), no sooner than PRUNE_INTERVAL_MS after the last run. */
  private nextPrune(): number | null {
    const soonest = this.ctx.storage.sql.exec<{ t: number | null }>("SELECT min(expires_ms) AS t FROM revoked_tokens").one().t;
    return soonest === null ? null : Math.max(soonest, this.prunedAt + PRUNE_INTERVAL_MS);
  }

  // -------------------------------------------------------------------------------------------
  // Facts, uses, stubs

  /** What the revocation tables say of what the request presents. */
  private factsOf(input: AdmitInput): Facts {
    const revokedToken = (id: string | undefined) => id !== undefined && this.tokenRevokedUntil(id) > input.now;
    const clientRevoked = input.clientId !== undefined && this.clientRevoked(input.clientId);
    return {
      clientRevoked,
      clientStale:
        input.clientId !== undefined && input.clientVersion !== undefined && this.changedVersion(input.clientId) > input.clientVersion,
      tokenRevoked: revokedToken(input.tokenId),
      inspectedTokenRevoked:
        input.inspect !== undefined && (revokedToken(input.inspect.tokenId) || this.clientRevoked(input.inspect.clientId)),
    };
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

  /** A shard's home object. */
  private home(key: KeyCopy): DurableObjectStub<KeyObject> {
    return this.env.KEYS.get(this.env.KEYS.idFromString(key.shard_home as string));
  }

  /** The stub of this key's shard `index`. */
  private shard(index: number): DurableObjectStub<KeyObject> {
    return this.env.KEYS.get(this.env.KEYS.idFromName(shardName(this.ctx.id.toString(), index)));
  }

  private quotaObject() {
    const orgId = (this.state.key as KeyCopy).organization_id;
    return this.env.QUOTAS.get(this.env.QUOTAS.idFromName(orgId));
  }
}

/** When a holding's rest falls due: now if something is owed, its second's end if a slice is held; never if neither. */
function settleAt(h: Holding<unknown>): number {
  if (h.owed.length > 0) return 0;
  return h.lease.remaining > 0 ? (h.lease.second + 1) * 1000 : Number.POSITIVE_INFINITY;
}

/**
 * The one row a request writes: the windows, the current hour's traffic counts, and the slices held
 * and owed back. An upsert updates it in place (REPLACE would delete and re-insert it).
 */
function writeWindows(sql: SqlStorage, s: AdmissionState): void {
  sql.exec(
    `INSERT INTO windows (one, second, second_count, day, day_count, hour_ms, hour_admitted, hour_refused, slice, quota_slice)
     VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
     ON CONFLICT (one) DO UPDATE SET second = ?1, second_count = ?2, day = ?3, day_count = ?4,
       hour_ms = ?5, hour_admitted = ?6, hour_refused = ?7, slice = ?8, quota_slice = ?9`,
    s.windows.second,
    s.windows.secondCount,
    s.windows.day,
    s.windows.dayCount,
    s.hourly.hour,
    s.hourly.admitted,
    s.hourly.refused,
    encodeHolding(s.slice),
    encodeHolding(s.quotaSlice),
  );
}

function writeCredits(sql: SqlStorage, credits: KeyCreditsState): void {
  sql.exec(
    `INSERT INTO credits (one, remaining, epoch, added, refill, next_refill_ms) VALUES (1, ?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (one) DO UPDATE SET remaining = ?1, epoch = ?2, added = ?3, refill = ?4, next_refill_ms = ?5`,
    credits.remaining,
    credits.epoch,
    credits.added,
    credits.refill === null ? null : JSON.stringify(credits.refill),
    credits.nextRefillMs,
  );
}

/**
 * A slice held and what is owed back, as the windows row stores them: numbers joined by commas,
 * the lease first and each entry owed after a semicolon (no JSON on a shard's every request);
 * null when there is neither.
 */
function encodeHolding(h: Holding<unknown>): string | null {
  const l = h.lease;
  if (l.remaining === 0 && h.owed.length === 0) return null;
  const paid = (p: Paid) => `${p.day},${p.quotaDay},${p.month},${p.epoch ?? ""},${p.period ?? ""}`;
  const owed = h.owed.map((o) => `;${o.amount},${paid(o.paid)}`).join("");
  return `${l.second},${l.remaining},${l.admitted},${l.previous},${paid(l.paid)}${owed}`;
}

function decodeHolding(text: string | null): { lease: Lease; owed: Owed[] } {
  if (text === null) return { lease: NO_LEASE, owed: [] };
  const [leaseText, ...owedTexts] = text.split(";");
  const num = (v: string | undefined) => (v === undefined || v === "" ? null : Number(v));
  const paid = (f: (string | undefined)[]): Paid => ({
    day: num(f[0]) ?? 0,
    quotaDay: num(f[1]) ?? 0,
    month: num(f[2]) ?? 0,
    epoch: num(f[3]),
    period: num(f[4]),
  });
  const l = (leaseText ?? "").split(",");
  const lease: Lease = {
    second: num(l[0]) ?? 0,
    remaining: num(l[1]) ?? 0,
    admitted: num(l[2]) ?? 0,
    previous: num(l[3]) ?? 0,
    paid: paid(l.slice(4)),
  };
  const owed = owedTexts.map((t) => {
    const o = t.split(",");
    return { amount: num(o[0]) ?? 0, paid: paid(o.slice(1)) };
  });
  return { lease, owed };
}

export type { Step };
