/**
 * How an endpoint's receiver is paced, as pure functions over its row (policy.ts has the numbers):
 * - the lane follows the receiver's speed: an attempt cut off by the fast lane's deadline moves
 *   the endpoint to the slow lane; a new endpoint's first attempt that answers in time moves it to
 *   the fast lane; QUICK_STREAK quick attempts bring a slow one back;
 * - the window (attempts out at once) starts at 1, grows by one per delivery up to the lane's
 *   maximum, halves on a failure and drops to 1 on a timeout, a 429 or a 503;
 * - a 429 or 503 with Retry-After pauses the whole endpoint (at most MAX_PAUSE_MS), also when it
 *   was the delivery's last try, and when another attempt of the same isolate saw it first
 *   (`ours: "paused"`, the webhook not sent);
 * - CIRCUIT_THRESHOLD consecutive failures of the receiver (a retry, or a delivery whose retries
 *   ran out; not a 410, which disables the endpoint instead) open the circuit: nothing is sent
 *   until the next probe (probeDelay), then one attempt at a time until one succeeds;
 * - health: since when every attempt has failed, and the last delivery; an endpoint failing for
 *   WEBHOOK_DISABLE_AFTER_SECONDS is to be disabled (Svix-style).
 * Attempts that failed on our side (`ours`, step "configuration") change nothing here.
 */
import { isoTime } from "../../lib/time";
import type { AttemptReport, Lane, WebhookConfigurationRecord } from "../../schemas/webhooks";
import { CIRCUIT_THRESHOLD, MAX_PAUSE_MS, probeDelay, QUICK_STREAK, WINDOW_MAX } from "./policy";
import type { EndpointRow } from "./schema";
import { needsToken } from "./token";

/** The endpoint columns an attempt changes. */
export type EndpointChange = Partial<
  Pick<
    EndpointRow,
    | "lane"
    | "quick_streak"
    | "in_flight_limit"
    | "failures"
    | "pause_kind"
    | "paused_until_ms"
    | "pause_reason"
    | "probes"
    | "failing_since_ms"
    | "last_delivered_ms"
    | "token_ms"
  >
>;

/** What the endpoint learns from one concluded attempt. */
export interface AttemptFacts {
  report: Pick<
    AttemptReport,
    "lane" | "ours" | "step" | "http_status" | "timed_out" | "latency_ms" | "token_ms" | "started_at" | "retry_after_seconds"
  >;
  /** The attempt's outcome after the object's own rules (410, exhausted retries). */
  outcome: "delivered" | "retry" | "failed";
}

export interface Timing {
  fastLaneMs: number;
  disableAfterMs: number;
}

/** Whether nothing may be sent right now, and why. */
export function pausedNow(ep: EndpointRow, now: number): { until: number | null; reason: string } | null {
  if (ep.pause_kind === null) return null;
  if (ep.pause_kind === "gone") return { until: null, reason: ep.pause_reason ?? "the webhook URL answered 410 Gone" };
  if (ep.paused_until_ms !== null && ep.paused_until_ms > now) return { until: ep.paused_until_ms, reason: ep.pause_reason ?? "paused" };
  return null;
}

/** How many of the endpoint's attempts may be out (in the Queue or in flight) at once, right now. */
export function windowOf(ep: EndpointRow, config: WebhookConfigurationRecord, now: number): number {
  if (config.ordered) return 1;
  // A half-open circuit lets one probe through; a missing shared token, one fetcher.
  if (ep.pause_kind === "circuit" || needsToken(ep, config, now)) return 1;
  return Math.max(1, Math.min(ep.in_flight_limit, WINDOW_MAX[ep.lane]));
}

