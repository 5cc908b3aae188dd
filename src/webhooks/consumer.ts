/**
 * The Queue consumers. `keyway-webhooks`: each message is a ticket for one attempt of one
 * delivery (objects/webhooks.ts). The consumer asks the organization's WebhookObject to begin the
 * attempt (a duplicate or late ticket is acknowledged without sending), makes the token request
 * to the receiver's OAuth endpoint and sends the signed webhook (Standard Webhooks headers, Bearer
 * token) under one deadline, and reports the outcome; the object records it once and schedules
 * any retry itself. Each message is acked on its own, so one slow or failing delivery never holds
 * up another past its own deadline. A fault of ours (the object unreachable, a secret that does
 * not decrypt) retries the message through the Queue; after max_retries it reaches the
 * dead-letter queue (named `...-dlq`), whose consumer has the object record it. Each attempt, each ticket
 * dropped unattempted, each fault of ours and each dead letter is recorded (log.ts
 * `recordDeliveryAttempt`: a line and a data point).
 */
import { type Deps, depsFromEnv } from "../deps";
import { IsolateCache } from "../lib/cache";
import { type DeliveryOutcome, describeError, log, recordDeliveryAttempt } from "../log";
import { reach, webhookObject } from "../objects/stubs";
import type { AttemptReport, Begun } from "../objects/webhooks";
import { DeliveryMessage, type WebhookConfigurationRecord } from "../schemas/webhooks";
import { liveSigningSecrets, receiverClientSecret } from "./configurations";
import { type Deadline, DeliveryFailure, deadlineOf, postWebhook, type ReceiverToken, requestReceiverToken } from "./outbound";
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
/** Tokens from an opt-in cache are refreshed this long before they expire. */
const TOKEN_REFRESH_MARGIN_MS = 60_000;

/** The Queue's delay before retrying a message our side failed: 10 s, 20 s, 40 s ... at most 10 min. */
export function consumerRetrySeconds(attempts: number): number {
  return Math.min(600, CONSUMER_RETRY_SECONDS * 2 ** Math.max(0, attempts - 1));
}

// Opt-in per configuration (token_cache): isolate-local, keyed by the configuration's version,
// so any change to it (its credentials included) misses.
const tokenCache = new IsolateCache<{ token: string; expiresAt: number }>({ ttlMs: 24 * 3600 * 1000, maxEntries: 1000 });
const tokenCacheKey = (c: WebhookConfigurationRecord) => `${c.organization_id}:${c.id}:${c.version}`;

export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env, now: () => number = Date.now): Promise<void> {
  const deps = depsFromEnv(env, now);
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = DeliveryMessage.safeParse(message.body);
      if (!parsed.success) {
        // Not something we enqueued (or an older format): retrying cannot help.
        log.error("malformed delivery message dropped", { id: message.id });
        message.ack();
        return;
      }
      const ticket = parsed.data;
      // Real elapsed time for the lines of messages that made no attempt (the attempt's own
      // latency is the one its record shows).
      const startedAt = Date.now();
      const record = { deliveryId: ticket.delivery_id, organizationId: ticket.organization_id, attempt: ticket.attempt };
      let configurationId: string | null = null;
      try {
        const begun = await reach("webhooks", () => webhookObject(deps, ticket.organization_id).begin(ticket, deps.now()));
        if (begun.go) {
          configurationId = begun.configuration.id;
          const { report, outcome } = await attempt(deps, ticket, begun);
          // Recorded as soon as it is known: the receiver has had it, whatever happens next.
          recordDeliveryAttempt(deps.metrics, {
            ...record,
            configurationId,
            outcome,
            disposition: report.outcome === "in_flight" ? null : report.outcome,
            step: report.step,
            httpStatus: report.http_status,
            latencyMs: report.latency_ms,
          });
          await reach("webhooks", () => webhookObject(deps, ticket.organization_id).finish(report, deps.now()));
        } else {
          recordDeliveryAttempt(deps.metrics, {
            ...record,
            configurationId,
            outcome: "skipped",
            ...NO_ATTEMPT,
            latencyMs: Date.now() - startedAt,
            reason: begun.reason,
          });
        }
        message.ack();
      } catch (err) {
        // The detail is on this line; the attempt's line says which delivery and when, as for the others.
        log.error("delivery message failed; the Queue retries it", { delivery: ticket.delivery_id, detail: describeError(err) });
        recordDeliveryAttempt(deps.metrics, {
          ...record,
          configurationId,
          outcome: "consumer_error",
          ...NO_ATTEMPT,
          latencyMs: Date.now() - startedAt,
        });
        message.retry({ delaySeconds: consumerRetrySeconds(message.attempts) });
      }
    }),
  );
}

