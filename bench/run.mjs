/**
 * `npm run bench`: measures keyway on this machine, everything side by side in one run, and
 * writes bench/results.json and bench/results.md. Throughput is reported as ratios of two floors
 * measured in the same run, because absolute numbers on a shared machine mean little: the
 * runtime's (GET /healthz of the same Worker in the same local workerd) and the design's (a
 * Worker whose every request makes one Durable Object RPC writing one row, bench/floor: what
 * every /v1 request must cost). Runs go round-robin after a warm-up and each comparison is made
 * within a round; the medians are reported. CPU per request comes from the server processes' CPU
 * time (/proc) over each run. The peer is node-oidc-provider's client-credentials endpoint.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
/** @typedef {import("./lib.mjs").Target} Target */
import { buildApi } from "../scripts/build/api.mjs";
import { wranglerCommand } from "../scripts/wrangler.mjs";
import { filterCost, filterLine } from "./filters.mjs";
import {
  alternate,
  CONNECTIONS,
  cpuJiffies,
  DURATION_S,
  ENV,
  QUICK,
  ROOT,
  ROUNDS,
  rotate,
  round,
  runMain,
  scenarios,
  seed,
  startFloorWorker,
  startKeyway,
  startPeer,
  verdict,
  WARMUP_S,
} from "./lib.mjs";
import { firstDelivery, isolation, receiverAuthCost, throughput, tokens } from "./webhooks.mjs";

/** One Worker's bundle as wrangler uploads it. @param {string} config its wrangler configuration */
/**
 * A Worker's size as `wrangler deploy --dry-run` prints it; `script` (with its arguments) names a
 * bundle built already, as the API Worker's is (scripts/build/api.mjs, what the deploy uploads).
 * @param {string} config
 * @param {string[]} [script]
 */
async function bundleSize(config, script = []) {
  const out = await mkdtemp(join(tmpdir(), "keyway-bundle-"));
  const text = await new Promise((resolve) => {
    const p = spawn(...wranglerCommand(["deploy", ...script, "--env=", "--config", config, "--dry-run", "--outdir", out]), {
      cwd: ROOT,
      env: ENV,
    });
    let buf = "";
    p.stdout.on("data", (c) => (buf += c));
    p.stderr.on("data", (c) => (buf += c));
    p.on("close", () => resolve(buf));
  });
  await rm(out, { recursive: true, force: true });
  const m = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(String(text));
  return { total_kib: Number(m?.[1]), gzip_kib: Number(m?.[2]) };
}

