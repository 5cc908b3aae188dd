/**
 * The whole preflight: the offline checks of an environment and its companions, then the remote
 * ones, every environment at once for check:deploy, and the report a person reads.
 */
import { join, resolve } from "node:path";
import {
  COMPANIONS,
  companionPaths,
  DEFAULT_CONFIG,
  environmentNames,
  environmentView,
  REMOTE_CHECKS,
  ROOT,
  readWranglerConfig,
  secretTemplates,
} from "./config.mjs";
import { checkConfig } from "./offline.mjs";
import { checkRemote, defaultRunWrangler } from "./remote.mjs";
/** @typedef {import("./config.mjs").Finding} Finding */
/** @typedef {import("./config.mjs").PreflightOptions} PreflightOptions */
/** @typedef {import("./config.mjs").PreflightResult} PreflightResult */

// ---------------------------------------------------------------------------------------------
// The whole preflight
// ---------------------------------------------------------------------------------------------

/**
 * Refuses a missing environment (the top level is local-only: placeholder KV id, `npm start`'s
 * settings), then runs the offline checks and, unless offline, the remote ones.
 * @param {PreflightOptions} options
 * @returns {Promise<PreflightResult>}
 */
export async function preflight(options) {
  const configPath = resolve(options.configPath ?? DEFAULT_CONFIG);
  const root = options.root ?? ROOT;
  const envName = options.env;
  if (envName === undefined || envName === "") {
    return {
      findings: [
        {
          level: "error",
          message:
            "No environment given. The top level of wrangler.toml is the local configuration (npm start and the tests, with a placeholder KV id); it is never deployed.",
          fix: "npm run deploy -- --env staging\nnpm run deploy -- --env production",
        },
      ],
      skipped: [],
    };
  }
  const raw = await readWranglerConfig(configPath);
  const companions = await readCompanions(options.companionConfigs);
  const findings = checkConfig(raw, envName, { configPath, root, companions });
  if (!environmentNames(raw).includes(envName)) return { findings, skipped: [] };
  if (options.offline) return { findings, skipped: REMOTE_CHECKS };
  const secretNames = Object.keys(secretTemplates(root));
  const runWrangler = options.runWrangler ?? defaultRunWrangler();
  // A companion that shares the systems of record needs the same secrets (ADMIN_TOKEN for the
  // manager's sign-in, the keyrings for what it seals and verifies).
  const sharing = companions.filter(
    ({ companion, raw: companionRaw }) => companion.shares && environmentNames(companionRaw).includes(envName),
  );
  const sharedWith = sharing.map(({ path }) => path);
  const remote = await checkRemote(environmentView(raw, envName), { configPath, secretNames, runWrangler, sharedWith });
  const shared = [];
  for (const { raw: companionRaw, path } of sharing) {
    shared.push(
      ...(await checkRemote(environmentView(companionRaw, envName), { configPath: path, secretNames, runWrangler, only: "secrets" })),
    );
  }
  return { findings: [...findings, ...remote, ...shared], skipped: [] };
}

/**
 * Every companion Worker's configuration, parsed.
 * @param {Record<string, string | undefined>} [paths] another configuration, by binding
 */
export async function readCompanions(paths) {
  const resolved = companionPaths(paths);
  return Promise.all(
    COMPANIONS.map(async (companion) => {
      const path = resolved[companion.binding] ?? join(ROOT, companion.file);
      return { companion, raw: await readWranglerConfig(path), path };
    }),
  );
}

/**
 * `check:deploy` without `--env`: the offline checks of every environment in wrangler.toml, for
 * a repository that need not be provisioned yet (CI, a fresh clone). What only provisioning
 * fixes (Finding.provision) becomes a warning naming the step left before that environment's
 * first deploy; everything else (a binding not copied, a queue shared, a class with no migration)
 * stays an error. A deploy, and `check:deploy -- --env X`, keep the provisioning errors.
 * @param {{ configPath?: string, companionConfigs?: Record<string, string | undefined>, root?: string }} [options]
 * @returns {Promise<{ env: string, result: PreflightResult }[]>}
 */
export async function preflightEveryEnvironment(options = {}) {
  const configPath = resolve(options.configPath ?? DEFAULT_CONFIG);
  const raw = await readWranglerConfig(configPath);
  const companions = await readCompanions(options.companionConfigs);
  return environmentNames(raw).map((env) => ({
    env,
    result: {
      findings: checkConfig(raw, env, { configPath, root: options.root ?? ROOT, companions }).map((f) =>
        f.provision ? { ...f, level: /** @type {const} */ ("warning"), message: `before the first deploy: ${f.message}` } : f,
      ),
      skipped: REMOTE_CHECKS,
    },
  }));
}

/**
 * The report printed before deploying: errors first, each with its fix, then warnings.
 * @param {PreflightResult} result
 * @param {{ env: string | undefined, offline?: boolean }} context
 */
export function formatReport(result, context) {
  const lines = [`Preflight${context.env ? ` for [env.${context.env}]` : ""}${context.offline ? " (offline)" : ""}:`];
  const ordered = [...result.findings.filter((f) => f.level === "error"), ...result.findings.filter((f) => f.level === "warning")];
  for (const finding of ordered) {
    lines.push(`  ${finding.level}: ${finding.message}`);
    const [first, ...rest] = finding.fix.split("\n");
    lines.push(`    fix: ${first}`, ...rest.map((line) => `         ${line}`));
  }
  if (result.skipped.length > 0) {
    lines.push(`  skipped offline: ${result.skipped.map((c) => `\`${c}\``).join(", ")} (npm run deploy runs them before deploying)`);
  }
  const errors = ordered.filter((f) => f.level === "error").length;
  lines.push(errors === 0 ? "  passed." : `  ${errors} problem${errors > 1 ? "s" : ""} to fix first; nothing was deployed.`);
  return lines.join("\n");
}

/** Whether a preflight result lets the deploy go ahead. */
export const passed = (/** @type {PreflightResult} */ result) => result.findings.every((f) => f.level !== "error");
