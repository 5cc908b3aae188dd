/**
 * The property harness's world (test/unit/admission-properties.test.ts): one API key's objects,
 * its organization's QuotaObject and the ProofObjects, each the production shell (src/objects/
 * shells/) over an in-memory SQLite of the same rows (memory-storage.ts). Only the transport and
 * the organization are the harness's own: every call between objects is a hop before and after,
 * which fast-check's scheduler orders against every other (so concurrent requests, grants, pushes
 * and returns interleave at random), arguments and answers are copied as RPC copies them, and the
 * organization is a small model that pushes snapshots as objects/org/propagation.ts does. A
 * restart is a new shell over the same storage; an alarm fires when its time has come.
 *
 * What the runs observe is read from the rows, the system of record: after every statement the
 * home's windows and credits rows, and around every call the quota's windows row, are checked
 * against the limits (property 1); the shards' grants, spends and returns are tallied at the
 * ports (conservation); and each named rule the runs are meant to reach is counted (`Reached`).
 */
import type fc from "fast-check";
import { proofShard } from "../../src/objects/proof-place";
import {
  type Admission,
  type AdmitInput,
  type KeyPeers,
  type KeyPort,
  KeyShell,
  type KeySnapshot,
  type QuotaPort,
  SETTLE_AFTER_MS,
  shardName,
} from "../../src/objects/shells/key";
import { decodeHolding, type WindowsRow } from "../../src/objects/shells/key-rows";
import { ProofShell } from "../../src/objects/shells/proofs";
import { QuotaShell } from "../../src/objects/shells/quota";
import { type Owed, owedAmount } from "../../src/ratelimit/lease";
import type { QuotaLimits, QuotaTaken } from "../../src/ratelimit/quota";
import type { KeyCredits, OrgQuota } from "../../src/schemas/records";
import { MemoryStorage } from "./memory-storage";

export const DEFAULTS = { per_second: 1, per_day: 1000 };
export const HOME = "home";
export const KEY_ID = "key_1";
export const ORG_ID = "org_1";

/** What the runs found wrong as it happened, besides the assertions at their end. */
export class Violations {
  readonly list: string[] = [];
  add(text: string): void {
    if (this.list.length < 20) this.list.push(text);
  }
}

/** The named rules the runs must reach: counted over a file's runs, asserted at its end. */
export const reached = {
  runs: 0,
  admitted: 0,
  /** Refused by the key's second or day window. */
  keyWindowRefusals: 0,
  creditsRefusals: 0,
  /** Refused by the organization's quota (its second, day or month). */
  quotaRefusals: 0,
  /** Quota refusals a key's object repeated without asking the QuotaObject (Holding.refusal). */
  quotaRefusalsRepeated: 0,
  /** Unspent rest of a slice handed back to the key's home (with a grant or by an alarm). */
  slicesReturned: 0,
  /** Returns to the QuotaObject (the rest of quota slices). */
  quotaReturns: 0,
  /** A credits reset pushed while a shard held a slice of the old balance. */
  resetsMidSlice: 0,
  /** Requests admitted past a refill boundary while the key had shards. */
  refillsOnShards: 0,
  /** Restarts of an object that held a slice or owed a return. */
  restartsHolding: 0,
  /** Quota answers lost after the QuotaObject counted them (the key's object releases the take). */
  quotaAnswersLost: 0,
  /** Releases of such a take that reached the QuotaObject after it restarted (the take stays counted). */
  releasesStranded: 0,
  revokedRefused: 0,
  /** Requests served by a shard. */
  servedByShards: 0,
};

/** The organization's record of the key, pushed as snapshots (objects/org/propagation.ts). */
export class Org {
  revision = 0;
  readonly revocations: { client_id: string; revision: number }[] = [];
  version = 1;
  per_second = 500;
  per_day = 1_000_000;
  credits: KeyCredits | null = null;
  quota: OrgQuota | null = null;
  synced = { version: 0, revision: 0 };
  /** The highest revision whose push was answered as applied everywhere (the revocation's 200). */
  acked = 0;
  /** The newest credits epoch whose push was answered (a reset's 200). */
  ackedEpoch = 0;

