/**
 * Admission as one decision (issue 41): every rule that admits, charges, refuses or revokes a
 * request of an API key, as pure functions of plain data, sans I/O. The key's Durable Object
 * (objects/key.ts) loads the state, asks `plan` what to do, performs the one call a step names
 * (`need`), hands the answer to `resume`, and persists the step's writes; `drive` is that loop.
 * A reader follows one request's decision here, in one file, from the key's identity to the last
 * window; the object is storage and calls.
 *
 * Three sides of one key, all in this module:
 * - **A request** (`plan` / `resume`): the key's copy must be confirmed (KEY_LEASE_MS), the secret
 *   one the key answers to, the key active; a shard past its key's count sends the edge home; the
 *   home of a sharded key hands an edge's first request to a shard; a shard pays from its slice
 *   (asking its home for one, `grant`); the home, or a key within one object, charges exactly
 *   (`charge`: windows, then credits, then the organization's quota, exact or sliced).
 * - **The home's grant** (`planGrant` / `resumeGrant`): a shard's question for a slice, decided as
 *   one charge of the slice's size, after giving back what the shard returned.
 * - **What the organization pushes** (`applySnapshot`): versions and revisions only move forward;
 *   revocations only add; a snapshot's revocations advance a copy's revision only if they start at
 *   or before it (`since`), else the copy says it is behind and is sent the whole set; a changed
 *   key (limits, credits, status) drops the slices held, whose rest is owed back.
 *
 * Writes of a step that needs a call (the provisional windows and credits) are persisted before
 * the call, so concurrent requests of the key, which run while it is out, see them; a refusal or a
 * failure of the call gives them back (`givenBack`). What is owed back to a coordinator is cleared
 * in the state of the step whose call carries it: at most once (ratelimit/lease.ts).
 */
import { digestsEqual } from "../lib/crypto";
import { DAY_MS, hourOf } from "../lib/series";
import type { KeyCredits, LimitOverrides, Limits, OrgQuota } from "../schemas/records";
import { MAX_KEY_PER_SECOND, QUOTA_EXACT_PER_SECOND, SINGLE_OBJECT_PER_SECOND } from "../schemas/records";
import { type CreditsState, nextBoundary, refilled, spend } from "./credits";
import {
  currentLease,
  dropLease,
  type Lease,
  NO_LEASE,
  NOTHING_PAID,
  type Owed,
  owedAmount,
  oweMore,
  type Paid,
  receiveLease,
  spendLease,
  wantFor,
} from "./lease";
import type { QuotaDecision, QuotaTaken } from "./quota";
import { admit, type Decision, EMPTY_STATE, peek, type WindowState } from "./windows";

export type { Owed, Paid };

// ---------------------------------------------------------------------------------------------
// Capacity (docs/storage.md, "Limits past one object")

/** What one object serves (about 1,000 short calls/s): a key allowed more is served by shards. */
export const SHARD_CAPACITY = SINGLE_OBJECT_PER_SECOND;
/** The most shards a key can have (at MAX_KEY_PER_SECOND): erasure reaches this many when a key's high-water mark is unknown. */
export const MAX_SHARDS = Math.ceil(MAX_KEY_PER_SECOND / SHARD_CAPACITY);
/** The most a shard asks its home for at once: the home is asked about rate / KEY_SLICE_CAP times a second. */
export const KEY_SLICE_CAP = 50;
/**
 * The most a key's object asks its organization's QuotaObject for at once, for a quota past
 * QUOTA_EXACT_PER_SECOND: at the ceiling the QuotaObject is asked about 10,000 / 20 = 500 times a
 * second, and each active key holds at most this much unspent.
 */
export const QUOTA_SLICE_CAP = 20;
/**
 * How long the copy is trusted without word from the organization: the bound on a missed push.
 * At most one extra call per key per lease, and only for a key in use.
 */
export const KEY_LEASE_MS = 10_000;
/** How many times a request tries a shared question before it asks for exactly itself. */
const SHARED_TRIES = 3;
/**
 * How many questions one request may ask before it fails closed (503, retry): an exact question's
 * answer is spent at once, so only pushes that keep changing the key or the quota while it asks
 * (each sends its answer back and the request asks again) reach this.
 */
const MAX_TRIES = 8;

/** How many shards serve a key allowed `perSecond` requests a second (0: its home object alone). */
export function shardsFor(perSecond: number): number {
  return perSecond > SHARD_CAPACITY ? Math.ceil(perSecond / SHARD_CAPACITY) : 0;
}

// ---------------------------------------------------------------------------------------------
// The state

/** The key's identity copy, as its object stores it (table `key`). */
export interface KeyCopy {
  id: string;
  organization_id: string;
  status: "active" | "revoked";
  per_second: number | null;
  per_day: number | null;
  version: number;
  /** The organization's revision whose revocations this copy holds, all of them. */
  revision: number;
  secret_hash: string | null;
  previous_hash: string | null;
  previous_until_ms: number | null;
  /** A shard's home object (its id) and index; null for a key's home object. */
  shard_home: string | null;
  shard_index: number | null;
  /** The most shards a home has ever had (erasure and traffic reach them all); null: unknown (a copy older than issue 41). */
  shard_high: number | null;
}

/** The current hour's requests, admitted and refused by the limits (the live row of the traffic charts). */
export interface HourCounts {
  hour: number;
  admitted: number;
  refused: number;
}

export const NO_HOUR: HourCounts = { hour: 0, admitted: 0, refused: 0 };

/** How long the hourly traffic counts are kept: the 30 days the charts show, and one to spare. */
export const TRAFFIC_DAYS = 31;

/** The key's credits as its object holds them: the live balance, and the epoch and top-ups applied. */
export type KeyCreditsState = CreditsState & { epoch: number; added: number };

/** A slice held (ratelimit/lease.ts), what is owed back, and the coordinator's last word on it. */
export interface Holding<V> {
  lease: Lease;
  owed: Owed[];
  /** What the coordinator answered with the slice: what a request paid from it reports (memory only). */
  view: V | null;
  /**
   * The coordinator's last refusal, of a charge of `cost`, repeated without asking to charges that
   * cost as much or more until the end of its second (memory only): the refusing window may be a
   * day or a month, but what slices return can free room in it, so a holder refused asks again
   * at most once a second.
   */
  refusal: { answer: V; until: number; cost: number } | null;
}

export const EMPTY_HOLDING: Holding<never> = { lease: NO_LEASE, owed: [], view: null, refusal: null };

