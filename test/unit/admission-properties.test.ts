/**
 * Admission's rules as properties, over the production shells of the objects (src/objects/shells/:
 * the KeyObject's, the QuotaObject's and the ProofObject's) hosted by the harness's world
 * (admission-world.ts): an in-memory SQLite of the same rows, and peers whose calls fast-check's
 * scheduler interleaves. Nothing of an object's logic is written here: the runs are fast-check
 * model-based runs (`fc.commands` played by `fc.asyncModelRun` under a scheduler), each command with its
 * precondition against the model (the organization's record) and its postcondition on the answer.
 * Between requests, the runs change limits up and down (adding and retiring shards), revoke
 * credentials, top up and reset credits, change the quota, restart idle objects (memory lost, rows
 * kept), fire alarms, let edge clocks drift by up to half a second, let isolates route by a stale
 * shard count, and cross a refill boundary.
 *
 * The properties:
 * 1. Never more admitted than the limit: no coordinator window (a home's second and day, the
 *    quota's second, day and month) ever counts past its limit, and every shard conserves what it
 *    was granted (granted = admitted + held + returned: nothing spent twice, nothing lost).
 * 2. Paid exactly: once every holder has handed back its rest, the credits, the key's day and the
 *    organization's day and month have been charged exactly what was admitted, and the traffic
 *    counts add up to it.
 * 3. Revocations everywhere: a request that starts after the organization's push of a revocation
 *    was answered is refused at whichever object serves it, new or revived shards included.
 * 4. A DPoP proof id is accepted at most once whatever key, shard count or isolate it comes with,
 *    across restarts and pruning of the ProofObjects.
 * 5. Erasure reaches every shard the key ever had.
 * 6. A credits reset answered binds every request that starts after it.
 * 7. A refill boundary on a sharded key: what the new period admits is at most its balance.
 * The runs must reach every rule they claim: `reached` is asserted at the end of the file.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { proofShard } from "../../src/objects/proof-place";
import { shardsFor } from "../../src/objects/shells/key";
import { PROOF_PRUNE_INTERVAL_MS, ProofShell } from "../../src/objects/shells/proofs";
import type { OrgQuota } from "../../src/schemas/records";
import { HOME, reached, World } from "./admission-world";
import { MemoryStorage } from "./memory-storage";

/** Noon of a UTC day: a run's few minutes never cross midnight, so one day window holds them all. */
const NOON = Date.UTC(2026, 10, 27, 12);
/** A few seconds before the next midnight: property 7's runs cross a daily refill boundary. */
const BEFORE_MIDNIGHT = Date.UTC(2026, 10, 28) - 2_500;
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

// ---------------------------------------------------------------------------------------------
// The commands: the model is the organization's record (world.org), the real system the shells

type Real = { world: World; inFlight: Promise<unknown>[] };
type Model = { world: World };
type Cmd = fc.AsyncCommand<Model, Real>;

/** Work left in flight (a concurrent request, a push): the scheduler interleaves it with what follows. */
function launch(r: Real, work: Promise<unknown>): void {
  r.inFlight.push(
    work.catch((err: unknown) => {
      r.world.violations.add(`a call threw: ${err instanceof Error ? err.stack : String(err)}`);
    }),
  );
}

async function quiesce(r: Real): Promise<void> {
  while (r.inFlight.length > 0) await Promise.all(r.inFlight.splice(0));
}

class Request implements Cmd {
  constructor(
    readonly isolate: number,
    readonly client: number,
    readonly cost: number,
    readonly skew: number,
    readonly concurrent: boolean,
  ) {}
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    const client = CLIENTS[this.client] as string;
    const work = r.world.request(this.isolate, client, this.cost, this.skew).then((answer) => {
      // Postconditions against the model: a request is decided (never "unknown" for an issued key),
      // and an admitted request was charged its cost.
      expect(answer.status === "active" || answer.status === "unconfirmed").toBe(true);
      if (answer.status === "active" && answer.decision.allowed) expect(answer.decision.cost).toBe(this.cost);
    });
    if (this.concurrent) launch(r, work);
    else await work;
  }
  toString = () => `request(${this.isolate},c${this.client},${this.cost},${this.skew}${this.concurrent ? ",concurrent" : ""})`;
}