  snapshotOf(since: number): KeySnapshot {
    return {
      id: KEY_ID,
      organization_id: ORG_ID,
      status: "active",
      limits: { per_second: this.per_second, per_day: this.per_day },
      version: this.version,
      revision: this.revision,
      since,
      revocations: this.revocations.filter((r) => r.revision > since),
      credits: this.credits,
      quota: this.quota,
    };
  }
}

interface Hosted<S> {
  storage: MemoryStorage;
  shell: S;
  /** Calls being served now: an object is restarted only when idle. */
  busy: number;
}

/** A shard's ledger at the ports: what its home granted it, what it admitted, what it handed back. */
interface Ledger {
  granted: number;
  admitted: number;
  returned: number;
}

const copy = <T>(value: T): T => (value === undefined ? value : structuredClone(value));

export class World {
  clock: number;
  readonly org = new Org();
  readonly violations = new Violations();
  private readonly keys = new Map<string, Hosted<KeyShell>>();
  readonly quotaStorage = new MemoryStorage();
  quota: QuotaShell;
  private readonly proofs = new Map<number, Hosted<ProofShell>>();
  readonly ledgers = new Map<string, Ledger>();
  readonly isolates: ({ shards: number; at: number } | undefined)[] = [undefined, undefined, undefined];
  /** What the edge saw admitted: cost, requests, and cost by the day of the request's stamp. */
  admitted = 0;
  requests = 0;
  refusedRequests = 0;
  /** Per credits epoch (a reset), what requests started after its push was answered were admitted. */
  readonly afterReset = new Map<number, number>();
  /** Per credits epoch, the balance it was given (its base and every top-up). */
  readonly given = new Map<number, number>();
  /** Admitted with a stamp at or past `refillAt` (the first refill boundary), when set. */
  refillAt: number | null = null;
  admittedAfterRefill = 0;
  restarts = 0;
  quotaRefusedAtObject = 0;
  quotaRefusedAtEdge = 0;
  /** How many of the next quota takes or grants are counted and then have their answer lost. */
  loseQuotaAnswers = 0;
  /** Whether the QuotaObject restarts while the next release of such a take is on its way to it. */
  restartBeforeRelease = false;
  /** Releases on their way to the QuotaObject (a key's object sends them without waiting). */
  private readonly releases = new Set<Promise<void>>();
  /** How many times the QuotaObject restarted: a take it counted before is unknown to it after. */
  private quotaGeneration = 0;
  /** Takes whose answer was lost, by id: what they counted, and in which of the QuotaObject's lives. */
  private readonly lostTakes = new Map<string, { granted: number; generation: number }>();
  /**
   * What takes released after a restart of the QuotaObject left counted: the release found no take
   * to give back (its memory of takes is gone), so the quota is charged that much more than was
   * admitted, never less (objects/quota.ts: one too few admitted at worst).
   */
  stranded = 0;
  private seed: number;

  constructor(
    private readonly scheduler: fc.Scheduler,
    seed: number,
    start: number,
  ) {
    this.seed = seed || 1;
    this.clock = start;
    this.quota = new QuotaShell(this.quotaStorage, () => this.clock);
    this.homeObject();
  }

  random(): number {
    // xorshift32: the runs' own choices (which shard), reproducible from fast-check's seed.
    this.seed ^= this.seed << 13;
    this.seed ^= this.seed >>> 17;
    this.seed ^= this.seed << 5;
    return (this.seed >>> 0) / 2 ** 32;
  }

  // -------------------------------------------------------------------------------------------
  // The objects

  private homeObject(): Hosted<KeyShell> {
    const home = this.object(HOME);
    home.storage.onStatement = () => this.checkHome(home.storage);
    return home;
  }

  /** The KeyObject named `name` (the home, or `shard:home:<i>`), created on first use. */
  object(name: string): Hosted<KeyShell> {
    let hosted = this.keys.get(name);
    if (hosted === undefined) {
      const storage = new MemoryStorage();
      hosted = { storage, shell: this.keyShell(name, storage), busy: 0 };
      this.keys.set(name, hosted);
    }
    return hosted;
  }

