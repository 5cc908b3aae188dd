/**
 * One delivery attempt, decided (docs/webhooks.md, "One attempt, step by step"). A sans-IO core:
 * `attemptStep(state, event)` takes what the driver (consumer.ts `drive`) last observed and answers
 * the next thing to do, the state after it and the writes it calls for. It performs nothing: no
 * fetch, no object call, no clock, no timer. Every rule of "may this request leave now, and what
 * does its answer come to?" is here, in one place:
 *
 * - a pause this isolate saw (429/503 with Retry-After to another attempt) sends nothing;
 * - before any request leaves (each token hop and nonce round, the webhook, the webhook again),
 *   the endpoint's object is asked again when anything was awaited since it last said go (the
 *   product brief's "Organizations end cleanly": nothing is sent after a DELETE or a disable was
 *   answered); with nothing awaited (a cached token, no wait) `begin` was that check;
 * - the rate limit's slot: the webhook leaves within it, or not at all (retried at once);
 * - a 401 to the endpoint's cached token drops it (by its generation), and the attempt the object
 *   grants the refetch fetches the next one and sends once more; a 401 to a token this attempt
 *   fetched and kept drops that one (a carried one is simply not offered);
 * - every answer but a 2xx is retried on the schedule (product brief, "Outbound"), except a 410,
 *   which ends the delivery and disables the configuration (EndpointObject.finish decides whether
 *   the url changed since); the fast and new lanes' deadline cuts a slow receiver off (`cut_off`).
 *
 * Phases, as the Svix server's worker names them: `prepared` (begun, no token yet), `token_in_hand`,
 * `sent` (the webhook had an answer; a 401 may still refetch and send again), `concluded` (a report
 * or a stop was answered; no event is taken after it). The driver feeds each event the command it
 * was given asked for; an event nobody asked for is a fault of the driver and throws.
 */
import type { AttemptAnswer, AttemptCall, Begun } from "../objects/endpoints/attempts";
import { MAX_PAUSE_MS, TOKEN_DEFAULT_LIFETIME_MS } from "../objects/endpoints/policy";
import type { AttemptReport, FetchedToken, Lane } from "../schemas/webhooks";
import type { ReceiverDirective } from "./outbound";

/** The rate limit's slot: the webhook leaves no earlier than `not_before` and no later than `by`. */
export interface Slot {
  not_before: number;
  by: number;
}

/** What `begin` granted, as plain data (no secret: the sealed token stays with the driver). */
export interface AttemptPlan {
  delivery_id: string;
  series: number;
  attempt: number;
  version: number;
  lane: Lane;
  url: string;
  started_at: number;
  /** The attempt's deadline in whole seconds (for the cut-off's message). */
  deadline_seconds: number;
  /** The slow lane's deadline in seconds, where a cut-off endpoint moves. */
  slow_deadline_seconds: number;
  /** How the token is had: the endpoint's (`cached`, named by its generation) or fetched (`keep`: offered to the endpoint). */
  token: { mode: "cached"; generation: number } | { mode: "fetch"; keep: boolean };
  /** The configuration shares its receiver token (token_cache). */
  token_cache: boolean;
  slot: Slot | null;
  /** A token without expires_in is taken to live this long (RFC 6749 5.1; policy.ts). */
  default_token_lifetime_ms: number;
  /** The longest pause an answer's Retry-After can ask for (policy.ts MAX_PAUSE_MS). */
  max_pause_ms: number;
}

/**
 * What `begin` granted, as the core reads it: plain data, the sealed token left with the driver.
 * `timing`: when the attempt starts, its deadline in whole seconds, and the slow lane's.
 */
export function planOf(
  ticket: { delivery_id: string },
  begun: Extract<Begun, { go: true }>,
  timing: { started_at: number; deadline_seconds: number; slow_deadline_seconds: number },
): AttemptPlan {
  return {
    delivery_id: ticket.delivery_id,
    series: begun.series,
    attempt: begun.attempt,
    version: begun.version,
    lane: begun.lane,
    url: begun.configuration.url,
    ...timing,
    token:
      begun.token.mode === "cached" ? { mode: "cached", generation: begun.token.generation } : { mode: "fetch", keep: begun.token.keep },
    token_cache: begun.configuration.token_cache,
    slot: begun.slot,
    default_token_lifetime_ms: TOKEN_DEFAULT_LIFETIME_MS,
    max_pause_ms: MAX_PAUSE_MS,
  };
}

