/**
 * The preflight's view of wrangler.toml: the repository's paths, the companion Workers (their
 * configurations and bindings), the shared types (findings, environments, options), and reading a
 * configuration with wrangler's own parser and its environment rules (what an [env.*] section
 * inherits and what it does not).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEV_VARS_EXAMPLE, parseDevVars } from "../dev-vars.mjs";

/** The repository: .dev.vars.example and src/ are read from here whatever config file is checked. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const DEFAULT_CONFIG = join(ROOT, "wrangler.toml");
/**
 * The Workers the API Worker calls over service bindings, each with a configuration of its own,
 * deployed before it (a binding to a Worker that does not exist is refused at upload). `flag` is
 * the deploy script's option naming another configuration; `dist` where a dry run bundles it.
 * `shares`: it reaches the API Worker's systems of record itself, so each environment's bindings,
 * vars and secrets must be the API Worker's (checkSharedBindings, and the remote secrets check).
 * @typedef {{ binding: string, file: string, role: string, serves: string, flag: string, dist: string, shares?: true }} Companion
 * @type {Companion[]}
 */
export const COMPANIONS = [
  {
    binding: "PEOPLE",
    file: "wrangler.people.toml",
    role: "people's Worker",
    serves: "the manager, the portal, GET /, /docs, /explorer and GET /v1/openapi.json",
    flag: "--people-config",
    dist: "people",
    shares: true,
  },
  {
    binding: "GRAPHQL",
    file: "wrangler.graphql.toml",
    role: "GraphQL Worker",
    serves: "/v1/graphql",
    flag: "--graphql-config",
    dist: "graphql",
  },
];

/**
 * Each companion's configuration path: the repository's, unless `paths` names another by binding.
 * @param {Record<string, string | undefined>} [paths]
 */
export const companionPaths = (paths = {}) =>
  Object.fromEntries(COMPANIONS.map((c) => [c.binding, resolve(paths[c.binding] ?? join(ROOT, c.file))]));
/** The environment held to production's rules (an https PUBLIC_BASE_URL is required). */
export const PRODUCTION = "production";
/** The flag the Worker's SSRF defence rests on (docs/api.md, "Webhooks"). */
export const STRICT_EGRESS_FLAG = "global_fetch_strictly_public";
/** wrangler does not copy these from the top level into an [env.*] section. */
export const NOT_INHERITED = ["vars", "kv_namespaces", "durable_objects", "queues", "analytics_engine_datasets", "services"];
/** What the remote checks run, for the "skipped" line of an offline run. */
export const REMOTE_CHECKS = ["wrangler secret list", "wrangler kv namespace list", "wrangler queues info"];

/**
 * @typedef {object} Finding
 * @property {"error" | "warning"} level errors stop the deploy; warnings are printed only
 * @property {string} message what is wrong and what it would do in production
 * @property {string} fix the exact command(s) or wrangler.toml lines that fix it
 * @property {true} [provision] a value that exists only once the environment is provisioned (its
 *   KV namespace id, its public origin): `check:deploy` without `--env` lists these as steps left
 *   before the first deploy, where a deploy of that environment refuses them
 */
/** @typedef {{ code: number, stdout: string, stderr: string }} WranglerResult */
/** @typedef {(args: string[]) => Promise<WranglerResult>} RunWrangler */
/** @typedef {Record<string, unknown>} Table */
/**
 * One environment as wrangler would deploy it, reduced to what the checks read.
 * @typedef {object} EnvView
 * @property {string} env its name ("production")
 * @property {string} name the Worker's name
 * @property {Table} vars
 * @property {{ binding: string, id: unknown }[]} kv
 * @property {{ name: string, className: string, scriptName: unknown }[]} durableObjects
 * @property {{ binding: string, queue: string }[]} producers
 * @property {{ queue: string, maxRetries: unknown, deadLetterQueue: string | undefined }[]} consumers
 * @property {{ binding: string, dataset: unknown }[]} datasets
 * @property {{ binding: string, service: string }[]} services
 * @property {Table[]} migrations
 * @property {unknown} compatibilityFlags
 * @property {unknown} observability
 * @property {unknown} workersDev
 * @property {unknown[]} routes
 * @property {string | undefined} accountId
 */
/**
 * @typedef {object} PreflightOptions
 * @property {string | undefined} env the environment to deploy (`--env`)
 * @property {string} [configPath] default: the repository's wrangler.toml
 * @property {Record<string, string | undefined>} [companionConfigs] another configuration for a companion Worker, by binding
 * @property {boolean} [offline] skip the checks that ask Cloudflare (check:deploy)
 * @property {string} [root] where .dev.vars.example and src/ are (default: this repository)
 * @property {RunWrangler} [runWrangler] how remote checks run wrangler (default: defaultRunWrangler())
 */
/** @typedef {{ findings: Finding[], skipped: string[] }} PreflightResult */

// ---------------------------------------------------------------------------------------------
// Reading wrangler.toml
// ---------------------------------------------------------------------------------------------

