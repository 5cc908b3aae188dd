/**
 * The objects' shells (src/objects/shells/) hosted directly over an in-memory SQLite
 * (memory-storage.ts), as examples of what the admission properties (admission-properties.test.ts)
 * run but do not look at: where the ProofObject sets its pruning alarm and what the alarm deletes,
 * what the QuotaObject reads back after a restart and takes back on a release, and how the
 * KeyObject's rows encode the slices held and the credits, and the KeyObject's reads, erasure,
 * pruning, flushing of uses and revocation facts.
 * The unit tier's, which the mutation check (docs/testing.md, "Mutation testing") runs.
 */
import { describe, expect, it } from "vitest";
import {
  type Admission,
  type AdmitInput,
  type KeyPeers,
  type KeyPort,
  KeyShell,
  type KeySnapshot,
  PRUNE_BATCH,
  PRUNE_INTERVAL_MS,
  type QuotaPort,
  type TrafficRow,
  USE_RESOLUTION_MS,
} from "../../src/objects/shells/key";
import { decodeHolding, encodeHolding, MIGRATIONS, readCredits, writeCredits, writeWindows } from "../../src/objects/shells/key-rows";
import { PROOF_PRUNE_BATCH, PROOF_PRUNE_INTERVAL_MS, ProofShell } from "../../src/objects/shells/proofs";
import { QuotaShell, RELEASE_WINDOW_MS } from "../../src/objects/shells/quota";
import { migrate } from "../../src/objects/sql";
import { EMPTY_ADMISSION, type Holding } from "../../src/ratelimit/admission";
import { NO_LEASE, NOTHING_PAID, type Owed } from "../../src/ratelimit/lease";
import { monthOf, type QuotaLimits } from "../../src/ratelimit/quota";
import { snapshotOf } from "./fixtures";
import { MemoryStorage } from "./memory-storage";

/** A MemoryStorage that also lists every alarm set on it, in order. */
class Host extends MemoryStorage {
  readonly alarmsSet: number[] = [];
  override async setAlarm(at: number): Promise<void> {
    this.alarmsSet.push(at);
    await super.setAlarm(at);
  }
}

const T = 1_800_000_000_000;
const I = PROOF_PRUNE_INTERVAL_MS;

function proofs(at = T): { storage: Host; shell: ProofShell; clock: { now: number } } {
  const storage = new Host();
  const clock = { now: at };
  return { storage, shell: new ProofShell(storage, () => clock.now), clock };
}

