/**
 * `npm run bench:tail`: the API Worker's tail latency (issue 43, item 6). keyway's `GET /healthz`
 * and `GET /v1/me` beside the design floor (bench/floor: one Durable Object call a request), 10
 * connections, TAIL_ROUNDS (5) interleaved rounds of TAIL_SECONDS (5 s) runs, the targets in a new
 * random order each round. Reported per target: p99 (and p50, p99.9, max, req/s) per round, their
 * median and spread, the p99 over the floor's p99 of the same round, and the CPU per request of
 * each process under wrangler (its node process, the dev proxy's workerd, the Worker's workerd).
 * Writes bench/results-tail.json.
 *
 * TAIL_VARIANTS=<a,b,...> runs keyway once per variant, each its own `wrangler dev` (state on
 * tmpfs, the local trace store off as in the bench and `npm start`), every variant's targets
 * interleaved with the others' and the floor's in the same rounds (default: `start,bench`):
 * - `start`: `npm start` itself (scripts/start.mjs: wrangler at its default log level, its output
 *   through scripts/dev-log.mjs's filter, `LOG_FORMAT` pretty, every success line logged), its
 *   output read here and counted (not a terminal), no demo seeding;
 * - `bench`: the bench's: `--log-level error`, output dropped, JSON lines, production's
 *   `LOG_SUCCESS_SAMPLE_RATE` (0.01);
 * - `start_json`, `start_sample0`: `start` with `LOG_FORMAT` json, or no success lines;
 * - `start_nodisklog`: `start` with `WRANGLER_WRITE_LOGS=false` (wrangler's debug log file, which
 *   gets every line it is given at any log level, off);
 * - `bench_alllines`: `bench` with every success line logged (JSON, wrangler at `error`);
 * - `start_nofilter`: `start` with wrangler's output to /dev/null (the filter bypassed);
 * - `solo`: `bench` without the companion Workers (docs, GraphQL) in the process;
 * - `nometrics`: `bench` without the Analytics Engine binding (writeDataPoint fails, is caught);
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { ensureDevVars } from "../scripts/dev-vars.mjs";
import { KEYWAY_CONFIGS, wranglerCommand } from "../scripts/wrangler.mjs";
import {
  cleanups,
  commName,
  cpuJiffies,
  cpuMs,
  descendants,
  ENV,
  freePort,
  productionVar,
  ROOT,
  round,
  runMain,
  scenarios,
  seed,
  sleep,
  spread,
  stopWithCleanups,
  waitFor,
} from "./lib.mjs";

const ROUNDS = Math.max(3, Number(process.env.TAIL_ROUNDS) || 5);
const SECONDS = Math.max(2, Number(process.env.TAIL_SECONDS) || 5);
const WARMUP_S = 3;
const CONNECTIONS = 10;
/**
 * Others' share of the machine's CPU during a run above which the run is made again (up to
 * TRIES times, after a pause): the machine is shared, and a p99 measured beside someone's test run
 * is their scheduler queue, not the Worker's. Each run's share is kept in the results.
 */
const MAX_OTHERS = Number(process.env.TAIL_MAX_OTHERS) || 0.15;
const TRIES = 4;
const CORES = availableParallelism();
/** Every process this bench started (the wrangler trees) and the bench itself. */
/** @type {number[]} */
const roots = [];
const ours = () => [process.pid, ...roots.flatMap((r) => [r, ...descendants(r)])];
/** The machine's busy CPU time so far, all processes (ms). */
function busyMs() {
  const f = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
  return (user + nice + system + irq + softirq + steal) * 10;
}
/** The target: `GET /v1/me`'s p99 within this many times the design floor's. */
const P99_TARGET = 1.25;

/**
 * @typedef {{ logs: "start" | "bench" | "nofilter", vars: Record<string, string>, companions: boolean,
 *   metrics: boolean, entry?: string, env?: Record<string, string> }} Variant
 */