export interface AdmissionState {
  key: KeyCopy | null;
  /** The exact windows (a home, or a key within one object). */
  windows: WindowState;
  hourly: HourCounts;
  credits: KeyCreditsState | null;
  /** The organization's shared quota as of the key's revision; null: none, and no quota call. */
  quota: OrgQuota | null;
  /** When the organization last confirmed the copy, by the object's clock (memory: 0 after a restart). */
  confirmedAt: number;
  /** A shard's slice of its key's second (its home grants it). */
  slice: Holding<Decision>;
  /**
   * A key's slice of its organization's quota second (a quota past QUOTA_EXACT_PER_SECOND), and,
   * for any quota, what is owed back to the QuotaObject (the rest of this object's slices and of
   * the slices its shards returned), carried by its next question.
   */
  quotaSlice: Holding<QuotaDecision>;
}

export const EMPTY_ADMISSION: AdmissionState = {
  key: null,
  windows: EMPTY_STATE,
  hourly: NO_HOUR,
  credits: null,
  quota: null,
  confirmedAt: 0,
  slice: EMPTY_HOLDING,
  quotaSlice: EMPTY_HOLDING,
};

// ---------------------------------------------------------------------------------------------
// Requests, answers and steps

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
  /** The shard of a sharded key the edge sent this to (1..n); absent: the key's home object. */
  shard?: number | undefined;
  /**
   * A DPoP proof's id, sent only by the gate of the release before issue 41 (it recorded proofs in
   * the key's object); the object records it at its ProofObject and answers `proofReplayed`.
   * Removable once no Worker of that release runs.
   */
  proof?: { jti: string; expiresMs: number } | undefined;
}

/** What the object's revocation tables say of the credential and tokens a request presents. */
export interface Facts {
  clientRevoked: boolean;
  /** The credential changed after the KV copy the edge read (`clientVersion`). */
  clientStale: boolean;
  tokenRevoked: boolean;
  inspectedTokenRevoked: boolean;
}

export type Admission =
  | { status: "unknown" }
  /** A shard that is not (or no longer) one of its key's: ask the key's home object. */
  | { status: "home" }
  | { status: "revoked"; keyId: string; organizationId: string }
  /** The copy's lease has lapsed and the organization could not confirm it, or a coordinator did not answer: fail closed. */
  | { status: "unconfirmed" }
  | ({
      status: "active";
      keyId: string;
      organizationId: string;
      decision: Decision;
      /** How many shards serve the key (absent: its home object alone), for the edge to spread its requests. */
      shards?: number;
      /** For the previous release's gate only (AdmitInput.proof). */
      proofReplayed?: boolean;
    } & Facts);

/** A shard's question to its key's home object: a slice of the current second's budget, and what it gives back. */
export interface GrantRequest {
  now: number;
  defaults: Limits;
  /** The least the slice may be (what the asking request lacks); a shard of the previous release sends `cost` instead. */
  min: number;
  /** What the shard would like (its rate, at most KEY_SLICE_CAP). */
  want: number;
  /** The unspent rest of the shard's earlier slices, by what each was paid from (absent from a shard of the previous release). */
  returned?: Owed[];
}

export type Grant =
  | { status: "granted"; granted: number; decision: Decision; paid: Paid }
  | { status: "refused"; decision: Decision }
  | { status: "unavailable" };

/** What the QuotaObject answers a take or a slice: its decision, the size granted and what it was counted in. */
export type QuotaAnswer = QuotaTaken;

/** What is in flight at the object now: a second request does not ask what another is already asking. */
export interface Asking {
  home: boolean;
  quota: boolean;
}

/**
 * What a step reads besides the state: the calls in flight, and the revocation tables' word on
 * what the request presents, read when the copy is confirmed (after a confirmation applied what the
 * organization said, never before).
 */
export interface Context {
  asking: Asking;
  facts: () => Facts;
}

/** The one call a step needs; the object performs it and resumes with its answer. */
export type Need =
  /** Ask the organization for what the copy lacks (its lease lapsed). */
  | { kind: "confirm" }
  /** The home of a sharded key hands the request to one of its `count` shards. */
  | { kind: "shard"; count: number }
  /** A shard asks its home for a slice; `shared`: requests arriving meanwhile wait for this answer. */
  | { kind: "grant"; request: GrantRequest; shared: boolean }
  /** An exact quota: take `cost` from the organization's QuotaObject. */
  | { kind: "take"; limits: OrgQuota; now: number; cost: number; returned: Owed[] }
  /** A quota past QUOTA_EXACT_PER_SECOND: a slice of it. */
  | { kind: "quotaSlice"; limits: OrgQuota; now: number; min: number; want: number; returned: Owed[]; shared: boolean }
  /** Another request's shared question is out: wait for it, then try the slice again. */
  | { kind: "wait"; on: "home" | "quota" };

export type Answer =
  | { kind: "confirmed" }
  | { kind: "failed" }
  | { kind: "shard"; admission: Admission }
  | { kind: "grant"; grant: Grant }
  | { kind: "quota"; answer: QuotaAnswer }
  | { kind: "waited" };

/** What the object persists after a step, from the step's state (one upsert each), plus the finished hour of traffic. */
export type Write =
  /** The row holding the windows, the hour's counts and the slices held and owed. */
  | { kind: "windows" }
  | { kind: "credits" }
  /** Counts added to a finished hour's row of the traffic charts (negative: a request counted there that the quota then refused). */
  | { kind: "traffic"; hour: number; admitted: number; refused: number }
  /** Hours past TRAFFIC_DAYS deleted. */
  | { kind: "trafficPrune"; before: number };

export type Step<A, P> =
  | { done: true; state: AdmissionState; writes: Write[]; answer: A }
  | { done: false; state: AdmissionState; writes: Write[]; need: Need; pending: P };

/** How the object runs a request through the core: the one loop (persist, perform, resume). */
export interface Driver<P> {
  state(): AdmissionState;
  /** Persists the step's writes, then takes its state as the object's. */
  persist(state: AdmissionState, writes: Write[]): void;
  perform(need: Need): Promise<Answer>;
  resume(state: AdmissionState, pending: P, answer: Answer): Step<unknown, P>;
}

/**
 * Runs a step to its answer: persist what it wrote, perform the call it needs, resume with the
 * answer. A first step that is already the answer (the hot path of a key within one object) is
 * answered at once, without a promise.
 */
export function drive<A, P>(first: Step<A, P>, io: Driver<P>): A | Promise<A> {
  io.persist(first.state, first.writes);
  if (first.done) return first.answer;
  return driveOn(first, io) as Promise<A>;
}

