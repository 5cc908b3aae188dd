/**
 * Examples of the KeyObject's shell (src/objects/shells/key.ts) over an in-memory SQLite
 * (memory-storage.ts) and recording peers, each asserting one outcome of one of its rules: what a
 * restart reads back, which uses an answer notes, the DPoP proof of the previous release's gate,
 * the calls a step names (their arguments, their time limit, their failures), what a step
 * persists, when the settlement alarm is set, how a push is stored and passed on to the shards,
 * and the organization's confirmation. The mutation check (docs/testing.md, "Mutation testing")
 * reads them; the admission's own rules are in admission-mutants.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  type Admission,
  type AdmitInput,
  CONFIRM_TIMEOUT_MS,
  type Grant,
  type GrantRequest,
  type KeyPeers,
  type KeyPort,
  KeyShell,
  type KeySnapshot,
  type OwedBack,
  PRUNE_BATCH,
  PRUNE_INTERVAL_MS,
  pickShard,
  type QuotaPort,
  SETTLE_AFTER_MS,
  type SyncAck,
  shardName,
} from "../../src/objects/shells/key";
import type { QuotaAnswer } from "../../src/ratelimit/admission";
import { NOTHING_PAID } from "../../src/ratelimit/lease";
import { EMPTY_STATE, peek } from "../../src/ratelimit/windows";
import { quotaAnswerOn, snapshotOf } from "./fixtures";
import { MemoryStorage } from "./memory-storage";

const T = 1_800_000_000_000;
const SEC = T / 1000;
const DAY = Math.floor(T / 86_400_000);
const HOUR = 3_600_000;
const DEFAULTS = { per_second: 100, per_day: 100_000 };

class Host extends MemoryStorage {
  readonly alarmsSet: number[] = [];
  override async setAlarm(at: number): Promise<void> {
    this.alarmsSet.push(at);
    await super.setAlarm(at);
  }
}

const quotaAnswer = quotaAnswerOn(DAY);

/** Every call the shell made of its peers, in order, with its arguments. */
type Call = [string, ...unknown[]];

interface World {
  storage: Host;
  clock: { now: number };
  calls: Call[];
  /** How long the host's `within` was asked to wait, and for what. */
  waits: [number, string][];
  /** What each peer does; a test replaces the ones it needs. */
  behave: {
    confirmKey: () => Promise<KeySnapshot | null>;
    shardAdmit: (input: AdmitInput) => Admission | Promise<Admission>;
    shardSync: (snapshot: KeySnapshot) => Promise<SyncAck>;
    homeGrant: (request: GrantRequest) => Promise<Grant>;
    homeSettle: (returned: OwedBack[]) => Promise<void>;
    quotaTake: () => Promise<QuotaAnswer>;
    quotaGrant: () => Promise<QuotaAnswer>;
    quotaSettle: () => Promise<void>;
    recordProof: () => Promise<boolean>;
  };
  peers: KeyPeers;
  shell: KeyShell;
  /** A new shell over the same rows (a restart): memory lost. */
  restart(): Promise<KeyShell>;
  admit(input?: Partial<AdmitInput>): Promise<Admission>;
}