class Tick implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    await quiesce(r);
    r.world.clock += this.ms;
  }
  toString = () => `tick(${this.ms})`;
}

class Limits implements Cmd {
  constructor(readonly perSecond: number) {}
  check = (m: Model) => m.world.org.per_second !== this.perSecond;
  async run(m: Model, r: Real): Promise<void> {
    m.world.org.per_second = this.perSecond;
    m.world.org.version++;
    launch(r, r.world.push());
  }
  toString = () => `limits(${this.perSecond})`;
}

class Revoke implements Cmd {
  constructor(readonly client: number) {}
  check = (m: Model) => !m.world.org.revocations.some((x) => x.client_id === CLIENTS[this.client]);
  async run(m: Model, r: Real): Promise<void> {
    const org = m.world.org;
    org.revision++;
    org.revocations.push({ client_id: CLIENTS[this.client] as string, revision: org.revision });
    launch(r, r.world.push());
  }
  toString = () => `revoke(c${this.client})`;
}

class TopUp implements Cmd {
  constructor(readonly amount: number) {}
  check = (m: Model) => m.world.org.credits !== null && m.world.org.credits.refill === null;
  async run(m: Model, r: Real): Promise<void> {
    const org = m.world.org;
    const credits = org.credits as NonNullable<typeof org.credits>;
    org.credits = { ...credits, added: credits.added + this.amount };
    m.world.given.set(credits.epoch, org.credits.base + org.credits.added);
    org.version++;
    launch(r, r.world.push());
  }
  toString = () => `topUp(${this.amount})`;
}

/** A reset: a new epoch whose balance is `remaining` (unkey's set), replacing the last. */
class SetCredits implements Cmd {
  constructor(readonly remaining: number) {}
  check = (m: Model) => m.world.org.credits?.refill == null;
  async run(m: Model, r: Real): Promise<void> {
    const w = m.world;
    if (w.shardNames().some((n) => w.held(w.object(n).storage) > 0)) reached.resetsMidSlice++;
    w.org.credits = { base: this.remaining, epoch: (w.org.credits?.epoch ?? 0) + 1, added: 0, refill: null };
    w.given.set(w.org.credits.epoch, this.remaining);
    w.org.version++;
    launch(r, w.push());
  }
  toString = () => `setCredits(${this.remaining})`;
}

class Quota implements Cmd {
  constructor(readonly quota: OrgQuota | null) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.world.org.quota = this.quota;
    m.world.org.revision++;
    launch(r, r.world.push());
  }
  toString = () => `quota(${JSON.stringify(this.quota)})`;
}

class Push implements Cmd {
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    launch(r, r.world.push());
  }
  toString = () => "push";
}

/**
 * 0: the home; 1..4: a shard; 5: the QuotaObject; 6: the QuotaObject, with releases still on their
 * way to it. Only an idle object restarts (a crash mid-call is a failed call).
 */
class Restart implements Cmd {
  constructor(readonly which: number) {}
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    await quiesce(r);
    if (this.which >= 5) await r.world.restartQuota(this.which === 6);
    else await r.world.restart(this.which === 0 ? HOME : `shard:${HOME}:${this.which}`);
  }
  toString = () => `restart(${this.which})`;
}

/**
 * The next quota take or grant is counted and its answer lost (a call given up on): the take is
 * released; with `restart`, the QuotaObject restarts while that release is on its way.
 */
class LoseQuotaAnswer implements Cmd {
  constructor(readonly restart: boolean) {}
  check = (m: Model) => m.world.org.quota !== null;
  async run(m: Model): Promise<void> {
    m.world.loseQuotaAnswers = 1;
    m.world.restartBeforeRelease = this.restart;
  }
  toString = () => `loseQuotaAnswer(${this.restart ? "restart before its release" : ""})`;
}

class Alarm implements Cmd {
  constructor(readonly which: number) {}
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    launch(r, r.world.alarm(this.which === 0 ? HOME : `shard:${HOME}:${this.which}`));
  }
  toString = () => `alarm(${this.which})`;
}

