/**
 * `npm run test:slowest`: the ten slowest test files of the last run, read from what the timings
 * reporter wrote (test/reporters/timings.ts): test-results/timings.json after `npm test`, or the
 * timings-<run>.json a single vitest run wrote after it, whichever is newer. `slowestLines` is the one way both print them.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** @typedef {{ project: string, file: string, seconds: number, passed: number, failed: number, skipped: number }} FileTiming */

/**
 * The `count` slowest of `files`, as lines for a terminal.
 * @param {FileTiming[]} files
 * @param {number} [count]
 * @returns {string[]}
 */
export function slowestLines(files, count = 10) {
  const rows = [...files].sort((a, b) => b.seconds - a.seconds).slice(0, count);
  return rows.map(
    (f) => `${f.seconds.toFixed(1).padStart(7)} s  ${f.project.padEnd(9)} ${f.file} (${f.passed + f.failed + f.skipped} tests)`,
  );
}

async function main() {
  const dir = join(fileURLToPath(new URL("..", import.meta.url)), "test-results");
  /** @type {string[]} */
  const names = await readdir(dir).catch(() => []);
  // The last run's: npm test's merged timings.json, or the file a single vitest run wrote after it.
  const written = await Promise.all(
    names.filter((n) => /^timings(-.+)?\.json$/.test(n)).map(async (n) => ({ n, at: (await stat(join(dir, n))).mtimeMs })),
  );
  const chosen = written
    .sort((a, b) => b.at - a.at)
    .slice(0, 1)
    .map((w) => w.n);
  if (chosen.length === 0) {
    console.error("No timings yet: run npm test (or any vitest run) first; they are written to test-results/.");
    process.exitCode = 1;
    return;
  }
  /** @type {FileTiming[]} */
  const files = [];
  for (const name of chosen) files.push(...JSON.parse(await readFile(join(dir, name), "utf8")).files);
  console.log(`The ten slowest files (${chosen.join(", ")}):\n${slowestLines(files).join("\n")}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
