/**
 * `npm run deploy -- --env <staging|production>` and `npm run check:deploy [-- --env <...>]`: the
 * preflight (scripts/preflight.mjs) first, and wrangler only if it passes, so a deploy cannot
 * start half-configured. `--dry-run` (what check:deploy adds) runs the preflight offline (config
 * checks only; the ones that ask Cloudflare are skipped, and the report says so) and then
 * `wrangler deploy --dry-run`, which bundles and validates without uploading (into dist/<worker>).
 * keyway is three Workers, deployed in this order: the GraphQL Worker (wrangler.graphql.toml), which
 * the API Worker only calls, first, because a service binding to a Worker that does not exist is
 * refused; the API Worker (wrangler.toml), built by scripts/build/api.mjs (its bundle without the
 * text that only describes the API) and uploaded with `--no-bundle`, so the size a dry run prints
 * is the size deployed; then the people's Worker (wrangler.people.toml), whose Durable Object
 * bindings name the API Worker's classes, which must exist first (preflight.mjs COMPANIONS,
 * `shares`). If a later upload fails, the earlier ones are harmless: the
 * running API Worker calls companions of the release it is about to get, which docs/deploy.md's
 * "The companions' contract" keeps compatible with it ("Three Workers" says why three, "Rolling out
 * a release" what this runs, "Rolling back" how to undo it Worker by Worker).
 * check:deploy with no environment checks every environment offline, listing provisioning steps
 * (KV ids, the public origin) as warnings, then bundles the top level: it passes on a fresh clone
 * and in CI. A real deploy runs the remote checks too (secrets, KV namespaces, queues) before
 * `wrangler deploy`, and needs an environment: the top level of wrangler.toml is the local
 * configuration (placeholder KV id, used by npm start and the tests). The environment comes from
 * `--env`/`-e`, else CLOUDFLARE_ENV (which wrangler itself honours); `--config`/`-c` picks
 * another wrangler.toml, `--people-config` and `--graphql-config` another configuration for a companion;
 * every other argument goes to the API Worker's `wrangler deploy` unchanged. KEYWAY_WRANGLER
 * names an executable to run instead of the pinned wrangler (the tests' stub).
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";
import { buildApi } from "./build/api.mjs";
import {
  COMPANIONS,
  companionPaths,
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

/** @typedef {{ dryRun: boolean, env: string | undefined, config: string | undefined, companions: Record<string, string | undefined>, rest: string[] }} DeployArgs */

/**
 * Splits our arguments from wrangler's, accepting wrangler's spellings (`--env x`, `--env=x`, `-e x`).
 * @param {string[]} argv
 * @returns {DeployArgs}
 */
function parseDeployArgs(argv) {
  /** @type {DeployArgs} */
  const parsed = { dryRun: false, env: undefined, config: undefined, companions: {}, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const [flag, inline] =
      arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    const companion = COMPANIONS.find((c) => c.flag === flag);
    if (flag === "--dry-run") parsed.dryRun = true;
    else if (flag === "--env" || flag === "-e") parsed.env = value();
    else if (flag === "--config" || flag === "-c") parsed.config = value();
    else if (companion !== undefined) parsed.companions[companion.binding] = value();
    else parsed.rest.push(arg);
  }
  return parsed;
}

/**
 * `check:deploy` with no environment: every environment's offline checks (provisioning steps
 * left are warnings), then the top level's `wrangler deploy --dry-run` of every Worker, which
 * bundles each and validates its bindings without an account. What CI and a fresh clone can check.
 * @param {string} configPath
 * @param {Record<string, string>} companions configuration paths, by binding
 * @param {string[]} rest
 */
function checkRepository(configPath, companions, rest) {
  return preflightEveryEnvironment({ configPath, companionConfigs: companions }).then((reports) => {
    for (const { env, result } of reports) console.error(formatReport(result, { env, offline: true }));
    if (!reports.every(({ result }) => passed(result))) return 1;
    // `--env=` names the top level, which wrangler otherwise warns is ambiguous.
    return deployAll(["--env="], configPath, companions, ["--dry-run"], rest);
  });
}

/**
 * The companions, in order, then (only if they all went up) the API Worker whose bindings need them.
 * @param {string[]} envArgs
 * @param {string} configPath
 * @param {Record<string, string>} companions configuration paths, by binding
 * @param {string[]} dryRun `["--dry-run"]` or nothing
 * @param {string[]} rest the API Worker's extra `wrangler deploy` arguments
 */
async function deployAll(envArgs, configPath, companions, dryRun, rest) {
  const out = (/** @type {string} */ dir) => (dryRun.length > 0 ? ["--outdir", `dist/${dir}`] : []);
  const deployCompanion = (/** @type {import("./preflight/config.mjs").Companion} */ companion) =>
    runWrangler(["deploy", ...envArgs, "--config", companions[companion.binding] ?? companion.file, ...dryRun, ...out(companion.dist)]);
  // Before the API Worker: the companions it only calls (their Workers must exist for its bindings).
  for (const companion of COMPANIONS.filter((c) => !c.shares)) {
    const code = deployCompanion(companion);
    if (code !== 0) {
      console.error(`\nThe ${companion.role} was not deployed, so the API Worker was not either.`);
      return code;
    }
  }
  const built = await buildApi();
  console.error(`\nAPI Worker built into ${built.main} (${built.removed} doc fields left out, scripts/build/api.mjs).`);
  // Already bundled and minified: wrangler uploads it as it is.
  const api = runWrangler([
    "deploy",
    built.main,
    "--no-bundle",
    "--no-minify",
    ...envArgs,
    "--config",
    configPath,
    ...dryRun,
    ...out("api"),
    ...rest,
  ]);
  if (api !== 0) return api;
  // After it: the companions that bind its Durable Object classes (`script_name`), which must exist
  // first (a class added by this release does only once the API Worker is up). Its PEOPLE binding
  // needs the people's Worker to exist already: from the release before, or on a first deploy as
  // the placeholder its secrets created (docs/deploy.md, "First production deploy").
  for (const companion of COMPANIONS.filter((c) => c.shares)) {
    const code = deployCompanion(companion);
    if (code !== 0) {
      console.error(
        `\nThe ${companion.role} was not deployed; the API Worker was, and serves people's pages from the ${companion.role}'s previous release meanwhile (docs/deploy.md, "The companions' contract"). Run the command again.`,
      );
      return code;
    }
  }
  return 0;
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
  const companions = companionPaths(args.companions);
  if (args.dryRun && env === undefined) return checkRepository(configPath, companions, args.rest);
  const result = await preflight({ env, configPath, companionConfigs: companions, offline: args.dryRun });
  console.error(formatReport(result, { env, offline: args.dryRun }));
  if (!passed(result) || env === undefined) return 1;

  return deployAll(["--env", env], configPath, companions, args.dryRun ? ["--dry-run"] : [], args.rest);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`deploy: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