async function driveOn<P>(first: Extract<Step<unknown, P>, { done: false }>, io: Driver<P>): Promise<unknown> {
  // The answer first, then the state: the call may have changed it (a confirmation applies a push),
  // and so may the requests that ran while it was out.
  const answer = await io.perform(first.need);
  let step: Step<unknown, P> = io.resume(io.state(), first.pending, answer);
  for (;;) {
    io.persist(step.state, step.writes);
    if (step.done) return step.answer;
    const answer = await io.perform(step.need);
    step = io.resume(io.state(), step.pending, answer);
  }
}

// ---------------------------------------------------------------------------------------------
// Small rules

/** The key's limits; a per-second limit stored before the ceiling is served at MAX_KEY_PER_SECOND. */
export function limitsOf(key: KeyCopy | null, defaults: Limits): Limits {
  const perSecond = key?.per_second ?? defaults.per_second;
  return { per_second: Math.min(perSecond, MAX_KEY_PER_SECOND), per_day: key?.per_day ?? defaults.per_day };
}

/**
 * Whether the presented secret is one the key answers to now: the current one, or the one a
 * rotation replaced, until its grace ends (compared in constant time). A key never rotated, or
 * told by an organization object of an earlier release, has no hashes: the object's name is the
 * hash of its only secret, so reaching it was the check (a rotated secret carries the object's id
 * instead, and is never accepted without the hashes).
 */
export function answersTo(key: KeyCopy, secretHash: string | undefined, routed: boolean, now: number): boolean {
  if (key.secret_hash === null || secretHash === undefined) return !routed;
  if (digestsEqual(secretHash, key.secret_hash)) return true;
  return key.previous_hash !== null && (key.previous_until_ms ?? 0) > now && digestsEqual(secretHash, key.previous_hash);
}

/**
 * The organization's quota as it is counted: its `per_second` at QUOTA_EXACT_PER_SECOND when not
 * set, since all of its keys' requests then pass through its one QuotaObject, which must not be
 * asked more than it serves (an accepted quota never turns into 503s under load).
 */
export function quotaLimits(quota: OrgQuota | null): OrgQuota | null {
  return quota === null ? null : { ...quota, per_second: quota.per_second ?? QUOTA_EXACT_PER_SECOND };
}

/** The decision with the key's credits (as they stand) attached. */
export function withCredits(decision: Decision, credits: KeyCreditsState | null, now: number): Decision {
  if (credits === null) return decision;
  const c = refilled(credits, now);
  return { ...decision, credits: { remaining: c.remaining, refill: c.refill, nextRefillAt: c.nextRefillMs } };
}

/**
 * The hour's counts with one more request `as` admitted or refused by the limits (the traffic
 * charts). When a new hour begins, the finished hour goes to its row and rows past TRAFFIC_DAYS
 * are deleted: two writes once an hour. A request stamped before the live hour (another isolate's
 * clock at the boundary) is added to its own hour's row directly.
 */
function tally(s: AdmissionState, now: number, as: "admitted" | "refused", writes: Write[]): HourCounts {
  const hour = hourOf(now);
  const current = s.hourly;
  const one = { admitted: as === "admitted" ? 1 : 0, refused: as === "refused" ? 1 : 0 };
  if (hour < current.hour) {
    writes.push({ kind: "traffic", hour, ...one });
    return current;
  }
  const base = hour === current.hour ? current : { hour, admitted: 0, refused: 0 };
  if (hour > current.hour && current.hour > 0) {
    if (current.admitted + current.refused > 0)
      writes.push({ kind: "traffic", hour: current.hour, admitted: current.admitted, refused: current.refused });
    writes.push({ kind: "trafficPrune", before: hour - TRAFFIC_DAYS * DAY_MS });
  }
  return { hour, admitted: base.admitted + one.admitted, refused: base.refused + one.refused };
}

const done = <A, P>(state: AdmissionState, writes: Write[], answer: A): Step<A, P> => ({ done: true, state, writes, answer });
const needs = <A, P>(state: AdmissionState, writes: Write[], need: Need, pending: P): Step<A, P> => ({
  done: false,
  state,
  writes,
  need,
  pending,
});

// ---------------------------------------------------------------------------------------------
// Charging exactly: the home of a key, or a key within one object

/** What a charge counted provisionally, to give it back if the quota refuses or does not answer. */
interface Counted {
  size: number;
  /** Whether the charge is a request (counted in its hour) or a slice (its shard counts its requests). */
  tallied: boolean;
  /** The hour the request was counted in (its stamp's): a refusal moves it there, even after the hour rolled. */
  hour: number;
  windows: { second: number; day: number };
  spentFrom: { epoch: number; period: number | null } | null;
  now: number;
  limits: Limits;
  /** What the key's windows said of the charge (the answer's usage once the quota admits it). */
  decision: Decision;
  /**
   * The quota it was charged under, and how: its answer is read by what was asked, whatever the
   * quota became meanwhile (a slice granted and then dropped would be counted and never returned).
   */
  quota: OrgQuota;
  exact: boolean;
  /** How many times a quota question was tried. */
  tries: number;
}

type Charged = { kind: "allowed"; decision: Decision; paid: Paid } | { kind: "refused"; decision: Decision } | { kind: "unconfirmed" };

type Charge = { state: AdmissionState; writes: Write[] } & ({ result: Charged } | { need: Need; counted: Counted });

/**
 * Decides `size` against the key's windows, then its credits, then its organization's quota, in
 * that order (a charge refused by the first spends nothing of the others, as unkey's order: limits,
 * then credits). The windows and credits are counted before the quota is asked (persisted with the
 * step), so concurrent requests see them; the quota's refusal or silence gives them back.
 */
function charge(s: AdmissionState, size: number, now: number, defaults: Limits, tallied: boolean, asking: Asking): Charge {
  const writes: Write[] = [];
  const limits = limitsOf(s.key, defaults);
  const { state: windows, decision } = admit(s.windows, limits, now, size);
  const refuse = (exceeded: Decision["exceeded"], credits: KeyCreditsState | null): Charge => {
    const hourly = tallied ? tally(s, now, "refused", writes) : s.hourly;
    if (tallied) writes.push({ kind: "windows" });
    const base = exceeded === decision.exceeded ? decision : { ...peek(s.windows, limits, now), allowed: false, exceeded, cost: size };
    return { state: { ...s, hourly, credits }, writes, result: { kind: "refused", decision: withCredits(base, credits, now) } };
  };
  if (!decision.allowed) return refuse(decision.exceeded, s.credits);
  let credits = s.credits;
  if (credits !== null) {
    const spent = spend(credits, now, size);
    credits = { ...credits, ...spent.state };
    if (!spent.allowed) {
      if (credits.remaining !== s.credits?.remaining || credits.nextRefillMs !== s.credits?.nextRefillMs) writes.push({ kind: "credits" });
      return refuse("credits", credits);
    }
    writes.push({ kind: "credits" });
  }
  const hourly = tallied ? tally(s, now, "admitted", writes) : s.hourly;
  writes.push({ kind: "windows" });
  const next: AdmissionState = { ...s, windows, hourly, credits };
  const counted: Counted = {
    size,
    tallied,
    hour: hourOf(now),
    windows: { second: windows.second, day: windows.day },
    spentFrom: credits === null ? null : { epoch: credits.epoch, period: credits.nextRefillMs },
    now,
    limits,
    decision,
    quota: QUOTA_NONE,
    exact: true,
    tries: 0,
  };
  return quotaPart(next, writes, counted, asking);
}

