/**
 * The Queue consumers. `keyway-webhooks`: per message, the token request to the receiver's
 * OAuth endpoint, then the signed webhook (Standard Webhooks headers, Bearer token), then one
 * recorded attempt. Each message is acked or retried on its own, so one bad message never
 * retries its batch. Retries use exponential backoff with jitter through
 * `message.retry({delaySeconds})`; once WEBHOOK_MAX_RETRIES are spent the Queue moves the
 * message to `keyway-webhooks-dlq`, whose consumer records the delivery as failed.
 */
import { type Deps, depsFromEnv } from "../deps";
import { IsolateCache } from "../lib/cache";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import { type DeliveryAttempt, DeliveryMessage, type WebhookConfigurationRecord } from "../schemas/webhooks";
import { disableWebhookConfiguration, findWebhookConfiguration, liveSigningSecrets, receiverClientSecret } from "./configurations";
import { recordOutcome } from "./deliveries";
import { DeliveryFailure, postWebhook, type ReceiverToken, requestReceiverToken } from "./outbound";
import { signatureHeader } from "./signature";

export const DELIVERY_QUEUE = "keyway-webhooks";
export const DEAD_LETTER_QUEUE = "keyway-webhooks-dlq";

/** Queues cap a retry delay at 12 hours. */
const MAX_DELAY_SECONDS = 43_200;
const BASE_DELAY_SECONDS = 30;
/** A configuration created moments ago may not be visible to KV here yet (propagation). */
const CONFIG_PROPAGATION_MS = 120_000;
/** Tokens from an opt-in cache are refreshed this long before they expire. */
const TOKEN_REFRESH_MARGIN_MS = 60_000;

/** Exponential backoff with +-20% jitter: 30 s, 60 s, 120 s ... capped at 12 h. */
export function backoffSeconds(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS * 2 ** Math.max(0, attempt - 1));
  return Math.min(MAX_DELAY_SECONDS, Math.max(1, Math.round(base * (0.8 + 0.4 * random()))));
}

type Outcome = { ack: true } | { ack: false; delaySeconds: number };

// Opt-in per configuration (token_cache): isolate-local, keyed so any change to the
// configuration (including its credentials) misses.
const tokenCache = new IsolateCache<{ token: string; expiresAt: number }>({ ttlMs: 24 * 3600 * 1000, maxEntries: 1000 });
const tokenCacheKey = (c: WebhookConfigurationRecord) => `${c.organization_id}:${c.id}:${c.updated_at}`;

export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env, now: () => number = Date.now): Promise<void> {
  const deps = depsFromEnv(env, now);
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = DeliveryMessage.safeParse(message.body);
      if (!parsed.success) {
        // Not something we enqueued: retrying cannot help.
        log.error("malformed delivery message dropped", { id: message.id });
        message.ack();
        return;
      }
      let outcome: Outcome;
      try {
        outcome = await deliver(deps, parsed.data, message.attempts);
      } catch (err) {
        // A fault of ours (KV, crypto): retry like a receiver failure; the DLQ catches the rest.
        log.error("delivery attempt crashed", { delivery: parsed.data.delivery_id, detail: describeError(err) });
        outcome = { ack: false, delaySeconds: backoffSeconds(message.attempts) };
      }
      if (outcome.ack) message.ack();
      else message.retry({ delaySeconds: outcome.delaySeconds });
    }),
  );
}

/** Dead-lettered deliveries have spent their retries: record them as failed, never drop them. */
export async function consumeDeadLetters(batch: MessageBatch<unknown>, env: Env, now: () => number = Date.now): Promise<void> {
  const deps = depsFromEnv(env, now);
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = DeliveryMessage.safeParse(message.body);
      if (parsed.success) {
        try {
          await recordOutcome(deps, parsed.data, null, { status: "failed", next_attempt_at: null });
        } catch (err) {
          log.error("dead letter not recorded", { delivery: parsed.data.delivery_id, detail: describeError(err) });
          message.retry({ delaySeconds: 60 });
          return;
        }
      }
      message.ack();
    }),
  );
}