function world(id = "home", random?: () => number): World {
  const storage = new Host();
  const clock = { now: T };
  const calls: Call[] = [];
  const waits: [number, string][] = [];
  const w = {
    storage,
    clock,
    calls,
    waits,
    behave: {
      confirmKey: async () => snapshotOf(),
      shardAdmit: (): Admission => ({ status: "home" }),
      shardSync: async (s: KeySnapshot) => ({ version: s.version, revision: s.revision }),
      homeGrant: async (): Promise<Grant> => ({ status: "unavailable" }),
      homeSettle: async () => undefined,
      quotaTake: async () => quotaAnswer(),
      quotaGrant: async () => quotaAnswer(),
      quotaSettle: async () => undefined,
      recordProof: async () => true,
    },
  } as Partial<World> as World;
  const port = (name: string): KeyPort =>
    ({
      admit: (input: AdmitInput) => {
        calls.push(["shard.admit", name, input]);
        return w.behave.shardAdmit(input);
      },
      sync: (snapshot: KeySnapshot, shard?: { home: string; index: number }) => {
        calls.push(["shard.sync", name, snapshot, shard]);
        return w.behave.shardSync(snapshot);
      },
      grant: (request: GrantRequest) => {
        calls.push(["home.grant", name, request]);
        return w.behave.homeGrant(request);
      },
      settle: (returned: OwedBack[]) => {
        calls.push(["home.settle", name, returned]);
        return w.behave.homeSettle(returned);
      },
    }) as Partial<KeyPort> as KeyPort;
  w.peers = {
    home: (homeId) => port(`home:${homeId}`),
    shard: (name) => port(name),
    quota: (org) =>
      ({
        take: (...args: unknown[]) => {
          calls.push(["quota.take", org, ...args]);
          return w.behave.quotaTake();
        },
        grant: (...args: unknown[]) => {
          calls.push(["quota.grant", org, ...args]);
          return w.behave.quotaGrant();
        },
        settle: (...args: unknown[]) => {
          calls.push(["quota.settle", org, ...args]);
          return w.behave.quotaSettle();
        },
        release: async (...args: unknown[]) => {
          calls.push(["quota.release", org, ...args]);
        },
      }) as Partial<QuotaPort> as QuotaPort,
    organization: (org) => ({
      confirmKey: (...args: unknown[]) => {
        calls.push(["org.confirmKey", org, ...args]);
        return w.behave.confirmKey();
      },
      recordUses: async () => undefined,
    }),
    recordProof: (proof) => {
      calls.push(["recordProof", proof]);
      return w.behave.recordProof();
    },
  };
  const make = () =>
    new KeyShell({
      storage,
      peers: w.peers,
      clock: () => clock.now,
      id,
      within: (work, ms, what) => {
        waits.push([ms, what]);
        return work;
      },
      ...(random === undefined ? {} : { random }),
    });
  w.shell = make();
  w.restart = async () => {
    w.shell = make();
    await w.shell.start();
    return w.shell;
  };
  w.admit = async (input = {}) => w.shell.admit({ now: clock.now, defaults: DEFAULTS, ...input });
  return w;
}

const active = (a: Admission) => {
  if (a.status !== "active") throw new Error(`not active: ${a.status}`);
  return a;
};
const calledAs = (w: World, kind: string) => w.calls.filter((c) => c[0] === kind);

describe("names and draws", () => {
  it("a shard is named by its home's id and index; a draw picks 1..n", () => {
    expect(shardName("abc", 3)).toBe("shard:abc:3");
    expect(pickShard(4, () => 0)).toBe(1);
    expect(pickShard(4, () => 0.5)).toBe(3);
    expect(pickShard(4, () => 0.999)).toBe(4);
    expect([CONFIRM_TIMEOUT_MS, SETTLE_AFTER_MS, PRUNE_INTERVAL_MS, PRUNE_BATCH]).toEqual([2_000, 2_000, 60_000, 5_000]);
  });
});

describe("what a restart reads back", () => {
  it("an object never told a key writes nothing, reads no alarm, and answers unknown", async () => {
    const w = world();
    w.storage.alarm = T + 5;
    await w.shell.start();
    expect(await w.admit()).toEqual({ status: "unknown" });
    expect(w.storage.peek("SELECT name FROM sqlite_master")).toEqual([]);
    expect(w.storage.alarmsSet).toEqual([]);
  });

  it("the key, its windows, hour, credits and quota, and the slices owed back, as they were stored", async () => {
    const w = world();
    const snap = snapshotOf({ credits: { base: 10, epoch: 1, added: 0, refill: null }, quota: { per_day: 50 }, limits: { per_second: 9 } });
    await w.shell.sync(snap);
    // A restarted copy is confirmed again at its first request; the organization says the same.
    w.behave.confirmKey = async () => snap;
    w.behave.quotaTake = async () => quotaAnswer();
    active(await w.admit({ cost: 2 }));
    const shell = await w.restart();
    // The quota read back is asked for again: the shell sends the stored limits.
    const a = active(await w.admit({ cost: 1 }));
    expect(a.decision.second).toMatchObject({ limit: 9, used: 3 });
    expect(a.decision.credits?.remaining).toBe(7);
    expect(calledAs(w, "quota.take").at(-1)?.[2]).toEqual({ per_day: 50, per_second: 1_000 });
    expect(await shell.traffic()).toEqual([{ hour_ms: Math.floor(T / HOUR) * HOUR, admitted: 2, refused: 0 }]);
  });
});

