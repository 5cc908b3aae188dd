/**
 * `npm run bench:processes`: where the CPU of a request goes, process by process, under the runner
 * a person uses. keyway runs as `npm start` runs it (`node scripts/start.mjs`: the log pipe, then
 * wrangler's node process, its esbuild service, and two workerd processes, the dev proxy that owns
 * the port and the Worker itself), and the design floor (bench/floor: one Durable Object RPC
 * writing one row) under the very same runner (`KEYWAY_DEV_CONFIG`, no seeding), and the peer
 * (node-oidc-provider's client-credentials grant, bench/oidc-peer.mjs, one process). autocannon
 * drives `POST /v1/oauth`, `GET /v1/me`, the floor sent each of those very requests, and the peer in
 * turn, over the rounds; each run's CPU
 * is read from /proc per process and divided by its requests. What production pays is the Worker's
 * process (workerd's, which in production is Cloudflare's runtime); the pipe, wrangler's node,
 * esbuild and the dev proxy are local development's only. keyway's own CPU per request is its
 * Worker process's beyond the floor's. Writes bench/results-processes.json.
 *
 * BENCH_ROUNDS (default 5), BENCH_SECONDS (default 3), BENCH_CONNECTIONS (default 10);
 * BENCH_SAMPLE_RATE=0.01 logs production's share of successful requests (npm start logs every one),
 * and writes bench/results-processes-sampled.json instead.
 *
 * BENCH_RATE=<requests per second>: every run at that fixed rate (autocannon's overallRate, below
 * what each side can serve) instead of as fast as it can, and bench/results-processes-rate.json
 * (bench/results-processes-rate-sampled.json with BENCH_SAMPLE_RATE).
 * Saturated, each side's processes run at its own throughput, and a process's CPU per request
 * falls as its load rises (more requests share each wake-up): the faster floor looks cheaper per
 * request in every process, keyway's own included. At one rate both pay for the same load, so
 * the CPU per request beyond the floor is the work alone; the throughput ratios then say nothing.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import {
  commName,
  cpuMs,
  descendants,
  freePort,
  ROOT,
  runMain,
  scenarios,
  seed,
  sleep,
  spread,
  startPeer,
  stopWithCleanups,
  waitFor,
} from "./lib.mjs";

const ROUNDS = Math.max(3, Number(process.env.BENCH_ROUNDS) || 5);
const SECONDS = Number(process.env.BENCH_SECONDS) || 3;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS) || 10;
const RATE = Number(process.env.BENCH_RATE) || 0;

/** The processes of one runner, by role. @typedef {{ pipe: number[], wrangler: number[], esbuild: number[], proxy: number[], worker: number[] }} Roles */
const ROLES = /** @type {const} */ (["pipe", "wrangler", "esbuild", "proxy", "worker"]);
/** What production pays of each role: only the Worker's own process (Cloudflare's runtime runs it). */
const PRODUCTION = new Set(["worker"]);

/** @param {number} pid */
const cmdline = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
};

/** The runner's processes by role, found from the pid of `node scripts/start.mjs`. @param {number} root @returns {Roles} */
function roles(root) {
  const all = descendants(root);
  /** @type {Roles} */
  const r = { pipe: [root], wrangler: [], esbuild: [], proxy: [], worker: [] };
  for (const pid of all) {
    const comm = commName(pid);
    if (comm === "workerd") (cmdline(pid).includes("--inspector-addr") ? r.worker : r.proxy).push(pid);
    else if (comm === "esbuild") r.esbuild.push(pid);
    else if (cmdline(pid).includes("wrangler")) r.wrangler.push(pid);
  }
  return r;
}

/**
 * `node scripts/start.mjs` on a free port with its state on tmpfs, as a person's `npm start` (its
 * output read and dropped, as a terminal would take it); `config` runs another Worker instead.
 * @param {string | undefined} config
 */
