/**
 * Admission's rules as properties (issue 41, item 2), over the pure core (ratelimit/admission.ts)
 * run by a model of its objects: a key's home, its shards, its organization and the organization's
 * QuotaObject, each holding the state and rows the real objects hold and running requests through
 * the same `drive` loop, `plan`, `resume`, `planGrant`, `applySnapshot` and `quotaCharge` the
 * Durable Objects call. Only the transport is modelled: every call between objects is a hop that
 * fast-check's scheduler orders, so concurrent requests, grants, pushes and confirmations
 * interleave at random. Between the calls, the runs change limits up and down (adding and
 * retiring shards), revoke credentials, top up credits, change the quota, restart idle objects
 * (memory lost, rows kept), run alarms, let edge clocks drift by up to half a second, and let
 * isolates route by a stale shard count.
 *
 * The properties:
 * 1. Never more admitted than the limit: no coordinator window (a home's second and day, the
 *    quota's second, day and month) ever counts past its limit, and every holder conserves what it
 *    was granted (granted = admitted + held + owed + returned: nothing spent twice, nothing lost).
 * 2. Paid exactly: once every holder has handed back its rest, the credits, the key's day and the
 *    organization's day and month have been charged exactly what was admitted, and the traffic
 *    counts add up to it.
 * 3. Revocations everywhere: a request that starts after the organization's push of a revocation
 *    was answered is refused at whichever object serves it, new or revived shards included.
 * 4. A DPoP proof id is accepted at most once whatever key, shard count or isolate it comes with.
 * 5. Erasure reaches every shard the key ever had.
 * Each fails with today's rule in its place (the closing note of issue 41 lists how).
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { PROOF_SHARDS, proofShard } from "../../src/objects/proof-place";
import {
  type Admission,
  type AdmissionState,
  type AdmitInput,
  type AdmitPending,
  type Answer,
  applySnapshot,
  type Context,
  drive,
  EMPTY_ADMISSION,
  type Facts,
  type Grant,
  type GrantPending,
  type GrantRequest,
  type KeyCopy,
  type KeyCreditsState,
  type KeySnapshot,
  type Need,
  type Owed,
  plan,
  planGrant,
  restored,
  resume,
  resumeGrant,
  type SyncAck,
  settlement,
  shardsEverHad,
  shardsFor,
  shardsToSync,
  takeBack,
  type Write,
} from "../../src/ratelimit/admission";
import { type Lease, owedAmount } from "../../src/ratelimit/lease";
import { EMPTY_QUOTA, giveBackQuota, type QuotaLimits, type QuotaState, quotaCharge } from "../../src/ratelimit/quota";
import type { KeyCredits, OrgQuota } from "../../src/schemas/records";

/** Noon of a UTC day: a run's few minutes never cross midnight, so one day window holds them all. */
const NOON = Date.UTC(2026, 10, 27, 12);
const DEFAULTS = { per_second: 1, per_day: 1000 };
const CLIENTS = ["c0", "c1", "c2", "c3"];
/**
 * How many runs each property makes in `npm test`; KEYWAY_PROPERTY_RUNS raises them for a longer
 * search, and KEYWAY_PROPERTY_SEED with KEYWAY_PROPERTY_PATH replays a failure as fast-check printed
 * it (environment variables of the shell, since this file runs in Node: the unit tier).
 */
const knobs = process.env;
const RUNS = Number(knobs.KEYWAY_PROPERTY_RUNS || 400);
const replay = knobs.KEYWAY_PROPERTY_SEED
  ? { seed: Number(knobs.KEYWAY_PROPERTY_SEED), path: knobs.KEYWAY_PROPERTY_PATH, endOnFailure: true }
  : {};