/** Placeholders until `quotaPart` reads the quota the state has. */
const QUOTA_NONE: OrgQuota = {};

/**
 * The organization's quota part of a charge, under the quota as the state has it now: none (the
 * charge is allowed), exact (the QuotaObject takes it, and what this object owes it goes along), or
 * sliced (paid from this key's slice of the quota).
 */
function quotaPart(s: AdmissionState, writes: Write[], base: Counted, asking: Asking): Charge {
  const quota = quotaLimits(s.quota);
  if (quota === null) {
    return {
      state: s,
      writes: addWindows(writes),
      result: { kind: "allowed", decision: withCredits(base.decision, s.credits, base.now), paid: paidOf(base, 0, 0) },
    };
  }
  const counted: Counted = { ...base, quota, exact: (quota.per_second ?? 0) <= QUOTA_EXACT_PER_SECOND };
  if (counted.exact) {
    // Exact: the QuotaObject counts this request, and takes back what this object owes it.
    return {
      state: { ...s, quotaSlice: { ...s.quotaSlice, owed: [] } },
      writes: addWindows(writes),
      need: { kind: "take", limits: quota, now: counted.now, cost: counted.size, returned: s.quotaSlice.owed },
      counted,
    };
  }
  return fromQuotaSlice(s, writes, counted, asking);
}

/** Whether two quotas count alike (what a question was asked under, and what the state has now). */
const sameQuota = (a: OrgQuota | null, b: OrgQuota | null): boolean =>
  a === b || (a !== null && b !== null && a.per_second === b.per_second && a.per_day === b.per_day && a.per_month === b.per_month);

/** A quota past QUOTA_EXACT_PER_SECOND: paid from this key's slice, else a refusal repeated, else a question. */
function fromQuotaSlice(s: AdmissionState, writes: Write[], counted: Counted, asking: Asking): Charge {
  const quota = counted.quota;
  const held = s.quotaSlice;
  const current = currentLease(held.lease, counted.now);
  const owing = oweMore(held.owed, current.owed);
  const spent = spendLease(current.lease, counted.size);
  if (spent !== null && held.view !== null) {
    const state = { ...s, quotaSlice: { ...held, lease: spent, owed: owing } };
    return {
      state,
      writes: addWindows(writes),
      result: {
        kind: "allowed",
        decision: { ...withCredits(counted.decision, s.credits, counted.now), quota: held.view.windows },
        paid: paidOf(counted, current.lease.paid.month, current.lease.paid.quotaDay),
      },
    };
  }
  const holding = { ...held, lease: current.lease, owed: owing };
  if (repeats(held.refusal, counted.now, counted.size)) {
    return refusedByQuota({ ...s, quotaSlice: holding }, writes, counted, held.refusal.answer);
  }
  if (counted.tries > MAX_TRIES) return unconfirmedCharge({ ...s, quotaSlice: holding }, counted);
  if (asking.quota && counted.tries < SHARED_TRIES) {
    return { state: { ...s, quotaSlice: holding }, writes: addWindows(writes), need: { kind: "wait", on: "quota" }, counted };
  }
  const exact = counted.tries >= SHARED_TRIES;
  const { min, want } = exact ? { min: counted.size, want: counted.size } : wantFor(current.lease, counted.size, QUOTA_SLICE_CAP);
  return {
    state: { ...s, quotaSlice: { ...holding, owed: [] } },
    writes: addWindows(writes),
    need: { kind: "quotaSlice", limits: quota, now: counted.now, min, want, returned: owing, shared: !exact },
    counted,
  };
}

/** Whether a holder repeats its coordinator's refusal to a charge of `cost` at `now` without asking. */
const repeats = <V>(refusal: Holding<V>["refusal"], now: number, cost: number): refusal is { answer: V; until: number; cost: number } =>
  refusal !== null && refusal.until > now && cost >= refusal.cost;

/** When the second holding `now` ends. */
const secondEnd = (now: number): number => (Math.floor(now / 1000) + 1) * 1000;

const addWindows = (writes: Write[]): Write[] => (writes.some((w) => w.kind === "windows") ? writes : [...writes, { kind: "windows" }]);

/** What a charge was paid from: the key's day, the quota's day and month, the credits balance. */
const paidOf = (counted: Counted, month: number, quotaDay: number): Paid => ({
  day: counted.windows.day,
  quotaDay,
  month,
  epoch: counted.spentFrom?.epoch ?? null,
  period: counted.spentFrom?.period ?? null,
});

/** The quota answered a charge: allowed (the quota's windows attached), or refused (the charge given back). */
function resumeCharge(s: AdmissionState, counted: Counted, answer: Answer, asking: Asking): Charge {
  if (answer.kind === "waited") return fromQuotaSlice(s, [], { ...counted, tries: counted.tries + 1 }, asking);
  if (answer.kind !== "quota") return unconfirmedCharge(s, counted);
  const q = answer.answer;
  if (counted.exact) {
    if (!q.allowed) return refusedByQuota(s, [], counted, q);
    return {
      state: s,
      writes: [],
      result: {
        kind: "allowed",
        decision: { ...withCredits(counted.decision, s.credits, counted.now), quota: q.windows },
        paid: paidOf(counted, q.paid.month, q.paid.day),
      },
    };
  }
  const quotaPaid: Paid = { ...NOTHING_PAID, day: q.paid.day, quotaDay: q.paid.day, month: q.paid.month };
  if (!sameQuota(quotaLimits(s.quota), counted.quota)) {
    // Asked under a quota that changed while the question was out (its slices were dropped): the
    // slice goes back whole, and the charge is decided again under the quota as it is now.
    const owed = q.allowed ? oweMore(s.quotaSlice.owed, { amount: q.granted, paid: quotaPaid }) : s.quotaSlice.owed;
    return quotaPart(
      { ...s, quotaSlice: { ...s.quotaSlice, owed } },
      [{ kind: "windows" }],
      { ...counted, tries: counted.tries + 1 },
      asking,
    );
  }
  if (!q.allowed) return refusedByQuota(s, [], counted, q, { until: secondEnd(counted.now), cost: counted.size });
  const current = currentLease(s.quotaSlice.lease, counted.now);
  const received = receiveLease(current.lease, q.granted, quotaPaid);
  const owed = oweMore(oweMore(s.quotaSlice.owed, current.owed), received.owed);
  const next: AdmissionState = { ...s, quotaSlice: { lease: received.lease, owed, view: q, refusal: null } };
  // Pays from what just arrived; if others spent the rest meanwhile, it tries again (at last, exactly).
  return fromQuotaSlice(next, [{ kind: "windows" }], { ...counted, tries: counted.tries + 1 }, asking);
}