async function main() {
  const t0 = performance.now();
  const jiffies0 = cpuJiffies();
  const machine = { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, node: process.version, date: new Date().toISOString() };
  console.log(`keyway bench on ${machine.cpu} x${machine.cores}, ${machine.node}${QUICK ? " (quick)" : ""}`);

  // BENCH_ONLY=token,protected_read runs just those HTTP scenarios (BENCH_ONLY=webhooks just the
  // webhook ones), for trying a change quickly; such a partial run prints its numbers but does not
  // overwrite the results files.
  const only = process.env.BENCH_ONLY?.split(",").filter(Boolean);
  // The API Worker's bundle (every request runs it) and, beside it, its companions'.
  const none = { total_kib: 0, gzip_kib: 0 };
  const size = only
    ? { ...none, people: none, graphql: none }
    : {
        ...(await bundleSize("wrangler.toml", [
          (await buildApi(await mkdtemp(join(tmpdir(), "keyway-api-")))).main,
          "--no-bundle",
          "--no-minify",
        ])),
        people: await bundleSize("wrangler.people.toml"),
        graphql: await bundleSize("wrangler.graphql.toml"),
      };
  const kw = await startKeyway();
  if (only?.includes("webhooks")) {
    console.log(JSON.stringify(await webhookScenarios(kw.base, kw.server), null, 2));
    return;
  }
  if (only?.includes("receiver_auth")) {
    console.log(JSON.stringify(await receiverAuthCost(kw.base, kw.server), null, 2));
    return;
  }
  const floorWorker = await startFloorWorker();
  const s = await seed(kw.base);
  const { floor, ...targets } = scenarios(kw.base, s);

  // ROUNDS interleaved rounds (bench/lib.mjs, rotate): in each, the runtime's floor beside the
  // design floor, and every scenario beside its design-floor twin (the floor Worker sent the very
  // same request: method, headers, body, so what the client sends costs both sides alike), the
  // pairs in a new random order each round and each pair's two sides in alternating order. Each
  // scenario is compared with its twin within the round, and the comparisons kept per round.
  const names = /** @type {(keyof typeof targets)[]} */ (Object.keys(targets)).filter((n) => !only || only.includes(n));
  const twin = (/** @type {import("./lib.mjs").Target} */ t) => ({ ...t, url: `${floorWorker.base}${new URL(t.url).pathname}` });
  // Issue 33: the scenarios with a target also beside their answer floor, the design floor
  // answering a copy of keyway's own answer to the same request (bench/floor/worker.ts).
  const answered = names.filter((n) => n in TARGETS);
  await registerAnswers(
    floorWorker.base,
    Object.fromEntries(await Promise.all(answered.map(async (n) => [n, await answerOf(targets[n])]))),
  );
  const answerTwin = (/** @type {import("./lib.mjs").Target} */ t) => ({
    ...t,
    url: `${floorWorker.base}${ANSWER_PREFIX}${new URL(t.url).pathname}`,
    requests: (t.requests ?? []).map((r) => ({ ...r, path: `${ANSWER_PREFIX}${r.path}` })),
  });
  const groups = [
    [
      { name: "floor", target: floor, server: kw.server },
      { name: "design_floor", target: { url: `${floorWorker.base}/` }, server: floorWorker.server },
    ],
    ...names.map((name) => [
      { name: `design_floor:${name}`, target: twin(targets[name]), server: floorWorker.server },
      { name, target: targets[name], server: kw.server },
      ...(answered.includes(name) ? [{ name: `answer_floor:${name}`, target: answerTwin(targets[name]), server: floorWorker.server }] : []),
    ]),
  ];
  const measured = await rotate(groups);
  const designFloor = { ...measured.summary("design_floor"), of_runtime_floor: measured.pair("floor", "design_floor") };
  console.log(
    `design floor (one Durable Object RPC writing one row, two objects in turn), GET /: ${designFloor.rps} req/s, p99 ${designFloor.p99_ms} ms (${designFloor.of_runtime_floor.throughput_ratio} of the runtime's floor), workerd CPU ${designFloor.cpu_ms_per_req} ms/req (+${designFloor.of_runtime_floor.cpu_ms_per_req_delta} over the runtime's floor)`,
  );

  /** @type {Record<string, any>} */
  const http = {};
  for (const name of names) {
    const vsRuntime = measured.pair("floor", name);
    const vsDesign = measured.pair(`design_floor:${name}`, name);
    const target = /** @type {Record<string, number>} */ (TARGETS)[name];
    http[name] = {
      ...measured.summary(name),
      floor: measured.summary("floor"),
      design_floor: measured.summary(`design_floor:${name}`),
      throughput_ratio: vsRuntime.throughput_ratio,
      worker_cpu_ms_per_req: vsRuntime.cpu_ms_per_req_delta,
      worker_cpu_ms_per_req_in_worker_process: vsRuntime.worker_process_cpu_ms_per_req_delta,
      of_design_floor: vsDesign.throughput_ratio,
      of_design_floor_spread: vsDesign.throughput_spread,
      of_design_floor_per_round: vsDesign.throughput_per_round,
      p99_of_design_floor: vsDesign.p99_ratio,
      p99_of_design_floor_spread: vsDesign.p99_spread,
      p99_of_design_floor_per_round: vsDesign.p99_per_round,
      drift: vsDesign.drift,
      ...(target === undefined
        ? {}
        : {
            target: { of_design_floor: target, p99_of_design_floor: P99_TARGET },
            verdict: {
              throughput: verdict(vsDesign.throughput_spread, target),
              p99: verdict(vsDesign.p99_spread, P99_TARGET, true),
              drift: vsDesign.drift.verdict,
            },
          }),
      cpu_ms_per_req_beyond_design_floor: vsDesign.cpu_ms_per_req_delta,
      cpu_ms_per_req_beyond_design_floor_in_worker_process: vsDesign.worker_process_cpu_ms_per_req_delta,
      ...(answered.includes(name) ? { answer_floor: answerFloor(measured, name) } : {}),
    };
    const h = http[name];
    const sp = h.of_design_floor_spread;
    console.log(
      `${name}: ${h.rps} req/s, ${h.of_design_floor} of the design floor (IQR ${sp.q1}-${sp.q3}, range ${sp.min}-${sp.max}; per round ${h.of_design_floor_per_round.join(" ")}), p99 ${h.p99_ms} ms = ${h.p99_of_design_floor}x the floor's (per round ${h.p99_of_design_floor_per_round.join(" ")}), first round ${h.drift.first} -> last ${h.drift.last}: ${h.drift.verdict}; ${h.throughput_ratio} of the runtime's floor; CPU beyond the design floor ${h.cpu_ms_per_req_beyond_design_floor} ms/req (${h.cpu_ms_per_req_beyond_design_floor_in_worker_process} in its process), beyond the runtime's ${h.worker_cpu_ms_per_req}`,
    );
    console.log(`  verdict: ${verdictLine(h)}`);
    if (h.answer_floor) console.log(`  ${answerLine(h.answer_floor)}`);
  }

  // Issue 21: a DPoP-bound read against the plain one, paired round by round (target >= 0.9).
  const dpop = names.includes("me") && names.includes("me_dpop") ? measured.pair("me", "me_dpop") : null;
  if (dpop) {
    console.log(
      `me_dpop vs me: ${dpop.throughput_ratio} of the plain read's throughput, ${dpop.cpu_ms_per_req_delta} ms CPU/req more (${dpop.worker_process_cpu_ms_per_req_delta} in keyway's process)`,
    );
  }
  // Issue 29: what recording a token request's DPoP proof in the organization's object costs.
  const tokenDpop = names.includes("token") && names.includes("token_dpop") ? measured.pair("token", "token_dpop") : null;
  if (tokenDpop) {
    console.log(
      `token_dpop vs token: ${tokenDpop.throughput_ratio} of the plain token request's throughput, ${tokenDpop.cpu_ms_per_req_delta} ms CPU/req more (${tokenDpop.worker_process_cpu_ms_per_req_delta} in keyway's process)`,
    );
  }
  // Issue 30: what validating a publish's data against its type's schema costs.
  const schema = names.includes("publish") && names.includes("publish_schema") ? measured.pair("publish", "publish_schema") : null;
  if (schema) {
    console.log(
      `publish_schema vs publish: ${schema.throughput_ratio} of the plain publish's throughput, ${schema.cpu_ms_per_req_delta} ms CPU/req more (${schema.worker_process_cpu_ms_per_req_delta} in keyway's process)`,
    );
  }
  // Issue 24: what a shared quota costs (the key's object asks the organization's QuotaObject).
  const quota = names.includes("me") && names.includes("me_quota") ? measured.pair("me", "me_quota") : null;
  if (quota) {
    console.log(
      `me_quota vs me: ${quota.throughput_ratio} of the plain read's throughput, ${quota.cpu_ms_per_req_delta} ms CPU/req more (${quota.worker_process_cpu_ms_per_req_delta} in keyway's process)`,
    );
  }

  const settings = {
    duration_s: DURATION_S,
    warmup_s: WARMUP_S,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    runtime: "wrangler dev (workerd), --log-level error, state on tmpfs when available",
    state_dir: kw.stateDir,
    order: "interleaved rounds: the pairs in a random order each round, each pair's sides alternated",
  };
  if (only) {
    // A partial run leaves the full run's figures alone: its own are written beside them.
    const partial = {
      machine,
      settings,
      scenarios: names,
      design_floor: designFloor,
      http,
      orders: measured.orders,
      reruns_after_restart: measured.reloads,
      duration_s: round((performance.now() - t0) / 1000, 0),
      cpu_stolen_pct: round((100 * (cpuJiffies().steal - jiffies0.steal)) / Math.max(1, cpuJiffies().total - jiffies0.total), 1),
      load_average: loadavg().map((x) => round(x)),
    };
    // The JSON goes into bench/results.json beside the full run's figures, as its `partial_run`.
    const path = join(ROOT, "bench/results.json");
    const full = JSON.parse(await readFile(path, "utf8").catch(() => "{}"));
    await writeFile(path, `${JSON.stringify({ ...full, partial_run: partial }, null, 2)}\n`);
    const md = [header(partial), "", ...httpTable(partial), "", ...verdicts(partial), ""].join("\n");
    await writeFile(join(ROOT, "bench/results-partial.md"), md);
    console.log(`\n${md}`);
    return;
  }

  // Peer: node-oidc-provider's client-credentials endpoint, alternated with our token endpoint.
  const peer = await startPeer();
  const { a: ours, b: theirs } = await alternate(targets.token, kw.server, peer.target, { pids: [peer.pid] });
  // Keyway's own CPU per token is the token scenario's, paired with its floor runs above.
  const peerResult = {
    node_oidc_provider: theirs,
    keyway_token: ours,
    keyway_worker_cpu_ms_per_token: http.token.worker_cpu_ms_per_req,
    keyway_worker_cpu_ms_per_token_in_worker_process: http.token.worker_cpu_ms_per_req_in_worker_process,
    keyway_cpu_ms_per_token_beyond_design_floor: http.token.cpu_ms_per_req_beyond_design_floor,
    cpu_ratio_worker_vs_peer: round(http.token.worker_cpu_ms_per_req / theirs.cpu_ms_per_req),
    cpu_ratio_beyond_design_floor_vs_peer: round(http.token.cpu_ms_per_req_beyond_design_floor / theirs.cpu_ms_per_req),
  };
  console.log(
    `peer node-oidc-provider: ${theirs.rps} req/s, ${theirs.cpu_ms_per_req} ms CPU/token; keyway CPU/token beyond the design floor ${peerResult.keyway_cpu_ms_per_token_beyond_design_floor} ms (beyond the runtime's ${peerResult.keyway_worker_cpu_ms_per_token} ms)`,
  );

  const webhooks = await webhookScenarios(kw.base, kw.server);

  const results = {
    machine,
    settings,
    bundle: size,
    startup_ms: round(kw.startupMs, 0),
    design_floor: designFloor,
    http,
    dpop_vs_plain: dpop,
    quota_vs_plain: quota,
    token_dpop_vs_token: tokenDpop,
    publish_schema_vs_publish: schema,
    peer: peerResult,
    webhooks,
    duration_s: round((performance.now() - t0) / 1000, 0),
    cpu_stolen_pct: round((100 * (cpuJiffies().steal - jiffies0.steal)) / Math.max(1, cpuJiffies().total - jiffies0.total), 1),
    load_average: loadavg().map((x) => round(x)),
    orders: measured.orders,
    reruns_after_restart: measured.reloads,
  };
  await mkdir(join(ROOT, "bench"), { recursive: true });
  await writeFile(join(ROOT, "bench/results.json"), `${JSON.stringify(results, null, 2)}\n`);
  const md = table(results);
  await writeFile(join(ROOT, "bench/results.md"), md);
  console.log(`\n${md}`);
}