async function startRunner(config) {
  const port = await freePort();
  const persist = await mkdtemp(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "keyway-processes-"));
  const child = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      KEYWAY_PERSIST_DIR: persist,
      ...(config ? { KEYWAY_DEV_CONFIG: config, KEYWAY_SEED: "0" } : {}),
      // BENCH_SAMPLE_RATE=0.01: keyway logs the share of successful requests production does
      // (wrangler.toml [env.production.vars]) instead of every one, as npm start does.
      ...(!config && process.env.BENCH_SAMPLE_RATE ? { KEYWAY_VAR_LOG_SUCCESS_SAMPLE_RATE: process.env.BENCH_SAMPLE_RATE } : {}),
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  child.stdout.resume();
  child.stderr.resume();
  stopWithCleanups(child, persist);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`, 120_000);
  await sleep(1000); // the start script's own work (seeding, the banner) is over before measuring
  const found = roles(/** @type {number} */ (child.pid));
  for (const k of ["proxy", "worker"])
    for (const pid of found[/** @type {"proxy" | "worker"} */ (k)])
      console.log(`${config ?? "keyway"} ${k} ${pid}: ${cmdline(pid).slice(0, 300)}`);
  return { base, roles: found };
}

/** One load run: requests, throughput, p99 and CPU ms per request of each role. @param {import("./lib.mjs").Target} target @param {Roles} r */
async function run(target, r) {
  const { prepare, ...options } = target;
  prepare?.();
  const before = Object.fromEntries(ROLES.map((k) => [k, cpuMs(r[k])]));
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: SECONDS, ...(RATE > 0 ? { overallRate: RATE } : {}) });
  const requests = result.requests.total;
  const per = Object.fromEntries(ROLES.map((k) => [k, requests > 0 ? (cpuMs(r[k]) - (before[k] ?? 0)) / requests : 0]));
  return { rps: result.requests.average, p99: result.latency.p99, bad: result.non2xx + result.errors + result.timeouts, per };
}

runMain(async () => {
  const kw = await startRunner(undefined);
  const floor = await startRunner("bench/floor/wrangler.toml");
  const targets = scenarios(kw.base, await seed(kw.base));
  // The peer: node-oidc-provider's client-credentials grant, one process of its own (its whole CPU).
  const peer = await startPeer();
  /** @type {Record<string, { target: import("./lib.mjs").Target, roles: Roles }>} */
  const cases = {
    token: { target: targets.token, roles: kw.roles },
    me: { target: targets.me, roles: kw.roles },
    // The floor sent the very same request as each scenario (method, headers, body), so what the
    // client's request costs the dev proxy and the pipe is on both sides of each pair.
    floor_token: { target: { ...targets.token, url: `${floor.base}/v1/oauth` }, roles: floor.roles },
    floor_me: { target: { ...targets.me, url: `${floor.base}/v1/me` }, roles: floor.roles },
    peer: { target: peer.target, roles: { pipe: [], wrangler: [], esbuild: [], proxy: [], worker: [peer.pid] } },
  };
  for (const c of Object.values(cases)) await run(c.target, c.roles); // warm-up
  /** @type {Record<string, Awaited<ReturnType<typeof run>>[]>} */
  const runs = { token: [], me: [], floor_token: [], floor_me: [], peer: [] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const [name, c] of Object.entries(cases)) runs[name]?.push(await run(c.target, c.roles));
    console.log(
      `round ${i + 1}/${ROUNDS}: ${Object.entries(runs)
        .map(([n, rs]) => `${n} ${Math.round(rs.at(-1)?.rps ?? 0)}/s`)
        .join(", ")}`,
    );
  }
  /** @param {string} name */
  const summary = (name) => {
    const rs = runs[name] ?? [];
    const byRole = Object.fromEntries(
      ROLES.map((k) => [
        k,
        spread(
          rs.map((r) => r.per[k] ?? 0),
          3,
        ),
      ]),
    );
    const local = rs.map((r) => ROLES.filter((k) => !PRODUCTION.has(k)).reduce((n, k) => n + (r.per[k] ?? 0), 0));
    const production = rs.map((r) => ROLES.filter((k) => PRODUCTION.has(k)).reduce((n, k) => n + (r.per[k] ?? 0), 0));
    const out = {
      rps: spread(
        rs.map((r) => r.rps),
        0,
      ),
      p99_ms: spread(
        rs.map((r) => r.p99),
        1,
      ),
      non_2xx: rs.reduce((n, r) => n + r.bad, 0),
      cpu_ms_per_request: byRole,
      production_ms_per_request: spread(production, 3),
      local_only_ms_per_request: spread(local, 3),
    };
    if (name !== "token" && name !== "me") return out;
    // Pair by round: this scenario's run and its floor's (the same request), adjacent on the machine.
    const floorRuns = runs[`floor_${name}`] ?? [];
    const pairs = rs.map((r, i) => ({ r, f: floorRuns[i] }));
    return {
      ...out,
      of_floor: {
        throughput: spread(pairs.map(({ r, f }) => r.rps / (f?.rps ?? Number.NaN))),
        p99: spread(pairs.map(({ r, f }) => r.p99 / (f?.p99 ?? Number.NaN))),
        worker_cpu_beyond_ms: spread(
          pairs.map(({ r, f }) => (r.per.worker ?? 0) - (f?.per.worker ?? 0)),
          3,
        ),
        // What production pays beyond the floor, over the peer's whole token in the same round.
        worker_cpu_beyond_of_peer_token: spread(
          pairs.map(({ r, f }, i) => ((r.per.worker ?? 0) - (f?.per.worker ?? 0)) / (runs.peer?.[i]?.per.worker ?? Number.NaN)),
        ),
        local_only_beyond_ms: spread(
          pairs.map(({ r, f }) => ROLES.filter((k) => !PRODUCTION.has(k)).reduce((n, k) => n + (r.per[k] ?? 0) - (f?.per[k] ?? 0), 0)),
          3,
        ),
      },
    };
  };
  const results = {
    machine: { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, date: new Date().toISOString() },
    rounds: ROUNDS,
    success_sample_rate: Number(process.env.BENCH_SAMPLE_RATE ?? 1),
    fixed_rate_per_s: RATE > 0 ? RATE : null,
    seconds: SECONDS,
    connections: CONNECTIONS,
    processes: {
      keyway: Object.fromEntries(ROLES.map((k) => [k, kw.roles[k].length])),
      floor: Object.fromEntries(ROLES.map((k) => [k, floor.roles[k].length])),
    },
    token: summary("token"),
    me: summary("me"),
    floor_token: summary("floor_token"),
    floor_me: summary("floor_me"),
    peer: summary("peer"),
  };
  console.log(JSON.stringify(results.processes));
  for (const name of /** @type {const} */ (["token", "me", "floor_token", "floor_me", "peer"])) {
    const r = results[name];
    const roles = ROLES.map((k) => `${k} ${r.cpu_ms_per_request[k]?.median}`).join(", ");
    console.log(
      `${name}: ${r.rps.median}/s (IQR ${r.rps.iqr}), p99 ${r.p99_ms.median} ms; ms per request: ${roles}; production ${r.production_ms_per_request.median}, local only ${r.local_only_ms_per_request.median}`,
    );
    if ("of_floor" in r)
      console.log(
        `  of the floor: throughput ${r.of_floor.throughput.median} (IQR ${r.of_floor.throughput.iqr}), p99 ${r.of_floor.p99.median}, Worker CPU beyond ${r.of_floor.worker_cpu_beyond_ms.median} ms (${r.of_floor.worker_cpu_beyond_of_peer_token.median}x the peer's whole token), local only beyond ${r.of_floor.local_only_beyond_ms.median} ms`,
      );
  }
  if (process.env.BENCH_NO_WRITE !== "1")
    await writeFile(
      join(ROOT, "bench", `results-processes${RATE > 0 ? "-rate" : ""}${process.env.BENCH_SAMPLE_RATE ? "-sampled" : ""}.json`),
      `${JSON.stringify(results, null, 2)}\n`,
    );
});
