/**
 * One delivery attempt (src/webhooks/attempt.ts): the production driver (`drive`) and core
 * (`attemptStep`) run over a modelled world, a port whose receiver, token endpoint and endpoint
 * object follow a generated script, with a clock that moves only when something is awaited. The
 * examples walk the paths one by one; the properties run random scripts:
 *
 * 1. No request leaves after the configuration ended: once the endpoint's object would answer
 *    "stop" (a DELETE, a disable or a pause answered while the attempt awaited something), no
 *    token request, no webhook and no nonce round leaves.
 * 2. At most one webhook per token in hand and round, at most two tokens (the second only after a
 *    401 to the endpoint's cached one, granted by the object), and nothing sent while this isolate
 *    saw the endpoint paused or after the rate limit's slot closed.
 * 3. A fetched token is used only by its generation: a 401 to a token tells the endpoint the
 *    generation it holds it as (the cached one's, or the one `storeToken` answered), never another;
 *    a token the endpoint could not take is carried by the report unless the receiver refused it.
 * 4. Every attempt ends, once, in a report or a stop, and the report says what happened: delivered
 *    exactly when the last answer was 2xx, gone exactly for a 410 or `webhook-delivery: disable`,
 *    failed exactly for those and `abort-message` to an answer that is not 2xx, ours (paused, slot missed, token
 *    busy, cut off) exactly when keyway held it back.
 * The runs must reach every rule: `reached` is asserted at the end.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { FetchedToken } from "../../src/schemas/webhooks";
import {
  type Answer,
  type AttemptEvent,
  type AttemptPlan,
  type AttemptPort,
  attemptStep,
  drive,
  type Ended,
  type Failure,
  newAttempt,
  type Slot,
} from "../../src/webhooks/attempt";

const RUNS = Number(process.env.KEYWAY_PROPERTY_RUNS || 5_000);
const T0 = 1_000_000;

// ---------------------------------------------------------------------------------------------
// The modelled world

type WebhookScript =
  | { kind: "answer"; status: number; retryAfter: number | null; nonce: boolean; directive: "disable" | "abort" | null }
  | { kind: "failure" };
type TokenScript = { kind: "ok"; expiresIn: number | null } | { kind: "failure" };

interface Script {
  mode: "cached" | "fetch";
  keep: boolean;
  tokenCache: boolean;
  lane: "fast" | "new" | "slow";
  slot: { wait: number; length: number } | null;
  /** Paused in this isolate at the start / at the slot (ms left), or not. */
  pausedAtStart: number | null;
  pausedAtSlot: number | null;
  tokens: TokenScript[];
  webhooks: WebhookScript[];
  /** The configuration ends during the n-th await (0: never). */
  endsAtAwait: number;
  endKind: "deleted" | "paused";
  /** How the endpoint answers a 401 to its token: a refetch (with a slot or not), or another attempt fetches. */
  refetch: { granted: boolean; slot: { wait: number; length: number } | null };
  /** storeToken answers a generation, declines (null), or cannot be reached. */
  store: "kept" | "declined" | "unreachable";
  /** Each await takes this long (ms), cycling. */
  delays: number[];
  deadlineMs: number;
  /** How long the endpoint's object takes to answer `proceed`. */
  proceedMs: number;
}

interface Trace {
  requests: { kind: "token" | "webhook"; at: number; round: number; token: number; ended: boolean }[];
  proceeds: number;
  rejected: { generation: number; refetch: boolean }[];
  stored: number[];
  ended: boolean;
  endedAt: number | null;
  /** Tokens in hand, in order: 0 the cached one, then each fetched. */
  tokensHeld: number;
  lastAnswer: number | null;
  /** The last answer's `webhook-delivery` directive. */
  lastDirective: "disable" | "abort" | null;
  /** Each answer, by the token it was sent with. */
  answers: { token: number; status: number }[];
  pausedSends: number;
  /** The slot the endpoint granted a refetch with. */
  refetchSlot: Slot | null;
}

