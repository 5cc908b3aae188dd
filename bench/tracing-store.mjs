/**
 * `node bench/tracing-store.mjs`: does wrangler's local tracing store (miniflare's observability
 * collector, on by default in `wrangler dev`, never pruned) slow keyway down as it grows? Two
 * keyways run as `npm start` runs one (state on the disk, wrangler's default log level with its
 * line per request read and dropped, LOG_FORMAT pretty, production's log sampling), one with
 * wrangler's default (the store on) and one with X_LOCAL_OBSERVABILITY=false; `GET /v1/me` by two
 * admin-created keys at 1,000/s each is sent to each in turn, ROUNDS times (the order alternated
 * per round), and every round's figures are printed with the size of each store so far.
 * TRACING_ROUNDS (default 8) and TRACING_SECONDS (default 4) change the run.
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { devConfigArgs } from "../scripts/wrangler.mjs";
import { ENV, load, median, productionVar, round, runMain, scenarios, seed, startWorker, WARMUP_S } from "./lib.mjs";

const ROUNDS = Number(process.env.TRACING_ROUNDS ?? 8);
const SECONDS = Number(process.env.TRACING_SECONDS ?? 4);

/** Bytes under a directory (the tracing store's files). @param {string} dir */
function du(dir) {
  let n = 0;
  /** @type {import("node:fs").Dirent[]} */
  let entries = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? du(p) : statSync(p).size;
  }
  return n;
}

/** keyway as `npm start` runs it (scripts/start.mjs), with or without the local tracing store. @param {boolean} tracing */
async function startLikeNpmStart(tracing) {
  const { X_LOCAL_OBSERVABILITY: _, ...env } = ENV;
  const kw = await startWorker(
    [
      ...devConfigArgs(),
      "--var",
      "WEBHOOK_ALLOW_INSECURE_TARGETS:true",
      "--var",
      "WEBHOOK_REDISPATCH_SECONDS:10",
      "--var",
      "LOG_FORMAT:pretty",
      "--var",
      `LOG_SUCCESS_SAMPLE_RATE:${productionVar("LOG_SUCCESS_SAMPLE_RATE")}`,
    ],
    { env: tracing ? env : { ...env, X_LOCAL_OBSERVABILITY: "false" }, onDisk: true, logLevel: "log" },
  );
  const s = await seed(kw.base);
  return { ...kw, me: scenarios(kw.base, s).me, store: join(kw.persist, "v3", "observability") };
}

async function main() {
  const sides = { on: await startLikeNpmStart(true), off: await startLikeNpmStart(false) };
  for (const side of Object.values(sides)) await load(side.me, side.server, WARMUP_S);
  /** @type {Record<"on" | "off", Awaited<ReturnType<typeof load>>[]>} */
  const runs = { on: [], off: [] };
  console.log(`GET /v1/me, ${SECONDS} s runs, 16 connections, ${ROUNDS} rounds; "store": the tracing store's size after the run`);
  for (let i = 0; i < ROUNDS; i++) {
    const order = /** @type {("on" | "off")[]} */ (i % 2 ? ["off", "on"] : ["on", "off"]);
    for (const name of order) {
      let run = await load(sides[name].me, sides[name].server, SECONDS);
      // wrangler restarts the Worker when a source file changes: such a run is run again.
      for (let tries = 0; run.reloaded && tries < 3; tries++) {
        console.log(`round ${i + 1}: ${name}: the Worker restarted during the run; running it again`);
        run = await load(sides[name].me, sides[name].server, SECONDS);
      }
      runs[name].push(run);
    }
    const line = (/** @type {"on" | "off"} */ name) => {
      const r = /** @type {Awaited<ReturnType<typeof load>>} */ (runs[name][i]);
      return `${name}: ${round(r.rps, 0)} req/s, p99 ${r.p99} ms, ${round(r.cpuMsPerReq, 3)} ms CPU/req, store ${round(du(sides[name].store) / 2 ** 20, 1)} MiB`;
    };
    const on = /** @type {Awaited<ReturnType<typeof load>>} */ (runs.on[i]);
    const off = /** @type {Awaited<ReturnType<typeof load>>} */ (runs.off[i]);
    console.log(
      `round ${i + 1}: ${line("on")}; ${line("off")}; on/off ${round(on.rps / off.rps)}, CPU on - off ${round(on.cpuMsPerReq - off.cpuMsPerReq, 3)} ms/req`,
    );
  }
  const ratio = runs.on.map((r, i) => r.rps / (runs.off[i]?.rps ?? Number.NaN));
  const first = (/** @type {Awaited<ReturnType<typeof load>>[]} */ xs) => xs[0]?.rps ?? Number.NaN;
  const last = (/** @type {Awaited<ReturnType<typeof load>>[]} */ xs) => xs.at(-1)?.rps ?? Number.NaN;
  console.log(
    JSON.stringify(
      {
        on_over_off_median: round(median(ratio)),
        on_over_off_first_half: round(median(ratio.slice(0, Math.floor(ROUNDS / 2)))),
        on_over_off_second_half: round(median(ratio.slice(Math.ceil(ROUNDS / 2)))),
        cpu_on_minus_off_per_round: runs.on.map((r, i) => round(r.cpuMsPerReq - (runs.off[i]?.cpuMsPerReq ?? Number.NaN), 3)),
        on_last_over_first: round(last(runs.on) / first(runs.on)),
        off_last_over_first: round(last(runs.off) / first(runs.off)),
        on_requests: runs.on.reduce((n, r) => n + r.requests, 0),
        off_requests: runs.off.reduce((n, r) => n + r.requests, 0),
        on_store_mib: round(du(sides.on.store) / 2 ** 20, 1),
        off_store_mib: round(du(sides.off.store) / 2 ** 20, 1),
      },
      null,
      2,
    ),
  );
}

runMain(main);