describe("ProofShell", () => {
  it("records a proof id once: true the first time, false for a replay", () => {
    const { shell } = proofs();
    expect(shell.record("a", T + 70_000)).toBe(true);
    expect(shell.record("a", T + 70_000)).toBe(false);
    expect(shell.record("b", T + 70_000)).toBe(true);
  });

  it("sets the alarm at the first proof's expiry, but no sooner than an interval from now", () => {
    const late = proofs();
    late.shell.record("a", T + 2 * I);
    expect(late.storage.alarmsSet).toEqual([T + 2 * I]);
    const soon = proofs();
    soon.shell.record("a", T + 5_000);
    expect(soon.storage.alarmsSet).toEqual([T + I]);
  });

  it("leaves the alarm for a proof that expires later, or not a whole interval sooner", () => {
    const { shell, storage } = proofs();
    shell.record("a", T + 3 * I);
    shell.record("later", T + 10 * I);
    shell.record("a bit sooner", T + 3 * I - I / 2);
    shell.record("exactly an interval sooner", T + 2 * I);
    expect(storage.alarmsSet).toEqual([T + 3 * I]);
  });

  it("moves the alarm earlier for a proof that expires more than an interval sooner (after a day-long federated one)", () => {
    const { shell, storage } = proofs();
    shell.record("federated", T + 86_400_000);
    shell.record("dpop", T + 70_000);
    expect(storage.alarmsSet).toEqual([T + 86_400_000, T + 70_000]);
  });

  it("reads back the alarm a restart left set, and keeps it", async () => {
    const { storage } = proofs();
    storage.alarm = T + 2 * I;
    const shell = new ProofShell(storage, () => T);
    await shell.start();
    shell.record("a", T + 5 * I);
    expect(storage.alarmsSet).toEqual([]);
  });

  it("prunes only expired ids, PROOF_PRUNE_BATCH at most, and says when more are due", () => {
    const { shell, storage } = proofs();
    for (let i = 0; i <= PROOF_PRUNE_BATCH; i++) shell.record(`old${i}`, T + i);
    shell.record("fresh", T + 10 * I);
    const now = T + PROOF_PRUNE_BATCH + 1;
    expect(shell.prune(now)).toBe(true);
    expect(storage.peek("SELECT count(*) AS n FROM proofs")[0]?.n).toBe(2);
    expect(shell.prune(now)).toBe(false);
    expect(storage.peek("SELECT id FROM proofs")).toEqual([{ id: "fresh" }]);
    expect(shell.prune(now)).toBe(false);
    // A pruned id could no longer be accepted anyway; a fresh one is still a replay.
    expect(shell.record("old0", T + 20 * I)).toBe(true);
    expect(shell.record("fresh", T + 20 * I)).toBe(false);
  });

  it("alarm: runs again at once while more are due", async () => {
    const { shell, storage, clock } = proofs();
    for (let i = 0; i <= PROOF_PRUNE_BATCH; i++) shell.record(`old${i}`, T + i);
    storage.alarmsSet.length = 0;
    clock.now = T + 2 * PROOF_PRUNE_BATCH;
    await shell.alarm();
    expect(storage.alarmsSet).toEqual([clock.now]);
  });

  it("alarm: sets itself for the next expiry, no sooner than an interval from now", async () => {
    const far = proofs();
    far.shell.record("old", T + 1);
    far.shell.record("far", T + 10 * I);
    far.storage.alarmsSet.length = 0;
    far.clock.now = T + 2;
    await far.shell.alarm();
    expect(far.storage.alarmsSet).toEqual([T + 10 * I]);
    expect(far.storage.peek("SELECT id FROM proofs")).toEqual([{ id: "far" }]);

    const near = proofs();
    near.shell.record("old", T + 1);
    near.shell.record("near", T + 10);
    near.storage.alarmsSet.length = 0;
    near.clock.now = T + 2;
    await near.shell.alarm();
    expect(near.storage.alarmsSet).toEqual([T + 2 + I]);
  });

  it("alarm: sets nothing when no proof is left, and the next proof sets it again", async () => {
    const { shell, storage, clock } = proofs();
    shell.record("old", T + 1);
    storage.alarmsSet.length = 0;
    clock.now = T + 2;
    await shell.alarm();
    expect(storage.alarmsSet).toEqual([]);
    expect(storage.peek("SELECT id FROM proofs")).toEqual([]);
    shell.record("next", T + 3 * I);
    expect(storage.alarmsSet).toEqual([T + 3 * I]);
  });
});

const DAY = Math.floor(T / 86_400_000);
const MONTH = monthOf(T);
const LIMITS: QuotaLimits = { per_second: 100, per_day: 10, per_month: 20 };
const owed = (amount: number, day = DAY, month = MONTH): Owed => ({ amount, paid: { ...NOTHING_PAID, day, quotaDay: day, month } });

function quota(): { storage: MemoryStorage; shell: QuotaShell; clock: { now: number } } {
  const storage = new MemoryStorage();
  const clock = { now: T };
  return { storage, shell: new QuotaShell(storage, () => clock.now), clock };
}

/** What the quota's day window has used, as `usage` shows it. */
const usedToday = (shell: QuotaShell, now = T): number => shell.usage(LIMITS, now).windows.find((w) => w.name === "org_day")?.used ?? -1;

