/**
 * `npm run deploy -- --env <staging|production>` and `npm run check:deploy [-- --env <...>]`: the
 * preflight (scripts/preflight.mjs) first, and wrangler only if it passes, so a deploy cannot
 * start half-configured. `--dry-run` (what check:deploy adds) runs the preflight offline (config
 * checks only; the ones that ask Cloudflare are skipped, and the report says so) and then
 * `wrangler deploy --dry-run`, which bundles and validates without uploading (into dist/docs and
 * dist/api). keyway is two Workers: the description Worker (wrangler.docs.toml, keyway-docs) goes
 * first, because the API Worker's DOCS service binding to it is refused while it does not exist;
 * the API Worker (wrangler.toml) second. If the second upload fails, the first is harmless: the
 * running API Worker serves a description of the code it is about to get.
 * check:deploy with no environment checks every environment offline, listing provisioning steps
 * (KV ids, the public origin) as warnings, then bundles the top level: it passes on a fresh clone
 * and in CI. A real deploy runs the remote checks too (secrets, KV namespaces, queues) before
 * `wrangler deploy`, and needs an environment: the top level of wrangler.toml is the local
 * configuration (placeholder KV id, used by npm start and the tests). The environment comes from
 * `--env`/`-e`, else CLOUDFLARE_ENV (which wrangler itself honours); `--config`/`-c` picks
 * another wrangler.toml and `--docs-config` another wrangler.docs.toml; every other argument goes
 * to the API Worker's `wrangler deploy` unchanged. KEYWAY_WRANGLER
 * names an executable to run instead of the pinned wrangler (the tests' stub).
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";
import {
  DEFAULT_CONFIG,
  DEFAULT_DOCS_CONFIG,
  formatReport,
  passed,
  preflight,
  preflightEveryEnvironment,
  ROOT,
  wranglerEnv,
  wranglerInvocation,
} from "./preflight.mjs";
import { assertSupportedNode } from "./wrangler.mjs";

/** @typedef {{ dryRun: boolean, env: string | undefined, config: string | undefined, docsConfig: string | undefined, rest: string[] }} DeployArgs */

/**
 * Splits our arguments from wrangler's, accepting wrangler's spellings (`--env x`, `--env=x`, `-e x`).
 * @param {string[]} argv
 * @returns {DeployArgs}
 */
function parseDeployArgs(argv) {
  /** @type {DeployArgs} */
  const parsed = { dryRun: false, env: undefined, config: undefined, docsConfig: undefined, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const [flag, inline] =
      arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    if (flag === "--dry-run") parsed.dryRun = true;
    else if (flag === "--env" || flag === "-e") parsed.env = value();
    else if (flag === "--config" || flag === "-c") parsed.config = value();
    else if (flag === "--docs-config") parsed.docsConfig = value();
    else parsed.rest.push(arg);
  }
  return parsed;
}

/**
 * `check:deploy` with no environment: every environment's offline checks (provisioning steps
 * left are warnings), then the top level's `wrangler deploy --dry-run` of both Workers, which
 * bundles each and validates its bindings without an account. What CI and a fresh clone can check.
 * @param {string} configPath
 * @param {string} docsConfigPath
 * @param {string[]} rest
 */
function checkRepository(configPath, docsConfigPath, rest) {
  return preflightEveryEnvironment({ configPath, docsConfigPath }).then((reports) => {
    for (const { env, result } of reports) console.error(formatReport(result, { env, offline: true }));
    if (!reports.every(({ result }) => passed(result))) return 1;
    // `--env=` names the top level, which wrangler otherwise warns is ambiguous.
    return deployBoth(["--env="], configPath, docsConfigPath, ["--dry-run"], rest);
  });
}

/**
 * The description Worker, then (only if it went up) the API Worker whose binding needs it.
 * @param {string[]} envArgs
 * @param {string} configPath
 * @param {string} docsConfigPath
 * @param {string[]} dryRun `["--dry-run"]` or nothing
 * @param {string[]} rest the API Worker's extra `wrangler deploy` arguments
 */
function deployBoth(envArgs, configPath, docsConfigPath, dryRun, rest) {
  const out = (/** @type {string} */ dir) => (dryRun.length > 0 ? ["--outdir", dir] : []);
  const docs = runWrangler(["deploy", ...envArgs, "--config", docsConfigPath, ...dryRun, ...out("dist/docs")]);
  if (docs !== 0) {
    console.error("\nThe description Worker was not deployed, so the API Worker was not either.");
    return docs;
  }
  return runWrangler(["deploy", ...envArgs, "--config", configPath, ...dryRun, ...out("dist/api"), ...rest]);
}

/** @param {string[]} args */
function runWrangler(args) {
  console.error(`\nwrangler ${args.join(" ")}\n`);
  const [bin, argv] = wranglerInvocation(args);
  const run = spawnSync(bin, argv, { cwd: ROOT, stdio: "inherit", env: wranglerEnv() });
  if (run.error) throw new Error(`could not run wrangler: ${run.error.message}`);
  return run.status ?? 1;
}

async function main() {
  assertSupportedNode();
  const args = parseDeployArgs(process.argv.slice(2));
  const env = args.env ?? process.env.CLOUDFLARE_ENV;
  const configPath = resolve(args.config ?? DEFAULT_CONFIG);
  const docsConfigPath = resolve(args.docsConfig ?? DEFAULT_DOCS_CONFIG);
  if (args.dryRun && env === undefined) return checkRepository(configPath, docsConfigPath, args.rest);
  const result = await preflight({ env, configPath, docsConfigPath, offline: args.dryRun });
  console.error(formatReport(result, { env, offline: args.dryRun }));
  if (!passed(result) || env === undefined) return 1;

  return deployBoth(["--env", env], configPath, docsConfigPath, args.dryRun ? ["--dry-run"] : [], args.rest);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`deploy: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
