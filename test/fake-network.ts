/**
 * Outbound HTTP for webhook tests, intercepted at `fetch`: each test declares what the
 * receiver's token endpoint and webhook URL answer, and every request the Worker sends is
 * recorded (method, URL, headers, body) so both sides of the contract can be asserted.
 */
import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import worker from "../src/index";
import type { DeliveryQueueMessage } from "../src/schemas/webhooks";

export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export type Handler = (request: Sent, index: number) => Response | Promise<Response>;

export const RECEIVER = "https://receiver.example";
export const TOKEN_URL = `${RECEIVER}/oauth/token`;
export const WEBHOOK_URL = `${RECEIVER}/webhooks`;
export const WORKLOAD_ISSUER = `${RECEIVER}/workload-issuer`;
export const WORKLOAD_ISSUER_JWKS = `${WORKLOAD_ISSUER}/jwks`;

export const json = (value: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json", ...headers } });

let routes: Record<string, Handler> = {};
let sent: Sent[] = [];
const counts = new Map<string, number>();

/**
 * Replaces the routes for the current test and returns the (new) log of requests. Routing is by
 * URL without query; unknown URLs fail like an unreachable host, never reaching the network,
 * including for Queue messages left over from an earlier test.
 */
export function fakeNetwork(next: Record<string, Handler>): Sent[] {
  routes = next;
  sent = [];
  counts.clear();
  return sent;
}

/**
 * Puts the interception in place for one test file. The workers project's setup file
 * (test/setup/workers.ts) calls it before every file, because that project reuses one runtime and
 * one module graph across files (`isolate: false`): hooks registered when this module was first
 * imported would belong to that first file alone, and vitest restores every spy after each file.
 */
export function interceptFetch(): void {
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const body = request.body === null ? "" : new TextDecoder().decode(await request.arrayBuffer());
    const record: Sent = { method: request.method, url: request.url, headers: Object.fromEntries(request.headers), body };
    sent.push(record);
    const key = request.url.split("?")[0] ?? request.url;
    const handler = routes[key];
    if (handler === undefined) throw new TypeError("Network connection lost.");
    const index = counts.get(key) ?? 0;
    counts.set(key, index + 1);
    // Honour the caller's timeout the way a real slow server would be cut off.
    const signal = init?.signal ?? request.signal;
    return await new Promise<Response>((resolve, reject) => {
      signal?.addEventListener("abort", () => reject(signal.reason));
      Promise.resolve(handler(record, index)).then(resolve, reject);
    });
  });
}

/** After each test: no routes, so nothing a later test did not declare is answered. */
export function clearRoutes(): void {
  routes = {};
}

export const never = (): Promise<Response> => new Promise(() => {});

/** A working receiver: token endpoint issuing `token`, webhook URL answering `status`. */
export function receiver(options: { token?: string; webhookStatus?: number; expiresIn?: number } = {}): Record<string, Handler> {
  return {
    [TOKEN_URL]: () =>
      json({ access_token: options.token ?? "receiver-token-1", token_type: "Bearer", expires_in: options.expiresIn ?? 300 }),
    [WEBHOOK_URL]: () => new Response(null, { status: options.webhookStatus ?? 204 }),
    // A workload identity issuer's key set (issue 44), the public key of RFC 7517 A.1.
    [WORKLOAD_ISSUER_JWKS]: () =>
      json({
        keys: [
          {
            kty: "EC",
            crv: "P-256",
            x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
            kid: "1",
          },
        ],
      }),
  };
}

export interface QueueOutcome {
  acked: string[];
  retried: { msgId: string; delaySeconds?: number }[];
}

/**
 * Runs the consumer on messages directly, as the Queue would, with optional env overrides.
 * getQueueResult reports which messages were retried but not their delay, so the real
 * messages' retry() calls are observed for that.
 */
export async function consume(
  queue: string,
  messages: { id: string; attempts: number; body: DeliveryQueueMessage }[],
  overrides: Partial<Env> = {},
): Promise<QueueOutcome> {
  const batch = createMessageBatch(
    queue,
    messages.map((m) => ({ ...m, timestamp: new Date() })),
  );
  const delays = new Map<string, number | undefined>();
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    vi.spyOn(m, "retry").mockImplementation((options?: QueueRetryOptions) => {
      delays.set(m.id, options?.delaySeconds);
      retry(options);
    });
  }
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...overrides });
  await waitOnExecutionContext(ctx);
  const result = (await getQueueResult(batch, ctx)) as { explicitAcks: string[]; retryMessages: { msgId: string }[] };
  return {
    acked: result.explicitAcks,
    retried: result.retryMessages.map((r) => ({ msgId: r.msgId, ...(delays.has(r.msgId) ? { delaySeconds: delays.get(r.msgId) } : {}) })),
  };
}
