/**
 * `npm run bench:decompose`: where `GET /v1/me`'s cost beyond the design floor goes (issue 33).
 * One keyway under `wrangler dev` with bench/lanes/worker.ts as its entry (keyway's Worker with
 * lanes that stop a request at successive depths: the floor's one-row RPC to the key's own object,
 * the credential checks, the view and envelope written directly, the same behind Hono alone,
 * keyway's whole app), and the same
 * load sent to each lane in turn, the order reversed every other round. Each lane's Worker CPU per
 * request is read from /proc; the steps between lanes are differences within a round, reported as
 * medians with their spread. Within one process the rounds spread far less than across two (the
 * main bench's floor Worker beside keyway), so steps of a few hundredths of a millisecond show.
 * Writes bench/results-lanes.json and prints a table.
 *
 * `BENCH_MODE=sequential`: the same lanes without HTTP. Each lane's round is BENCH_N (2,000)
 * requests made one after the other inside one invocation of the lanes' Worker
 * (bench/lanes/worker.ts, `/__bench/sequential`), timed there; no dev proxy, no load generator,
 * no concurrency. Its app lane's median ratio to the floor lane measured 0.61 to 0.68 over eight
 * runs, where the HTTP lanes' measured 0.79 to 0.93 over six: a change of 0.03 ms or more shows
 * in one or two runs. Writes bench/results-lanes-sequential.json.
 *
 * Sequential mode also has a `token` lane: keyway's app answering `POST /v1/oauth`, beside the
 * same floor lane.
 *
 * `BENCH_MODE=sequential BENCH_PROFILE=app,framework`: instead of the rounds, a V8 CPU profile of
 * each named lane (bench/cdp.mjs), with each function's time in microseconds per request.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { profiled, top, workerdInspector } from "./cdp.mjs";
import { api, cleanups, cpuMs, freePort, load, need, ROOT, round, runMain, scenarios, seed, spread, startKeyway } from "./lib.mjs";

const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS) || 12);
const SEQUENTIAL = process.env.BENCH_MODE === "sequential";
const PER_ROUND = Math.max(500, Number(process.env.BENCH_N) || 2000);
// The lanes of GET /v1/me, in order of depth; sequential mode adds `token` (keyway's app answering
// POST /v1/oauth, beside the same floor lane), which no step leads to.
const DEPTHS = ["floor", "payload", "gate", "direct", "framework", "app"];
const ALL_LANES = SEQUENTIAL ? [...DEPTHS, "token"] : DEPTHS;
// BENCH_LANES=direct,app to measure some lanes only (the floor lane is always one of them).
const LANES = ALL_LANES.filter((l) => l === "floor" || !process.env.BENCH_LANES || process.env.BENCH_LANES.split(",").includes(l));
const STEPS = [
  ["floor", "payload", "an admission's input and answer as the RPC's payload"],
  ["payload", "gate", "the credential checks' logic: the token, the key's digest and shards, the admission in the key's object"],
  ["gate", "direct", "the view, the envelope and one Response with its headers"],
  ["direct", "framework", "Hono itself: its router, its context and the compose of as many pass-through layers as keyway's /v1 middleware"],
  [
    "framework",
    "app",
    "what keyway's middleware does in those layers: request id, log context, outcome record, headers, deps, the route's wrapper",
  ],
];

/** @param {import("./lib.mjs").Target} target @param {string} lane */
function inLane(target, lane) {
  return {
    ...target,
    requests: (target.requests ?? []).map((r) => ({
      ...r,
      setupRequest: (/** @type {import("autocannon").Request} */ req) => {
        const next = typeof r.setupRequest === "function" ? r.setupRequest(req, {}) : req;
        return { ...next, headers: { ...next.headers, ...(lane === "app" ? {} : { "x-bench-lane": lane }) } };
      },
    })),
  };
}

