/**
 * Examples of the admission core's rules (src/ratelimit/admission.ts), each asserting one outcome
 * of one rule, where the property runs (admission-properties.test.ts) pass over a rule without
 * looking at it: the small rules (limits, secrets, shard counts, credits pushed), the traffic
 * hours, the order of a charge (windows, credits, quota), the quota's slices and their refusals,
 * a shard's slices, the home's grant, the settlement and what a push changes. The mutation check
 * (docs/testing.md, "Mutation testing") reads them; each calls the core directly, from plain data.
 */
import { describe, expect, it } from "vitest";
import {
  type Admission,
  type AdmissionState,
  type AdmitInput,
  type AdmitStep,
  type Answer,
  answersTo,
  applySnapshot,
  type Context,
  creditsAfter,
  drive,
  EMPTY_ADMISSION,
  EMPTY_HOLDING,
  type GrantStep,
  type KeyCopy,
  type KeySnapshot,
  limitsOf,
  MAX_SHARDS,
  type Need,
  plan,
  planGrant,
  quotaLimits,
  restored,
  resume,
  resumeGrant,
  type Step,
  settlement,
  shardsCounted,
  shardsEverHad,
  shardsFor,
  shardsToSync,
  takeBack,
  type Write,
  withCredits,
} from "../../src/ratelimit/admission";
import { NO_LEASE, NOTHING_PAID, type Paid } from "../../src/ratelimit/lease";
import { EMPTY_STATE } from "../../src/ratelimit/windows";
import { quotaAnswerOn } from "./fixtures";

const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Noon of a UTC day, on a second's boundary. */
const T = Date.UTC(2026, 10, 27, 12);
const SEC = T / 1000;
const DAYN = Math.floor(T / DAY);
const DEFAULTS = { per_second: 10, per_day: 1_000 };
const NO_FACTS = { clientRevoked: false, clientStale: false, tokenRevoked: false, inspectedTokenRevoked: false };
const ctx = (asking: Partial<Context["asking"]> = {}): Context => ({
  asking: { home: false, quota: false, ...asking },
  facts: () => NO_FACTS,
});
const CTX = ctx();

function copy(over: Partial<KeyCopy> = {}): KeyCopy {
  return {
    id: "key_1",
    organization_id: "org_1",
    status: "active",
    per_second: null,
    per_day: null,
    version: 1,
    revision: 0,
    secret_hash: null,
    previous_hash: null,
    previous_until_ms: null,
    shard_home: null,
    shard_index: null,
    shard_high: 0,
    ...over,
  };
}

/** A confirmed key's state at T (its lease fresh), within one object unless told otherwise. */
function state(over: Partial<AdmissionState> = {}, key: Partial<KeyCopy> = {}): AdmissionState {
  return { ...EMPTY_ADMISSION, key: copy(key), confirmedAt: T, hourly: { hour: T, admitted: 0, refused: 0 }, ...over };
}

const req = (over: Partial<AdmitInput> = {}): AdmitInput => ({ now: T, defaults: DEFAULTS, ...over });

function finished<A, P>(step: Step<A, P>): Extract<Step<A, P>, { done: true }> {
  if (!step.done) throw new Error(`expected an answer, got a need: ${step.need.kind}`);
  return step;
}
function asks<A, P>(step: Step<A, P>, kind: Need["kind"]): Extract<Step<A, P>, { done: false }> {
  if (step.done) throw new Error(`expected a need ${kind}, got an answer: ${JSON.stringify(step.answer)}`);
  expect(step.need.kind).toBe(kind);
  return step;
}
function activeOf(a: Admission): Extract<Admission, { status: "active" }> {
  if (a.status !== "active") throw new Error(`expected active, got ${a.status}`);
  return a;
}
const answerOf = (step: AdmitStep): Admission => finished(step).answer;

const credits = (remaining: number, over: Partial<NonNullable<AdmissionState["credits"]>> = {}) => ({
  remaining,
  refill: null,
  nextRefillMs: null,
  epoch: 1,
  added: 0,
  ...over,
});

const quotaAnswer = quotaAnswerOn(DAYN);

// ---------------------------------------------------------------------------------------------
// Small rules

describe("small rules", () => {
  it("a key is sharded only past one object's capacity, one shard per thousand a second", () => {
    expect([0, 1, 1_000, 1_001, 2_000, 2_001, 10_000].map(shardsFor)).toEqual([0, 0, 0, 2, 2, 3, 10]);
    expect(MAX_SHARDS).toBe(10);
  });

  it("limits: the key's own, else the defaults; a per-second limit above the ceiling is served at the ceiling", () => {
    expect(limitsOf(null, DEFAULTS)).toEqual(DEFAULTS);
    expect(limitsOf(copy(), DEFAULTS)).toEqual(DEFAULTS);
    expect(limitsOf(copy({ per_second: 5, per_day: 50 }), DEFAULTS)).toEqual({ per_second: 5, per_day: 50 });
    expect(limitsOf(copy({ per_second: 20_000 }), DEFAULTS)).toEqual({ per_second: 10_000, per_day: 1_000 });
    expect(limitsOf(copy({ per_second: 10_000 }), DEFAULTS).per_second).toBe(10_000);
  });

  it("secrets: the current one, or the previous one until its grace ends; without hashes, reaching the object is the check", () => {
    const rotated = copy({ secret_hash: "new", previous_hash: "old", previous_until_ms: T + 1 });
    const cases: [KeyCopy, string | undefined, boolean, number, boolean][] = [
      [copy(), undefined, false, T, true],
      [copy(), undefined, true, T, false],
      [copy(), "anything", false, T, true],
      [copy(), "anything", true, T, false],
      [rotated, undefined, false, T, true],
      [rotated, undefined, true, T, false],
      [rotated, "new", false, T, true],
      [rotated, "new", true, T, true],
      [rotated, "old", false, T, true],
      [rotated, "old", false, T + 1, false],
      [rotated, "old", false, T + 2, false],
      [rotated, "other", false, T, false],
      [rotated, "ne", false, T, false],
      [copy({ secret_hash: "new", previous_hash: "old", previous_until_ms: null }), "old", false, T, false],
      [copy({ secret_hash: "new", previous_hash: null, previous_until_ms: T + 5 }), "old", false, T, false],
      // No previous secret: nothing else is accepted, not even the text a missing hash would compare as.
      [copy({ secret_hash: "new", previous_hash: null, previous_until_ms: T + 5 }), "null", false, T, false],
    ];
    for (const [key, hash, routed, now, expected] of cases)
      expect([hash, routed, now, answersTo(key, hash, routed, now)]).toEqual([hash, routed, now, expected]);
  });

  it("the quota is counted at QUOTA_EXACT_PER_SECOND per second when it sets none", () => {
    expect(quotaLimits(null)).toBeNull();
    expect(quotaLimits({ per_day: 5 })).toEqual({ per_day: 5, per_second: 1_000 });
    expect(quotaLimits({ per_second: 7, per_month: 9 })).toEqual({ per_second: 7, per_month: 9 });
  });

  it("a decision carries the credits as they stand, refilled if a boundary passed", () => {
    const d = finished(plan(state(), req(), T, CTX));
    const decision = activeOf(d.answer).decision;
    expect(withCredits(decision, null, T)).toBe(decision);
    const c = credits(3, { refill: { amount: 50, interval: "day" }, nextRefillMs: T + 10 });
    expect(withCredits(decision, c, T).credits).toEqual({ remaining: 3, refill: { amount: 50, interval: "day" }, nextRefillAt: T + 10 });
    expect(withCredits(decision, c, T + 10).credits).toEqual({
      remaining: 50,
      refill: { amount: 50, interval: "day" },
      nextRefillAt: (DAYN + 1) * DAY,
    });
  });

  it("shard counts: what a push reaches, what erasure reaches, what traffic sums", () => {
    const home = (per_second: number | null, shard_high: number | null) => copy({ per_second, shard_high });
    const shard = copy({ per_second: 5_000, shard_home: "h", shard_index: 1, shard_high: 9 });
    expect(shardsToSync(null, null)).toBe(0);
    expect(shardsToSync(null, shard)).toBe(0);
    expect(shardsToSync(home(5_000, 5), home(2_000, 5))).toBe(5);
    expect(shardsToSync(home(5_000, 0), home(2_000, 0))).toBe(5);
    expect(shardsToSync(home(2_000, 0), home(3_000, 0))).toBe(3);
    expect(shardsToSync(home(2_000, 0), home(2_000, 7))).toBe(7);
    expect(shardsToSync(shard, home(2_000, null))).toBe(2);
    expect(shardsToSync(null, home(10, null))).toBe(0);

    expect(shardsEverHad(null)).toBe(0);
    expect(shardsEverHad(shard)).toBe(0);
    expect(shardsEverHad(home(10, null))).toBe(MAX_SHARDS);
    expect(shardsEverHad(home(3_000, 2))).toBe(3);
    expect(shardsEverHad(home(2_000, 6))).toBe(6);

    expect(shardsCounted(null)).toBe(0);
    expect(shardsCounted(shard)).toBe(0);
    expect(shardsCounted(home(10, null))).toBe(0);
    expect(shardsCounted(home(3_000, 2))).toBe(3);
    expect(shardsCounted(home(2_000, 6))).toBe(6);
  });
});

// ---------------------------------------------------------------------------------------------
// Credits pushed