/** What the runs of property 1 covered, printed at the end of the file (so a reader sees it was not vacuous). */
const covered = { runs: 0, admitted: 0, refused: 0, shardsUsed: 0, granted: 0, returned: 0, restarts: 0, revokedServed: 0 };
function tally(world: World): void {
  covered.runs++;
  covered.admitted += world.requests;
  covered.refused += world.refusedRequests;
  covered.shardsUsed += world.allShards().filter((o) => o.admitted > 0).length;
  covered.granted += world.allShards().reduce((sum, o) => sum + o.granted, 0);
  covered.returned += world.allShards().reduce((sum, o) => sum + o.returned, 0);
  covered.restarts += world.restarts;
  covered.revokedServed += world.revokedRefused;
}

// ---------------------------------------------------------------------------------------------
// The model

interface Stored {
  key: KeyCopy | null;
  quota: OrgQuota | null;
  credits: KeyCreditsState | null;
  windows: AdmissionState["windows"];
  hourly: AdmissionState["hourly"];
  slice: { lease: Lease; owed: Owed[] };
  quotaSlice: { lease: Lease; owed: Owed[] };
  traffic: number;
}

const emptyStored = (): Stored => ({
  key: null,
  quota: null,
  credits: null,
  windows: EMPTY_ADMISSION.windows,
  hourly: EMPTY_ADMISSION.hourly,
  slice: { lease: EMPTY_ADMISSION.slice.lease, owed: [] },
  quotaSlice: { lease: EMPTY_ADMISSION.quotaSlice.lease, owed: [] },
  traffic: 0,
});

/** What the runs found wrong, besides the assertions at their end. */
class Violations {
  readonly list: string[] = [];
  add(text: string): void {
    if (this.list.length < 20) this.list.push(text);
  }
}

class Org {
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
      id: "key_1",
      organization_id: "org_1",
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

class QuotaModel {
  state: QuotaState = EMPTY_QUOTA;
  constructor(private readonly world: World) {}
  charge(limits: QuotaLimits, now: number, min: number, want: number | undefined, returned: Owed[]) {
    const before = this.state;
    const { state, answer } = quotaCharge(this.state, limits, now, min, want, returned);
    this.state = state;
    const over = (count: number, limit: number | undefined) => limit !== undefined && count > limit;
    if (
      (state.second === before.second && state.secondCount > before.secondCount && over(state.secondCount, limits.per_second)) ||
      (state.dayCount > before.dayCount && over(state.dayCount, limits.per_day)) ||
      (state.monthCount > before.monthCount && over(state.monthCount, limits.per_month))
    ) {
      this.world.violations.add(`quota counted past its limit: ${JSON.stringify(state)} under ${JSON.stringify(limits)}`);
    }
    return answer;
  }
  settle(returned: Owed[]): void {
    this.state = returned.reduce((st, r) => giveBackQuota(st, r.paid, r.amount), this.state);
  }
}

/** One KeyObject (a home or a shard), as objects/key.ts runs it, over a modelled storage. */
class Obj {
  state: AdmissionState = EMPTY_ADMISSION;
  stored: Stored = emptyStored();
  readonly revoked = new Set<string>();
  private flights: { home: Promise<Answer> | null; quota: Promise<Answer> | null } = { home: null, quota: null };
  private confirming: Promise<void> | null = null;
  busy = 0;
  everHadState = false;
  /** A shard's ledger: what it was granted, admitted, handed back. */
  granted = 0;
  admitted = 0;
  returned = 0;

  constructor(
    private readonly world: World,
    readonly index: number,
  ) {}

  private ctx(input: AdmitInput): Context {
    return { asking: { home: this.flights.home !== null, quota: this.flights.quota !== null }, facts: () => this.factsOf(input) };
  }

  private factsOf(input: AdmitInput): Facts {
    return {
      clientRevoked: input.clientId !== undefined && this.revoked.has(input.clientId),
      clientStale: false,
      tokenRevoked: false,
      inspectedTokenRevoked: false,
    };
  }

