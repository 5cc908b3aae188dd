/**
 * The tiers of docs/testing.md as vitest projects. "unit": the pure cores in Node, in seconds.
 * "workers": the suite proper, inside workerd through @cloudflare/vitest-plugin with the bindings
 * of wrangler.toml (real KV, Durable Objects and Queues; one runtime per workerd process for all
 * the files it runs, each test owning its data); secrets get fixed test values so it never depends
 * on a developer's .dev.vars. "pipeline": the same runtime with the webhook Queue consumed for
 * real, for end-to-end delivery, retries and recovery. "node": Node-only tools. "e2e" and
 * "browser": Node tests against the real `npm start` (wrangler dev) over HTTP, the browser ones in
 * Chromium.
 */
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdefghijklmnopqrstuv";
// kid "t1": 32 bytes of 0x01 (signs); "t0": 32 bytes of 0x02 (a retired key that still verifies).
const TEST_SIGNING_KEYS = "t1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE,t0:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI";
// "e2" encrypts (32 bytes of 0x03); "e1" (0x04) is a retired key that still decrypts.
const TEST_ENCRYPTION_KEYS = "e2:AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM,e1:BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ";

const secrets = {
  ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS,
  WEBHOOK_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
};

/**
 * The workerd tier's property tests' knobs (receiver-holds-properties, federated-clients): the pool's
 * `process.env` is not the shell's, so a longer search or a replay is handed over as bindings,
 * empty when not set. The unit tier's properties read the shell's variables themselves.
 */
const propertyKnobs = {
  KEYWAY_PROPERTY_RUNS: process.env.KEYWAY_PROPERTY_RUNS ?? "",
  KEYWAY_PROPERTY_SEED: process.env.KEYWAY_PROPERTY_SEED ?? "",
  KEYWAY_PROPERTY_PATH: process.env.KEYWAY_PROPERTY_PATH ?? "",
};

/**
 * PEOPLE and GRAPHQL name the companion Workers (wrangler.toml); here they are the test Worker's own
 * People and GraphQLEngine entrypoints (test/worker.ts). A binding to the config's own name
 * is rewritten by the plugin to the test Worker.
 */
const companionsInProcess = {
  PEOPLE: { name: "keyway", entrypoint: "People" },
  GRAPHQL: { name: "keyway", entrypoint: "GraphQLEngine" },
};

/**
 * Every request logs one outcome line (docs/observability.md): thousands in a run, which would
 * bury the lines a failing test prints. They stay visible to the tests that assert them (those
 * spy on console); only the reporter's copy is dropped.
 */
const quietOutcomeLines = (log: string): false | undefined => (log.includes('"msg":"request"') ? false : undefined);

/**
 * How many files run at once (docs/testing.md, "How npm test runs the tiers"), for a two-core
 * machine. The tiers that keep a core busy (unit, node, workers) run two at a time: each workers
 * file runs in one of two workerd processes reused from file to file (three were 4 % faster alone
 * and 9 % dearer in CPU, which the other lane needs). The tiers that mostly wait (pipeline's retry
 * schedules, the e2e files on one shared npm start) run eight at a time: the e2e lane of a run
 * uses about half a core, and four at a time left it 399 s where eight take 330 s. The browser
 * files run three at a time, after them (four at once made each wait longer for the CPU, and a
 * waiting page keeps polling: 140 s and 270 CPU-seconds where two at a time took 102 s and 178;
 * three take 532 s of files where two took 382, in less time overall). `npm
 * test` (scripts/test.mjs) runs the busy and the waiting tiers side by side; a plain `vitest run`
 * runs the groups one after another (sequence.groupOrder), since a group's projects share one limit.
 */
const BUSY = { maxWorkers: 2, sequence: { groupOrder: 1 } };
const WAITING = { maxWorkers: 8, sequence: { groupOrder: 2 } };
const BROWSER = { maxWorkers: 3, sequence: { groupOrder: 3 } };

