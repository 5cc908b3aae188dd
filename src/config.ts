/**
 * Reads the Worker's vars and secrets into a typed Config once per isolate. A missing or
 * malformed secret makes the affected routes fail closed with a 503 (and a log line naming the
 * setting, never its value) instead of running with a weak default.
 */
import * as z from "zod";
import { ApiError } from "./errors";
import { base64UrlDecode } from "./lib/encoding";
import type { Limits } from "./schemas/records";

export interface SigningKey {
  kid: string;
  raw: Uint8Array;
}

export interface Config {
  accessTokenTtlSeconds: number;
  defaultLimits: Limits;
  /** First key signs; all verify (rotation, see .dev.vars.example). */
  signingKeys: SigningKey[];
  adminToken: string;
  allowInsecureTargets: boolean;
}

const intVar = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const VarsSchema = z.object({
  ACCESS_TOKEN_TTL_SECONDS: intVar(60, 86_400).default(3600),
  RATE_LIMIT_PER_SECOND: intVar(1, 10_000).default(1),
  RATE_LIMIT_PER_DAY: intVar(1, 100_000_000).default(1000),
  WEBHOOK_ALLOW_INSECURE_TARGETS: z.enum(["true", "false"]).default("false"),
  ADMIN_TOKEN: z.string().min(32, { error: "must be at least 32 characters" }),
  TOKEN_SIGNING_KEYS: z.string().min(1),
});

/** Longest lifetime a token can have whatever the var says; bounds revocation tombstones. */
export const MAX_TOKEN_TTL_SECONDS = 86_400;

const cache = new WeakMap<object, Config>();

export function loadConfig(env: Env): Config {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = VarsSchema.safeParse(env);
  if (!parsed.success) {
    const names = [...new Set(parsed.error.issues.map((i) => String(i.path[0])))];
    throw misconfigured(`invalid or missing setting(s): ${names.join(", ")}`);
  }
  const vars = parsed.data;
  const config: Config = {
    accessTokenTtlSeconds: vars.ACCESS_TOKEN_TTL_SECONDS,
    defaultLimits: { per_second: vars.RATE_LIMIT_PER_SECOND, per_day: vars.RATE_LIMIT_PER_DAY },
    signingKeys: parseSigningKeys(vars.TOKEN_SIGNING_KEYS),
    adminToken: vars.ADMIN_TOKEN,
    allowInsecureTargets: vars.WEBHOOK_ALLOW_INSECURE_TARGETS === "true",
  };
  cache.set(env, config);
  return config;
}

function parseSigningKeys(value: string): SigningKey[] {
  const keys = value.split(",").map((entry) => {
    const [kid, secret, ...rest] = entry.trim().split(":");
    const raw = secret === undefined ? null : base64UrlDecode(secret);
    if (rest.length > 0 || !kid || !/^[A-Za-z0-9-]{1,32}$/.test(kid) || raw === null || raw.byteLength < 32) {
      throw misconfigured("TOKEN_SIGNING_KEYS must be comma-separated kid:base64url(>=32 bytes) pairs");
    }
    return { kid, raw };
  });
  if (new Set(keys.map((k) => k.kid)).size !== keys.length) {
    throw misconfigured("TOKEN_SIGNING_KEYS has a duplicate kid");
  }
  return keys;
}

function misconfigured(detail: string): ApiError {
  // The detail names settings, never values; it is logged by the error mapper, not returned.
  console.error(JSON.stringify({ level: "error", msg: "configuration error", detail }));
  return new ApiError("service_unavailable", "The service is not configured correctly. Operators: see the logs.");
}
