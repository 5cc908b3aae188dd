/**
 * What `npm start` shows of `wrangler dev`'s output: one line per request and each Worker's
 * bindings table once. keyway logs every request itself (src/log.ts: method, path, status, error
 * code, time, request id), so wrangler's own request line (`[wrangler:info] GET /x 200 OK (3ms)`)
 * says the same thing a second time and is dropped. wrangler prints the main Worker's bindings
 * table twice (once before its service bindings connect, once after): the later one is shown. Nothing else is touched:
 * warnings, errors, stack traces and our own lines pass as they are. wrangler has no option that
 * does only this (`--log-level` would hide the Workers' own console output too).
 */

/** wrangler's request line, after any colour codes are removed: `[wrangler:info] GET /path 200 OK (12ms)`. */
const REQUEST_LINE = /^\[wrangler:info\] (GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) \S+ \d{3}\b/;
/** The heading of a bindings table: `keyway has access to the following bindings:`. */
const TABLE_HEADING = /^(\S+) has access to the following bindings:$/;
/** wrangler's line saying the server is up. */
const READY = /^\[wrangler:info\] Ready on /;
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour sequences start with ESC.
const ANSI = /\u001b\[[0-9;]*m/g;

/**
 * A stateful line filter: given a line, the lines to show now (none, the line, or a table held
 * back until now). One per run, shared by stdout and stderr. wrangler first prints the main
 * Worker's table with its service bindings `[not connected]`, then again once they connect: such
 * a table is held, replaced by the later one, and shown at the latest before `Ready on`.
 * @returns {(line: string) => string[]}
 */
export function devLogFilter() {
  /** Workers whose bindings table has been shown. */
  const shown = new Set();
  /** @type {{ worker: string, lines: string[] } | null} the table being read */
  let table = null;
  /** @type {Map<string, string[]>} tables held back (they said "[not connected]") */
  const held = new Map();
  /** @param {string} worker @param {string[]} lines */
  const finish = (worker, lines) => {
    if (shown.has(worker)) return [];
    if (lines.some((l) => l.includes("[not connected]"))) {
      held.set(worker, lines);
      return [];
    }
    held.delete(worker);
    shown.add(worker);
    return lines;
  };
  const flushHeld = () => {
    const out = [...held.entries()].flatMap(([worker, lines]) => {
      shown.add(worker);
      return lines;
    });
    held.clear();
    return out;
  };
  return (line) => {
    const plain = line.replace(ANSI, "").trimEnd();
    if (table !== null) {
      table.lines.push(line);
      if (plain !== "") return [];
      const { worker, lines } = table;
      table = null;
      return finish(worker, lines);
    }
    const heading = TABLE_HEADING.exec(plain);
    if (heading) {
      table = { worker: heading[1] ?? "", lines: [line] };
      return [];
    }
    if (REQUEST_LINE.test(plain)) return [];
    return READY.test(plain) ? [...flushHeld(), line] : [line];
  };
}

/**
 * Copies `from` to `to` line by line through `filter`; a last line without a newline is passed
 * on when `from` ends.
 * @param {NodeJS.ReadableStream} from
 * @param {NodeJS.WritableStream} to
 * @param {(line: string) => string[]} filter
 */
export function pipeLines(from, to, filter) {
  let pending = "";
  from.setEncoding("utf8");
  from.on("data", (/** @type {string} */ chunk) => {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    const out = lines.flatMap(filter);
    if (out.length > 0) to.write(`${out.join("\n")}\n`);
  });
  from.on("end", () => {
    if (pending !== "") {
      const out = filter(pending);
      if (out.length > 0) to.write(out.join("\n"));
    }
  });
}