/**
 * The quota refused: the charge is given back, and refused as the quota said; with `repeat`, the
 * refusal is repeated without asking (Holding.refusal).
 */
function refusedByQuota(
  s: AdmissionState,
  writes: Write[],
  counted: Counted,
  q: QuotaDecision,
  repeat?: { until: number; cost: number },
): Charge {
  const held = repeat === undefined ? s : { ...s, quotaSlice: { ...s.quotaSlice, refusal: { answer: q, ...repeat } } };
  const back = givenBack(held, writes, counted, "refused");
  const refusal = {
    ...peek(back.state.windows, counted.limits, counted.now),
    allowed: false,
    exceeded: q.exceeded,
    cost: counted.size,
    quota: q.windows,
  } satisfies Decision;
  return { ...back, result: { kind: "refused", decision: withCredits(refusal, back.state.credits, counted.now) } };
}

/** The quota did not answer: the charge is given back and the request fails closed (503). */
function unconfirmedCharge(s: AdmissionState, counted: Counted): Charge {
  return { ...givenBack(s, [], counted, "unconfirmed"), result: { kind: "unconfirmed" } };
}

/**
 * Takes back a charge the quota refused or did not answer: its size leaves the windows it was
 * counted in (if they are still the current ones) and returns to the balance it was spent from, if
 * that is still the balance: a reset (a new epoch) or a refill (a new period) while the quota was
 * asked replaced it, and the replacement gets nothing back (issue 29). Its hour's count moves from
 * admitted to refused, or, for a 503, is taken out.
 */
function givenBack(
  s: AdmissionState,
  writes: Write[],
  counted: Counted,
  as: "refused" | "unconfirmed",
): { state: AdmissionState; writes: Write[] } {
  const w = s.windows;
  const h = s.hourly;
  const out: Write[] = addWindows(writes);
  const refused = as === "refused" ? 1 : 0;
  let hourly = h;
  if (counted.tallied && h.hour === counted.hour) hourly = { ...h, admitted: Math.max(0, h.admitted - 1), refused: h.refused + refused };
  // Its hour has ended meanwhile (it went to that hour's row): the row is corrected.
  else if (counted.tallied) out.push({ kind: "traffic", hour: counted.hour, admitted: -1, refused });
  const windows = {
    ...w,
    secondCount: w.second === counted.windows.second ? Math.max(0, w.secondCount - counted.size) : w.secondCount,
    dayCount: w.day === counted.windows.day ? Math.max(0, w.dayCount - counted.size) : w.dayCount,
  };
  const c = s.credits;
  const from = counted.spentFrom;
  const credits =
    from !== null && c !== null && c.epoch === from.epoch && c.nextRefillMs === from.period
      ? { ...c, remaining: c.remaining + counted.size }
      : c;
  if (credits !== c) out.push({ kind: "credits" });
  return { state: { ...s, windows, hourly, credits }, writes: out };
}

/**
 * Gives back what a holder returned (the unspent rest of its slices) to the day and the credits it
 * was paid from, if they are still those; what it was counted in the organization's quota becomes
 * this object's to give back to the QuotaObject with its next question.
 */
export function takeBack(s: AdmissionState, returned: readonly Owed[]): { state: AdmissionState; writes: Write[] } {
  if (owedAmount(returned) <= 0) return { state: s, writes: [] };
  const writes: Write[] = [{ kind: "windows" }];
  let { windows, credits } = s;
  let quotaOwed = s.quotaSlice.owed;
  for (const { amount, paid } of returned) {
    if (windows.day === paid.day) windows = { ...windows, dayCount: Math.max(0, windows.dayCount - amount) };
    if (credits !== null && paid.epoch !== null && credits.epoch === paid.epoch && credits.nextRefillMs === paid.period) {
      credits = { ...credits, remaining: credits.remaining + amount };
    }
    if (paid.month !== 0) {
      quotaOwed = oweMore(quotaOwed, { amount, paid: { ...NOTHING_PAID, day: paid.quotaDay, quotaDay: paid.quotaDay, month: paid.month } });
    }
  }
  if (credits !== s.credits) writes.push({ kind: "credits" });
  return { state: { ...s, windows, credits, quotaSlice: { ...s.quotaSlice, owed: quotaOwed } }, writes };
}

// ---------------------------------------------------------------------------------------------
// A request

type AdmitPending =
  | { phase: "confirm"; input: AdmitInput }
  | { phase: "shard"; input: AdmitInput; facts: Facts; shards: number }
  /** `version`: the key's version when the shard asked; an answer under another is not spent. */
  | { phase: "slice"; input: AdmitInput; facts: Facts; tries: number; version: number }
  | { phase: "charge"; input: AdmitInput; facts: Facts; counted: Counted; shards: number };

export type AdmitStep = Step<Admission, AdmitPending>;
export type { AdmitPending };

const UNKNOWN: Admission = { status: "unknown" };
const HOME: Admission = { status: "home" };
const UNCONFIRMED: Admission = { status: "unconfirmed" };

/**
 * The first step of a request: `clock` is the object's own time (the copy's lease), `input.now`
 * the edge's stamp (the windows).
 */
export function plan(s: AdmissionState, input: AdmitInput, clock: number, ctx: Context): AdmitStep {
  // A shard that was never told its key: the edge's idea of the key's shards is ahead of them.
  if (s.key === null) return done(s, [], input.shard === undefined ? UNKNOWN : HOME);
  if (clock - s.confirmedAt > KEY_LEASE_MS) return needs(s, [], { kind: "confirm" }, { phase: "confirm", input });
  return confirmed(s, input, ctx);
}