/**
 * The webhook scenarios (bench/webhooks.mjs), each printed as it finishes.
 * @param {string} base
 * @param {import("./lib.mjs").Server} server
 */
async function webhookScenarios(base, server) {
  const first = await firstDelivery(base);
  console.log(
    `webhooks, first delivery: ${first.received}/${first.events}, publish answer to receipt p50 ${first.publish_to_receipt_p50_ms} ms, p99 ${first.publish_to_receipt_p99_ms} ms`,
  );
  const iso = await isolation(base);
  console.log(
    `webhooks, isolation: healthy endpoints alone p50 ${iso.alone.p50_ms} ms, p99 ${iso.alone.p99_ms} ms; beside a hanging and a failing endpoint p50 ${iso.beside_hanging_and_failing.p50_ms} ms, p99 ${iso.beside_hanging_and_failing.p99_ms} ms (ratios ${iso.p50_ratio}, ${iso.p99_ratio}; ${iso.p50_delta_ms} ms, ${iso.p99_delta_ms} ms; ${iso.beside_hanging_and_failing.received}/${2 * iso.events_per_endpoint} received)`,
  );
  const rates = [];
  for (const n of [1, 10, 20]) {
    const t = await throughput(base, n);
    console.log(`webhooks, ${n} endpoint(s): ${t.deliveries_received}/${t.deliveries_expected} delivered, ${t.deliveries_per_s}/s`);
    rates.push(t);
  }
  const tok = await tokens(base);
  console.log(`webhooks, token requests per delivery: ${JSON.stringify(tok)}`);
  const auth = await receiverAuthCost(base, server);
  console.log(`webhooks, receiver authentication against the default: ${JSON.stringify(auth)}`);
  const filters = await filterCost(base, server);
  console.log(`webhooks, payload filters: ${filterLine(filters)}`);
  return { first_delivery: first, isolation: iso, throughput: rates, tokens: tok, receiver_auth: auth, filters };
}