/** @param {unknown} value @returns {value is Table} */
export const isTable = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
/** @param {unknown} value @returns {Table} */
export const table = (value) => (isTable(value) ? value : {});
/** @param {unknown} value @returns {Table[]} */
export const tables = (value) => (Array.isArray(value) ? value.filter(isTable) : []);
/** @param {unknown} value @returns {string | undefined} */
export const str = (value) => (typeof value === "string" ? value : undefined);
/** @param {unknown} value @returns {string[]} */
export const strings = (value) => (Array.isArray(value) ? value.filter((v) => typeof v === "string") : []);

/**
 * Parses a wrangler.toml with the pinned wrangler's own reader (the smol-toml it bundles), so the
 * preflight sees exactly what `wrangler deploy` will; no second TOML parser to drift from it.
 * @param {string} configPath
 * @returns {Promise<Table>}
 */
export async function readWranglerConfig(configPath) {
  if (!existsSync(configPath)) throw new Error(`no wrangler configuration at ${configPath}`);
  const wrangler = await import("wrangler");
  const read = /** @type {(args: { config: string }) => { rawConfig: unknown }} */ (wrangler.experimental_readRawConfig);
  try {
    return table(read({ config: configPath }).rawConfig);
  } catch (err) {
    throw new Error(`${configPath} is not valid TOML: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The environment `envName` as wrangler resolves it: inheritable keys from the top level unless
 * the section sets them, the non-inheritable ones only from the section, and wrangler's
 * `<top name>-<env>` when the section has no name.
 * @param {Table} raw
 * @param {string} envName
 * @returns {EnvView}
 */
export function environmentView(raw, envName) {
  const section = table(table(raw.env)[envName]);
  /** @type {Table} */
  const merged = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key !== "env" && !NOT_INHERITED.includes(key)) merged[key] = value;
  }
  // A section with its own routes replaces the top's, whichever of `route`/`routes` either uses.
  if ("route" in section || "routes" in section) {
    delete merged.route;
    delete merged.routes;
  }
  Object.assign(merged, section);
  merged.name = str(section.name) ?? `${str(raw.name) ?? "worker"}-${envName}`;
  return view(merged, envName);
}

/** The top level (the local configuration), in the same shape, for comparisons. */
export function topLevelView(/** @type {Table} */ raw) {
  return view(raw, "");
}

/**
 * @param {Table} config
 * @param {string} envName
 * @returns {EnvView}
 */
export function view(config, envName) {
  const queues = table(config.queues);
  const route = config.route === undefined ? [] : [config.route];
  return {
    env: envName,
    name: str(config.name) ?? "",
    vars: table(config.vars),
    kv: tables(config.kv_namespaces).map((t) => ({ binding: str(t.binding) ?? "", id: t.id })),
    durableObjects: tables(table(config.durable_objects).bindings).map((t) => ({
      name: str(t.name) ?? "",
      className: str(t.class_name) ?? "",
      scriptName: t.script_name,
    })),
    producers: tables(queues.producers).map((t) => ({ binding: str(t.binding) ?? "", queue: str(t.queue) ?? "" })),
    consumers: tables(queues.consumers).map((t) => ({
      queue: str(t.queue) ?? "",
      maxRetries: t.max_retries,
      deadLetterQueue: str(t.dead_letter_queue),
    })),
    datasets: tables(config.analytics_engine_datasets).map((t) => ({ binding: str(t.binding) ?? "", dataset: t.dataset })),
    services: tables(config.services).map((t) => ({ binding: str(t.binding) ?? "", service: str(t.service) ?? "" })),
    migrations: tables(config.migrations),
    compatibilityFlags: config.compatibility_flags,
    observability: config.observability,
    workersDev: config.workers_dev,
    routes: Array.isArray(config.routes) ? config.routes : route,
    accountId: str(config.account_id),
  };
}

/** The names of the [env.*] sections. */
export function environmentNames(/** @type {Table} */ raw) {
  return Object.keys(table(raw.env));
}

/**
 * The Worker's secrets: every setting of .dev.vars.example (the file holds secrets only; vars
 * live in wrangler.toml), with its template value (`k1:<random>`) for --new-secrets.
 * @param {string} [root]
 * @returns {Record<string, string>}
 */
export function secretTemplates(root = ROOT) {
  return parseDevVars(readFileSync(join(root, DEV_VARS_EXAMPLE), "utf8"));
}

/**
 * The suffix by which the Worker's queue handler recognizes a dead-letter queue (src/index.ts
 * calls isDeadLetterQueue, which tests DEAD_LETTER_SUFFIX of src/webhooks/consumer.ts); undefined
 * when the source no longer declares one.
 * @param {string} [root]
 */
export function deadLetterSuffixOfCode(root = ROOT) {
  const path = join(root, "src", "webhooks", "consumer.ts");
  if (!existsSync(path)) return undefined;
  return /export const DEAD_LETTER_SUFFIX\s*=\s*"([^"]+)"/.exec(readFileSync(path, "utf8"))?.[1];
}