  async admit(input: AdmitInput): Promise<Admission> {
    this.busy++;
    try {
      const answer = await drive<Admission, AdmitPending>(plan(this.state, input, this.world.clock, this.ctx(input)), {
        state: () => this.state,
        persist: (state, writes) => this.persist(state, writes),
        perform: (need) => this.perform(need, input),
        resume: (state, pending, a) => resume(state, pending, a, this.ctx(input)),
      });
      if (answer.status === "active" && answer.decision.allowed && this.index > 0) this.admitted += answer.decision.cost;
      return answer;
    } finally {
      this.busy--;
    }
  }

  async grant(request: GrantRequest): Promise<Grant> {
    this.busy++;
    try {
      const asking = () => ({ home: false, quota: this.flights.quota !== null });
      return await drive<Grant, GrantPending>(planGrant(this.state, request, this.world.clock, asking()), {
        state: () => this.state,
        persist: (state, writes) => this.persist(state, writes),
        perform: (need) => this.perform(need),
        resume: (state, pending, a) => resumeGrant(state, pending, a, asking()),
      });
    } finally {
      this.busy--;
    }
  }

  settle(returned: Owed[]): void {
    if (this.state.key === null) return;
    const back = takeBack(this.state, returned);
    this.persist(back.state, back.writes);
  }

  private flight(kind: "home" | "quota", task: () => Promise<Answer>): Promise<Answer> {
    const current = this.flights[kind];
    if (current !== null) return current;
    const run: Promise<Answer> = Promise.resolve()
      .then(task)
      .finally(() => {
        if (this.flights[kind] === run) this.flights[kind] = null;
      });
    this.flights[kind] = run;
    return run;
  }

  private async perform(need: Need, input?: AdmitInput): Promise<Answer> {
    const w = this.world;
    switch (need.kind) {
      case "confirm":
        await this.confirm();
        return { kind: "confirmed" };
      case "shard": {
        const index = 1 + Math.floor(w.random() * need.count);
        return { kind: "shard", admission: await w.call(() => w.shard(index).admit({ ...(input as AdmitInput), shard: index })) };
      }
      case "grant": {
        const ask = async (): Promise<Answer> => {
          this.returned += owedAmount(need.request.returned ?? []);
          const grant = await w.call(() => w.home.grant(need.request));
          if (grant.status === "granted") this.granted += grant.granted;
          return { kind: "grant", grant };
        };
        return need.shared ? this.flight("home", ask) : ask();
      }
      case "take":
        return {
          kind: "quota",
          answer: await w.call(async () => w.quota.charge(need.limits, need.now, need.cost, undefined, need.returned)),
        };
      case "quotaSlice": {
        const ask = async (): Promise<Answer> => ({
          kind: "quota",
          answer: await w.call(async () => w.quota.charge(need.limits, need.now, need.min, need.want, need.returned)),
        });
        return need.shared ? this.flight("quota", ask) : ask();
      }
      case "wait": {
        const running = this.flights[need.on];
        if (running !== null) await running;
        return { kind: "waited" };
      }
    }
  }

  private confirm(): Promise<void> {
    if (this.confirming !== null) return this.confirming;
    const run = (async () => {
      const key = this.state.key as KeyCopy;
      const snapshot = await this.world.call(async () => this.world.org.snapshotOf(key.revision));
      await this.sync(snapshot);
    })().finally(() => {
      this.confirming = null;
    });
    this.confirming = run;
    return run;
  }

