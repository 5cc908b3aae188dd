/**
 * The rules by which an endpoint's object paces its receiver (docs/webhooks.md): how many
 * attempts may be out at once (slow start, halved on failure, as TCP's congestion window), when
 * the circuit opens and how often it probes, how long a Retry-After may pause the endpoint, how
 * the lane follows the receiver's speed, and how a ticket presumed lost is sent again. Pure
 * values and functions, so the state machine and the tests read the same numbers.
 */
import type { Lane } from "../../schemas/webhooks";

/** Attempts in flight at once per lane: a new endpoint proves itself one at a time; a slow one holds little of its lane. */
export const WINDOW_MAX: Record<Lane, number> = { fast: 10, new: 1, slow: 2 };

/** Consecutive retryable failures of the receiver that open the circuit. */
export const CIRCUIT_THRESHOLD = 5;
/** While the circuit is open, one probe after each of these delays (the last repeats). */
export const CIRCUIT_PROBE_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000];

/** The longest pause a receiver's Retry-After can ask for (RFC 9110 10.2.3); a longer one is cut to this. */
export const MAX_PAUSE_MS = 3_600_000;

/** Consecutive quick attempts (within half the fast lane's deadline) that bring a slow endpoint back to the fast lane. */
export const QUICK_STREAK = 3;

/** An attempt's lease outlasts its deadline by this much before the delivery counts as abandoned. */
export const LEASE_MARGIN_MS = 10_000;
/** A ticket may arrive this much before its attempt is due (clocks differ a little). */
export const EARLY_TOLERANCE_MS = 2_000;

/** A cached receiver token is reused until this long before its expires_in runs out (product brief). */
export const TOKEN_REUSE_MARGIN_MS = 60_000;
/**
 * How long a receiver token without `expires_in` is taken to live. RFC 6749 section 5.1 makes
 * expires_in RECOMMENDED (spec 2.4 does not ask for it) and leaves the default to the server's
 * documentation; 5 minutes keeps such a token shared (reused for 4) without trusting it for long,
 * and a 401 drops it sooner.
 */
export const TOKEN_DEFAULT_LIFETIME_MS = 300_000;

/**
 * Rate limit (`rate_limit` per second, measured when keyway sends the webhook): each attempt gets
 * a slot [start, end] inside which its webhook must leave (the token step comes first); a slot
 * starts no earlier than RATE_JITTER_MS after the `rate_limit`-th latest slot's end plus one
 * second, so no one-second window can hold more than `rate_limit` sends wherever in its slot each
 * one falls (docs/webhooks.md, "Rate limit"). A slot further off than RATE_SLOT_WAIT_MS is not
 * granted: the delivery waits in the object, not in the consumer.
 */
export const RATE_JITTER_MS = 10;
export const RATE_SLOT_WAIT_MS = 50;
/** A slot's length when the attempt makes no token request (a cached token). */
export const SLOT_WITHOUT_TOKEN_MS = 100;
/** A slot's length when it does: twice the receiver's usual token step, within these bounds. */
export const SLOT_WITH_TOKEN_MS = { min: 150, max: 1_000 };

export function slotLength(fetchesToken: boolean, tokenMs: number | null): number {
  if (!fetchesToken) return SLOT_WITHOUT_TOKEN_MS;
  return Math.min(SLOT_WITH_TOKEN_MS.max, Math.max(SLOT_WITH_TOKEN_MS.min, 2 * (tokenMs ?? 100) + 50));
}

/**
 * When a ticket that has not begun counts as lost and is sent again: the bound (WEBHOOK_REDISPATCH_SECONDS),
 * doubling with each time it was already sent again, at most 32 times the bound. A backlog in the
 * Queue of duration T so costs a delivery at most log2(T / bound) extra tickets, and an endpoint
 * has at most its window of deliveries in the Queue.
 */
export function redispatchDelay(boundMs: number, redispatches: number): number {
  return boundMs * 2 ** Math.min(redispatches, 5);
}

/** The delay before the probe that follows `probes` failed ones. */
export const probeDelay = (probes: number): number =>
  CIRCUIT_PROBE_DELAYS_MS[Math.min(probes, CIRCUIT_PROBE_DELAYS_MS.length - 1)] ?? 1_800_000;

/** 1 s, 2 s, 4 s ... at most 60 s: retries of our own sends (the Queue, the organization's object). */
export const backoff = (failures: number): number => Math.min(60_000, 1000 * 2 ** Math.min(failures, 6));

/**
 * What a pause (the configuration's status `paused`) holds: events published meanwhile still fan
 * out to the endpoint and wait in its object, nothing is sent, and on resume they go out in
 * publish order. The bound: at most PAUSE_HOLD_MAX_DELIVERIES deliveries published during one
 * pause are held (a later one is concluded `failed` at once), and no delivery waits more than
 * PAUSE_HOLD_MAX_MS past its due time while paused (then it is concluded `failed`); either way with
 * an error that says so, in the delivery list, and recoverable by a recovery after resuming (the
 * rest of EVENT_RETENTION_DAYS, 30, is left for that).
 */
export const PAUSE_HOLD_MAX_DELIVERIES = 10_000;
export const PAUSE_HOLD_MAX_DAYS = 7;
export const PAUSE_HOLD_MAX_MS = PAUSE_HOLD_MAX_DAYS * 86_400_000;