describe("QuotaShell", () => {
  it("counts takes in its windows row, which a restart reads back", () => {
    const { shell, storage } = quota();
    expect(shell.take(LIMITS, T, 3, "a")).toMatchObject({ allowed: true, granted: 3, paid: { day: DAY, month: MONTH } });
    shell.take(LIMITS, T, 2);
    expect(usedToday(shell)).toBe(5);
    expect(storage.peek("SELECT * FROM windows")).toEqual([
      { one: 1, second: Math.floor(T / 1000), second_count: 5, day: DAY, day_count: 5, month: MONTH, month_count: 5 },
    ]);
    const restarted = new QuotaShell(storage, () => T);
    expect(restarted.usage(LIMITS, T).windows.map((w) => [w.name, w.used])).toEqual([
      ["org_second", 5],
      ["org_day", 5],
      ["org_month", 5],
    ]);
    expect(restarted.take(LIMITS, T, 6).allowed).toBe(false);
    expect(new QuotaShell(new MemoryStorage(), () => T).take(LIMITS, T, 6).allowed).toBe(true);
  });

  it("refuses without counting or writing what does not fit", () => {
    const { shell, storage } = quota();
    shell.take(LIMITS, T, 9);
    const before = storage.statements;
    expect(shell.take(LIMITS, T, 2, "big")).toMatchObject({ allowed: false, granted: 0, exceeded: "org_day" });
    expect(usedToday(shell)).toBe(9);
    // Nothing written (no statement at all), and the refused id holds nothing to release.
    expect(storage.peek("SELECT day_count FROM windows")).toEqual([{ day_count: 9 }]);
    shell.release("big");
    expect(usedToday(shell)).toBe(9);
    expect(storage.statements).toBe(before);
  });

  it("grants a slice between min and want, and a release takes the whole slice back", () => {
    const { shell } = quota();
    shell.take(LIMITS, T, 4);
    expect(shell.grant(LIMITS, T, 1, 10, "s").granted).toBe(6);
    expect(usedToday(shell)).toBe(10);
    shell.release("s");
    expect(usedToday(shell)).toBe(4);
    // Once only: a second release of the same id takes nothing more.
    shell.release("s");
    expect(usedToday(shell)).toBe(4);
  });

  it("takes back a released take within RELEASE_WINDOW_MS, at its edge too, and not after", () => {
    const { shell, clock } = quota();
    shell.take(LIMITS, T, 2, "a");
    shell.take(LIMITS, T, 3, "b");
    clock.now = T + RELEASE_WINDOW_MS;
    shell.release("a");
    expect(usedToday(shell)).toBe(3);
    clock.now = T + RELEASE_WINDOW_MS + 1;
    shell.release("b");
    expect(usedToday(shell)).toBe(3);
  });

  it("refuses uncounted a take whose release came first, within RELEASE_WINDOW_MS", () => {
    const { shell, clock } = quota();
    shell.take(LIMITS, T, 1);
    shell.release("early");
    clock.now = T + RELEASE_WINDOW_MS;
    expect(shell.take(LIMITS, T, 2, "early")).toEqual({
      ...shell.usage(LIMITS, T),
      allowed: false,
      granted: 0,
      paid: { day: DAY, month: MONTH },
    });
    expect(usedToday(shell)).toBe(1);
    // The release is used up: the same id again is counted.
    expect(shell.take(LIMITS, T, 2, "early").allowed).toBe(true);
    expect(usedToday(shell)).toBe(3);
  });

  it("forgets a release older than RELEASE_WINDOW_MS: its take is then counted", () => {
    const { shell, clock } = quota();
    shell.release("old");
    shell.release("older still");
    clock.now = T + RELEASE_WINDOW_MS + 1;
    expect(shell.take(LIMITS, T, 2, "old").allowed).toBe(true);
    expect(shell.grant(LIMITS, T, 1, 1, "older still").granted).toBe(1);
    expect(usedToday(shell)).toBe(3);
  });

  it("forgets old takes and releases in arrival order, keeping the recent ones", () => {
    const { shell, clock } = quota();
    shell.take(LIMITS, T, 1, "old");
    shell.release("old release");
    clock.now = T + 10_000;
    shell.take(LIMITS, T, 2, "recent");
    shell.release("recent release");
    clock.now = T + RELEASE_WINDOW_MS + 5_000;
    shell.release("recent");
    expect(usedToday(shell)).toBe(1);
    expect(shell.take(LIMITS, T, 1, "recent release").allowed).toBe(false);
    expect(shell.take(LIMITS, T, 1, "old release").allowed).toBe(true);
  });

  it("keeps no take without an id: it cannot be released, and holds back forgetting none of the others", () => {
    const { shell, clock } = quota();
    shell.take(LIMITS, T, 1);
    shell.take(LIMITS, T, 1, "x");
    clock.now = T + RELEASE_WINDOW_MS;
    shell.take(LIMITS, T, 1);
    clock.now = T + RELEASE_WINDOW_MS + 1;
    shell.release("x");
    expect(usedToday(shell)).toBe(3);
  });

  it("gives back what slices left unspent, to the day and month they were counted in, before a take", () => {
    const { shell, storage } = quota();
    shell.take(LIMITS, T, 10);
    expect(shell.take(LIMITS, T, 3, undefined, [owed(2), owed(1)])).toMatchObject({ allowed: true, granted: 3 });
    expect(usedToday(shell)).toBe(10);
    // The second rest was counted yesterday: back to this month only.
    shell.settle([owed(4), owed(5, DAY - 1)]);
    expect(usedToday(shell)).toBe(6);
    expect(storage.peek("SELECT day_count, month_count FROM windows")).toEqual([{ day_count: 6, month_count: 1 }]);
    shell.grant(LIMITS, T, 1, 1, undefined, [owed(1)]);
    expect(usedToday(shell)).toBe(6);
    const before = storage.statements;
    shell.settle([]);
    expect(storage.statements).toBe(before);
  });

  it("erase forgets the counts, in storage and in memory", async () => {
    const { shell, storage } = quota();
    shell.take(LIMITS, T, 10);
    await shell.erase();
    expect(usedToday(shell)).toBe(0);
    expect(storage.hasTable("windows")).toBe(false);
  });
});

