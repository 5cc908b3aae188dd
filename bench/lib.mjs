/**
 * Shared pieces of the benchmark scripts (bench/run.mjs, bench/profile.mjs): starting keyway and
 * the design's floor Worker under `wrangler dev` with measurement settings, seeding a tenant whose
 * API key has raised limits, one autocannon run with the server processes' CPU time over it, and
 * A B A B alternation or a round-robin over several targets.
 */
import { spawn } from "node:child_process";
import { createHash, generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { ensureDevVars, readDevVars } from "../scripts/dev-vars.mjs";
import { devConfigArgs, wranglerCommand } from "../scripts/wrangler.mjs";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const QUICK = process.env.BENCH_QUICK === "1";
export const DURATION_S = 2;
export const WARMUP_S = QUICK ? 1 : 2;
// Seven interleaved rounds of 2 s runs (five with BENCH_QUICK, never fewer): the median of seven
// paired comparisons resists a few noisy runs better than five of 3 s in the same time (the VM's
// neighbours come and go; the bench also reports the CPU time the hypervisor stole), and the
// rounds' spread says how far this machine can be trusted that day.
// BENCH_ROUNDS=<n> (at least 5) runs more, e.g. to look for a fall within a longer run.
export const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS) || (QUICK ? 5 : 7));
export const CONNECTIONS = 16;
export const ENV = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_HIDE_BANNER: "true",
  // wrangler 4.1xx records a trace of every invocation into a local SQLite store (its local
  // observability UI): about 7 file writes per request, which doubled the Worker process's CPU
  // per request here. Production has no such local store, so the bench measures without it.
  X_LOCAL_OBSERVABILITY: "false",
  // wrangler also appends every message it is given, at any log level (so every line the Worker
  // logs), to a debug log file under ~/.config/.wrangler/logs, one open-append-close each: about
  // 1 ms of its node process's CPU per line here (bench/tail.mjs, docs/performance.md, "The API
  // Worker's tail"). Production has no such file.
  WRANGLER_WRITE_LOGS: "false",
};
const TICK_MS = 1000 / 100; // /proc CPU times are in clock ticks (USER_HZ = 100 on Linux)

/**
 * `prepare` runs before each autocannon run, outside what is measured (DPoP proofs made ahead).
 * @typedef {{ url: string, method?: "GET" | "POST", headers?: Record<string, string>, body?: string,
 *   requests?: import("autocannon").Request[], prepare?: () => void }} Target
 */
/** @typedef {{ pids: number[], worker?: number[], root?: number }} Server the processes charged for a request; `worker`: keyway's own workerd; `root`: wrangler's pid, to find them again */

/** @type {(() => Promise<void>)[]} */
export const cleanups = [];
export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
export const median = (/** @type {number[]} */ xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
/**
 * One form-encoded client-credentials request to a token endpoint with an API key (RFC 6749 4.4.2),
 * timed from the send to the answer's last byte, for the benches that time token requests one by
 * one (client-auth-timing.mjs, token-methods.mjs).
 * @param {string} url @param {string} apiKey @param {Record<string, string>} fields
 */
export async function timedTokenRequest(url, apiKey, fields) {
  const body = new URLSearchParams({ grant_type: "client_credentials", ...fields }).toString();
  const started = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": apiKey, "Content-Type": "application/x-www-form-urlencoded" },
    body,
  });
  const text = await res.text();
  return { ms: performance.now() - started, status: res.status, text };
}

/** The 90th percentile (nearest rank below), for the sequential timings of the token benches. */
export const p90 = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] ?? 0;
export const round = (/** @type {number} */ x, /** @type {number} */ d = 2) => Math.round(x * 10 ** d) / 10 ** d;

