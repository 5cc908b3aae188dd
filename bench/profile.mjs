/**
 * `npm run bench:profile [scenario]`: a V8 CPU profile of the Worker inside workerd while
 * autocannon drives one scenario (token, protected_read, graphql_viewer or floor). It connects
 * to wrangler's inspector over the DevTools protocol, samples for the run, writes
 * bench/profile-<scenario>.cpuprofile (open it in Chrome DevTools) and prints the functions with
 * the most self time and the most inclusive time, so a hot path can be found without a browser.
 * The bundle is built unminified for readable names.
 */
import { existsSync } from "node:fs";
import { copyFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import autocannon from "autocannon";
import WebSocket from "ws";
import { CONNECTIONS, freePort, ROOT, runMain, scenarios, seed, sleep, startFloorWorker, startKeyway } from "./lib.mjs";

const scenario = process.argv[2] ?? "token";
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 5);

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

/** Self and inclusive time per function (name, file, line). */
function summarize(/** @type {Profile} */ profile) {
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
  const top = (/** @type {Map<string, number>} */ m, /** @type {number} */ n) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((100 * v) / count).toFixed(1).padStart(5)}%  ${k}`);
  const idleMs = [...self.entries()].filter(([k]) => k.startsWith("(idle)")).reduce((n, [, v]) => n + v, 0);
  return { count, self: top(self, 30), total: top(total, 40), idle: count > 0 ? idleMs / count : 0 };
}

async function main() {
  const inspectorPort = await freePort();
  const args = ["--inspector-port", String(inspectorPort), "--minify", "false"];
  /** @type {import("./lib.mjs").Target | undefined} */
  let target;
  if (scenario === "design_floor") {
    target = { url: `${(await startFloorWorker(args)).base}/` };
  } else {
    const kw = await startKeyway(args);
    /** @type {Record<string, import("./lib.mjs").Target>} */
    const targets = scenarios(kw.base, await seed(kw.base));
    target = targets[scenario];
    if (!target) throw new Error(`unknown scenario ${scenario}; one of design_floor, ${Object.keys(targets).join(", ")}`);
  }

  const list = /** @type {{ title: string, webSocketDebuggerUrl: string }[]} */ (
    await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()
  );
  const worker = list.find((t) => t.title.includes("keyway")) ?? list[0];
  if (!worker) throw new Error("no inspector target");
  const cdp = await connect(worker.webSocketDebuggerUrl);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: Number(process.env.PROFILE_INTERVAL_US ?? 250) });
  const { prepare, ...options } = target;
  prepare?.();
  await autocannon({ ...options, connections: CONNECTIONS, duration: 2 }); // warm-up
  prepare?.();
  await cdp.send("Profiler.start");
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: SECONDS });
  const { profile } = /** @type {{ profile: Profile }} */ (await cdp.send("Profiler.stop"));
  cdp.close();
  const file = join(ROOT, `bench/profile-${scenario}.cpuprofile`);
  await writeFile(file, JSON.stringify(profile));
  // Keep the profiled bundle (wrangler deletes its temporary build on exit) for line numbers.
  const tmp = join(ROOT, ".wrangler/tmp");
  // One build per Worker (the API Worker's is index.js; its companions' are named after their entries).
  const builds = await Promise.all(
    (await readdir(tmp))
      .filter((d) => d.startsWith("dev-") && existsSync(join(tmp, d, "index.js")))
      .map(async (d) => ({ d, t: (await stat(join(tmp, d))).mtimeMs })),
  );
  const newest = builds.sort((a, b) => b.t - a.t)[0];
  if (newest) await copyFile(join(tmp, newest.d, "index.js"), join(ROOT, `bench/profile-${scenario}.bundle.js`));
  const { count, self, total, idle } = summarize(profile);
  const ms = count / 1000;
  const busy = (ms * (1 - idle)) / result.requests.total;
  console.log(
    `${scenario}: ${result.requests.total} requests (${result.non2xx} non-2xx) in ${SECONDS} s; isolate thread sampled for ${ms.toFixed(0)} ms, ${(ms / result.requests.total).toFixed(3)} ms per request including idle, ${busy.toFixed(3)} ms busy (not idle); ${file}`,
  );
  console.log(`\nSelf time:\n${self.join("\n")}`);
  console.log(`\nInclusive time:\n${total.join("\n")}`);
  await sleep(100);
}

runMain(main);