  private keyShell(name: string, storage: MemoryStorage): KeyShell {
    // No deadline on a peer's answer: the scheduler orders every answer, so an outcome never
    // depends on how long the machine took (a peer that fails is a rejected call, not a slow one).
    return new KeyShell({
      storage,
      peers: this.peersOf(name),
      clock: () => this.clock,
      id: name,
      within: (work) => work,
      random: () => this.random(),
    });
  }

  shardNames(): string[] {
    return [...this.keys.keys()].filter((n) => n !== HOME);
  }

  allObjects(): Hosted<KeyShell>[] {
    return [...this.keys.values()];
  }

  home(): Hosted<KeyShell> {
    return this.object(HOME);
  }

  shard(index: number): Hosted<KeyShell> {
    return this.object(shardName(HOME, index));
  }

  ledger(name: string): Ledger {
    let l = this.ledgers.get(name);
    if (l === undefined) {
      l = { granted: 0, admitted: 0, returned: 0 };
      this.ledgers.set(name, l);
    }
    return l;
  }

  proof(place: number): Hosted<ProofShell> {
    let hosted = this.proofs.get(place);
    if (hosted === undefined) {
      const storage = new MemoryStorage();
      hosted = { storage, shell: new ProofShell(storage, () => this.clock), busy: 0 };
      this.proofs.set(place, hosted);
    }
    return hosted;
  }

  /** A restart of an idle object: memory is lost, the rows are read back by a new shell. */
  async restart(name: string): Promise<boolean> {
    const hosted = this.keys.get(name);
    if (hosted === undefined || hosted.busy > 0) return false;
    const slice = this.rowOf(hosted.storage);
    if (slice !== null && (slice.slice !== null || slice.quota_slice !== null)) reached.restartsHolding++;
    hosted.shell = this.keyShell(name, hosted.storage);
    await hosted.shell.start();
    this.restarts++;
    return true;
  }

  /**
   * The QuotaObject restarts: its windows row is read back; the takes it could release are gone.
   * With `inFlight`, releases already sent may land after it (each one then leaves its take
   * counted: `stranded`); without, they land first.
   */
  async restartQuota(inFlight = false): Promise<void> {
    if (!inFlight) await this.releasesLanded();
    this.newQuotaShell();
  }

  private newQuotaShell(): void {
    this.quota = new QuotaShell(this.quotaStorage, () => this.clock);
    this.quotaGeneration++;
    this.restarts++;
  }

  /** Every release sent so far has reached the QuotaObject. */
  async releasesLanded(): Promise<void> {
    while (this.releases.size > 0) await Promise.all([...this.releases]);
  }

  /** Fires the object's alarm if it is set and due. */
  async alarm(name: string): Promise<void> {
    const hosted = this.keys.get(name);
    if (hosted === undefined || hosted.storage.alarm === null || hosted.storage.alarm > this.clock) return;
    hosted.storage.alarm = null;
    hosted.busy++;
    try {
      await hosted.shell.alarm();
    } finally {
      hosted.busy--;
    }
  }

  /** Lets the scheduler run everything `work` waits on, to its end. */
  drive<T>(work: Promise<T>): Promise<T> {
    return this.scheduler.waitFor(work);
  }

  // -------------------------------------------------------------------------------------------
  // The transport: every call a hop there and back, its arguments and answer copied

  private async hop<T>(label: string, work: () => T | Promise<T>): Promise<T> {
    await this.scheduler.schedule(Promise.resolve(), label);
    const answer = copy(await work());
    await this.scheduler.schedule(Promise.resolve(), `${label} answered`);
    return answer;
  }

  private serve<T>(name: string, work: (shell: KeyShell) => T | Promise<T>): Promise<T> {
    return this.hop(name, async () => {
      const hosted = this.object(name);
      hosted.busy++;
      try {
        return await work(hosted.shell);
      } catch (err) {
        // The shells answer every failure of theirs; one that throws is a finding.
        this.violations.add(`${name} threw: ${err instanceof Error ? err.stack : String(err)}`);
        throw err;
      } finally {
        hosted.busy--;
      }
    });
  }