const CACHED_GENERATION = 7;

function world(script: Script) {
  let now = T0;
  let awaits = 0;
  let delayIndex = 0;
  let fetchIndex = 0;
  let webhookIndex = 0;
  let generation = 40;
  const trace: Trace = {
    requests: [],
    proceeds: 0,
    rejected: [],
    stored: [],
    ended: false,
    endedAt: null,
    tokensHeld: script.mode === "cached" ? 0 : -1,
    lastAnswer: null,
    lastDirective: null,
    answers: [],
    pausedSends: 0,
    refetchSlot: null,
  };
  let pauseUntil: number | null = script.pausedAtStart === null ? null : T0 + script.pausedAtStart;
  let slotPauseSet = false;
  const deadline = T0 + script.deadlineMs;
  /** Something outside is awaited: time passes, and the configuration may end meanwhile. */
  const awaitOutside = async (ms?: number) => {
    awaits++;
    now += ms ?? script.delays[delayIndex++ % script.delays.length] ?? 1;
    if (!trace.ended && awaits === script.endsAtAwait) {
      trace.ended = true;
      trace.endedAt = now;
    }
    await Promise.resolve();
  };
  const leave = (kind: "token" | "webhook", round: number) =>
    trace.requests.push({ kind, at: now, round, token: trace.tokensHeld, ended: trace.ended });
  const slotOf = (s: { wait: number; length: number } | null): Slot | null =>
    s === null ? null : { not_before: now + s.wait, by: now + s.wait + s.length };
  const plan: AttemptPlan = {
    delivery_id: "dlv_1",
    series: 1,
    attempt: 1,
    version: 3,
    lane: script.lane,
    url: "https://receiver.example/hook",
    started_at: T0,
    deadline_seconds: Math.ceil(script.deadlineMs / 1000),
    slow_deadline_seconds: 30,
    token: script.mode === "cached" ? { mode: "cached", generation: CACHED_GENERATION } : { mode: "fetch", keep: script.keep },
    token_cache: script.tokenCache,
    slot: slotOf(script.slot),
    default_token_lifetime_ms: 300_000,
    max_pause_ms: 600_000,
  };
  const port: AttemptPort = {
    now: () => now,
    timedOut: () => now >= deadline,
    pausedUntil: () => {
      // The slot's pause appears once the token is in hand (another attempt was just answered 429).
      if (!slotPauseSet && trace.tokensHeld >= 0 && script.pausedAtSlot !== null) {
        slotPauseSet = true;
        pauseUntil = Math.max(pauseUntil ?? 0, now + script.pausedAtSlot);
      }
      return pauseUntil;
    },
    rememberPause: (until) => {
      pauseUntil = Math.max(pauseUntil ?? 0, until);
    },
    openToken: async () => {
      trace.tokensHeld = 0;
    },
    fetchToken: async (beforeRequest) => {
      const stopped = await beforeRequest();
      if (stopped !== null) return { stopped };
      leave("token", 0);
      await awaitOutside();
      const t = script.tokens[fetchIndex++] ?? { kind: "ok", expiresIn: null };
      if (t.kind === "failure") return { failure: { http_status: 500, message: "token endpoint answered 500", retry_after_seconds: null } };
      trace.tokensHeld = Math.max(0, trace.tokensHeld) + 1;
      return { expires_in_seconds: t.expiresIn };
    },
    sealToken: async (lifetimeMs) => {
      const token: FetchedToken = { sealed: { kid: "k", iv: "iv", ct: `t${trace.tokensHeld}` }, expires_ms: now + lifetimeMs, key: "key" };
      return token;
    },
    wait: async (ms) => {
      await awaitOutside(ms);
    },
    send: async (beforeRequest) => {
      for (let round = 0; ; round++) {
        const stopped = await beforeRequest(round);
        if (stopped !== null) return { stopped };
        if (pauseUntil !== null && pauseUntil > now) trace.pausedSends++;
        leave("webhook", round);
        await awaitOutside();
        const w = script.webhooks[webhookIndex++] ?? { kind: "answer", status: 204, retryAfter: null, nonce: false, directive: null };
        if (w.kind === "failure") return { failure: { http_status: null, message: "connection reset", retry_after_seconds: null } };
        if (w.nonce && round === 0) continue;
        trace.lastAnswer = w.status;
        trace.lastDirective = w.directive;
        trace.answers.push({ token: trace.tokensHeld, status: w.status });
        const answer: Answer = { status: w.status, retry_after_seconds: w.retryAfter, response: null, directive: w.directive };
        return { answer };
      }
    },
    ask: async (call) => {
      // The endpoint's object, by the call's kind (its answers as EndpointObject.step gives them).
      switch (call.kind) {
        case "proceed":
          trace.proceeds++;
          // A call to the endpoint's object takes time too: the request leaves after its answer.
          now += script.proceedMs;
          if (trace.ended) return { go: false, reason: script.endKind === "deleted" ? "webhook configuration was deleted" : "paused" };
          return { go: true };
        case "store_token":
          await awaitOutside(1);
          if (script.store === "unreachable") throw new Error("endpoint unreachable for the token");
          if (script.store === "declined") return null;
          generation++;
          trace.stored.push(generation);
          return generation;
        case "token_rejected": {
          const { generation: gen, refetch } = call;
          trace.rejected.push({ generation: gen, refetch });
          if (!refetch) return { refetch: false, slot: null };
          // Before the next token request: a configuration ended meanwhile stops the attempt here.
          if (trace.ended) return { refetch: false, slot: null, stopped: "webhook configuration was deleted" };
          if (!script.refetch.granted) return { refetch: false, slot: null };
          trace.refetchSlot = slotOf(script.refetch.slot);
          return { refetch: true, slot: trace.refetchSlot };
        }
      }
    },
  };
  return { plan, port, trace, deadline };
}

