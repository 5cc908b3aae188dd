/**
 * The one logger, and the one place the service's telemetry is shaped: structured JSON lines
 * (Workers Logs indexes their fields), one per event, with a level and a short fixed message; and
 * the Workers Analytics Engine data points that count the same events (docs/observability.md lays
 * both out). The line and the data point of one event are built here from one record, so they
 * cannot disagree. Callers pass identifiers and outcomes, never request data or secrets; an
 * error's description comes from `describeError`, which knows what of an error is safe to log.
 * Lines written while a request is handled carry its request id (`inRequestContext`), so the error
 * handler's detail line and the request's outcome line are found together. Local runs may ask for
 * one readable line per event instead of JSON (LOG_FORMAT=pretty); deployed Workers and tests
 * keep JSON.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { ApiError } from "./errors";

export type LogFields = Record<string, string | number | boolean | null | undefined>;
type Level = "error" | "warn" | "info";
export type LogFormat = "json" | "pretty";

// Settings are per isolate, like the env they come from; the entry points set this from
// LOG_FORMAT before anything else runs (http/middleware/observe.ts, index.ts's queue handler).
let format: LogFormat = "json";

export function setLogFormat(value: LogFormat): void {
  format = value;
}

// Fields every line gets while a request is handled (its request id), wherever it is logged from:
// domain code and the error handler do not need to be told which request they serve.
const context = new AsyncLocalStorage<LogFields>();

/**
 * Adds `fields` to the current request's context, for every later line of that request and for
 * its outcome line: the gate names the API key and organization as soon as the key's object has
 * answered, so a refusal (revoked key, 429) is attributed too. Outside a request it does nothing.
 */
export function identifyRequest(fields: LogFields): void {
  const store = context.getStore();
  if (store !== undefined) Object.assign(store, fields);
}

/**
 * Runs `fn` with `store` itself (not a copy) as the context: a request's observer holds it and
 * reads back, after the request, what identifyRequest added.
 */
export function inRequestContext<T>(store: LogFields, fn: () => T): T {
  return context.run(store, fn);
}

/** The current request's id, for work handed to another Worker (its lines then name the same request). */
export function currentRequestId(): string | undefined {
  const id = context.getStore()?.request_id;
  return typeof id === "string" ? id : undefined;
}

function write(level: Level, msg: string, fields: LogFields, carry?: (line: string) => void): void {
  const all = { ...context.getStore(), ...fields };
  const line = format === "pretty" ? prettyLine(level, msg, all) : JSON.stringify({ level, msg, ...all });
  if (carry !== undefined && format === "pretty") carry(line);
  else if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.info(line);
}

export const log = {
  error: (msg: string, fields: LogFields = {}) => write("error", msg, fields),
  warn: (msg: string, fields: LogFields = {}) => write("warn", msg, fields),
  info: (msg: string, fields: LogFields = {}) => write("info", msg, fields),
};

/**
 * What may be logged of a thrown value: an ApiError's code, message and internal detail (which
 * never reaches a response), or an Error's name and message. Our own messages carry no request
 * data; third-party errors (runtime, bindings) describe the failure, not the input.
 */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}: ${err.developerMessage}${err.detail ? ` (${err.detail})` : ""}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return "non-error thrown";
}

// ---------------------------------------------------------------------------------------------
// Readable lines for local runs

/** Events whose pretty line leads with a summary instead of the message; their fields in it are not repeated. */
const HEADLINES: Record<string, { keys: string[]; text(f: LogFields): string }> = {
  request: {
    keys: ["method", "route", "status", "error", "latency_ms", "outcome"],
    text: (f) => `${f.method} ${f.route} ${f.status}${f.error ? ` ${f.error}` : ""} ${f.latency_ms}ms`,
  },
  "delivery attempt": {
    keys: ["outcome", "http_status", "latency_ms"],
    text: (f) => `delivery ${f.outcome}${f.http_status ? ` ${f.http_status}` : ""} ${f.latency_ms}ms`,
  },
};
/** Shorter names for the fields a terminal shows most. */
const SHORT: Record<string, string> = {
  request_id: "rid",
  api_key_id: "key",
  organization_id: "org",
  configuration_id: "config",
  delivery_id: "delivery",
};