const holding = <V = never>(lease: Partial<Holding<V>["lease"]>, owedBack: Owed[] = []): Holding<V> => ({
  lease: { ...NO_LEASE, ...lease },
  owed: owedBack,
  view: null,
  refusal: null,
});

describe("KeyObject rows", () => {
  it("stores neither slice nor rest as null, and reads null back as nothing held", () => {
    expect(encodeHolding(holding({}))).toBeNull();
    expect(encodeHolding(holding({ second: 5, admitted: 3, previous: 2 }))).toBeNull();
    expect(decodeHolding(null)).toEqual({ lease: NO_LEASE, owed: [] });
  });

  it("encodes a slice held, or a rest owed alone, and decodes it as it was", () => {
    const paid = { day: 20_000, quotaDay: 20_001, month: 24_311, epoch: 3, period: 1_800_000_000_000 };
    const lease = { second: 1_800_000_000, remaining: 7, admitted: 4, previous: 9, paid };
    const h = holding(lease, [owed(2), { amount: 5, paid }]);
    const text = encodeHolding(h);
    expect(text).toBe(`1800000000,7,4,9,20000,20001,24311,3,1800000000000;2,${DAY},${DAY},${MONTH},,;5,20000,20001,24311,3,1800000000000`);
    expect(decodeHolding(text)).toEqual({ lease, owed: [owed(2), { amount: 5, paid }] });
    const rest = holding({ second: 8 }, [owed(1)]);
    expect(decodeHolding(encodeHolding(rest))).toEqual({ lease: rest.lease, owed: [owed(1)] });
    expect(encodeHolding(holding({ remaining: 1 }))).toBe("0,1,0,0,0,0,0,,");
  });

  it("decodes missing or empty fields as 0, or null for a balance's epoch and period", () => {
    expect(decodeHolding("")).toEqual({ lease: NO_LEASE, owed: [] });
    expect(decodeHolding("1,2;3")).toEqual({
      lease: { ...NO_LEASE, second: 1, remaining: 2 },
      owed: [{ amount: 3, paid: NOTHING_PAID }],
    });
  });

  it("writes the windows row as one upsert, and the credits row with its refill, read back as written", () => {
    const storage = new MemoryStorage();
    migrate(storage, MIGRATIONS);
    expect(readCredits(storage.sql)).toBeNull();
    const credits = { remaining: 5, epoch: 2, added: 10, refill: { amount: 10, interval: "day" as const }, nextRefillMs: T + 1 };
    writeCredits(storage.sql, credits);
    expect(readCredits(storage.sql)).toEqual(credits);
    const none = { remaining: 1, epoch: 3, added: 0, refill: null, nextRefillMs: null };
    writeCredits(storage.sql, none);
    expect(readCredits(storage.sql)).toEqual(none);
    // No refill is SQL NULL, not the JSON text "null" (which would read back the same).
    expect(storage.peek("SELECT refill FROM credits WHERE refill IS NULL")).toEqual([{ refill: null }]);
    expect(storage.peek("SELECT count(*) AS n FROM credits")).toEqual([{ n: 1 }]);

    const state = {
      ...EMPTY_ADMISSION,
      windows: { second: 11, secondCount: 1, day: 12, dayCount: 2 },
      hourly: { hour: 13, admitted: 3, refused: 4 },
      slice: holding({ second: 11, remaining: 2 }),
    };
    writeWindows(storage.sql, state);
    writeWindows(storage.sql, { ...state, quotaSlice: holding({}, [owed(1)]) });
    expect(storage.peek("SELECT * FROM windows")).toEqual([
      {
        one: 1,
        second: 11,
        second_count: 1,
        day: 12,
        day_count: 2,
        hour_ms: 13,
        hour_admitted: 3,
        hour_refused: 4,
        slice: "11,2,0,0,0,0,0,,",
        quota_slice: `0,0,0,0,0,0,0,,;1,${DAY},${DAY},${MONTH},,`,
      },
    ]);
  });
});

