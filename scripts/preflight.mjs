/**
 * The deploy preflight (issue 16): everything that would make a deploy of keyway go half-wrong,
 * checked before wrangler uploads anything. `npm run deploy` and `npm run check:deploy`
 * (scripts/deploy.mjs) run it first; it also runs alone (`node scripts/preflight.mjs --env
 * production [--offline] [--config path]`). Offline checks read wrangler.toml with wrangler's own
 * parser and apply wrangler's environment rules (vars and bindings are not inherited by [env.*];
 * name, compatibility settings and [[migrations]] are): an environment must be named, keep every
 * binding and var of the top level, have real and unshared KV ids, queues whose producer has a
 * consumer with a dead-letter queue that is itself consumed, migrations creating every Durable
 * Object class as SQLite-backed, and vars the Worker accepts (mirroring src/config.ts, plus the
 * rules of a deployed environment: no insecure webhook targets, an https PUBLIC_BASE_URL in
 * production). Remote checks (skipped offline) ask wrangler for the Worker's secrets, the
 * account's KV namespaces and each queue. Every refusal names the exact command or the exact
 * wrangler.toml lines that fix it. The companion Workers the API Worker calls over service bindings
 * (COMPANIONS: the people's Worker, wrangler.people.toml; the GraphQL Worker, wrangler.graphql.toml)
 * are checked with it: each environment must bind the companion of the same environment, which
 * must exist as a section of its own. `--new-secrets FILE [NAME...]` writes fresh secrets in the
 * shapes of .dev.vars.example to a mode-600 file for `wrangler secret bulk`, never printing them.
 * Tests drive the remote checks with a stub: KEYWAY_WRANGLER names an executable used instead of
 * the pinned wrangler (or pass `runWrangler`). This file is the command line; the checks live in
 * scripts/preflight/ by section (config, values, offline, remote, run, secrets), re-exported here.
 */

import { resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { COMPANIONS } from "./preflight/config.mjs";
import { formatReport, passed, preflight } from "./preflight/run.mjs";
import { writeNewSecrets } from "./preflight/secrets.mjs";
import { assertSupportedNode } from "./wrangler.mjs";

export * from "./preflight/config.mjs";
export {
  checkBindingParity,
  checkCompanion,
  checkConfig,
  checkDatasets,
  checkDurableObjects,
  checkIsolation,
  checkKv,
  checkNameAndFlags,
  checkQueues,
  checkServing,
  checkVars,
  configFlag,
  error,
  q,
  unprovisioned,
  warning,
} from "./preflight/offline.mjs";
export { checkRemote, defaultRunWrangler, jsonArray, tail, wranglerEnv, wranglerInvocation } from "./preflight/remote.mjs";
export { formatReport, passed, preflight, preflightEveryEnvironment, readCompanions } from "./preflight/run.mjs";
export { writeNewSecrets } from "./preflight/secrets.mjs";
export { INTEGER_VARS, parseSchedule, placeholderHost, publicOrigin } from "./preflight/values.mjs";

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      env: { type: "string", short: "e" },
      config: { type: "string", short: "c" },
      ...Object.fromEntries(COMPANIONS.map((c) => [c.flag.slice(2), { type: /** @type {const} */ ("string") }])),
      offline: { type: "boolean", default: false },
      "new-secrets": { type: "string" },
    },
  });
  const file = values["new-secrets"];
  if (file !== undefined) {
    const written = await writeNewSecrets(file, positionals);
    console.log(`Wrote fresh ${written.join(", ")} to ${file} (owner-only; values not shown).`);
    return 0;
  }
  assertSupportedNode();
  const env = values.env ?? process.env.CLOUDFLARE_ENV;
  const offline = values.offline === true;
  const companionConfigs = Object.fromEntries(
    COMPANIONS.map((c) => [c.binding, /** @type {Record<string, unknown>} */ (values)[c.flag.slice(2)]?.toString()]),
  );
  const result = await preflight({ env, configPath: values.config, companionConfigs, offline });
  console.error(formatReport(result, { env, offline }));
  return passed(result) ? 0 : 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`preflight: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
