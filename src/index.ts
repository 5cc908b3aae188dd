/**
 * The API Worker's entry point: wires the exported handlers and nothing else. Requests for
 * people's pages (http/people-paths.ts: the manager, the portal, GET /, /docs, /explorer) go on
 * to the people's Worker over the PEOPLE service binding, unchanged; every other request is the
 * API app's (app.ts). The Queue consumers live in webhooks/consumer.ts; the Durable Object
 * classes (the systems of record, src/objects) must be exported from the main module.
 */
import { createApp } from "./app";
import { telemetrySettings } from "./config";
import { forwardToPeople } from "./http/forward";
import { isPeoplePath, pathOf } from "./http/people-paths";
import { describeError, log, setLogFormat } from "./log";
import { consumeDeadLetters, consumeDeliveries, isDeadLetterQueue } from "./webhooks/consumer";

export { DirectoryObject } from "./objects/directory";
export { EndpointObject } from "./objects/endpoints/object";
export { KeyObject } from "./objects/key";
export { OrganizationObject } from "./objects/organization";
export { ProofObject } from "./objects/proofs";
export { QuotaObject } from "./objects/quota";
export { WebhookObject } from "./objects/webhooks/object";

const app = createApp();

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) =>
    isPeoplePath(pathOf(request.url)) ? forwardToPeople(request, env) : app.fetch(request, env, ctx),
  queue: async (batch, env) => {
    // As the HTTP side does per request (http/middleware/observe.ts): LOG_FORMAT before any line.
    setLogFormat(telemetrySettings(env).logFormat);
    try {
      await (isDeadLetterQueue(batch.queue) ? consumeDeadLetters(batch, env) : consumeDeliveries(batch, env));
    } catch (err) {
      // Whole-batch failures (a setting is missing, say): the Queue retries the batch; the log says why.
      log.error("queue batch failed", { queue: batch.queue, detail: describeError(err) });
      throw err;
    }
  },
} satisfies ExportedHandler<Env>;