async function main() {
  // keyway's own configuration with the lanes' entry as its `main`, beside it (its paths are relative).
  const config = "wrangler.bench-lanes.toml";
  const toml = await readFile(join(ROOT, "wrangler.toml"), "utf8");
  const main = /^main = "src\/index.ts"$/m;
  if (!main.test(toml)) throw new Error("wrangler.toml's main is not src/index.ts");
  await writeFile(join(ROOT, config), toml.replace(main, 'main = "bench/lanes/worker.ts"'));
  cleanups.push(() => rm(join(ROOT, config), { force: true }));
  // BENCH_PROFILE=app,direct (sequential mode): profile those lanes instead of timing rounds.
  const profiling = SEQUENTIAL ? (process.env.BENCH_PROFILE?.split(",").filter(Boolean) ?? []) : [];
  const inspectorPort = profiling.length > 0 ? await freePort() : 0;
  const kw = await startKeyway(profiling.length > 0 ? ["--inspector-port", String(inspectorPort), "--minify", "false"] : [], { config });
  // Profiled through workerd's own inspector, the lanes' isolate by name: wrangler's inspector
  // proxy handed an idle target on 4 December (bench/profile.mjs, PROFILE_WORKERD).
  const pid = kw.server.worker?.[0];
  const inspector =
    profiling.length > 0 && pid !== undefined
      ? { port: await workerdInspector(pid, "core:user:keyway"), target: "core:user:keyway" }
      : { port: inspectorPort };
  const seeded = await seed(kw.base);
  const me = scenarios(kw.base, seeded).me;
  if (!me) throw new Error("no `me` scenario");
  // The lanes are this entry's: a floor request answers its two bytes, not keyway's envelope.
  const probe = me.requests?.[0];
  const headers =
    typeof probe?.setupRequest === "function" ? probe.setupRequest({ method: "GET", path: "/v1/me", headers: {} }, {}).headers : {};
  const plain = Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, String(v)]));
  const answer = await fetch(`${kw.base}/v1/me`, { headers: { ...plain, "x-bench-lane": "floor" } });
  if ((await answer.text()) !== "ok") throw new Error(`bench/lanes/worker.ts is not the entry (status ${answer.status})`);
  // The direct and framework lanes answer what keyway's route answers (the same fields, the same
  // headers), or their steps would measure less work than the route does.
  const shape = (/** @type {unknown} */ v) => JSON.stringify(v, (_k, x) => (x !== null && typeof x === "object" ? x : typeof x));
  /** @param {string | undefined} lane */
  const answerOf = async (lane) => {
    const r = await fetch(`${kw.base}/v1/me`, { headers: { ...plain, ...(lane ? { "x-bench-lane": lane } : {}) } });
    const names = [...r.headers.keys()].filter((n) => !["content-length", "date", "connection", "keep-alive"].includes(n)).sort();
    return { status: r.status, body: shape(await r.json()), headers: names.join(",") };
  };
  const app = await answerOf(undefined);
  for (const lane of ["direct", "framework"]) {
    const got = await answerOf(lane);
    if (JSON.stringify(got) !== JSON.stringify(app)) {
      throw new Error(`the ${lane} lane's answer differs from the route's: ${JSON.stringify(got)} vs ${JSON.stringify(app)}`);
    }
  }
  if (SEQUENTIAL) return sequential(kw, await moreKeys(kw.base, seeded), seeded.tokenBody, { profiling, inspector });
  for (const lane of LANES) await load(inLane(me, lane), kw.server, 1);
  /** @type {Record<string, { rps: number, worker: number, all: number }[]>} */
  const runs = Object.fromEntries(LANES.map((l) => [l, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const lane of r % 2 === 0 ? LANES : [...LANES].reverse()) {
      const m = await load(inLane(me, lane), kw.server);
      if (m.bad > 0) throw new Error(`lane ${lane}: ${m.bad} requests failed`);
      runs[lane]?.push({ rps: m.rps, worker: m.workerCpuMsPerReq, all: m.cpuMsPerReq });
    }
  }
  const summary = summarize(runs, {
    measures: [
      ["rps", "rps", 0],
      ["worker_cpu_ms", "worker", 3],
    ],
    ofFloor: (x, floor) => x.rps / floor.rps,
    diff: "worker",
  });
  const lanes = summary.lanes;
  const steps = summary.steps.map(({ diff, ...step }) => ({ ...step, worker_cpu_ms: diff }));
  const result = { date: new Date().toISOString(), rounds: ROUNDS, lanes, steps, per_round: runs };
  await writeFile(join(ROOT, "bench/results-lanes.json"), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`GET /v1/me in lanes, ${ROUNDS} interleaved rounds in one process:`);
  printLanes(lanes, (x) => `${x.rps?.median} req/s`);
  for (const s of steps) {
    console.log(`  ${s.from} -> ${s.to}: +${s.worker_cpu_ms.median} ms (IQR ${s.worker_cpu_ms.q1} to ${s.worker_cpu_ms.q3}): ${s.what}`);
  }
  const total = round((lanes.app?.worker_cpu_ms?.median ?? 0) - (lanes.floor?.worker_cpu_ms?.median ?? 0), 3);
  console.log(`  app beyond the floor lane: ${total} ms of Worker CPU per request`);
}

/** @typedef {ReturnType<typeof spread>} Spread */