/** Limits within reach: one object's and a sharded key's seconds, with costs that can fill them. */
const PER_SECOND = [3, 8, 500, 1_500, 2_500, 3_100];
const COSTS = [1, 1, 2, 3, 40, 400, 900];
/** Quotas that refuse within a run: exact (per_second at most one object's) and sliced (past it). */
const QUOTAS: (OrgQuota | null)[] = [
  null,
  { per_day: 30 },
  { per_second: 5, per_day: 200 },
  { per_second: 1_500, per_day: 2_000, per_month: 3_000 },
  { per_second: 2_000, per_day: 100 },
];

const cost = fc.constantFrom(...COSTS);
const request = fc
  .record({
    isolate: fc.nat(2),
    client: fc.nat(CLIENTS.length - 1),
    cost,
    skew: fc.integer({ min: -500, max: 500 }),
    concurrent: fc.boolean(),
  })
  .map((x) => new Request(x.isolate, x.client, x.cost, x.skew, x.concurrent));

const everything: fc.Arbitrary<Cmd>[] = [
  request,
  request,
  request,
  request,
  request,
  request,
  fc.integer({ min: 1, max: 1_500 }).map((ms) => new Tick(ms)),
  fc.integer({ min: 1, max: 4_000 }).map((ms) => new Tick(ms)),
  fc.constantFrom(...PER_SECOND).map((v) => new Limits(v)),
  fc.nat(CLIENTS.length - 1).map((c) => new Revoke(c)),
  fc.integer({ min: 1, max: 600 }).map((a) => new TopUp(a)),
  fc.constantFrom(...QUOTAS).map((q) => new Quota(q)),
  fc.constant(new Push()),
  fc.nat(6).map((w) => new Restart(w)),
  fc.nat(4).map((w) => new Alarm(w)),
  fc.boolean().map((restart) => new LoseQuotaAnswer(restart)),
];
const resets = fc.integer({ min: 0, max: 900 }).map((v) => new SetCredits(v));

interface Setup {
  perSecond: number;
  perDay: number;
  credits: number | null;
  refill: number | null;
  quota: OrgQuota | null;
  start: number;
}

const setup: fc.Arbitrary<Setup> = fc.record({
  perSecond: fc.constantFrom(...PER_SECOND),
  perDay: fc.constantFrom(60, 2_000, 1_000_000),
  credits: fc.option(fc.integer({ min: 0, max: 3_000 }), { nil: null }),
  refill: fc.constant(null),
  quota: fc.constantFrom(...QUOTAS),
  start: fc.constant(NOON),
});

/** Plays a run: the setup pushed, then the commands; everything in flight ends, the last push lands, every holder hands back its rest. */
async function play(s: fc.Scheduler, seed: number, start: Setup, commands: Iterable<Cmd>): Promise<World> {
  const world = new World(s, seed, start.start);
  const org = world.org;
  org.per_second = start.perSecond;
  org.per_day = start.perDay;
  org.credits =
    start.credits === null
      ? null
      : { base: start.credits, epoch: 1, added: 0, refill: start.refill === null ? null : { amount: start.refill, interval: "day" } };
  if (start.refill !== null) world.refillAt = Date.UTC(2026, 10, 28);
  org.quota = start.quota;
  await s.waitFor(world.push());
  const real: Real = { world, inFlight: [] };
  // fc.asyncModelRun driven by the run's scheduler: fc.scheduledModelRun (fast-check 4.11) waits for
  // ever on a command whose run itself awaits the scheduler, as every call between objects here does.
  await s.waitFor(fc.asyncModelRun(() => ({ model: { world }, real }), commands));
  await s.waitFor(quiesce(real));
  await s.waitFor(world.releasesLanded());
  await s.waitFor(world.push());
  await world.settleAll();
  world.tally();
  return world;
}

