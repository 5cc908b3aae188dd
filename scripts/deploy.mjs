/**
 * `npm run deploy -- --env <staging|production>` and `npm run check:deploy [-- --env <...>]`: the
 * preflight (scripts/preflight.mjs) first, and wrangler only if it passes, so a deploy cannot
 * start half-configured. `--dry-run` (what check:deploy adds) runs the preflight offline (config
 * checks only; the ones that ask Cloudflare are skipped, and the report says so) and then
 * `wrangler deploy --dry-run --outdir dist`, which bundles and validates without uploading.
 * check:deploy with no environment checks every environment offline, listing provisioning steps
 * (KV ids, the public origin) as warnings, then bundles the top level: it passes on a fresh clone
 * and in CI. A real deploy runs the remote checks too (secrets, KV namespaces, queues) before
 * `wrangler deploy`, and needs an environment: the top level of wrangler.toml is the local
 * configuration (placeholder KV id, used by npm start and the tests). The environment comes from
 * `--env`/`-e`, else CLOUDFLARE_ENV (which wrangler itself honours); `--config`/`-c` picks
 * another wrangler.toml; every other argument goes to `wrangler deploy` unchanged. KEYWAY_WRANGLER
 * names an executable to run instead of the pinned wrangler (the tests' stub).
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";
import {
  DEFAULT_CONFIG,
  formatReport,
  passed,
  preflight,
  preflightEveryEnvironment,
  ROOT,
  wranglerEnv,
  wranglerInvocation,
} from "./preflight.mjs";
import { assertSupportedNode } from "./wrangler.mjs";

/**
 * Splits our arguments from wrangler's, accepting wrangler's spellings (`--env x`, `--env=x`, `-e x`).
 * @param {string[]} argv
 * @returns {{ dryRun: boolean, env: string | undefined, config: string | undefined, rest: string[] }}
 */
function parseDeployArgs(argv) {
  /** @type {{ dryRun: boolean, env: string | undefined, config: string | undefined, rest: string[] }} */
  const parsed = { dryRun: false, env: undefined, config: undefined, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const [flag, inline] =
      arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    if (flag === "--dry-run") parsed.dryRun = true;
    else if (flag === "--env" || flag === "-e") parsed.env = value();
    else if (flag === "--config" || flag === "-c") parsed.config = value();
    else parsed.rest.push(arg);
  }
  return parsed;
}

/**
 * `check:deploy` with no environment: every environment's offline checks (provisioning steps
 * left are warnings), then the top level's `wrangler deploy --dry-run`, which bundles the Worker
 * and validates its bindings without an account. What CI and a fresh clone can check.
 * @param {string} configPath
 * @param {string[]} rest
 */
function checkRepository(configPath, rest) {
  return preflightEveryEnvironment({ configPath }).then((reports) => {
    for (const { env, result } of reports) console.error(formatReport(result, { env, offline: true }));
    if (!reports.every(({ result }) => passed(result))) return 1;
    // `--env=` names the top level, which wrangler otherwise warns is ambiguous.
    return runWrangler(["deploy", "--env=", "--config", configPath, "--dry-run", "--outdir", "dist", ...rest]);
  });
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
  if (args.dryRun && env === undefined) return checkRepository(configPath, args.rest);
  const result = await preflight({ env, configPath, offline: args.dryRun });
  console.error(formatReport(result, { env, offline: args.dryRun }));
  if (!passed(result) || env === undefined) return 1;

  return runWrangler([
    "deploy",
    "--env",
    env,
    "--config",
    configPath,
    ...(args.dryRun ? ["--dry-run", "--outdir", "dist"] : []),
    ...args.rest,
  ]);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`deploy: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
