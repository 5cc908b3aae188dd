/**
 * The values of the operator CLI's flags, read and checked before anything is sent: counts,
 * `default`/`none`, on/off, fixed sets of values (answered with the valid ones), scopes, event
 * types, instants, JSON files, a secret from stdin or a file; and the "did you mean" the command
 * line uses for a mistyped or shortened command, flag or value. A module of its own because both
 * the command line (args.mjs) and the command table (commands.mjs) use it: args.mjs reads the
 * table, so the table cannot import args.mjs without a cycle.
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { UsageError } from "./common.mjs";
import { clean } from "./output.mjs";

/** @typedef {import("./common.mjs").Item} Item */
/** @typedef {import("./common.mjs").Flags} Flags */

/** A shortened word that begins more candidates than this is too short to name them all. */
const MAX_NAMED = 4;

/**
 * `; did you mean "x"?` (or `"x" or "y"`) for what `word` was most likely meant to be (closest
 * below); "" when nothing is close. Only ever a suggestion: a shortened flag or command is not
 * taken as an abbreviation, since one that is unique today would silently change meaning when a
 * command or flag that shares its beginning is added.
 * @param {string} word
 * @param {readonly string[]} candidates
 * @param {string} [prefix] put before each candidate in the suggestion
 */
export function suggest(word, candidates, prefix = "") {
  const named = closest(word.toLowerCase(), candidates).map((candidate) => `"${prefix}${candidate}"`);
  if (named.length === 0) return "";
  return `; did you mean ${named.length === 1 ? named[0] : `${named.slice(0, -1).join(", ")} or ${named.at(-1)}`}?`;
}

/**
 * The candidates `word` may stand for: the one closest by edit distance when it is close enough to
 * be a typo (at most 2 edits, and fewer than half the word: `--per-secnd`), and those it is the
 * beginning of (`--per-sec`, `cred`), exactly or, for a word of 4 or more characters, with one
 * typo; the exact beginnings win over the ones with a typo. Several beginnings are all named, up
 * to MAX_NAMED (`keys cr`: create or credits); more than that, only the typo's match.
 * @param {string} word
 * @param {readonly string[]} candidates
 * @returns {string[]}
 */
export function closest(word, candidates) {
  let best = "";
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(word, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const typo = best !== "" && bestDistance <= 2 && bestDistance < word.length / 2 ? [best] : [];
  if (word.length < 2) return typo;
  const slack = word.length >= 4 ? 1 : 0;
  const begun = candidates.filter((c) => c.length > word.length && prefixDistance(word, c) <= slack);
  const exact = begun.filter((c) => c.startsWith(word));
  const shortened = (exact.length > 0 ? exact : begun).filter((c) => !typo.includes(c));
  return typo.length + shortened.length <= MAX_NAMED ? [...typo, ...shortened] : typo;
}

/**
 * Levenshtein distance (insertions, deletions, substitutions).
 * @param {string} a
 * @param {string} b
 */
export function editDistance(a, b) {
  return distances(a, b)[b.length] ?? 0;
}

/**
 * The edit distance from `a` to the nearest beginning of `b`: 0 when `a` begins `b`.
 * @param {string} a
 * @param {string} b
 */
export function prefixDistance(a, b) {
  return Math.min(...distances(a, b));
}

/**
 * The last row of the Levenshtein table, computed one row at a time: entry j is the distance
 * from all of `a` to the first j characters of `b`.
 * @param {string} a
 * @param {string} b
 */
function distances(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row;
}

/**
 * A flag with a fixed set of values (`--status`, `--location-hint`, `--auth-method`): its value, or
 * undefined when absent. Anything else is answered with the valid values, and the closest of them,
 * before anything is sent.
 * @param {Flags} flags
 * @param {string} name
 * @param {readonly string[]} values
 * @returns {string | undefined}
 */
export function oneOf(flags, name, values) {
  const value = flags[name];
  if (value === undefined) return undefined;
  if (typeof value === "string" && values.includes(value)) return value;
  const given = typeof value === "string" ? value : "";
  throw new UsageError(`--${name} must be one of ${values.join(", ")}; got "${clean(given)}"${suggest(given, values)}`);
}

/**
 * A positive whole number flag, or undefined when it is absent.
 * @param {Flags} flags
 * @param {string} name
 * @returns {number | undefined}
 */
export function count(flags, name) {
  const value = flags[name];
  if (value === undefined || typeof value === "boolean") return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`--${name} must be a whole number of at least 1, got "${clean(value)}"`);
  }
  return n;
}