const LABELS = {
  token: "POST /v1/oauth",
  token_dpop: "POST /v1/oauth with a DPoP proof (a new proof per request; one more object call beside the key's, the ProofObject's)",
  me: "GET /v1/me",
  me_dpop: "GET /v1/me, DPoP-bound (a new proof per request; one more object call beside the key's, the ProofObject's)",
  me_quota: "GET /v1/me, organization with a shared quota (one more object call, inside the key's)",
  graphql_viewer: "POST /v1/graphql { viewer }",
  webhook_list: "GET /v1/webhook-configurations (two objects)",
  publish: "POST /v1/events (an order; no configuration subscribes: the event is recorded)",
  publish_schema: "POST /v1/events, the order's type with a JSON Schema (its data validated in the organization's object)",
};
/** Targets as ratios of the design's floor: issue 33's for token and me (issue 15's for GraphQL). */
const TARGETS = { token: 0.95, me: 0.95, graphql_viewer: 0.85 };
/** The p99 of a scenario with a target, at most this many times its design-floor twin's (issue 33). */
const P99_TARGET = 1.25;

/** Where the answer floor answers a copy of keyway's answer (bench/floor/worker.ts). */
const ANSWER_PREFIX = "/__answer";

/**
 * keyway's answer to one request of `target` (its first request's method, path, headers, body):
 * the status, the header fields but those the runtime sets per response, and the body.
 * @param {import("./lib.mjs").Target} target
 */