// ---------------------------------------------------------------------------------------------
// A shard of a sharded key: its home's grants, its slice, its alarm

/** A shard (index 2 of home "h") of a key allowed 3,000 a second. */
async function shardWorld(): Promise<World> {
  const w = world("shard:h:2");
  await w.shell.sync(snapshotOf({ limits: { per_second: 3_000 } }), { home: "h", index: 2 });
  return w;
}
const paid = { ...NOTHING_PAID, day: DAY };
const VIEW = peek(EMPTY_STATE, { per_second: 3_000, per_day: 100_000 }, T);
const granted = (n: number): Grant => ({ status: "granted", granted: n, decision: VIEW, paid });

describe("a shard's calls to its home", () => {
  it("asks its home for a slice, within CONFIRM_TIMEOUT_MS, and spends from it", async () => {
    const w = await shardWorld();
    w.behave.homeGrant = async () => granted(5);
    expect(active(await w.admit()).decision.allowed).toBe(true);
    expect(calledAs(w, "home.grant")).toEqual([["home.grant", "home:h", { now: T, defaults: DEFAULTS, min: 1, want: 1, returned: [] }]]);
    expect(w.waits).toEqual([[CONFIRM_TIMEOUT_MS, "the key's home object"]]);
    // The next request pays from the slice: no call.
    expect(active(await w.admit()).decision.allowed).toBe(true);
    expect(calledAs(w, "home.grant")).toHaveLength(1);
    // The rest is handed back SETTLE_AFTER_MS after its second ends.
    expect(w.storage.alarmsSet).toEqual([(SEC + 1) * 1000 + SETTLE_AFTER_MS]);
  });

  it("a home that fails or does not answer fails the request closed (503)", async () => {
    const w = await shardWorld();
    w.behave.homeGrant = async () => {
      throw new Error("home down");
    };
    expect(await w.admit()).toEqual({ status: "unconfirmed" });
    w.behave.homeGrant = async () => ({ status: "unavailable" });
    expect(await w.admit()).toEqual({ status: "unconfirmed" });
  });

  it("requests arriving while a question is out wait for its answer: one call", async () => {
    const w = await shardWorld();
    let answer: (g: Grant) => void = () => undefined;
    w.behave.homeGrant = () => new Promise<Grant>((r) => (answer = r));
    const a = w.admit();
    const b = w.admit();
    await new Promise((r) => setTimeout(r, 0));
    answer(granted(5));
    expect(active(await a).decision.allowed).toBe(true);
    expect(active(await b).decision.allowed).toBe(true);
    expect(calledAs(w, "home.grant")).toHaveLength(1);
  });

  it("a restart owes back what its slice held, and its start sets the alarm to hand it over", async () => {
    const w = await shardWorld();
    w.behave.homeGrant = async () => granted(5);
    await w.admit();
    w.storage.alarmsSet.length = 0;
    w.storage.alarm = null;
    w.clock.now = T + 300;
    await w.restart();
    expect(w.storage.alarmsSet).toEqual([T + 300 + SETTLE_AFTER_MS]);
    // An alarm a restart left set sooner is kept.
    w.storage.alarmsSet.length = 0;
    w.storage.alarm = T + 301;
    await w.restart();
    expect(w.storage.alarmsSet).toEqual([]);
    // The alarm hands it over to the home, once.
    w.clock.now = T + 5_000;
    await w.shell.alarm();
    expect(calledAs(w, "home.settle")).toEqual([["home.settle", "home:h", [{ amount: 4, paid }]]]);
    await w.shell.alarm();
    expect(calledAs(w, "home.settle")).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------
// The home of a sharded key

describe("a sharded key's home", () => {
  it("hands an edge's first request to a shard it draws, with the shard's number, within CONFIRM_TIMEOUT_MS", async () => {
    const w = world("home", () => 0.5);
    await w.shell.sync(snapshotOf({ limits: { per_second: 3_000 } }));
    const shardAnswer: Admission = { status: "revoked", keyId: "key_1", organizationId: "org_1" };
    w.behave.shardAdmit = () => shardAnswer;
    expect(await w.admit({ clientId: "c" })).toEqual(shardAnswer);
    expect(calledAs(w, "shard.admit")).toEqual([["shard.admit", "shard:home:2", { now: T, defaults: DEFAULTS, clientId: "c", shard: 2 }]]);
    expect(w.waits.at(-1)).toEqual([CONFIRM_TIMEOUT_MS, "the key's shard"]);
  });

  it("counts the request itself when the shard throws or rejects", async () => {
    for (const fail of [
      () => {
        throw new Error("no shard");
      },
      () => Promise.reject(new Error("no shard")),
    ]) {
      const w = world("home", () => 0);
      await w.shell.sync(snapshotOf({ limits: { per_second: 3_000 } }));
      w.behave.shardAdmit = fail;
      const a = active(await w.admit());
      expect(a).toMatchObject({ shards: 3, decision: { allowed: true } });
      expect(a.decision.second.used).toBe(1);
      // The failure is the answer: no other call is made for it.
      expect(calledAs(w, "home.grant")).toEqual([]);
    }
  });

  it("grants a shard a slice, persisted before it answers", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ limits: { per_second: 3_000 } }));
    const g = await w.shell.grant({ now: T, defaults: DEFAULTS, min: 1, want: 7, returned: [] });
    expect(g).toMatchObject({ status: "granted", granted: 7 });
    expect(w.storage.peek("SELECT second_count, day_count FROM windows")).toEqual([{ second_count: 7, day_count: 7 }]);
  });

  it("takes back what a quiet shard hands over; an object without a key takes nothing", async () => {
    const w = world();
    await w.shell.settle([{ amount: 2, paid }]);
    expect(w.storage.peek("SELECT name FROM sqlite_master WHERE name = 'windows'")).toEqual([]);
    await w.shell.sync(snapshotOf({ limits: { per_second: 3_000 } }));
    await w.shell.grant({ now: T, defaults: DEFAULTS, min: 1, want: 7, returned: [] });
    await w.shell.settle([{ amount: 3, paid }]);
    expect(w.storage.peek("SELECT second_count, day_count FROM windows")).toEqual([{ second_count: 7, day_count: 4 }]);
  });

  it("passes a push on to every shard it has, as their home; a shard behind gets the whole set", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ revision: 3, revocations: [{ client_id: "gone", revision: 3 }], limits: { per_second: 1_500 } }));
    expect(calledAs(w, "shard.sync").map((c) => [c[1], c[3]])).toEqual([
      ["shard:home:1", { home: "home", index: 1 }],
      ["shard:home:2", { home: "home", index: 2 }],
    ]);
    w.calls.length = 0;
    w.behave.shardSync = async (s) => ({ version: s.version, revision: 0, ...(s.since === 0 ? {} : { behind: true }) });
    await w.shell.sync(
      snapshotOf({
        version: 2,
        revision: 4,
        since: 3,
        limits: { per_second: 1_500 },
        revocations: [
          { client_id: "c", revision: 4, kind: "token", token_id: "tok", expires_ms: T + 60_000 },
          { client_id: "c", revision: 4, kind: "changed", version: 6 },
        ],
      }),
    );
    const whole = calledAs(w, "shard.sync").filter((c) => (c[2] as KeySnapshot).since === 0);
    expect(whole.map((c) => c[1])).toEqual(["shard:home:1", "shard:home:2"]);
    expect(whole[0]?.[3]).toEqual({ home: "home", index: 1 });
    expect(whole[0]?.[2]).toMatchObject({
      version: 2,
      revision: 4,
      since: 0,
      revocations: [
        { client_id: "gone", revision: 3 },
        { client_id: "c", revision: 0, kind: "changed", version: 6 },
        { client_id: "", revision: 0, kind: "token", token_id: "tok", expires_ms: T + 60_000 },
      ],
    });
    // A token past its expiry is not sent.
    w.calls.length = 0;
    w.clock.now = T + 60_000;
    await w.shell.sync(snapshotOf({ version: 3, revision: 5, since: 4, limits: { per_second: 1_500 } }));
    const later = calledAs(w, "shard.sync").filter((c) => (c[2] as KeySnapshot).since === 0);
    expect((later[0]![2] as KeySnapshot).revocations).toHaveLength(2);
  });

  it("a home behind the push itself sends its shards no whole set (it has the same gap)", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ revision: 1, limits: { per_second: 1_500 } }));
    w.calls.length = 0;
    w.behave.shardSync = async (s) => ({ version: s.version, revision: 0, behind: true });
    const ack = await w.shell.sync(snapshotOf({ version: 2, revision: 9, since: 5, limits: { per_second: 1_500 } }));
    expect(ack.behind).toBe(true);
    expect(calledAs(w, "shard.sync")).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------------------------
