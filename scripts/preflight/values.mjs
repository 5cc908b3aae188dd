/**
 * The preflight's checks of values, mirroring src/config.ts (which the Worker uses to refuse them
 * with a 503): the retry schedule, integer vars and their ranges, a public https origin,
 * placeholder hosts.
 */

// ---------------------------------------------------------------------------------------------
// Values, mirroring src/config.ts (which the Worker uses to refuse them with a 503)
// ---------------------------------------------------------------------------------------------

/**
 * `5s,5m,2h` as milliseconds; null when malformed; empty means no retries. Mirrors parseSchedule
 * of src/config.ts (test/e2e/deploy.test.ts compares the two).
 * @param {string} value
 * @returns {number[] | null}
 */
export function parseSchedule(value) {
  if (value.trim() === "") return [];
  /** @type {Record<string, number>} */
  const unit = { s: 1000, m: 60_000, h: 3_600_000 };
  /** @type {number[]} */
  const out = [];
  for (const part of value.split(",")) {
    const match = /^\s*(\d{1,6})([smh])\s*$/.exec(part);
    if (!match) return null;
    const ms = Number(match[1]) * (unit[match[2] ?? ""] ?? 0);
    if (ms > 86_400_000) return null;
    out.push(ms);
  }
  return out.length > 20 ? null : out;
}

/** Integer vars and their bounds in src/config.ts. */
export const INTEGER_VARS = /** @type {Record<string, [number, number]>} */ ({
  ACCESS_TOKEN_TTL_SECONDS: [60, 86_400],
  RATE_LIMIT_PER_SECOND: [1, 1000],
  RATE_LIMIT_PER_DAY: [1, 100_000_000],
  WEBHOOK_TIMEOUT_SECONDS: [1, 120],
  WEBHOOK_REDISPATCH_SECONDS: [1, 3600],
  WEBHOOK_DISABLE_AFTER_SECONDS: [60, 90 * 86_400],
});

/** The origin of an http(s) URL that is nothing but an origin, else null (as src/config.ts). */
export function publicOrigin(/** @type {string} */ value) {
  try {
    const url = new URL(value);
    const bare = url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === "";
    return bare && (url.protocol === "https:" || url.protocol === "http:") ? url : null;
  } catch {
    return null;
  }
}

/** Hosts that are documentation examples or local, never a deployment's public name. */
export function placeholderHost(/** @type {string} */ host) {
  return /(^|\.)(example\.(com|org|net)|example|invalid|test|localhost)$/i.test(host) || host === "localhost";
}