/**
 * Both modes' figures from their rounds: per lane, the spread of each measure (`measures`: the
 * output's name and the round's field, with its decimals) and of the lane's ratio to the floor lane
 * within each round (`ofFloor`); per step between lanes, the spread of the difference of one field
 * within each round (`diff`).
 * @template {Record<string, number>} R
 * @param {Record<string, R[]>} runs
 * @param {{ measures: [string, keyof R, number][], ofFloor: (x: R, floor: R) => number, diff: keyof R }} how
 * @returns {{ lanes: Record<string, Record<string, Spread>>, steps: { from: string, to: string, what: string, diff: Spread }[] }}
 */
function summarize(runs, how) {
  const at = (/** @type {string} */ lane) => runs[lane] ?? [];
  const floor = at("floor");
  const lanes = Object.fromEntries(
    LANES.map((l) => {
      /** @type {Record<string, Spread>} */
      const figures = {};
      for (const [name, field, decimals] of how.measures) {
        figures[name] = spread(
          at(l).map((x) => Number(x[field])),
          decimals,
        );
      }
      figures.of_floor = spread(at(l).map((x, i) => (floor[i] === undefined ? Number.NaN : how.ofFloor(x, floor[i]))));
      return [l, figures];
    }),
  );
  // Between each lane of depth measured and the next one measured, what the lanes in between add up to.
  const depths = LANES.filter((l) => DEPTHS.includes(l));
  const steps = depths
    .slice(1)
    .map((to, i) => [depths[i] ?? "", to])
    .map(([from = "", to = ""]) => ({
      from,
      to,
      what: STEPS.slice(DEPTHS.indexOf(from), DEPTHS.indexOf(to))
        .map(([, , what]) => what)
        .join("; "),
      diff: spread(
        at(to).map((x, i) => Number(x[how.diff]) - Number(at(from)[i]?.[how.diff] ?? Number.NaN)),
        3,
      ),
    }));
  return { lanes, steps };
}

/**
 * The seeded keys and four more of the same organization: one after the other, the lanes run at
 * 2,000 to 3,000 requests a second, and each key's object admits at most 1,000.
 * @param {string} base @param {Awaited<ReturnType<typeof seed>>} s
 */
async function moreKeys(base, s) {
  const pairs = [...s.pairs];
  for (let i = 0; i < 4; i++) {
    const k = await api("POST", `${base}/admin/v1/organizations/${s.orgId}/api-keys`, s.adminHeaders, {
      limits: { per_second: 1000, per_day: 100_000_000 },
    });
    const apiKey = need(k.api_key, "api_key");
    const token = need(
      (await api("POST", `${base}/v1/oauth`, { "x-api-key": apiKey }, JSON.parse(s.tokenBody))).access_token,
      "access_token",
    );
    pairs.push({ apiKey, token });
  }
  return pairs;
}

/**
 * The lanes one request after the other inside the Worker (`BENCH_MODE=sequential`): each round
 * runs every lane for PER_ROUND requests, the order reversed every other round; each lane's ratio
 * is the floor lane's time per request over its own, within the round.
 * @param {Awaited<ReturnType<typeof startKeyway>>} kw @param {{ apiKey: string, token: string }[]} pairs
 * @param {string} tokenBody the token lane's request body (the seeded client's credentials)
 * @param {{ profiling: string[], inspector: { port: number, target?: string } }} profile the lanes to profile instead (BENCH_PROFILE), and the inspector to sample them through
 */
