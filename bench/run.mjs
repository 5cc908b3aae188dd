/**
 * `npm run bench`: measures keyway on this machine, everything side by side in one run, and
 * writes bench/results.json and bench/results.md. Throughput is reported as a ratio of the
 * floor (GET /healthz of the same Worker in the same local workerd), measured in the same run,
 * because absolute numbers on a shared machine mean little. Runs alternate A B A B after a
 * warm-up and the medians are reported. CPU per request comes from the server processes' CPU
 * time (/proc) over each run. The peer is node-oidc-provider's client-credentials endpoint.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { ensureDevVars, readDevVars } from "../scripts/dev-vars.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const QUICK = process.env.BENCH_QUICK === "1";
const DURATION_S = QUICK ? 2 : 5;
const WARMUP_S = QUICK ? 1 : 3;
const ROUNDS = 2; // A B A B
const CONNECTIONS = 16;
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_HIDE_BANNER: "true" };
const TICK_MS = 1000 / 100; // /proc CPU times are in clock ticks (USER_HZ = 100 on Linux)

/** @typedef {{ url: string, method?: "GET" | "POST", headers?: Record<string, string>, body?: string }} Target */

/** @type {(() => Promise<void>)[]} */
const cleanups = [];
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
const median = (/** @type {number[]} */ xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
const round = (/** @type {number} */ x, /** @type {number} */ d = 2) => Math.round(x * 10 ** d) / 10 ** d;

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Every descendant pid of `pid` (wrangler starts node, which starts workerd). */
function descendants(/** @type {number} */ pid) {
  /** @type {number[]} */
  const out = [];
  const stack = [pid];
  while (stack.length) {
    const p = /** @type {number} */ (stack.pop());
    let children = "";
    try {
      children = readFileSync(`/proc/${p}/task/${p}/children`, "utf8");
    } catch {
      continue;
    }
    for (const c of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

/** CPU milliseconds (user + system) used so far by the given processes. */
function cpuMs(/** @type {number[]} */ pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // Gone: its time is lost to the measurement, which only reads deltas over a run.
    }
  }
  return ticks * TICK_MS;
}

const commName = (/** @type {number} */ pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
};

async function waitFor(/** @type {string} */ url, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not yet
    }
    await sleep(50);
  }
  throw new Error(`${url} did not come up`);
}