async function deliver(deps: Deps, message: DeliveryMessage, attemptNumber: number): Promise<Outcome> {
  const startedAt = deps.now();
  const finalAttempt = attemptNumber > deps.config.webhookMaxRetries;
  const attempt = (
    step: DeliveryAttempt["step"],
    httpStatus: number | null,
    outcome: DeliveryAttempt["outcome"],
    error: string | null,
  ): DeliveryAttempt => ({
    number: attemptNumber,
    at: isoTime(startedAt),
    step,
    http_status: httpStatus,
    latency_ms: Math.max(0, deps.now() - startedAt),
    outcome,
    error,
  });
  const fail = async (a: DeliveryAttempt): Promise<Outcome> => {
    await recordOutcome(deps, message, a, { status: "failed", next_attempt_at: null });
    return { ack: true };
  };
  const retry = async (a: DeliveryAttempt, askedSeconds: number | null): Promise<Outcome> => {
    const delaySeconds = Math.min(MAX_DELAY_SECONDS, Math.max(backoffSeconds(attemptNumber), askedSeconds ?? 0));
    if (finalAttempt) {
      // The Queue dead-letters it on this retry; the record says so now.
      await recordOutcome(
        deps,
        message,
        { ...a, outcome: "failed", error: `${a.error ?? "failed"}; retries exhausted` },
        { status: "failed", next_attempt_at: null },
      );
    } else {
      await recordOutcome(deps, message, a, { status: "retrying", next_attempt_at: isoTime(deps.now() + delaySeconds * 1000) });
    }
    return { ack: false, delaySeconds };
  };

  const config = await findWebhookConfiguration(deps, message.organization_id, message.webhook_configuration_id);
  if (config === null) {
    if (startedAt - Date.parse(message.created_at) < CONFIG_PROPAGATION_MS) {
      return retry(attempt("configuration", null, "retry", "webhook configuration not visible yet"), 30);
    }
    return fail(attempt("configuration", null, "failed", "webhook configuration was deleted"));
  }
  if (config.status !== "active") return fail(attempt("configuration", null, "failed", "webhook configuration is disabled"));

  let token: ReceiverToken | { accessToken: string; cached: true };
  try {
    token = await receiverToken(deps, config);
  } catch (err) {
    if (!(err instanceof DeliveryFailure)) throw err;
    return retry(attempt("token", err.httpStatus, "retry", err.message), err.retryAfterSeconds);
  }

  const timestamp = Math.floor(deps.now() / 1000);
  const headers = {
    "Content-Type": "application/json",
    Authorization: `Bearer ${token.accessToken}`,
    "webhook-id": message.delivery_id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": await signatureHeader(
      await liveSigningSecrets(deps, config, deps.now()),
      message.delivery_id,
      timestamp,
      message.body,
    ),
    "User-Agent": "keyway-webhooks/1",
  };
  let status: number;
  let askedSeconds: number | null;
  try {
    ({ status, retryAfterSeconds: askedSeconds } = await postWebhook(deps, config.url, headers, message.body));
  } catch (err) {
    if (!(err instanceof DeliveryFailure)) throw err;
    return retry(attempt("webhook", err.httpStatus, "retry", err.message), null);
  }

  if (status >= 200 && status < 300) {
    await recordOutcome(deps, message, attempt("webhook", status, "delivered", null), { status: "delivered", next_attempt_at: null });
    return { ack: true };
  }
  if (status === 410) {
    await disableWebhookConfiguration(deps, config, "the webhook URL answered 410 Gone");
    return fail(attempt("webhook", status, "failed", "webhook URL answered 410 Gone; configuration disabled"));
  }
  if (status === 408 || status === 429 || status >= 500) {
    return retry(attempt("webhook", status, "retry", `webhook URL answered ${status}`), askedSeconds);
  }
  if ("cached" in token && (status === 401 || status === 403)) {
    // A cached token the receiver no longer accepts: drop it and try again with a fresh one.
    tokenCache.delete(tokenCacheKey(config));
    return retry(attempt("webhook", status, "retry", `webhook URL answered ${status} to a cached token`), null);
  }
  if (status >= 300 && status < 400) {
    return fail(attempt("webhook", status, "failed", `webhook URL answered ${status}; redirects are not followed`));
  }
  return fail(attempt("webhook", status, "failed", `webhook URL answered ${status}`));
}

/** Spec 4.3: a token request before each webhook, unless the configuration opted into caching. */
async function receiverToken(
  deps: Deps,
  config: WebhookConfigurationRecord,
): Promise<ReceiverToken | { accessToken: string; cached: true }> {
  const key = tokenCacheKey(config);
  if (config.token_cache) {
    const hit = tokenCache.get(key, deps.now());
    if (hit !== undefined && hit.expiresAt - TOKEN_REFRESH_MARGIN_MS > deps.now()) return { accessToken: hit.token, cached: true };
  }
  const token = await requestReceiverToken(deps, config, await receiverClientSecret(deps, config));
  if (config.token_cache && token.expiresInSeconds !== null) {
    tokenCache.set(key, { token: token.accessToken, expiresAt: deps.now() + token.expiresInSeconds * 1000 }, deps.now());
  }
  return token;
}