  /** The port of KeyObject `name`, as `caller` reaches it. */
  port(name: string, caller: string): KeyPort {
    return {
      admit: (input) =>
        this.serve(name, async (shell) => {
          const answer = await shell.admit(copy(input));
          if (name !== HOME && answer.status === "active" && answer.decision.allowed) this.ledger(name).admitted += answer.decision.cost;
          return answer;
        }),
      grant: (request) =>
        this.serve(name, async (shell) => {
          const back = owedAmount(request.returned ?? []);
          this.ledger(caller).returned += back;
          if (back > 0) reached.slicesReturned++;
          const grant = await shell.grant(copy(request));
          if (grant.status === "granted") this.ledger(caller).granted += grant.granted;
          return grant;
        }),
      settle: (returned) =>
        this.serve(name, (shell) => {
          const back = owedAmount(returned);
          this.ledger(caller).returned += back;
          if (back > 0) reached.slicesReturned++;
          return shell.settle(copy(returned));
        }),
      sync: (snapshot, shard) => this.serve(name, (shell) => shell.sync(copy(snapshot), copy(shard))),
      traffic: () => this.serve(name, (shell) => shell.traffic()),
      erase: () => this.serve(name, (shell) => shell.erase()),
    };
  }

  private quotaPort(): QuotaPort {
    const charged = (limits: QuotaLimits, id: string | undefined, work: () => QuotaTaken): QuotaTaken => {
      const before = this.quotaRow();
      const answer = work();
      const after = this.quotaRow();
      this.checkQuota(before, after, limits);
      if (!answer.allowed) this.quotaRefusedAtObject++;
      if (answer.allowed && this.loseQuotaAnswers > 0) {
        // Counted there, and the answer never arrives: the key's object fails closed and releases it.
        this.loseQuotaAnswers--;
        reached.quotaAnswersLost++;
        if (id !== undefined) this.lostTakes.set(id, { granted: answer.granted, generation: this.quotaGeneration });
        throw new Error("the quota's answer was lost");
      }
      return answer;
    };
    const back = (returned: Owed[] | undefined) => {
      if (owedAmount(returned ?? []) > 0) reached.quotaReturns++;
    };
    return {
      take: (limits, now, cost, id, returned) =>
        this.hop("quota", () => {
          back(returned);
          return charged(limits, id, () => this.quota.take(copy(limits), now, cost, id, copy(returned)));
        }),
      grant: (limits, now, min, want, id, returned) =>
        this.hop("quota", () => {
          back(returned);
          return charged(limits, id, () => this.quota.grant(copy(limits), now, min, want, id, copy(returned)));
        }),
      settle: (returned) =>
        this.hop("quota", () => {
          back(returned);
          this.quota.settle(copy(returned));
        }),
      release: (id) => {
        if (this.restartBeforeRelease) {
          this.restartBeforeRelease = false;
          this.newQuotaShell();
        }
        const landed = this.hop("quota", () => {
          const lost = this.lostTakes.get(id);
          this.lostTakes.delete(id);
          if (lost !== undefined && lost.generation !== this.quotaGeneration) {
            this.stranded += lost.granted;
            reached.releasesStranded++;
          }
          this.quota.release(id);
        });
        this.releases.add(landed);
        return landed.finally(() => this.releases.delete(landed));
      },
      usage: (limits, now) => this.hop("quota", () => this.quota.usage(copy(limits), now)),
    };
  }

  private peersOf(caller: string): KeyPeers {
    return {
      home: (id) => this.port(id, caller),
      shard: (name) => this.port(name, caller),
      quota: () => this.quotaPort(),
      organization: () => ({
        confirmKey: (_keyId, revision) => this.hop("organization", () => this.org.snapshotOf(revision)),
        recordUses: () => this.hop("organization", () => undefined),
      }),
      recordProof: (proof) => this.hop("proofs", () => this.proof(proofShard(proof.jti)).shell.record(proof.jti, proof.expiresMs)),
    };
  }

  // -------------------------------------------------------------------------------------------
  // What the rows say

  rowOf(storage: MemoryStorage): WindowsRow | null {
    if (!storage.hasTable("windows")) return null;
    return (storage.peek<WindowsRow>("SELECT * FROM windows")[0] as WindowsRow | undefined) ?? null;
  }