function confirmed(s: AdmissionState, input: AdmitInput, ctx: Context, tries = 0): AdmitStep {
  const key = s.key;
  if (key === null) return done(s, [], UNKNOWN);
  if (!answersTo(key, input.secretHash, input.routed === true, input.now)) return done(s, [], UNKNOWN);
  if (key.status !== "active") return done(s, [], { status: "revoked", keyId: key.id, organizationId: key.organization_id });
  const facts = ctx.facts();
  const asking = ctx.asking;
  const shards = shardsFor(limitsOf(key, input.defaults).per_second);
  if (key.shard_index !== null) {
    // A shard past its key's current count (the limit came down) serves nothing: the home decides.
    if (key.shard_index > shards) return done(s, [], HOME);
    return fromSlice(s, input, facts, tries, asking);
  }
  // The home of a sharded key hands an edge's first request to a shard, as the edge will from now
  // on (the answer says how many there are); only if that shard is not ready does it count here.
  if (shards > 0 && input.shard === undefined)
    return needs(s, [], { kind: "shard", count: shards }, { phase: "shard", input, facts, shards });
  return charging(s, input, facts, shards, asking);
}

function charging(s: AdmissionState, input: AdmitInput, facts: Facts, shards: number, asking: Asking): AdmitStep {
  const cost = input.cost ?? 1;
  return fromCharge(charge(s, cost, input.now, input.defaults, true, asking), input, facts, shards);
}

function fromCharge(c: Charge, input: AdmitInput, facts: Facts, shards: number): AdmitStep {
  if ("need" in c) return needs(c.state, c.writes, c.need, { phase: "charge", input, facts, counted: c.counted, shards });
  return done(c.state, c.writes, answerOf(c.state, c.result, facts, shards));
}

function answerOf(s: AdmissionState, result: Charged, facts: Facts, shards: number): Admission {
  return result.kind === "unconfirmed" ? UNCONFIRMED : active(s.key as KeyCopy, result.decision, facts, shards);
}

/** A key's decided answer: the decision, the revocation facts, and how many shards serve it (none: absent). */
const active = (key: KeyCopy, decision: Decision, facts: Facts, shards: number): Admission => ({
  status: "active",
  keyId: key.id,
  organizationId: key.organization_id,
  decision,
  ...facts,
  ...(shards > 0 ? { shards } : {}),
});

/**
 * A shard's request: paid from the slice it holds, else refused as its home last refused (until
 * that window ends), else a question for a new slice (shared by the requests that arrive
 * meanwhile), carrying what the shard owes back. The home counted the slice when it granted it, so
 * every shard together never admits more than the limit.
 */
function fromSlice(s: AdmissionState, input: AdmitInput, facts: Facts, tries: number, asking: Asking): AdmitStep {
  const cost = input.cost ?? 1;
  const now = input.now;
  const held = s.slice;
  const current = currentLease(held.lease, now);
  const owing = oweMore(held.owed, current.owed);
  const spent = spendLease(current.lease, cost);
  const key = s.key as KeyCopy;
  const answer = (decision: Decision): Admission => active(key, decision, facts, shardsFor(limitsOf(key, input.defaults).per_second));
  if (spent !== null && held.view !== null) {
    const writes: Write[] = [];
    const hourly = tally(s, now, "admitted", writes);
    writes.push({ kind: "windows" });
    const state = { ...s, hourly, slice: { ...held, lease: spent, owed: owing } };
    return done(state, writes, answer({ ...held.view, allowed: true, exceeded: null, now, cost }));
  }
  const holding = { ...held, lease: current.lease, owed: owing };
  if (repeats(held.refusal, now, cost)) {
    const writes: Write[] = [];
    const hourly = tally(s, now, "refused", writes);
    writes.push({ kind: "windows" });
    return done({ ...s, hourly, slice: holding }, writes, answer({ ...held.refusal.answer, now, cost }));
  }
  if (tries > MAX_TRIES) return done({ ...s, slice: holding }, [{ kind: "windows" }], UNCONFIRMED);
  const version = key.version;
  if (asking.home && tries < SHARED_TRIES) {
    return needs(
      { ...s, slice: holding },
      [{ kind: "windows" }],
      { kind: "wait", on: "home" },
      { phase: "slice", input, facts, tries, version },
    );
  }
  const exact = tries >= SHARED_TRIES;
  const { min, want } = exact ? { min: cost, want: cost } : wantFor(current.lease, cost, KEY_SLICE_CAP);
  return needs(
    { ...s, slice: { ...holding, owed: [] } },
    [{ kind: "windows" }],
    { kind: "grant", request: { now, defaults: input.defaults, min, want, returned: owing }, shared: !exact },
    { phase: "slice", input, facts, tries, version },
  );
}

/** The next step of a request, with the answer to the call its last step needed. */
export function resume(s: AdmissionState, pending: AdmitPending, answer: Answer, ctx: Context): AdmitStep {
  const asking = ctx.asking;
  switch (pending.phase) {
    case "confirm":
      if (answer.kind !== "confirmed") return done(s, [], UNCONFIRMED);
      return confirmed(s, pending.input, ctx);
    case "shard":
      if (answer.kind === "shard" && answer.admission.status !== "home") {
        const a = answer.admission;
        return done(s, [], a.status === "active" ? { ...a, shards: pending.shards } : a);
      }
      return charging(s, pending.input, pending.facts, pending.shards, asking);
    case "slice":
      return resumeSlice(s, pending, answer, ctx);
    case "charge":
      return fromCharge(resumeCharge(s, pending.counted, answer, asking), pending.input, pending.facts, pending.shards);
  }
}

function resumeSlice(s: AdmissionState, pending: Extract<AdmitPending, { phase: "slice" }>, answer: Answer, ctx: Context): AdmitStep {
  const { input, facts, tries } = pending;
  // Another request's question was answered: this one is decided again from the top (the key may
  // have changed, or been revoked, meanwhile).
  if (answer.kind === "waited") return again(s, input, ctx, tries + 1);
  if (answer.kind !== "grant" || answer.grant.status === "unavailable") return done(s, [], UNCONFIRMED);
  const grant = answer.grant;
  if (s.key === null || s.key.version !== pending.version) {
    // Asked under an older version of the key (a push dropped the slices meanwhile: a lowered limit,
    // credits set to zero): the slice goes back whole and is never spent; the request is decided
    // again under the key as it is now.
    const owed = grant.status === "granted" ? oweMore(s.slice.owed, { amount: grant.granted, paid: grant.paid }) : s.slice.owed;
    return again({ ...s, slice: { ...s.slice, owed } }, input, ctx, tries + 1, [{ kind: "windows" }]);
  }
  const asking = ctx.asking;
  if (grant.status === "refused") {
    const refusal = { answer: grant.decision, until: secondEnd(input.now), cost: input.cost ?? 1 };
    return fromSlice({ ...s, slice: { ...s.slice, refusal } }, input, facts, tries + 1, asking);
  }
  const current = currentLease(s.slice.lease, input.now);
  const received = receiveLease(current.lease, grant.granted, grant.paid);
  const owed = oweMore(oweMore(s.slice.owed, current.owed), received.owed);
  const next = { ...s, slice: { lease: received.lease, owed, view: grant.decision, refusal: null } };
  return fromSlice(next, input, facts, tries + 1, asking);
}