// The organization's QuotaObject

describe("calls to the organization's QuotaObject", () => {
  it("an exact quota: a take of the cost, identified, within CONFIRM_TIMEOUT_MS", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ quota: { per_day: 9 } }));
    active(await w.admit({ cost: 2 }));
    const [take] = calledAs(w, "quota.take");
    expect(take?.slice(0, 5)).toEqual(["quota.take", "org_1", { per_day: 9, per_second: 1_000 }, T, 2]);
    expect(take?.[5]).toMatch(/^[0-9a-f-]{36}$/);
    expect(take?.[6]).toEqual([]);
    expect(w.waits).toEqual([[CONFIRM_TIMEOUT_MS, "the organization's quota"]]);
  });

  it("a quota that fails is released by the call's id, and the request fails closed", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ quota: { per_day: 9 } }));
    w.behave.quotaTake = async () => {
      throw new Error("quota down");
    };
    expect(await w.admit()).toEqual({ status: "unconfirmed" });
    const id = calledAs(w, "quota.take")[0]?.[5];
    expect(calledAs(w, "quota.release")).toEqual([["quota.release", "org_1", id]]);
    // Every call has its own id.
    await w.admit();
    expect(calledAs(w, "quota.take")[1]?.[5]).not.toBe(id);
  });

  it("a sliced quota: a slice between min and want, shared by the requests arriving meanwhile", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ quota: { per_second: 5_000 } }));
    let answer: (a: QuotaAnswer) => void = () => undefined;
    w.behave.quotaGrant = () => new Promise<QuotaAnswer>((r) => (answer = r));
    const a = w.admit({ cost: 2 });
    const b = w.admit();
    await new Promise((r) => setTimeout(r, 0));
    answer(quotaAnswer({ granted: 5 }));
    expect(active(await a).decision.allowed).toBe(true);
    expect(active(await b).decision.allowed).toBe(true);
    const grants = calledAs(w, "quota.grant");
    expect(grants).toHaveLength(1);
    expect(grants[0]?.slice(0, 6)).toEqual(["quota.grant", "org_1", { per_second: 5_000 }, T, 2, 2]);
    // Its rest is handed to the QuotaObject by the alarm after its second.
    expect(w.storage.alarmsSet.at(-1)).toBe((SEC + 1) * 1000 + SETTLE_AFTER_MS);
    w.clock.now = T + 3_000;
    await w.shell.alarm();
    expect(calledAs(w, "quota.settle")).toEqual([["quota.settle", "org_1", [{ amount: 2, paid: { ...paid, quotaDay: DAY, month: 7 } }]]]);
  });
});