export default defineConfig({
  test: {
    onConsoleLog: quietOutcomeLines,
    // The default reporter, and each file's time (the ten slowest printed, test-results/timings-*.json).
    reporters: ["default", "./test/reporters/timings.ts"],
    projects: [
      {
        // The pure cores (admission, leases, the SSRF guard, JSON Schema checks, encodings, the
        // polling cursor, signatures, the schemas) in Node: seconds, the inner loop while changing
        // them. What workerd has and Node lacks is given by test/setup/unit.ts.
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
          setupFiles: ["./test/setup/unit.ts"],
          ...BUSY,
          // A deadline for a hang (docs/testing.md, "When a test times out"): a test of 50 validations
          // of 100 KiB took over vitest's 5 s beside the rest of a full run.
          testTimeout: 30_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            main: "./test/worker.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: { ...secrets, ...propertyKnobs },
              serviceBindings: companionsInProcess,
              // Messages the objects send go to a real Queue nobody consumes, so each test drives
              // the consumer itself, message by message, with no background delivery racing it.
              // The real Queue -> consumer path runs in the "pipeline" project below.
              queueProducers: {
                WEBHOOK_QUEUE: { queueName: "keyway-webhooks-held" },
                WEBHOOK_QUEUE_NEW: { queueName: "keyway-webhooks-held" },
                WEBHOOK_QUEUE_SLOW: { queueName: "keyway-webhooks-held" },
              },
            },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts"],
          exclude: ["test/unit/**", "test/e2e/**", "test/pipeline/**", "test/catalog.test.ts", "test/oidc-receiver.test.ts"],
          setupFiles: ["./test/setup/workers.ts"],
          // One runtime per workerd process for every file it runs, not one per file: the tests
          // own their data (docs/testing.md, "Tests own their data").
          isolate: false,
          fsModuleCache: false,
          ...BUSY,
          testTimeout: 20_000,
          hookTimeout: 20_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            main: "./test/worker.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              serviceBindings: companionsInProcess,
              // The real Queue and its consumer, with a retry schedule and a recovery bound of
              // seconds so that retries and recovery can be watched end to end.
              bindings: { ...secrets, WEBHOOK_RETRY_SCHEDULE: "1s,1s", WEBHOOK_REDISPATCH_SECONDS: "1", WEBHOOK_TIMEOUT_SECONDS: "5" },
            },
          }),
        ],
        test: {
          name: "pipeline",
          include: ["test/pipeline/**/*.test.ts"],
          setupFiles: ["./test/setup/workers.ts"],
          ...WAITING,
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        // Node-only tools: the OpenAPI parser (compiles with new Function) and issue 31's receiver
        // harness (node-oidc-provider and node:http, test/e2e/oidc-receiver.ts).
        test: { name: "node", include: ["test/catalog.test.ts", "test/oidc-receiver.test.ts"], environment: "node", ...BUSY },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: ["test/e2e/**/*.browser.test.ts", "test/e2e/**/*.quiet.test.ts"],
          environment: "node",
          // One Node process per worker for every file it runs (no file changes what another reads).
          isolate: false,
          ...WAITING,
          // A deadline for a hang, not a speed check: a two-core CI machine shared by both lanes has
          // taken 120 s for a test that takes 40 s alone (docs/testing.md, "When a test times out").
          testTimeout: 300_000,
          hookTimeout: 300_000,
          // One npm start for every file that does not need its own (test/e2e/global-setup.ts).
          globalSetup: ["./test/e2e/global-setup.ts"],
        },
      },
      {
        test: {
          name: "browser",
          include: ["test/e2e/**/*.browser.test.ts"],
          environment: "node",
          isolate: false,
          ...BROWSER,
          // A deadline for a hang, not a speed check: a two-core CI machine shared by both lanes has
          // taken 120 s for a test that takes 40 s alone (docs/testing.md, "When a test times out").
          testTimeout: 300_000,
          hookTimeout: 300_000,
          // The same npm start as the e2e project's, and one Chromium for every file.
          globalSetup: ["./test/e2e/global-setup.ts"],
        },
      },
      {
        // The scenarios whose claim is a latency, measured against a real npm start
        // (docs/testing.md, "The quiet tier"): `npm test` runs this project after every other tier
        // has ended, one file at a time, so the figures are keyway's and not those of a two-core
        // machine busy with a hundred other files.
        test: {
          name: "quiet",
          include: ["test/e2e/**/*.quiet.test.ts"],
          environment: "node",
          maxWorkers: 1,
          sequence: { groupOrder: 4 },
          testTimeout: 300_000,
          hookTimeout: 300_000,
          globalSetup: ["./test/e2e/global-setup.ts"],
        },
      },
    ],
  },
});
