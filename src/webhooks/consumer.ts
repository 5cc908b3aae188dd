/**
 * The Queue consumers (docs/webhooks.md). The delivery queues (one per lane: fast, new, slow) carry
 * tickets, each for one attempt of one delivery, and reports. For a ticket the consumer asks the
 * endpoint's EndpointObject to begin the attempt (a duplicate, superseded or untimely ticket is
 * acknowledged without sending: the delivery waits in the object), makes the token request to the
 * receiver's OAuth endpoint (or uses the endpoint's shared token) and sends the signed webhook
 * (Standard Webhooks headers, Bearer token) within the lane's deadline and the rate limit's slot,
 * and reports the outcome: the object records it once and paces and retries by itself.
 *
 * The report is never lost between the receiver's answer and the record: it is retried a few
 * times, then carried by the Queue as a message of its own (so the object's lease net never sends
 * a delivered webhook again for want of it). Each message is acked on its own. A fault of ours
 * (the object unreachable, a secret that does not decrypt) retries the message through the Queue;
 * after max_retries it reaches the dead-letter queue (named `...-dlq`), whose consumer has the
 * object record it. Tickets of the previous layout (v2) are routed through the organization's
 * object to the endpoint that now holds their delivery. Each attempt, each ticket dropped
 * unattempted, each fault of ours and each dead letter is recorded (log.ts `recordDeliveryAttempt`).
 */
import { type Deps, depsFromEnv } from "../deps";
import { IsolateCache } from "../lib/cache";
import { type DeliveryAttemptRecord, describeError, log, recordDeliveryAttempt } from "../log";
import type { AttemptAnswer, AttemptCall, Begun } from "../objects/endpoints/attempts";
import { MAX_PAUSE_MS } from "../objects/endpoints/policy";
import { tokenKey } from "../objects/endpoints/token";
import { endpointObject, reach, webhookObject } from "../objects/stubs";
import {
  type AttemptReport,
  DeliveryQueueMessage,
  type DeliveryTicket,
  keyScheme,
  type LegacyTicket,
  type ReportMessage,
  receiverOAuth,
  type WebhookConfigurationRecord,
} from "../schemas/webhooks";
import { type AttemptPort, drive, type Ended, type Failure, planOf } from "./attempt";
import { AttemptSecrets } from "./attempt-secrets";
import {
  type Deadline,
  DeliveryFailure,
  deadlineOf,
  postWebhook,
  type ReceiverDirective,
  RequestStopped,
  requestReceiverToken,
} from "./outbound";
import { dpopProof } from "./receiver-auth";
import { signatureHeader } from "./signature";

/** The local (top-level) queue names; each deployed environment has its own (wrangler.toml). */
export const DELIVERY_QUEUE = "keyway-webhooks";
export const DEAD_LETTER_QUEUE = "keyway-webhooks-dlq";
/**
 * A dead-letter queue is recognised by this suffix rather than one fixed name: queue names are
 * unique per account, so staging and production each have their own (scripts/preflight.mjs
 * refuses a configuration whose dead-letter queue lacks it, or whose delivery queue has it).
 */
export const DEAD_LETTER_SUFFIX = "-dlq";
export const isDeadLetterQueue = (queue: string): boolean => queue.endsWith(DEAD_LETTER_SUFFIX);

/** The attempt fields of a record for a message that made no attempt (skipped, our fault, dead letter). */
const NO_ATTEMPT = { disposition: null, step: null, httpStatus: null } as const;

/** A message whose processing failed on our side is retried by the Queue after this many seconds, doubling. */
const CONSUMER_RETRY_SECONDS = 10;
/** A report the endpoint's object did not take is tried again after these pauses, then carried by the Queue. */
const REPORT_RETRY_MS = [100, 400];

/** The Queue's delay before retrying a message our side failed: 10 s, 20 s, 40 s ... at most 10 min. */
export function consumerRetrySeconds(attempts: number): number {
  return Math.min(600, CONSUMER_RETRY_SECONDS * 2 ** Math.max(0, attempts - 1));
}

/**
 * Every call of an attempt to its endpoint's object goes through its one entry (EndpointObject.step,
 * objects/endpoints/attempts.ts): begin, the checks, the token's keeping and refusal, the report,
 * a dead letter.
 */
function endpointCall<C extends AttemptCall>(deps: Deps, configurationId: string, call: C): Promise<AttemptAnswer<C>> {
  return reach("webhook endpoint", () => endpointObject(deps, configurationId).step(call, deps.now()));
}