// ---------------------------------------------------------------------------------------------
// The answer's side effects: uses, the previous release's proofs

describe("what an answer notes", () => {
  const uses = (w: World) => w.storage.peek("SELECT subject, at FROM uses ORDER BY subject");

  it("an admitted request notes the key's use, and the credential's when its secret matched and it is not revoked", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ revocations: [{ client_id: "gone", revision: 1 }] }));
    await w.admit({ clientId: "c", clientAuthenticated: true });
    await w.admit({ clientId: "d", clientAuthenticated: false });
    await w.admit({ clientId: "e" });
    await w.admit({ clientId: "gone", clientAuthenticated: true });
    await w.admit({ clientAuthenticated: true });
    expect(uses(w)).toEqual([
      { subject: "c", at: T },
      { subject: "key", at: T },
    ]);
  });

  it("a refused request notes no use", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ credits: { base: 0, epoch: 1, added: 0, refill: null } }));
    expect(active(await w.admit({ clientId: "c", clientAuthenticated: true })).decision.exceeded).toBe("credits");
    expect(uses(w)).toEqual([]);
  });

  it("the previous release's proof is recorded where this release records it, and its replay answered", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    const proof = { jti: "j", expiresMs: T + 60_000 };
    expect(active(await w.admit({ proof })).proofReplayed).toBe(false);
    w.behave.recordProof = async () => false;
    expect(active(await w.admit({ proof })).proofReplayed).toBe(true);
    expect(calledAs(w, "recordProof")).toEqual([
      ["recordProof", proof],
      ["recordProof", proof],
    ]);
    // A request not admitted as active passes through as it is.
    expect(await w.admit({ proof, routed: true })).toEqual({ status: "unknown" });
    // Without a proof, nothing is recorded.
    await w.admit();
    expect(calledAs(w, "recordProof")).toHaveLength(3);
  });
});