async function answerOf(target) {
  target.prepare?.();
  const first = target.requests?.[0];
  const base = {
    method: first?.method ?? target.method ?? "GET",
    path: first?.path ?? new URL(target.url).pathname,
    headers: { ...target.headers },
  };
  const req = typeof first?.setupRequest === "function" ? first.setupRequest(base, {}) : base;
  const url = new URL(req.path ?? base.path, target.url);
  const body = first?.body ?? target.body;
  const res = await fetch(url, {
    method: req.method ?? base.method,
    // As autocannon sends it: without Accept-Encoding (fetch's own would have the answer gzipped,
    // and a copy declaring gzip is compressed by the runtime on every request).
    headers: { .../** @type {Record<string, string>} */ (req.headers), "accept-encoding": "identity" },
    ...(body !== undefined ? { body: String(body) } : {}),
  });
  if (!res.ok) throw new Error(`${url.pathname}: keyway answered ${res.status} to the request the answer floor copies`);
  if (res.headers.has("content-encoding"))
    throw new Error(`${url.pathname}: the answer to copy is encoded (${res.headers.get("content-encoding")})`);
  const dropped = new Set(["date", "content-length", "transfer-encoding", "connection", "keep-alive"]);
  return {
    key: `${req.method ?? base.method} ${url.pathname}`,
    status: res.status,
    headers: [...res.headers].filter(([k]) => !dropped.has(k)),
    body: await res.text(),
  };
}

/** Gives the floor Worker the answers to copy, by method and path. @param {string} floorBase @param {Record<string, { key: string, status: number, headers: [string, string][], body: string }>} byScenario */
async function registerAnswers(floorBase, byScenario) {
  /** @type {Record<string, { status: number, headers: [string, string][], body: string }>} */
  const answers = {};
  for (const [name, { key, ...answer }] of Object.entries(byScenario)) {
    // One answer per method and path: two answered scenarios on one path would need their own.
    if (key in answers)
      throw new Error(`${name}: another answered scenario is also ${key}; the answer floor keeps one answer per method and path`);
    answers[key] = answer;
  }
  const res = await fetch(`${floorBase}/__bench/answers`, { method: "PUT", body: JSON.stringify(answers) });
  if (res.status !== 204) throw new Error(`the floor Worker did not take the answers (${res.status})`);
}

/**
 * A scenario against its answer floor, and the answer floor against the design floor: how much of
 * the gap is carrying the answer (which the design floor's two bytes leave out) and how much is
 * keyway's handling.
 * @param {Awaited<ReturnType<typeof rotate>>} measured @param {string} name
 */
function answerFloor(measured, name) {
  const copy = measured.summary(`answer_floor:${name}`);
  if (copy.non_2xx > 0)
    throw new Error(
      `the answer floor of ${name} answered ${copy.non_2xx} requests with an error (a restarted floor Worker has no answers)`,
    );
  const vsAnswer = measured.pair(`answer_floor:${name}`, name);
  const answerVsDesign = measured.pair(`design_floor:${name}`, `answer_floor:${name}`);
  return {
    rps: copy.rps,
    of_answer_floor: vsAnswer.throughput_ratio,
    of_answer_floor_spread: vsAnswer.throughput_spread,
    of_answer_floor_per_round: vsAnswer.throughput_per_round,
    p99_of_answer_floor: vsAnswer.p99_ratio,
    p99_of_answer_floor_spread: vsAnswer.p99_spread,
    answer_floor_of_design_floor: answerVsDesign.throughput_ratio,
    answer_floor_of_design_floor_spread: answerVsDesign.throughput_spread,
    answer_floor_p99_of_design_floor: answerVsDesign.p99_ratio,
    cpu_ms_per_req_beyond_answer_floor: vsAnswer.cpu_ms_per_req_delta,
    cpu_ms_per_req_beyond_answer_floor_in_worker_process: vsAnswer.worker_process_cpu_ms_per_req_delta,
  };
}