  /** What a KeyObject holds of slices now (its lease's rest and what it owes back), from its row. */
  held(storage: MemoryStorage): number {
    const row = this.rowOf(storage);
    if (row === null) return 0;
    const slice = decodeHolding(row.slice);
    return slice.lease.remaining + owedAmount(slice.owed);
  }

  quotaHeld(storage: MemoryStorage): number {
    const row = this.rowOf(storage);
    if (row === null) return 0;
    const slice = decodeHolding(row.quota_slice);
    return slice.lease.remaining + owedAmount(slice.owed);
  }

  quotaRow(): { second: number; second_count: number; day: number; day_count: number; month: number; month_count: number } | null {
    return (
      (this.quotaStorage.peek("SELECT * FROM windows")[0] as
        | { second: number; second_count: number; day: number; day_count: number; month: number; month_count: number }
        | undefined) ?? null
    );
  }

  credits(storage: MemoryStorage): { remaining: number; epoch: number; next_refill_ms: number | null } | null {
    if (!storage.hasTable("credits")) return null;
    return (
      (storage.peek("SELECT * FROM credits")[0] as { remaining: number; epoch: number; next_refill_ms: number | null } | undefined) ?? null
    );
  }

  revoked(storage: MemoryStorage): string[] {
    if (!storage.hasTable("revoked_clients")) return [];
    return storage
      .peek<{ client_id: string }>("SELECT client_id FROM revoked_clients")
      .map((r) => r.client_id)
      .sort();
  }

  /** Every object's traffic rows and live hour, summed: the charts' count of requests admitted. */
  traffic(): number {
    let sum = 0;
    for (const { storage } of this.allObjects()) {
      if (!storage.hasTable("traffic")) continue;
      sum += storage.peek<{ n: number | null }>("SELECT sum(admitted) AS n FROM traffic")[0]?.n ?? 0;
      sum += this.rowOf(storage)?.hour_admitted ?? 0;
    }
    return sum;
  }

  private lastHome: WindowsRow | null = null;

  /** Property 1 at the home, after each of its statements: a window that grows never grows past its limit. */
  private checkHome(storage: MemoryStorage): void {
    if (!storage.hasTable("windows") || !storage.hasTable("key")) return;
    const row = this.rowOf(storage);
    const key = storage.peek<{ per_second: number | null; per_day: number | null }>("SELECT per_second, per_day FROM key")[0];
    const before = this.lastHome;
    this.lastHome = row;
    if (row === null || key === undefined) return;
    const perSecond = key.per_second ?? DEFAULTS.per_second;
    const perDay = key.per_day ?? DEFAULTS.per_day;
    if (before !== null && row.second === before.second && row.second_count > before.second_count && row.second_count > perSecond) {
      this.violations.add(`home counted ${row.second_count} in a second limited to ${perSecond}`);
    }
    if (before !== null && row.day === before.day && row.day_count > before.day_count && row.day_count > perDay) {
      this.violations.add(`home counted ${row.day_count} in a day limited to ${perDay}`);
    }
    const credits = storage.hasTable("credits") ? this.credits(storage) : null;
    if (credits !== null && credits.remaining < 0) this.violations.add(`credits below zero: ${credits.remaining}`);
  }

  /** Property 1 at the QuotaObject, around each call: a window that grows never grows past the limit it was asked under. */
  private checkQuota(before: ReturnType<World["quotaRow"]>, after: ReturnType<World["quotaRow"]>, limits: QuotaLimits): void {
    if (after === null) return;
    const grew = (b: number | undefined, a: number, sameWindow: boolean) => (sameWindow ? a > (b ?? 0) : a > 0);
    const over = (count: number, limit: number | undefined) => limit !== undefined && count > limit;
    if (grew(before?.second_count, after.second_count, before?.second === after.second) && over(after.second_count, limits.per_second)) {
      this.violations.add(`quota counted ${after.second_count} in a second limited to ${limits.per_second}`);
    }
    if (grew(before?.day_count, after.day_count, before?.day === after.day) && over(after.day_count, limits.per_day)) {
      this.violations.add(`quota counted ${after.day_count} in a day limited to ${limits.per_day}`);
    }
    if (grew(before?.month_count, after.month_count, before?.month === after.month) && over(after.month_count, limits.per_month)) {
      this.violations.add(`quota counted ${after.month_count} in a month limited to ${limits.per_month}`);
    }
  }