  /** As objects/key.ts `persist`: the windows row and the credits row only when a step names them. */
  persist(state: AdmissionState, writes: Write[]): void {
    const before = this.state;
    for (const w of writes) {
      if (w.kind === "windows") {
        this.stored = {
          ...this.stored,
          windows: state.windows,
          hourly: state.hourly,
          slice: { lease: state.slice.lease, owed: state.slice.owed },
          quotaSlice: { lease: state.quotaSlice.lease, owed: state.quotaSlice.owed },
        };
      } else if (w.kind === "credits") this.stored = { ...this.stored, credits: state.credits };
      else if (w.kind === "traffic") this.stored = { ...this.stored, traffic: this.stored.traffic + w.admitted };
    }
    this.state = state;
    // Property 1 at the coordinator: a window that grows never grows past its limit.
    if (state.key !== null && state.key.shard_index === null) {
      const limits = { per_second: state.key.per_second ?? DEFAULTS.per_second, per_day: state.key.per_day ?? DEFAULTS.per_day };
      const w = state.windows;
      const b = before.windows;
      if (w.second === b.second && w.secondCount > b.secondCount && w.secondCount > limits.per_second) {
        this.world.violations.add(`home counted ${w.secondCount} in a second limited to ${limits.per_second}`);
      }
      if (w.dayCount > b.dayCount && w.dayCount > limits.per_day) {
        this.world.violations.add(`home counted ${w.dayCount} in a day limited to ${limits.per_day}`);
      }
      if (state.credits !== null && state.credits.remaining < 0)
        this.world.violations.add(`credits below zero: ${state.credits.remaining}`);
    }
  }

  async sync(snapshot: KeySnapshot, shard?: { home: string; index: number }): Promise<SyncAck> {
    this.busy++;
    try {
      const before = this.state.key;
      const ack = this.apply(snapshot, shard);
      const count = shardsToSync(before, this.state.key);
      await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const target = { home: "home", index: i + 1 };
          const w = this.world;
          const answer = await w.call(() => w.shard(i + 1).sync(snapshot, target));
          if (answer.behind) await w.call(() => w.shard(i + 1).sync(this.wholeSet(snapshot), target));
        }),
      );
      return ack;
    } finally {
      this.busy--;
    }
  }

  private apply(snapshot: KeySnapshot, shard: { home: string; index: number } | undefined): SyncAck {
    if (this.world.erased.has(this.index)) return { version: 0, revision: 0 };
    const applied = applySnapshot(this.state, snapshot, shard, this.world.clock);
    this.stored = { ...this.stored, key: applied.state.key, quota: applied.state.quota };
    if (applied.credits) this.stored = { ...this.stored, credits: applied.state.credits };
    if (applied.dropped) {
      this.stored = {
        ...this.stored,
        slice: { lease: applied.state.slice.lease, owed: applied.state.slice.owed },
        quotaSlice: { lease: applied.state.quotaSlice.lease, owed: applied.state.quotaSlice.owed },
      };
    }
    for (const r of applied.revocations) this.revoked.add(r.client_id);
    this.state = applied.state;
    this.everHadState = true;
    return applied.ack;
  }

  private wholeSet(snapshot: KeySnapshot): KeySnapshot {
    const revocations = [...this.revoked].map((client_id) => ({ client_id, revision: 0 }));
    return { ...snapshot, since: 0, revision: (this.state.key as KeyCopy).revision, revocations };
  }

  /** As objects/key.ts `alarm`: hands back what the slices left unspent. */
  async alarm(): Promise<void> {
    if (this.state.key === null) return;
    const due = settlement(this.state, this.world.clock);
    if (due === null) return;
    this.persist(due.state, due.writes);
    const w = this.world;
    const { toHome, toQuota } = due;
    if (toHome !== null) {
      this.returned += owedAmount(toHome);
      await w.call(async () => w.home.settle(toHome));
    }
    if (toQuota !== null) await w.call(async () => w.quota.settle(toQuota));
  }

  /** A restart: what memory held is gone; what the rows hold is read back (objects/key.ts constructor). */
  restart(): void {
    const s = this.stored;
    this.state = {
      ...EMPTY_ADMISSION,
      key: s.key,
      windows: s.windows,
      hourly: s.hourly,
      credits: s.credits,
      quota: s.quota,
      slice: restored(s.slice.lease, s.slice.owed),
      quotaSlice: restored(s.quotaSlice.lease, s.quotaSlice.owed),
    };
  }

  /** What a shard holds of its grants now: its slice's rest and what it owes. */
  held(): number {
    return this.state.slice.lease.remaining + owedAmount(this.state.slice.owed);
  }
}