/**
 * Pauses this isolate has seen (configuration id -> until, ms since the epoch). A 429 or 503 with
 * Retry-After answered to one attempt stops this isolate's other attempts of the endpoint, begun
 * before the endpoint's object knew, from sending in the moment before its report lands; the
 * object then holds the pause for every isolate (objects/endpoints/flow.ts). An attempt begun in
 * another isolate in that moment can still send (docs/webhooks.md, "Backpressure").
 */
const pausesSeen = new IsolateCache<number>({ maxEntries: 10_000, ttlMs: MAX_PAUSE_MS });

/** Forgets a pause this isolate saw: for tests that end an endpoint's pause by editing its object's row. */
export const forgetPause = (configurationId: string): void => pausesSeen.delete(configurationId);
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env, now: () => number = Date.now): Promise<void> {
  const deps = depsFromEnv(env, now);
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = DeliveryQueueMessage.safeParse(message.body);
      if (!parsed.success) {
        // Not something we enqueued (or a format we no longer read): retrying cannot help.
        log.error("malformed delivery message dropped", { id: message.id });
        message.ack();
        return;
      }
      const msg = parsed.data;
      // Real elapsed time for the lines of messages that made no attempt.
      const startedAt = Date.now();
      const record = recordOf(msg);
      try {
        if (msg.v === 3 && msg.kind === "report") {
          await endpointCall(deps, msg.configuration_id, { kind: "finish", report: msg.report });
        } else {
          const ticket = msg.v === 2 ? await fromLegacy(deps, msg) : msg;
          await runTicket(deps, ticket, record, startedAt);
        }
        message.ack();
      } catch (err) {
        // The detail is on this line; the attempt's line says which delivery and when, as for the others.
        log.error("delivery message failed; the Queue retries it", { delivery: record.deliveryId, detail: describeError(err) });
        recordDeliveryAttempt(deps.metrics, { ...record, outcome: "consumer_error", ...NO_ATTEMPT, latencyMs: Date.now() - startedAt });
        message.retry({ delaySeconds: consumerRetrySeconds(message.attempts) });
      }
    }),
  );
}

/** Messages our side failed max_retries times: the endpoint's object records them, never drops them. */
export async function consumeDeadLetters(batch: MessageBatch<unknown>, env: Env, now: () => number = Date.now): Promise<void> {
  const deps = depsFromEnv(env, now);
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = DeliveryQueueMessage.safeParse(message.body);
      if (parsed.success) {
        const msg = parsed.data;
        const startedAt = Date.now();
        try {
          if (msg.v === 3 && msg.kind === "report") {
            await endpointCall(deps, msg.configuration_id, { kind: "finish", report: msg.report });
          } else {
            const ticket = msg.v === 2 ? await fromLegacy(deps, msg) : msg;
            if (ticket !== null) await endpointCall(deps, ticket.configuration_id, { kind: "dead_lettered", ticket });
          }
        } catch (err) {
          // The object's own recovery (its lease, its redispatch) covers the delivery even if this never lands.
          log.error("dead letter not recorded", { delivery: recordOf(msg).deliveryId, detail: describeError(err) });
          message.retry({ delaySeconds: 60 });
          return;
        }
        recordDeliveryAttempt(deps.metrics, {
          ...recordOf(msg),
          outcome: "dead_lettered",
          ...NO_ATTEMPT,
          latencyMs: Date.now() - startedAt,
        });
      }
      message.ack();
    }),
  );
}

function recordOf(msg: DeliveryQueueMessage) {
  if (msg.v === 3 && msg.kind === "report") {
    return {
      deliveryId: msg.report.delivery_id,
      organizationId: msg.organization_id,
      configurationId: msg.configuration_id,
      attempt: msg.report.attempt,
    };
  }
  return {
    deliveryId: msg.delivery_id,
    organizationId: msg.organization_id,
    configurationId: msg.v === 3 ? msg.configuration_id : null,
    attempt: msg.attempt,
  };
}

/** A ticket of the previous layout: its delivery now lives with its endpoint (objects/webhooks/legacy.ts). */
async function fromLegacy(deps: Deps, legacy: LegacyTicket): Promise<DeliveryTicket | null> {
  const configurationId = await reach("webhooks", () => webhookObject(deps, legacy.organization_id).locate(legacy.delivery_id));
  if (configurationId === null) return null;
  return { ...legacy, v: 3, kind: "attempt", configuration_id: configurationId, ticket: 0, lane: "fast" };
}

