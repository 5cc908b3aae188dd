/**
 * Reads the Worker's vars and secrets into a typed Config once per isolate. A missing or
 * malformed secret makes the affected routes fail closed with a 503 (and a log line naming the
 * setting, never its value) instead of running with a weak default.
 */
import * as z from "zod";
import { ApiError } from "./errors";
import { derived } from "./lib/cache";
import { base64UrlDecode } from "./lib/encoding";
import type { VersionedKey } from "./lib/keyring";
import { type LogFormat, log } from "./log";
import type { Limits } from "./schemas/records";
import { SINGLE_OBJECT_PER_SECOND } from "./schemas/records";

export interface Config {
  accessTokenTtlSeconds: number;
  defaultLimits: Limits;
  /** First key signs; all verify (rotation, see .dev.vars.example). */
  signingKeys: VersionedKey[];
  adminToken: string;
  /** AES-256-GCM keys for webhook secrets at rest; first encrypts, all decrypt. */
  encryptionKeys: VersionedKey[];
  allowInsecureTargets: boolean;
  /** One delivery attempt's overall deadline: the token request with its redirects, plus the webhook. */
  webhookTimeoutMs: number;
  /**
   * The deadline of an attempt in the fast and new lanes (docs/webhooks.md, "Lanes"): a receiver
   * that has not answered by then is cut off and its endpoint moves to the slow lane, where
   * attempts get the whole webhookTimeoutMs. Never longer than webhookTimeoutMs.
   */
  webhookFastLaneMs: number;
  /** Delay before each retry of a delivery, in order; its length is the number of retries. */
  webhookRetryScheduleMs: number[];
  /** A delivery whose attempt has not started this long after it was due is sent again. */
  webhookRedispatchMs: number;
  /** A configuration whose every attempt failed for this long is disabled. */
  webhookDisableAfterMs: number;
  /** The public origin (`https://api.example.com`) the API description names; null: relative. */
  publicBaseUrl: string | null;
}

/** Svix's schedule: a retry after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (about 28 h in all). */
export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h";

/** `5s,5m,2h` as milliseconds; null when malformed. An empty string means no retries. */
export function parseSchedule(value: string): number[] | null {
  if (value.trim() === "") return [];
  const unit = { s: 1000, m: 60_000, h: 3_600_000 } as const;
  const out: number[] = [];
  for (const part of value.split(",")) {
    const match = /^\s*(\d{1,6})([smh])\s*$/.exec(part);
    if (!match) return null;
    const ms = Number(match[1]) * unit[match[2] as keyof typeof unit];
    if (ms > 86_400_000) return null;
    out.push(ms);
  }
  return out.length > 20 ? null : out;
}

const intVar = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const VarsSchema = z.object({
  ACCESS_TOKEN_TTL_SECONDS: intVar(60, 86_400).default(3600),
  // Every key gets the default: it stays within one object (a larger limit is set per key, sharded).
  RATE_LIMIT_PER_SECOND: intVar(1, SINGLE_OBJECT_PER_SECOND).default(1),
  RATE_LIMIT_PER_DAY: intVar(1, 100_000_000).default(1000),
  WEBHOOK_ALLOW_INSECURE_TARGETS: z.enum(["true", "false"]).default("false"),
  WEBHOOK_TIMEOUT_SECONDS: intVar(1, 120).default(30),
  WEBHOOK_FAST_LANE_SECONDS: intVar(1, 30).default(2),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default(DEFAULT_RETRY_SCHEDULE)
    .refine((v) => parseSchedule(v) !== null, {
      error: "must be comma-separated durations such as 5s,5m,2h (at most 20, each at most 24h)",
    }),
  WEBHOOK_REDISPATCH_SECONDS: intVar(1, 3600).default(120),
  WEBHOOK_DISABLE_AFTER_SECONDS: intVar(60, 90 * 86_400).default(5 * 86_400),
  PUBLIC_BASE_URL: z
    .string()
    .default("")
    .refine((v) => v === "" || publicOrigin(v) !== null, { error: "must be an http(s) origin such as https://api.example.com" }),
  ADMIN_TOKEN: z.string().min(32, { error: "must be at least 32 characters" }),
  TOKEN_SIGNING_KEYS: z.string().min(1),
  WEBHOOK_ENCRYPTION_KEYS: z.string().min(1),
});

/** How the service reports itself (docs/observability.md). */
export interface TelemetrySettings {
  /** LOG_FORMAT: "json" (deployed, tests) or "pretty" (one readable line per event; `npm start`). */
  logFormat: LogFormat;
  /** LOG_SUCCESS_SAMPLE_RATE, 0..1: the share of successful requests whose outcome line is logged. */
  successSampleRate: number;
}

/**
 * The telemetry settings, apart from the rest of the config: they are needed before anything
 * else (the outcome line of a request refused for a bad setting included), and they never fail
 * closed, since how the logs look is no reason to refuse traffic. A malformed value falls back to
 * its default, and the log names the setting (once per isolate), never its value.
 */