/**
 * A request decided again after a call (a question answered to another request, or under another
 * version of the key): from the key's checks down, first asking the organization if a push meanwhile
 * left the copy behind.
 */
function again(s: AdmissionState, input: AdmitInput, ctx: Context, tries: number, writes: Write[] = []): AdmitStep {
  if (s.key !== null && s.confirmedAt === 0) return needs(s, writes, { kind: "confirm" }, { phase: "confirm", input });
  const step = confirmed(s, input, ctx, tries);
  return writes.length === 0 ? step : { ...step, writes: addWindows(step.writes) };
}

// ---------------------------------------------------------------------------------------------
// The home's grant

type GrantPending = { phase: "confirm"; request: GrantRequest } | { phase: "charge"; request: GrantRequest; counted: Counted };

export type GrantStep = Step<Grant, GrantPending>;
export type { GrantPending };

/**
 * A shard asks for a slice of the current second's budget: what it returned is given back first;
 * the slice is then decided as one charge of its size, through the same windows, credits and quota
 * as any request (counted now, whether the shard spends it or not, until it returns the rest),
 * shrunk to what is left but never below what the asking request lacks.
 */
export function planGrant(s: AdmissionState, asked: GrantRequest, clock: number, asking: Asking): GrantStep {
  const key = s.key;
  if (key === null || key.shard_index !== null) return done(s, [], { status: "unavailable" });
  // What the shard returned is given back whatever the answer (it was handed over once).
  const back = takeBack(s, asked.returned ?? []);
  const request: GrantRequest = { ...asked, min: asked.min ?? legacyCost(asked), returned: [] };
  if (clock - s.confirmedAt > KEY_LEASE_MS) return needs(back.state, back.writes, { kind: "confirm" }, { phase: "confirm", request });
  return grantConfirmed(back.state, back.writes, request, asking);
}

/** A shard of the previous release asks with `cost` (what its request costs) where this one sends `min`. */
const legacyCost = (asked: GrantRequest): number => (asked as GrantRequest & { cost?: number }).cost ?? 1;

function grantConfirmed(st: AdmissionState, writes: Write[], request: GrantRequest, asking: Asking): GrantStep {
  if (st.key === null || st.key.status !== "active") return done(st, writes, { status: "unavailable" });
  const limits = limitsOf(st.key, request.defaults);
  const left = peek(st.windows, limits, request.now);
  const room = Math.min(
    left.second.remaining,
    left.day.remaining,
    st.credits === null ? Number.POSITIVE_INFINITY : refilled(st.credits, request.now).remaining,
  );
  const size = Math.max(request.min, Math.min(request.want, room));
  const c = charge(st, size, request.now, request.defaults, false, asking);
  return fromGrantCharge({ ...c, writes: [...writes, ...c.writes] }, request);
}

function fromGrantCharge(c: Charge, request: GrantRequest): GrantStep {
  if ("need" in c) return needs(c.state, c.writes, c.need, { phase: "charge", request, counted: c.counted });
  const r = c.result;
  const grant: Grant =
    r.kind === "allowed"
      ? { status: "granted", granted: r.decision.cost, decision: r.decision, paid: r.paid }
      : r.kind === "refused"
        ? { status: "refused", decision: r.decision }
        : { status: "unavailable" };
  return done(c.state, c.writes, grant);
}

export function resumeGrant(s: AdmissionState, pending: GrantPending, answer: Answer, asking: Asking): GrantStep {
  if (pending.phase === "confirm") {
    if (answer.kind !== "confirmed") return done(s, [], { status: "unavailable" });
    return grantConfirmed(s, [], pending.request, asking);
  }
  return fromGrantCharge(resumeCharge(s, pending.counted, answer, asking), pending.request);
}

// ---------------------------------------------------------------------------------------------
// What a quiet holder gives back, and what it holds after a restart

/** What a holder owes at `now` (a slice whose second ended is owed back); null: nothing. */
function settleDue(h: Holding<unknown>, now: number): Owed[] | null {
  const owed = oweMore(h.owed, currentLease(h.lease, now).owed);
  return owedAmount(owed) > 0 ? owed : null;
}

/** The holding after what it owed was handed over (at most once: before the call that carries it). */
function handedOver<V>(h: Holding<V>, now: number): Holding<V> {
  return { ...h, lease: currentLease(h.lease, now).lease, owed: [] };
}

/**
 * What a quiet holder hands back from its alarm: a shard's rest to its home, a key's to its
 * QuotaObject, and the state with them handed over (persisted before the calls that carry them:
 * at most once); null when nothing is owed.
 */
export function settlement(
  s: AdmissionState,
  now: number,
): { toHome: Owed[] | null; toQuota: Owed[] | null; state: AdmissionState; writes: Write[] } | null {
  const toHome = s.key?.shard_home == null ? null : settleDue(s.slice, now);
  const toQuota = settleDue(s.quotaSlice, now);
  if (toHome === null && toQuota === null) return null;
  return {
    toHome,
    toQuota,
    state: {
      ...s,
      slice: toHome === null ? s.slice : handedOver(s.slice, now),
      quotaSlice: toQuota === null ? s.quotaSlice : handedOver(s.quotaSlice, now),
    },
    writes: [{ kind: "windows" }],
  };
}

/**
 * A holding read back after a restart: the answer that came with the slice is gone (memory), so
 * what is left of the slice is owed back rather than spent without it.
 */
export function restored<V>(lease: Lease, owed: readonly Owed[]): Holding<V> {
  const dropped = dropLease(lease);
  return { lease: dropped.lease, owed: oweMore(owed, dropped.owed), view: null, refusal: null };
}

// ---------------------------------------------------------------------------------------------
// What the organization pushes

/** One revision of the organization: a credential revoked (no kind), a credential changed, or one access token revoked until it expires. */
export type Revocation =
  | { client_id: string; revision: number; kind?: "client" }
  | { client_id: string; revision: number; kind: "changed"; version: number }
  | { client_id: string; revision: number; kind: "token"; token_id: string; expires_ms: number };

/** What the organization pushes: the key's state at `version`, the revocations after `since` up to `revision`. */
export interface KeySnapshot {
  id: string;
  organization_id: string;
  status: "active" | "revoked";
  limits: LimitOverrides;
  version: number;
  revision: number;
  /**
   * The revision the revocations start after: a copy at an earlier revision lacks some between,
   * so it keeps its revision and says it is behind; 0 carries the whole set. Absent from a push of
   * the previous release (then the copy's own revision).
   */
  since?: number;
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
  /** The snapshot's revocations start after a revision this copy lacks: send it the whole set (since 0). */
  behind?: boolean;
}

