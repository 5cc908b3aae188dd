/**
 * V8 CPU profiles of a Worker under `wrangler dev`, for `npm run bench:profile` (the HTTP load of
 * one scenario) and `BENCH_PROFILE` in bench/decompose.mjs's sequential mode (one lane's requests
 * inside the Worker): a minimal DevTools-protocol client on wrangler's inspector port, the run
 * sampled between `Profiler.start` and `Profiler.stop`, each function's self and inclusive time
 * summed from the samples, and the profiled bundle kept beside the profile for its line numbers
 * (wrangler deletes its temporary build on exit).
 */
import { existsSync } from "node:fs";
import { copyFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import WebSocket from "ws";
import { ROOT } from "./lib.mjs";

/** @typedef {{ id: number, callFrame: { functionName: string, url: string, lineNumber: number, columnNumber: number }, children?: number[], hitCount?: number }} ProfileNode */
/** @typedef {{ nodes: ProfileNode[], startTime: number, endTime: number, samples: number[], timeDeltas: number[] }} Profile */

/** A minimal DevTools-protocol client: send a method, await its result. */
async function connect(/** @type {string} */ url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let next = 1;
  /** @type {Map<number, (value: unknown) => void>} */
  const pending = new Map();
  ws.on("message", (data) => {
    const msg = /** @type {{ id?: number, result?: unknown, error?: unknown }} */ (JSON.parse(String(data)));
    const settle = msg.id === undefined ? undefined : pending.get(msg.id);
    if (msg.id === undefined || settle === undefined) return; // an event, not an answer
    pending.delete(msg.id);
    settle(msg.error ? Promise.reject(new Error(JSON.stringify(msg.error))) : msg.result);
  });
  return {
    /** @param {string} method @param {Record<string, unknown>} [params] */
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const id = next++;
        pending.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/**
 * A DevTools session with the inspector's target: `target` by id (workerd's own inspector lists
 * every isolate, `core:user:<worker name>`), else the first (wrangler's proxy lists one).
 * @param {{ inspectorPort: number, target?: string }} where
 */
async function session(where) {
  const list = /** @type {{ id?: string, title: string, webSocketDebuggerUrl: string }[]} */ (
    await (await fetch(`http://127.0.0.1:${where.inspectorPort}/json`)).json()
  );
  const worker = where.target ? list.find((t) => t.id === where.target) : list[0];
  if (!worker) throw new Error("no inspector target");
  return connect(worker.webSocketDebuggerUrl);
}

/**
 * Samples the Worker's isolate while `run` runs; writes the profile to `file` and keeps the newest
 * build of `bundle` (wrangler's output name, `index.js` or the entry's own) beside it. wrangler's
 * inspector proxy lists one target, the API Worker (titled "Cloudflare Worker"). A profile with no
 * sample taken while the isolate was busy is refused rather than printed as zeros (twice on 27
 * November the sampler returned a single idle sample for a whole run).
 * @template T
 * @param {{ inspectorPort: number, target?: string, intervalUs: number, file: string, bundle: string }} where
 * @param {() => Promise<T>} run
 * @returns {Promise<{ profile: Profile, weighed: ReturnType<typeof weigh>, result: T }>}
 */
export async function profiled(where, run) {
  const cdp = await session(where);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: where.intervalUs });
  await cdp.send("Profiler.start");
  const result = await run();
  const { profile } = /** @type {{ profile: Profile }} */ (await cdp.send("Profiler.stop"));
  cdp.close();
  const weighed = weigh(profile);
  if (weighed.count - weighed.idle <= 0)
    throw new Error(`the sampler recorded nothing but idle time (${profile.samples.length} samples); run it again`);
  await writeFile(where.file, JSON.stringify(profile));
  const tmp = join(ROOT, ".wrangler/tmp");
  // One build per Worker (the API Worker's is index.js, or its entry's name; its companions' are named after theirs).
  const builds = await Promise.all(
    (await readdir(tmp))
      .filter((d) => d.startsWith("dev-") && existsSync(join(tmp, d, where.bundle)))
      .map(async (d) => ({ d, t: (await stat(join(tmp, d))).mtimeMs })),
  );
  const newest = builds.sort((a, b) => b.t - a.t)[0];
  if (newest) await copyFile(join(tmp, newest.d, where.bundle), where.file.replace(/\.cpuprofile$/, ".bundle.js"));
  return { profile, weighed, result };
}

/**
 * The bytes allocated per function while `run` runs (V8's sampling heap profiler, one sample per
 * `intervalBytes` on average, objects the collector has already freed included): where a
 * request's garbage comes from, which the CPU profile shows only as the collector's time.
 * @template T
 * @param {{ inspectorPort: number, target?: string, intervalBytes: number }} where
 * @param {() => Promise<T>} run
 * @returns {Promise<{ bytes: Map<string, number>, total: number, result: T }>}
 */
export async function heapSampled(where, run) {
  const cdp = await session(where);
  await cdp.send("HeapProfiler.enable");
  await cdp.send("HeapProfiler.startSampling", {
    samplingInterval: where.intervalBytes,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const result = await run();
  /** @typedef {{ callFrame: ProfileNode["callFrame"], selfSize: number, children: HeapNode[] }} HeapNode */
  const { profile } = /** @type {{ profile: { head: HeapNode } }} */ (await cdp.send("HeapProfiler.stopSampling"));
  cdp.close();
  /** @type {Map<string, number>} */
  const bytes = new Map();
  let total = 0;
  /** @type {HeapNode[]} */
  const stack = [profile.head];
  for (let n = stack.pop(); n; n = stack.pop()) {
    const k = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;
    bytes.set(k, (bytes.get(k) ?? 0) + n.selfSize);
    total += n.selfSize;
    stack.push(...n.children);
  }
  return { bytes, total, result };
}

/**
 * Self and inclusive time per function (name, file, line), in microseconds of samples.
 * @param {Profile} profile
 */
function weigh(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  /** @type {Map<number, number>} */
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const key = (/** @type {ProfileNode} */ n) =>
    `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;
  /** @type {Map<string, number>} */
  const self = new Map();
  /** @type {Map<string, number>} */
  const total = new Map();
  // Samples are weighted by the time until the next one: the sampler falls behind under load.
  let count = 0;
  profile.samples.forEach((id, i) => {
    const leaf = byId.get(id);
    const weight = profile.timeDeltas[i + 1] ?? 0;
    if (!leaf) return;
    count += weight;
    self.set(key(leaf), (self.get(key(leaf)) ?? 0) + weight);
    // Each function counts once per sample even when it recurses.
    const seen = new Set();
    for (let n = /** @type {ProfileNode | undefined} */ (leaf); n; n = byId.get(parent.get(n.id) ?? -1)) {
      const k = key(n);
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + weight);
    }
  });
  const idle = [...self.entries()].filter(([k]) => k.startsWith("(idle)")).reduce((n, [, v]) => n + v, 0);
  return { count, self, total, idle };
}

/**
 * The `n` largest entries of `times`, one line each, `format` giving the figure.
 * @param {Map<string, number>} times @param {number} n @param {(us: number) => string} format
 */
export function top(times, n, format) {
  return [...times.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${format(v).padStart(10)}  ${k}`);
}

/**
 * The inspector port of workerd itself for a Worker process (`--inspector-addr=127.0.0.1:0`: a
 * port of its own choosing, found among the process's listening sockets): its targets are every
 * isolate, so the API Worker's can be profiled by name (`core:user:keyway`) when wrangler's own
 * inspector proxy answers with an idle one.
 * @param {number} pid
 * @param {string} target
 */
export async function workerdInspector(pid, target) {
  const { execSync } = await import("node:child_process");
  const sockets = execSync("ss -ltnp")
    .toString()
    .split("\n")
    .filter((l) => l.includes(`pid=${pid},`));
  for (const line of sockets) {
    const port = /127\.0\.0\.1:(\d+)/.exec(line)?.[1];
    if (port === undefined) continue;
    try {
      const list = /** @type {{ id?: string }[]} */ (
        await (await fetch(`http://127.0.0.1:${port}/json`, { signal: AbortSignal.timeout(2000) })).json()
      );
      if (list.some((t) => t.id === target)) return Number(port);
    } catch {
      // not an inspector, or a socket that does not answer HTTP (workerd listens on such sockets too)
    }
  }
  throw new Error(`no workerd inspector lists ${target}`);
}
