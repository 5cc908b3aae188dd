/**
 * A vitest reporter beside the default one (vitest.config.ts): at the end of a run it writes each
 * file's project, time and test counts to test-results/timings-<run>.json (`KEYWAY_TIMINGS_RUN`,
 * one per vitest process that `npm test` starts: scripts/test.mjs) and prints the ten slowest
 * files, so the next slow file is seen in the run that added it. `npm run test:slowest` reads the
 * files of the last run again (scripts/slowest.mjs). A file's time is from its environment's setup
 * to its last hook (ModuleDiagnostic: setup, collect and every test and hook).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Reporter, TestModule } from "vitest/node";
import { slowestLines } from "../../scripts/slowest.mjs";

type FileTiming = Parameters<typeof slowestLines>[0][number];

export default class TimingsReporter implements Reporter {
  private root = process.cwd();

  onInit(vitest: { config: { root: string } }): void {
    this.root = vitest.config.root;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const files: FileTiming[] = testModules.map((module) => {
      const d = module.diagnostic();
      const counts = { passed: 0, failed: 0, skipped: 0 };
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") counts.passed++;
        else if (state === "failed") counts.failed++;
        else counts.skipped++;
      }
      const seconds = (d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration) / 1000;
      return { project: module.project.name, file: module.moduleId.replace(`${this.root}/`, ""), seconds, ...counts };
    });
    if (files.length === 0) return;
    const dir = join(this.root, "test-results");
    mkdirSync(dir, { recursive: true });
    const run = process.env.KEYWAY_TIMINGS_RUN || "vitest";
    writeFileSync(join(dir, `timings-${run}.json`), `${JSON.stringify({ run, at: new Date().toISOString(), files }, null, 2)}\n`);
    console.log(`\nThe ten slowest files of this run (${run}):\n${slowestLines(files).join("\n")}`);
  }
}