const HOUR = 3_600_000;
const DEFAULTS = { per_second: 100, per_day: 100_000 };

interface KeyWorld {
  storage: Host;
  shell: KeyShell;
  clock: { now: number };
  uses: { subject: string; at: number }[][];
  org: { fail: boolean };
  /** The traffic rows each shard answers, by name. */
  shards: Map<string, TrafficRow[]>;
  peers: KeyPeers;
  admit(input?: Partial<AdmitInput>): Promise<Admission>;
}

async function keyShell(snapshot: KeySnapshot | null = snapshotOf()): Promise<KeyWorld> {
  const storage = new Host();
  const clock = { now: T };
  const uses: { subject: string; at: number }[][] = [];
  const org = { fail: false };
  const shards = new Map<string, TrafficRow[]>();
  const peers: KeyPeers = {
    home: () => {
      throw new Error("no home");
    },
    shard: (name) => {
      if (!/^shard:home:[1-9][0-9]*$/.test(name)) throw new Error(`no such shard: ${name}`);
      return {
        sync: async () => ({ version: 1, revision: 1 }),
        traffic: async () => structuredClone(shards.get(name) ?? []),
      } as Partial<KeyPort> as KeyPort;
    },
    quota: () =>
      ({
        usage: async (limits: QuotaLimits, now: number) => ({
          allowed: true,
          exceeded: null,
          windows: [{ name: "org_day", limit: limits.per_day ?? 0, used: 7, remaining: 0, resetAt: now, windowSeconds: 86_400 }],
        }),
      }) as Partial<QuotaPort> as QuotaPort,
    organization: () => ({
      confirmKey: async () => snapshot,
      recordUses: async (_keyId, u) => {
        if (org.fail) throw new Error("organization down");
        uses.push(structuredClone(u));
      },
    }),
    recordProof: async () => true,
  };
  const shell = new KeyShell({ storage, peers, clock: () => clock.now, id: "home", within: (work) => work });
  if (snapshot !== null) await shell.sync(snapshot);
  const admit = async (input: Partial<AdmitInput> = {}) => shell.admit({ now: clock.now, defaults: DEFAULTS, ...input });
  return { storage, shell, clock, uses, org, shards, peers, admit };
}

const active = (a: Admission) => {
  if (a.status !== "active") throw new Error(`not active: ${a.status}`);
  return a;
};