/**
 * A number of credits: a whole number, zero allowed.
 * @param {Flags} flags
 * @param {string} name
 */
export function amount(flags, name) {
  const value = flags[name];
  if (value === undefined || typeof value === "boolean") return undefined;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${name} must be a whole number, got "${clean(value)}"`);
  }
  return Number(value);
}

/**
 * `--refill AMOUNT/day` or `AMOUNT/month`: the credits' refill.
 * @param {Flags} flags
 * @returns {{ amount: number, interval: "day" | "month" } | undefined}
 */
export function refillFlag(flags) {
  const value = flags.refill;
  if (value === undefined || typeof value === "boolean") return undefined;
  const m = /^(\d+)\/(day|month)$/.exec(value);
  if (!m) throw new UsageError(`--refill must be AMOUNT/day or AMOUNT/month (e.g. 10000/month), got "${clean(value)}"`);
  return { amount: Number(m[1]), interval: /** @type {"day" | "month"} */ (m[2]) };
}

/** The longest grace a rotation gives the replaced secret (the API's MAX_ROTATION_GRACE_SECONDS): 7 days. */
export const MAX_GRACE_SECONDS = 7 * 86_400;

/**
 * `keys rotate --grace SECONDS`: how long the replaced secret keeps working, 0 to 7 days. Absent: 0,
 * the old secret stops at once (the API needs the field; docs/operator-cli.md says why 0).
 * @param {Flags} flags
 */
export function graceSeconds(flags) {
  const value = flags.grace;
  if (value === undefined) return 0;
  if (typeof value !== "string" || !/^\d+$/.test(value) || Number(value) > MAX_GRACE_SECONDS) {
    throw new UsageError(
      `--grace must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS} (7 days), e.g. 3600 for an hour; got "${clean(String(value))}"`,
    );
  }
  return Number(value);
}

/**
 * Like count, but `none` is null: a limit removed.
 * @param {Flags} flags
 * @param {string} name
 */
export function countOrNone(flags, name) {
  return flags[name] === "none" ? null : count(flags, name);
}

/**
 * Like count, but `default` is null: the API's way to restore the service default.
 * @param {Flags} flags
 * @param {string} name
 * @returns {number | null | undefined}
 */
export function countOrDefault(flags, name) {
  return flags[name] === "default" ? null : count(flags, name);
}

/**
 * The JWK Set in the file --jwks names; keyway checks its keys (public, signing) and says what is wrong.
 * @param {string | boolean} path
 */
export function jwksFile(path) {
  if (typeof path !== "string") throw new UsageError("--jwks needs a file name");
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new UsageError(`--jwks: cannot read ${clean(path)}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--jwks: ${clean(path)} is not JSON`);
  }
}

/**
 * --scopes "a b": the list; on update `all` means no restriction (null).
 * @param {string | boolean | undefined} value
 * @param {boolean} update
 */
export function scopeList(value, update) {
  if (value === undefined || typeof value === "boolean") return undefined;
  if (update && value.trim() === "all") return null;
  return value.split(/\s+/).filter((s) => s !== "");
}

/** @param {string | boolean | undefined} value */
export function onOff(value) {
  if (value === undefined) return undefined;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new UsageError(`--dpop must be on or off, got "${clean(String(value))}"`);
}

/**
 * @param {Item} object
 * @returns {Item} the object without its undefined fields (so they are absent from the JSON body)
 */
export function defined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

/**
 * A string flag's value, or undefined when absent (a boolean means it was given without a value).
 * @param {string | boolean | undefined} value
 */
export function flagText(value) {
  return typeof value === "string" ? value : undefined;
}

/**
 * `--events "a.b,c.d"` (commas or spaces): the event types; on update `all` means every event (null).
 * @param {string | boolean | undefined} value
 * @param {boolean} update
 * @returns {string[] | null | undefined}
 */
export function eventList(value, update) {
  if (value === undefined || typeof value === "boolean") return undefined;
  if (update && value.trim() === "all") return null;
  const events = value.split(/[\s,]+/).filter((e) => e !== "");
  if (events.length === 0) throw new UsageError(`--events needs event types, e.g. order.created,order.paid${update ? " (or `all`)" : ""}`);
  return events;
}

/**
 * `--filter JSON`: a payload filter as JSON on the command line (docs/receivers.md, "Filters and
 * channels"); update: `none` removes it. keyway checks it against the event types' schemas and
 * names the path of what is wrong.
 * @param {Flags} flags
 * @param {boolean} update
 * @returns {unknown}
 */
export function filterFlag(flags, update) {
  const value = flags.filter;
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new UsageError('--filter needs a JSON object, e.g. \'{"data": {"amount": {"$gte": 100}}}\'');
  if (update && value.trim() === "none") return null;
  let parsed;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new UsageError(`--filter is not JSON (${err instanceof Error ? clean(err.message) : "unreadable"})`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`--filter needs a JSON object${update ? " (or `none`)" : ""}`);
  }
  return parsed;
}

/**
 * `--channels C,C..`: the channels a configuration receives; update: `all` for every channel.
 * @param {string | boolean | undefined} value
 * @param {boolean} update
 * @returns {string[] | null | undefined}
 */
export function channelList(value, update) {
  if (value === undefined || typeof value === "boolean") return undefined;
  if (update && value.trim() === "all") return null;
  const channels = value.split(/[\s,]+/).filter((c) => c !== "");
  if (channels.length === 0) throw new UsageError(`--channels needs channel names, e.g. acct_42,eu${update ? " (or `all`)" : ""}`);
  return channels;
}

/**
 * The JSON in the file a flag names (`--schema-file`, `--examples-file`); keyway checks what it
 * holds and says what is wrong, naming the path inside it.
 * @param {Flags} flags
 * @param {string} name
 * @returns {unknown}
 */
export function jsonFile(flags, name) {
  const path = flags[name];
  if (path === undefined) return undefined;
  if (typeof path !== "string") throw new UsageError(`--${name} needs a file name`);
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new UsageError(`--${name}: cannot read ${clean(path)}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--${name}: ${clean(path)} is not JSON (${err instanceof Error ? clean(err.message) : "unreadable"})`);
  }
}

/**
 * `--since` / `--until`: a moment with its zone (`Z` or an offset), so a local clock cannot shift
 * the window; sent as UTC.
 * @param {Flags} flags
 * @param {string} name
 */
export function instant(flags, name) {
  const value = flags[name];
  if (value === undefined) return undefined;
  const text = typeof value === "string" ? value.trim() : "";
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new UsageError(`--${name} must be a date and time with its zone, e.g. 2026-06-01T09:00:00Z (UTC); got "${clean(String(value))}"`);
  }
  return new Date(ms).toISOString();
}

/**
 * A yes/no setting from a pair of flags (`--ordered` / `--no-ordered`): true, false, or undefined
 * when neither is given.
 * @param {Flags} flags
 * @param {string} name
 * @returns {boolean | undefined}
 */
export function toggle(flags, name) {
  const on = flags[name] === true;
  const off = flags[`no-${name}`] === true;
  if (on && off) throw new UsageError(`give --${name} or --no-${name}, not both`);
  return on ? true : off ? false : undefined;
}

/** The secret read from stdin, once: the command line is checked before it runs, and both read it. */
/** @type {string | undefined} */
let stdinSecret;

/**
 * The receiver's client secret, from stdin (`--client-secret-stdin`, e.g. piped from a password
 * manager) or a file (`--client-secret-file FILE`), never from argv. One trailing newline is
 * dropped (what `echo` and most editors add); an empty secret is refused. Undefined when neither
 * flag is given.
 * @param {Flags} flags
 * @returns {string | undefined}
 */
export function clientSecret(flags) {
  const file = flags["client-secret-file"];
  const stdin = flags["client-secret-stdin"] === true;
  if (file !== undefined && stdin) throw new UsageError("give --client-secret-stdin or --client-secret-file, not both");
  /** @type {string} */
  let text;
  if (stdin) {
    if (stdinSecret === undefined) {
      // Typed at a terminal it would be echoed: the secret comes through a pipe or a redirect.
      if (process.stdin.isTTY) {
        throw new UsageError(
          "--client-secret-stdin reads the secret from a pipe or a redirect (e.g. `< secret.txt`), not from the terminal, where it would be shown",
        );
      }
      try {
        stdinSecret = readFileSync(0, "utf8");
      } catch {
        throw new UsageError("--client-secret-stdin: cannot read stdin");
      }
    }
    text = stdinSecret;
  } else if (typeof file === "string") {
    try {
      text = readFileSync(file, "utf8");
    } catch {
      throw new UsageError(`--client-secret-file: cannot read ${clean(file)}`);
    }
  } else return undefined;
  const secret = text.replace(/\r?\n$/, "");
  if (secret === "") throw new UsageError(`the client secret ${stdin ? "on stdin" : "file"} is empty`);
  return secret;
}