/** Messages our side failed max_retries times: the object records them, never drops them. */
export async function consumeDeadLetters(batch: MessageBatch<unknown>, env: Env, now: () => number = Date.now): Promise<void> {
  const deps = depsFromEnv(env, now);
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = DeliveryMessage.safeParse(message.body);
      if (parsed.success) {
        const ticket = parsed.data;
        const startedAt = Date.now();
        try {
          await reach("webhooks", () => webhookObject(deps, ticket.organization_id).deadLettered(ticket, deps.now()));
        } catch (err) {
          // The object's own recovery covers the delivery even if this never lands.
          log.error("dead letter not recorded", { delivery: ticket.delivery_id, detail: describeError(err) });
          message.retry({ delaySeconds: 60 });
          return;
        }
        recordDeliveryAttempt(deps.metrics, {
          deliveryId: ticket.delivery_id,
          configurationId: null,
          organizationId: ticket.organization_id,
          attempt: ticket.attempt,
          outcome: "dead_lettered",
          ...NO_ATTEMPT,
          latencyMs: Date.now() - startedAt,
        });
      }
      message.ack();
    }),
  );
}

/** An attempt's report to the webhook object, and what it came to for the logs and metrics. */
interface Attempted {
  report: AttemptReport;
  outcome: DeliveryOutcome;
}

/** One attempt: the token request, then the signed webhook, under one deadline. */
async function attempt(deps: Deps, ticket: DeliveryMessage, begun: Extract<Begun, { go: true }>): Promise<Attempted> {
  const config = begun.configuration;
  const startedAt = deps.now();
  const deadline = deadlineOf(deps, begun.deadline);
  const report = (
    step: "token" | "webhook",
    httpStatus: number | null,
    outcome: AttemptReport["outcome"],
    error: string | null,
    extra: { retryAfter?: number | null; gone?: boolean; timedOut?: boolean } = {},
  ): Attempted => ({
    report: {
      delivery_id: ticket.delivery_id,
      series: begun.series,
      attempt: begun.attempt,
      started_at: startedAt,
      step,
      http_status: httpStatus,
      latency_ms: Math.max(0, deps.now() - startedAt),
      outcome,
      error,
      retry_after_seconds: extra.retryAfter ?? null,
      gone: extra.gone ?? false,
      configuration_version: config.version,
    },
    outcome: outcome === "delivered" ? "delivered" : extra.timedOut ? "timeout" : step === "token" ? "token_failed" : "webhook_failed",
  });

  let token: ReceiverToken | { accessToken: string; cached: true };
  try {
    token = await receiverToken(deps, config, deadline);
  } catch (err) {
    if (!(err instanceof DeliveryFailure)) throw err;
    return report("token", err.httpStatus, "retry", err.message, {
      retryAfter: err.retryAfterSeconds,
      timedOut: deadline.signal.aborted,
    });
  }

  const timestamp = Math.floor(deps.now() / 1000);
  const headers = {
    "Content-Type": "application/json",
    Authorization: `Bearer ${token.accessToken}`,
    "webhook-id": ticket.delivery_id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": await signatureHeader(
      await liveSigningSecrets(deps, config, deps.now()),
      ticket.delivery_id,
      timestamp,
      begun.body,
    ),
    "User-Agent": "keyway-webhooks/1",
  };
  let status: number;
  let askedSeconds: number | null;
  try {
    ({ status, retryAfterSeconds: askedSeconds } = await postWebhook(deps, config.url, headers, begun.body, deadline));
  } catch (err) {
    if (!(err instanceof DeliveryFailure)) throw err;
    return report("webhook", err.httpStatus, "retry", err.message, { timedOut: deadline.signal.aborted });
  }

  if (status >= 200 && status < 300) return report("webhook", status, "delivered", null);
  if (status === 410) return report("webhook", status, "failed", "webhook URL answered 410 Gone; configuration disabled", { gone: true });
  if (status === 408 || status === 429 || status >= 500) {
    return report("webhook", status, "retry", `webhook URL answered ${status}`, { retryAfter: askedSeconds });
  }
  if ("cached" in token && (status === 401 || status === 403)) {
    // A cached token the receiver no longer accepts: drop it and try again with a fresh one.
    tokenCache.delete(tokenCacheKey(config));
    return report("webhook", status, "retry", `webhook URL answered ${status} to a cached token`);
  }
  if (status >= 300 && status < 400) {
    return report("webhook", status, "failed", `webhook URL answered ${status}; redirects are not followed`);
  }
  return report("webhook", status, "failed", `webhook URL answered ${status}`);
}

/** Spec 4.3: a token request before each webhook, unless the configuration opted into caching. */
async function receiverToken(
  deps: Deps,
  config: WebhookConfigurationRecord,
  deadline: Deadline,
): Promise<ReceiverToken | { accessToken: string; cached: true }> {
  const key = tokenCacheKey(config);
  if (config.token_cache) {
    const hit = tokenCache.get(key, deps.now());
    if (hit !== undefined && hit.expiresAt - TOKEN_REFRESH_MARGIN_MS > deps.now()) return { accessToken: hit.token, cached: true };
  }
  const token = await requestReceiverToken(deps, config, await receiverClientSecret(deps, config), deadline);
  if (config.token_cache && token.expiresInSeconds !== null) {
    tokenCache.set(key, { token: token.accessToken, expiresAt: deps.now() + token.expiresInSeconds * 1000 }, deps.now());
  }
  return token;
}
