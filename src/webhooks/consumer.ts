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
import { describeError, log, recordDeliveryAttempt } from "../log";
import type { Begun } from "../objects/endpoints/attempts";
import { MAX_PAUSE_MS } from "../objects/endpoints/policy";
import { tokenKey } from "../objects/endpoints/token";
import { endpointObject, reach, webhookObject } from "../objects/stubs";
import {
  type AttemptReport,
  DeliveryQueueMessage,
  type DeliveryTicket,
  type FetchedToken,
  keyScheme,
  type LegacyTicket,
  type ReportMessage,
  receiverOAuth,
  type WebhookConfigurationRecord,
} from "../schemas/webhooks";
import { type AttemptPort, drive, type Ended, type Failure, planOf } from "./attempt";
import { liveSigningSecrets, openReceiverToken, receiverClientSecret, sealReceiverToken } from "./configurations";
import {
  type Deadline,
  DeliveryFailure,
  deadlineOf,
  postWebhook,
  RequestStopped,
  requestReceiverToken,
  type TokenCredentials,
} from "./outbound";
import { dpopProof } from "./receiver-auth";
import { openAssertionKey, openDpopKey } from "./receiver-keys";
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

const endpointOf = (deps: Deps, configurationId: string) => endpointObject(deps, configurationId);

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
          await reach("webhook endpoint", () => endpointOf(deps, msg.configuration_id).finish(msg.report, deps.now()));
        } else {
          const ticket = msg.v === 2 ? await fromLegacy(deps, msg) : msg;
          if (ticket === null) {
            recordDeliveryAttempt(deps.metrics, { ...record, outcome: "skipped", ...NO_ATTEMPT, latencyMs: 0, reason: "unknown delivery" });
          } else {
            await runTicket(deps, ticket, startedAt);
          }
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
            await reach("webhook endpoint", () => endpointOf(deps, msg.configuration_id).finish(msg.report, deps.now()));
          } else {
            const ticket = msg.v === 2 ? await fromLegacy(deps, msg) : msg;
            if (ticket !== null)
              await reach("webhook endpoint", () => endpointOf(deps, ticket.configuration_id).deadLettered(ticket, deps.now()));
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

/** Begins the ticket's attempt at its endpoint, makes it, and reports it. */
async function runTicket(deps: Deps, ticket: DeliveryTicket, startedAt: number): Promise<void> {
  const record = recordOf(ticket);
  const begun = await reach("webhook endpoint", () => endpointOf(deps, ticket.configuration_id).begin(ticket, deps.now()));
  if (!begun.go) {
    recordDeliveryAttempt(deps.metrics, {
      ...record,
      outcome: "skipped",
      ...NO_ATTEMPT,
      latencyMs: Date.now() - startedAt,
      reason: begun.reason,
    });
    return;
  }
  const attempted = await attempt(deps, ticket, begun);
  if ("stopped" in attempted) {
    // The endpoint's object concluded the attempt itself: no webhook was taken (at most one was
    // refused before a DPoP nonce round or a 401), nothing to report.
    recordDeliveryAttempt(deps.metrics, {
      ...record,
      outcome: "skipped",
      ...NO_ATTEMPT,
      latencyMs: Date.now() - startedAt,
      reason: attempted.stopped,
    });
    return;
  }
  const { report, outcome } = attempted;
  // Recorded as soon as it is known: the receiver has had it, whatever happens next.
  recordDeliveryAttempt(deps.metrics, {
    ...record,
    outcome,
    disposition: report.outcome === "in_flight" ? null : report.outcome,
    step: report.step,
    httpStatus: report.http_status,
    latencyMs: report.latency_ms,
    ...(report.ours !== null ? { reason: report.ours } : {}),
  });
  await deliverReport(deps, ticket, report);
}

/**
 * Hands the report to the endpoint's object: a few tries (a brief fault), then through the Queue as
 * a report message. Throws only if both fail (then the ticket is retried, and the lease decides).
 */
async function deliverReport(deps: Deps, ticket: DeliveryTicket, report: AttemptReport): Promise<void> {
  let last: unknown;
  for (let i = 0; i <= REPORT_RETRY_MS.length; i++) {
    try {
      await reach("webhook endpoint", () => endpointOf(deps, ticket.configuration_id).finish(report, deps.now()));
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
  const deadline = deadlineOf(deps, begun.deadline);
  const endpoint = () => endpointOf(deps, ticket.configuration_id);
  const ref = refOf(ticket, begun);
  let accessToken = "";
  const pausedUntil = () => pausesSeen.get(ticket.configuration_id, deps.now()) ?? null;
  const port: AttemptPort = {
    now: () => deps.now(),
    timedOut: () => deadline.signal.aborted,
    pausedUntil,
    rememberPause: (until) => pausesSeen.set(ticket.configuration_id, Math.max(until, pausedUntil() ?? 0), deps.now()),
    openToken: async () => {
      if (begun.token.mode !== "cached") throw new Error("attempt: no cached token to open");
      accessToken = await openReceiverToken(deps, config, begun.token.sealed);
    },
    fetchToken: async (beforeRequest) => {
      try {
        const token = await requestReceiverToken(deps, config, await tokenCredentials(deps, config), deadline, beforeRequest);
        accessToken = token.accessToken;
        return { expires_in_seconds: token.expiresInSeconds };
      } catch (err) {
        if (err instanceof RequestStopped) return { stopped: err.reason };
        if (err instanceof DeliveryFailure) return { failure: failureOf(err) };
        throw err;
      }
    },
    keepToken: async (lifetimeMs) => {
      const fetched: FetchedToken = {
        sealed: await sealReceiverToken(deps, config, accessToken),
        expires_ms: deps.now() + lifetimeMs,
        key: tokenKey(config),
      };
      try {
        return { generation: await endpoint().storeToken(ref, fetched, deps.now()) };
      } catch {
        return { carried: fetched }; // carried by the report instead
      }
    },
    wait: sleep,
    send: async (beforeRequest) => {
      const sent = await send(deps, ticket, begun, accessToken, deadline, beforeRequest);
      if (sent instanceof DeliveryFailure) return { failure: failureOf(sent) };
      if ("stopped" in sent) return sent;
      return { answer: { status: sent.status, retry_after_seconds: sent.retryAfterSeconds, response: sent.response } };
    },
    proceed: (again) => reach("webhook endpoint", () => endpoint().proceed(ref, deps.now(), again)),
    tokenRejected: async (generation, refetch) => {
      const answer = await reach("webhook endpoint", () => endpoint().tokenRejected(ref, generation, deps.now(), refetch));
      return { refetch: answer.refetch, slot: answer.slot, stopped: answer.stopped ?? null };
    },
  };
  const timing = { started_at: deps.now(), deadline_seconds: deadline.seconds, slow_deadline_seconds: deps.config.webhookTimeoutMs / 1000 };
  return drive(port, planOf(ticket, begun, timing));
}

const refOf = (ticket: DeliveryTicket, begun: Go) => ({ delivery_id: ticket.delivery_id, series: begun.series, attempt: begun.attempt });

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

/** What a token request of this configuration needs: its client secret ("" for private_key_jwt) and opened keys. */
export async function tokenCredentials(deps: Deps, config: WebhookConfigurationRecord): Promise<TokenCredentials> {
  const o = receiverOAuth(config);
  // A rotated-in key signs from its activation time on (objects/webhooks/configurations.ts rotateAssertionKey).
  const next = o.next_assertion_key;
  const signing = next !== null && deps.now() >= next.activates_ms ? next : o.assertion_key;
  const [clientSecret, assertionKey, dpopKey] = await Promise.all([
    receiverClientSecret(deps, config),
    o.auth_method === "private_key_jwt" && signing !== null
      ? openAssertionKey(deps, config.organization_id, signing).then((k) => ({ ...k, kid: signing.kid }))
      : null,
    o.dpop_key !== null ? openDpopKey(deps, config.organization_id, config.id, o.dpop_key) : null,
  ]);
  return { clientSecret, assertionKey, dpopKey };
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
  accessToken: string,
  deadline: Deadline,
  beforeRequest: (round: number) => Promise<string | null>,
): Promise<{ status: number; retryAfterSeconds: number | null; response: AttemptReport["response"] } | DeliveryFailure | Stopped> {
  const timestamp = Math.floor(deps.now() / 1000);
  const signature = await signatureHeader(
    await liveSigningSecrets(deps, begun.configuration, deps.now()),
    ticket.delivery_id,
    timestamp,
    begun.body,
  );
  const dpop = receiverOAuth(begun.configuration).dpop_key;
  const dpopKey = dpop === null ? null : await openDpopKey(deps, begun.configuration.organization_id, begun.configuration.id, dpop);
  // What the excerpt of a failed answer must not reveal: the token sent, the receiver's client
  // secret, the signing secrets (opened only if there is an excerpt to check).
  const secrets = async () => [
    accessToken,
    await receiverClientSecret(deps, begun.configuration),
    ...(await liveSigningSecrets(deps, begun.configuration, deps.now())),
  ];
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
      const answer = await postWebhook(deps, begun.configuration.url, headers, begun.body, deadline, secrets);
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
