/**
 * `npm run bench:profile [scenario]`: a V8 CPU profile of the Worker inside workerd while
 * autocannon drives one scenario (token, protected_read, graphql_viewer or floor). It connects
 * to wrangler's inspector over the DevTools protocol, samples for the run, writes
 * bench/profile-<scenario>.cpuprofile (open it in Chrome DevTools) and prints the functions with
 * the most self time and the most inclusive time, so a hot path can be found without a browser.
 * The bundle is built unminified for readable names. PROFILE_HEAP=1 samples the isolate's
 * allocations instead (bytes per request by function).
 */
import { join } from "node:path";
import autocannon from "autocannon";
import { heapSampled, profiled, top, workerdInspector } from "./cdp.mjs";
import { CONNECTIONS, freePort, ROOT, runMain, scenarios, seed, sleep, startFloorWorker, startKeyway } from "./lib.mjs";

const scenario = process.argv[2] ?? "token";
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 5);

async function main() {
  const inspectorPort = await freePort();
  const args = ["--inspector-port", String(inspectorPort), "--minify", "false"];
  /** @type {import("./lib.mjs").Target | undefined} */
  let target;
  /** @type {{ port: number, target?: string }} */
  let inspector = { port: inspectorPort };
  if (scenario === "design_floor") {
    target = { url: `${(await startFloorWorker(args)).base}/` };
  } else {
    // PROFILE_CONFIG=<other tree>/wrangler.toml: that tree's API Worker (its companions this
    // tree's, as bench/side-by-side.mjs runs it), for a profile of the code before a change.
    const kw = await startKeyway(args, process.env.PROFILE_CONFIG ? { config: process.env.PROFILE_CONFIG } : {});
    // PROFILE_WORKERD=1: workerd's own inspector, the API Worker's isolate by name, for when
    // wrangler's inspector proxy hands an idle target (it did on 4 December).
    const pid = kw.server.worker?.[0];
    if (process.env.PROFILE_WORKERD === "1" && pid !== undefined)
      inspector = { port: await workerdInspector(pid, "core:user:keyway"), target: "core:user:keyway" };
    /** @type {Record<string, import("./lib.mjs").Target>} */
    const targets = scenarios(kw.base, await seed(kw.base));
    target = targets[scenario];
    if (!target) throw new Error(`unknown scenario ${scenario}; one of design_floor, ${Object.keys(targets).join(", ")}`);
  }

  const { prepare, ...options } = target;
  prepare?.();
  await autocannon({ ...options, connections: CONNECTIONS, duration: 2 }); // warm-up
  prepare?.();
  if (process.env.PROFILE_HEAP === "1") {
    // PROFILE_HEAP=1: the bytes each function allocates per request instead of the CPU profile.
    const { bytes, total, result } = await heapSampled(
      { inspectorPort: inspector.port, ...(inspector.target ? { target: inspector.target } : {}), intervalBytes: 512 },
      () => autocannon({ ...options, connections: CONNECTIONS, duration: SECONDS }),
    );
    const n = result.requests.total;
    console.log(
      `${scenario}: ${n} requests (${result.non2xx} non-2xx); ${(total / n / 1024).toFixed(1)} KiB allocated per request (sampled)`,
    );
    console.log(`\nBytes per request:\n${top(bytes, 30, (b) => `${(b / n).toFixed(0)} B`).join("\n")}`);
    await sleep(100);
    return;
  }
  const file = join(ROOT, `bench/profile-${scenario}.cpuprofile`);
  const intervalUs = Number(process.env.PROFILE_INTERVAL_US ?? 250);
  const { weighed, result } = await profiled(
    { inspectorPort: inspector.port, ...(inspector.target ? { target: inspector.target } : {}), intervalUs, file, bundle: "index.js" },
    () => autocannon({ ...options, connections: CONNECTIONS, duration: SECONDS }),
  );
  const { count, self, total, idle } = weighed;
  const ms = count / 1000;
  const busy = (ms * (1 - idle / count)) / result.requests.total;
  const share = (/** @type {number} */ us) => `${((100 * us) / count).toFixed(1)}%`;
  console.log(
    `${scenario}: ${result.requests.total} requests (${result.non2xx} non-2xx) in ${SECONDS} s; isolate thread sampled for ${ms.toFixed(0)} ms, ${(ms / result.requests.total).toFixed(3)} ms per request including idle, ${busy.toFixed(3)} ms busy (not idle); ${file}`,
  );
  console.log(`\nSelf time:\n${top(self, 30, share).join("\n")}`);
  console.log(`\nInclusive time:\n${top(total, 40, share).join("\n")}`);
  await sleep(100);
}

runMain(main);
