/**
 * Worker entry point: wires the exported handlers and nothing else. The router is built in
 * app.ts; the Queue consumers live in webhooks/consumer.ts; the rate-limiting Durable Object
 * class must be exported from the main module.
 */
import { createApp } from "./app";
import { consumeDeadLetters, consumeDeliveries, DEAD_LETTER_QUEUE } from "./webhooks/consumer";

export { RateLimiter } from "./ratelimit/limiter";

const app = createApp();

export default {
  fetch: app.fetch,
  queue: (batch, env) => (batch.queue === DEAD_LETTER_QUEUE ? consumeDeadLetters(batch, env) : consumeDeliveries(batch, env)),
} satisfies ExportedHandler<Env>;
