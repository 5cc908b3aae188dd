/**
 * Worker entry point: wires the exported handlers and nothing else. The router is built in
 * app.ts; the rate-limiting Durable Object class must be exported from the main module.
 */
import { createApp } from "./app";

export { RateLimiter } from "./ratelimit/limiter";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