/** The endpoint after one attempt: lane, window, circuit and pause, health. */
export function afterAttempt(ep: EndpointRow, facts: AttemptFacts, timing: Timing, now: number): EndpointChange {
  const { report, outcome } = facts;
  const change: EndpointChange = {};
  if (report.token_ms !== null)
    change.token_ms = ep.token_ms === null ? report.token_ms : Math.round(0.8 * ep.token_ms + 0.2 * report.token_ms);
  if (report.ours === "paused") {
    // Not sent: the pause another attempt was answered with, nothing else.
    const pausable = ep.pause_kind === null || ep.pause_kind === "retry_after";
    if (report.retry_after_seconds !== null && pausable) {
      Object.assign(change, retryAfterPause(ep, now + Math.min(MAX_PAUSE_MS, report.retry_after_seconds * 1000)), { in_flight_limit: 1 });
    }
    return change;
  }
  if (report.ours === "slot_missed" || report.ours === "token_busy" || report.step === "configuration") return change;

  // The lane.
  let lane: Lane = ep.lane;
  if (report.ours === "cut_off") {
    lane = "slow";
    change.quick_streak = 0;
  } else if (report.lane !== "slow") {
    if (ep.lane === "new") lane = "fast";
  } else if (report.latency_ms <= timing.fastLaneMs / 2) {
    const streak = ep.quick_streak + 1;
    if (streak >= QUICK_STREAK) {
      lane = "fast";
      change.quick_streak = 0;
    } else change.quick_streak = streak;
  } else change.quick_streak = 0;
  if (lane !== ep.lane) change.lane = lane;

  // The window.
  const backOff = report.ours === "cut_off" || report.timed_out || report.http_status === 429 || report.http_status === 503;
  const window = outcome === "delivered" ? ep.in_flight_limit + 1 : backOff ? 1 : Math.max(1, Math.floor(ep.in_flight_limit / 2));
  change.in_flight_limit = Math.max(1, Math.min(window, WINDOW_MAX[lane]));
  if (report.ours === "cut_off") return change;

  // Health, failures and the circuit; a Retry-After.
  if (outcome === "delivered") {
    change.failing_since_ms = null;
    change.last_delivered_ms = now;
    change.failures = 0;
    if (ep.pause_kind === "circuit") Object.assign(change, { pause_kind: null, paused_until_ms: null, pause_reason: null, probes: 0 });
    return change;
  }
  if (ep.failing_since_ms === null) change.failing_since_ms = report.started_at;
  const asked = pauseAsked(report);
  // A 410 disables the endpoint (the object asks the organization); no pause or circuit is needed.
  if (report.http_status === 410 && report.step === "webhook") return change;
  const failures = ep.failures + 1;
  change.failures = failures;
  if (ep.pause_kind === "circuit") {
    // A probe failed: the next one waits longer.
    const probes = ep.probes + 1;
    Object.assign(change, {
      probes,
      paused_until_ms: Math.max(now + probeDelay(probes), asked === null ? 0 : now + asked),
      pause_reason: circuitReason(failures, now + probeDelay(probes)),
    });
  } else if (failures >= CIRCUIT_THRESHOLD) {
    const until = Math.max(now + probeDelay(0), asked === null ? 0 : now + asked);
    Object.assign(change, { pause_kind: "circuit", probes: 0, paused_until_ms: until, pause_reason: circuitReason(failures, until) });
  } else if (asked !== null) {
    Object.assign(change, retryAfterPause(ep, now + asked, report.http_status));
  }
  return change;
}

/** How long the receiver asked us to wait (a 429 or 503 with Retry-After), capped; null if it did not. */
function pauseAsked(report: AttemptFacts["report"]): number | null {
  const throttled = report.http_status === 429 || report.http_status === 503;
  return throttled && report.retry_after_seconds !== null ? Math.min(MAX_PAUSE_MS, report.retry_after_seconds * 1000) : null;
}

/** The endpoint paused until `until` (or a later pause it already has). */
function retryAfterPause(ep: EndpointRow, until: number, status: number | null = null): EndpointChange {
  const end = Math.max(ep.pause_kind === "retry_after" ? (ep.paused_until_ms ?? 0) : 0, until);
  return {
    pause_kind: "retry_after",
    paused_until_ms: end,
    pause_reason: `the receiver answered ${status ?? "429 or 503"} with Retry-After: nothing is sent before ${isoTime(end)}`,
  };
}

const circuitReason = (failures: number, probeAt: number) =>
  `circuit open after ${failures} failed attempts in a row: one probe at ${isoTime(probeAt)}, then one attempt at a time until one succeeds`;

/** Whether the endpoint has failed for the whole period after which it is disabled. */
export function failingTooLong(ep: EndpointRow, change: EndpointChange, timing: Timing, now: number): number | null {
  const since = change.failing_since_ms !== undefined ? change.failing_since_ms : ep.failing_since_ms;
  return since !== null && now - since >= timing.disableAfterMs ? since : null;
}