/** Begins the ticket's attempt at its endpoint, makes it, reports it and records its line. */
async function runTicket(deps: Deps, ticket: DeliveryTicket | null, record: AttemptRecordOf, startedAt: number): Promise<void> {
  // A ticket dropped (by `begin`, or a legacy one whose delivery is gone) takes no webhook, like a stopped attempt.
  let ended: Ended = { stopped: "unknown delivery" };
  if (ticket !== null) {
    const begun = await endpointCall(deps, ticket.configuration_id, { kind: "begin", ticket });
    ended = begun.go ? await attempt(deps, ticket, begun) : { stopped: begun.reason };
  }
  try {
    if (ticket !== null && "report" in ended) await deliverReport(deps, ticket, ended.report);
  } finally {
    // Recorded whatever happens to the report: the receiver has had the webhook.
    const line = lineOf(record, ended, startedAt);
    recordDeliveryAttempt(deps.metrics, line);
  }
}

type AttemptRecordOf = ReturnType<typeof recordOf>;

/**
 * The attempt's line: what the receiver answered, or why no webhook was taken (the ticket dropped
 * by `begin`; or the endpoint's object concluded the attempt itself, after at most one webhook
 * refused before a DPoP nonce round or a 401: nothing to report).
 */
function lineOf(record: AttemptRecordOf, ended: Ended, startedAt: number): DeliveryAttemptRecord {
  if ("stopped" in ended) return { ...record, outcome: "skipped", ...NO_ATTEMPT, latencyMs: Date.now() - startedAt, reason: ended.stopped };
  const { report, outcome } = ended;
  return {
    ...record,
    outcome,
    disposition: report.outcome === "in_flight" ? null : report.outcome,
    step: report.step,
    httpStatus: report.http_status,
    latencyMs: report.latency_ms,
    ...(report.ours !== null ? { reason: report.ours } : {}),
  };
}

/**
 * Hands the report to the endpoint's object: a few tries (a brief fault), then through the Queue as
 * a report message. Throws only if both fail (then the ticket is retried, and the lease decides).
 */
async function deliverReport(deps: Deps, ticket: DeliveryTicket, report: AttemptReport): Promise<void> {
  let last: unknown;
  for (let i = 0; i <= REPORT_RETRY_MS.length; i++) {
    try {
      await endpointCall(deps, ticket.configuration_id, { kind: "finish", report });
      return;
    } catch (err) {
      last = err;
      const pause = REPORT_RETRY_MS[i];
      if (pause !== undefined) await sleep(pause);
    }
  }
  const carried: ReportMessage = {
    v: 3,
    kind: "report",
    organization_id: ticket.organization_id,
    configuration_id: ticket.configuration_id,
    report,
  };
  await deps.webhookQueue.send(carried);
  log.warn("attempt report carried by the Queue: the endpoint's object did not take it", {
    delivery: ticket.delivery_id,
    detail: describeError(last),
  });
}

/** An attempt the endpoint's object stopped before its webhook was sent (the configuration deleted or disabled meanwhile). */
interface Stopped {
  stopped: string;
}

type Go = Extract<Begun, { go: true }>;

const failureOf = (err: DeliveryFailure): Failure => ({
  http_status: err.httpStatus,
  message: err.message,
  retry_after_seconds: err.retryAfterSeconds,
});

/**
 * One attempt: the core (attempt.ts `drive`, `attemptStep`) names each thing to do; this port does
 * it over the real world (the token request, the endpoint's object, the slot's wait, the signed
 * POST) and nothing else. The access token in hand stays here, never in the core's state.
 */
async function attempt(deps: Deps, ticket: DeliveryTicket, begun: Go): Promise<Ended> {
  const config = begun.configuration;
  const secrets = new AttemptSecrets(deps, config);
  const deadline = deadlineOf(deps, begun.deadline);
  let accessToken = "";
  const pausedUntil = () => pausesSeen.get(ticket.configuration_id, deps.now()) ?? null;
  const port: AttemptPort = {
    now: () => deps.now(),
    timedOut: () => deadline.signal.aborted,
    pausedUntil,
    rememberPause: (until) => pausesSeen.set(ticket.configuration_id, Math.max(until, pausedUntil() ?? 0), deps.now()),
    openToken: async () => {
      if (begun.token.mode !== "cached") throw new Error("attempt: no cached token to open");
      accessToken = await secrets.openToken(begun.token.sealed);
    },
    sealToken: async (lifetimeMs) => ({
      sealed: await secrets.sealToken(accessToken),
      expires_ms: deps.now() + lifetimeMs,
      key: tokenKey(config),
    }),
    fetchToken: async (beforeRequest) => {
      try {
        const token = await requestReceiverToken(deps, config, await secrets.credentials(), deadline, beforeRequest);
        accessToken = token.accessToken;
        return { expires_in_seconds: token.expiresInSeconds };
      } catch (err) {
        if (err instanceof RequestStopped) return { stopped: err.reason };
        if (err instanceof DeliveryFailure) return { failure: failureOf(err) };
        throw err;
      }
    },
    wait: sleep,
    send: async (beforeRequest) => {
      const sent = await send(deps, ticket, begun, { secrets, accessToken }, deadline, beforeRequest);
      if (sent instanceof DeliveryFailure) return { failure: failureOf(sent) };
      if ("stopped" in sent) return sent;
      return {
        answer: { status: sent.status, retry_after_seconds: sent.retryAfterSeconds, response: sent.response, directive: sent.directive },
      };
    },
    ask: (call) => endpointCall(deps, ticket.configuration_id, call),
  };
  const timing = { started_at: deps.now(), deadline_seconds: deadline.seconds, slow_deadline_seconds: deps.config.webhookTimeoutMs / 1000 };
  return drive(port, planOf(ticket, begun, timing));
}

