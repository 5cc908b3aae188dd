/**
 * `npm test`: every tier of the suite (docs/testing.md, "Tiers"), arranged for a two-core machine
 * so that it finishes in minutes. The tiers run in three lanes side by side, since one lane alone
 * leaves a core idle: the e2e and browser tiers wait on servers and browsers most of the time,
 * the others keep a core busy, and the type check is one thread that need not wait for anything.
 *
 *   lane "runtime": one vitest run of the unit, node and workers tiers
 *   lane "checks":  lint, then the type check (tsc, both configs), beside the runtime lane instead
 *                   of before it: one loaded run spent 164 s there while the vitest run waited
 *   lane "e2e":     one vitest run of the pipeline, e2e and browser tiers (real Queues and retry
 *                   schedules; one shared npm start and one Chromium), the browser files after
 *                   the others (vitest.config.ts, sequence.groupOrder)
 *
 * Then, alone, lane "quiet": the scenarios whose claim is a latency (test/e2e/*.quiet.test.ts),
 * on their own npm start once every other lane has ended. Measured beside the lanes above, they
 * measured the machine: one CI run saw a first delivery's median at 2.8 s.
 *
 * Each lane's lines are printed as they come, prefixed with the lane's name; at the end, a table of
 * the tiers (result, tests, time) and the ten slowest files of the whole run (test/reporters/
 * timings.ts; `npm run test:slowest` prints them again). Every tier runs even when another has
 * failed, so one run reports everything; the exit status is non-zero if any did. Each tier also has
 * its own script (`npm run test:<tier>`), for the inner loop.
 *
 * KEYWAY_TEST_LANES=runtime (or checks, e2e, quiet; or a comma-separated list) runs those lanes only.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS = join(ROOT, "test-results");
const VITEST = join(ROOT, "node_modules", "vitest", "vitest.mjs");

/**
 * @typedef {{ name: string, projects?: string[], command?: string[] }} Step
 * @typedef {{ name: string, steps: Step[] }} Lane
 * @typedef {{ project: string, file: string, seconds: number, passed: number, failed: number, skipped: number }} FileTiming
 */

/** @type {Lane[]} */
const LANES = [
  {
    name: "runtime",
    steps: [{ name: "runtime", projects: ["unit", "node", "workers"] }],
  },
  {
    name: "checks",
    steps: [
      { name: "lint", command: ["npm", "run", "--silent", "lint"] },
      { name: "types", command: ["npm", "run", "--silent", "typecheck"] },
    ],
  },
  { name: "e2e", steps: [{ name: "e2e", projects: ["pipeline", "e2e", "browser"] }] },
];

/** @type {Lane[]} the lanes that run after the others have ended, one after another */
const AFTER = [{ name: "quiet", steps: [{ name: "quiet", projects: ["quiet"] }] }];

/** The tiers in the order the table lists them, with the step that runs each. */
const TIERS = ["lint", "types", "unit", "workers", "pipeline", "node", "e2e", "browser", "quiet"];

const started = Date.now();
/** @param {number} ms */
const seconds = (ms) => (ms / 1000).toFixed(1);

/**
 * Runs one command, its output prefixed line by line.
 * @param {string} prefix
 * @param {string[]} argv
 * @param {Record<string, string>} env
 * @returns {Promise<number>} the exit code
 */
function run(prefix, argv, env = {}) {
  return new Promise((resolve) => {
    const [bin = "", ...args] = argv;
    const child = spawn(bin, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    for (const stream of [child.stdout, child.stderr]) {
      let rest = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk) => {
        const lines = (rest + chunk).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) process.stdout.write(`${prefix} ${line}\n`);
      });
      stream.on("end", () => {
        if (rest !== "") process.stdout.write(`${prefix} ${rest}\n`);
      });
    }
    child.on("error", (err) => {
      process.stdout.write(`${prefix} could not start ${bin}: ${err.message}\n`);
      resolve(1);
    });
    child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** @type {Map<string, { code: number, ms: number }>} */
const outcomes = new Map();

/** @param {Lane} lane */
async function runLane(lane) {
  const prefix = `[${lane.name}]`.padEnd(10);
  for (const step of lane.steps) {
    const at = Date.now();
    const argv = step.projects
      ? [process.execPath, VITEST, "run", ...step.projects.flatMap((p) => ["--project", p])]
      : (step.command ?? []);
    const code = await run(prefix, argv, { KEYWAY_TIMINGS_RUN: step.name });
    const ms = Date.now() - at;
    for (const tier of step.projects ?? [step.name]) outcomes.set(tier, { code, ms });
    process.stdout.write(`${prefix} ${step.name}: ${code === 0 ? "passed" : `failed (exit ${code})`} in ${seconds(ms)} s\n`);
  }
}

/** @returns {Promise<FileTiming[]>} the files of this run, from each vitest run's timings */
async function timings() {
  /** @type {FileTiming[]} */
  const files = [];
  for (const lane of [...LANES, ...AFTER]) {
    for (const step of lane.steps) {
      const path = join(RESULTS, `timings-${step.name}.json`);
      if (step.projects && existsSync(path)) files.push(...JSON.parse(await readFile(path, "utf8")).files);
    }
  }
  return files;
}

async function main() {
  const only = process.env.KEYWAY_TEST_LANES?.split(",").filter(Boolean);
  const chosen = (/** @type {Lane[]} */ list) => (only ? list.filter((l) => only.includes(l.name)) : list);
  const [lanes, after] = [chosen(LANES), chosen(AFTER)];
  await mkdir(RESULTS, { recursive: true });
  for (const lane of [...lanes, ...after]) {
    for (const step of lane.steps) await rm(join(RESULTS, `timings-${step.name}.json`), { force: true });
  }

  await Promise.all(lanes.map(runLane));
  for (const lane of after) await runLane(lane);

  const files = await timings();
  await writeFile(join(RESULTS, "timings.json"), `${JSON.stringify({ at: new Date().toISOString(), files }, null, 2)}\n`);
  const { slowestLines } = await import("./slowest.mjs");
  const rows = TIERS.filter((tier) => outcomes.has(tier)).map((tier) => {
    const outcome = outcomes.get(tier) ?? { code: 1, ms: 0 };
    const mine = files.filter((f) => f.project === tier);
    /** @param {"passed" | "failed" | "skipped"} key */
    const count = (key) => mine.reduce((n, f) => n + f[key], 0);
    const tests =
      mine.length > 0 ? `${count("passed")} passed, ${count("failed")} failed, ${count("skipped")} skipped in ${mine.length} files` : "";
    const failed = mine.length > 0 ? count("failed") > 0 || (outcome.code !== 0 && count("passed") === 0) : outcome.code !== 0;
    const time = mine.length > 0 ? `${seconds(mine.reduce((n, f) => n + f.seconds * 1000, 0))} s of files` : `${seconds(outcome.ms)} s`;
    return `  ${tier.padEnd(9)} ${failed ? "FAILED" : "passed"}  ${time.padEnd(20)} ${tests}`;
  });
  const codes = [...outcomes.values()].map((o) => o.code);
  const ok = codes.length > 0 && codes.every((c) => c === 0);
  console.log(`\nTiers (docs/testing.md):\n${rows.join("\n")}`);
  console.log(`\nThe ten slowest files:\n${slowestLines(files).join("\n")}`);
  console.log(`\nnpm test ${ok ? "passed" : "FAILED"} in ${seconds(Date.now() - started)} s.`);
  process.exitCode = ok ? 0 : 1;
}

await main();