  // -------------------------------------------------------------------------------------------
  // The organization and the edge

  /** The organization pushes its change; answered once every shard has it. */
  async push(): Promise<void> {
    const snapshot = this.org.snapshotOf(this.org.synced.revision);
    const ack = await this.port(HOME, "organization").sync(snapshot);
    this.org.synced = {
      version: Math.max(this.org.synced.version, ack.version),
      revision: ack.behind === true ? ack.revision : Math.max(this.org.synced.revision, ack.revision),
    };
    if (ack.behind !== true) {
      this.org.acked = Math.max(this.org.acked, snapshot.revision);
      this.org.ackedEpoch = Math.max(this.org.ackedEpoch, snapshot.credits?.epoch ?? 0);
    }
  }

  /** A request of the edge (auth/gate.ts): through an isolate's idea of the key's shards, else the home. */
  async request(isolate: number, client: string, cost: number, skew: number): Promise<Admission> {
    const input: AdmitInput = { now: this.clock + skew, defaults: DEFAULTS, clientId: client, cost };
    const ackedAtStart = this.org.acked;
    // A reset of the credits answered before this request started binds it (while no newer reset comes).
    const epoch = this.org.credits?.epoch ?? 0;
    const boundByReset = epoch > 1 && this.org.ackedEpoch === epoch;
    const revokedAtStart = this.org.revocations.find((r) => r.client_id === client && r.revision <= ackedAtStart);
    const known = this.isolates[isolate];
    let answer: Admission;
    let byShard = false;
    if (known === undefined || this.clock - known.at >= 10_000) {
      answer = await this.port(HOME, "edge").admit(input);
    } else {
      const index = 1 + Math.floor(this.random() * known.shards);
      answer = await this.port(shardName(HOME, index), "edge").admit({ ...input, shard: index });
      byShard = answer.status !== "home";
      if (answer.status === "home") answer = await this.port(HOME, "edge").admit(input);
    }
    if (answer.status === "active" && answer.shards !== undefined) this.isolates[isolate] = { shards: answer.shards, at: this.clock };
    else if (known !== undefined) this.isolates[isolate] = undefined;
    if (answer.status !== "active") return answer;
    if (revokedAtStart !== undefined && !answer.clientRevoked) {
      this.violations.add(`${client}, revoked at revision ${revokedAtStart.revision} (answered), served as not revoked`);
    }
    if (answer.clientRevoked) reached.revokedRefused++;
    const d = answer.decision;
    if (d.allowed) {
      this.admitted += d.cost;
      this.requests++;
      reached.admitted++;
      if (byShard || answer.shards !== undefined) reached.servedByShards++;
      if (boundByReset && (this.org.credits?.epoch ?? 0) === epoch) {
        this.afterReset.set(epoch, (this.afterReset.get(epoch) ?? 0) + d.cost);
      }
      if (this.refillAt !== null && input.now >= this.refillAt) {
        this.admittedAfterRefill += d.cost;
        if (this.shardNames().length > 0) reached.refillsOnShards++;
      }
    } else {
      this.refusedRequests++;
      if (d.exceeded === "second" || d.exceeded === "day") reached.keyWindowRefusals++;
      else if (d.exceeded === "credits") reached.creditsRefusals++;
      else if (d.exceeded !== null) this.quotaRefusedAtEdge++;
    }
    return answer;
  }

  /** Runs every object's alarm as it falls due until no holder owes anything (returns land). */
  async settleAll(): Promise<void> {
    // A return can take three alarms to land (a shard's to its home, the home's to the quota): time
    // passes between them as it would, past SETTLE_AFTER_MS each.
    for (let round = 0; round < 4; round++) {
      this.clock += SETTLE_AFTER_MS + 1_000;
      for (const name of [...this.shardNames(), HOME]) await this.scheduler.waitFor(this.alarm(name));
    }
  }

  /** The run's tallies, added to the file's. */
  tally(): void {
    reached.runs++;
    reached.quotaRefusals += this.quotaRefusedAtEdge;
    reached.quotaRefusalsRepeated += Math.max(0, this.quotaRefusedAtEdge - this.quotaRefusedAtObject);
  }
}