// ---------------------------------------------------------------------------------------------
// Generators

const webhookScript: fc.Arbitrary<WebhookScript> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .record({
        kind: fc.constant("answer" as const),
        status: fc.constantFrom(200, 204, 401, 401, 401, 410, 429, 503, 500, 302),
        retryAfter: fc.option(fc.integer({ min: 0, max: 120 }), { nil: null }),
        nonce: fc.boolean(),
        directive: fc.constantFrom(null, null, null, null, "disable" as const, "abort" as const),
      })
      // A 401 is answered by the token's rules before any conclusion: a directive there says nothing.
      .map((w) => (w.status === 401 ? { ...w, directive: null } : w)),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "failure" as const }) },
);
const tokenScript: fc.Arbitrary<TokenScript> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("ok" as const), expiresIn: fc.option(fc.integer({ min: 1, max: 3600 }), { nil: null }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "failure" as const }) },
);
/** Mostly none: a rare thing must not hide the common paths. */
const rarely = <T>(arb: fc.Arbitrary<T>, weight = 5): fc.Arbitrary<T | null> =>
  fc.oneof({ weight, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
const slotScript = rarely(fc.record({ wait: fc.integer({ min: 0, max: 300 }), length: fc.integer({ min: 0, max: 3_000 }) }), 2);

const scripts: fc.Arbitrary<Script> = fc
  .record({
    mode: fc.constantFrom("cached" as const, "fetch" as const),
    keep: fc.boolean(),
    tokenCache: fc.boolean(),
    lane: fc.constantFrom("fast" as const, "new" as const, "slow" as const),
    slot: slotScript,
    pausedAtStart: rarely(fc.integer({ min: -50, max: 2_000 }), 8),
    pausedAtSlot: rarely(fc.integer({ min: -50, max: 2_000 }), 8),
    tokens: fc.array(tokenScript, { maxLength: 3 }),
    webhooks: fc.array(webhookScript, { maxLength: 4 }),
    endsAtAwait: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 6 }) }),
    endKind: fc.constantFrom("deleted" as const, "paused" as const),
    refetch: fc.record({ granted: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)), slot: slotScript }),
    store: fc.constantFrom("kept" as const, "declined" as const, "unreachable" as const),
    delays: fc.array(fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 200 }) }, fc.integer({ min: 200, max: 3_000 })), {
      minLength: 1,
      maxLength: 4,
    }),
    deadlineMs: fc.constantFrom(2_000, 5_000, 30_000),
    proceedMs: fc.constantFrom(0, 2, 40, 400),
  })
  // What `begin` grants: a cached token only with token_cache, and `keep` only with it.
  .map((s) => ({ ...s, tokenCache: s.mode === "cached" || s.tokenCache, keep: s.keep && (s.mode === "cached" || s.tokenCache) }));