/** Asserts `check` of every run played from a setup and commands, RUNS times, replayable (`replay`). */
function holdsOver(
  setups: fc.Arbitrary<Setup>,
  commands: fc.Arbitrary<Iterable<Cmd>>,
  check: (world: World) => void,
  runs = RUNS,
): Promise<void> {
  return fc.assert(
    fc.asyncProperty(fc.scheduler(), fc.integer(), setups, commands, async (s, seed, start, cs) => check(await play(s, seed, start, cs))),
    { numRuns: runs, ...replay },
  );
}

/** A run's commands; KEYWAY_PROPERTY_COMMANDS is the `replayPath` fast-check prints after a counterexample's commands. */
const commandsOf = (of: fc.Arbitrary<Cmd>[], maxCommands = 40) =>
  fc.commands(of, { maxCommands, size: "max", ...(knobs.KEYWAY_PROPERTY_COMMANDS ? { replayPath: knobs.KEYWAY_PROPERTY_COMMANDS } : {}) });

// ---------------------------------------------------------------------------------------------
// The properties (each with 300 s: a deadline for a hang, docs/testing.md "When a test times out";
// beside a full run, the file has taken 288 s in all)

describe("admission's rules hold over random interleavings of the production shells", () => {
  afterAll(() => {
    console.info(`admission properties reached: ${JSON.stringify(reached)}`);
  });

  it("1 and 2: never more than any limit counted; every shard conserves its grants; credits, day and month paid exactly what was admitted", async () => {
    await holdsOver(setup, commandsOf(everything), (world) => {
      expect(world.violations.list).toEqual([]);
      // Every shard: granted = admitted + held + returned; and after settling, nothing held.
      for (const name of world.shardNames()) {
        const l = world.ledger(name);
        const held = world.held(world.object(name).storage);
        expect({ name, balance: l.granted - l.admitted - held - l.returned, held }).toEqual({ name, balance: 0, held: 0 });
      }
      const home = world.home().storage;
      expect(world.quotaHeld(home)).toBe(0);
      // Paid exactly: the key's day, its credits, the quota's day and month.
      expect(world.rowOf(home)?.day_count ?? 0).toBe(world.admitted);
      const credits = world.credits(home);
      if (credits !== null) {
        const given = (world.org.credits?.base ?? 0) + (world.org.credits?.added ?? 0);
        expect(credits.remaining).toBe(given - world.admitted);
      }
      // Whatever quota there was (it changes in these runs): never more counted than admitted, but
      // for takes released after a restart of the QuotaObject (counted, never admitted).
      const quota = world.quotaRow();
      expect(quota?.day_count ?? 0).toBeLessThanOrEqual(world.admitted + world.stranded);
      expect(quota?.month_count ?? 0).toBe(quota?.day_count ?? 0);
      // The traffic charts: every object's hours add up to the requests admitted.
      expect(world.traffic()).toBe(world.requests);
    });
  }, 300_000);

  it("2: under an organization quota that never changes, its day and month are charged exactly what was admitted", async () => {
    const withQuota = setup.chain((s) => fc.constantFrom(...QUOTAS.filter((q) => q !== null)).map((quota) => ({ ...s, quota })));
    await holdsOver(withQuota, commandsOf(everything.slice(0, 11).concat(everything.slice(12))), (world) => {
      expect(world.violations.list).toEqual([]);
      // Exactly: what was admitted, and what takes released after a restart left counted.
      expect(world.quotaRow()?.day_count ?? 0).toBe(world.admitted + world.stranded);
      expect(world.quotaRow()?.month_count ?? 0).toBe(world.admitted + world.stranded);
    });
  }, 300_000);

  it("3: a revocation answered is refused at the next request of every object, shards added or revived included", async () => {
    await holdsOver(setup, commandsOf(everything), (world) => {
      expect(world.violations.list.filter((v) => v.includes("revoked"))).toEqual([]);
      // And at rest, every object that serves the key holds the organization's whole set.
      const all = [...new Set(world.org.revocations.map((r) => r.client_id))].sort();
      const serving = shardsFor(world.org.per_second);
      for (const [i, name] of [HOME, ...Array.from({ length: serving }, (_, k) => `shard:${HOME}:${k + 1}`)].entries()) {
        const storage = world.object(name).storage;
        if (storage.hasTable("revoked_clients")) expect({ i, revoked: world.revoked(storage) }).toEqual({ i, revoked: all });
      }
    });
  }, 300_000);

  it("5: erasure reaches every shard the key ever had, whatever its limits did before", async () => {
    const limitsAndTraffic = [request, request, request, fc.constantFrom(...PER_SECOND).map((v) => new Limits(v)), fc.constant(new Push())];
    await holdsOver(setup, commandsOf(limitsAndTraffic, 30), async (world) => {
      await world.drive(world.port(HOME, "organization").erase());
      for (const { storage } of world.allObjects()) {
        expect(storage.peek("SELECT name FROM sqlite_master WHERE type = 'table'")).toEqual([]);
      }
    });
  }, 300_000);

  it("6: a reset of the credits answered binds every request that starts after it, whichever shard serves it and whatever slices were out", async () => {
    const withCredits = setup.map((s) => ({ ...s, credits: s.credits ?? 50 }));
    await holdsOver(
      withCredits,
      commandsOf([...everything, resets, resets]),
      (world) => {
        expect(world.violations.list).toEqual([]);
        for (const [e, admitted] of world.afterReset) {
          const given = world.given.get(e) ?? 0;
          expect({ epoch: e, admitted: admitted <= given ? "within" : `${admitted} of ${given}` }).toEqual({
            epoch: e,
            admitted: "within",
          });
        }
      },
      // A reset while a shard holds a slice is the interleaving this property is for: five times
      // the runs, as before the harness ran the shells (`reached.resetsMidSlice` counts it).
      RUNS * 5,
    );
  }, 300_000);

  it("7: across a daily refill boundary of a sharded key, the new period admits at most its balance", async () => {
    const refilling = fc.record({
      perSecond: fc.constantFrom(1_500, 2_500, 3_100),
      perDay: fc.constant(1_000_000),
      credits: fc.integer({ min: 0, max: 2_000 }),
      refill: fc.integer({ min: 1, max: 1_500 }),
      quota: fc.constantFrom(null, QUOTAS[3] ?? null),
      start: fc.constant(BEFORE_MIDNIGHT),
    });
    const noCreditsChanges = everything.filter((_, i) => i !== 10);
    await holdsOver(refilling, commandsOf(noCreditsChanges, 40), (world) => {
      expect(world.violations.list).toEqual([]);
      const refill = world.org.credits?.refill?.amount ?? 0;
      expect(world.admittedAfterRefill).toBeLessThanOrEqual(refill);
    });
  }, 300_000);
});