/** What `npm start` passes besides its own (scripts/start.mjs sets LOG_FORMAT pretty and the rest). */
/** @type {Record<string, string>} */
const START_VARS = {};
const BENCH_VARS = { WEBHOOK_ALLOW_INSECURE_TARGETS: "true", LOG_SUCCESS_SAMPLE_RATE: productionVar("LOG_SUCCESS_SAMPLE_RATE") };
/** @type {Record<string, Variant>} */
const VARIANTS = {
  start: { logs: "start", vars: START_VARS, companions: true, metrics: true },
  start_json: { logs: "start", vars: { ...START_VARS, LOG_FORMAT: "json" }, companions: true, metrics: true },
  start_sample0: { logs: "start", vars: { ...START_VARS, LOG_SUCCESS_SAMPLE_RATE: "0" }, companions: true, metrics: true },
  // wrangler appends every message it is given, at any log level, to a debug log file on the disk
  // (~/.config/.wrangler/logs, one open-append-close each, under a mutex) unless WRANGLER_WRITE_LOGS=false.
  start_nodisklog: { logs: "start", vars: START_VARS, companions: true, metrics: true, env: { WRANGLER_WRITE_LOGS: "false" } },
  bench_alllines: { logs: "bench", vars: { ...BENCH_VARS, LOG_SUCCESS_SAMPLE_RATE: "1" }, companions: true, metrics: true },
  start_nofilter: {
    logs: "nofilter",
    vars: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true", WEBHOOK_REDISPATCH_SECONDS: "10", LOG_FORMAT: "pretty" },
    companions: true,
    metrics: true,
  },
  bench: { logs: "bench", vars: BENCH_VARS, companions: true, metrics: true },
  solo: { logs: "bench", vars: BENCH_VARS, companions: false, metrics: true },
  nometrics: { logs: "bench", vars: BENCH_VARS, companions: true, metrics: false },
};

/** @typedef {{ root: number, node: number[], proxy: number[], worker: number[], logBytes: () => number }} Procs */

/** The processes under a wrangler dev: its node, the dev proxy's workerd, the Worker's workerd (the one with the inspector). */
function processes(/** @type {number} */ root) {
  const all = descendants(root);
  const workerd = all.filter((p) => commName(p) === "workerd");
  const isWorker = (/** @type {number} */ p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, "utf8").includes("--inspector-addr");
    } catch {
      return false;
    }
  };
  return {
    // wrangler's node processes (their threads are named MainThread), not esbuild.
    node: [root, ...all.filter((p) => !["workerd", "esbuild"].includes(commName(p)))],
    proxy: workerd.filter((p) => !isWorker(p)),
    worker: workerd.filter(isWorker),
  };
}

/**
 * One `wrangler dev` of keyway as `variant` says, or of the floor; stopped by the cleanups.
 * @param {string} name
 * @param {Variant | null} variant null: the design floor, with the bench's settings
 */
