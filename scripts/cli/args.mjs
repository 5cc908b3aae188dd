/**
 * The operator CLI's command line: the flags it knows (node:util parseArgs), picking the command
 * from the words given, with the closest command or flag suggested for a typo, a flag that would
 * put a secret in argv refused with the way that does not, and the small parsers of flag values
 * (counts, `default`, on/off, scopes, a JWK Set file, event types, a secret from stdin or a file).
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { parseArgs } from "node:util";
import { COMMANDS } from "./commands.mjs";
import { UsageError } from "./common.mjs";
import { GROUPS } from "./help.mjs";
import { clean } from "./output.mjs";
/** @typedef {import("./common.mjs").Item} Item */
/** @typedef {import("./common.mjs").Flags} Flags */
/** @typedef {import("./common.mjs").Command} Command */

/** Every flag the CLI knows (node:util parseArgs), global or a command's own. */
export const OPTIONS = /** @type {const} */ ({
  url: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  limit: { type: "string" },
  all: { type: "boolean" },
  name: { type: "string" },
  email: { type: "string" },
  "per-second": { type: "string" },
  "per-day": { type: "string" },
  "per-month": { type: "string" },
  credits: { type: "string" },
  refill: { type: "string" },
  add: { type: "string" },
  set: { type: "string" },
  clear: { type: "boolean" },
  "location-hint": { type: "string" },
  "expires-in-days": { type: "string" },
  jwks: { type: "string" },
  scopes: { type: "string" },
  dpop: { type: "string" },
  confirm: { type: "string" },
  version: { type: "boolean" },
  status: { type: "string" },
  "event-type": { type: "string" },
  "event-id": { type: "string" },
  days: { type: "boolean" },
  out: { type: "string" },
  grace: { type: "string" },
  "webhook-url": { type: "string" },
  "token-url": { type: "string" },
  "client-id": { type: "string" },
  "client-secret-stdin": { type: "boolean" },
  "client-secret-file": { type: "string" },
  events: { type: "string" },
  description: { type: "string" },
  ordered: { type: "boolean" },
  "no-ordered": { type: "boolean" },
  "token-cache": { type: "boolean" },
  "no-token-cache": { type: "boolean" },
  "rate-limit": { type: "string" },
  yes: { type: "boolean" },
  "schema-file": { type: "string" },
  "examples-file": { type: "string" },
  "no-schema": { type: "boolean" },
  deprecated: { type: "boolean" },
  "no-deprecated": { type: "boolean" },
  since: { type: "string" },
  until: { type: "string" },
  "expires-in": { type: "string" },
  "refuse-unknown-types": { type: "boolean" },
  "no-refuse-unknown-types": { type: "boolean" },
  // Given once per origin; the values reach the command joined by newlines (an origin has none).
  "frame-origin": { type: "string", multiple: true },
  // The receiver's token endpoint (issue 31): webhooks create and update.
  "auth-method": { type: "string" },
  scope: { type: "string" },
  // Given once per resource indicator; joined by newlines like --frame-origin.
  resource: { type: "string", multiple: true },
  audience: { type: "string" },
  "assertion-audience": { type: "string" },
  "no-dpop": { type: "boolean" },
});

/**
 * Flags that would carry a secret in argv, where shell history and `ps` keep it: refused with
 * the way that does not (like ADMIN_TOKEN, which is only ever read from the environment).
 */
const SECRET_FLAGS = {
  "client-secret": "--client-secret-stdin (the secret piped in) or --client-secret-file FILE",
};

/**
 * What the command line asks for: help (on a group, or `""` for all), or a command with its
 * arguments and flags. Every mistake is a UsageError naming it.
 * @param {string[]} argv
 * @returns {{ help: string, version?: boolean, command?: undefined, args?: undefined, flags?: undefined }
 *   | { help?: undefined, command: Command, args: Record<string, string>, flags: Flags }}
 */