// ---------------------------------------------------------------------------------------------
// Property 4: the ProofObjects' shells

type ProofReal = {
  proofs: Map<number, { storage: MemoryStorage; shell: ProofShell }>;
  clock: number;
  /** Commands run so far, and the last one that restarted or pruned each place. */
  step: number;
  restartedAt: Map<number, number>;
  prunedAt: Map<number, number>;
};
type ProofModel = { firstUse: Map<string, { key: number; shards: number; expires: number; step: number }> };
type ProofCmd = fc.Command<ProofModel, ProofReal>;

const PROOF_LIFETIME_MS = 70_000;
const replays = { acrossKeysOrShards: 0, afterRestart: 0, afterPrune: 0 };

/** The proof id a command's number names: 7 DPoP keys' thumbprints, each with its jtis. */
const proofId = (n: number): string => `jkt${n % 7}.jti-${n}`;

/** The ProofObject a proof id is recorded at (objects/proof-place.ts), hosted on first use. */
function proofPlace(r: ProofReal, place: number): { storage: MemoryStorage; shell: ProofShell } {
  let p = r.proofs.get(place);
  if (p === undefined) {
    const storage = new MemoryStorage();
    p = { storage, shell: new ProofShell(storage, () => r.clock) };
    r.proofs.set(place, p);
  }
  return p;
}

