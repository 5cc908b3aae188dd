/**
 * The KeyObject's shell: everything the object does besides being a Durable Object (docs/
 * architecture.md, "Shells and their hosts"). What it decides is decided in ratelimit/admission.ts,
 * a pure core: the shell loads the state from its rows (key-rows.ts), hands each request to `plan`,
 * performs the one call a step names through its peers (the organization's confirmation, a shard,
 * the home's grant, the organization's QuotaObject), resumes the core with the answer, and persists
 * the step's writes. Its host gives it storage, peers and a clock: objects/key.ts over
 * `ctx.storage` and Durable Object stubs, the property harness (test/unit/admission-properties.
 * test.ts) over an in-memory SQLite and scheduled peers, where a restart is a new shell over the
 * same rows. objects/key.ts explains the object's load, sharding and what its rows hold.
 *
 * Longer than 600 lines on purpose: it is one object's whole life (a request, a grant, a push, the
 * alarm, erasure) over one state, and a reader follows a request from `admit` to `persist` here
 * without leaving the file; its rows' encoding is key-rows.ts.
 */
import { SingleFlight } from "../../lib/flight";
import { withTimeout } from "../../lib/time";
import { describeError, log } from "../../log";
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
} from "../../ratelimit/admission";
import { type Owed as OwedBack, owedAmount } from "../../ratelimit/lease";
import type { QuotaDecision, QuotaLimits, QuotaTaken } from "../../ratelimit/quota";
import { type Decision, peek } from "../../ratelimit/windows";
import { USE_RESOLUTION_MS } from "../../schemas/admin";
import type { Limits, OrgQuota } from "../../schemas/records";
import { migrate, pruneExpired } from "../sql";
import {
  BASELINE,
  decodeHolding,
  KEY_COLUMNS,
  type KeyRow,
  keyCopyOf,
  MIGRATIONS,
  readCredits,
  type TrafficRow,
  type WindowsRow,
  writeCredits,
  writeWindows,
} from "./key-rows";
import type { Clock, ShellStorage } from "./storage";

export {
  KEY_LEASE_MS,
  KEY_SLICE_CAP,
  MAX_SHARDS,
  QUOTA_SLICE_CAP,
  SHARD_CAPACITY,
  shardsFor,
  TRAFFIC_DAYS,
} from "../../ratelimit/admission";

/** A shard's object name: its home object's id and its index (1..n). */
export const shardName = (homeId: string, index: number): string => `shard:${homeId}:${index}`;