/** `12:00:01 INFO  GET /v1/me 200 3ms key=key_... org=org_... rid=...` (UTC, as the runtime's clock is). */
export function prettyLine(level: Level, msg: string, fields: LogFields, at: Date = new Date()): string {
  const headline = HEADLINES[msg];
  const rest: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || value === null || headline?.keys.includes(key)) continue;
    const text = String(value);
    rest.push(`${SHORT[key] ?? key}=${/^[\w.:/@+-]+$/.test(text) ? text : JSON.stringify(text)}`);
  }
  // Request id last: it is long and only needed to find the matching lines.
  rest.sort((a, b) => Number(a.startsWith("rid=")) - Number(b.startsWith("rid=")));
  return [at.toISOString().slice(11, 19), level.toUpperCase().padEnd(5), headline ? headline.text(fields) : msg, ...rest].join(" ");
}

// ---------------------------------------------------------------------------------------------
// Metrics: Workers Analytics Engine data points

let lastSinkFailureAt = Number.NEGATIVE_INFINITY;

/**
 * Fire and forget: writeDataPoint queues the point and returns at once (nothing to await). A
 * failure (a missing binding, a point over the limits) is logged at most once a minute per
 * isolate and never reaches the caller: metrics must not fail a request or a delivery.
 */
function writePoint(sink: AnalyticsEngineDataset | undefined, point: AnalyticsEngineDataPoint): void {
  try {
    if (sink === undefined) throw new Error("no METRICS binding");
    sink.writeDataPoint(point);
  } catch (err) {
    const now = Date.now();
    if (now - lastSinkFailureAt < 60_000) return;
    lastSinkFailureAt = now;
    log.warn("metrics data point not written", { kind: String(point.blobs?.[0]), detail: describeError(err) });
  }
}

/** Analytics Engine's limit on an index; our ids are far shorter, this only guards the write. */
const MAX_INDEX_BYTES = 96;
const indexOf = (id: string | null): string[] | undefined => (id && id.length <= MAX_INDEX_BYTES ? [id] : undefined);

/** ok: 1xx-3xx; client_error: 4xx but 429; rate_limited: 429; server_error: 5xx. */
export type RequestOutcome = "ok" | "client_error" | "rate_limited" | "server_error";

export function requestOutcomeOf(status: number): RequestOutcome {
  if (status >= 500) return "server_error";
  if (status === 429) return "rate_limited";
  return status >= 400 ? "client_error" : "ok";
}

/** One HTTP request as observed when its response is ready. */
export interface RequestRecord {
  requestId: string;
  method: string;
  /** The matched route's template (`/v1/deliveries/:id`), never the requested path. */
  route: string;
  status: number;
  outcome: RequestOutcome;
  /** The error code the response carries (`invalid_api_key`), null on success or when unknown. */
  error: string | null;
  latencyMs: number;
  apiKeyId: string | null;
  organizationId: string | null;
}

/**
 * The request's outcome line (info, or error for a 5xx, whose detail the error handler has logged
 * under the same request id) and its data point. Lines of successful requests are logged with
 * probability `successSampleRate` (LOG_SUCCESS_SAMPLE_RATE; such a line says its rate); errors
 * always are, and the data point is always written: counts and latencies come from Analytics
 * Engine, which keeps its own sample weights.
 *
 * Data point: index1 organization id (absent when unknown); blob1 "request", blob2 organization
 * id, blob3 API key id, blob4 route template, blob5 method, blob6 status, blob7 outcome, blob8
 * error code ("" when none); double1 latency ms, double2 1, double3 status.
 */
