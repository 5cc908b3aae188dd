/**
 * What every part of the operator CLI shares: the limits it works within (request timeout, page
 * size, the audit log's default length), the JSDoc types of the command table (Command, Call,
 * Column, Flags) and the two errors that become its exit statuses (UsageError: 2, nothing sent;
 * RequestError: 1, the request failed).
 */
/** @typedef {import("./http.mjs").Client} Client */

/** Revocations answer once every key object applied them, which can take a while on a busy deployment. */
export const REQUEST_TIMEOUT_MS = 60_000;

/** The server's page size cap (schemas/common.ts ListQuery). */
export const MAX_PAGE = 100;

/** The audit log grows for 400 days; without --all or --limit, the most recent entries are what an operator wants. */
export const AUDIT_DEFAULT_LIMIT = 50;

/** @typedef {Record<string, unknown>} Item */
/** @typedef {"GET" | "POST" | "PATCH" | "DELETE"} Method */
/** @typedef {{ method: Method, path: string, body?: Item }} Call */
/** @typedef {Record<string, string | boolean | undefined>} Flags */
/** @typedef {{ header: string, value: (item: Item) => unknown }} Column */

/**
 * One command: `words` select it (`["keys", "create"]`; `["audit"]`), `args` are its positional
 * parameters in order, `flags` the options it takes beyond the global ones. A command either makes
 * one call (`call`) or reads a list (`list`: the collection's path, followed page by page).
 * @typedef {object} Command
 * @property {string[]} words
 * @property {string[]} args
 * @property {string[]} [optional] positional parameters after `args` that may be left out (absent from `a` then)
 * @property {string[]} flags
 * @property {string} summary
 * @property {(a: Record<string, string>, f: Flags) => Call} [call]
 * @property {(a: Record<string, string>, f: Flags) => string} [list]
 * @property {Column[]} [columns]
 * @property {string} [noun] what a list holds, for "(no ...)"
 * @property {string} [secret] the field of the answer holding a secret shown only this once
 * @property {(data: Item, a: Record<string, string>) => string[]} [notes] lines that say what the answer means (after the
 *   record; on stderr with --json)
 * @property {number} [defaultLimit] lists: how many items without --limit/--all (default: all)
 * @property {(client: Client, a: Record<string, string>, f: Flags) => Promise<void>} [check] run before the call; throws a UsageError to stop it
 * @property {string[]} [required] flags the command cannot do without (its synopsis shows them without brackets)
 * @property {(a: Record<string, string>, f: Flags) => void} [validate] checks the flags when the command line is read, before
 *   anything is sent (a `run` command's own; a `call` is checked by building it)
 * @property {(client: Client, a: Record<string, string>, f: Flags) => Promise<Shown>} [run] a command of several calls, or with its own output
 */

/** What a `run` command shows: `data` for --json, `text` for people (default: `data` as a record). */
/** @typedef {{ data: unknown, text?: string }} Shown */

/** Exit 2: nothing was sent. `group` selects the usage text printed with the message. */
export class UsageError extends Error {
  /**
   * @param {string} message
   * @param {string} [group]
   * @param {boolean} [withUsage] false when usage text would not help (e.g. a missing ADMIN_TOKEN)
   */
  constructor(message, group, withUsage = true) {
    super(message);
    /** @type {string | undefined} */
    this.group = group;
    this.withUsage = withUsage;
  }
}

/** Exit 1: the request failed; `lines` are printed to stderr as they are. */
export class RequestError extends Error {
  /** @param {string[]} lines */
  constructor(lines) {
    super(lines.join("\n"));
    this.lines = lines;
  }
}