async function sequential(kw, pairs, tokenBody, { profiling, inspector }) {
  /** @param {string} lane @param {number} n */
  const run = async (lane, n) => {
    const cpu0 = kw.server.worker ? cpuMs(kw.server.worker) : Number.NaN;
    const res = await fetch(`${kw.base}/__bench/sequential`, { method: "POST", body: JSON.stringify({ lane, n, pairs, tokenBody }) });
    if (!res.ok) throw new Error(`lane ${lane}: the sequential run answered ${res.status}`);
    const out = /** @type {{ ms: number, failed: number[] }} */ (await res.json());
    if (out.failed.length > 0)
      throw new Error(`lane ${lane}: ${out.failed.length} requests failed (${[...new Set(out.failed)].join(", ")})`);
    const cpu = kw.server.worker ? cpuMs(kw.server.worker) - cpu0 : Number.NaN;
    return { ms: out.ms / n, worker: cpu / n };
  };
  for (const lane of LANES) await run(lane, PER_ROUND / 4);
  if (profiling.length > 0) return profileLanes(profiling, inspector, run);
  /** @type {Record<string, { ms: number, worker: number }[]>} */
  const runs = Object.fromEntries(LANES.map((l) => [l, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const lane of r % 2 === 0 ? LANES : [...LANES].reverse()) runs[lane]?.push(await run(lane, PER_ROUND));
  }
  const summary = summarize(runs, {
    measures: [
      ["ms_per_request", "ms", 3],
      ["worker_cpu_ms", "worker", 3],
    ],
    ofFloor: (x, floor) => floor.ms / x.ms,
    diff: "ms",
  });
  const lanes = summary.lanes;
  const steps = summary.steps.map(({ diff, ...step }) => ({ ...step, ms: diff }));
  const floor = runs.floor ?? [];
  // keyway's whole handling of a request, `GET /v1/me` (app) and token issuance, beyond the floor lane.
  const beyondFloor = (/** @type {string} */ lane) =>
    spread(
      (runs[lane] ?? []).map((x, i) => x.ms - (floor[i]?.ms ?? Number.NaN)),
      3,
    );
  const beyond = beyondFloor("app");
  const result = {
    date: new Date().toISOString(),
    mode: "sequential",
    rounds: ROUNDS,
    requests_per_round: PER_ROUND,
    lanes,
    steps,
    app_beyond_floor_ms: beyond,
    ...(LANES.includes("token") ? { token_beyond_floor_ms: beyondFloor("token") } : {}),
    per_round: runs,
  };
  await writeFile(join(ROOT, "bench/results-lanes-sequential.json"), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`GET /v1/me in lanes, one request after the other inside the Worker, ${ROUNDS} rounds of ${PER_ROUND}:`);
  printLanes(lanes, (x) => `${x.ms_per_request?.median} ms/request`);
  for (const s of steps) console.log(`  ${s.from} -> ${s.to}: +${s.ms.median} ms (IQR ${s.ms.q1} to ${s.ms.q3}): ${s.what}`);
  for (const lane of ["app", "token"].filter((l) => LANES.includes(l))) {
    const b = beyondFloor(lane);
    console.log(`  ${lane} beyond the floor lane: ${b.median} ms per request (IQR ${b.q1} to ${b.q3})`);
  }
}

/**
 * One line per lane: its own figure (`figure`), its ratio to the floor lane and its Worker CPU.
 * @param {Record<string, Record<string, Spread>>} lanes @param {(x: Record<string, Spread>) => string} figure
 */
function printLanes(lanes, figure) {
  for (const l of LANES) {
    const x = lanes[l];
    if (!x) continue;
    const ratio = x.of_floor;
    console.log(
      `  ${l.padEnd(9)} ${figure(x)}, ${ratio?.median} of the floor lane (IQR ${ratio?.q1}-${ratio?.q3}); Worker CPU ${x.worker_cpu_ms?.median} ms/request`,
    );
  }
}

/**
 * `BENCH_PROFILE=app,direct`: each named lane's requests (five rounds' worth, one after the other
 * inside the Worker, as the rounds run them) under the V8 sampler; prints each function's self and
 * inclusive time in microseconds per request and writes bench/profile-lane-<lane>.cpuprofile with
 * its bundle. The sampler slows the isolate (by about a third here), so these say where a lane's
 * time goes, not how much it is: the rounds are not run.
 * @param {string[]} lanes @param {{ port: number, target?: string }} inspector
 * @param {(lane: string, n: number) => Promise<{ ms: number }>} run
 */
async function profileLanes(lanes, inspector, run) {
  const n = PER_ROUND * 5;
  for (const lane of lanes) {
    if (!ALL_LANES.includes(lane)) throw new Error(`BENCH_PROFILE: no lane ${lane}; one of ${ALL_LANES.join(", ")}`);
    const file = join(ROOT, `bench/profile-lane-${lane}.cpuprofile`);
    const where = {
      inspectorPort: inspector.port,
      ...(inspector.target ? { target: inspector.target } : {}),
      intervalUs: Number(process.env.PROFILE_INTERVAL_US ?? 100),
      file,
      bundle: "worker.js",
    };
    const { weighed, result } = await profiled(where, () => run(lane, n));
    const { self, total } = weighed;
    const perRequest = (/** @type {number} */ us) => `${(us / n).toFixed(2)} µs`;
    console.log(`\nlane ${lane}: ${n} requests, ${round(result.ms, 3)} ms each under the sampler; ${file}`);
    console.log(`Self time per request:\n${top(self, 40, perRequest).join("\n")}`);
    console.log(`Inclusive time per request:\n${top(total, 50, perRequest).join("\n")}`);
  }
}

runMain(main);