export const telemetrySettings = derived((env: Env): TelemetrySettings => {
  const settings: TelemetrySettings = { logFormat: "json", successSampleRate: 1 };
  const invalid: string[] = [];
  const format = env.LOG_FORMAT ?? "";
  if (format === "pretty" || format === "json") settings.logFormat = format;
  else if (format !== "") invalid.push("LOG_FORMAT");
  const rate = (env.LOG_SUCCESS_SAMPLE_RATE ?? "").trim();
  if (/^(0(\.\d+)?|1(\.0+)?)$/.test(rate)) settings.successSampleRate = Number(rate);
  else if (rate !== "") invalid.push("LOG_SUCCESS_SAMPLE_RATE");
  if (invalid.length > 0) log.warn("invalid telemetry setting(s); using the default", { settings: invalid.join(", ") });
  return settings;
});

/** Longest lifetime a token can have whatever the var says; bounds revocation tombstones. */
export const MAX_TOKEN_TTL_SECONDS = 86_400;

/**
 * Only the public origin (PUBLIC_BASE_URL), for the routes that need nothing else and must not
 * depend on the secrets (the API description, OAuth discovery). Null when unset.
 */
export const publicBaseUrl = derived((env: Env): { url: string | null } => {
  const value = env.PUBLIC_BASE_URL ?? "";
  if (value === "") return { url: null };
  const origin = publicOrigin(value);
  if (origin === null) throw misconfigured("invalid or missing setting(s): PUBLIC_BASE_URL");
  return { url: origin };
});

/** Parsed once per `env` object (an isolate's bindings); a bad setting throws on every call. */
export const loadConfig = derived((env: Env): Config => {
  const parsed = VarsSchema.safeParse(env);
  if (!parsed.success) {
    const names = [...new Set(parsed.error.issues.map((i) => String(i.path[0])))];
    throw misconfigured(`invalid or missing setting(s): ${names.join(", ")}`);
  }
  const vars = parsed.data;
  const config: Config = {
    accessTokenTtlSeconds: vars.ACCESS_TOKEN_TTL_SECONDS,
    defaultLimits: { per_second: vars.RATE_LIMIT_PER_SECOND, per_day: vars.RATE_LIMIT_PER_DAY },
    signingKeys: parseKeyring("TOKEN_SIGNING_KEYS", vars.TOKEN_SIGNING_KEYS),
    adminToken: vars.ADMIN_TOKEN,
    encryptionKeys: parseKeyring("WEBHOOK_ENCRYPTION_KEYS", vars.WEBHOOK_ENCRYPTION_KEYS, 32),
    allowInsecureTargets: vars.WEBHOOK_ALLOW_INSECURE_TARGETS === "true",
    webhookTimeoutMs: vars.WEBHOOK_TIMEOUT_SECONDS * 1000,
    webhookFastLaneMs: Math.min(vars.WEBHOOK_FAST_LANE_SECONDS, vars.WEBHOOK_TIMEOUT_SECONDS) * 1000,
    webhookRetryScheduleMs: parseSchedule(vars.WEBHOOK_RETRY_SCHEDULE) ?? [],
    webhookRedispatchMs: vars.WEBHOOK_REDISPATCH_SECONDS * 1000,
    webhookDisableAfterMs: vars.WEBHOOK_DISABLE_AFTER_SECONDS * 1000,
    publicBaseUrl: vars.PUBLIC_BASE_URL === "" ? null : publicOrigin(vars.PUBLIC_BASE_URL),
  };
  return config;
});

/** The origin of an http(s) URL that is nothing but an origin (a trailing slash allowed), else null. */
function publicOrigin(value: string): string | null {
  try {
    const url = new URL(value);
    const bare = url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === "";
    return bare && (url.protocol === "https:" || url.protocol === "http:") ? url.origin : null;
  } catch {
    return null;
  }
}

/** `kid:base64url(key)` pairs, comma-separated; `exactBytes` pins the length (AES-256: 32). */
function parseKeyring(name: string, value: string, exactBytes?: number): VersionedKey[] {
  const keys = value.split(",").map((entry) => {
    const [kid, secret, ...rest] = entry.trim().split(":");
    const raw = secret === undefined ? null : base64UrlDecode(secret);
    const sized = raw !== null && (exactBytes === undefined ? raw.byteLength >= 32 : raw.byteLength === exactBytes);
    if (rest.length > 0 || !kid || !/^[A-Za-z0-9-]{1,32}$/.test(kid) || !sized) {
      throw misconfigured(`${name} must be comma-separated kid:base64url(${exactBytes ?? ">=32"} bytes) pairs`);
    }
    return { kid, raw: raw as Uint8Array };
  });
  if (new Set(keys.map((k) => k.kid)).size !== keys.length) throw misconfigured(`${name} has a duplicate kid`);
  return keys;
}

function misconfigured(detail: string): ApiError {
  // The detail names settings, never values; the adapter that answers logs it, no response carries it.
  return new ApiError("service_unavailable", "The service is not configured correctly. Operators: see the logs.", {
    detail: `configuration error: ${detail}`,
  });
}