export function parseCommandLine(argv) {
  // A mistyped flag is named with the closest one (node:util's own message suggests nothing).
  for (const word of argv) {
    if (word === "--") break;
    if (!word.startsWith("--")) continue;
    const flag = word.slice(2).split("=")[0] ?? "";
    if (Object.hasOwn(SECRET_FLAGS, flag)) {
      throw new UsageError(
        `--${flag} is not taken on the command line, where shell history and \`ps\` would keep the secret; give ${SECRET_FLAGS[/** @type {keyof typeof SECRET_FLAGS} */ (flag)]}`,
        argv.find((w) => !w.startsWith("-")),
      );
    }
    if (!Object.hasOwn(OPTIONS, flag)) {
      const group = argv.find((w) => !w.startsWith("-"));
      throw new UsageError(
        `unknown flag --${clean(flag)}${suggest(flag, Object.keys(OPTIONS), "--")}`,
        group !== undefined && isGroup(group) ? group : undefined,
      );
    }
  }
  /** @type {{ values: Flags, positionals: string[] }} */
  let parsed;
  try {
    const raw = parseArgs({
      args: bareDpop(argv),
      allowPositionals: true,
      strict: true,
      options: OPTIONS,
    });
    // A flag given several times (--frame-origin) becomes one string, so every flag value stays a string or a boolean.
    const values = Object.fromEntries(Object.entries(raw.values).map(([k, v]) => [k, Array.isArray(v) ? v.join("\n") : v]));
    parsed = { values, positionals: raw.positionals };
  } catch (err) {
    // node:util's messages name the option and say what is wrong with it.
    const group = argv.find((word) => !word.startsWith("-"));
    throw new UsageError(err instanceof Error ? err.message : String(err), group !== undefined && isGroup(group) ? group : undefined);
  }
  const { values: flags, positionals } = parsed;
  const [first, second] = positionals;

  if (first === "help") {
    if (second !== undefined && !isGroup(second)) throw new UsageError(`no command group "${second}"`);
    return { help: second ?? "" };
  }
  if (first === undefined) {
    if (flags.help === true) return { help: "" };
    if (flags.version === true) return { help: "", version: true };
    throw new UsageError("no command given");
  }
  if (!isGroup(first)) throw new UsageError(`unknown command "${clean(first)}"${suggest(first, Object.keys(GROUPS))}`);
  if (flags.help === true) {
    // `keys create --help`: that command alone; `keys --help`: the group.
    const one = COMMANDS.find((c) => c.words[0] === first && c.words[1] === second && c.words.length === 2);
    return { help: one ? `${first} ${second}` : first };
  }

  const inGroup = COMMANDS.filter((c) => c.words[0] === first);
  const command = inGroup.length === 1 && inGroup[0]?.words.length === 1 ? inGroup[0] : inGroup.find((c) => c.words[1] === second);
  if (command === undefined) {
    throw new UsageError(
      second === undefined
        ? `${first}: which command?`
        : `unknown command "${first} ${clean(second)}"${suggest(
            second,
            inGroup.map((c) => c.words[1] ?? ""),
            `${first} `,
          )}`,
      first,
    );
  }

  const given = positionals.slice(command.words.length);
  const name = command.words.join(" ");
  const optional = command.optional ?? [];
  if (given.length < command.args.length) {
    throw new UsageError(`${name}: missing <${command.args.slice(given.length).join("> <")}>`, first);
  }
  if (given.length > command.args.length + optional.length) {
    throw new UsageError(`${name}: unexpected argument "${given[command.args.length + optional.length]}"`, first);
  }
  /** @type {Record<string, string>} */
  const args = {};
  [...command.args, ...optional].forEach((arg, i) => {
    // An optional argument not given is absent, not empty.
    if (i < command.args.length || given[i] !== undefined) args[arg] = given[i] ?? "";
  });
  for (const [arg, value] of Object.entries(args)) {
    if (value.trim() === "") throw new UsageError(`${name}: <${arg}> must not be empty`, first);
  }

  const global = ["url", "json", "help"];
  for (const flag of Object.keys(flags)) {
    if (!global.includes(flag) && !command.flags.includes(flag)) throw new UsageError(`${name} takes no --${flag}`, first);
  }
  if (flags.all === true && flags.limit !== undefined) throw new UsageError(`${name}: give --limit or --all, not both`, first);
  // Numbers are checked now, so a typo is a usage error before anything is sent.
  try {
    if (command.list) count(flags, "limit");
    else command.call?.(args, flags);
    command.validate?.(args, flags);
  } catch (err) {
    if (err instanceof UsageError) err.group = first;
    throw err;
  }
  return { command, args, flags };
}

/**
 * `; did you mean "x"?` for the candidate closest to `word` by edit distance, when it is close
 * enough to be a typo (at most 2 edits, and fewer than half the word); "" otherwise.
 * @param {string} word
 * @param {string[]} candidates
 * @param {string} [prefix] put before the candidate in the suggestion
 */
export function suggest(word, candidates, prefix = "") {
  let best = "";
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(word.toLowerCase(), candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== "" && bestDistance <= 2 && bestDistance < word.length / 2 ? `; did you mean "${prefix}${best}"?` : "";
}

/**
 * Levenshtein distance (insertions, deletions, substitutions), one row at a time.
 * @param {string} a
 * @param {string} b
 */
export function editDistance(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The version in package.json, which `--version` prints. */
export function packageVersion() {
  const pkg = /** @type {{ version?: string }} */ (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")));
  return pkg.version ?? "unknown";
}

/** @param {string} word */
export function isGroup(word) {
  return Object.hasOwn(GROUPS, word);
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
 * `--dpop` takes on|off (credentials), and webhooks also take it bare as a switch beside
 * `--no-dpop`: a bare one (last, or before another flag) is read as `--dpop=on`.
 * @param {string[]} argv
 */
function bareDpop(argv) {
  const end = argv.indexOf("--");
  return argv.map((word, i) =>
    word === "--dpop" && (end === -1 || i < end) && (argv[i + 1] === undefined || argv[i + 1]?.startsWith("--")) ? "--dpop=on" : word,
  );
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