/** What applying a snapshot changes: the state, the rows to write in one transaction, and the answer. */
export interface Applied {
  state: AdmissionState;
  /** The key row, the quota column and the credits row are written from `state`; these are added. */
  revocations: Revocation[];
  credits: boolean;
  /** The slices were dropped (their rest owed back): the windows row is written, and a settlement is due. */
  dropped: boolean;
  ack: SyncAck;
}

/**
 * Applies what the organization (or, for a shard, its home) pushed. Older versions change nothing
 * of the key; revocations only add; the revision advances only over revocations this copy has all
 * of (`since`). A newer version of the key (its limits, credits, status or secrets) drops the
 * slices held, so a lowered limit or exhausted credits hold from the next request, and a refusal
 * given under the old limits is not repeated; a changed quota drops the quota's slice likewise.
 */
export function applySnapshot(
  s: AdmissionState,
  snap: KeySnapshot,
  shard: { home: string; index: number } | undefined,
  clock: number,
): Applied {
  const current = s.key;
  const newer = current === null || snap.version > current.version;
  const base: KeyCopy = current ?? {
    id: snap.id,
    organization_id: snap.organization_id,
    status: snap.status,
    per_second: null,
    per_day: null,
    version: 0,
    revision: 0,
    secret_hash: null,
    previous_hash: null,
    previous_until_ms: null,
    shard_home: null,
    shard_index: null,
    shard_high: 0,
  };
  let key: KeyCopy = newer
    ? {
        ...base,
        status: snap.status,
        per_second: snap.limits.per_second ?? null,
        per_day: snap.limits.per_day ?? null,
        version: snap.version,
        ...(snap.secrets !== undefined
          ? { secret_hash: snap.secrets.current, previous_hash: snap.secrets.previous, previous_until_ms: snap.secrets.previous_until_ms }
          : {}),
      }
    : base;
  // A push of the previous release carries no `since`: its revocations start at this copy's revision.
  const since = snap.since ?? base.revision;
  const revision = since <= base.revision ? Math.max(base.revision, snap.revision) : base.revision;
  // Behind: revocations between this copy's revision and `since` are missing, and the organization
  // may have answered them already. The copy serves no request before it has them: its lease counts
  // as lapsed, so its next request asks the organization first (the whole set since its revision),
  // whichever comes first of that and the home's resend (objects/key.ts `sync`).
  const behind = revision < snap.revision;
  // Only a push as new as the copy renews its lease: a late one says nothing of the present.
  const stale = current !== null && (snap.version < current.version || snap.revision < current.revision);
  key = { ...key, revision };
  if (shard !== undefined) key = { ...key, shard_home: shard.home, shard_index: shard.index };
  if (key.shard_index === null && key.shard_high !== null) {
    key = { ...key, shard_high: Math.max(key.shard_high, shardsOf(key)) };
  }
  // The quota as of the newest revision pushed: a late push of an older one changes nothing.
  const quotaChanged = snap.quota !== undefined && snap.revision >= base.revision && !sameQuota(snap.quota, s.quota);
  const quota = quotaChanged ? (snap.quota ?? null) : s.quota;
  const credits = current === null || snap.version >= current.version ? creditsAfter(s.credits, snap.credits, clock) : undefined;
  let slice = { ...s.slice, refusal: null };
  let quotaSlice = { ...s.quotaSlice, refusal: null };
  let dropped = false;
  if (newer && current !== null) {
    const d = dropLease(s.slice.lease);
    slice = { ...slice, lease: d.lease, owed: oweMore(s.slice.owed, d.owed) };
    dropped = d.owed !== null;
  }
  if (quotaChanged) {
    const d = dropLease(s.quotaSlice.lease);
    quotaSlice = { ...quotaSlice, lease: d.lease, owed: oweMore(s.quotaSlice.owed, d.owed) };
    dropped = dropped || d.owed !== null;
  }
  return {
    state: {
      ...s,
      key,
      quota,
      credits: credits === undefined ? s.credits : credits,
      slice,
      quotaSlice,
      confirmedAt: behind ? 0 : stale ? s.confirmedAt : clock,
    },
    revocations: snap.revocations,
    credits: credits !== undefined,
    dropped,
    ack: { version: key.version, revision, ...(behind ? { behind: true } : {}) },
  };
}

/** How many shards a home serves with now. */
function shardsOf(key: KeyCopy | null): number {
  return key === null || key.shard_index !== null ? 0 : shardsFor(limitsOf(key, { per_second: 0, per_day: 0 }).per_second);
}

/**
 * Which of its shards a home passes a push on to: every one it ever had (a retired shard holds a
 * copy too, and one a failed push left with an older limit may still be asked by an isolate that
 * knows the older count), and those it had before this push for a copy older than `shard_high`.
 */
export function shardsToSync(before: KeyCopy | null, after: KeyCopy | null): number {
  if (after === null || after.shard_index !== null) return 0;
  return Math.max(shardsOf(before), shardsOf(after), after.shard_high ?? 0);
}

/** Every shard the key may ever have had, for erasure: all ten a key can have when a copy older than issue 41 does not know. */
export function shardsEverHad(key: KeyCopy | null): number {
  if (key === null || key.shard_index !== null) return 0;
  return key.shard_high === null ? MAX_SHARDS : Math.max(key.shard_high, shardsOf(key));
}

/** The shards whose traffic counts add up to the key's: those it is known to have had. */
export function shardsCounted(key: KeyCopy | null): number {
  if (key === null || key.shard_index !== null) return 0;
  return Math.max(key.shard_high ?? 0, shardsOf(key));
}

/**
 * Applies the organization's record of the key's credits: a newer epoch is a reset (the balance
 * becomes base + added), a larger `added` a top-up (the difference is added); the refill is taken
 * as given, its next boundary counted from now. Late or repeated pushes change nothing. Undefined:
 * nothing to change.
 */
export function creditsAfter(
  current: KeyCreditsState | null,
  given: KeyCredits | null | undefined,
  now: number,
): KeyCreditsState | null | undefined {
  if (given === undefined) return undefined;
  if (given === null) return null;
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
  } else return undefined;
  const refillChanged = JSON.stringify(next.refill) !== JSON.stringify(current?.refill ?? null);
  if (next.refill === null) next.nextRefillMs = null;
  else if (refillChanged || next.nextRefillMs === null) next.nextRefillMs = nextBoundary(next.refill.interval, now);
  return next;
}