class Use implements ProofCmd {
  constructor(
    readonly proof: number,
    readonly key: number,
    readonly shards: number,
  ) {}
  check = () => true;
  run(m: ProofModel, r: ProofReal): void {
    const step = ++r.step;
    const id = proofId(this.proof);
    const place = proofShard(id);
    const first = m.firstUse.get(id);
    const accepted = proofPlace(r, place).shell.record(id, r.clock + PROOF_LIFETIME_MS);
    if (first === undefined) {
      expect(accepted, `${id} first use`).toBe(true);
      m.firstUse.set(id, { key: this.key, shards: this.shards, expires: r.clock + PROOF_LIFETIME_MS, step });
    } else if (r.clock < first.expires) {
      // Postcondition: a replay within the proof's lifetime is refused, whatever it comes with.
      expect(accepted, `${id} replayed`).toBe(false);
      if (first.key !== this.key || first.shards !== this.shards) replays.acrossKeysOrShards++;
      // Counted only when the restart or the prune came between the first use and this one.
      if ((r.restartedAt.get(place) ?? 0) > first.step) replays.afterRestart++;
      if ((r.prunedAt.get(place) ?? 0) > first.step) replays.afterPrune++;
    }
  }
  toString = () => `use(${this.proof},key${this.key},${this.shards} shards)`;
}

class ProofTick implements ProofCmd {
  constructor(readonly ms: number) {}
  check = () => true;
  run(_m: ProofModel, r: ProofReal): void {
    r.step++;
    r.clock += this.ms;
  }
  toString = () => `tick(${this.ms})`;
}

/** The place of proof `proof` restarts (a new shell over its rows) or prunes; nothing if it was never used. */
class ProofPlaceEvent implements ProofCmd {
  constructor(
    readonly event: "restart" | "prune",
    readonly proof: number,
  ) {}
  check = () => true;
  run(_m: ProofModel, r: ProofReal): void {
    const step = ++r.step;
    const place = proofShard(proofId(this.proof));
    const p = r.proofs.get(place);
    if (p === undefined) return;
    if (this.event === "restart") {
      p.shell = new ProofShell(p.storage, () => r.clock);
      r.restartedAt.set(place, step);
    } else {
      p.shell.prune(r.clock);
      r.prunedAt.set(place, step);
    }
  }
  toString = () => `${this.event}(place of ${this.proof})`;
}

describe("4: the ProofObjects' shells", () => {
  it("a DPoP proof id is accepted once whatever API key, shard count or isolate it comes with, across restarts and pruning", () => {
    const proof = fc.nat(30);
    fc.assert(
      fc.property(
        fc.commands(
          [
            fc.record({ proof, key: fc.nat(3), shards: fc.integer({ min: 0, max: 10 }) }).map((u) => new Use(u.proof, u.key, u.shards)),
            fc.record({ proof, key: fc.nat(3), shards: fc.integer({ min: 0, max: 10 }) }).map((u) => new Use(u.proof, u.key, u.shards)),
            fc.integer({ min: 1, max: PROOF_PRUNE_INTERVAL_MS / 2 }).map((ms) => new ProofTick(ms)),
            proof.map((p) => new ProofPlaceEvent("restart", p)),
            proof.map((p) => new ProofPlaceEvent("prune", p)),
          ],
          { maxCommands: 80, size: "max" },
        ),
        (cmds) => {
          fc.modelRun(
            () => ({
              model: { firstUse: new Map() },
              real: { proofs: new Map(), clock: NOON, step: 0, restartedAt: new Map(), prunedAt: new Map() },
            }),
            cmds,
          );
        },
      ),
      { numRuns: RUNS * 4, ...replay },
    );
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------
// The runs reached what they claim

describe("the runs reach every rule they claim", () => {
  it("each named rule fired over this file's runs (a generator drifted out of reach fails here)", () => {
    const floor = Math.max(1, Math.floor(RUNS / 15));
    const rules = {
      ...reached,
      replaysAcrossKeysOrShards: replays.acrossKeysOrShards,
      replaysAfterRestart: replays.afterRestart,
      replaysAfterPrune: replays.afterPrune,
    };
    const short = Object.entries(rules).filter(([, n]) => n < floor);
    expect(short, `rules reached fewer than ${floor} times: ${JSON.stringify(rules)}`).toEqual([]);
  });
});
