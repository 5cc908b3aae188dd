/**
 * Mutation testing of the pure cores (docs/testing.md, "Mutation testing"): `npm run
 * test:mutation`, not part of `npm test`. StrykerJS changes one operator, condition or constant
 * at a time in the files of `mutate` and runs the unit tests that cover it (the unit tier in Node,
 * vitest.mutation.config.ts); a change no test notices survives, and the report lists it.
 *
 * Incremental: the results of the last run are kept in reports/mutation/ (gitignored), and a
 * mutant whose code and covering tests did not change is not run again; `--force` runs them all.
 * One file: `npm run test:mutation -- --mutate src/ratelimit/lease.ts`.
 */

// The unit tier's properties (test/unit/admission-properties.test.ts) make 400 runs each in `npm
// test`, about 40 s for the file; a mutant that survives runs them all. Here they make 50, from one
// fixed seed, so a run of the file is about 4 s and a run's survivors are the same from run to run.
// Either variable set in the shell wins.
process.env.KEYWAY_PROPERTY_RUNS ??= "50";
process.env.KEYWAY_PROPERTY_SEED ??= "20261202";

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  plugins: ["@stryker-mutator/vitest-runner"],
  vitest: { configFile: "vitest.mutation.config.ts" },
  mutate: [
    "src/ratelimit/**/*.ts",
    // The proof store's placement (objects/proofs.ts is the ProofObject's shell, which needs workerd).
    "src/objects/proof-place.ts",
    // The polling cursor and the read's rules (objects/endpoints/polling.ts).
    "src/objects/endpoints/polling.ts",
    // The objects' shells (the key's, the quota's and the proof store's logic over a SQL storage),
    // which the admission properties run over node:sqlite (test/unit/admission-world.ts).
    "src/objects/shells/**/*.ts",
  ],
  coverageAnalysis: "perTest",
  // Two cores: one vitest worker per Stryker process, two processes.
  concurrency: 2,
  incremental: true,
  incrementalFile: "reports/mutation/stryker-incremental.json",
  thresholds: { high: 85, low: 70, break: null },
  reporters: ["clear-text", "progress", "json", "html"],
  clearTextReporter: { allowColor: false, logTests: false },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  tempDirName: ".stryker-tmp",
  // The sandbox copies the project but these, which no unit test reads.
  ignorePatterns: ["test-results", "bench/out", "docs", "examples", ".wrangler", "reports"],
};