/** @param {Record<string, any>} a a scenario's `answer_floor` */
function answerLine(a) {
  const sp = a.of_answer_floor_spread;
  const ad = a.answer_floor_of_design_floor_spread;
  return `answer floor (the design floor answering a copy of keyway's answer): itself ${a.answer_floor_of_design_floor} of the design floor (IQR ${ad.q1}-${ad.q3}), p99 ${a.answer_floor_p99_of_design_floor}x; the scenario ${a.of_answer_floor} of it (IQR ${sp.q1}-${sp.q3}), p99 ${a.p99_of_answer_floor}x, CPU beyond it ${a.cpu_ms_per_req_beyond_answer_floor} ms/req (${a.cpu_ms_per_req_beyond_answer_floor_in_worker_process} in keyway's process)`;
}

/** One scenario's verdicts in words. @param {Record<string, any>} h */
function verdictLine(h) {
  if (!h.verdict) return `no target; drift ${h.drift.verdict}`;
  const sp = h.of_design_floor_spread;
  const p = h.p99_of_design_floor_spread;
  return [
    `throughput ${h.verdict.throughput} (${h.of_design_floor} of the design floor against >= ${h.target.of_design_floor}, IQR ${sp.iqr})`,
    `p99 ${h.verdict.p99} (${h.p99_of_design_floor}x against <= ${h.target.p99_of_design_floor}x, IQR ${p.iqr})`,
    `drift ${h.verdict.drift} (${h.drift.first} -> ${h.drift.last}, ${h.drift.change >= 0 ? "+" : ""}${h.drift.change} against IQR ${sp.iqr})`,
  ].join("; ");
}

/** @param {Record<string, any>} r */
function header(r) {
  return `Measured ${r.machine.date.slice(0, 10)} on ${r.machine.cpu} (${r.machine.cores} cores), Node ${r.machine.node}; ${r.settings.connections} connections, ${r.settings.duration_s} s runs, ${r.settings.rounds} interleaved rounds after a warm-up (the pairs in a random order each round, each pair's two sides alternated); req/s, latency and CPU are medians over rounds, ratios and differences medians of each round's own comparison, with their spread (IQR and range) and every round's figure; local state on ${r.settings.state_dir}. Load average at the end ${r.load_average.join(", ")}; the hypervisor stole ${r.cpu_stolen_pct}% of the CPU time.`;
}

/** The HTTP scenarios' table. @param {Record<string, any>} r */
function httpTable(r) {
  const f = r.design_floor.of_runtime_floor;
  const d = r.design_floor;
  const rf = /** @type {Record<string, any>} */ (Object.values(r.http)[0]).floor;
  return [
    "| Scenario | req/s | of the design floor: median (IQR; range) | per round | p99 ms | p99 of the floor's: median (IQR) | first -> last round | verdict | of the runtime's floor | workerd CPU ms/req | CPU beyond the design floor (in keyway's process) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    `| runtime's floor: GET /healthz | ${rf.rps} | - | - | ${rf.p99_ms} | - | - | - | 1.00 | ${rf.cpu_ms_per_req} | - |`,
    `| design's floor: one Durable Object RPC writing one row, two objects in turn (GET /) | ${d.rps} | 1.00 | ${d.per_round.map((/** @type {{ rps: number }} */ x) => x.rps).join(" ")} req/s | ${d.p99_ms} | 1.00 | - | - | ${f.throughput_ratio} | ${d.cpu_ms_per_req} | - |`,
    ...Object.entries(/** @type {Record<string, any>} */ (r.http)).map(([name, v]) => {
      const sp = v.of_design_floor_spread;
      const p = v.p99_of_design_floor_spread;
      const said = v.verdict
        ? `${v.verdict.throughput} (>= ${v.target.of_design_floor}); p99 ${v.verdict.p99} (<= ${v.target.p99_of_design_floor}x); drift ${v.verdict.drift}`
        : `drift ${v.drift.verdict}`;
      return `| ${/** @type {Record<string, string>} */ (LABELS)[name]} | ${v.rps} | ${v.of_design_floor} (${sp.q1}-${sp.q3}; ${sp.min}-${sp.max}) | ${v.of_design_floor_per_round.join(" ")} | ${v.p99_ms} | ${v.p99_of_design_floor} (${p.q1}-${p.q3}) | ${v.drift.first} -> ${v.drift.last} | ${said} | ${v.throughput_ratio} | ${v.cpu_ms_per_req} | ${v.cpu_ms_per_req_beyond_design_floor} (${v.cpu_ms_per_req_beyond_design_floor_in_worker_process}) |`;
    }),
  ];
}