// ---------------------------------------------------------------------------------------------
// What a step persists

describe("what a step persists", () => {
  it("the windows row once per step, and a late hour's requests added to that hour's row", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    await w.admit();
    await w.admit({ now: T - HOUR });
    await w.admit({ now: T - HOUR });
    const h = Math.floor(T / HOUR) * HOUR;
    expect(w.storage.peek("SELECT hour_ms, admitted, refused FROM traffic")).toEqual([{ hour_ms: h - HOUR, admitted: 2, refused: 0 }]);
    expect(w.storage.peek("SELECT hour_ms, hour_admitted, second_count FROM windows")).toEqual([
      { hour_ms: h, hour_admitted: 1, second_count: 3 },
    ]);
  });

  it("a new hour writes the finished one and deletes the rows past TRAFFIC_DAYS", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    const h = Math.floor(T / HOUR) * HOUR;
    w.storage.sql.exec(
      "INSERT INTO traffic (hour_ms, admitted, refused) VALUES (?, 1, 0), (?, 1, 0)",
      h - 31 * 86_400_000 - HOUR,
      h - 31 * 86_400_000 + HOUR,
    );
    await w.admit();
    w.clock.now = T + HOUR;
    await w.admit();
    expect(w.storage.peek("SELECT hour_ms, admitted FROM traffic ORDER BY hour_ms")).toEqual([
      { hour_ms: h - 31 * 86_400_000 + HOUR, admitted: 1 },
      { hour_ms: h, admitted: 1 },
    ]);
  });

  it("a charge's credits row, as spent and as given back", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ credits: { base: 5, epoch: 1, added: 0, refill: null }, quota: { per_day: 9 } }));
    w.behave.quotaTake = async () => quotaAnswer({ allowed: false, exceeded: "org_day", granted: 0 });
    expect(active(await w.admit({ cost: 2 })).decision.exceeded).toBe("org_day");
    expect(w.storage.peek("SELECT remaining FROM credits")).toEqual([{ remaining: 5 }]);
    w.behave.quotaTake = async () => quotaAnswer();
    await w.admit({ cost: 2 });
    expect(w.storage.peek("SELECT remaining FROM credits")).toEqual([{ remaining: 3 }]);
  });
});

// ---------------------------------------------------------------------------------------------
// A push stored