/** The key's objects, its organization, its quota, the isolates in front, and what was admitted. */
class World {
  clock = NOON;
  readonly org = new Org();
  readonly quota = new QuotaModel(this);
  readonly home = new Obj(this, 0);
  private readonly shards = new Map<number, Obj>();
  readonly erased = new Set<number>();
  readonly isolates: ({ shards: number; at: number } | undefined)[] = [undefined, undefined, undefined];
  readonly violations = new Violations();
  /** What was admitted: its cost, and how many requests (the traffic charts count requests). */
  admitted = 0;
  requests = 0;
  refusedRequests = 0;
  /** Per credits epoch (a reset), what requests started after its push was answered were admitted. */
  readonly afterReset = new Map<number, number>();
  /** Per credits epoch, the balance it was given (its base and every top-up). */
  readonly given = new Map<number, number>();
  /** Requests refused because their credential was revoked, and restarts made. */
  revokedRefused = 0;
  restarts = 0;
  private seed: number;

  constructor(
    private readonly scheduler: fc.Scheduler,
    seed: number,
  ) {
    this.seed = seed || 1;
  }

  random(): number {
    // xorshift32: the runs' own choices (which shard), reproducible from fast-check's seed.
    this.seed ^= this.seed << 13;
    this.seed ^= this.seed >>> 17;
    this.seed ^= this.seed << 5;
    return (this.seed >>> 0) / 2 ** 32;
  }

  shard(index: number): Obj {
    let s = this.shards.get(index);
    if (s === undefined) {
      s = new Obj(this, index);
      this.shards.set(index, s);
    }
    return s;
  }

  allShards(): Obj[] {
    return [...this.shards.values()];
  }

  /** A call to another object: a hop before and after, which the scheduler orders against every other. */
  async call<T>(work: () => Promise<T>): Promise<T> {
    await this.scheduler.schedule(Promise.resolve(), "hop");
    const result = await work();
    await this.scheduler.schedule(Promise.resolve(), "hop back");
    return result;
  }