describe("credits pushed", () => {
  const refill = { amount: 20, interval: "day" as const };
  it("a first record, or a newer epoch, is a reset to base + added with its refill counted from now", () => {
    expect(creditsAfter(null, undefined, T)).toBeUndefined();
    expect(creditsAfter(credits(5), null, T)).toBeNull();
    expect(creditsAfter(null, { base: 10, epoch: 2, added: 3, refill: null }, T)).toEqual({
      remaining: 13,
      epoch: 2,
      added: 3,
      refill: null,
      nextRefillMs: null,
    });
    expect(creditsAfter(credits(1, { epoch: 1, added: 9 }), { base: 10, epoch: 2, added: 3, refill }, T)).toEqual({
      remaining: 13,
      epoch: 2,
      added: 3,
      refill,
      nextRefillMs: (DAYN + 1) * DAY,
    });
    // A reset that keeps the refill it had counts its boundary from now too.
    const refilling = credits(1, { epoch: 1, refill, nextRefillMs: T - 5 });
    expect(creditsAfter(refilling, { base: 10, epoch: 2, added: 0, refill }, T)?.nextRefillMs).toBe((DAYN + 1) * DAY);
  });

  it("the same epoch tops up by what `added` grew, never takes back, and keeps a refill's boundary", () => {
    const held = credits(4, { epoch: 2, added: 3, refill, nextRefillMs: T + 5 });
    expect(creditsAfter(held, { base: 10, epoch: 2, added: 5, refill }, T)).toEqual({ ...held, remaining: 6, added: 5 });
    expect(creditsAfter(held, { base: 10, epoch: 2, added: 1, refill }, T)).toEqual({ ...held, remaining: 4, added: 3 });
    expect(creditsAfter(held, { base: 10, epoch: 2, added: 3, refill }, T)).toEqual(held);
  });

  it("a changed refill counts its boundary from now; a refill removed has none; a late epoch changes nothing", () => {
    const held = credits(4, { epoch: 2, added: 3, refill, nextRefillMs: T + 5 });
    const monthly = { amount: 20, interval: "month" as const };
    expect(creditsAfter(held, { base: 10, epoch: 2, added: 3, refill: monthly }, T)?.nextRefillMs).toBe(Date.UTC(2026, 11, 1));
    expect(creditsAfter(held, { base: 10, epoch: 2, added: 3, refill: { amount: 30, interval: "day" } }, T + DAY)?.nextRefillMs).toBe(
      (DAYN + 2) * DAY,
    );
    expect(creditsAfter(held, { base: 10, epoch: 2, added: 3, refill: null }, T)).toEqual({ ...held, refill: null, nextRefillMs: null });
    expect(creditsAfter(credits(4, { epoch: 2, refill: null }), { base: 10, epoch: 2, added: 0, refill }, T)?.nextRefillMs).toBe(
      (DAYN + 1) * DAY,
    );
    expect(creditsAfter(held, { base: 10, epoch: 1, added: 30, refill }, T)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// The traffic hours

describe("the hour's counts", () => {
  const at = (hourly: AdmissionState["hourly"], now: number, over: Partial<AdmissionState> = {}) =>
    finished(plan(state({ hourly, ...over }), req({ now }), T, CTX));

  it("a request of the live hour is added to its counts: one write, the windows row", () => {
    const s = at({ hour: T, admitted: 2, refused: 1 }, T + 5);
    expect(s.state.hourly).toEqual({ hour: T, admitted: 3, refused: 1 });
    expect(s.writes).toEqual([{ kind: "windows" }]);
  });

  it("a new hour sends the finished one to its row and deletes the rows past TRAFFIC_DAYS", () => {
    const s = at({ hour: T, admitted: 2, refused: 1 }, T + HOUR + 5);
    expect(s.state.hourly).toEqual({ hour: T + HOUR, admitted: 1, refused: 0 });
    expect(s.writes).toEqual([
      { kind: "traffic", hour: T, admitted: 2, refused: 1 },
      { kind: "trafficPrune", before: T + HOUR - 31 * DAY },
      { kind: "windows" },
    ]);
  });

  it("a finished hour that counted only refusals, or only admissions, has its row; an empty one has none", () => {
    expect(at({ hour: T, admitted: 0, refused: 1 }, T + HOUR).writes[0]).toEqual({ kind: "traffic", hour: T, admitted: 0, refused: 1 });
    expect(at({ hour: T, admitted: 1, refused: 0 }, T + HOUR).writes[0]).toEqual({ kind: "traffic", hour: T, admitted: 1, refused: 0 });
    expect(at({ hour: T, admitted: 0, refused: 0 }, T + HOUR).writes).toEqual([
      { kind: "trafficPrune", before: T + HOUR - 31 * DAY },
      { kind: "windows" },
    ]);
  });

  it("the first hour an object counts has no finished hour before it", () => {
    const s = at({ hour: 0, admitted: 0, refused: 0 }, T + 5);
    expect(s.state.hourly).toEqual({ hour: T, admitted: 1, refused: 0 });
    expect(s.writes).toEqual([{ kind: "windows" }]);
  });

  it("a request stamped before the live hour is added to its own hour's row, the live counts untouched", () => {
    const s = at({ hour: T, admitted: 2, refused: 1 }, T - 5);
    expect(s.state.hourly).toEqual({ hour: T, admitted: 2, refused: 1 });
    expect(s.writes).toEqual([{ kind: "traffic", hour: T - HOUR, admitted: 1, refused: 0 }, { kind: "windows" }]);
    const refused = at({ hour: T, admitted: 2, refused: 1 }, T - 5, {
      windows: { second: SEC - 1, secondCount: 10, day: DAYN, dayCount: 10 },
    });
    expect(refused.writes).toEqual([{ kind: "traffic", hour: T - HOUR, admitted: 0, refused: 1 }, { kind: "windows" }]);
  });

  it("a refusal by the limits is counted refused", () => {
    const s = at({ hour: T, admitted: 2, refused: 1 }, T + 5, { windows: { second: SEC, secondCount: 10, day: DAYN, dayCount: 10 } });
    expect(s.state.hourly).toEqual({ hour: T, admitted: 2, refused: 2 });
  });
});

// ---------------------------------------------------------------------------------------------
// A charge: windows, then credits, then the quota

describe("a charge's order: windows, credits, quota", () => {
  const full = (secondCount: number, dayCount: number) => ({ second: SEC, secondCount, day: DAYN, dayCount });

  it("admits within the windows, counts the cost in both, and answers with the usage", () => {
    const s = finished(plan(state({ windows: full(3, 30) }), req({ cost: 2 }), T, CTX));
    expect(s.state.windows).toEqual(full(5, 32));
    const a = activeOf(s.answer);
    expect(a).toMatchObject({ keyId: "key_1", organizationId: "org_1", ...NO_FACTS });
    expect(a.shards).toBeUndefined();
    expect(a.decision).toMatchObject({ allowed: true, exceeded: null, cost: 2, now: T });
    expect(a.decision.second).toMatchObject({ used: 5, remaining: 5 });
    expect(a.decision.credits).toBeUndefined();
  });

  it("a full second or day refuses before the credits are spent, and the windows and credits are unchanged", () => {
    for (const [windows, exceeded] of [
      [full(10, 10), "second"],
      [full(0, 1_000), "day"],
    ] as const) {
      const s = finished(plan(state({ windows, credits: credits(5) }), req(), T, CTX));
      const d = activeOf(s.answer).decision;
      expect(d).toMatchObject({ allowed: false, exceeded, cost: 1 });
      expect(d.credits?.remaining).toBe(5);
      expect(s.state.windows).toEqual(windows);
      expect(s.state.credits).toEqual(credits(5));
      expect(s.writes).toEqual([{ kind: "windows" }]);
    }
  });

  it("credits are spent after the windows admit; too few refuse as credits, the windows uncounted", () => {
    const ok = finished(plan(state({ windows: full(1, 1), credits: credits(5) }), req({ cost: 2 }), T, CTX));
    expect(ok.state.credits?.remaining).toBe(3);
    expect(activeOf(ok.answer).decision.credits?.remaining).toBe(3);
    expect(ok.writes).toEqual([{ kind: "credits" }, { kind: "windows" }]);

    const short = finished(plan(state({ windows: full(1, 1), credits: credits(1) }), req({ cost: 2 }), T, CTX));
    const d = activeOf(short.answer).decision;
    expect(d).toMatchObject({ allowed: false, exceeded: "credits", cost: 2 });
    expect(d.second.used).toBe(1);
    expect(d.day.used).toBe(1);
    expect(d.credits?.remaining).toBe(1);
    expect(short.state.windows).toEqual(full(1, 1));
    expect(short.state.hourly).toEqual({ hour: T, admitted: 0, refused: 1 });
    // Nothing of the balance changed: no credits row.
    expect(short.writes).toEqual([{ kind: "windows" }]);
  });

  it("a refusal by credits that a refill changed writes the refilled balance", () => {
    const refill = { amount: 1, interval: "day" as const };
    const due = credits(0, { refill, nextRefillMs: T });
    const s = finished(plan(state({ credits: due }), req({ cost: 2 }), T, CTX));
    expect(activeOf(s.answer).decision.exceeded).toBe("credits");
    expect(s.state.credits).toEqual({ ...due, remaining: 1, nextRefillMs: (DAYN + 1) * DAY });
    expect(s.writes).toEqual([{ kind: "credits" }, { kind: "windows" }]);
    // Only the boundary moved (a refill to the same balance): still written.
    const same = credits(1, { refill, nextRefillMs: T });
    expect(finished(plan(state({ credits: same }), req({ cost: 2 }), T, CTX)).writes).toEqual([{ kind: "credits" }, { kind: "windows" }]);
  });

  it("a request costs 1 when it names no cost", () => {
    const s = finished(plan(state(), req(), T, CTX));
    expect(activeOf(s.answer).decision.cost).toBe(1);
    expect(s.state.windows.secondCount).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------
// The organization's quota, exact

describe("an exact quota: the QuotaObject takes each charge", () => {
  const owed = [{ amount: 3, paid: { ...NOTHING_PAID, day: DAYN, quotaDay: DAYN, month: 7 } }];
  const quoted = (quota: AdmissionState["quota"], over: Partial<AdmissionState> = {}) =>
    plan(state({ quota, credits: credits(5), quotaSlice: { ...EMPTY_HOLDING, owed }, ...over }), req({ cost: 2 }), T, CTX);

  it("asks the QuotaObject to take the cost, carrying what is owed back to it, cleared from the state", () => {
    for (const quota of [{ per_day: 100 }, { per_second: 1_000 }]) {
      const s = asks(quoted(quota), "take");
      expect(s.need).toEqual({
        kind: "take",
        limits: { per_second: quota.per_second ?? 1_000, ...quota },
        now: T,
        cost: 2,
        returned: owed,
      });
      expect(s.state.quotaSlice.owed).toEqual([]);
      // Counted provisionally, before the call.
      expect(s.state.windows.secondCount).toBe(2);
      expect(s.state.credits?.remaining).toBe(3);
      expect(s.writes).toEqual([{ kind: "credits" }, { kind: "windows" }]);
    }
  });

  it("a quota past QUOTA_EXACT_PER_SECOND is paid from slices instead", () => {
    asks(quoted({ per_second: 1_001 }), "quotaSlice");
  });

  it("an admission carries the quota's windows and what it was paid from", () => {
    const s = asks(quoted({ per_day: 100 }), "take");
    const windows = [{ name: "org_day" as const, limit: 100, used: 2, remaining: 98, resetAt: (DAYN + 1) * DAY, windowSeconds: 86_400 }];
    const r = finished(
      resume(s.state, s.pending, { kind: "quota", answer: quotaAnswer({ windows, paid: { day: DAYN - 1, month: 9 } }) }, CTX),
    );
    const d = activeOf(r.answer).decision;
    expect(d).toMatchObject({ allowed: true, quota: windows, cost: 2 });
    expect(d.credits?.remaining).toBe(3);
    expect(r.writes).toEqual([]);
    expect(r.state.windows.secondCount).toBe(2);
  });

  it("a refusal by the quota gives the windows and the credits back, and answers as the quota said", () => {
    const s = asks(quoted({ per_day: 100 }), "take");
    const windows = [{ name: "org_day" as const, limit: 100, used: 100, remaining: 0, resetAt: (DAYN + 1) * DAY, windowSeconds: 86_400 }];
    const answer = quotaAnswer({ allowed: false, exceeded: "org_day", windows, granted: 0 });
    const r = finished(resume(s.state, s.pending, { kind: "quota", answer }, CTX));
    const d = activeOf(r.answer).decision;
    expect(d).toMatchObject({ allowed: false, exceeded: "org_day", cost: 2, quota: windows });
    expect(d.second.used).toBe(0);
    expect(d.credits?.remaining).toBe(5);
    expect(r.state.windows).toMatchObject({ secondCount: 0, dayCount: 0 });
    expect(r.state.credits?.remaining).toBe(5);
    expect(r.state.hourly).toEqual({ hour: T, admitted: 0, refused: 1 });
    expect(r.writes).toEqual([{ kind: "windows" }, { kind: "credits" }]);
    // The refusal of an exact quota is not repeated without asking.
    expect(r.state.quotaSlice.refusal).toBeNull();
  });

  it("a quota that does not answer gives the charge back and fails closed, the request taken out of the hour", () => {
    const s = asks(quoted({ per_day: 100 }), "take");
    const r = finished(resume(s.state, s.pending, { kind: "failed" }, CTX));
    expect(r.answer).toEqual({ status: "unconfirmed" });
    expect(r.state.hourly).toEqual({ hour: T, admitted: 0, refused: 0 });
    expect(r.state.windows).toMatchObject({ secondCount: 0, dayCount: 0 });
    expect(r.state.credits?.remaining).toBe(5);
  });

  it("gives back only to windows and a balance that are still those it was charged in", () => {
    const s = asks(quoted({ per_day: 100 }), "take");
    // Meanwhile: a new second and day, and a credits reset (a new epoch); the hour rolled.
    const moved: AdmissionState = {
      ...s.state,
      windows: { second: SEC + 1, secondCount: 4, day: DAYN + 1, dayCount: 6 },
      credits: credits(9, { epoch: 2 }),
      hourly: { hour: T + HOUR, admitted: 1, refused: 0 },
    };
    const r = finished(resume(moved, s.pending, { kind: "failed" }, CTX));
    expect(r.state.windows).toEqual(moved.windows);
    expect(r.state.credits).toEqual(moved.credits);
    expect(r.state.hourly).toEqual(moved.hourly);
    expect(r.writes).toEqual([{ kind: "windows" }, { kind: "traffic", hour: T, admitted: -1, refused: 0 }]);
    // A refill (a new period) replaced the balance: nothing back to it either.
    const refilledMeanwhile = {
      ...s.state,
      credits: { ...(s.state.credits as NonNullable<AdmissionState["credits"]>), nextRefillMs: T + DAY },
    };
    expect(finished(resume(refilledMeanwhile, s.pending, { kind: "failed" }, CTX)).state.credits?.remaining).toBe(3);
    // The same second but another day count (impossible in practice) is still matched field by field.
    const dayOnly = { ...s.state, windows: { ...s.state.windows, day: DAYN + 1 } };
    expect(finished(resume(dayOnly, s.pending, { kind: "failed" }, CTX)).state.windows).toMatchObject({ secondCount: 0, dayCount: 2 });
  });

  it("gives back no more than the windows and the hour hold", () => {
    const s = asks(quoted({ per_day: 100 }), "take");
    const emptied = {
      ...s.state,
      windows: { ...s.state.windows, secondCount: 1, dayCount: 1 },
      hourly: { hour: T, admitted: 0, refused: 0 },
    };
    const r = finished(resume(emptied, s.pending, { kind: "failed" }, CTX));
    expect(r.state.windows).toMatchObject({ secondCount: 0, dayCount: 0 });
    expect(r.state.hourly).toEqual({ hour: T, admitted: 0, refused: 0 });
  });
});

// ---------------------------------------------------------------------------------------------
// A request's way to its charge

describe("a request's checks before the charge", () => {
  it("an object that was never told its key: unknown at a home, home at a shard", () => {
    expect(answerOf(plan(EMPTY_ADMISSION, req(), T, CTX))).toEqual({ status: "unknown" });
    expect(answerOf(plan(EMPTY_ADMISSION, req({ shard: 2 }), T, CTX))).toEqual({ status: "home" });
  });

  it("the copy is trusted for KEY_LEASE_MS after its confirmation, then the organization is asked", () => {
    expect(finished(plan(state(), req(), T + 10_000, CTX)).done).toBe(true);
    const s = asks(plan(state(), req(), T + 10_001, CTX), "confirm");
    expect(s.writes).toEqual([]);
    expect(s.pending).toEqual({ phase: "confirm", input: req() });
    expect(answerOf(resume(s.state, s.pending, { kind: "failed" }, CTX))).toEqual({ status: "unconfirmed" });
    expect(activeOf(answerOf(resume(s.state, s.pending, { kind: "confirmed" }, CTX))).decision.allowed).toBe(true);
  });

  it("a wrong secret is unknown; a revoked key is revoked; neither is counted", () => {
    const s = state({}, { secret_hash: "h" });
    expect(finished(plan(s, req({ secretHash: "x" }), T, CTX))).toMatchObject({ answer: { status: "unknown" }, writes: [] });
    const revoked = state({}, { status: "revoked" });
    expect(finished(plan(revoked, req(), T, CTX))).toMatchObject({
      answer: { status: "revoked", keyId: "key_1", organizationId: "org_1" },
      writes: [],
      state: revoked,
    });
    expect(answerOf(plan(state(), req({ routed: true }), T, CTX))).toEqual({ status: "unknown" });
  });

  it("the answer carries the revocation facts read for the request", () => {
    const facts = { clientRevoked: true, clientStale: true, tokenRevoked: false, inspectedTokenRevoked: true };
    expect(activeOf(answerOf(plan(state(), req(), T, { ...CTX, facts: () => facts })))).toMatchObject(facts);
  });

  it("the home of a sharded key hands an edge's first request to a shard, and counts it only when the shard fails", () => {
    const home = state({}, { per_second: 2_500 });
    const s = asks(plan(home, req(), T, CTX), "shard");
    expect(s.need).toEqual({ kind: "shard", count: 3 });
    expect(s.writes).toEqual([]);
    const shardAnswer = activeOf(answerOf(plan(state(), req(), T, CTX)));
    const passed = finished(resume(s.state, s.pending, { kind: "shard", admission: shardAnswer }, CTX));
    expect(passed.answer).toEqual({ ...shardAnswer, shards: 3 });
    expect(passed.state).toBe(s.state);
    expect(passed.writes).toEqual([]);
    const revoked: Admission = { status: "revoked", keyId: "key_1", organizationId: "org_1" };
    expect(answerOf(resume(s.state, s.pending, { kind: "shard", admission: revoked }, CTX))).toEqual(revoked);
    expect(answerOf(resume(s.state, s.pending, { kind: "shard", admission: { status: "unconfirmed" } }, CTX))).toEqual({
      status: "unconfirmed",
    });
    for (const answer of [{ kind: "shard", admission: { status: "home" } }, { kind: "failed" }] as Answer[]) {
      const counted = finished(resume(s.state, s.pending, answer, CTX));
      expect(activeOf(counted.answer).shards).toBe(3);
      expect(counted.state.windows.secondCount).toBe(1);
    }
    // A request the edge already sent to a shard number is counted at the home (the shard was not ready).
    expect(activeOf(answerOf(plan(home, req({ shard: 1 }), T, CTX))).shards).toBe(3);
    // A key at one object's capacity is not sharded.
    expect(finished(plan(state({}, { per_second: 1_000 }), req(), T, CTX)).done).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// A shard's slices of its key's second

describe("a shard pays from its slice", () => {
  const SHARD = { per_second: 3_000, shard_home: "home", shard_index: 2 };
  const paid: Paid = { day: DAYN, quotaDay: 0, month: 0, epoch: null, period: null };
  const view = finished(plan(state(), req(), T, CTX));
  const viewDecision = activeOf(view.answer).decision;
  const lease = (remaining: number, admitted = 0, previous = 0) => ({ second: SEC, remaining, admitted, previous, paid });
  const shard = (slice: Partial<AdmissionState["slice"]> = {}, over: Partial<AdmissionState> = {}) =>
    state({ slice: { ...EMPTY_HOLDING, ...slice }, ...over }, SHARD);

  it("a shard past its key's count serves nothing: the home decides", () => {
    expect(answerOf(plan(state({}, { ...SHARD, per_second: 1_500, shard_index: 3 }), req(), T, CTX))).toEqual({ status: "home" });
    expect(finished(plan(shard({ lease: lease(1), view: viewDecision }), req(), T, CTX)).done).toBe(true);
    // The last of its key's shards serves.
    const last = plan(
      state({ slice: { ...EMPTY_HOLDING, lease: lease(1), view: viewDecision } }, { ...SHARD, shard_index: 3 }),
      req(),
      T,
      CTX,
    );
    expect(activeOf(answerOf(last)).decision.allowed).toBe(true);
  });

  it("spends from the slice it holds, counted in the hour, with the view its home sent", () => {
    const s = finished(plan(shard({ lease: lease(3, 1), view: viewDecision }), req({ cost: 2, now: T + 7 }), T, CTX));
    expect(s.state.slice.lease).toEqual({ ...lease(1, 3) });
    expect(s.state.hourly).toEqual({ hour: T, admitted: 1, refused: 0 });
    expect(s.writes).toEqual([{ kind: "windows" }]);
    const a = activeOf(s.answer);
    expect(a.decision).toEqual({ ...viewDecision, allowed: true, exceeded: null, now: T + 7, cost: 2 });
    expect(a.shards).toBe(3);
    // The shard's own windows are not counted.
    expect(s.state.windows).toEqual(EMPTY_STATE);
  });

  it("a slice without its view (read back after a restart) is not spent: the shard asks", () => {
    asks(plan(shard({ lease: lease(3) }), req(), T, CTX), "grant");
  });

  it("asks its home for what the request lacks, at least, and its rate, at most KEY_SLICE_CAP, carrying what it owes", () => {
    const owed = [{ amount: 4, paid }];
    const s = asks(plan(shard({ lease: lease(1, 30, 80), owed, view: viewDecision }), req({ cost: 3 }), T, CTX), "grant");
    expect(s.need).toEqual({ kind: "grant", request: { now: T, defaults: DEFAULTS, min: 2, want: 50, returned: owed }, shared: true });
    expect(s.state.slice.owed).toEqual([]);
    expect(s.writes).toEqual([{ kind: "windows" }]);
    expect(s.pending).toMatchObject({ phase: "slice", tries: 0, version: 1 });
    // A slice of an earlier second is owed back with the question.
    const old = { ...lease(2), second: SEC - 1 };
    const later = asks(plan(shard({ lease: old, view: viewDecision }), req(), T, CTX), "grant");
    expect(later.need).toMatchObject({ request: { returned: [{ amount: 2, paid }] } });
  });

  it("while another request asks, waits for it (up to SHARED_TRIES), then asks exactly for itself", () => {
    const asking = ctx({ home: true });
    const s = asks(plan(shard(), req({ cost: 2 }), T, asking), "wait");
    expect(s.need).toEqual({ kind: "wait", on: "home" });
    expect(s.writes).toEqual([{ kind: "windows" }]);
    let step: AdmitStep = s;
    const kinds: string[] = [];
    for (let i = 0; i < 4 && !step.done; i++) {
      kinds.push(step.need.kind);
      if (step.need.kind === "grant") break;
      step = resume(step.state, step.pending, { kind: "waited" }, asking);
    }
    expect(kinds).toEqual(["wait", "wait", "wait", "grant"]);
    const last = asks(step, "grant");
    expect(last.need).toMatchObject({ shared: false, request: { min: 2, want: 2 } });
    expect(last.pending).toMatchObject({ tries: 3 });
  });

  it("a refusal from the home is repeated without asking until its second ends, to charges of its cost or more", () => {
    const refused = { ...viewDecision, allowed: false, exceeded: "day" as const };
    const s = asks(plan(shard(), req({ cost: 2 }), T, CTX), "grant");
    const r = finished(resume(s.state, s.pending, { kind: "grant", grant: { status: "refused", decision: refused } }, CTX));
    expect(r.state.slice.refusal).toEqual({ answer: refused, until: T + 1_000, cost: 2 });
    expect(activeOf(r.answer).decision).toEqual({ ...refused, now: T, cost: 2 });
    expect(r.state.hourly).toEqual({ hour: T, admitted: 0, refused: 1 });
    expect(r.writes).toEqual([{ kind: "windows" }]);
    const again = (cost: number, now: number) => plan(r.state, req({ cost, now }), T, CTX);
    expect(activeOf(answerOf(again(3, T + 999))).decision).toMatchObject({ allowed: false, cost: 3, now: T + 999 });
    expect(activeOf(answerOf(again(2, T + 999))).decision.allowed).toBe(false);
    asks(again(1, T + 999), "grant");
    asks(again(2, T + 1_000), "grant");
  });

  it("a grant is received into the slice and spent at once", () => {
    const s = asks(plan(shard(), req({ cost: 2 }), T, CTX), "grant");
    const grant = { status: "granted" as const, granted: 5, decision: viewDecision, paid };
    const r = finished(resume(s.state, s.pending, { kind: "grant", grant }, CTX));
    expect(r.state.slice).toEqual({ lease: lease(3, 2), owed: [], view: viewDecision, refusal: null });
    expect(activeOf(r.answer).decision.allowed).toBe(true);
    // What the slice held, paid from another balance, is owed back rather than mixed in.
    const other: Paid = { ...paid, epoch: 4 };
    const held = asks(plan(shard({ lease: { ...lease(1), paid: other }, view: viewDecision }), req({ cost: 2 }), T, CTX), "grant");
    const mixed = finished(resume(held.state, held.pending, { kind: "grant", grant }, CTX));
    expect(mixed.state.slice.owed).toEqual([{ amount: 1, paid: other }]);
    expect(mixed.state.slice.lease.remaining).toBe(3);
  });

  it("a grant under an older version of the key is owed back whole, and the request decided again", () => {
    const s = asks(plan(shard(), req(), T, CTX), "grant");
    const pushed = { ...s.state, key: { ...(s.state.key as KeyCopy), version: 2 } };
    const grant = { status: "granted" as const, granted: 5, decision: viewDecision, paid };
    const r = resume(pushed, s.pending, { kind: "grant", grant }, CTX);
    const again = asks(r, "grant");
    expect(again.need).toMatchObject({ request: { returned: [{ amount: 5, paid }] } });
    expect(again.pending).toMatchObject({ tries: 1, version: 2 });
    expect(again.writes).toEqual([{ kind: "windows" }]);
    // A refusal under the older version is not repeated.
    const refused = resume(pushed, s.pending, { kind: "grant", grant: { status: "refused", decision: viewDecision } }, CTX);
    expect(asks(refused, "grant").state.slice.refusal).toBeNull();
    // A key erased meanwhile: unknown.
    expect(answerOf(resume({ ...s.state, key: null }, s.pending, { kind: "grant", grant }, CTX))).toEqual({ status: "unknown" });
  });

  it("decided again after a push left the copy unconfirmed: the organization is asked first", () => {
    const s = asks(plan(shard(), req(), T, ctx({ home: true })), "wait");
    const r = asks(resume({ ...s.state, confirmedAt: 0 }, s.pending, { kind: "waited" }, CTX), "confirm");
    expect(r.pending).toEqual({ phase: "confirm", input: req() });
    expect(r.writes).toEqual([]);
    const v = asks(plan(shard(), req(), T, CTX), "grant");
    const pushed = { ...v.state, confirmedAt: 0, key: { ...(v.state.key as KeyCopy), version: 2 } };
    const grant = { status: "granted" as const, granted: 5, decision: viewDecision, paid };
    const c = asks(resume(pushed, v.pending, { kind: "grant", grant }, CTX), "confirm");
    expect(c.writes).toEqual([{ kind: "windows" }]);
    expect(c.state.slice.owed).toEqual([{ amount: 5, paid }]);
  });

  it("a home that does not answer fails the request closed", () => {
    const s = asks(plan(shard(), req(), T, CTX), "grant");
    for (const answer of [{ kind: "grant", grant: { status: "unavailable" } }, { kind: "failed" }] as Answer[]) {
      expect(finished(resume(s.state, s.pending, answer, CTX))).toMatchObject({ answer: { status: "unconfirmed" }, writes: [] });
    }
  });

  it("fails closed after MAX_TRIES questions", () => {
    const s = asks(plan(shard(), req(), T, CTX), "grant");
    const spentMeanwhile = (st: AdmissionState) => ({ ...st, slice: { ...st.slice, lease: { ...st.slice.lease, remaining: 0 } } });
    // Each grant is spent by others before this request pays from it: it asks again, up to MAX_TRIES.
    let step: AdmitStep = s;
    let asked = 0;
    while (!step.done && asked < 20) {
      asked++;
      const grant = { status: "granted" as const, granted: 0, decision: viewDecision, paid };
      step = resume(spentMeanwhile(step.state), step.pending, { kind: "grant", grant }, CTX);
    }
    expect(finished(step)).toMatchObject({ answer: { status: "unconfirmed" }, writes: [{ kind: "windows" }] });
    expect(asked).toBe(9);
  });
});

// ---------------------------------------------------------------------------------------------
// The organization's quota, sliced

describe("a quota past QUOTA_EXACT_PER_SECOND: paid from the key's slice of it", () => {
  const QUOTA = { per_second: 5_000, per_day: 1_000_000 };
  const qpaid: Paid = { ...NOTHING_PAID, day: DAYN, quotaDay: DAYN, month: 7 };
  const windows = [{ name: "org_second" as const, limit: 5_000, used: 1, remaining: 4_999, resetAt: T + 1_000, windowSeconds: 1 }];
  const view = { allowed: true, exceeded: null, windows };
  const lease = (remaining: number, admitted = 0, previous = 0) => ({ second: SEC, remaining, admitted, previous, paid: qpaid });
  const sliced = (slice: Partial<AdmissionState["quotaSlice"]> = {}, over: Partial<AdmissionState> = {}) =>
    state({ quota: QUOTA, credits: credits(10), quotaSlice: { ...EMPTY_HOLDING, ...slice }, ...over });

  it("pays from the slice it holds, with the quota's view attached and what the slice was paid from", () => {
    const s = finished(plan(sliced({ lease: lease(3), view }), req({ cost: 2 }), T, CTX));
    expect(s.state.quotaSlice.lease).toEqual(lease(1, 2));
    expect(s.state.windows.secondCount).toBe(2);
    expect(s.state.credits?.remaining).toBe(8);
    expect(s.writes).toEqual([{ kind: "credits" }, { kind: "windows" }]);
    const d = activeOf(s.answer).decision;
    expect(d).toMatchObject({ allowed: true, cost: 2, quota: windows });
    expect(d.credits?.remaining).toBe(8);
  });

  it("asks for what the charge lacks, at least, and its rate, at most QUOTA_SLICE_CAP, carrying what is owed", () => {
    const owed = [{ amount: 4, paid: qpaid }];
    const s = asks(plan(sliced({ lease: lease(1, 30, 70), owed, view }), req({ cost: 3 }), T, CTX), "quotaSlice");
    expect(s.need).toEqual({ kind: "quotaSlice", limits: QUOTA, now: T, min: 2, want: 20, returned: owed, shared: true });
    expect(s.state.quotaSlice.owed).toEqual([]);
    expect(s.state.quotaSlice.lease).toEqual(lease(1, 30, 70));
    expect(s.writes).toEqual([{ kind: "credits" }, { kind: "windows" }]);
  });

  it("a slice of an earlier second is owed back with the question", () => {
    const s = asks(plan(sliced({ lease: { ...lease(2), second: SEC - 1 }, view }), req(), T, CTX), "quotaSlice");
    expect(s.need).toMatchObject({ returned: [{ amount: 2, paid: qpaid }] });
  });

  it("receives a granted slice and pays from it; the view is the quota's answer", () => {
    const s = asks(plan(sliced(), req({ cost: 2 }), T, CTX), "quotaSlice");
    const answer = quotaAnswer({ windows, granted: 5, paid: { day: DAYN, month: 7 } });
    const r = finished(resume(s.state, s.pending, { kind: "quota", answer }, CTX));
    expect(r.state.quotaSlice).toEqual({ lease: lease(3, 2), owed: [], view: answer, refusal: null });
    expect(r.writes).toEqual([{ kind: "windows" }]);
    const d = activeOf(r.answer).decision;
    expect(d).toMatchObject({ allowed: true, quota: windows });
    expect(d.credits?.remaining).toBe(8);
  });

  it("a refusal by the quota is repeated without asking until its second ends, to charges of its cost or more", () => {
    const s = asks(plan(sliced(), req({ cost: 2 }), T, CTX), "quotaSlice");
    const answer = quotaAnswer({ allowed: false, exceeded: "org_second", windows, granted: 0 });
    const r = finished(resume(s.state, s.pending, { kind: "quota", answer }, CTX));
    expect(r.state.quotaSlice.refusal).toEqual({ answer, until: T + 1_000, cost: 2 });
    expect(activeOf(r.answer).decision).toMatchObject({ allowed: false, exceeded: "org_second", quota: windows });
    expect(r.state.credits?.remaining).toBe(10);
    expect(r.state.windows.secondCount).toBe(0);
    const again = (cost: number, now: number) => plan(r.state, req({ cost, now }), T, CTX);
    const repeated = finished(again(2, T + 999));
    expect(activeOf(repeated.answer).decision).toMatchObject({ allowed: false, exceeded: "org_second", cost: 2 });
    expect(repeated.state.windows.secondCount).toBe(0);
    expect(repeated.state.credits?.remaining).toBe(10);
    expect(repeated.state.hourly).toEqual({ hour: T, admitted: 0, refused: 2 });
    expect(activeOf(answerOf(again(3, T + 999))).decision.allowed).toBe(false);
    asks(again(1, T + 999), "quotaSlice");
    asks(again(2, T + 1_000), "quotaSlice");
  });

  it("waits for another request's question up to SHARED_TRIES, then asks exactly for itself", () => {
    const asking = ctx({ quota: true });
    let step: AdmitStep = plan(sliced(), req({ cost: 2 }), T, asking);
    const first = asks(step, "wait");
    expect(first.need).toEqual({ kind: "wait", on: "quota" });
    expect(first.state.windows.secondCount).toBe(2);
    const kinds: string[] = [];
    for (let i = 0; i < 5 && !step.done; i++) {
      kinds.push(step.need.kind);
      if (step.need.kind !== "wait") break;
      step = resume(step.state, step.pending, { kind: "waited" }, asking);
      // A wait counts nothing again.
      expect(step.state.windows.secondCount).toBe(2);
      expect(step.writes).toEqual([{ kind: "windows" }]);
    }
    expect(kinds).toEqual(["wait", "wait", "wait", "quotaSlice"]);
    expect(asks(step, "quotaSlice").need).toMatchObject({ min: 2, want: 2, shared: false });
  });

  it("fails closed, the charge given back, after MAX_TRIES questions whose slices others spent", () => {
    let step: AdmitStep = plan(sliced(), req(), T, CTX);
    let asked = 0;
    while (!step.done && asked < 20) {
      asked++;
      const drained = { ...step.state, quotaSlice: { ...step.state.quotaSlice, lease: { ...step.state.quotaSlice.lease, remaining: 0 } } };
      step = resume(drained, step.pending, { kind: "quota", answer: quotaAnswer({ granted: 0 }) }, CTX);
    }
    const r = finished(step);
    expect(r.answer).toEqual({ status: "unconfirmed" });
    expect(asked).toBe(9);
    expect(r.state.windows.secondCount).toBe(0);
    expect(r.state.credits?.remaining).toBe(10);
    expect(r.state.hourly).toEqual({ hour: T, admitted: 0, refused: 0 });
  });

  it("an answer under a quota that changed meanwhile is owed back whole, and the charge decided under the new one", () => {
    const s = asks(plan(sliced(), req({ cost: 2 }), T, CTX), "quotaSlice");
    const answer = quotaAnswer({ granted: 5, paid: { day: DAYN, month: 7 } });
    // Now exact: the slice goes back with the take.
    const exact = asks(resume({ ...s.state, quota: { per_day: 1_000_000 } }, s.pending, { kind: "quota", answer }, CTX), "take");
    expect(exact.need).toMatchObject({ cost: 2, returned: [{ amount: 5, paid: qpaid }] });
    expect(exact.writes).toEqual([{ kind: "windows" }]);
    // Gone: allowed at once.
    const none = finished(resume({ ...s.state, quota: null }, s.pending, { kind: "quota", answer }, CTX));
    expect(activeOf(none.answer).decision.allowed).toBe(true);
    expect(none.state.quotaSlice.owed).toEqual([{ amount: 5, paid: qpaid }]);
    // A refusal under the old quota owes nothing.
    const refused = quotaAnswer({ allowed: false, exceeded: "org_second", granted: 0 });
    expect(finished(resume({ ...s.state, quota: null }, s.pending, { kind: "quota", answer: refused }, CTX)).state.quotaSlice.owed).toEqual(
      [],
    );
    // Each limit counts: a changed day or month is another quota.
    for (const changed of [
      { ...QUOTA, per_day: 7 },
      { ...QUOTA, per_month: 9 },
      { ...QUOTA, per_second: 6_000 },
    ]) {
      const r = resume({ ...s.state, quota: changed }, s.pending, { kind: "quota", answer }, CTX);
      expect(asks(r, "quotaSlice").need).toMatchObject({ returned: [{ amount: 5, paid: qpaid }], limits: changed });
    }
    // The same quota, as another object: not a change.
    const same = finished(resume({ ...s.state, quota: { ...QUOTA } }, s.pending, { kind: "quota", answer }, CTX));
    expect(same.state.quotaSlice.owed).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The home's grant

describe("the home grants a shard a slice", () => {
  const ask = (over: Record<string, unknown> = {}) => ({ now: T, defaults: DEFAULTS, min: 1, want: 5, ...over });
  const home = (over: Partial<AdmissionState> = {}) =>
    state({ hourly: { hour: T, admitted: 0, refused: 0 }, ...over }, { per_second: 3_000, per_day: 100_000 });
  const granted = (step: GrantStep) => {
    const g = finished(step).answer;
    if (g.status !== "granted") throw new Error(`expected granted, got ${g.status}`);
    return g;
  };

  it("only a key's home grants", () => {
    expect(finished(planGrant(EMPTY_ADMISSION, ask(), T, CTX.asking)).answer).toEqual({ status: "unavailable" });
    const shard = state({}, { shard_index: 1, shard_home: "h" });
    expect(finished(planGrant(shard, ask({ returned: [{ amount: 2, paid: NOTHING_PAID }] }), T, CTX.asking))).toMatchObject({
      answer: { status: "unavailable" },
      writes: [],
      state: shard,
    });
    expect(finished(planGrant(home({}), ask(), T, CTX.asking)).answer.status).toBe("granted");
    const revoked = state({}, { status: "revoked" });
    expect(finished(planGrant(revoked, ask(), T, CTX.asking)).answer).toEqual({ status: "unavailable" });
  });

  it("grants its want within the room left, never below the min, counted in the windows but not the hour", () => {
    const g = finished(planGrant(home(), ask({ want: 5 }), T, CTX.asking));
    expect(granted(g).granted).toBe(5);
    expect(granted(g).paid).toEqual({ day: DAYN, quotaDay: 0, month: 0, epoch: null, period: null });
    expect(g.state.windows).toMatchObject({ secondCount: 5, dayCount: 5 });
    expect(g.state.hourly).toEqual({ hour: T, admitted: 0, refused: 0 });
    expect(g.writes).toEqual([{ kind: "windows" }]);
    const tight = (over: Partial<AdmissionState>, min: number, want: number) =>
      granted(planGrant(home(over), ask({ min, want }), T, CTX.asking)).granted;
    // The second's room.
    expect(tight({ windows: { second: SEC, secondCount: 2_997, day: DAYN, dayCount: 2_997 } }, 1, 5)).toBe(3);
    // The day's room.
    expect(tight({ windows: { second: SEC, secondCount: 0, day: DAYN, dayCount: 99_996 } }, 1, 5)).toBe(4);
    // The credits' room, refilled first.
    expect(tight({ credits: credits(2) }, 1, 5)).toBe(2);
    expect(tight({ credits: credits(0, { refill: { amount: 4, interval: "day" }, nextRefillMs: T }) }, 1, 5)).toBe(4);
    // Never below the min: refused when the room is smaller.
    expect(finished(planGrant(home({ credits: credits(2) }), ask({ min: 3, want: 5 }), T, CTX.asking)).answer).toMatchObject({
      status: "refused",
      decision: { exceeded: "credits", cost: 3 },
    });
  });

  it("a shard of the previous release sends its request's cost instead of a min", () => {
    const legacy = { now: T, defaults: DEFAULTS, want: 1, cost: 4 } as unknown as Parameters<typeof planGrant>[1];
    expect(granted(planGrant(home(), legacy, T, CTX.asking)).granted).toBe(4);
    const bare = { now: T, defaults: DEFAULTS, want: 0 } as unknown as Parameters<typeof planGrant>[1];
    expect(granted(planGrant(home(), bare, T, CTX.asking)).granted).toBe(1);
  });

  it("takes back what the shard returned first, whatever the answer", () => {
    const paid: Paid = { day: DAYN, quotaDay: 0, month: 0, epoch: 1, period: null };
    const s = home({ windows: { second: SEC, secondCount: 0, day: DAYN, dayCount: 10 }, credits: credits(0) });
    const g = finished(planGrant(s, ask({ returned: [{ amount: 3, paid }] }), T, CTX.asking));
    expect(granted(g).granted).toBe(3);
    expect(g.state.windows.dayCount).toBe(10);
    expect(g.writes).toEqual([{ kind: "windows" }, { kind: "credits" }, { kind: "credits" }, { kind: "windows" }]);
  });

  it("asks the organization first when the copy's lease lapsed, and refuses when it does not confirm", () => {
    const paid: Paid = { day: DAYN, quotaDay: 0, month: 0, epoch: null, period: null };
    const s = asks(
      planGrant(
        home({ windows: { second: SEC, secondCount: 0, day: DAYN, dayCount: 3 } }),
        ask({ returned: [{ amount: 2, paid }] }),
        T + 10_001,
        CTX.asking,
      ),
      "confirm",
    );
    expect(s.state.windows.dayCount).toBe(1);
    expect(s.writes).toEqual([{ kind: "windows" }]);
    expect(s.pending).toEqual({ phase: "confirm", request: ask({ returned: [] }) });
    expect(finished(resumeGrant(s.state, s.pending, { kind: "failed" }, CTX.asking)).answer).toEqual({ status: "unavailable" });
    expect(granted(resumeGrant(s.state, s.pending, { kind: "confirmed" }, CTX.asking)).granted).toBe(5);
    expect(finished(planGrant(home(), ask(), T + 10_000, CTX.asking)).done).toBe(true);
  });

  it("a grant under an exact quota waits for the QuotaObject's take, and answers with what it said", () => {
    const s = asks(planGrant(home({ quota: { per_day: 100 } }), ask({ want: 5 }), T, CTX.asking), "take");
    expect(s.need).toMatchObject({ cost: 5 });
    const g = granted(
      resumeGrant(s.state, s.pending, { kind: "quota", answer: quotaAnswer({ granted: 5, paid: { day: DAYN, month: 7 } }) }, CTX.asking),
    );
    expect(g).toMatchObject({ granted: 5, paid: { day: DAYN, quotaDay: DAYN, month: 7 } });
    const refused = quotaAnswer({ allowed: false, exceeded: "org_day", granted: 0 });
    const r = finished(resumeGrant(s.state, s.pending, { kind: "quota", answer: refused }, CTX.asking));
    expect(r.answer).toMatchObject({ status: "refused", decision: { exceeded: "org_day" } });
    expect(r.state.windows.secondCount).toBe(0);
    expect(finished(resumeGrant(s.state, s.pending, { kind: "failed" }, CTX.asking)).answer).toEqual({ status: "unavailable" });
  });
});

// ---------------------------------------------------------------------------------------------
// What holders give back

describe("what holders give back", () => {
  const paid = (over: Partial<Paid> = {}): Paid => ({ day: DAYN, quotaDay: 0, month: 0, epoch: 1, period: null, ...over });

  it("takes back a return to the day and the balance it was paid from, if they are still those", () => {
    const s = state({ windows: { second: SEC, secondCount: 5, day: DAYN, dayCount: 10 }, credits: credits(2) });
    expect(takeBack(s, [])).toEqual({ state: s, writes: [] });
    expect(takeBack(s, [{ amount: 0, paid: paid() }])).toEqual({ state: s, writes: [] });
    const back = takeBack(s, [{ amount: 3, paid: paid() }]);
    expect(back.state.windows).toEqual({ second: SEC, secondCount: 5, day: DAYN, dayCount: 7 });
    expect(back.state.credits?.remaining).toBe(5);
    expect(back.writes).toEqual([{ kind: "windows" }, { kind: "credits" }]);
    // Another day, another epoch, another period, no balance: neither.
    const elsewhere = takeBack(s, [
      { amount: 3, paid: paid({ day: DAYN - 1, epoch: 2 }) },
      { amount: 1, paid: paid({ day: DAYN - 1, period: T }) },
      { amount: 1, paid: paid({ day: DAYN - 1, epoch: null }) },
    ]);
    expect(elsewhere.state.windows.dayCount).toBe(10);
    expect(elsewhere.state.credits).toBe(s.credits);
    expect(elsewhere.writes).toEqual([{ kind: "windows" }]);
    const noCredits = takeBack(state({ windows: s.windows }), [{ amount: 3, paid: paid() }]);
    expect(noCredits.state.credits).toBeNull();
    // Never below zero.
    expect(takeBack(s, [{ amount: 30, paid: paid() }]).state.windows.dayCount).toBe(0);
  });

  it("what a return was counted in the organization's quota becomes this object's to give back", () => {
    const owedBefore = [{ amount: 1, paid: { ...NOTHING_PAID, day: DAYN, quotaDay: DAYN, month: 7 } }];
    const s = state({ quotaSlice: { ...EMPTY_HOLDING, owed: owedBefore } });
    const back = takeBack(s, [
      { amount: 2, paid: paid({ quotaDay: DAYN, month: 7 }) },
      { amount: 4, paid: paid({ quotaDay: DAYN - 1, month: 6 }) },
      { amount: 8, paid: paid() },
    ]);
    expect(back.state.quotaSlice.owed).toEqual([
      { amount: 3, paid: { ...NOTHING_PAID, day: DAYN, quotaDay: DAYN, month: 7 } },
      { amount: 4, paid: { ...NOTHING_PAID, day: DAYN - 1, quotaDay: DAYN - 1, month: 6 } },
    ]);
  });

  it("a quiet holder hands back the rest of an ended second, and what it owes, once", () => {
    const p = paid();
    const lease = { second: SEC, remaining: 3, admitted: 1, previous: 0, paid: p };
    expect(settlement(state(), T)).toBeNull();
    const shard = state({ slice: { ...EMPTY_HOLDING, lease } }, { shard_home: "h", shard_index: 1 });
    // Its second has not ended: nothing due.
    expect(settlement(shard, T + 999)).toBeNull();
    const due = settlement(shard, T + 1_000);
    expect(due?.toHome).toEqual([{ amount: 3, paid: p }]);
    expect(due?.toQuota).toBeNull();
    expect(due?.state.slice.lease).toMatchObject({ second: SEC + 1, remaining: 0 });
    expect(due?.state.slice.owed).toEqual([]);
    expect(due?.state.quotaSlice).toBe(shard.quotaSlice);
    expect(due?.writes).toEqual([{ kind: "windows" }]);
    expect(settlement(due?.state as AdmissionState, T + 1_000)).toBeNull();
    // A home's slice is not its own to hand to a home.
    expect(settlement(state({ slice: { ...EMPTY_HOLDING, lease } }), T + 1_000)).toBeNull();
    const quota = state({ quotaSlice: { ...EMPTY_HOLDING, lease, owed: [{ amount: 2, paid: p }] } });
    const q = settlement(quota, T + 10);
    expect(q?.toQuota).toEqual([{ amount: 2, paid: p }]);
    expect(q?.toHome).toBeNull();
    expect(q?.state.slice).toBe(quota.slice);
    expect(q?.state.quotaSlice).toMatchObject({ owed: [], lease });
  });

  it("a holding read back after a restart owes back what its slice held, its view and refusal gone", () => {
    const p = paid();
    expect(restored({ second: SEC, remaining: 3, admitted: 1, previous: 2, paid: p }, [{ amount: 1, paid: p }])).toEqual({
      lease: { second: SEC, remaining: 0, admitted: 1, previous: 2, paid: p },
      owed: [{ amount: 4, paid: p }],
      view: null,
      refusal: null,
    });
    expect(restored(NO_LEASE, [])).toEqual(EMPTY_HOLDING);
  });
});

// ---------------------------------------------------------------------------------------------
// What the organization pushes

describe("a push", () => {
  const snap = (over: Partial<KeySnapshot> = {}): KeySnapshot => ({
    id: "key_1",
    organization_id: "org_1",
    status: "active",
    limits: {},
    version: 1,
    revision: 0,
    since: 0,
    revocations: [],
    ...over,
  });
  const p: Paid = { day: DAYN, quotaDay: 0, month: 0, epoch: null, period: null };
  const lease = { second: SEC, remaining: 3, admitted: 1, previous: 0, paid: p };

  it("a first push makes the copy, confirmed now, with its limits, secrets and shard", () => {
    const a = applySnapshot(
      EMPTY_ADMISSION,
      snap({
        limits: { per_second: 2_500, per_day: 9 },
        version: 3,
        revision: 4,
        secrets: { current: "c", previous: "p", previous_until_ms: T + 5 },
      }),
      undefined,
      T,
    );
    expect(a.state.key).toEqual(
      copy({
        per_second: 2_500,
        per_day: 9,
        version: 3,
        revision: 4,
        secret_hash: "c",
        previous_hash: "p",
        previous_until_ms: T + 5,
        shard_high: 3,
      }),
    );
    expect(a.state.confirmedAt).toBe(T);
    expect(a.ack).toEqual({ version: 3, revision: 4 });
    expect(a.dropped).toBe(false);
    expect(a.credits).toBe(false);
    const shard = applySnapshot(EMPTY_ADMISSION, snap({ limits: { per_second: 2_500 } }), { home: "h", index: 2 }, T);
    expect(shard.state.key).toMatchObject({ shard_home: "h", shard_index: 2, shard_high: 0 });
    expect(applySnapshot(EMPTY_ADMISSION, snap({ status: "revoked" }), undefined, T).state.key?.status).toBe("revoked");
  });

  it("a newer version replaces the limits, status and secrets, and drops the slices held (their rest owed back)", () => {
    const s = state(
      { slice: { ...EMPTY_HOLDING, lease, refusal: { answer: {} as never, until: T + 1, cost: 1 } } },
      { per_second: 5, secret_hash: "old", shard_high: 4 },
    );
    const a = applySnapshot(s, snap({ version: 2, status: "revoked", limits: { per_day: 7 } }), undefined, T + 5);
    expect(a.state.key).toMatchObject({ status: "revoked", per_second: null, per_day: 7, version: 2, secret_hash: "old", shard_high: 4 });
    expect(a.state.slice).toEqual({ lease: { ...lease, remaining: 0 }, owed: [{ amount: 3, paid: p }], view: null, refusal: null });
    expect(a.dropped).toBe(true);
    expect(a.state.confirmedAt).toBe(T + 5);
    // Nothing held: nothing dropped.
    expect(applySnapshot(state(), snap({ version: 2 }), undefined, T).dropped).toBe(false);
  });

  it("the same or an older version changes nothing of the key, but its refusals are forgotten", () => {
    const s = state(
      { slice: { ...EMPTY_HOLDING, lease, refusal: { answer: {} as never, until: T + 1, cost: 1 } } },
      { version: 3, per_second: 5 },
    );
    const same = applySnapshot(s, snap({ version: 3, limits: { per_second: 9 } }), undefined, T + 5);
    expect(same.state.key).toEqual(s.key);
    expect(same.state.slice).toEqual({ ...s.slice, refusal: null });
    expect(same.dropped).toBe(false);
    expect(same.state.confirmedAt).toBe(T + 5);
    const older = applySnapshot(s, snap({ version: 2, limits: { per_second: 9 } }), undefined, T + 5);
    expect(older.state.key).toEqual(s.key);
    // A late push says nothing of the present: the lease is not renewed.
    expect(older.state.confirmedAt).toBe(T);
    expect(older.ack).toEqual({ version: 3, revision: 0 });
  });

  it("revisions advance only over revocations the copy has all of", () => {
    const s = state({}, { revision: 5 });
    const cases: [number | undefined, number, number, boolean][] = [
      [5, 8, 8, false],
      [3, 8, 8, false],
      [0, 8, 8, false],
      [6, 8, 5, true],
      [undefined, 8, 8, false],
      [0, 4, 5, false],
    ];
    for (const [since, revision, kept, behind] of cases) {
      const a = applySnapshot(s, snap({ since, revision, revocations: [{ client_id: "c", revision }] }), undefined, T + 5);
      expect([since, revision, a.state.key?.revision, a.ack.behind === true]).toEqual([since, revision, kept, behind]);
      expect(a.revocations).toEqual([{ client_id: "c", revision }]);
      // A copy behind serves nothing before it asks: its lease counts as lapsed.
      if (behind) expect(a.state.confirmedAt).toBe(0);
    }
    // A push of an older revision does not renew the lease.
    expect(applySnapshot(s, snap({ revision: 4 }), undefined, T + 5).state.confirmedAt).toBe(T);
    expect(applySnapshot(s, snap({ revision: 5 }), undefined, T + 5).state.confirmedAt).toBe(T + 5);
  });

  it("a home's high-water mark of shards only rises; a shard keeps none", () => {
    const high = (before: number | null, per_second: number, shard?: { home: string; index: number }) =>
      applySnapshot(state({}, { shard_high: before, per_second: 1 }), snap({ version: 2, limits: { per_second } }), shard, T).state.key
        ?.shard_high;
    expect(high(0, 3_000)).toBe(3);
    expect(high(5, 3_000)).toBe(5);
    expect(high(null, 3_000)).toBeNull();
    expect(high(2, 3_000, { home: "h", index: 1 })).toBe(2);
  });

  it("the quota of the newest revision replaces the one held, and drops its slice", () => {
    const s = state({ quota: { per_day: 5 }, quotaSlice: { ...EMPTY_HOLDING, lease } }, { revision: 3 });
    const changed = applySnapshot(s, snap({ revision: 3, quota: { per_day: 6 } }), undefined, T);
    expect(changed.state.quota).toEqual({ per_day: 6 });
    expect(changed.state.quotaSlice).toMatchObject({ lease: { remaining: 0 }, owed: [{ amount: 3, paid: p }] });
    expect(changed.dropped).toBe(true);
    const removed = applySnapshot(s, snap({ revision: 4, quota: null }), undefined, T);
    expect(removed.state.quota).toBeNull();
    const same = applySnapshot(s, snap({ revision: 4, quota: { per_day: 5 } }), undefined, T);
    expect(same.state.quota).toBe(s.quota);
    expect(same.state.quotaSlice.lease).toBe(lease);
    expect(same.dropped).toBe(false);
    const late = applySnapshot(s, snap({ revision: 2, quota: { per_day: 6 } }), undefined, T);
    expect(late.state.quota).toBe(s.quota);
    const silent = applySnapshot(s, snap({ revision: 4 }), undefined, T);
    expect(silent.state.quota).toBe(s.quota);
    // A changed quota with nothing held drops nothing.
    expect(applySnapshot(state({ quota: { per_day: 5 } }), snap({ quota: { per_day: 6 } }), undefined, T).dropped).toBe(false);
    // Dropped stays true when the key's slices were dropped and the quota's held nothing.
    const both = applySnapshot(
      state({ quota: { per_day: 5 }, slice: { ...EMPTY_HOLDING, lease } }),
      snap({ version: 2, quota: { per_day: 6 } }),
      undefined,
      T,
    );
    expect(both.dropped).toBe(true);
  });

  it("credits are applied from a push of the same version or newer, not from an older one", () => {
    const s = state({ credits: credits(4, { epoch: 1 }) }, { version: 3 });
    const given = { base: 10, epoch: 2, added: 0, refill: null };
    expect(applySnapshot(s, snap({ version: 3, credits: given }), undefined, T)).toMatchObject({
      credits: true,
      state: { credits: { remaining: 10 } },
    });
    expect(applySnapshot(s, snap({ version: 2, credits: given }), undefined, T)).toMatchObject({
      credits: false,
      state: { credits: s.credits },
    });
    expect(applySnapshot(s, snap({ version: 4, credits: null }), undefined, T)).toMatchObject({ credits: true, state: { credits: null } });
    expect(applySnapshot(s, snap({ version: 4 }), undefined, T)).toMatchObject({ credits: false, state: { credits: s.credits } });
    expect(applySnapshot(EMPTY_ADMISSION, snap({ credits: given }), undefined, T).state.credits?.remaining).toBe(10);
  });
});

// ---------------------------------------------------------------------------------------------
// The loop

describe("drive: persist, perform, resume", () => {
  it("answers a first step that is done at once, after persisting it", () => {
    const persisted: Write[][] = [];
    const first = plan(state(), req(), T, CTX);
    const answer = drive(first, {
      state: () => first.state,
      persist: (_s, w) => persisted.push(w),
      perform: () => Promise.reject(new Error("no call")),
      resume: () => {
        throw new Error("no resume");
      },
    });
    expect(answer instanceof Promise).toBe(false);
    expect(activeOf(answer as Admission).decision.allowed).toBe(true);
    expect(persisted).toEqual([[{ kind: "windows" }]]);
  });

  it("performs each need, resumes from the object's state as it is then, until an answer", async () => {
    let current = state({}, { per_second: 2_500 });
    const log: string[] = [];
    const answer = await drive(plan(current, req(), T, CTX), {
      state: () => current,
      persist: (s, w) => {
        current = s;
        log.push(`persist ${w.length}`);
      },
      perform: async (need) => {
        log.push(`perform ${need.kind}`);
        return { kind: "failed" };
      },
      resume: (s, pending, a) => resume(s, pending, a, CTX),
    });
    expect(activeOf(answer).shards).toBe(3);
    expect(log).toEqual(["persist 0", "perform shard", "persist 1"]);
    // Two calls: a confirmation, then a quota's take.
    current = state({ confirmedAt: 0, quota: { per_day: 9 } });
    log.length = 0;
    const two = await drive(plan(current, req(), T + 20_000, CTX), {
      state: () => current,
      persist: (s, w) => {
        current = s;
        log.push(`persist ${w.length}`);
      },
      perform: async (need): Promise<Answer> => {
        log.push(`perform ${need.kind}`);
        return need.kind === "confirm" ? { kind: "confirmed" } : { kind: "quota", answer: quotaAnswer() };
      },
      resume: (s, pending, a) => resume(s, pending, a, CTX),
    });
    expect(activeOf(two).decision.allowed).toBe(true);
    expect(log).toEqual(["persist 0", "perform confirm", "persist 1", "perform take", "persist 0"]);
  });
});

// ---------------------------------------------------------------------------------------------
// The edges of those rules

describe("edges: what each step writes, and what it leaves", () => {
  const p: Paid = { day: DAYN, quotaDay: 0, month: 0, epoch: null, period: null };
  const SHARD = { per_second: 3_000, shard_home: "home", shard_index: 2 };
  const viewDecision = activeOf(answerOf(plan(state(), req(), T, CTX))).decision;
  const grant = { status: "granted" as const, granted: 5, decision: viewDecision, paid: p };

  it("an answer without a charge writes nothing", () => {
    expect(finished(plan(EMPTY_ADMISSION, req(), T, CTX)).writes).toEqual([]);
    expect(finished(plan(EMPTY_ADMISSION, req({ shard: 1 }), T, CTX)).writes).toEqual([]);
    expect(finished(plan(state({}, { ...SHARD, shard_index: 4 }), req(), T, CTX)).writes).toEqual([]);
    const c = asks(plan(state(), req(), T + 20_000, CTX), "confirm");
    expect(finished(resume(c.state, c.pending, { kind: "failed" }, CTX)).writes).toEqual([]);
  });

  it("a request decided again after its key was erased is unknown, without asking anything", () => {
    const s = asks(plan(state({}, SHARD), req(), T, ctx({ home: true })), "wait");
    expect(finished(resume(EMPTY_ADMISSION, s.pending, { kind: "waited" }, CTX))).toMatchObject({
      answer: { status: "unknown" },
      writes: [],
    });
  });

  it("decided again after a wait, a key revoked meanwhile is refused with nothing written; after a stale grant, the rest owed is written", () => {
    const s = asks(plan(state({}, SHARD), req(), T, ctx({ home: true })), "wait");
    const revoked = { ...s.state, key: { ...(s.state.key as KeyCopy), status: "revoked" as const } };
    expect(finished(resume(revoked, s.pending, { kind: "waited" }, CTX))).toMatchObject({ answer: { status: "revoked" }, writes: [] });
    const g = asks(plan(state({}, SHARD), req(), T, CTX), "grant");
    const pushed = { ...g.state, key: { ...(g.state.key as KeyCopy), version: 2, status: "revoked" as const } };
    const r = finished(resume(pushed, g.pending, { kind: "grant", grant }, CTX));
    expect(r.answer).toMatchObject({ status: "revoked" });
    expect(r.writes).toEqual([{ kind: "windows" }]);
    expect(r.state.slice.owed).toEqual([{ amount: 5, paid: p }]);
  });

  it("a shard that fails closed after MAX_TRIES keeps its state, writing the windows row", () => {
    let step: AdmitStep = asks(plan(state({}, SHARD), req(), T, CTX), "grant");
    while (!step.done) {
      const drained = { ...step.state, slice: { ...step.state.slice, lease: { ...step.state.slice.lease, remaining: 0 } } };
      step = resume(drained, step.pending, { kind: "grant", grant: { ...grant, granted: 0 } }, CTX);
    }
    expect(step.state.key).toEqual(copy(SHARD));
    expect(step.state.hourly).toEqual({ hour: T, admitted: 0, refused: 0 });
  });

  it("a quota slice without its view (read back after a restart) is not spent: the key asks", () => {
    const qpaid: Paid = { ...NOTHING_PAID, day: DAYN, quotaDay: DAYN, month: 7 };
    const lease = { second: SEC, remaining: 5, admitted: 0, previous: 0, paid: qpaid };
    asks(plan(state({ quota: { per_second: 5_000 }, quotaSlice: { ...EMPTY_HOLDING, lease } }), req(), T, CTX), "quotaSlice");
  });

  it("answers under a quota that keeps changing count as tries: the fourth question is exact", () => {
    let step: AdmitStep = plan(state({ quota: { per_second: 5_000 } }), req({ cost: 2 }), T, CTX);
    const shared: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const s = asks(step, "quotaSlice");
      if (s.need.kind === "quotaSlice") shared.push(s.need.shared);
      step = resume(
        { ...s.state, quota: { per_second: 5_001 + i } },
        s.pending,
        { kind: "quota", answer: quotaAnswer({ granted: 3 }) },
        CTX,
      );
    }
    expect(shared).toEqual([true, true, true, false]);
  });

  it("a sliced quota's refusal gives the charge back: the windows row and the credits row", () => {
    const s = asks(plan(state({ quota: { per_second: 5_000 }, credits: credits(4) }), req(), T, CTX), "quotaSlice");
    const r = finished(
      resume(s.state, s.pending, { kind: "quota", answer: quotaAnswer({ allowed: false, exceeded: "org_second", granted: 0 }) }, CTX),
    );
    expect(r.writes).toEqual([{ kind: "windows" }, { kind: "credits" }]);
  });

  it("giving back leaves what other requests counted: the windows and the hour keep theirs", () => {
    const before = { windows: { second: SEC, secondCount: 3, day: DAYN, dayCount: 3 }, hourly: { hour: T, admitted: 3, refused: 0 } };
    const s = asks(plan(state({ ...before, quota: { per_day: 100 } }), req({ cost: 2 }), T, CTX), "take");
    const r = finished(
      resume(s.state, s.pending, { kind: "quota", answer: quotaAnswer({ allowed: false, exceeded: "org_day", granted: 0 }) }, CTX),
    );
    expect(r.state.windows).toEqual(before.windows);
    expect(r.state.hourly).toEqual({ hour: T, admitted: 3, refused: 1 });
  });

  it("gives back to no balance that was not spent: credits that came or went while the quota was asked", () => {
    const s = asks(plan(state({ quota: { per_day: 100 } }), req({ cost: 2 }), T, CTX), "take");
    const arrived = finished(resume({ ...s.state, credits: credits(7) }, s.pending, { kind: "failed" }, CTX));
    expect(arrived.state.credits).toEqual(credits(7));
    expect(arrived.writes).toEqual([{ kind: "windows" }]);
    const c = asks(plan(state({ quota: { per_day: 100 }, credits: credits(7) }), req({ cost: 2 }), T, CTX), "take");
    const gone = finished(resume({ ...c.state, credits: null }, c.pending, { kind: "failed" }, CTX));
    expect(gone.state.credits).toBeNull();
    expect(gone.writes).toEqual([{ kind: "windows" }]);
  });

  it("a slice is paid from the credits' period: a refilling balance's boundary goes with it", () => {
    const refill = { amount: 100, interval: "day" as const };
    const home = state({ credits: credits(50, { refill, nextRefillMs: (DAYN + 1) * DAY }) }, { per_second: 3_000 });
    const g = finished(planGrant(home, { now: T, defaults: DEFAULTS, min: 1, want: 5 }, T, CTX.asking)).answer;
    expect(g).toMatchObject({ status: "granted", paid: { epoch: 1, period: (DAYN + 1) * DAY } });
  });

  it("a grant refused or given back counts nothing in the hour: the shard counts its own requests", () => {
    const hourly = { hour: T, admitted: 2, refused: 1 };
    const refused = finished(
      planGrant(state({ hourly, credits: credits(0) }), { now: T, defaults: DEFAULTS, min: 1, want: 5 }, T, CTX.asking),
    );
    expect(refused.answer.status).toBe("refused");
    expect(refused.state.hourly).toBe(hourly);
    expect(refused.writes).toEqual([]);
    const s = asks(
      planGrant(state({ hourly, quota: { per_day: 100 } }), { now: T, defaults: DEFAULTS, min: 1, want: 5 }, T, CTX.asking),
      "take",
    );
    expect(s.pending.phase).toBe("charge");
    const back = finished(
      resumeGrant(
        s.state,
        s.pending,
        { kind: "quota", answer: quotaAnswer({ allowed: false, exceeded: "org_day", granted: 0 }) },
        CTX.asking,
      ),
    );
    expect(back.state.hourly).toEqual(hourly);
    expect(back.writes).toEqual([{ kind: "windows" }]);
  });

  it("a grant confirmed for a key erased meanwhile is unavailable; a confirmed one writes only its charge", () => {
    const s = asks(planGrant(state(), { now: T, defaults: DEFAULTS, min: 1, want: 5 }, T + 20_000, CTX.asking), "confirm");
    expect(finished(resumeGrant(EMPTY_ADMISSION, s.pending, { kind: "confirmed" }, CTX.asking)).answer).toEqual({ status: "unavailable" });
    expect(finished(resumeGrant(s.state, s.pending, { kind: "failed" }, CTX.asking)).writes).toEqual([]);
    expect(finished(resumeGrant(s.state, s.pending, { kind: "confirmed" }, CTX.asking)).writes).toEqual([{ kind: "windows" }]);
  });

  it("an object without a key settles nothing", () => {
    expect(settlement(EMPTY_ADMISSION, T)).toBeNull();
  });
});