export function recordRequest(
  sink: AnalyticsEngineDataset | undefined,
  r: RequestRecord,
  successSampleRate = 1,
  draw: () => number = Math.random,
  /**
   * Where a pretty line goes instead of the console, when given: `wrangler dev`'s own request
   * line carries it (http/middleware/observe.ts), so a local request is one line through the
   * dev proxy, not a second one through the runtime's log channel (docs/performance.md).
   */
  carry?: (line: string) => void,
): void {
  const sampled = r.status < 400 && successSampleRate < 1;
  if (!sampled || draw() < successSampleRate) {
    write(
      r.status >= 500 ? "error" : "info",
      "request",
      {
        request_id: r.requestId,
        method: r.method,
        route: r.route,
        status: r.status,
        outcome: r.outcome,
        error: r.error ?? undefined,
        latency_ms: r.latencyMs,
        api_key_id: r.apiKeyId ?? undefined,
        organization_id: r.organizationId ?? undefined,
        sample_rate: sampled ? successSampleRate : undefined,
      },
      carry,
    );
  }
  const point: AnalyticsEngineDataPoint = {
    blobs: ["request", r.organizationId ?? "", r.apiKeyId ?? "", r.route, r.method, String(r.status), r.outcome, r.error ?? ""],
    doubles: [r.latencyMs, 1, r.status],
  };
  const indexes = indexOf(r.organizationId);
  if (indexes) point.indexes = indexes;
  writePoint(sink, point);
}

/**
 * What became of one Queue message for a delivery: an attempt that `delivered`, failed at the
 * receiver's token endpoint (`token_failed`) or webhook URL (`webhook_failed`), or ran out of its
 * deadline (`timeout`); a ticket that was not attempted (`skipped`: a duplicate, late or early
 * ticket, or a configuration no longer active); a failure on our side that the Queue retries
 * (`consumer_error`); a message that exhausted those retries (`dead_lettered`).
 */
export type DeliveryOutcome = "delivered" | "token_failed" | "webhook_failed" | "timeout" | "skipped" | "consumer_error" | "dead_lettered";

export interface DeliveryAttemptRecord {
  deliveryId: string;
  /** Unknown until the webhook object has begun the attempt. */
  configurationId: string | null;
  organizationId: string;
  attempt: number;
  outcome: DeliveryOutcome;
  /** What the consumer reported: `retry` (by the schedule, unless retries are exhausted), `failed`, `delivered`. */
  disposition: "delivered" | "retry" | "failed" | null;
  step: "token" | "webhook" | "configuration" | null;
  /** The receiver's HTTP status, when it answered. */
  httpStatus: number | null;
  latencyMs: number;
  /** Why a ticket was skipped: one of the webhook object's fixed reasons. */
  reason?: string;
}

/**
 * The attempt's line (info when delivered or skipped, warn when the receiver failed it, error
 * when our side did; the detail of our failures is on the consumer's own error line) and its data
 * point. Never the receiver's URLs, tokens or answers: the delivery record has the error text.
 *
 * Data point: index1 organization id; blob1 "delivery", blob2 organization id, blob3
 * configuration id ("" when unknown), blob4 outcome, blob5 step, blob6 receiver status ("" when
 * none), blob7 disposition, blob8 delivery id; double1 latency ms, double2 1, double3 attempt
 * number, double4 receiver status (0 when none).
 */
export function recordDeliveryAttempt(sink: AnalyticsEngineDataset | undefined, a: DeliveryAttemptRecord): void {
  const level: Level =
    a.outcome === "consumer_error" || a.outcome === "dead_lettered"
      ? "error"
      : a.outcome === "delivered" || a.outcome === "skipped"
        ? "info"
        : "warn";
  write(level, "delivery attempt", {
    delivery_id: a.deliveryId,
    configuration_id: a.configurationId ?? undefined,
    organization_id: a.organizationId,
    attempt: a.attempt,
    outcome: a.outcome,
    disposition: a.disposition ?? undefined,
    step: a.step ?? undefined,
    http_status: a.httpStatus ?? undefined,
    latency_ms: a.latencyMs,
    reason: a.reason,
  });
  const point: AnalyticsEngineDataPoint = {
    blobs: [
      "delivery",
      a.organizationId,
      a.configurationId ?? "",
      a.outcome,
      a.step ?? "",
      a.httpStatus === null ? "" : String(a.httpStatus),
      a.disposition ?? "",
      a.deliveryId,
    ],
    doubles: [a.latencyMs, 1, a.attempt, a.httpStatus ?? 0],
  };
  const indexes = indexOf(a.organizationId);
  if (indexes) point.indexes = indexes;
  writePoint(sink, point);
}