async function start(name, variant) {
  let configs = ["--config", "bench/floor/wrangler.toml"];
  if (variant) {
    await ensureDevVars(ROOT);
    let main = "wrangler.toml";
    if (variant.entry || !variant.metrics) {
      // keyway's configuration with another entry or without METRICS, beside it (its paths are relative).
      main = `wrangler.bench-tail-${name}.toml`;
      let toml = await readFile(join(ROOT, "wrangler.toml"), "utf8");
      if (variant.entry) toml = toml.replace(/^main = "src\/index.ts"$/m, `main = "${variant.entry}"`);
      if (!variant.metrics)
        toml = toml.replace(/^\[\[analytics_engine_datasets\]\]\nbinding = "METRICS"\ndataset = "keyway_metrics"\n/m, "");
      await writeFile(join(ROOT, main), toml);
      const file = join(ROOT, main);
      cleanups.push(() => rm(file, { force: true }));
    }
    const workers = variant.companions ? [main, ...KEYWAY_CONFIGS.slice(1)] : [main];
    configs = workers.flatMap((c) => ["--config", c]);
  }
  const port = await freePort();
  const persist = await mkdtemp(join(existsSync("/dev/shm") ? "/dev/shm" : "/tmp", "keyway-tail-"));
  const logs = variant?.logs ?? "bench";
  /** @type {[string, string[]]} */
  let command;
  // The bench's environment (bench/lib.mjs ENV); `npm start`'s variants keep wrangler's debug log
  // file, as `npm start` does, unless the variant turns it off.
  /** @type {NodeJS.ProcessEnv} */
  let env = { ...ENV };
  if (logs !== "bench") delete env.WRANGLER_WRITE_LOGS;
  env = { ...env, ...variant?.env };
  if (logs === "start") {
    // `npm start` itself (scripts/start.mjs: wrangler at its default log level, its output through
    // scripts/dev-log.mjs), state on tmpfs, no demo seeding; vars through KEYWAY_VAR_<NAME>.
    command = [process.execPath, [join(ROOT, "scripts", "start.mjs")]];
    env = {
      ...env,
      PORT: String(port),
      KEYWAY_PERSIST_DIR: persist,
      KEYWAY_SEED: "0",
      ...Object.fromEntries(Object.entries(variant?.vars ?? {}).map(([k, v]) => [`KEYWAY_VAR_${k}`, v])),
    };
  } else {
    command = wranglerCommand([
      "dev",
      ...configs,
      "--port",
      String(port),
      "--ip",
      "127.0.0.1",
      "--persist-to",
      persist,
      "--inspector-port",
      String(await freePort()),
      "--show-interactive-dev-session=false",
      ...(logs === "bench" ? ["--log-level", "error"] : []),
      ...Object.entries(variant?.vars ?? {}).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
    ]);
  }
  // `npm start`'s output is read here as a terminal would read it (counted, not shown).
  const child = spawn(...command, {
    cwd: ROOT,
    env,
    stdio: ["ignore", logs === "start" ? "pipe" : "ignore", logs === "start" ? "pipe" : "inherit"],
    detached: true,
  });
  let bytes = 0;
  for (const stream of [child.stdout, child.stderr]) stream?.on("data", (/** @type {Buffer} */ chunk) => (bytes += chunk.length));
  stopWithCleanups(child, persist);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`, 120_000);
  const root = /** @type {number} */ (child.pid);
  roots.push(root);
  return { base, procs: { root, ...processes(root), logBytes: () => bytes } };
}

/** @typedef {{ rps: number, p50: number, p90: number, p99: number, p999: number, max: number, over50: number, requests: number, bad: number, cpu: Record<string, number>, logBytesPerReq: number, othersShare: number, tries?: number }} Run */

/**
 * One autocannon run of `target`, with the CPU of `procs`'s processes (ms per request) over it.
 * @param {import("./lib.mjs").Target} target
 * @param {Procs} procs
 * @param {number} seconds
 * @returns {Promise<Run>}
 */
async function load(target, procs, seconds = SECONDS) {
  const { prepare, ...options } = target;
  prepare?.();
  // Found again before every run: wrangler may restart the Worker's workerd after start-up.
  Object.assign(procs, processes(procs.root));
  const kinds = /** @type {const} */ (["node", "proxy", "worker"]);
  const before = Object.fromEntries(kinds.map((k) => [k, cpuMs(procs[k])]));
  const logBefore = procs.logBytes();
  const machineBefore = busyMs();
  const oursBefore = cpuMs(ours());
  const t0 = performance.now();
  /** @type {number[]} */
  const latencies = [];
  // Without a callback autocannon returns its instance, an event emitter that is also a promise of the result.
  const instance = /** @type {import("autocannon").Instance & Promise<import("autocannon").Result>} */ (
    /** @type {unknown} */ (autocannon({ ...options, connections: CONNECTIONS, duration: seconds }))
  );
  instance.on(
    "response",
    (/** @type {unknown} */ _client, /** @type {number} */ _status, /** @type {number} */ _bytes, /** @type {number} */ ms) =>
      latencies.push(ms),
  );
  const result = await instance;
  const others = busyMs() - machineBefore - (cpuMs(ours()) - oursBefore);
  const othersShare = round(Math.max(0, others) / ((performance.now() - t0) * CORES), 2);
  const requests = result.requests.total;
  const cpu = Object.fromEntries(kinds.map((k) => [k, requests > 0 ? round((cpuMs(procs[k]) - (before[k] ?? 0)) / requests, 3) : 0]));
  return {
    rps: round(result.requests.average, 0),
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    p999: result.latency.p99_9,
    max: result.latency.max,
    // How many requests took over 50 ms, per thousand: the tail as a count, not a rank.
    over50: requests > 0 ? round((latencies.filter((ms) => ms > 50).length / latencies.length) * 1000, 1) : 0,
    requests,
    bad: result.non2xx + result.errors + result.timeouts,
    cpu,
    logBytesPerReq: requests > 0 ? round((procs.logBytes() - logBefore) / requests, 1) : 0,
    othersShare,
  };
}

/** Fisher-Yates, in place. @template T @param {T[]} xs */
function shuffle(xs) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [/** @type {T} */ (xs[j]), /** @type {T} */ (xs[i])];
  }
  return xs;
}

async function main() {
  const names = (process.env.TAIL_VARIANTS ?? "start,bench").split(",").filter(Boolean);
  for (const n of names) if (!VARIANTS[n]) throw new Error(`unknown variant ${n}; known: ${Object.keys(VARIANTS).join(", ")}`);
  const startedAt = new Date();
  const floor = await start("floor", null);
  /** @type {{ name: string, target: import("./lib.mjs").Target, procs: Procs }[]} */
  const targets = [{ name: "floor", target: { url: `${floor.base}/` }, procs: floor.procs }];
  for (const n of names) {
    const kw = await start(n, /** @type {Variant} */ (VARIANTS[n]));
    const s = scenarios(kw.base, await seed(kw.base));
    targets.push({ name: `${n}:healthz`, target: { url: `${kw.base}/healthz` }, procs: kw.procs });
    targets.push({ name: `${n}:me`, target: s.me, procs: kw.procs });
    console.log(`${n}: keyway up on ${kw.base}`);
  }
  for (const t of targets) await load(t.target, t.procs, WARMUP_S);
  const jiffies = cpuJiffies();
  /** @type {Record<string, Run[]>} */
  const runs = Object.fromEntries(targets.map((t) => [t.name, []]));
  /** @type {string[][]} */
  const orders = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = shuffle([...targets]);
    orders.push(order.map((t) => t.name));
    for (const t of order) {
      let run = await load(t.target, t.procs);
      let tries = 1;
      for (; run.othersShare > MAX_OTHERS && tries < TRIES; tries++) {
        await sleep(5000);
        run = await load(t.target, t.procs);
      }
      runs[t.name]?.push({ ...run, tries });
    }
    console.log(
      `round ${i + 1}/${ROUNDS}: p99 ${targets.map((t) => `${t.name} ${runs[t.name]?.at(-1)?.p99}`).join(", ")} (ms); others' CPU ${targets.map((t) => runs[t.name]?.at(-1)?.othersShare).join(" ")}`,
    );
  }
  const after = cpuJiffies();
  const floorRuns = /** @type {Run[]} */ (runs.floor);
  const summary = Object.fromEntries(
    targets.map(({ name }) => {
      const r = /** @type {Run[]} */ (runs[name]);
      const p99Ratio = r.map((x, i) => x.p99 / Math.max(1, floorRuns[i]?.p99 ?? 1));
      return [
        name,
        {
          p99_ms: spread(
            r.map((x) => x.p99),
            1,
          ),
          p99_of_floor: name === "floor" ? undefined : spread(p99Ratio),
          p99_of_floor_per_round: name === "floor" ? undefined : p99Ratio.map((x) => round(x)),
          p50_ms: spread(
            r.map((x) => x.p50),
            1,
          ),
          p999_ms: spread(
            r.map((x) => x.p999),
            1,
          ),
          max_ms: spread(
            r.map((x) => x.max),
            1,
          ),
          over_50ms_per_1000: spread(
            r.map((x) => x.over50),
            1,
          ),
          rps: spread(
            r.map((x) => x.rps),
            0,
          ),
          cpu_ms_per_req: Object.fromEntries(
            ["node", "proxy", "worker"].map((k) => [
              k,
              spread(
                r.map((x) => x.cpu[k] ?? 0),
                3,
              ).median,
            ]),
          ),
          log_bytes_per_req: spread(
            r.map((x) => x.logBytesPerReq),
            1,
          ).median,
          non_2xx: r.reduce((n, x) => n + x.bad, 0),
          others_cpu_share: spread(r.map((x) => x.othersShare)),
          runs_beside_others: r.filter((x) => x.othersShare > MAX_OTHERS).length,
          per_round: r,
        },
      ];
    }),
  );
  const verdicts = Object.fromEntries(
    names.map((n) => {
      const s = summary[`${n}:me`]?.p99_of_floor;
      return [
        n,
        s ? `GET /v1/me p99 ${s.median}x the floor's (target <= ${P99_TARGET}): ${s.median <= P99_TARGET ? "met" : "missed"}` : "",
      ];
    }),
  );
  const result = {
    measured_at: startedAt.toISOString(),
    method: `autocannon, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s runs after a ${WARMUP_S} s warm-up, targets in a new random order each round; a run during which other processes used more than ${MAX_OTHERS * 100} % of the machine's CPU is made again (up to ${TRIES} tries); state on tmpfs; local trace store off`,
    variants: Object.fromEntries(names.map((n) => [n, VARIANTS[n]])),
    load_average: loadavg().map((x) => round(x)),
    cpu_stolen_pct: round(((after.steal - jiffies.steal) / Math.max(1, after.total - jiffies.total)) * 100, 1),
    verdicts,
    summary,
    orders,
  };
  await writeFile(join(ROOT, "bench", "results-tail.json"), `${JSON.stringify(result, null, 2)}\n`);
  console.log(
    "\ntarget: p99 median (IQR; range) ms | of the floor's p99, median (IQR) | p50 | p99.9 | >50 ms per 1000 | req/s | CPU ms/req node/proxy/worker | others' CPU share, median (runs beside others)",
  );
  for (const { name } of targets) {
    const s = /** @type {any} */ (summary[name]);
    const ratio = s.p99_of_floor ? `${s.p99_of_floor.median}x (${s.p99_of_floor.q1}-${s.p99_of_floor.q3})` : "-";
    console.log(
      `${name}: ${s.p99_ms.median} (${s.p99_ms.q1}-${s.p99_ms.q3}; ${s.p99_ms.min}-${s.p99_ms.max}) | ${ratio} | ${s.p50_ms.median} | ${s.p999_ms.median} | ${s.over_50ms_per_1000.median} | ${s.rps.median} | ${s.cpu_ms_per_req.node}/${s.cpu_ms_per_req.proxy}/${s.cpu_ms_per_req.worker} | ${s.others_cpu_share.median} (${s.runs_beside_others})`,
    );
  }
  for (const v of Object.values(verdicts)) console.log(v);
  console.log(`load average ${result.load_average.join(" ")}, ${result.cpu_stolen_pct} % stolen; bench/results-tail.json written`);
}

runMain(main);