describe("a push, as stored", () => {
  it("the key row, the quota column and the credits row, read back by a restart; credits removed delete the row", async () => {
    const w = world();
    await w.shell.sync(
      snapshotOf({
        version: 2,
        limits: { per_second: 7, per_day: 70 },
        quota: { per_month: 5 },
        credits: { base: 3, epoch: 1, added: 1, refill: { amount: 9, interval: "day" } },
        secrets: { current: "cur", previous: "prev", previous_until_ms: T + 9 },
      }),
    );
    expect(w.storage.peek("SELECT * FROM key")).toEqual([
      {
        one: 1,
        id: "key_1",
        organization_id: "org_1",
        status: "active",
        per_second: 7,
        per_day: 70,
        version: 2,
        revision: 1,
        secret_hash: "cur",
        previous_hash: "prev",
        previous_until_ms: T + 9,
        shard_home: null,
        shard_index: null,
        shard_high: 0,
        quota: JSON.stringify({ per_month: 5 }),
      },
    ]);
    expect(w.storage.peek("SELECT remaining, epoch, added, refill FROM credits")).toEqual([
      { remaining: 4, epoch: 1, added: 1, refill: JSON.stringify({ amount: 9, interval: "day" }) },
    ]);
    await w.shell.sync(snapshotOf({ version: 3, quota: null, credits: null }));
    expect(w.storage.peek("SELECT quota FROM key")).toEqual([{ quota: null }]);
    expect(w.storage.peek("SELECT * FROM credits")).toEqual([]);
    // A push that says nothing of the credits leaves the row.
    await w.shell.sync(snapshotOf({ version: 4, credits: { base: 3, epoch: 1, added: 0, refill: null } }));
    const { credits: _c, ...silent } = snapshotOf({ version: 5 });
    await w.shell.sync(silent);
    expect(w.storage.peek("SELECT remaining FROM credits")).toEqual([{ remaining: 3 }]);
  });

  it("revocations go to their tables, read after a restart; a changed credential keeps its highest version", async () => {
    const w = world();
    await w.shell.sync(
      snapshotOf({
        revocations: [
          { client_id: "gone", revision: 1 },
          { client_id: "ch", revision: 1, kind: "changed", version: 5 },
          { client_id: "ch", revision: 1, kind: "changed", version: 3 },
          { client_id: "x", revision: 1, kind: "token", token_id: "tok", expires_ms: T + 600_000 },
        ],
      }),
    );
    expect(w.storage.peek("SELECT client_id, revision FROM revoked_clients")).toEqual([{ client_id: "gone", revision: 1 }]);
    expect(w.storage.peek("SELECT client_id, version FROM changed_clients")).toEqual([{ client_id: "ch", version: 5 }]);
    expect(w.storage.peek("SELECT token_id, expires_ms FROM revoked_tokens")).toEqual([{ token_id: "tok", expires_ms: T + 600_000 }]);
    const facts = async () => {
      const a = active(await w.admit({ clientId: "gone", tokenId: "tok", inspect: { tokenId: "none", clientId: "ch" } }));
      const b = active(await w.admit({ clientId: "ch", clientVersion: 4 }));
      const c = active(await w.admit({ clientId: "ch", clientVersion: 5, inspect: { tokenId: "tok", clientId: "ok" } }));
      return [a.clientRevoked, a.tokenRevoked, a.inspectedTokenRevoked, b.clientStale, c.clientStale, c.inspectedTokenRevoked];
    };
    expect(await facts()).toEqual([true, true, false, true, false, true]);
    w.behave.confirmKey = async () => snapshotOf();
    await w.restart();
    expect(await facts()).toEqual([true, true, false, true, false, true]);
  });

  it("a token revocation sets the pruning alarm for its expiry, no sooner than PRUNE_INTERVAL_MS after the last prune", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    w.shell.prune(T);
    await w.shell.sync(
      snapshotOf({ revision: 2, revocations: [{ client_id: "x", revision: 2, kind: "token", token_id: "a", expires_ms: T + 5 }] }),
    );
    expect(w.storage.alarmsSet).toEqual([T + PRUNE_INTERVAL_MS]);
    const v = world();
    await v.shell.sync(
      snapshotOf({
        revocations: [
          { client_id: "x", revision: 1, kind: "token", token_id: "a", expires_ms: T + 900_000 },
          { client_id: "x", revision: 1, kind: "token", token_id: "b", expires_ms: T + 800_000 },
        ],
      }),
    );
    expect(v.storage.alarmsSet).toEqual([T + 800_000]);
    const none = world();
    await none.shell.sync(snapshotOf({ revocations: [{ client_id: "x", revision: 1 }] }));
    expect(none.storage.alarmsSet).toEqual([]);
  });

  it("a push that drops a slice held writes the windows row with its rest owed", async () => {
    const w = await shardWorld();
    w.behave.homeGrant = async () => granted(5);
    await w.admit();
    await w.shell.sync(snapshotOf({ version: 2, limits: { per_second: 3_000 } }), { home: "h", index: 2 });
    expect(w.storage.peek("SELECT slice FROM windows")).toEqual([{ slice: `${SEC},0,1,0,${DAY},0,0,,;4,${DAY},0,0,,` }]);
    // The rest owed is handed back SETTLE_AFTER_MS from now, sooner than the slice's second would have been.
    expect(w.storage.alarmsSet.at(-1)).toBe(T + SETTLE_AFTER_MS);
  });
});

// ---------------------------------------------------------------------------------------------
// The organization's confirmation