export type Phase = "prepared" | "token_in_hand" | "sent" | "concluded";

/** What the driver observed with every event: the clock and whether the attempt's deadline passed. */
export interface Seen {
  now: number;
  timed_out: boolean;
}

/** The receiver's answer to a webhook POST (redirects are not followed). */
export interface Answer {
  status: number;
  retry_after_seconds: number | null;
  response: AttemptResponseOf;
  /** The receiver's `webhook-delivery` header: disable its configuration, or abort this delivery's retries. */
  directive?: ReceiverDirective | null | undefined;
}
type AttemptResponseOf = AttemptReport["response"];

/** A request that got no usable answer (a network error, the deadline, a token endpoint's refusal). */
export interface Failure {
  http_status: number | null;
  message: string;
  retry_after_seconds: number | null;
}

export type AttemptEvent = Seen &
  (
    | { type: "start"; paused_until: number | null }
    | { type: "token_opened" }
    | { type: "token_fetched"; ms: number; expires_in_seconds: number | null }
    | { type: "token_failed"; failure: Failure }
    /** The endpoint kept the fetched token as `generation` (null: not kept), or could not be reached (`carried`). */
    | { type: "token_kept"; generation: number | null }
    | { type: "token_carried"; token: FetchedToken }
    | { type: "slot_reached"; paused_until: number | null }
    /** A request of the attempt is ready to leave (`round` 1: the same request after a DPoP nonce challenge). */
    | { type: "before_request"; round: number }
    | { type: "verdict"; go: true }
    | { type: "verdict"; go: false; reason: string }
    | { type: "answered"; answer: Answer }
    | { type: "send_failed"; failure: Failure }
    /** The endpoint's answer to a 401 (a refetch granted with its slot, or stopped: the configuration ended meanwhile). */
    | { type: "rejection_answered"; refetch: boolean; slot: Slot | null; stopped: string | null }
    | { type: "dropped" }
    /** A request the endpoint's object stopped before it left: it concluded the attempt itself. */
    | { type: "stopped"; reason: string }
  );

/** What the driver does next; each names the event that answers it. */
export type Next =
  /** Open the endpoint's sealed token → token_opened. */
  | { do: "open_token" }
  /** Request a token from the receiver (every hop asks before_request) → token_fetched | token_failed | stopped. */
  | { do: "fetch_token" }
  /** Seal the fetched token, living `lifetime_ms`, and hand it to the endpoint → token_kept | token_carried. */
  | { do: "keep_token"; lifetime_ms: number }
  /** Wait until `until` (no wait if it passed) → slot_reached. */
  | { do: "wait"; until: number }
  /** Sign and POST the webhook (each round asks before_request) → answered | send_failed | stopped. */
  | { do: "send" }
  /** Ask the endpoint's object whether the request may still leave (`again`: the webhook went once) → verdict. */
  | { do: "check"; again: boolean }
  /** The request may leave now (the answer to before_request). */
  | { do: "go" }
  /** The request may not leave (the answer to before_request): the object concluded the attempt. */
  | { do: "refuse"; reason: string }
  /** Tell the endpoint the receiver refused its token `generation`; `refetch`: this attempt asks to fetch the next → rejection_answered | dropped. */
  | { do: "reject_token"; generation: number; refetch: boolean }
  /** Report the attempt to the endpoint's object (the end). */
  | { do: "report"; report: AttemptReport; outcome: AttemptOutcome }
  /** The object concluded the attempt itself: nothing to report (the end). */
  | { do: "stop"; reason: string };

/** What an attempt came to, for the logs and metrics (log.ts DeliveryOutcome). */
export type AttemptOutcome = "delivered" | "timeout" | "token_failed" | "webhook_failed";

export interface AttemptState {
  readonly plan: AttemptPlan;
  phase: Phase;
  /** The command given, whose event is awaited (null before start). */
  asked: Next["do"] | null;
  /** The command before_request interrupted (fetch_token or send), resumed by go. */
  within: "fetch_token" | "send" | null;
  /** Something was awaited outside this isolate since the endpoint's object last said go. */
  unchecked: boolean;
  /** The second send after a 401 (and the token request before it): the object says "sent again". */
  again: boolean;
  /** The token this attempt used is the endpoint's cached one (a 401 to it drops it by generation). */
  cached: boolean;
  /** The slot the next send needs. */
  slot: Slot | null;
  token_ms: number | null;
  /** A fetched token the endpoint could not take: carried by the report. */
  carried: FetchedToken | null;
  /** The generation the endpoint kept this attempt's fetched token as (a 401 to it drops it). */
  kept_generation: number | null;
  note: string | null;
  /** The receiver's last answer, kept while a 401's drop is being told to the endpoint. */
  answer: Answer | null;
  /** The round of the request waiting for the endpoint's verdict. */
  round: number;
  /** The webhook was held back at the moment it would have left: its slot had closed. */
  withheld: boolean;
}