/** Which shard (1..n) serves a request: any of them (DPoP proofs no longer need one: objects/proofs.ts). */
export function pickShard(n: number, random: () => number = Math.random): number {
  return 1 + Math.floor(random() * n);
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

/** What a shell calls of another KeyObject (a shard, or a shard's home): its RPC methods. */
export interface KeyPort {
  admit(input: AdmitInput): Admission | Promise<Admission>;
  grant(request: GrantRequest): Promise<Grant>;
  settle(returned: OwedBack[]): Promise<void>;
  sync(snapshot: KeySnapshot, shard?: { home: string; index: number }): Promise<SyncAck>;
  traffic(): Promise<TrafficRow[]>;
  erase(): Promise<void>;
}

/** What a shell calls of its organization's QuotaObject (shells/quota.ts). */
export interface QuotaPort {
  take(limits: QuotaLimits, now: number, cost: number, id?: string, returned?: OwedBack[]): Promise<QuotaTaken>;
  grant(limits: QuotaLimits, now: number, min: number, want: number, id?: string, returned?: OwedBack[]): Promise<QuotaTaken>;
  settle(returned: OwedBack[]): Promise<void>;
  release(id: string): Promise<void>;
  usage(limits: QuotaLimits, now: number): Promise<QuotaDecision>;
}

/** What a shell calls of its key's OrganizationObject. */
export interface OrganizationPort {
  confirmKey(keyId: string, revision: number): Promise<KeySnapshot | null>;
  recordUses(keyId: string, uses: { subject: string; at: number }[]): Promise<unknown>;
}

/** The objects a key's shell speaks to, by the names and ids the KeyObject uses. */
export interface KeyPeers {
  /** A shard's home, by the id the shard's copy names (`shard_home`). */
  home(id: string): KeyPort;
  /** A KeyObject by name (a shard: `shardName(home id, index)`). */
  shard(name: string): KeyPort;
  quota(organizationId: string): QuotaPort;
  organization(organizationId: string): OrganizationPort;
  /** Records a DPoP proof id where it is recorded once (shells/proofs.ts); false for a replay. */
  recordProof(proof: { jti: string; expiresMs: number }): Promise<boolean>;
}

export interface KeyHost {
  storage: ShellStorage;
  peers: KeyPeers;
  clock: Clock;
  /** The object's id as `ctx.id.toString()` gives it (its shards are named by it). */
  id: string;
  /**
   * How long a call to a peer is waited for before it fails closed (CONFIRM_TIMEOUT_MS):
   * `withTimeout` by default. The property harness gives its own, so that a run's outcome depends
   * on its scheduler alone and not on how long the machine took.
   */
  within?: <T>(work: Promise<T>, ms: number, what: string) => Promise<T>;
  /** Which shard a home hands a request to: Math.random by default; the harness's seeded draw. */
  random?: () => number;
}

export class KeyShell {
  private readonly storage: ShellStorage;
  private readonly peers: KeyPeers;
  private readonly now: Clock;
  private readonly within: <T>(work: Promise<T>, ms: number, what: string) => Promise<T>;
  private readonly random: () => number;
  /** This object's id: a home names its shards by it. */
  private readonly id: string;
  /** Whether the object had ever received a key when it started (else it wrote nothing yet). */
  private readonly stored: boolean;
  /** Whether this instance has seen its tables made (by the constructor or a first sync) since it started or erased. */
  private migrated = false;
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

  /** What a restart reads back: the rows, nothing else (memory is rebuilt from them). */
  constructor(host: KeyHost) {
    this.storage = host.storage;
    this.peers = host.peers;
    this.now = host.clock;
    this.within = host.within ?? withTimeout;
    this.random = host.random ?? Math.random;
    this.id = host.id;
    // An object that never received a key (any well-formed key that was never issued, say from
    // someone guessing) writes nothing: it answers "unknown" from an empty database, so guesses
    // cannot fill storage. Its tables are created by the first sync.
    const sql = this.storage.sql;
    this.stored = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").toArray().length > 0;
    if (!this.stored) return;
    this.schema();
    const row = sql.exec<KeyRow & { quota: string | null }>(`SELECT ${KEY_COLUMNS}, quota FROM key`).toArray()[0];
    const w = sql.exec<WindowsRow>("SELECT * FROM windows").toArray()[0];
    const slice = decodeHolding(w?.slice ?? null);
    const quotaSlice = decodeHolding(w?.quota_slice ?? null);
    this.state = {
      ...EMPTY_ADMISSION,
      key: row === undefined ? null : keyCopyOf(row),
      windows: w ? { second: w.second, secondCount: w.second_count, day: w.day, dayCount: w.day_count } : EMPTY_ADMISSION.windows,
      hourly: w ? { hour: w.hour_ms, admitted: w.hour_admitted, refused: w.hour_refused } : EMPTY_ADMISSION.hourly,
      credits: readCredits(sql),
      quota: row?.quota ? (JSON.parse(row.quota) as OrgQuota) : null,
      // A restart lost the answers that came with the slices: their rest is owed back.
      slice: restored<Decision>(slice.lease, slice.owed),
      quotaSlice: restored<QuotaDecision>(quotaSlice.lease, quotaSlice.owed),
    };
    // Uses are pruned once flushed and a minute old (`prune`): this is the last minute's subjects.
    for (const u of sql.exec<{ subject: string; at: number }>("SELECT subject, at FROM uses")) this.noted.set(u.subject, u.at);
  }

  /** Reads back the alarm a restart left set; the host runs it before any call (blockConcurrencyWhile). */
  async start(): Promise<void> {
    if (!this.stored) return;
    this.alarmAt = await this.storage.getAlarm();
    this.scheduleSettle();
  }

  // -------------------------------------------------------------------------------------------
  // The hot path and the home's grant: the core decides, this object performs and persists

  /** The hot path: authenticate the key, check the client's revocation, count the request. */
  admit(input: AdmitInput): Admission | Promise<Admission> {
    const ctx: Context = { asking: this.askingNow, facts: () => this.factsOf(input) };
    const answer = drive<Admission, AdmitPending>(plan(this.state, input, this.now(), ctx), {
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
    const [answer, fresh] = await Promise.all([admitted, this.peers.recordProof(proof)]);
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
    return drive<Grant, GrantPending>(planGrant(this.state, request, this.now(), this.askingNow), {
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
  } as Asking & { owner: KeyShell };

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
        const index = pickShard(need.count, this.random);
        try {
          const admission = this.shard(index).admit({ ...(input as AdmitInput), shard: index });
          return { kind: "shard", admission: await this.within(Promise.resolve(admission), CONFIRM_TIMEOUT_MS, "the key's shard") };
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
      return { kind: "grant", grant: await this.within(this.home(key).grant(request), CONFIRM_TIMEOUT_MS, "the key's home object") };
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
  private async askQuota(returned: Owed[], call: (quota: QuotaPort, id: string) => Promise<QuotaAnswer>): Promise<Answer> {
    const quota = this.quotaObject();
    const id = crypto.randomUUID();
    try {
      return { kind: "quota", answer: await this.within(call(quota, id), CONFIRM_TIMEOUT_MS, "the organization's quota") };
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
    const sql = this.storage.sql;
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
    if (due !== Number.POSITIVE_INFINITY) this.schedule(Math.max(this.now(), due) + SETTLE_AFTER_MS);
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
      const home = this.id;
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

  /** Makes or upgrades the tables once per instance (a sync after the first finds them made). */
  private schema(): void {
    if (this.migrated) return;
    migrate(this.storage, MIGRATIONS, BASELINE);
    this.migrated = true;
  }

  private apply(snapshot: KeySnapshot, shard: { home: string; index: number } | undefined): SyncAck {
    this.schema();
    const applied: Applied = applySnapshot(this.state, snapshot, shard, this.now());
    const sql = this.storage.sql;
    const key = applied.state.key as KeyCopy;
    this.storage.transactionSync(() => {
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
    const sql = this.storage.sql;
    const now = this.now();
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
      const org = this.peers.organization(key.organization_id);
      const snapshot = await this.within(org.confirmKey(key.id, key.revision), CONFIRM_TIMEOUT_MS, "the organization's confirmation");
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
    const rows = this.storage.sql.exec<TrafficRow>("SELECT hour_ms, admitted, refused FROM traffic ORDER BY hour_ms").toArray();
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
    const usage = await this.within(this.quotaObject().usage(quota, now), CONFIRM_TIMEOUT_MS, "the organization's quota");
    return { ...decision, quota: usage.windows };
  }

  /**
   * The organization was deleted and its retention has passed: the key's object, and every shard it
   * ever had, forget everything, and answer "unknown" (401) from then on, as for a key never issued.
   */
  async erase(): Promise<void> {
    const shards = shardsEverHad(this.state.key);
    await Promise.all(Array.from({ length: shards }, (_, i) => this.shard(i + 1).erase()));
    await this.storage.deleteAlarm();
    // Forgotten before and after the deletion: a sync that came in while it ran makes the tables
    // again, whichever side of the deletion its writes fell on.
    this.migrated = false;
    await this.storage.deleteAll();
    this.migrated = false;
    this.state = EMPTY_ADMISSION;
    this.facts.clear();
  }

  /**
   * Hands back what the slices left unspent (to the home, or to the QuotaObject), flushes noted
   * uses to the organization (at most once a minute; retried until it lands), prunes what has
   * expired, then sets itself for whichever is due next.
   */
  async alarm(): Promise<void> {
    this.alarmAt = null;
    const key = this.state.key;
    if (key === null) return;
    const now = this.now();
    await this.settleHoldings(now);
    // A slice still current when this alarm ran (set by an earlier one) is handed back by the next.
    this.scheduleSettle();
    const sql = this.storage.sql;
    const more = this.prune(now);
    const due = sql.exec<{ subject: string; at: number }>("SELECT subject, at FROM uses WHERE at > flushed_at").toArray();
    if (due.length > 0) {
      try {
        const org = this.peers.organization(key.organization_id);
        await org.recordUses(key.id, due);
        for (const u of due) sql.exec("UPDATE uses SET flushed_at = ? WHERE subject = ?", u.at, u.subject);
      } catch (err) {
        log.warn("last-used flush failed; retrying", { key: key.id, detail: describeError(err) });
        this.planFlush();
      }
    }
    const next = more ? this.now() : this.nextPrune();
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
    const sql = this.storage.sql;
    let more = false;
    this.storage.transactionSync(() => {
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
    const soonest = this.storage.sql.exec<{ t: number | null }>("SELECT min(expires_ms) AS t FROM revoked_tokens").one().t;
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
        () => this.storage.sql.exec("SELECT 1 FROM revoked_clients WHERE client_id = ?", clientId).toArray().length,
      ) > 0
    );
  }

  /** The credential's version below which a KV copy of it is stale; 0 when it never changed. */
  private changedVersion(clientId: string): number {
    return this.fact(
      `c:${clientId}`,
      () =>
        this.storage.sql.exec<{ version: number }>("SELECT version FROM changed_clients WHERE client_id = ?", clientId).toArray()[0]
          ?.version ?? 0,
    );
  }

  /** Until when the access token is revoked (RFC 7009); 0 when it is not. */
  private tokenRevokedUntil(tokenId: string): number {
    return this.fact(
      `t:${tokenId}`,
      () =>
        this.storage.sql.exec<{ expires_ms: number }>("SELECT expires_ms FROM revoked_tokens WHERE token_id = ?", tokenId).toArray()[0]
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
    this.storage.sql.exec(
      "INSERT INTO uses (subject, at) VALUES (?, ?) ON CONFLICT (subject) DO UPDATE SET at = max(at, excluded.at)",
      subject,
      now,
    );
    this.noted.set(subject, now);
    this.planFlush();
  }

  /** Sets the flush alarm unless one is set: moving it on every use would postpone it for ever. */
  private planFlush(): void {
    this.schedule(this.now() + USE_RESOLUTION_MS);
  }

  /** Sets the alarm for `at` unless it is already set to go off no later. */
  private schedule(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.storage.setAlarm(at);
  }

  /** A shard's home object. */
  private home(key: KeyCopy): KeyPort {
    return this.peers.home(key.shard_home as string);
  }

  /** This key's shard `index`. */
  private shard(index: number): KeyPort {
    return this.peers.shard(shardName(this.id, index));
  }

  private quotaObject(): QuotaPort {
    return this.peers.quota((this.state.key as KeyCopy).organization_id);
  }
}

/** When a holding's rest falls due: now if something is owed, its second's end if a slice is held; never if neither. */
function settleAt(h: Holding<unknown>): number {
  if (h.owed.length > 0) return 0;
  return h.lease.remaining > 0 ? (h.lease.second + 1) * 1000 : Number.POSITIVE_INFINITY;
}

export type { Admission, AdmitInput, Grant, GrantRequest, KeySnapshot, OwedBack, Revocation, Step, SyncAck, TrafficRow };