async function startKeyway() {
  await ensureDevVars(ROOT);
  const port = await freePort();
  const persist = await mkdtemp(join(tmpdir(), "keyway-bench-"));
  const started = performance.now();
  const child = spawn(
    join(ROOT, "node_modules/.bin/wrangler"),
    [
      "dev", "--port", String(port), "--ip", "127.0.0.1", "--persist-to", persist,
      "--var", "WEBHOOK_ALLOW_INSECURE_TARGETS:true", "--show-interactive-dev-session=false",
      // Measurement settings: no per-request logs from wrangler.
      "--log-level", "error",
    ],
    { cwd: ROOT, env: ENV, stdio: ["ignore", "ignore", "inherit"], detached: true },
  );
  cleanups.push(async () => {
    const group = -(/** @type {number} */ (child.pid));
    const signal = (/** @type {NodeJS.Signals | 0} */ s) => {
      try {
        process.kill(group, s);
        return true;
      } catch {
        return false; // no process of the group is left
      }
    };
    signal("SIGTERM");
    // Wait for the whole group (wrangler, its node child, workerd) before removing its state.
    for (let i = 0; i < 100 && signal(0); i++) await sleep(100);
    signal("SIGKILL");
    await rm(persist, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`);
  const startupMs = performance.now() - started;
  const all = descendants(/** @type {number} */ (child.pid));
  const workerd = all.filter((p) => commName(p) === "workerd");
  return { base, startupMs, workerd, all: [/** @type {number} */ (child.pid), ...all] };
}

async function api(/** @type {string} */ method, /** @type {string} */ url, /** @type {Record<string,string>} */ headers, /** @type {unknown} */ body) {
  const res = await fetch(url, { method, headers: { "Content-Type": "application/json", ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const json = /** @type {{ data: Record<string, string> }} */ (await res.json());
  if (!res.ok) throw new Error(`${method} ${url} -> ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** A string field the API must have returned. */
function need(/** @type {string | undefined} */ value, /** @type {string} */ name) {
  if (typeof value !== "string") throw new Error(`missing ${name} in an API answer`);
  return value;
}

async function seed(/** @type {string} */ base) {
  const adminToken = need((await readDevVars(ROOT)).ADMIN_TOKEN, "ADMIN_TOKEN in .dev.vars");
  const admin = { Authorization: `Bearer ${adminToken}` };
  const org = await api("POST", `${base}/admin/v1/organizations`, admin, { name: "Bench" });
  const user = await api("POST", `${base}/admin/v1/organizations/${org.id}/users`, admin, { name: "Bench" });
  const cred = await api("POST", `${base}/admin/v1/organizations/${org.id}/users/${user.id}/client-credentials`, admin, {});
  // Limits raised so the bench measures the service, not its rate limiter's refusals.
  const key = await api("POST", `${base}/admin/v1/organizations/${org.id}/api-keys`, admin, { limits: { per_second: 10_000, per_day: 100_000_000 } });
  const tokenBody = JSON.stringify({ client_id: cred.client_id, client_secret: cred.client_secret, grant_type: "client_credentials" });
  const token = (await api("POST", `${base}/v1/oauth`, { "x-api-key": need(key.api_key, "api_key") }, JSON.parse(tokenBody))).access_token;
  return { apiKey: need(key.api_key, "api_key"), token: need(token, "access_token"), tokenBody, orgId: need(org.id, "id"), adminHeaders: admin };
}

/**
 * One autocannon run; `pids` are the server processes whose CPU is charged to it.
 * @param {Target} target
 * @param {number[]} pids
 * @param {number} seconds
 */
async function load(target, pids, seconds = DURATION_S) {
  const before = cpuMs(pids);
  const result = await autocannon({ ...target, connections: CONNECTIONS, duration: seconds });
  const cpu = cpuMs(pids) - before;
  const requests = result.requests.total;
  const bad = result.non2xx + result.errors + result.timeouts;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuMsPerReq: requests > 0 ? cpu / requests : 0,
    requests,
    bad,
  };
}

/**
 * A B A B over ROUNDS, after a warm-up of each; medians per side.
 * @param {Target} a
 * @param {number[]} aPids
 * @param {Target} b
 * @param {number[]} bPids
 */
async function alternate(a, aPids, b, bPids) {
  await load(a, aPids, WARMUP_S);
  await load(b, bPids, WARMUP_S);
  /** @type {Awaited<ReturnType<typeof load>>[]} */
  const as = [];
  /** @type {Awaited<ReturnType<typeof load>>[]} */
  const bs = [];
  for (let i = 0; i < ROUNDS; i++) {
    as.push(await load(a, aPids));
    bs.push(await load(b, bPids));
  }
  const summary = (/** @type {Awaited<ReturnType<typeof load>>[]} */ runs) => ({
    rps: round(median(runs.map((r) => r.rps)), 0),
    p50_ms: median(runs.map((r) => r.p50)),
    p99_ms: median(runs.map((r) => r.p99)),
    cpu_ms_per_req: round(median(runs.map((r) => r.cpuMsPerReq)), 3),
    non_2xx: runs.reduce((n, r) => n + r.bad, 0),
  });
  return { a: summary(as), b: summary(bs) };
}

/** Local receiver's OAuth server and webhook URL, counting receipts per event id. */
async function startReceiver() {
  /** @type {Map<string, number[]>} */
  const receipts = new Map();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.url === "/token") {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ access_token: "bench-receiver-token", token_type: "Bearer", expires_in: 300 }));
        return;
      }
      const id = /** @type {{ id: string }} */ (JSON.parse(body)).id;
      const list = receipts.get(id) ?? [];
      list.push(performance.now());
      receipts.set(id, list);
      res.writeHead(204).end();
    });
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, "127.0.0.1", () => r(undefined)));
  cleanups.push(async () => void server.close());
  return { port, receipts };
}

