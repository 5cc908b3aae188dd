/**
 * The operator CLI's command line: the flags it knows (node:util parseArgs), picking the command
 * from the words given, with the closest command or flag suggested for a typo or a shortened
 * word (never taken as an abbreviation), and a flag that would put a secret in argv refused with
 * the way that does not. It reads the command table and the help's groups; the parsers of flag
 * values live in values.mjs, which the table uses too, so that no module imports one that
 * imports it back.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { COMMANDS } from "./commands.mjs";
import { UsageError } from "./common.mjs";
import { GROUPS } from "./help.mjs";
import { clean } from "./output.mjs";
import { count, suggest } from "./values.mjs";
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
  operations: { type: "boolean" },
  "no-operations": { type: "boolean" },
  "rate-limit": { type: "string" },
  filter: { type: "string" },
  channels: { type: "string" },
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
  // Workload identity (issue 44): trusted issuers, and credentials' federated_jwt, key set URL and token kind.
  issuer: { type: "string" },
  "jwks-uri": { type: "string" },
  "assertion-reuse": { type: "string" },
  "max-lifetime": { type: "string" },
  method: { type: "string" },
  "federated-issuer": { type: "string" },
  "federated-subject": { type: "string" },
  "access-token-strategy": { type: "string" },
  // Issue 45: a configuration's signature scheme (webhooks create, rotate-secret) and how it delivers (create).
  "signature-scheme": { type: "string" },
  delivery: { type: "string" },
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
  // Numbers and fixed sets of values are checked now, so a typo is a usage error before anything is sent.
  try {
    if (command.list) {
      count(flags, "limit");
      // Building the path checks a list's filters (`deliveries list --status`).
      command.list(args, flags);
    } else command.call?.(args, flags);
    command.validate?.(args, flags);
  } catch (err) {
    if (err instanceof UsageError) err.group = first;
    throw err;
  }
  return { command, args, flags };
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