describe("KeyShell: reads, erasure, the alarm, facts", () => {
  it("traffic: none for an unknown key; the live hour alone, then the stored hours with it, oldest first", async () => {
    expect(await (await keyShell(null)).shell.traffic()).toEqual([]);
    const k = await keyShell();
    expect(await k.shell.traffic()).toEqual([]);
    const h0 = Math.floor(T / HOUR) * HOUR;
    await k.admit();
    await k.admit();
    expect(await k.shell.traffic()).toEqual([{ hour_ms: h0, admitted: 2, refused: 0 }]);
    k.clock.now = h0 + HOUR;
    await k.admit();
    expect(await k.shell.traffic()).toEqual([
      { hour_ms: h0, admitted: 2, refused: 0 },
      { hour_ms: h0 + HOUR, admitted: 1, refused: 0 },
    ]);
    // A stored row of the live hour (a shard's, say) is summed with it, and an older one sorts first.
    k.storage.sql.exec("INSERT INTO traffic (hour_ms, admitted, refused) VALUES (?, 5, 6), (?, 1, 1)", h0 + HOUR, h0 - HOUR);
    expect(await k.shell.traffic()).toEqual([
      { hour_ms: h0 - HOUR, admitted: 1, refused: 1 },
      { hour_ms: h0, admitted: 2, refused: 0 },
      { hour_ms: h0 + HOUR, admitted: 6, refused: 6 },
    ]);
  });

  it("traffic: a sharded key's hours are summed over every shard it ever had", async () => {
    const k = await keyShell(snapshotOf({ limits: { per_second: 5_000 } }));
    const h0 = Math.floor(T / HOUR) * HOUR;
    k.storage.sql.exec("INSERT INTO traffic (hour_ms, admitted, refused) VALUES (?, 1, 2)", h0);
    k.shards.set("shard:home:1", [{ hour_ms: h0, admitted: 10, refused: 20 }]);
    k.shards.set("shard:home:2", [{ hour_ms: h0 + HOUR, admitted: 3, refused: 0 }]);
    k.shards.set("shard:home:3", [{ hour_ms: h0 - HOUR, admitted: 4, refused: 4 }]);
    const n = await k.shell.traffic();
    expect(n[0]).toEqual({ hour_ms: h0 - HOUR, admitted: 4, refused: 4 });
    expect(n).toContainEqual({ hour_ms: h0, admitted: 11, refused: 22 });
    expect(n.map((r) => r.hour_ms)).toEqual([...n.map((r) => r.hour_ms)].sort((x, y) => x - y));
  });

  it("traffic: the live hour's refusals count too, summed with a stored row of the same hour", async () => {
    const k = await keyShell(snapshotOf({ limits: { per_second: 1 } }));
    const h0 = Math.floor(T / HOUR) * HOUR;
    await k.admit();
    await k.admit();
    expect(await k.shell.traffic()).toEqual([{ hour_ms: h0, admitted: 1, refused: 1 }]);
    k.storage.sql.exec("INSERT INTO traffic (hour_ms, admitted, refused) VALUES (?, 5, 6)", h0);
    expect(await k.shell.traffic()).toEqual([{ hour_ms: h0, admitted: 6, refused: 7 }]);
  });

  it("usage: with an organization quota, its windows as the QuotaObject shows them", async () => {
    const k = await keyShell(snapshotOf({ quota: { per_day: 10 } }));
    const u = await k.shell.usage(DEFAULTS, T);
    expect(u?.quota).toEqual([{ name: "org_day", limit: 10, used: 7, remaining: 0, resetAt: T, windowSeconds: 86_400 }]);
    expect((await (await keyShell()).shell.usage(DEFAULTS, T))?.quota).toBeUndefined();
  });

  it("the alarm of an object without a key does nothing", async () => {
    const k = await keyShell(null);
    await expect(k.shell.alarm()).resolves.toBeUndefined();
    const erased = await keyShell();
    await erased.shell.erase();
    await expect(erased.shell.alarm()).resolves.toBeUndefined();
    expect(erased.storage.alarm).toBeNull();
  });

  it("pruning keeps the uses noted in the last USE_RESOLUTION_MS in memory: no second write", async () => {
    const k = await keyShell();
    await k.admit();
    k.shell.prune(T + 10_000);
    k.clock.now = T + 20_000;
    await k.admit();
    expect(k.storage.peek("SELECT at FROM uses")).toEqual([{ at: T }]);
  });

  it("the pruning alarm is set no sooner than PRUNE_INTERVAL_MS after the last prune", async () => {
    const token = (id: string, expires: number) => ({
      client_id: "",
      revision: 1,
      kind: "token" as const,
      token_id: id,
      expires_ms: expires,
    });
    const k = await keyShell(snapshotOf({ revocations: [token("a", T + 1), token("b", T + 10)] }));
    k.clock.now = T + 2;
    k.storage.alarm = null;
    await k.shell.alarm();
    expect(k.storage.alarm).toBe(T + 2 + PRUNE_INTERVAL_MS);
  });

  it("usage: null for an unknown key, the windows without counting for a known one", async () => {
    expect(await (await keyShell(null)).shell.usage(DEFAULTS, T)).toBeNull();
    const k = await keyShell();
    await k.admit();
    const u = await k.shell.usage(DEFAULTS, T);
    expect(u?.allowed).toBe(true);
    expect(await k.shell.usage(DEFAULTS, T)).toEqual(u);
  });

  it("erase forgets the rows, the alarm and the facts: the key is unknown after", async () => {
    const k = await keyShell(snapshotOf({ revocations: [{ client_id: "c", revision: 1 }] }));
    await k.admit({ clientId: "c", clientAuthenticated: true });
    await k.shell.erase();
    expect(k.storage.alarm).toBeNull();
    expect(k.storage.hasTable("key")).toBe(false);
    expect((await k.admit()).status).toBe("unknown");
    await k.shell.sync(snapshotOf());
    expect(active(await k.admit({ clientId: "c" })).clientRevoked).toBe(false);
  });

  it("notes a use at most once a USE_RESOLUTION_MS per subject, and flushes them at the alarm", async () => {
    const k = await keyShell();
    await k.admit({ clientId: "c", clientAuthenticated: true });
    await k.admit({ clientId: "c", clientAuthenticated: true });
    await k.admit({ clientId: "d" });
    expect(k.storage.peek("SELECT subject, at FROM uses ORDER BY subject")).toEqual([
      { subject: "c", at: T },
      { subject: "key", at: T },
    ]);
    expect(k.storage.alarmsSet).toEqual([T + USE_RESOLUTION_MS]);
    k.clock.now = T + USE_RESOLUTION_MS - 1;
    await k.admit({ clientId: "c", clientAuthenticated: true });
    expect(k.storage.peek("SELECT at FROM uses WHERE subject = 'c'")).toEqual([{ at: T }]);
    k.clock.now = T + USE_RESOLUTION_MS;
    await k.admit();
    expect(k.storage.peek("SELECT at FROM uses WHERE subject = 'key'")).toEqual([{ at: T + USE_RESOLUTION_MS }]);
    await k.shell.alarm();
    expect(k.uses).toEqual([
      [
        { subject: "key", at: T + USE_RESOLUTION_MS },
        { subject: "c", at: T },
      ],
    ]);
    // Flushed: not sent again, and pruned once a USE_RESOLUTION_MS old.
    await k.shell.alarm();
    expect(k.uses.length).toBe(1);
    k.shell.prune(T + 2 * USE_RESOLUTION_MS);
    expect(k.storage.peek("SELECT subject FROM uses")).toEqual([{ subject: "key" }]);
  });

  it("a flush that fails is retried by the next alarm", async () => {
    const k = await keyShell();
    await k.admit();
    k.org.fail = true;
    k.clock.now = T + USE_RESOLUTION_MS;
    k.storage.alarm = null;
    await k.shell.alarm();
    expect(k.storage.alarm).toBe(T + 2 * USE_RESOLUTION_MS);
    k.org.fail = false;
    await k.shell.alarm();
    expect(k.uses).toEqual([[{ subject: "key", at: T }]]);
    expect(k.storage.peek("SELECT flushed_at FROM uses")).toEqual([{ flushed_at: T }]);
  });

  it("revocation facts: a revoked credential, a stale copy, a token revoked until it expires", async () => {
    const k = await keyShell(
      snapshotOf({
        revision: 3,
        revocations: [
          { client_id: "gone", revision: 1 },
          { client_id: "moved", revision: 2, kind: "changed", version: 4 },
          { client_id: "", revision: 3, kind: "token", token_id: "tok", expires_ms: T + 10_000 },
        ],
      }),
    );
    const facts = async (input: Partial<AdmitInput>, shell = k.shell) => {
      const a = active(await shell.admit({ now: k.clock.now, defaults: DEFAULTS, ...input }));
      return [a.clientRevoked, a.clientStale, a.tokenRevoked, a.inspectedTokenRevoked];
    };
    expect(await facts({})).toEqual([false, false, false, false]);
    expect(await facts({ clientId: "gone" })).toEqual([true, false, false, false]);
    expect(await facts({ clientId: "moved", clientVersion: 3 })).toEqual([false, true, false, false]);
    expect(await facts({ clientId: "moved", clientVersion: 4 })).toEqual([false, false, false, false]);
    expect(await facts({ clientId: "other", clientVersion: 0 })).toEqual([false, false, false, false]);
    expect(await facts({ tokenId: "tok" })).toEqual([false, false, true, false]);
    expect(await facts({ tokenId: "other" })).toEqual([false, false, false, false]);
    expect(await facts({ inspect: { tokenId: "tok", clientId: "x" } })).toEqual([false, false, false, true]);
    expect(await facts({ inspect: { tokenId: "t2", clientId: "gone" } })).toEqual([false, false, false, true]);
    expect(await facts({ inspect: { tokenId: "t2", clientId: "x" } })).toEqual([false, false, false, false]);
    // Read from the rows by a restarted object (memory has none of them, and its confirmation
    // brings no revocation: it is at the organization's revision).
    const peers: KeyPeers = {
      ...k.peers,
      organization: () => ({ confirmKey: async () => snapshotOf({ revision: 3, since: 3 }), recordUses: async () => undefined }),
    };
    const restarted = new KeyShell({ storage: k.storage, peers, clock: () => k.clock.now, id: "home" });
    await restarted.start();
    expect(await facts({ clientId: "gone", tokenId: "tok" }, restarted)).toEqual([true, false, true, false]);
    expect(await facts({ clientId: "moved", clientVersion: 3 }, restarted)).toEqual([false, true, false, false]);
    expect(await facts({ clientId: "nobody", clientVersion: 0, tokenId: "none" }, restarted)).toEqual([false, false, false, false]);
    k.clock.now = T + 10_000;
    expect(await facts({ tokenId: "tok" }, restarted)).toEqual([false, false, false, false]);
  });

  it("reads a revocation fact from SQL once, then from memory", async () => {
    const k = await keyShell();
    await k.admit({ clientId: "warm", tokenId: "warm" });
    const cost = async (input: Partial<AdmitInput>) => {
      const before = k.storage.statements;
      await k.admit(input);
      return k.storage.statements - before;
    };
    const first = await cost({ clientId: "c", clientVersion: 1, tokenId: "t" });
    expect(await cost({ clientId: "c", clientVersion: 1, tokenId: "t" })).toBe(first - 3);
  });

  it("prunes tokens revoked past their expiry, PRUNE_BATCH a run, and sets the alarm for the next", async () => {
    const revocations = Array.from({ length: PRUNE_BATCH + 1 }, (_, i) => ({
      client_id: "",
      revision: 1,
      kind: "token" as const,
      token_id: `t${i}`,
      expires_ms: T + 1 + i,
    }));
    const k = await keyShell(
      snapshotOf({
        revocations: [
          ...revocations,
          { client_id: "", revision: 1, kind: "token", token_id: "late", expires_ms: T + 10 * PRUNE_INTERVAL_MS },
        ],
      }),
    );
    // The first expiry, no sooner than an interval after the last prune (never, at start).
    expect(k.storage.alarmsSet).toEqual([PRUNE_INTERVAL_MS > T + 1 ? PRUNE_INTERVAL_MS : T + 1]);
    const now = T + PRUNE_BATCH + 5;
    expect(k.shell.prune(now)).toBe(true);
    expect(k.shell.prune(now)).toBe(false);
    expect(k.storage.peek("SELECT token_id FROM revoked_tokens")).toEqual([{ token_id: "late" }]);
    k.clock.now = now;
    k.storage.alarm = null;
    await k.shell.alarm();
    expect(k.storage.alarm).toBe(T + 10 * PRUNE_INTERVAL_MS);
  });

  it("the alarm runs again at once while more expired rows are due, and sets nothing when none are left", async () => {
    const revocations = Array.from({ length: PRUNE_BATCH + 1 }, (_, i) => ({
      client_id: "",
      revision: 1,
      kind: "token" as const,
      token_id: `t${i}`,
      expires_ms: T + 1,
    }));
    const k = await keyShell(snapshotOf({ revocations }));
    k.clock.now = T + 2;
    k.storage.alarm = null;
    await k.shell.alarm();
    expect(k.storage.alarm).toBe(T + 2);
    k.storage.alarm = null;
    k.clock.now = T + 3;
    await k.shell.alarm();
    expect(k.storage.alarm).toBeNull();
  });
});