export async function freePort() {
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
export function descendants(/** @type {number} */ pid) {
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
export function cpuMs(/** @type {number[]} */ pids) {
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

/** Jiffies of all CPUs so far: total, and stolen by the hypervisor (/proc/stat, "steal"). */
export function cpuJiffies() {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
}

export const commName = (/** @type {number} */ pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
};

export async function waitFor(/** @type {string} */ url, timeoutMs = 60_000) {
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

/**
 * A var of `[env.production.vars]` in wrangler.toml: the bench runs the local configuration, but
 * with production's choices where they change the cost of a request (the share of success lines
 * logged, docs/observability.md).
 * @param {string} name
 */
export function productionVar(name) {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const section = toml.slice(toml.indexOf("[env.production.vars]")).split(/^\[/m)[1] ?? "";
  const value = new RegExp(`^${name} = "([^"]*)"$`, "m").exec(section)?.[1];
  if (value === undefined) throw new Error(`wrangler.toml [env.production.vars] has no ${name}`);
  return value;
}

/**
 * @param {string[]} [extraArgs] more `wrangler dev` arguments (e.g. an inspector port)
 * @param {{ config?: string }} [options] `config`: another configuration for the API Worker in
 *   place of wrangler.toml (bench/decompose.mjs: the same one with a bench-only entry)
 */
export async function startKeyway(extraArgs = [], options = {}) {
  await ensureDevVars(ROOT);
  const configs = devConfigArgs().map((arg) => (arg === "wrangler.toml" && options.config ? options.config : arg));
  return startWorker([
    ...configs,
    "--var",
    "WEBHOOK_ALLOW_INSECURE_TARGETS:true",
    "--var",
    `LOG_SUCCESS_SAMPLE_RATE:${productionVar("LOG_SUCCESS_SAMPLE_RATE")}`,
    ...extraArgs,
  ]);
}

/**
 * The design's floor Worker (bench/floor): one Durable Object RPC writing one row per request.
 * @param {string[]} [extraArgs] more `wrangler dev` arguments (e.g. an inspector port)
 */
export function startFloorWorker(extraArgs = []) {
  return startWorker(["--config", "bench/floor/wrangler.toml", ...extraArgs]);
}

/**
 * A Worker under `wrangler dev` with the bench's measurement settings, on a free port with its
 * own state directory; stopped (and its state removed) by the cleanups. `options` depart from
 * those settings (bench/tracing-store.mjs runs keyway as `npm start` does): `env` for the
 * environment, `onDisk` for state on the disk instead of tmpfs, `logLevel` for wrangler's own
 * (its stdout is then read and dropped, as `npm start` reads it).
 * @param {string[]} args `wrangler dev` arguments beyond the common ones
 * @param {{ env?: NodeJS.ProcessEnv, onDisk?: boolean, logLevel?: string }} [options]
 */
export async function startWorker(args, options = {}) {
  const port = await freePort();
  // Each wrangler dev needs its own inspector port (9229 otherwise), so that two can run at once.
  const inspector = args.includes("--inspector-port") ? [] : ["--inspector-port", String(await freePort())];
  // Local state (KV, the objects' SQLite) on tmpfs when there is one: on this VM's disk each
  // Durable Object commit costs about 0.2 ms of CPU in write and sync calls, a cost of
  // the local file, not of the Worker (production storage is not a local SQLite file).
  const stateRoot = existsSync("/dev/shm") && !options.onDisk ? "/dev/shm" : tmpdir();
  const stateDir = stateRoot === "/dev/shm" ? "/dev/shm (tmpfs)" : stateRoot; // as the results name it
  const persist = await mkdtemp(join(stateRoot, "keyway-bench-"));
  const started = performance.now();
  const child = spawn(
    ...wranglerCommand([
      "dev",
      "--port",
      String(port),
      "--ip",
      "127.0.0.1",
      "--persist-to",
      persist,
      "--show-interactive-dev-session=false",
      // Measurement settings: no per-request logs from wrangler.
      "--log-level",
      options.logLevel ?? "error",
      ...inspector,
      ...args,
    ]),
    { cwd: ROOT, env: options.env ?? ENV, stdio: ["ignore", options.logLevel ? "pipe" : "ignore", "inherit"], detached: true },
  );
  child.stdout?.resume();
  stopWithCleanups(child, persist);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/healthz`);
  const startupMs = performance.now() - started;
  /** @type {Server} */
  const server = { pids: [], root: child.pid };
  findProcesses(server);
  const all = descendants(/** @type {number} */ (child.pid));
  return { base, startupMs, server, stateDir, persist, all: [/** @type {number} */ (child.pid), ...all] };
}

/**
 * At the end of the run (cleanups): ends `child`'s process group, spawned `detached` (wrangler, its
 * node child, workerd), waits until every member is gone, then removes its state directory.
 * @param {import("node:child_process").ChildProcess} child
 * @param {string} persist
 */
export function stopWithCleanups(child, persist) {
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
    // Wait for the whole group before removing its state.
    for (let i = 0; i < 100 && signal(0); i++) await sleep(100);
    signal("SIGKILL");
    await rm(persist, { recursive: true, force: true });
  });
}

/**
 * The workerd processes under a wrangler dev (its `root`), found again: wrangler runs two, its dev
 * proxy (which owns the public port) and the Worker itself, the one with the inspector. Both are
 * charged to a request; the Worker's own process is also reported apart, since production has no
 * dev proxy.
 * @param {Server} server
 */
function findProcesses(server) {
  if (server.root === undefined) return;
  const workerd = descendants(server.root).filter((p) => commName(p) === "workerd");
  const worker = workerd.filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, "utf8").includes("--inspector-addr");
    } catch {
      return false;
    }
  });
  server.pids = workerd;
  if (worker.length === 1) server.worker = worker;
  else delete server.worker;
}

export async function api(
  /** @type {string} */ method,
  /** @type {string} */ url,
  /** @type {Record<string,string>} */ headers,
  /** @type {unknown} */ body,
) {
  const res = await fetch(url, {
    method,
    headers: { "Content-Type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = /** @type {{ data: Record<string, string> }} */ (await res.json());
  if (!res.ok) throw new Error(`${method} ${url} -> ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** A string field the API must have returned. */
export function need(/** @type {string | undefined} */ value, /** @type {string} */ name) {
  if (typeof value !== "string") throw new Error(`missing ${name} in an API answer`);
  return value;
}

/**
 * A DPoP key of the load generator and its proofs (RFC 9449 4.2), made with node:crypto so that
 * autocannon can sign one per request synchronously (each has its own jti and a fresh iat).
 */
export function dpopKey() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const { kty, crv, x, y } = /** @type {{ kty: string, crv: string, x: string, y: string }} */ (publicKey.export({ format: "jwk" }));
  const header = Buffer.from(JSON.stringify({ typ: "dpop+jwt", alg: "ES256", jwk: { kty, crv, x, y } })).toString("base64url");
  /**
   * @param {string} htm
   * @param {string} htu
   * @param {string} [token] the access token, for `ath`
   */
  const proof = (htm, htu, token) => {
    const claims = {
      htm,
      htu,
      jti: randomUUID(),
      iat: Math.floor(Date.now() / 1000),
      ...(token ? { ath: createHash("sha256").update(token).digest("base64url") } : {}),
    };
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
    return `${input}.${sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
  };
  return { proof };
}

/** The order `publish` and `publish_schema` send (10 fields, a nested customer, five lines); bench/schema-validation.mjs measures it alone. */
export const ORDER_DATA = {
  id: "ord_AbCdEf123456",
  status: "paid",
  currency: "EUR",
  total: 5100,
  discount: 0,
  note: "leave at the door",
  created_at: "2025-01-01T12:00:00Z",
  paid: true,
  customer: { id: "cus_1", email: "ada@example.com", name: "Ada" },
  items: [0, 1, 2, 3, 4].map((i) => ({ sku: `SKU-${i}`, quantity: i + 1, price: 1000 + i })),
};
/** Its JSON Schema. */
export const ORDER_SCHEMA = {
  type: "object",
  required: ["id", "status", "currency", "total", "items", "customer", "created_at"],
  properties: {
    id: { type: "string", pattern: "^ord_[A-Za-z0-9]{8,32}$" },
    status: { enum: ["pending", "paid", "shipped", "cancelled"] },
    currency: { type: "string", minLength: 3, maxLength: 3 },
    total: { type: "integer", minimum: 0 },
    discount: { type: "integer", minimum: 0 },
    note: { type: "string", maxLength: 500 },
    created_at: { type: "string", format: "date-time" },
    paid: { type: "boolean" },
    customer: {
      type: "object",
      required: ["id", "email"],
      properties: { id: { type: "string" }, email: { type: "string", format: "email" }, name: { type: "string" } },
    },
    items: {
      type: "array",
      minItems: 1,
      maxItems: 100,
      items: {
        type: "object",
        required: ["sku", "quantity", "price"],
        properties: { sku: { type: "string" }, quantity: { type: "integer", minimum: 1 }, price: { type: "integer", minimum: 0 } },
      },
    },
  },
};

/** How many API keys (each with its own token) the scenarios spread their requests over. */
const KEYS = 2;

export async function seed(/** @type {string} */ base) {
  const adminToken = need((await readDevVars(ROOT)).ADMIN_TOKEN, "ADMIN_TOKEN in .dev.vars");
  const admin = { Authorization: `Bearer ${adminToken}` };
  const org = await api("POST", `${base}/admin/v1/organizations`, admin, { name: "Bench" });
  const user = await api("POST", `${base}/admin/v1/organizations/${org.id}/users`, admin, { name: "Bench" });
  const cred = await api("POST", `${base}/admin/v1/organizations/${org.id}/users/${user.id}/client-credentials`, admin, {});
  // Limits raised so the bench measures the service, not its rate limiter's refusals: each key at
  // the most one key's object serves (1,000/s), and the load spread over KEYS of them, so that a
  // fast machine's rate never meets a key's limit.
  const tokenBody = JSON.stringify({ client_id: cred.client_id, client_secret: cred.client_secret, grant_type: "client_credentials" });
  const pairs = [];
  for (let i = 0; i < KEYS; i++) {
    const k = await api("POST", `${base}/admin/v1/organizations/${org.id}/api-keys`, admin, {
      limits: { per_second: 1000, per_day: 100_000_000 },
    });
    const apiKey = need(k.api_key, "api_key");
    const t = (await api("POST", `${base}/v1/oauth`, { "x-api-key": apiKey }, JSON.parse(tokenBody))).access_token;
    pairs.push({ apiKey, token: need(t, "access_token") });
  }
  const key = { api_key: pairs[0]?.apiKey };
  const token = pairs[0]?.token;
  // Issue 24: the same, in a second organization with a shared quota (high enough never to
  // refuse), so every request also asks the organization's QuotaObject from the key's object.
  const qOrg = await api("POST", `${base}/admin/v1/organizations`, admin, { name: "Bench quota" });
  const qUser = await api("POST", `${base}/admin/v1/organizations/${qOrg.id}/users`, admin, { name: "Bench" });
  const qCred = await api("POST", `${base}/admin/v1/organizations/${qOrg.id}/users/${qUser.id}/client-credentials`, admin, {});
  const qTokenBody = JSON.stringify({ client_id: qCred.client_id, client_secret: qCred.client_secret, grant_type: "client_credentials" });
  await api("PATCH", `${base}/admin/v1/organizations/${qOrg.id}`, admin, { limits: { per_day: 1_000_000_000 } });
  const quotaPairs = [];
  for (let i = 0; i < KEYS; i++) {
    const k = await api("POST", `${base}/admin/v1/organizations/${qOrg.id}/api-keys`, admin, {
      limits: { per_second: 1000, per_day: 100_000_000 },
    });
    const apiKey = need(k.api_key, "api_key");
    const t = (await api("POST", `${base}/v1/oauth`, { "x-api-key": apiKey }, JSON.parse(qTokenBody))).access_token;
    quotaPairs.push({ apiKey, token: need(t, "access_token") });
  }
  // DPoP-bound tokens of the same client (RFC 9449) for the `me_dpop` scenario, on KEYS keys of
  // their own: each DPoP read writes its proof's jti in its key's object, whose pruning alarm
  // would otherwise fire inside the other scenarios' runs on the keys they share.
  const dpop = dpopKey();
  const dpopPairs = [];
  for (let i = 0; i < KEYS; i++) {
    const k = await api("POST", `${base}/admin/v1/organizations/${org.id}/api-keys`, admin, {
      limits: { per_second: 1000, per_day: 100_000_000 },
    });
    const apiKey = need(k.api_key, "api_key");
    const t = (
      await api("POST", `${base}/v1/oauth`, { "x-api-key": apiKey, DPoP: dpop.proof("POST", `${base}/v1/oauth`) }, JSON.parse(tokenBody))
    ).access_token;
    dpopPairs.push({ apiKey, token: need(t, "access_token") });
  }
  // Issue 30: an event type with a schema (a typical order), for `publish_schema` beside `publish`.
  await api(
    "POST",
    `${base}/v1/event-types`,
    { "x-api-key": need(key.api_key, "api_key"), Authorization: `Bearer ${token}` },
    {
      name: "bench.validated",
      schema: ORDER_SCHEMA,
      examples: [ORDER_DATA],
    },
  );
  return {
    apiKey: need(key.api_key, "api_key"),
    token: need(token, "access_token"),
    pairs,
    quotaPairs,
    dpopPairs,
    dpop,
    tokenBody,
    orgId: need(org.id, "id"),
    adminHeaders: admin,
  };
}

/**
 * One autocannon run; `pids` are the server processes whose CPU is charged to it.
 * @param {Target} target
 * @param {Server} server
 * @param {number} seconds
 */
export async function load(target, server, seconds = DURATION_S) {
  const { prepare, ...options } = target;
  prepare?.();
  const before = cpuMs(server.pids);
  const workerBefore = server.worker ? cpuMs(server.worker) : 0;
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: seconds });
  const cpu = cpuMs(server.pids) - before;
  const workerCpu = server.worker ? cpuMs(server.worker) - workerBefore : Number.NaN;
  // wrangler dev rebuilds and restarts the Worker when a source file changes (others may be
  // editing the tree): its processes are then new ones, and this run is not a measurement.
  const reloaded = server.pids.some((pid) => !existsSync(`/proc/${pid}`));
  if (reloaded) findProcesses(server);
  const requests = result.requests.total;
  const bad = result.non2xx + result.errors + result.timeouts;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuMsPerReq: requests > 0 ? cpu / requests : 0,
    workerCpuMsPerReq: requests > 0 ? workerCpu / requests : Number.NaN,
    requests,
    bad,
    reloaded,
  };
}

/**
 * A B A B ... over ROUNDS, after a warm-up of each; medians per side and per adjacent pair.
 * @param {Target} a
 * @param {Server} aServer
 * @param {Target} b
 * @param {Server} bServer
 */
export async function alternate(a, aServer, b, bServer) {
  await load(a, aServer, WARMUP_S);
  await load(b, bServer, WARMUP_S);
  /** @type {Awaited<ReturnType<typeof load>>[]} */
  const as = [];
  /** @type {Awaited<ReturnType<typeof load>>[]} */
  const bs = [];
  for (let i = 0; i < ROUNDS; i++) {
    as.push(await load(a, aServer));
    bs.push(await load(b, bServer));
  }
  const summary = (/** @type {Awaited<ReturnType<typeof load>>[]} */ runs) => ({
    rps: round(median(runs.map((r) => r.rps)), 0),
    p50_ms: median(runs.map((r) => r.p50)),
    p99_ms: median(runs.map((r) => r.p99)),
    cpu_ms_per_req: round(median(runs.map((r) => r.cpuMsPerReq)), 3),
    worker_process_cpu_ms_per_req: round(median(runs.map((r) => r.workerCpuMsPerReq)), 3),
    non_2xx: runs.reduce((n, r) => n + r.bad, 0),
  });
  // Adjacent runs share the machine's conditions, so comparisons are made pair by pair and the
  // median pair reported: B's throughput over A's, and B's CPU per request minus A's.
  const pairs = as.map((ra, i) => ({ ra, rb: /** @type {Awaited<ReturnType<typeof load>>} */ (bs[i]) }));
  const paired = {
    throughput_ratio: round(median(pairs.map(({ ra, rb }) => rb.rps / ra.rps))),
    cpu_ms_per_req_delta: round(median(pairs.map(({ ra, rb }) => rb.cpuMsPerReq - ra.cpuMsPerReq)), 3),
    worker_process_cpu_ms_per_req_delta: round(median(pairs.map(({ ra, rb }) => rb.workerCpuMsPerReq - ra.workerCpuMsPerReq)), 3),
  };
  return { a: summary(as), b: summary(bs), paired };
}

/**
 * A sample's median and spread: quartiles by linear interpolation, their distance (IQR) and the
 * range, each rounded to `d` places.
 * @param {number[]} xs
 * @param {number} [d]
 */
export function spread(xs, d = 2) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (/** @type {number} */ p) => {
    const at = (s.length - 1) * p;
    const lo = Math.floor(at);
    const hi = Math.ceil(at);
    return (s[lo] ?? Number.NaN) + ((s[hi] ?? Number.NaN) - (s[lo] ?? Number.NaN)) * (at - lo);
  };
  return {
    median: round(median(s), d),
    q1: round(q(0.25), d),
    q3: round(q(0.75), d),
    iqr: round(q(0.75) - q(0.25), d),
    min: round(s[0] ?? Number.NaN, d),
    max: round(s.at(-1) ?? Number.NaN, d),
  };
}

/** @typedef {ReturnType<typeof spread>} Spread */

/**
 * The verdict on a ratio against its target, judged against the ratio's own spread (its IQR over
 * the rounds): "met" when the median reaches the target; "regression" only when it misses it by
 * more than the IQR; otherwise "missed, within the spread" (this machine cannot tell it from the
 * target). `lowerIsBetter` for latency ratios (target a ceiling).
 * @param {Spread} s
 * @param {number} target
 * @param {boolean} [lowerIsBetter]
 */
export function verdict(s, target, lowerIsBetter = false) {
  const short = lowerIsBetter ? s.median - target : target - s.median;
  if (short <= 0) return "met";
  return short > s.iqr ? "regression" : "missed, within the spread";
}

/**
 * Drift within a run: the last round's ratio against the first's, and the trend over all the
 * rounds (Theil-Sen: the median of the slopes between every two rounds, times the rounds
 * between the first and the last). Flagged "falls" (or "rises") only when both exceed the ratio's
 * spread (its IQR over the rounds), else "steady": a single noisy round at either end moves the
 * first-to-last change but not the trend, and a trend with noisy ends may not be a fall.
 * @param {number[]} perRound
 * @param {Spread} s
 */
export function drift(perRound, s) {
  const first = perRound[0] ?? Number.NaN;
  const last = perRound.at(-1) ?? Number.NaN;
  const change = last - first;
  /** @type {number[]} */
  const slopes = [];
  perRound.forEach((a, i) => {
    perRound.forEach((b, j) => {
      if (j > i) slopes.push((b - a) / (j - i));
    });
  });
  const trend = median(slopes) * (perRound.length - 1);
  const beyond = (/** @type {number} */ x) => Math.abs(x) > s.iqr;
  const verdict = beyond(change) && beyond(trend) && Math.sign(change) === Math.sign(trend) ? (change < 0 ? "falls" : "rises") : "steady";
  return { first: round(first), last: round(last), change: round(change), trend: round(trend), verdict };
}

/** Fisher-Yates, in place. @template T @param {T[]} xs */
function shuffle(xs) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [/** @type {T} */ (xs[j]), /** @type {T} */ (xs[i])];
  }
  return xs;
}

/** @typedef {Awaited<ReturnType<typeof load>>} Run */

/**
 * Interleaved paired rounds, ROUNDS times after a warm-up of each target. A round runs every
 * group once, the groups in a new random order each round; the members of a group (a scenario
 * and its design-floor twin) run back to back, seconds apart, in alternating order (twin first in
 * even rounds, scenario first in odd ones), so that neither side always runs warmer or later.
 * Every comparison is made within a round and kept per round; `pair(a, b)` gives b's throughput
 * over a's, b's p99 over a's and b's CPU per request minus a's, each per round and as a median
 * with its spread.
 * @param {{ name: string, target: Target, server: Server }[][]} groups
 */
export async function rotate(groups) {
  const list = groups.flat();
  for (const { target, server } of list) await load(target, server, WARMUP_S);
  /** @type {Record<string, Run[]>} */
  const runs = Object.fromEntries(list.map(({ name }) => [name, []]));
  /** @type {string[][]} */
  const orders = [];
  /** @type {string[]} */
  const reloads = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = shuffle([...groups]).flatMap((g) => (i % 2 ? [...g].reverse() : g));
    orders.push(order.map(({ name }) => name));
    for (const { name, target, server } of order) {
      let run = await load(target, server);
      // A run during which wrangler restarted the Worker (a source file changed) is run again,
      // once things are up (the restart's own cost is not keyway's).
      for (let tries = 0; run.reloaded && tries < 3; tries++) {
        reloads.push(`round ${i + 1}, ${name}`);
        console.log(`round ${i + 1}: ${name}: the Worker restarted during the run (a source file changed); running it again`);
        await sleep(3000);
        run = await load(target, server);
      }
      runs[name]?.push(run);
    }
    console.log(`round ${i + 1}/${ROUNDS} done`);
  }
  const of = (/** @type {string} */ name) => /** @type {Run[]} */ (runs[name]);
  const summary = (/** @type {string} */ name) => {
    const r = of(name);
    return {
      rps: round(median(r.map((x) => x.rps)), 0),
      p50_ms: median(r.map((x) => x.p50)),
      p99_ms: median(r.map((x) => x.p99)),
      cpu_ms_per_req: round(median(r.map((x) => x.cpuMsPerReq)), 3),
      worker_process_cpu_ms_per_req: round(median(r.map((x) => x.workerCpuMsPerReq)), 3),
      non_2xx: r.reduce((n, x) => n + x.bad, 0),
      per_round: r.map((x) => ({ rps: round(x.rps, 0), p50_ms: x.p50, p99_ms: x.p99, cpu_ms_per_req: round(x.cpuMsPerReq, 3) })),
    };
  };
  const pair = (/** @type {string} */ a, /** @type {string} */ b) => {
    const as = of(a);
    const bs = of(b);
    const at = (/** @type {number} */ i) => /** @type {Run} */ (as[i]);
    const ratios = bs.map((rb, i) => rb.rps / at(i).rps);
    const p99s = bs.map((rb, i) => rb.p99 / Math.max(1, at(i).p99));
    const throughput = spread(ratios);
    return {
      throughput_ratio: throughput.median,
      throughput_spread: throughput,
      throughput_per_round: ratios.map((x) => round(x)),
      drift: drift(ratios, throughput),
      p99_ratio: spread(p99s).median,
      p99_spread: spread(p99s),
      p99_per_round: p99s.map((x) => round(x)),
      cpu_ms_per_req_delta: round(median(bs.map((rb, i) => rb.cpuMsPerReq - at(i).cpuMsPerReq)), 3),
      worker_process_cpu_ms_per_req_delta: round(median(bs.map((rb, i) => rb.workerCpuMsPerReq - at(i).workerCpuMsPerReq)), 3),
    };
  };
  return { summary, pair, orders, reloads };
}

/** Proofs enough for any 2 s run here (the floor serves under 2,000 requests a second). */
const PROOFS_PER_RUN = 8_000;

/**
 * A target whose every request carries its own DPoP proof, made before the run: the requests go
 * round-robin over `pool`, each member with its own headers and proofs (`next`).
 * @param {string} url
 * @param {Record<string, string>} headers
 * @param {{ headers: Record<string, string>, next: () => string }[]} pool
 * @param {{ method: "GET" | "POST", body?: string }} [request] a GET without a body unless said
 * @returns {Target}
 */
function dpopTarget(url, headers, pool, request = { method: "GET" }) {
  /** @type {string[][]} */
  let proofs = [];
  let turn = 0;
  return {
    url,
    headers,
    ...(request.method === "POST" ? { method: "POST", body: request.body } : {}),
    prepare: () => {
      proofs = pool.map((p) => Array.from({ length: Math.ceil(PROOFS_PER_RUN / pool.length) }, p.next));
    },
    requests: [
      {
        method: request.method,
        path: new URL(url).pathname,
        ...(request.body !== undefined ? { body: request.body } : {}),
        // A run that outlasts the pool signs the rest as it goes.
        setupRequest: (req) => {
          const i = turn++ % pool.length;
          const p = /** @type {{ headers: Record<string, string>, next: () => string }} */ (pool[i]);
          return { ...req, headers: { ...req.headers, ...p.headers, DPoP: proofs[i]?.pop() ?? p.next() } };
        },
      },
    ],
  };
}

/**
 * The measured requests, built on a seeded tenant: the runtime's floor and the scenarios.
 * @param {string} base
 * @param {Awaited<ReturnType<typeof seed>>} s
 * @returns {{ floor: Target, token: Target, token_dpop: Target, me: Target, me_quota: Target, me_dpop: Target, graphql_viewer: Target, webhook_list: Target, publish: Target, publish_schema: Target }}
 */
export function scenarios(base, s) {
  const bearer = { "x-api-key": s.apiKey, Authorization: `Bearer ${s.token}` };
  // Each request with the next of the seeded keys and its token, round-robin.
  let turn = 0;
  /** @param {Record<string, string>} extra @param {boolean} withToken @param {{ apiKey: string, token: string }[]} pool */
  const rotating = (extra, withToken = true, pool = s.pairs) => ({
    setupRequest: (/** @type {import("autocannon").Request} */ req) => {
      const p = pool[turn++ % pool.length] ?? { apiKey: s.apiKey, token: s.token };
      return {
        ...req,
        headers: { ...req.headers, ...extra, "x-api-key": p.apiKey, ...(withToken ? { Authorization: `Bearer ${p.token}` } : {}) },
      };
    },
  });
  return {
    floor: { url: `${base}/healthz` },
    token: {
      url: `${base}/v1/oauth`,
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": s.apiKey },
      body: s.tokenBody,
      requests: [{ method: "POST", path: "/v1/oauth", body: s.tokenBody, ...rotating({ "Content-Type": "application/json" }, false) }],
    },
    // Issue 29: a token request with a DPoP proof (a new one per request), whose proof id the
    // organization's object records: the token path's second Durable Object call. One key, one
    // organization: every request meets the same organization object.
    token_dpop: dpopTarget(
      `${base}/v1/oauth`,
      { "Content-Type": "application/json", "x-api-key": s.apiKey },
      s.pairs.map((p) => ({ headers: { "x-api-key": p.apiKey }, next: () => s.dpop.proof("POST", `${base}/v1/oauth`) })),
      { method: "POST", body: s.tokenBody },
    ),
    me: { url: `${base}/v1/me`, headers: bearer, requests: [{ method: "GET", path: "/v1/me", ...rotating({}) }] },
    // The same read by keys of an organization with a shared quota (issue 24).
    me_quota: { url: `${base}/v1/me`, headers: bearer, requests: [{ method: "GET", path: "/v1/me", ...rotating({}, true, s.quotaPairs) }] },
    // The same read with DPoP-bound tokens, on keys of their own: each request carries a new
    // proof, signed ahead of the run (so the load generator's signing is not what is measured),
    // fresh for 60 s.
    me_dpop: dpopTarget(
      `${base}/v1/me`,
      { "x-api-key": s.apiKey, Authorization: `Bearer ${s.token}` },
      s.dpopPairs.map((p) => ({
        headers: { "x-api-key": p.apiKey, Authorization: `DPoP ${p.token}` },
        next: () => s.dpop.proof("GET", `${base}/v1/me`, p.token),
      })),
    ),
    // Issue 30: a publish (no configuration subscribes, so it records the event only), and the
    // same order as an event type with a schema, whose data the organization's object validates.
    publish: publishTarget(base, bearer, rotating, "bench.plain"),
    publish_schema: publishTarget(base, bearer, rotating, "bench.validated"),
    webhook_list: {
      url: `${base}/v1/webhook-configurations`,
      headers: bearer,
      requests: [{ method: "GET", path: "/v1/webhook-configurations", ...rotating({}) }],
    },
    graphql_viewer: {
      url: `${base}/v1/graphql`,
      method: "POST",
      headers: { ...bearer, "Content-Type": "application/json" },
      body: JSON.stringify({ query: "{ viewer { organizationId userId token { expiresAt } } }" }),
      requests: [
        {
          method: "POST",
          path: "/v1/graphql",
          body: JSON.stringify({ query: "{ viewer { organizationId userId token { expiresAt } } }" }),
          ...rotating({ "Content-Type": "application/json" }),
        },
      ],
    },
  };
}

/**
 * POST /v1/events of the bench order as `type`.
 * @param {string} base
 * @param {Record<string, string>} bearer
 * @param {(extra: Record<string, string>) => object} rotating
 * @param {string} type
 * @returns {Target}
 */
function publishTarget(base, bearer, rotating, type) {
  const body = JSON.stringify({ type, data: ORDER_DATA });
  const headers = { "Content-Type": "application/json" };
  return {
    url: `${base}/v1/events`,
    method: "POST",
    headers: { ...bearer, ...headers },
    body,
    requests: [{ method: "POST", path: "/v1/events", body, ...rotating(headers) }],
  };
}

/** Runs a script's main, reports its failure as the exit code, and always stops what it started. */
export function runMain(/** @type {() => Promise<void>} */ main) {
  main()
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(async () => {
      for (const c of cleanups.reverse()) await c();
    });
}

/**
 * The peer: node-oidc-provider's client-credentials grant (bench/oidc-peer.mjs) in a process of its
 * own, stopped by the cleanups; its target (HTTP Basic, the grant in the form) once it answers.
 * @returns {Promise<{ target: Target, pid: number }>}
 */
export async function startPeer() {
  const port = await freePort();
  const peer = spawn(process.execPath, [join(ROOT, "bench/oidc-peer.mjs")], {
    env: { ...process.env, PORT: String(port) },
    stdio: "ignore",
  });
  cleanups.push(async () => void peer.kill("SIGTERM"));
  /** @type {Target} */
  const target = {
    url: `http://127.0.0.1:${port}/token`,
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Authorization: `Basic ${Buffer.from("bench:bench-secret-0123456789abcdefghijklmnop").toString("base64")}`,
    },
    body: "grant_type=client_credentials",
  };
  for (let i = 0; i < 40; i++) {
    try {
      if ((await fetch(target.url, target)).ok) break;
    } catch {
      await sleep(100);
    }
  }
  return { target, pid: /** @type {number} */ (peer.pid) };
}