// ---------------------------------------------------------------------------------------------
// What the runs reached

const reached = {
  delivered: 0,
  gone: 0,
  retriedStatus: 0,
  redirect: 0,
  sendFailed: 0,
  tokenFailed: 0,
  refetchTokenFailed: 0,
  stoppedBeforeToken: 0,
  stoppedBeforeWebhook: 0,
  stoppedAtRefetch: 0,
  cachedRefused: 0,
  refetchGranted: 0,
  sentAgain: 0,
  tokenBusy: 0,
  fetchedRefused: 0,
  carried: 0,
  carriedRefused: 0,
  slotMissed: 0,
  pausedAtStart: 0,
  pausedAtSlot: 0,
  nonceRound: 0,
  cutOff: 0,
  slowTimeout: 0,
  rememberedPause: 0,
  disabledDelivered: 0,
  disabledFailed: 0,
  aborted: 0,
};

function check(script: Script, ended: Ended, trace: Trace, deadline: number, plan: AttemptPlan, finalNow: number): void {
  // 1. Nothing leaves after the end.
  for (const r of trace.requests) expect(r.ended, `a ${r.kind} request left after the configuration ended`).toBe(false);
  const stopped = "stopped" in ended;
  if (stopped) {
    expect(trace.ended, "a stop without an end").toBe(true);
    const webhooks = trace.requests.filter((r) => r.kind === "webhook");
    if (trace.rejected.some((r) => r.refetch) && webhooks.length > 0) reached.stoppedAtRefetch++;
    else if (webhooks.length > 0 || trace.requests.some((r) => r.kind === "token")) reached.stoppedBeforeWebhook++;
    else reached.stoppedBeforeToken++;
    return;
  }
  const { report } = ended;
  // 2. One webhook per token and round; at most two tokens in hand; the second only after a granted refetch.
  const webhooks = trace.requests.filter((r) => r.kind === "webhook");
  const seen = new Set(webhooks.map((w) => `${w.token}:${w.round}`));
  expect(seen.size, "two webhooks with one token in one round").toBe(webhooks.length);
  const tokensUsed = new Set(webhooks.map((w) => w.token));
  expect(tokensUsed.size).toBeLessThanOrEqual(2);
  if (tokensUsed.size === 2) {
    expect(trace.rejected[0], "a second webhook without a refetch granted").toEqual({ generation: CACHED_GENERATION, refetch: true });
    reached.sentAgain++;
  }
  expect(trace.pausedSends, "a webhook sent while this isolate saw the endpoint paused").toBe(0);
  // The first webhook leaves within the rate limit's slot (a nonce round is the same request, answered).
  const firstToken = plan.token.mode === "cached" ? 0 : 1;
  const slot = plan.slot;
  if (slot !== null) {
    for (const w of webhooks)
      if (w.token === firstToken && w.round === 0) expect(w.at, "a webhook after its slot closed").toBeLessThanOrEqual(slot.by);
  }
  const again = trace.refetchSlot;
  if (again !== null) {
    for (const w of webhooks)
      if (w.token > firstToken && w.round === 0) expect(w.at, "a webhook sent again after its slot closed").toBeLessThanOrEqual(again.by);
  }
  // 3. A 401 names the generation the endpoint holds the token as.
  for (const r of trace.rejected) {
    if (r.refetch) expect(r.generation).toBe(CACHED_GENERATION);
    else expect(trace.stored, "a 401 dropped a generation this attempt's token was not kept as").toContain(r.generation);
  }
  if (report.token !== null) {
    expect(script.store).toBe("unreachable");
    const refused = trace.answers.filter((a) => a.token === trace.tokensHeld && a.status === 401);
    expect(refused, "a token the receiver refused was carried to the endpoint").toEqual([]);
    reached.carried++;
  }
  const lastAnswered = trace.answers.at(-1);
  if (script.store === "unreachable" && plan.token_cache && lastAnswered?.status === 401 && lastAnswered.token > 0) {
    expect(report.token).toBeNull();
    reached.carriedRefused++;
  }
  // 4. The report says what happened.
  expect(report.delivery_id).toBe(plan.delivery_id);
  expect(report.latency_ms).toBe(finalNow - T0);
  const last = trace.lastAnswer;
  expect(report.outcome === "delivered", "delivered exactly when the last answer was 2xx").toBe(last !== null && last >= 200 && last < 300);
  const directive = last === null ? null : trace.lastDirective;
  const twoHundred = last !== null && last >= 200 && last < 300;
  expect(report.gone, "gone exactly for a 410 or webhook-delivery: disable").toBe(last === 410 || directive === "disable");
  expect(report.outcome === "failed", "failed exactly for a 410 or a directive to an answer that is not 2xx").toBe(
    last !== null && !twoHundred && (last === 410 || directive !== null),
  );
  if (report.gone) {
    expect(report.http_status).toBe(last);
    if (last === 410) reached.gone++;
    else if (twoHundred) reached.disabledDelivered++;
    else reached.disabledFailed++;
  }
  if (directive === "abort" && !twoHundred && last !== 410) reached.aborted++;
  if (report.outcome === "delivered") reached.delivered++;
  const timedOut = report.timed_out;
  if (report.outcome !== "delivered") expect(timedOut).toBe(T0 + report.latency_ms >= deadline);
  if (report.ours === "cut_off") {
    expect(plan.lane).not.toBe("slow");
    expect(timedOut).toBe(true);
    reached.cutOff++;
  } else if (timedOut && plan.lane === "slow") reached.slowTimeout++;
  if (report.ours === "paused") {
    expect(report.outcome).toBe("retry");
    if (webhooks.length === 0 && trace.requests.length === 0 && script.pausedAtStart !== null) reached.pausedAtStart++;
    else reached.pausedAtSlot++;
  }
  if (report.ours === "slot_missed") {
    expect(webhooks.length === 0 || trace.rejected.some((r) => r.refetch)).toBe(true);
    reached.slotMissed++;
  }
  if (report.ours === "token_busy") {
    expect(report.http_status).toBe(401);
    expect(trace.rejected).toEqual([{ generation: CACHED_GENERATION, refetch: true }]);
    reached.tokenBusy++;
  }
  if (trace.rejected.some((r) => r.refetch) && report.ours !== "token_busy") reached.refetchGranted++;
  if (plan.token.mode === "cached" && webhooks.some((w) => w.token === 0)) {
    if (trace.rejected[0]?.refetch === true) reached.cachedRefused++;
  }
  if (trace.rejected.some((r) => !r.refetch)) reached.fetchedRefused++;
  if (report.step === "token" && report.ours === null && report.outcome === "retry") {
    if (report.note !== null) reached.refetchTokenFailed++;
    else reached.tokenFailed++;
  }
  if (report.step === "webhook" && report.http_status === null && report.ours === null) reached.sendFailed++;
  if (report.outcome === "retry" && report.step === "webhook" && report.http_status !== null && report.ours === null) {
    reached.retriedStatus++;
    if (report.http_status >= 300 && report.http_status < 400) {
      expect(report.error).toContain("redirects are not followed");
      reached.redirect++;
    }
  }
  if (webhooks.some((w) => w.round === 1)) reached.nonceRound++;
  if ((last === 429 || last === 503) && report.retry_after_seconds !== null && report.ours === null) reached.rememberedPause++;
}