/** The writes a step calls for besides its command: the pause this isolate remembers for the endpoint. */
export interface Writes {
  pause_until?: number;
}

export interface Stepped {
  state: AttemptState;
  next: Next;
  writes: Writes;
}

export function newAttempt(plan: AttemptPlan): AttemptState {
  return {
    plan,
    phase: "prepared",
    asked: null,
    within: null,
    unchecked: false,
    again: false,
    cached: plan.token.mode === "cached",
    slot: plan.slot,
    token_ms: null,
    carried: null,
    kept_generation: null,
    note: null,
    answer: null,
    round: 0,
    withheld: false,
  };
}

/** The events each command is answered by. */
const ANSWERS: Record<Next["do"] | "none", readonly AttemptEvent["type"][]> = {
  none: ["start"],
  open_token: ["token_opened"],
  fetch_token: ["token_fetched", "token_failed", "stopped", "before_request"],
  keep_token: ["token_kept", "token_carried"],
  wait: ["slot_reached"],
  send: ["answered", "send_failed", "stopped", "before_request"],
  check: ["verdict"],
  go: [],
  refuse: [],
  reject_token: ["rejection_answered", "dropped"],
  report: [],
  stop: [],
};

/** One step: the event answers the command last given; the result is the next command. */
export function attemptStep(prev: AttemptState, event: AttemptEvent): Stepped {
  const awaited = prev.asked ?? "none";
  if (prev.phase === "concluded" || !ANSWERS[awaited].includes(event.type)) {
    throw new Error(`attempt: ${event.type} does not answer ${awaited} (phase ${prev.phase})`);
  }
  const s: AttemptState = { ...prev };
  const out = (next: Next): Stepped => {
    if (next.do === "report" || next.do === "stop") s.phase = "concluded";
    if (next.do !== "go" && next.do !== "refuse") s.asked = next.do;
    else s.asked = s.within;
    if (next.do === "fetch_token" || next.do === "send") s.within = next.do;
    return { state: s, next, writes: {} };
  };
  const report = (
    step: "token" | "webhook",
    status: number | null,
    outcome: AttemptReport["outcome"],
    error: string | null,
    extra: Extra = {},
  ) => out(reportOf(s, event, step, status, outcome, error, extra));

  switch (event.type) {
    case "start": {
      const paused = pausedHere(s, event, event.paused_until);
      if (paused !== null) return out(paused);
      return out(s.plan.token.mode === "cached" ? { do: "open_token" } : { do: "fetch_token" });
    }
    case "token_opened":
      s.phase = "token_in_hand";
      return toSlot(s, event, out);
    case "token_fetched": {
      s.token_ms = event.ms;
      s.carried = null;
      s.kept_generation = null;
      s.cached = false;
      const keep = s.again || (s.plan.token.mode === "fetch" && s.plan.token.keep);
      if (keep) {
        const lifetime = event.expires_in_seconds !== null ? event.expires_in_seconds * 1000 : s.plan.default_token_lifetime_ms;
        return out({ do: "keep_token", lifetime_ms: lifetime });
      }
      s.phase = "token_in_hand";
      return toSlot(s, event, out);
    }
    case "token_kept":
      s.kept_generation = event.generation;
      s.phase = "token_in_hand";
      return toSlot(s, event, out);
    case "token_carried":
      s.carried = event.token;
      s.phase = "token_in_hand";
      return toSlot(s, event, out);
    case "token_failed":
      if (s.again) s.note = "the receiver refused the endpoint's token (401); fetching a new one failed";
      return report("token", event.failure.http_status, "retry", event.failure.message, { retryAfter: event.failure.retry_after_seconds });
    case "slot_reached": {
      // Missed already: nothing more is signed or asked for it.
      if (slotClosed(s, event.now)) return out(slotMissed(s, event));
      if (s.again) s.note = "the receiver refused the endpoint's token (401); a new token was fetched and the webhook sent again";
      const paused = pausedHere(s, event, event.paused_until);
      if (paused !== null) return out(paused);
      return out({ do: "send" });
    }
    case "before_request": {
      s.round = event.round;
      if (s.unchecked) return out({ do: "check", again: s.again || event.round > 0 });
      return leave(s, event, out);
    }
    case "verdict":
      if (!event.go) return out({ do: "refuse", reason: event.reason });
      return leave(s, event, out);
    case "stopped":
      // Held back here (the slot), or stopped by the endpoint's object (it concluded the attempt).
      if (s.withheld) return out(slotMissed(s, event));
      return out({ do: "stop", reason: event.reason });
    case "send_failed":
      return report("webhook", event.failure.http_status, "retry", event.failure.message);
    case "answered":
      return answered(s, event, event.answer, out, report);
    case "rejection_answered": {
      if (event.stopped !== null) return out({ do: "stop", reason: event.stopped });
      if (!event.refetch) {
        return report(
          "webhook",
          401,
          "retry",
          "webhook URL answered 401 to the endpoint's token; it was dropped and the delivery is retried",
          {
            ours: "token_busy",
          },
        );
      }
      // Granting the refetch was the object's go (it stops the attempt of a configuration gone
      // instead): the token request that follows needs no second call.
      s.again = true;
      s.unchecked = false;
      s.slot = event.slot;
      s.phase = "sent";
      return out({ do: "fetch_token" });
    }
    case "dropped": {
      if (s.answer === null) throw new Error("attempt: no answer to conclude");
      return conclusion(s.answer, report);
    }
  }
}

