/**
 * Worker entry point: wires the exported handlers and nothing else. The router is built in
 * app.ts; the Durable Object and Queue consumer are exported here as they are added.
 */
import { createApp } from "./app";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