describe("one delivery attempt, over random receivers and endpoints", () => {
  it("1-4: nothing leaves after an end; one webhook per token and round; a token used only by its generation; the report says what happened", async () => {
    await fc.assert(
      fc.asyncProperty(scripts, async (script) => {
        const { plan, port, trace, deadline } = world(script);
        const ended = await drive(port, plan);
        check(script, ended, trace, deadline, plan, port.now());
      }),
      { numRuns: RUNS },
    );
    // About 0.5 s alone; the suite's busiest moments make it ten times that.
  }, 300_000);

  afterAll(() => {
    // Every rule above was reached by the runs (a generator that stopped reaching one is a defect).
    console.info(`attempt properties reached: ${JSON.stringify(reached)}`);
    for (const [rule, n] of Object.entries(reached)) expect(n, `the properties never reached: ${rule}`).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------------------------
// The paths, one by one

const basePlan = (over: Partial<AttemptPlan> = {}): AttemptPlan => ({
  delivery_id: "dlv_1",
  series: 1,
  attempt: 2,
  version: 3,
  lane: "fast",
  url: "https://receiver.example/hook",
  started_at: T0,
  deadline_seconds: 2,
  slow_deadline_seconds: 30,
  token: { mode: "fetch", keep: false },
  token_cache: false,
  slot: null,
  default_token_lifetime_ms: 300_000,
  max_pause_ms: 600_000,
  ...over,
});
const at = (now: number) => ({ now, timed_out: false });

/** Steps one attempt of `plan` by hand: `go` feeds an event and answers the next command; `state` is the state after it. */
function stepper(plan: AttemptPlan) {
  let s = newAttempt(plan);
  const go = (e: AttemptEvent) => {
    const r = attemptStep(s, e);
    s = r.state;
    return r.next;
  };
  return { go, state: () => s };
}

describe("the attempt's core, step by step", () => {
  it("the default path: fetch, no slot, send, delivered; the webhook asks the object first because the token request was awaited", () => {
    const { go, state } = stepper(basePlan());
    expect(go({ ...at(T0), type: "start", paused_until: null })).toEqual({ do: "fetch_token" });
    expect(go({ ...at(T0), type: "before_request", round: 0 })).toEqual({ do: "go" });
    expect(go({ ...at(T0 + 40), type: "token_fetched", ms: 40, expires_in_seconds: 60 })).toEqual({ do: "wait", until: T0 + 40 });
    expect(go({ ...at(T0 + 40), type: "slot_reached", paused_until: null })).toEqual({ do: "send" });
    expect(go({ ...at(T0 + 40), type: "before_request", round: 0 })).toEqual({ do: "check", again: false });
    expect(go({ ...at(T0 + 41), type: "verdict", go: true })).toEqual({ do: "go" });
    const end = go({ ...at(T0 + 60), type: "answered", answer: { status: 204, retry_after_seconds: null, response: null } });
    expect(end).toMatchObject({
      do: "report",
      outcome: "delivered",
      report: { outcome: "delivered", http_status: 204, token_ms: 40, latency_ms: 60 },
    });
    expect(state().phase).toBe("concluded");
    expect(() => attemptStep(state(), { ...at(T0 + 61), type: "dropped" })).toThrow(/does not answer/);
  });

  it("a cached token and no wait goes from begin to the POST without asking the object", () => {
    const { go } = stepper(basePlan({ token: { mode: "cached", generation: 3 }, token_cache: true }));
    expect(go({ ...at(T0), type: "start", paused_until: null })).toEqual({ do: "open_token" });
    expect(go({ ...at(T0), type: "token_opened" })).toEqual({ do: "wait", until: T0 });
    expect(go({ ...at(T0), type: "slot_reached", paused_until: null })).toEqual({ do: "send" });
    expect(go({ ...at(T0), type: "before_request", round: 0 })).toEqual({ do: "go" });
    // A DPoP nonce round after the first POST's answer asks first: that answer was awaited.
    expect(go({ ...at(T0 + 5), type: "before_request", round: 1 })).toEqual({ do: "check", again: true });
  });

  it("a 401 to the cached token: dropped by its generation, refetched, sent again with the note; a 401 to the new one drops it too", () => {
    const { go } = stepper(basePlan({ token: { mode: "cached", generation: 3 }, token_cache: true }));
    go({ ...at(T0), type: "start", paused_until: null });
    go({ ...at(T0), type: "token_opened" });
    go({ ...at(T0), type: "slot_reached", paused_until: null });
    go({ ...at(T0), type: "before_request", round: 0 });
    const unauthorized = { status: 401, retry_after_seconds: null, response: null };
    expect(go({ ...at(T0 + 10), type: "answered", answer: unauthorized })).toEqual({ do: "reject_token", generation: 3, refetch: true });
    expect(go({ ...at(T0 + 11), type: "rejection_answered", refetch: true, slot: null, stopped: null })).toEqual({ do: "fetch_token" });
    // The grant was the object's go: the token request leaves without a second call.
    expect(go({ ...at(T0 + 11), type: "before_request", round: 0 })).toEqual({ do: "go" });
    expect(go({ ...at(T0 + 50), type: "token_fetched", ms: 39, expires_in_seconds: 600 })).toEqual({
      do: "keep_token",
      lifetime_ms: 600_000,
    });
    go({ ...at(T0 + 51), type: "token_kept", generation: 4 });
    go({ ...at(T0 + 51), type: "slot_reached", paused_until: null });
    expect(go({ ...at(T0 + 51), type: "before_request", round: 0 })).toEqual({ do: "check", again: true });
    go({ ...at(T0 + 52), type: "verdict", go: true });
    expect(go({ ...at(T0 + 60), type: "answered", answer: unauthorized })).toEqual({ do: "reject_token", generation: 4, refetch: false });
    expect(go({ ...at(T0 + 61), type: "dropped" })).toMatchObject({
      do: "report",
      report: { outcome: "retry", http_status: 401, note: expect.stringContaining("sent again") as string },
    });
  });

  it("a 429 with Retry-After is remembered for this isolate's other attempts, at most the longest pause", () => {
    let s = newAttempt(basePlan({ token: { mode: "cached", generation: 1 }, token_cache: true }));
    const steps: AttemptEvent[] = [
      { ...at(T0), type: "start", paused_until: null },
      { ...at(T0), type: "token_opened" },
      { ...at(T0), type: "slot_reached", paused_until: null },
      { ...at(T0), type: "before_request", round: 0 },
    ];
    for (const e of steps) s = attemptStep(s, e).state;
    const r = attemptStep(s, { ...at(T0 + 5), type: "answered", answer: { status: 429, retry_after_seconds: 3_600, response: null } });
    expect(r.writes).toEqual({ pause_until: T0 + 5 + 600_000 });
    expect(r.next).toMatchObject({ do: "report", report: { outcome: "retry", retry_after_seconds: 3_600, ours: null } });
  });

  it("the fast lane's deadline cuts a slow receiver off; the slow lane's is a timeout", () => {
    for (const lane of ["fast", "slow"] as const) {
      let s = newAttempt(basePlan({ lane }));
      s = attemptStep(s, { ...at(T0), type: "start", paused_until: null }).state;
      s = attemptStep(s, { ...at(T0), type: "before_request", round: 0 }).state;
      const failure: Failure = { http_status: null, message: "the attempt's 2 s deadline passed", retry_after_seconds: null };
      const r = attemptStep(s, { now: T0 + 2_000, timed_out: true, type: "token_failed", failure });
      expect(r.next).toMatchObject({
        do: "report",
        outcome: "timeout",
        report: { ours: lane === "fast" ? "cut_off" : null, timed_out: true },
      });
    }
  });
});
