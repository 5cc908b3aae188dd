/**
 * What `npm start` shows of `wrangler dev`'s output: one line per request and each Worker's
 * bindings once, as one line that counts them by kind and names its service bindings with their
 * state (KEYWAY_SHOW_BINDINGS=1 shows wrangler's whole tables instead: about 70 lines that pushed
 * the demo's credentials off the screen, and that showed one value as "(hidden)" in one Worker's
 * table and as its value in another's). keyway logs every request itself (src/log.ts: method, path, status, error
 * code, time, request id), so wrangler's own request line (`[wrangler:info] GET /x 200 OK (3ms)`)
 * says the same thing a second time and is dropped. wrangler prints the main Worker's bindings
 * table twice (once before its service bindings connect, once after): the later one is shown.
 * keyway's own request line rides at the end of wrangler's (one line through the dev proxy instead
 * of a second through the runtime's log channel): that part is shown, as "[keyway] ...". Nothing else is touched:
 * warnings, errors, stack traces and our own lines pass as they are. wrangler has no option that
 * does only this (`--log-level` would hide the Workers' own console output too).
 */

/** wrangler's request line, after any colour codes are removed: `[wrangler:info] GET /path 200 OK (12ms)`. */
const REQUEST_LINE = /^\[wrangler:info\] (GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) \S+ \d{3}\b/;
/**
 * keyway's request line carried at the end of wrangler's (`... 200 OK (3ms) 12:00:01 INFO  GET
 * /v1/me 200 3ms rid=...`): its time, its level, then the rest.
 */
const CARRIED = /\(\d+ms\) (\d{2}:\d{2}:\d{2} (?:INFO|WARN|ERROR) .*)$/;
/** The heading of a bindings table: `keyway has access to the following bindings:`. */
const TABLE_HEADING = /^(\S+) has access to the following bindings:$/;
/** wrangler's paragraph explaining the tables' [connected] marks: said only with the tables. */
const CONNECTION_NOTE = /^Service bindings, Durable Object bindings, and Tail consumers connect/;
/** Said once per Worker by wrangler (three times a start): shown once. */
const SECRETS_LINE = /^Using secrets defined in /;
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
export function devLogFilter({ fullTables = false } = {}) {
  /** Workers whose bindings table has been shown. */
  const shown = new Set();
  /** @type {{ worker: string, lines: string[] } | null} the table being read */
  let table = null;
  /** @type {Map<string, string[]>} tables held back (they said "[not connected]") */
  const held = new Map();
  let saidSecrets = false;
  /** @param {string} worker @param {string[]} lines */
  const finish = (worker, lines) => {
    if (shown.has(worker)) return [];
    if (lines.some((l) => l.includes("[not connected]"))) {
      held.set(worker, lines);
      return [];
    }
    held.delete(worker);
    shown.add(worker);
    return fullTables ? lines : [bindingsLine(worker, lines)];
  };
  const flushHeld = () => {
    const out = [...held.entries()].flatMap(([worker, lines]) => {
      shown.add(worker);
      return fullTables ? lines : [bindingsLine(worker, lines)];
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
    if (REQUEST_LINE.test(plain)) {
      // keyway's own line rides at its end (src/http/middleware/observe.ts): shown as the Worker's.
      const ours = CARRIED.exec(plain)?.[1];
      return ours === undefined ? [] : [`[keyway] ${ours}`];
    }
    if (!fullTables && CONNECTION_NOTE.test(plain)) return [];
    if (SECRETS_LINE.test(plain)) {
      if (saidSecrets) return [];
      saidSecrets = true;
    }
    return READY.test(plain) ? [...flushHeld(), line] : [line];
  };
}

/** How a kind of binding is counted in the summary line ("3 queues"), in wrangler's Resource column's words. */
const KINDS = {
  "Durable Object": ["Durable Object", "Durable Objects"],
  "KV Namespace": ["KV namespace", "KV namespaces"],
  Queue: ["queue", "queues"],
  Worker: ["service binding", "service bindings"],
  "Analytics Engine Dataset": ["Analytics Engine dataset", "Analytics Engine datasets"],
  "Rate Limit": ["rate limit", "rate limits"],
  Assets: ["assets binding", "assets bindings"],
  "Environment Variable": ["variable", "variables"],
};

/**
 * One Worker's bindings table in one line: `keyway: 7 Durable Objects, 1 KV namespace, 3 queues,
 * 2 service bindings (PEOPLE keyway-people connected, GRAPHQL keyway-graphql connected), ...`.
 * Variables are counted, never shown (their values are in wrangler.toml and .dev.vars).
 * @param {string} worker
 * @param {string[]} lines the table as wrangler printed it: heading, column names, rows, blank
 */
export function bindingsLine(worker, lines) {
  /** @type {Map<string, number>} */
  const counts = new Map();
  /** @type {string[]} */
  const services = [];
  for (const line of lines.slice(2)) {
    const cells = line.replace(ANSI, "").trim().split(/ {2,}/);
    if (cells.length < 3) continue;
    const [binding = "", resource = "", mode = ""] = cells;
    counts.set(resource, (counts.get(resource) ?? 0) + 1);
    const service = /^env\.(\S+) \((\S+)\)$/.exec(binding);
    if (resource === "Worker" && service)
      services.push(`${service[1]} ${service[2]} ${/\[(not connected|connected)\]/.exec(mode)?.[1] ?? "local"}`);
  }
  const parts = [...counts].map(([resource, n]) => {
    const [one, many] = KINDS[/** @type {keyof typeof KINDS} */ (resource)] ?? [resource, resource];
    const words = `${n} ${n === 1 ? one : many}`;
    return resource === "Worker" && services.length > 0 ? `${words} (${services.join(", ")})` : words;
  });
  return `${worker}: ${parts.join(", ")} (KEYWAY_SHOW_BINDINGS=1 npm start shows wrangler's tables)`;
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