type Extra = { retryAfter?: number | null; gone?: boolean; ours?: AttemptReport["ours"]; response?: AttemptReport["response"] };
type Out = (next: Next) => Stepped;
type ReportFn = (
  step: "token" | "webhook",
  status: number | null,
  outcome: AttemptReport["outcome"],
  error: string | null,
  extra?: Extra,
) => Stepped;

/** Whether the rate limit's slot has closed: the webhook may no longer leave. */
const slotClosed = (s: AttemptState, now: number): boolean => s.slot !== null && now > s.slot.by;

/** The report of a webhook not sent because its slot closed first (retried at once; not the receiver's doing). */
const slotMissed = (s: AttemptState, event: Seen): Next =>
  reportOf(
    s,
    event,
    "token",
    null,
    "retry",
    "the webhook could not leave within the rate limit's slot (its token request or the endpoint's check took too long); it was not sent and is retried at once",
    { ours: "slot_missed" },
  );

/**
 * The request may leave now. The webhook's first round keeps its rate-limit slot at this moment,
 * after the endpoint's check: that answer takes time too, and a webhook leaving after its slot
 * closed could put more than `rate_limit` requests in one second (slots.ts).
 */
function leave(s: AttemptState, event: Seen, out: Out): Stepped {
  if (s.within === "send" && s.round === 0 && slotClosed(s, event.now)) {
    s.withheld = true;
    return out({ do: "refuse", reason: "the rate limit's slot closed before the webhook could leave" });
  }
  // The request about to leave is itself awaited: whatever follows its answer asks again.
  s.unchecked = true;
  return out({ do: "go" });
}

/** After the token: wait for the slot if there is one (a wait is awaited: the next request asks again). */
function toSlot(s: AttemptState, event: Seen, out: Out): Stepped {
  const until = s.slot?.not_before ?? event.now;
  if (until > event.now) s.unchecked = true;
  return out({ do: "wait", until });
}

/** Another attempt of this isolate was just told to wait: this one sends nothing (its report says how long is left). */
function pausedHere(s: AttemptState, event: Seen, until: number | null): Next | null {
  if (until === null || until <= event.now) return null;
  return reportOf(
    s,
    event,
    "webhook",
    null,
    "retry",
    "not sent: the receiver had just answered another attempt 429 or 503 with Retry-After",
    {
      ours: "paused",
      retryAfter: (until - event.now) / 1000,
    },
  );
}