/** How to read the verdicts, and each scenario's. @param {Record<string, any>} r */
function verdicts(r) {
  return [
    `The design floor's absolute figure of the day: ${r.design_floor.rps} req/s, p99 ${r.design_floor.p99_ms} ms (per round: ${r.design_floor.per_round.map((/** @type {{ rps: number, p99_ms: number }} */ x) => `${x.rps} req/s / ${x.p99_ms} ms`).join(", ")}).`,
    "",
    "Verdicts: a ratio meets its target when its median does; it is a regression only when the median misses the target by more than the ratio's IQR over the rounds (else: missed, within the spread, which this machine cannot tell from the target). Drift: the last round's ratio against the first's, flagged (falls / rises) only when the change exceeds the IQR.",
    "",
    ...Object.entries(/** @type {Record<string, any>} */ (r.http)).map(([name, v]) => `- ${name}: ${verdictLine(v)}`),
    "",
    "The answer floor: the design floor answering a static copy of keyway's own answer to the same request (status, header fields, body). The design floor's two bytes leave out what carrying an answer costs here (wrangler's dev proxy and the load generator parse every field and byte); against the answer floor, only keyway's handling is left. Verdicts stay on the design floor.",
    "",
    ...Object.entries(/** @type {Record<string, any>} */ (r.http))
      .filter(([, v]) => v.answer_floor)
      .map(([name, v]) => `- ${name}: ${answerLine(v.answer_floor)}`),
  ];
}