/**
 * The headers of a webhook request (Standard Webhooks; spec 6): one place, so that the manager's
 * account of what was sent (with the token and signature masked) is what `send` sends.
 */
export function webhookHeaders(p: {
  accessToken: string;
  deliveryId: string;
  timestamp: string;
  signature: string;
  /** A DPoP proof (issue 31): the token then goes as `DPoP <token>` (RFC 9449 7.1). */
  dpopProof?: string | undefined;
}): Record<string, string> {
  return {
    "Content-Type": "application/json",
    Authorization: p.dpopProof === undefined ? `Bearer ${p.accessToken}` : `DPoP ${p.accessToken}`,
    ...(p.dpopProof === undefined ? {} : { DPoP: p.dpopProof }),
    "webhook-id": p.deliveryId,
    "webhook-timestamp": p.timestamp,
    "webhook-signature": p.signature,
    "User-Agent": "keyway-webhooks/1",
  };
}

/**
 * The headers each attempt of a configuration sends, with what is secret or per attempt masked:
 * what the manager and the portal show as the request (one place, so they show what `send` sends,
 * a DPoP-bound webhook's scheme and proof included).
 */
export function maskedWebhookHeaders(deliveryId: string, config: WebhookConfigurationRecord | null): [string, string][] {
  const dpop = config !== null && receiverOAuth(config).dpop_key !== null;
  return Object.entries(
    webhookHeaders({
      accessToken: "•••• (the receiver's access token, fetched for this attempt)",
      deliveryId,
      timestamp: "(the attempt's time, Unix seconds)",
      signature: (config?.signing_secrets ?? []).some((k) => keyScheme(k) === "v1a")
        ? "v1a,•••• (Ed25519 with each live signing key; v1,•••• for a v1 secret still in its grace)"
        : "v1,•••• (HMAC-SHA256 with each live signing secret)",
      dpopProof: dpop ? "•••• (a DPoP proof of keyway's key for this configuration, new for each request)" : undefined,
    }),
  );
}

/**
 * Signs (with this moment's timestamp) and POSTs the webhook, asking `beforeRequest` (with the
 * round: 1 after a DPoP nonce challenge) immediately before each POST leaves; a failure to get an
 * answer is a DeliveryFailure value, a refusal to send a Stopped one.
 */
async function send(
  deps: Deps,
  ticket: DeliveryTicket,
  begun: Go,
  { secrets, accessToken }: { secrets: AttemptSecrets; accessToken: string },
  deadline: Deadline,
  beforeRequest: (round: number) => Promise<string | null>,
): Promise<
  | { status: number; retryAfterSeconds: number | null; response: AttemptReport["response"]; directive: ReceiverDirective | null }
  | DeliveryFailure
  | Stopped
> {
  const timestamp = Math.floor(deps.now() / 1000);
  const signature = await signatureHeader(await secrets.signingSecrets(), ticket.delivery_id, timestamp, begun.body);
  const dpopKey = await secrets.dpopKey();
  try {
    let nonce: string | null = null;
    for (let round = 0; ; round++) {
      const proof =
        dpopKey === null ? undefined : await dpopProof(dpopKey, "POST", begun.configuration.url, deps.now(), { accessToken, nonce });
      const headers = webhookHeaders({
        accessToken,
        deliveryId: ticket.delivery_id,
        timestamp: String(timestamp),
        signature,
        dpopProof: proof,
      });
      // The receiver may have held the first round's POST open for seconds before its nonce challenge.
      const stopped = await beforeRequest(round);
      if (stopped !== null) return { stopped };
      const answer = await postWebhook(deps, begun.configuration.url, headers, begun.body, deadline, () => secrets.revealable(accessToken));
      // A DPoP nonce challenge (RFC 9449 9) is answered once, with a new proof carrying the nonce.
      if (answer.dpopNonce !== null && round === 0) {
        nonce = answer.dpopNonce;
        continue;
      }
      return answer;
    }
  } catch (err) {
    if (err instanceof DeliveryFailure) return err;
    throw err;
  }
}