  /** The organization pushes its change (objects/org/propagation.ts); answered once every shard has it. */
  async push(): Promise<void> {
    const snapshot = this.org.snapshotOf(this.org.synced.revision);
    const ack = await this.call(() => this.home.sync(snapshot));
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
  async request(isolate: number, client: string, cost: number, skew: number): Promise<void> {
    const input: AdmitInput = { now: this.clock + skew, defaults: DEFAULTS, clientId: client, cost };
    const ackedAtStart = this.org.acked;
    // A reset of the credits answered before this request started binds it (while no newer reset comes).
    const epoch = this.org.credits?.epoch ?? 0;
    const boundByReset = epoch > 1 && this.org.ackedEpoch === epoch;
    const revokedAtStart = this.org.revocations.find((r) => r.client_id === client && r.revision <= ackedAtStart);
    const known = this.isolates[isolate];
    let answer: Admission;
    if (known === undefined || this.clock - known.at >= 10_000) {
      answer = await this.call(() => this.home.admit(input));
    } else {
      const index = 1 + Math.floor(this.random() * known.shards);
      answer = await this.call(() => this.shard(index).admit({ ...input, shard: index }));
      if (answer.status === "home") answer = await this.call(() => this.home.admit(input));
    }
    if (answer.status === "active" && answer.shards !== undefined) this.isolates[isolate] = { shards: answer.shards, at: this.clock };
    else if (known !== undefined) this.isolates[isolate] = undefined;
    if (answer.status !== "active") return;
    if (revokedAtStart !== undefined && !answer.clientRevoked) {
      this.violations.add(`${client}, revoked at revision ${revokedAtStart.revision} (answered), served as not revoked`);
    }
    if (answer.clientRevoked) this.revokedRefused++;
    if (answer.decision.allowed) {
      this.admitted += answer.decision.cost;
      this.requests++;
      if (boundByReset && (this.org.credits?.epoch ?? 0) === epoch) {
        this.afterReset.set(epoch, (this.afterReset.get(epoch) ?? 0) + answer.decision.cost);
      }
    } else this.refusedRequests++;
  }

  /** Runs every object's alarm until no holder owes anything (returns land), the clock past every slice. */
  async settleAll(): Promise<void> {
    this.clock += 3_000;
    for (let round = 0; round < 3; round++) {
      for (const o of [...this.allShards(), this.home]) await this.scheduler.waitFor(o.alarm());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The commands of a run

type Command =
  | { kind: "request"; isolate: number; client: number; cost: number; skew: number; concurrent: boolean }
  | { kind: "tick"; ms: number }
  | { kind: "limits"; perSecond: number }
  | { kind: "revoke"; client: number }
  | { kind: "topUp"; amount: number }
  | { kind: "setCredits"; remaining: number }
  | { kind: "quota"; quota: OrgQuota | null }
  | { kind: "push" }
  | { kind: "restart"; which: number }
  | { kind: "alarm"; which: number };

const PER_SECOND = [500, 900, 1_500, 2_500, 3_100];
const QUOTAS: (OrgQuota | null)[] = [null, { per_day: 400 }, { per_second: 1_500, per_day: 400, per_month: 100_000 }];

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("request" as const),
      isolate: fc.nat(2),
      client: fc.nat(CLIENTS.length - 1),
      cost: fc.integer({ min: 1, max: 3 }),
      skew: fc.integer({ min: -500, max: 500 }),
      concurrent: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 4_000 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("limits" as const), perSecond: fc.constantFrom(...PER_SECOND) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("revoke" as const), client: fc.nat(CLIENTS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("topUp" as const), amount: fc.integer({ min: 1, max: 20 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("quota" as const), quota: fc.constantFrom(...QUOTAS) }) },
  { weight: 2, arbitrary: fc.constant({ kind: "push" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const), which: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("alarm" as const), which: fc.nat(4) }) },
);

/** Credits reset now and then (a new epoch), beside everything else: for property 6 only. */
const withResets: fc.Arbitrary<Command> = fc.oneof(
  { weight: 12, arbitrary: command },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("setCredits" as const), remaining: fc.integer({ min: 0, max: 6 }) }) },
);

interface Setup {
  perSecond: number;
  perDay: number;
  credits: number | null;
  quota: OrgQuota | null;
}

const setup: fc.Arbitrary<Setup> = fc.record({
  perSecond: fc.constantFrom(...PER_SECOND),
  perDay: fc.constantFrom(120, 1_000_000),
  credits: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }),
  quota: fc.constantFrom(...QUOTAS),
});

/** Plays a run: the setup pushed, then the commands (concurrent requests in flight together). */
async function play(s: fc.Scheduler, seed: number, start: Setup, commands: Command[]): Promise<World> {
  const world = new World(s, seed);
  const org = world.org;
  org.per_second = start.perSecond;
  org.per_day = start.perDay;
  org.credits = start.credits === null ? null : { base: start.credits, epoch: 1, added: 0, refill: null };
  org.quota = start.quota;
  await s.waitFor(world.push());
  let inFlight: Promise<unknown>[] = [];
  /** Lets the scheduler run everything in flight to its end. */
  const quiesce = async () => {
    await s.waitFor(Promise.all(inFlight));
    inFlight = [];
  };
  const pick = (which: number): Obj => (which === 0 ? world.home : world.shard(which));
  for (const c of commands) {
    switch (c.kind) {
      case "request": {
        const run = world.request(c.isolate, CLIENTS[c.client] as string, c.cost, c.skew);
        inFlight.push(run);
        if (!c.concurrent) await quiesce();
        break;
      }
      case "tick":
        await quiesce();
        world.clock += c.ms;
        break;
      case "limits":
        org.per_second = c.perSecond;
        org.version++;
        inFlight.push(world.push());
        break;
      case "revoke":
        if (!org.revocations.some((r) => r.client_id === CLIENTS[c.client])) {
          org.revision++;
          org.revocations.push({ client_id: CLIENTS[c.client] as string, revision: org.revision });
          inFlight.push(world.push());
        }
        break;
      case "setCredits":
        // A reset: a new epoch whose balance is `remaining` (unkey's set), replacing the last.
        org.credits = { base: c.remaining, epoch: (org.credits?.epoch ?? 0) + 1, added: 0, refill: null };
        world.given.set(org.credits.epoch, c.remaining);
        org.version++;
        inFlight.push(world.push());
        break;
      case "topUp":
        if (org.credits !== null) {
          org.credits = { ...org.credits, added: org.credits.added + c.amount };
          world.given.set(org.credits.epoch, org.credits.base + org.credits.added);
          org.version++;
          inFlight.push(world.push());
        }
        break;
      case "quota":
        org.quota = c.quota;
        org.revision++;
        inFlight.push(world.push());
        break;
      case "push":
        inFlight.push(world.push());
        break;
      case "restart": {
        await quiesce();
        const o = pick(c.which);
        if (o.busy === 0) {
          o.restart();
          world.restarts++;
        }
        break;
      }
      case "alarm":
        inFlight.push(pick(c.which).alarm());
        break;
    }
  }
  await quiesce();
  // The last change reaches everyone, then every holder hands back its rest.
  await s.waitFor(world.push());
  await world.settleAll();
  return world;
}