function answered(s: AttemptState, event: Seen, answer: Answer, out: Out, report: ReportFn): Stepped {
  s.phase = "sent";
  s.answer = answer;
  // A pause the receiver asks for stops this isolate's other attempts of the endpoint at once.
  const writes: Writes =
    (answer.status === 429 || answer.status === 503) && answer.retry_after_seconds !== null
      ? { pause_until: event.now + Math.min(s.plan.max_pause_ms, answer.retry_after_seconds * 1000) }
      : {};
  const withWrites = (r: Stepped): Stepped => ({ ...r, writes });
  if (answer.status === 401 && s.cached) {
    // The receiver refused the endpoint's token: drop it, fetch the next one (one attempt does), send once more.
    s.cached = false;
    if (s.plan.token.mode !== "cached") throw new Error("attempt: a cached token without its generation");
    return withWrites(out({ do: "reject_token", generation: s.plan.token.generation, refetch: true }));
  }
  // A token this attempt fetched for the endpoint and the receiver refused: never used again.
  if (answer.status === 401 && s.plan.token_cache) {
    s.carried = null;
    if (s.kept_generation !== null) {
      return withWrites(out({ do: "reject_token", generation: s.kept_generation, refetch: false }));
    }
  }
  return withWrites(conclusion(answer, report));
}

/** What the receiver's final answer comes to. */
function conclusion(answer: Answer, report: ReportFn): Stepped {
  const status = answer.status;
  // `webhook-delivery: disable` (docs/receivers.md, "The receiver's say") ends the configuration as
  // a 410 does: `gone` asks the endpoint's object to disable it, if its url is still this one.
  const disable = answer.directive === "disable";
  if (status >= 200 && status < 300) return report("webhook", status, "delivered", null, disable ? { gone: true } : {});
  if (status === 410 || disable) {
    const why = status === 410 ? "webhook URL answered 410 Gone" : `webhook URL answered ${status} with webhook-delivery: disable`;
    return report("webhook", status, "failed", `${why}; configuration disabled`, { gone: true, response: answer.response });
  }
  if (answer.directive === "abort") {
    // The receiver's word on this one delivery: no more retries (recoverable like any failed one).
    return report("webhook", status, "failed", `webhook URL answered ${status} with webhook-delivery: abort-message; not retried`, {
      response: answer.response,
    });
  }
  const redirect = status >= 300 && status < 400 ? "; redirects are not followed" : "";
  return report("webhook", status, "retry", `webhook URL answered ${status}${redirect}`, {
    retryAfter: answer.retry_after_seconds,
    response: answer.response,
  });
}

function reportOf(
  s: AttemptState,
  event: Seen,
  step: "token" | "webhook",
  httpStatus: number | null,
  outcome: AttemptReport["outcome"],
  error: string | null,
  extra: Extra,
): Next {
  const p = s.plan;
  const timedOut = event.timed_out && outcome !== "delivered";
  // The fast and new lanes cut a slow receiver off early: the endpoint moves to the slow lane and
  // the delivery is retried at once, without counting against its schedule.
  const cutOff = timedOut && p.lane !== "slow" && extra.ours === undefined;
  const report: AttemptReport = {
    delivery_id: p.delivery_id,
    series: p.series,
    attempt: p.attempt,
    started_at: p.started_at,
    step,
    http_status: httpStatus,
    latency_ms: Math.max(0, event.now - p.started_at),
    outcome,
    error: cutOff
      ? `no answer within the fast lane's ${p.deadline_seconds} s; the endpoint moves to the slow lane (deadline ${p.slow_deadline_seconds} s) and the delivery is retried at once`
      : error,
    note: s.note,
    response: extra.response ?? null,
    retry_after_seconds: extra.retryAfter ?? null,
    gone: extra.gone ?? false,
    url: p.url,
    lane: p.lane,
    version: p.version,
    timed_out: timedOut,
    ours: cutOff ? "cut_off" : (extra.ours ?? null),
    token_ms: s.token_ms,
    token: s.carried,
  };
  const kind: AttemptOutcome =
    outcome === "delivered" ? "delivered" : timedOut ? "timeout" : step === "token" ? "token_failed" : "webhook_failed";
  return { do: "report", report, outcome: kind };
}

/** What one attempt's I/O is, to `drive`: the consumer's (consumer.ts) over the real world, the properties' over a modelled one. */
export interface AttemptPort {
  now(): number;
  /** Whether the attempt's deadline has passed. */
  timedOut(): boolean;
  /** Until when this isolate saw the endpoint paused (null: not paused). */
  pausedUntil(): number | null;
  rememberPause(until: number): void;
  openToken(): Promise<void>;
  /** The token request; `beforeRequest` is asked as each of its requests leaves (null: go, else why not). */
  fetchToken(
    beforeRequest: () => Promise<string | null>,
  ): Promise<{ expires_in_seconds: number | null } | { failure: Failure } | { stopped: string }>;
  /** Seals the token in hand for the endpoint's cache (its sealed form, lifetime and key). */
  sealToken(lifetimeMs: number): Promise<FetchedToken>;
  wait(ms: number): Promise<void>;
  /** The signed POST; `beforeRequest` is asked as each round leaves (`round` 1: after a DPoP nonce challenge). */
  send(beforeRequest: (round: number) => Promise<string | null>): Promise<{ answer: Answer } | { failure: Failure } | { stopped: string }>;
  /**
   * The endpoint's object, through its one entry (EndpointObject.step): what this attempt asks it
   * between `begin` and the report, each call named by the driver.
   */
  ask<C extends AttemptCall<EndpointAsk>>(call: C): Promise<AttemptAnswer<C>>;
}