/** @param {Record<string, any>} r */
function table(r) {
  const rows = [
    ...httpTable(r),
    `| peer: node-oidc-provider POST /token | ${r.peer.node_oidc_provider.rps} | - | - | ${r.peer.node_oidc_provider.p99_ms} | - | - | - | - | ${r.peer.node_oidc_provider.cpu_ms_per_req} (whole process) | - |`,
  ];
  const w = r.webhooks;
  const tok = (/** @type {string} */ k) => w.tokens[k];
  const hooks = [
    "| Webhooks | Figure |",
    "|---|---|",
    `| first delivery (one healthy endpoint, one event at a time): publish answer to receipt | p50 ${w.first_delivery.publish_to_receipt_p50_ms} ms, p99 ${w.first_delivery.publish_to_receipt_p99_ms} ms (${w.first_delivery.received}/${w.first_delivery.events}) |`,
    `| isolation: two organizations' healthy endpoints alone | p50 ${w.isolation.alone.p50_ms} ms, p99 ${w.isolation.alone.p99_ms} ms |`,
    `| ... beside an endpoint answering 503 after 8 s and one failing at once | p50 ${w.isolation.beside_hanging_and_failing.p50_ms} ms, p99 ${w.isolation.beside_hanging_and_failing.p99_ms} ms (${w.isolation.beside_hanging_and_failing.received}/${2 * w.isolation.events_per_endpoint}) |`,
    `| isolation (beside / alone; beside - alone) | p50 ${w.isolation.p50_ratio}x (${w.isolation.p50_delta_ms >= 0 ? "+" : ""}${w.isolation.p50_delta_ms} ms), p99 ${w.isolation.p99_ratio}x (${w.isolation.p99_delta_ms >= 0 ? "+" : ""}${w.isolation.p99_delta_ms} ms) |`,
    ...w.throughput.map(
      (/** @type {Record<string, any>} */ t) =>
        `| deliveries/s, ${t.endpoints} endpoint${t.endpoints === 1 ? "" : "s"} | ${t.deliveries_per_s} (${t.deliveries_received}/${t.deliveries_expected}) |`,
    ),
    `| token requests per delivery, without token_cache | ${tok("without_token_cache").token_requests_per_delivery} (${tok("without_token_cache").token_requests} for ${tok("without_token_cache").received}) |`,
    `| token requests per delivery, with token_cache | ${tok("with_token_cache").token_requests_per_delivery} (${tok("with_token_cache").token_requests} for ${tok("with_token_cache").received}) |`,
    ...(w.filters
      ? [
          `| publish to ${w.filters.configurations} configurations each with a payload filter / without (paired, target >= 0.9) | ${w.filters.paired.throughput_ratio} (${w.filters.with_filters.rps}/s vs ${w.filters.without_filters.rps}/s; a second set: median ${w.filters.ratio.median}, quartiles ${w.filters.ratio.q1}-${w.filters.ratio.q3}, range ${w.filters.ratio.min}-${w.filters.ratio.max}) |`,
        ]
      : []),
  ];
  const beyond = r.peer.keyway_cpu_ms_per_token_beyond_design_floor;
  const peer = r.peer.node_oidc_provider.cpu_ms_per_req;
  return [
    header(r),
    "",
    ...rows,
    "",
    ...verdicts(r),
    "",
    `Keyway's CPU per token beyond the design floor: ${beyond} ms vs node-oidc-provider's whole ${peer} ms (${beyond < peer ? "below it: met" : "above it: missed"}); beyond the runtime's floor ${r.peer.keyway_worker_cpu_ms_per_token} ms, ${r.peer.keyway_worker_cpu_ms_per_token_in_worker_process} ms of that in keyway's own workerd process (the rest in wrangler's dev proxy).`,
    "",
    `DPoP-bound GET /v1/me: ${r.dpop_vs_plain.throughput_ratio} of the plain read's throughput (target >= 0.9: ${r.dpop_vs_plain.throughput_ratio >= 0.9 ? "met" : "missed"}), ${r.dpop_vs_plain.cpu_ms_per_req_delta} ms more workerd CPU per request (${r.dpop_vs_plain.worker_process_cpu_ms_per_req_delta} in keyway's process): the proof's ES256 check and its id's row in the ProofObject the id names, a call beside the key's and in parallel with it (test/hot-path-budget.test.ts counts them). The load generator signs each proof too.`,
    r.token_dpop_vs_token
      ? `POST /v1/oauth with a DPoP proof: ${r.token_dpop_vs_token.throughput_ratio} of the plain token request's throughput, ${r.token_dpop_vs_token.cpu_ms_per_req_delta} ms more workerd CPU per request (${r.token_dpop_vs_token.worker_process_cpu_ms_per_req_delta} in keyway's process): the proof's check and a second Durable Object call beside the key's, in parallel with it: the ProofObject the proof's id names records it, so that it is refused with any other API key, shard or endpoint (RFC 9449 11.1; issue 41). No object of the organization is on every DPoP token request.`
      : "",
    r.publish_schema_vs_publish
      ? `POST /v1/events of a type with a JSON Schema: ${r.publish_schema_vs_publish.throughput_ratio} of a plain publish's throughput, ${r.publish_schema_vs_publish.cpu_ms_per_req_delta} ms more workerd CPU per request (${r.publish_schema_vs_publish.worker_process_cpu_ms_per_req_delta} in keyway's process): the organization's WebhookObject parses the event's body and validates its data (lib/json-schema.ts) within the publish's one call; a type without a schema reads one row more than before.`
      : "",
    r.quota_vs_plain
      ? `GET /v1/me by a key of an organization with a shared quota: ${r.quota_vs_plain.throughput_ratio} of the plain read's throughput, ${r.quota_vs_plain.cpu_ms_per_req_delta} ms more workerd CPU per request (${r.quota_vs_plain.worker_process_cpu_ms_per_req_delta} in keyway's process): the key's object asks the organization's QuotaObject within the request's one call from the Worker. A key without a quota makes no such call (the plain read above).`
      : "",
    "",
    ...hooks,
    "",
    `Bundle: ${r.bundle.gzip_kib} KiB gzipped (${r.bundle.total_kib} KiB raw); the people's Worker's: ${r.bundle.people.gzip_kib} KiB, the GraphQL Worker's: ${r.bundle.graphql.gzip_kib} KiB gzipped. Local startup (spawn to first /healthz): ${r.startup_ms} ms. Whole bench: ${r.duration_s} s, during which the hypervisor stole ${r.cpu_stolen_pct}% of the CPU time.`,
    "",
  ].join("\n");
}

runMain(main);