describe("the organization's confirmation", () => {
  it("a lapsed lease asks the organization with the copy's revision, within CONFIRM_TIMEOUT_MS", async () => {
    const w = world();
    await w.shell.sync(snapshotOf({ revision: 4 }));
    w.behave.confirmKey = async () => snapshotOf({ revision: 4 });
    w.clock.now = T + 10_001;
    active(await w.admit({ now: T + 10_001 }));
    expect(calledAs(w, "org.confirmKey")).toEqual([["org.confirmKey", "org_1", "key_1", 4]]);
    expect(w.waits).toEqual([[CONFIRM_TIMEOUT_MS, "the organization's confirmation"]]);
  });

  it("a key the organization does not know, or a failed call, is refused until confirmed (503)", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    w.clock.now = T + 20_000;
    w.behave.confirmKey = async () => null;
    expect(await w.admit()).toEqual({ status: "unconfirmed" });
    expect(calledAs(w, "shard.admit")).toEqual([]);
    w.behave.confirmKey = async () => {
      throw new Error("down");
    };
    expect(await w.admit()).toEqual({ status: "unconfirmed" });
    w.behave.confirmKey = async () => snapshotOf();
    expect(active(await w.admit()).decision.allowed).toBe(true);
  });

  it("requests arriving while a confirmation is out share it", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    w.clock.now = T + 20_000;
    let answer: (s: KeySnapshot) => void = () => undefined;
    w.behave.confirmKey = () => new Promise<KeySnapshot>((r) => (answer = r));
    const a = w.admit();
    const b = w.admit();
    await new Promise((r) => setTimeout(r, 0));
    answer(snapshotOf());
    expect(active(await a).decision.allowed).toBe(true);
    expect(active(await b).decision.allowed).toBe(true);
    expect(calledAs(w, "org.confirmKey")).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------
// Memory against storage

describe("memory against storage", () => {
  const queries = (w: World): string[] => {
    const seen: string[] = [];
    const exec = w.storage.sql.exec.bind(w.storage.sql);
    w.storage.sql.exec = ((query: string, ...bindings: never[]) => {
      seen.push(query);
      return exec(query, ...bindings);
    }) as typeof exec;
    return seen;
  };

  it("the tables are made once per instance: a later push runs no migration", async () => {
    const w = world();
    const seen = queries(w);
    await w.shell.sync(snapshotOf());
    expect(seen.some((q) => q.includes("_migrations"))).toBe(true);
    seen.length = 0;
    await w.shell.sync(snapshotOf({ version: 2 }));
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((q) => q.includes("_migrations"))).toEqual([]);
  });

  it("a push's revocations replace what memory remembered of a credential or token", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    const ask = async () => active(await w.admit({ clientId: "c", clientVersion: 4, tokenId: "t" }));
    expect(await ask()).toMatchObject({ clientRevoked: false, clientStale: false, tokenRevoked: false });
    await w.shell.sync(
      snapshotOf({
        revision: 2,
        revocations: [
          { client_id: "c", revision: 2, kind: "changed", version: 5 },
          { client_id: "c", revision: 2, kind: "changed", version: 3 },
          { client_id: "x", revision: 2, kind: "token", token_id: "t", expires_ms: T + 60_000 },
        ],
      }),
    );
    expect(await ask()).toMatchObject({ clientRevoked: false, clientStale: true, tokenRevoked: true });
    await w.shell.sync(snapshotOf({ revision: 3, revocations: [{ client_id: "c", revision: 3 }] }));
    expect(await ask()).toMatchObject({ clientRevoked: true });
  });

  it("a restart before any request reads a key without a windows row, and counts from zero", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    w.behave.confirmKey = async () => snapshotOf();
    await w.restart();
    const a = active(await w.admit());
    expect(a.decision.second.used).toBe(1);
  });

  it("a use noted within USE_RESOLUTION_MS before a restart is not written again after it", async () => {
    const w = world();
    await w.shell.sync(snapshotOf());
    await w.admit();
    w.behave.confirmKey = async () => snapshotOf();
    await w.restart();
    w.clock.now = T + 1;
    await w.admit();
    expect(w.storage.peek("SELECT subject, at FROM uses")).toEqual([{ subject: "key", at: T }]);
  });

  it("an object never told a key leaves an alarm it finds for its first push to replace", async () => {
    const w = world();
    w.storage.alarm = T + 5;
    await w.shell.start();
    await w.shell.sync(snapshotOf({ revocations: [{ client_id: "x", revision: 1, kind: "token", token_id: "t", expires_ms: T + 100 }] }));
    expect(w.storage.alarmsSet).toEqual([T + 100]);
  });
});