async function webhookPipeline(/** @type {string} */ base, /** @type {Awaited<ReturnType<typeof seed>>} */ s, /** @type {number} */ configs, /** @type {number} */ events) {
  const receiver = await startReceiver();
  const auth = { "x-api-key": s.apiKey, Authorization: `Bearer ${s.token}` };
  const type = `bench.c${configs}`;
  for (let i = 0; i < configs; i++) {
    await api("POST", `${base}/v1/webhook-configurations`, auth, {
      url: `http://127.0.0.1:${receiver.port}/webhook`,
      events: [type],
      oauth: { token_url: `http://127.0.0.1:${receiver.port}/token`, client_id: "bench", client_secret: "bench" },
    });
  }
  /** @type {Map<string, number>} */
  const published = new Map();
  const started = performance.now();
  for (let i = 0; i < events; i++) {
    const t = performance.now();
    const event = await api("POST", `${base}/v1/events`, auth, { type, data: { i } });
    published.set(need(event.id, "event id"), t);
    await sleep(QUICK ? 20 : 50); // a steady stream rather than one burst
  }
  const expected = configs * events;
  const deadline = performance.now() + 60_000;
  const count = () => [...receiver.receipts.values()].reduce((n, l) => n + l.length, 0);
  while (count() < expected && performance.now() < deadline) await sleep(50);
  /** @type {number[]} */
  const latencies = [];
  let last = started;
  for (const [id, at] of published) {
    for (const t of receiver.receipts.get(id) ?? []) {
      latencies.push(t - at);
      last = Math.max(last, t);
    }
  }
  latencies.sort((a, b) => a - b);
  const pct = (/** @type {number} */ p) => round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN, 0);
  return {
    configurations_per_event: configs,
    events,
    deliveries_expected: expected,
    deliveries_received: count(),
    deliveries_per_s: round((count() * 1000) / (last - started), 1),
    publish_to_receipt_p50_ms: pct(50),
    publish_to_receipt_p99_ms: pct(99),
  };
}