/** The calls an attempt makes to its endpoint's object while it runs (`begin` and `finish` are the consumer's). */
export type EndpointAsk = "proceed" | "store_token" | "token_rejected";

/** What an attempt ends in: its report, or a stop (the endpoint's object concluded it). */
export type Ended = { report: AttemptReport; outcome: AttemptOutcome } | { stopped: string };

/** Omit over each member of a union (an event without what `drive` adds to each). */
type Bare<T> = T extends unknown ? Omit<T, keyof Seen> : never;

/**
 * Runs one attempt: does through `port` what each step names, and nothing else. The requests'
 * hooks run the core too: it says whether the endpoint's object must be asked first.
 */
export async function drive(port: AttemptPort, plan: AttemptPlan): Promise<Ended> {
  let state = newAttempt(plan);
  const ref = { delivery_id: plan.delivery_id, series: plan.series, attempt: plan.attempt };
  const step = (event: Bare<AttemptEvent>): Next => {
    const stepped = attemptStep(state, { ...event, now: port.now(), timed_out: port.timedOut() } as AttemptEvent);
    state = stepped.state;
    if (stepped.writes.pause_until !== undefined) port.rememberPause(stepped.writes.pause_until);
    return stepped.next;
  };
  const beforeRequest = async (round: number): Promise<string | null> => {
    let next = step({ type: "before_request", round });
    if (next.do === "check") {
      const verdict = await port.ask({ kind: "proceed", ref, again: next.again });
      next = step(verdict.go ? { type: "verdict", go: true } : { type: "verdict", go: false, reason: verdict.reason });
    }
    return next.do === "refuse" ? next.reason : null;
  };

  let next = step({ type: "start", paused_until: port.pausedUntil() });
  for (;;) {
    switch (next.do) {
      case "report":
        return { report: next.report, outcome: next.outcome };
      case "stop":
        return { stopped: next.reason };
      case "open_token":
        await port.openToken();
        next = step({ type: "token_opened" });
        break;
      case "fetch_token": {
        const t0 = port.now();
        const got = await port.fetchToken(() => beforeRequest(0));
        if ("stopped" in got) next = step({ type: "stopped", reason: got.stopped });
        else if ("failure" in got) next = step({ type: "token_failed", failure: got.failure });
        else next = step({ type: "token_fetched", ms: port.now() - t0, expires_in_seconds: got.expires_in_seconds });
        break;
      }
      case "keep_token": {
        const token = await port.sealToken(next.lifetime_ms);
        let generation: number | null;
        try {
          generation = await port.ask({ kind: "store_token", ref, token });
        } catch {
          // The object did not take it: the report carries it instead.
          next = step({ type: "token_carried", token });
          break;
        }
        next = step({ type: "token_kept", generation });
        break;
      }
      case "wait": {
        const ms = next.until - port.now();
        if (ms > 0) await port.wait(ms);
        next = step({ type: "slot_reached", paused_until: port.pausedUntil() });
        break;
      }
      case "send": {
        const sent = await port.send(beforeRequest);
        if ("stopped" in sent) next = step({ type: "stopped", reason: sent.stopped });
        else if ("failure" in sent) next = step({ type: "send_failed", failure: sent.failure });
        else next = step({ type: "answered", answer: sent.answer });
        break;
      }
      case "reject_token": {
        const { generation, refetch } = next;
        const answer = await port.ask({ kind: "token_rejected", ref, generation, refetch });
        next = refetch
          ? step({ type: "rejection_answered", refetch: answer.refetch, slot: answer.slot, stopped: answer.stopped ?? null })
          : step({ type: "dropped" });
        break;
      }
      case "check":
      case "go":
      case "refuse":
        // Answers to a request's hook, never a command of their own.
        throw new Error(`attempt: ${next.do} outside a request`);
    }
  }
}