/**
 * Asserts `check` of every run played from a setup and commands (the scheduler and the world's
 * own random choices drawn by fast-check), RUNS times, replayable (`replay`).
 */
function holdsOver(
  setups: fc.Arbitrary<Setup>,
  commands: fc.Arbitrary<Command[]>,
  check: (world: World) => void,
  runs = RUNS,
): Promise<void> {
  return fc.assert(
    fc.asyncProperty(fc.scheduler(), fc.integer(), setups, commands, async (s, seed, start, cs) => check(await play(s, seed, start, cs))),
    { numRuns: runs, ...replay },
  );
}

/** A run's commands: up to 80, drawn from `of`. */
const commandsOf = (of: fc.Arbitrary<Command>, maxLength = 80): fc.Arbitrary<Command[]> =>
  fc.array(of, { minLength: 5, maxLength, size: "max" });

// ---------------------------------------------------------------------------------------------
// The properties

describe("admission's rules hold over random interleavings (issue 41)", () => {
  afterAll(() => {
    console.info(`admission properties: property 1 covered ${JSON.stringify(covered)}`);
  });

  it("1 and 2: never more than any limit counted; every holder conserves its grants; credits, day and month paid exactly what was admitted", async () => {
    await holdsOver(setup, commandsOf(command), (world) => {
      tally(world);
      expect(world.violations.list).toEqual([]);
      // Every holder: granted = admitted + held + returned; and after settling, nothing held.
      for (const shard of world.allShards()) {
        const balance = shard.granted - shard.admitted - shard.held() - shard.returned;
        expect({ index: shard.index, balance, held: shard.held() }).toEqual({ index: shard.index, balance: 0, held: 0 });
      }
      expect(world.home.state.quotaSlice.lease.remaining + owedAmount(world.home.state.quotaSlice.owed)).toBe(0);
      const home = world.home.state;
      // Paid exactly: the key's day, its credits, the quota's day and month.
      expect(home.windows.dayCount).toBe(world.admitted);
      if (home.credits !== null) {
        const given = (world.org.credits?.base ?? 0) + (world.org.credits?.added ?? 0);
        expect(home.credits.remaining).toBe(given - world.admitted);
      }
      // Whatever quota there was (it changes in these runs): never more counted than admitted.
      expect(world.quota.state.dayCount).toBeLessThanOrEqual(world.admitted);
      expect(world.quota.state.monthCount).toBe(world.quota.state.dayCount);
      // The traffic charts: every object's hours add up to the requests admitted.
      const traffic = [world.home, ...world.allShards()].reduce((sum, o) => sum + o.stored.traffic + o.state.hourly.admitted, 0);
      expect(traffic).toBe(world.requests);
    });
  }, 120_000);

  it("2: under an organization quota that never changes, its day and month are charged exactly what was admitted", async () => {
    const withQuota = setup.map((s) => ({ ...s, quota: s.quota ?? QUOTAS[2] ?? null }));
    await holdsOver(withQuota, commandsOf(command.filter((c) => c.kind !== "quota")), (world) => {
      expect(world.violations.list).toEqual([]);
      expect(world.quota.state.dayCount).toBe(world.admitted);
      expect(world.quota.state.monthCount).toBe(world.admitted);
    });
  }, 120_000);

  it("3: a revocation answered is refused at the next request of every object, shards added or revived included", async () => {
    await holdsOver(setup, commandsOf(command), (world) => {
      expect(world.violations.list.filter((v) => v.includes("revoked"))).toEqual([]);
      // And at rest, every object that serves the key holds the organization's whole set.
      const all = [...new Set(world.org.revocations.map((r) => r.client_id))].sort();
      const serving = shardsFor(world.org.per_second);
      for (const o of [world.home, ...world.allShards().filter((x) => x.index <= serving)]) {
        if (o.state.key !== null) expect([...o.revoked].sort()).toEqual(all);
      }
    });
  }, 120_000);

  it("4: a DPoP proof id is accepted once whatever API key, shard count or isolate it comes with", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            proof: fc.nat(30),
            key: fc.nat(3),
            shards: fc.integer({ min: 0, max: 10 }),
            isolate: fc.nat(2),
          }),
          { minLength: 1, maxLength: 80 },
        ),
        (uses) => {
          // Where each ProofObject's records live: by the place the proof alone names (objects/proofs.ts).
          const places = new Map<number, Set<string>>();
          const accepted = new Map<string, number>();
          for (const use of uses) {
            const id = `jkt${use.proof % 7}.jti-${use.proof}`;
            const place = proofShard(id);
            expect(place).toBeGreaterThanOrEqual(0);
            expect(place).toBeLessThan(PROOF_SHARDS);
            const seen = places.get(place) ?? new Set<string>();
            places.set(place, seen);
            if (!seen.has(id)) {
              seen.add(id);
              accepted.set(id, (accepted.get(id) ?? 0) + 1);
            }
          }
          for (const [, times] of accepted) expect(times).toBe(1);
        },
      ),
      { numRuns: RUNS * 4 },
    );
  });

  it("5: erasure reaches every shard the key ever had, whatever its limits did before", async () => {
    const limitsAndTraffic = command.filter((c) => c.kind === "limits" || c.kind === "request" || c.kind === "push" || c.kind === "tick");
    await holdsOver(setup, commandsOf(limitsAndTraffic, 40), (world) => {
      // objects/key.ts `erase`: the home erases shards 1..shardsEverHad, then itself.
      const reached = shardsEverHad(world.home.state.key);
      for (const o of world.allShards().filter((x) => x.everHadState)) {
        expect({ shard: o.index, reached: o.index <= reached }).toEqual({ shard: o.index, reached: true });
      }
    });
  }, 120_000);

  it("6: a reset of the credits answered binds every request that starts after it, whichever shard serves it and whatever slices were out", async () => {
    await holdsOver(
      setup,
      commandsOf(withResets),
      (world) => {
        expect(world.violations.list).toEqual([]);
        for (const [e, admitted] of world.afterReset) {
          // The balance the reset set, and the top-ups of its epoch.
          const given = world.given.get(e) ?? 0;
          expect({ epoch: e, admitted: admitted <= given ? "within" : `${admitted} of ${given}` }).toEqual({
            epoch: e,
            admitted: "within",
          });
        }
        // A slice granted under the old epoch and answered after the reset is the rare interleaving
        // this property looks for: five times the runs (about 4 s) find it in nearly every run.
      },
      RUNS * 5,
    );
  }, 120_000);
});