async function bundleSize() {
  const out = await mkdtemp(join(tmpdir(), "keyway-bundle-"));
  const text = await new Promise((resolve) => {
    const p = spawn(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out], { cwd: ROOT, env: ENV });
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
  const machine = { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, node: process.version, date: new Date().toISOString() };
  console.log(`keyway bench on ${machine.cpu} x${machine.cores}, ${machine.node}${QUICK ? " (quick)" : ""}`);

  const size = await bundleSize();
  const kw = await startKeyway();
  const s = await seed(kw.base);
  const bearer = { "x-api-key": s.apiKey, Authorization: `Bearer ${s.token}` };
  /** @type {Target} */
  const floor = { url: `${kw.base}/healthz` };
  /** @type {Record<"token" | "protected_read" | "graphql_viewer", Target>} */
  const targets = {
    token: { url: `${kw.base}/v1/oauth`, method: "POST", headers: { "Content-Type": "application/json", "x-api-key": s.apiKey }, body: s.tokenBody },
    protected_read: { url: `${kw.base}/v1/webhook-configurations`, headers: bearer },
    graphql_viewer: { url: `${kw.base}/v1/graphql`, method: "POST", headers: { ...bearer, "Content-Type": "application/json" }, body: JSON.stringify({ query: "{ viewer { organizationId userId token { expiresAt } } }" }) },
  };

  /** @type {Record<string, any>} */
  const http = {};
  for (const [name, target] of Object.entries(targets)) {
    const { a, b } = await alternate(floor, kw.workerd, target, kw.workerd);
    http[name] = { ...b, floor: a, throughput_ratio: round(b.rps / a.rps), worker_cpu_ms_per_req: round(b.cpu_ms_per_req - a.cpu_ms_per_req, 3) };
    console.log(`${name}: ${b.rps} req/s (${http[name].throughput_ratio} of floor ${a.rps}), p50 ${b.p50_ms} ms, p99 ${b.p99_ms} ms, workerd CPU ${b.cpu_ms_per_req} ms/req`);
  }

  // Peer: node-oidc-provider's client-credentials endpoint, alternated with our token endpoint.
  const peerPort = await freePort();
  const peer = spawn(process.execPath, [join(ROOT, "bench/oidc-peer.mjs")], { env: { ...process.env, PORT: String(peerPort) }, stdio: "ignore" });
  cleanups.push(async () => void peer.kill("SIGTERM"));
  await sleep(300);
  /** @type {Target} */
  const peerTarget = {
    url: `http://127.0.0.1:${peerPort}/token`,
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${Buffer.from("bench:bench-secret-0123456789abcdefghijklmnop").toString("base64")}` },
    body: "grant_type=client_credentials",
  };
  for (let i = 0; i < 40; i++) {
    try {
      if ((await fetch(peerTarget.url, peerTarget)).ok) break;
    } catch {
      await sleep(100);
    }
  }
  const { a: ours, b: theirs } = await alternate(targets.token, kw.workerd, peerTarget, [/** @type {number} */ (peer.pid)]);
  const floorCpu = http.token.floor.cpu_ms_per_req;
  const peerResult = {
    node_oidc_provider: theirs,
    keyway_token: ours,
    keyway_worker_cpu_ms_per_token: round(ours.cpu_ms_per_req - floorCpu, 3),
    cpu_ratio_worker_vs_peer: round((ours.cpu_ms_per_req - floorCpu) / theirs.cpu_ms_per_req),
  };
  console.log(`peer node-oidc-provider: ${theirs.rps} req/s, ${theirs.cpu_ms_per_req} ms CPU/token; keyway Worker CPU/token ${peerResult.keyway_worker_cpu_ms_per_token} ms`);

  const webhooks = [await webhookPipeline(kw.base, s, 1, QUICK ? 20 : 60), await webhookPipeline(kw.base, s, 10, QUICK ? 5 : 15)];
  for (const w of webhooks) {
    console.log(`webhooks x${w.configurations_per_event}: ${w.deliveries_received}/${w.deliveries_expected} delivered, ${w.deliveries_per_s}/s, publish-to-receipt p50 ${w.publish_to_receipt_p50_ms} ms, p99 ${w.publish_to_receipt_p99_ms} ms`);
  }

  const results = {
    machine,
    settings: { duration_s: DURATION_S, warmup_s: WARMUP_S, rounds: ROUNDS, connections: CONNECTIONS, runtime: "wrangler dev (workerd), --log-level error" },
    bundle: size,
    startup_ms: round(kw.startupMs, 0),
    http,
    peer: peerResult,
    webhooks,
    duration_s: round((performance.now() - t0) / 1000, 0),
  };
  await mkdir(join(ROOT, "bench"), { recursive: true });
  await writeFile(join(ROOT, "bench/results.json"), `${JSON.stringify(results, null, 2)}\n`);
  const md = table(results);
  await writeFile(join(ROOT, "bench/results.md"), md);
  console.log(`\n${md}`);
}

/** @param {Record<string, any>} r */
function table(r) {
  const rows = [
    "| Scenario | req/s | of floor | p50 ms | p99 ms | workerd CPU ms/req | Worker CPU ms/req (minus floor) |",
    "|---|---|---|---|---|---|---|",
    `| floor: GET /healthz | ${r.http.token.floor.rps} | 1.00 | ${r.http.token.floor.p50_ms} | ${r.http.token.floor.p99_ms} | ${r.http.token.floor.cpu_ms_per_req} | - |`,
    ...Object.entries(/** @type {Record<string, any>} */ (r.http)).map(
      ([name, v]) => `| ${{ token: "POST /v1/oauth", protected_read: "GET /v1/webhook-configurations", graphql_viewer: "POST /v1/graphql { viewer }" }[name]} | ${v.rps} | ${v.throughput_ratio} | ${v.p50_ms} | ${v.p99_ms} | ${v.cpu_ms_per_req} | ${v.worker_cpu_ms_per_req} |`,
    ),
    `| peer: node-oidc-provider POST /token | ${r.peer.node_oidc_provider.rps} | - | ${r.peer.node_oidc_provider.p50_ms} | ${r.peer.node_oidc_provider.p99_ms} | ${r.peer.node_oidc_provider.cpu_ms_per_req} (whole process) | - |`,
  ];
  const hooks = [
    "| Webhooks per event | Delivered | Deliveries/s | Publish-to-receipt p50 ms | p99 ms |",
    "|---|---|---|---|---|",
    ...r.webhooks.map((/** @type {Record<string, any>} */ w) => `| ${w.configurations_per_event} | ${w.deliveries_received}/${w.deliveries_expected} | ${w.deliveries_per_s} | ${w.publish_to_receipt_p50_ms} | ${w.publish_to_receipt_p99_ms} |`),
  ];
  return [
    `Measured ${r.machine.date.slice(0, 10)} on ${r.machine.cpu} (${r.machine.cores} cores), Node ${r.machine.node}; ${r.settings.connections} connections, ${r.settings.duration_s} s runs, A B A B medians after warm-up.`,
    "",
    ...rows,
    "",
    `Keyway's own CPU per token: ${r.peer.keyway_worker_cpu_ms_per_token} ms vs node-oidc-provider's ${r.peer.node_oidc_provider.cpu_ms_per_req} ms (ratio ${r.peer.cpu_ratio_worker_vs_peer}).`,
    "",
    ...hooks,
    "",
    `Bundle: ${r.bundle.gzip_kib} KiB gzipped (${r.bundle.total_kib} KiB raw). Local startup (spawn to first /healthz): ${r.startup_ms} ms. Whole bench: ${r.duration_s} s.`,
    "",
  ].join("\n");
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of cleanups.reverse()) await c();
  });
