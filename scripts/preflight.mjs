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
 * (COMPANIONS: the description Worker, wrangler.docs.toml; the GraphQL Worker, wrangler.graphql.toml)
 * are checked with it: each environment must bind the companion of the same environment, which
 * must exist as a section of its own. `--new-secrets FILE [NAME...]` writes fresh secrets in the
 * shapes of .dev.vars.example to a mode-600 file for `wrangler secret bulk`, never printing them.
 * Tests drive the remote checks with a stub: KEYWAY_WRANGLER names an executable used instead of
 * the pinned wrangler (or pass `runWrangler`).
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DEV_VARS_EXAMPLE, PLACEHOLDER, parseDevVars, randomSecret } from "./dev-vars.mjs";
import { assertSupportedNode, wranglerCommand } from "./wrangler.mjs";

/** The repository: .dev.vars.example and src/ are read from here whatever config file is checked. */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DEFAULT_CONFIG = join(ROOT, "wrangler.toml");
/**
 * The Workers the API Worker calls over service bindings, each with a configuration of its own,
 * deployed before it (a binding to a Worker that does not exist is refused at upload). `flag` is
 * the deploy script's option naming another configuration; `dist` where a dry run bundles it.
 * @typedef {{ binding: string, file: string, role: string, serves: string, flag: string, dist: string }} Companion
 * @type {Companion[]}
 */
export const COMPANIONS = [
  {
    binding: "DOCS",
    file: "wrangler.docs.toml",
    role: "description Worker",
    serves: "GET /v1/openapi.json and GET /docs",
    flag: "--docs-config",
    dist: "docs",
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
const STRICT_EGRESS_FLAG = "global_fetch_strictly_public";
/** wrangler does not copy these from the top level into an [env.*] section. */
const NOT_INHERITED = ["vars", "kv_namespaces", "durable_objects", "queues", "analytics_engine_datasets", "services"];
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
const isTable = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
/** @param {unknown} value @returns {Table} */
const table = (value) => (isTable(value) ? value : {});
/** @param {unknown} value @returns {Table[]} */
const tables = (value) => (Array.isArray(value) ? value.filter(isTable) : []);
/** @param {unknown} value @returns {string | undefined} */
const str = (value) => (typeof value === "string" ? value : undefined);
/** @param {unknown} value @returns {string[]} */
const strings = (value) => (Array.isArray(value) ? value.filter((v) => typeof v === "string") : []);

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
function view(config, envName) {
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

// ---------------------------------------------------------------------------------------------
// Values, mirroring src/config.ts (which the Worker uses to refuse them with a 503)
// ---------------------------------------------------------------------------------------------

/**
 * `5s,5m,2h` as milliseconds; null when malformed; empty means no retries. Mirrors parseSchedule
 * of src/config.ts (test/e2e/deploy.test.ts compares the two).
 * @param {string} value
 * @returns {number[] | null}
 */
export function parseSchedule(value) {
  if (value.trim() === "") return [];
  /** @type {Record<string, number>} */
  const unit = { s: 1000, m: 60_000, h: 3_600_000 };
  /** @type {number[]} */
  const out = [];
  for (const part of value.split(",")) {
    const match = /^\s*(\d{1,6})([smh])\s*$/.exec(part);
    if (!match) return null;
    const ms = Number(match[1]) * (unit[match[2] ?? ""] ?? 0);
    if (ms > 86_400_000) return null;
    out.push(ms);
  }
  return out.length > 20 ? null : out;
}

/** Integer vars and their bounds in src/config.ts. */
const INTEGER_VARS = /** @type {Record<string, [number, number]>} */ ({
  ACCESS_TOKEN_TTL_SECONDS: [60, 86_400],
  RATE_LIMIT_PER_SECOND: [1, 10_000],
  RATE_LIMIT_PER_DAY: [1, 100_000_000],
  WEBHOOK_TIMEOUT_SECONDS: [1, 120],
  WEBHOOK_REDISPATCH_SECONDS: [1, 3600],
  WEBHOOK_DISABLE_AFTER_SECONDS: [60, 90 * 86_400],
});

/** The origin of an http(s) URL that is nothing but an origin, else null (as src/config.ts). */
function publicOrigin(/** @type {string} */ value) {
  try {
    const url = new URL(value);
    const bare = url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === "";
    return bare && (url.protocol === "https:" || url.protocol === "http:") ? url : null;
  } catch {
    return null;
  }
}

/** Hosts that are documentation examples or local, never a deployment's public name. */
function placeholderHost(/** @type {string} */ host) {
  return /(^|\.)(example\.(com|org|net)|example|invalid|test|localhost)$/i.test(host) || host === "localhost";
}

// ---------------------------------------------------------------------------------------------
// Offline checks
// ---------------------------------------------------------------------------------------------

/**
 * How fix commands name the config file: nothing for the repository's own wrangler.toml.
 * @param {string} configPath
 */
function configFlag(configPath) {
  const abs = resolve(configPath);
  if (abs === DEFAULT_CONFIG) return "";
  const rel = relative(process.cwd(), abs);
  return ` --config ${rel.startsWith("..") || isAbsolute(rel) ? abs : rel}`;
}

/** A TOML string literal. */
const q = (/** @type {string} */ s) => JSON.stringify(s);

/**
 * @param {Finding[]} out
 * @param {string} message
 * @param {string} fix
 */
const error = (out, message, fix) => out.push({ level: "error", message, fix });
/**
 * @param {Finding[]} out
 * @param {string} message
 * @param {string} fix
 */
const warning = (out, message, fix) => out.push({ level: "warning", message, fix });
/**
 * An error that only provisioning fixes (see Finding.provision).
 * @param {Finding[]} out
 * @param {string} message
 * @param {string} fix
 */
const unprovisioned = (out, message, fix) => out.push({ level: "error", message, fix, provision: true });

/**
 * Every check that needs nothing but the files: wrangler.toml, .dev.vars.example and src/.
 * @param {Table} raw the parsed wrangler.toml
 * @param {string} envName
 * @param {{ configPath?: string, root?: string, companions?: { companion: Companion, raw: Table, path: string }[] }} [options]
 *   `companions`: the parsed configurations of the companion Workers, checked against this environment's bindings
 * @returns {Finding[]}
 */
export function checkConfig(raw, envName, options = {}) {
  const configPath = options.configPath ?? DEFAULT_CONFIG;
  const root = options.root ?? ROOT;
  /** @type {Finding[]} */
  const out = [];
  const envs = environmentNames(raw);
  if (!envs.includes(envName)) {
    error(
      out,
      `wrangler.toml has no [env.${envName}] (it has ${envs.length > 0 ? envs.map((e) => `[env.${e}]`).join(", ") : "no environments"}).`,
      envs.length > 0
        ? envs.map((e) => `npm run deploy -- --env ${e}`).join("\n")
        : "add an [env.production] section to wrangler.toml (docs/deploy.md)",
    );
    return out;
  }
  const top = topLevelView(raw);
  const env = environmentView(raw, envName);
  const others = envs.filter((e) => e !== envName).map((e) => environmentView(raw, e));
  const section = `[env.${envName}]`;
  const cfg = configFlag(configPath);

  checkNameAndFlags(out, env, others, section);
  checkBindingParity(out, top, env);
  checkKv(out, env, cfg);
  checkDurableObjects(out, env);
  checkQueues(out, env, deadLetterSuffixOfCode(root));
  checkDatasets(out, env);
  checkVars(out, top, env, Object.keys(secretTemplates(root)));
  checkIsolation(out, env, others);
  checkServing(out, env);
  for (const { companion, raw: companionRaw, path } of options.companions ?? []) {
    checkCompanion(out, env, companion, companionRaw, relative(ROOT, path) || companion.file);
  }
  return out;
}

/**
 * @param {Finding[]} out
 * @param {EnvView} env
 * @param {EnvView[]} others
 * @param {string} section
 */
function checkNameAndFlags(out, env, others, section) {
  for (const other of others) {
    const elsewhere = env.accountId !== undefined && other.accountId !== undefined && env.accountId !== other.accountId;
    if (other.name === env.name && !elsewhere) {
      error(
        out,
        `${section} and [env.${other.env}] both deploy the Worker "${env.name}": deploying one would replace the other.`,
        `give each its own name in wrangler.toml, e.g. under ${section}:\nname = ${q(`${env.name}-${env.env}`)}`,
      );
    }
  }
  const flags = strings(env.compatibilityFlags);
  if (!flags.includes(STRICT_EGRESS_FLAG)) {
    error(
      out,
      `${section} runs without the compatibility flag "${STRICT_EGRESS_FLAG}": webhooks and receivers' token requests could reach the zone's own origin, or a private address a public name resolves to (src/webhooks/ssrf.ts).`,
      `in wrangler.toml (top level, or ${section} if it sets its own):\ncompatibility_flags = ${JSON.stringify([...flags, STRICT_EGRESS_FLAG])}`,
    );
  }
}

/**
 * Bindings are not inherited: every binding the Worker's code uses (those of the top level, from
 * which src/worker-configuration.d.ts is generated) must be declared again in the environment.
 * @param {Finding[]} out
 * @param {EnvView} top
 * @param {EnvView} env
 */
function checkBindingParity(out, top, env) {
  const s = `env.${env.env}`;
  const missing = (/** @type {string} */ what, /** @type {string} */ name, /** @type {string} */ snippet) =>
    error(
      out,
      `[${s}] has no ${what} binding "${name}" (wrangler does not inherit bindings from the top level): every request that uses it would fail.`,
      `add to wrangler.toml:\n${snippet}`,
    );
  for (const kv of top.kv) {
    if (!env.kv.some((b) => b.binding === kv.binding)) {
      missing(
        "KV",
        kv.binding,
        `[[${s}.kv_namespaces]]\nbinding = ${q(kv.binding)}\nid = "<id printed by: npx wrangler kv namespace create keyway --binding ${kv.binding} --env ${env.env}>"`,
      );
    }
  }
  for (const dobj of top.durableObjects) {
    const mine = env.durableObjects.find((b) => b.name === dobj.name);
    if (mine === undefined) {
      missing("Durable Object", dobj.name, `[[${s}.durable_objects.bindings]]\nname = ${q(dobj.name)}\nclass_name = ${q(dobj.className)}`);
    } else if (mine.className !== dobj.className) {
      error(
        out,
        `[${s}] binds "${dobj.name}" to class "${mine.className}", but the Worker's code expects "${dobj.className}" (the top level's).`,
        `in wrangler.toml, under [[${s}.durable_objects.bindings]] name = ${q(dobj.name)}:\nclass_name = ${q(dobj.className)}`,
      );
    }
  }
  for (const producer of top.producers) {
    if (!env.producers.some((b) => b.binding === producer.binding)) {
      missing(
        "Queue producer",
        producer.binding,
        `[[${s}.queues.producers]]\nbinding = ${q(producer.binding)}\nqueue = ${q(`${env.name}-webhooks`)}`,
      );
    }
  }
  // A companion's binding is checked against its own configuration (checkCompanion).
  for (const service of top.services.filter((b) => !COMPANIONS.some((c) => c.binding === b.binding))) {
    if (!env.services.some((b) => b.binding === service.binding)) {
      missing(
        "service",
        service.binding,
        `[[${s}.services]]\nbinding = ${q(service.binding)}\nservice = ${q(`${service.service}-${env.env}`)}`,
      );
    }
  }
  for (const dataset of top.datasets) {
    if (!env.datasets.some((b) => b.binding === dataset.binding)) {
      missing(
        "Analytics Engine",
        dataset.binding,
        `[[${s}.analytics_engine_datasets]]\nbinding = ${q(dataset.binding)}\ndataset = ${q(`${env.name.replaceAll("-", "_")}_metrics`)}`,
      );
    }
  }
}

/**
 * @param {Finding[]} out
 * @param {EnvView} env
 * @param {string} cfg
 */
function checkKv(out, env, cfg) {
  for (const kv of env.kv) {
    const create = `npx wrangler kv namespace create keyway --binding ${kv.binding} --env ${env.env}${cfg}`;
    const put = `then set id = "<the printed id>" under [[env.${env.env}.kv_namespaces]] binding = ${q(kv.binding)} in wrangler.toml`;
    const id = str(kv.id);
    if (id === undefined || id === "") {
      unprovisioned(out, `KV binding "${kv.binding}" of [env.${env.env}] has no namespace id.`, `${create}\n${put}`);
    } else if (/^0+$/.test(id)) {
      unprovisioned(
        out,
        `KV binding "${kv.binding}" of [env.${env.env}] still has the placeholder id ${id}: no namespace has it, so the deploy would be refused.`,
        `${create}\n${put}`,
      );
    } else if (!/^[0-9a-f]{32}$/i.test(id)) {
      error(
        out,
        `KV binding "${kv.binding}" of [env.${env.env}] has id "${id}", which is not a KV namespace id (32 hex digits).`,
        `npx wrangler kv namespace list${cfg}   # find the namespace's id, or create one:\n${create}\n${put}`,
      );
    }
  }
}

/**
 * Every Durable Object class the environment binds must be created by [[migrations]] (which are
 * inherited) as a SQLite-backed class (keyway's objects use their SQL storage) and not deleted
 * by a later one; a class without a migration makes the upload fail after the bundle is built.
 * @param {Finding[]} out
 * @param {EnvView} env
 */
function checkDurableObjects(out, env) {
  /** @type {Map<string, "sqlite" | "kv" | "transferred">} */
  const live = new Map();
  /** @type {Set<string>} */
  const tags = new Set();
  for (const migration of env.migrations) {
    const tag = str(migration.tag) ?? "";
    if (tag === "" || tags.has(tag)) {
      error(
        out,
        `[[migrations]] has ${tag === "" ? "a migration without a tag" : `the tag "${tag}" twice`}: wrangler cannot tell which have been applied.`,
        "give every [[migrations]] its own tag (v1, v2, ...) in wrangler.toml",
      );
    }
    tags.add(tag);
    for (const c of strings(migration.new_classes)) live.set(c, "kv");
    for (const c of strings(migration.new_sqlite_classes)) live.set(c, "sqlite");
    for (const r of tables(migration.renamed_classes)) {
      const from = str(r.from);
      const to = str(r.to);
      if (from !== undefined && to !== undefined) {
        live.set(to, live.get(from) ?? "transferred");
        live.delete(from);
      }
    }
    for (const t of tables(migration.transferred_classes)) {
      const to = str(t.to);
      if (to !== undefined) live.set(to, "transferred");
    }
    for (const c of strings(migration.deleted_classes)) live.delete(c);
  }
  const nextTag = `v${tags.size + 1}`;
  for (const binding of env.durableObjects) {
    if (binding.scriptName !== undefined) continue; // another Worker's class: its migrations, not ours
    const kind = live.get(binding.className);
    if (kind === undefined) {
      error(
        out,
        `No [[migrations]] creates the Durable Object class "${binding.className}" (binding "${binding.name}" of [env.${env.env}]): the upload would be refused.`,
        `add to wrangler.toml (migrations are top-level and apply to every environment):\n[[migrations]]\ntag = ${q(nextTag)}\nnew_sqlite_classes = [${q(binding.className)}]`,
      );
    } else if (kind === "kv") {
      error(
        out,
        `The Durable Object class "${binding.className}" is created by new_classes (key-value storage), but keyway's objects use SQLite storage.`,
        `in wrangler.toml, create it with new_sqlite_classes = [${q(binding.className)}] instead (a class cannot change its storage once deployed)`,
      );
    }
  }
}

/**
 * The webhook pipeline (docs/api.md, "Webhooks"): the objects produce one message per attempt; the
 * Worker consumes them; a fault of ours is retried max_retries times by the Queue (a receiver's
 * failures are retried by the object on WEBHOOK_RETRY_SCHEDULE, not here), then dead-lettered to a
 * queue whose consumer (the same Worker) has the object record it.
 * @param {Finding[]} out
 * @param {EnvView} env
 * @param {string | undefined} dlqSuffix the suffix by which src/index.ts recognizes a dead-letter queue
 */
function checkQueues(out, env, dlqSuffix) {
  const s = `env.${env.env}`;
  const consumerOf = new Map(env.consumers.map((c) => [c.queue, c]));
  const deadLetterQueues = new Set(env.consumers.flatMap((c) => (c.deadLetterQueue ? [c.deadLetterQueue] : [])));
  const consumerSnippet = (/** @type {string} */ queue) =>
    `add to wrangler.toml:\n[[${s}.queues.consumers]]\nqueue = ${q(queue)}\nmax_batch_size = 10\nmax_batch_timeout = 1\nmax_retries = 5\ndead_letter_queue = ${q(`${queue}-dlq`)}`;
  for (const producer of env.producers) {
    if (deadLetterQueues.has(producer.queue) || (dlqSuffix !== undefined && producer.queue.endsWith(dlqSuffix))) {
      error(
        out,
        `Producer binding "${producer.binding}" of [${s}] sends to "${producer.queue}", a dead-letter queue: src/index.ts would record every ticket as a dead letter, and no webhook would be sent.`,
        `in wrangler.toml, point [[${s}.queues.producers]] binding = ${q(producer.binding)} at the delivery queue (the one whose consumer names dead_letter_queue = ${q(producer.queue)})`,
      );
      continue;
    }
    if (!consumerOf.has(producer.queue)) {
      error(
        out,
        `Queue "${producer.queue}" (producer binding "${producer.binding}" of [${s}]) has no consumer: messages would pile up and no webhook would be delivered.`,
        consumerSnippet(producer.queue),
      );
    }
  }
  for (const consumer of env.consumers) {
    if (deadLetterQueues.has(consumer.queue)) continue; // a dead-letter queue's own consumer
    if (dlqSuffix !== undefined && consumer.queue.endsWith(dlqSuffix)) {
      error(
        out,
        `Queue "${consumer.queue}" of [${s}] is a delivery queue, but its name ends in "${dlqSuffix}": src/index.ts would take its messages for dead letters and record them as failed without sending them.`,
        `rename the queue in wrangler.toml (its producer and consumer) so that it does not end in "${dlqSuffix}"`,
      );
    }
    if (consumer.deadLetterQueue === undefined) {
      error(
        out,
        `The consumer of "${consumer.queue}" in [${s}] has no dead_letter_queue: a message that fails on our side max_retries times would be deleted and its delivery never recorded as failed.`,
        `in wrangler.toml, under [[${s}.queues.consumers]] queue = ${q(consumer.queue)}:\ndead_letter_queue = ${q(`${consumer.queue}-dlq`)}\nand consume it:\n[[${s}.queues.consumers]]\nqueue = ${q(`${consumer.queue}-dlq`)}\nmax_batch_size = 10\nmax_batch_timeout = 1`,
      );
    }
    const retries = consumer.maxRetries;
    if (retries !== undefined && !(typeof retries === "number" && Number.isInteger(retries) && retries >= 1)) {
      error(
        out,
        `The consumer of "${consumer.queue}" in [${s}] has max_retries = ${JSON.stringify(retries)}: a brief fault on our side (an object restarting) would dead-letter the attempt at once. (The receiver's failures are retried on WEBHOOK_RETRY_SCHEDULE; max_retries covers only ours.)`,
        `in wrangler.toml, under [[${s}.queues.consumers]] queue = ${q(consumer.queue)}:\nmax_retries = 5`,
      );
    }
  }
  for (const dlq of deadLetterQueues) {
    if (!consumerOf.has(dlq)) {
      error(
        out,
        `Dead-letter queue "${dlq}" of [${s}] has no consumer: dead letters would never be recorded on their deliveries, and the Queue deletes them after its retention period.`,
        `add to wrangler.toml:\n[[${s}.queues.consumers]]\nqueue = ${q(dlq)}\nmax_batch_size = 10\nmax_batch_timeout = 1`,
      );
    }
    if (dlqSuffix !== undefined && !dlq.endsWith(dlqSuffix)) {
      error(
        out,
        `Dead-letter queue "${dlq}" of [${s}] is not one the Worker recognizes: src/index.ts treats only queues whose name ends in "${dlqSuffix}" (DEAD_LETTER_SUFFIX in src/webhooks/consumer.ts) as dead letters, so these would be handled as new delivery attempts instead of being recorded.`,
        `rename it in wrangler.toml (dead_letter_queue and its consumer) to ${q(`${dlq}${dlqSuffix}`)}, and create it: npx wrangler queues create ${dlq}${dlqSuffix}`,
      );
    }
  }
}

/**
 * @param {Finding[]} out
 * @param {EnvView} env
 */
function checkDatasets(out, env) {
  for (const dataset of env.datasets) {
    const name = str(dataset.dataset);
    if (name === undefined || !/^[A-Za-z0-9_]+$/.test(name)) {
      error(
        out,
        `Analytics Engine binding "${dataset.binding}" of [env.${env.env}] has ${name === undefined ? "no dataset" : `the dataset name ${q(name)} (letters, digits and _ only)`}.`,
        `in wrangler.toml, under [[env.${env.env}.analytics_engine_datasets]] binding = ${q(dataset.binding)}:\ndataset = ${q(`${env.name.replaceAll("-", "_")}_metrics`)}`,
      );
    }
  }
}

/**
 * @param {Finding[]} out
 * @param {EnvView} top
 * @param {EnvView} env
 * @param {string[]} secretNames
 */
function checkVars(out, top, env, secretNames) {
  const s = `env.${env.env}.vars`;
  const vars = env.vars;
  const missing = Object.keys(top.vars).filter((name) => !(name in vars));
  if (missing.length > 0) {
    error(
      out,
      `[${s}] lacks ${missing.join(", ")} (wrangler does not inherit vars from the top level): the Worker would run on its built-in defaults, not on what wrangler.toml says.`,
      `add to [${s}] in wrangler.toml (the top level's values):\n${missing.map((name) => `${name} = ${JSON.stringify(top.vars[name])}`).join("\n")}`,
    );
  }
  for (const [name, value] of Object.entries(vars)) {
    if (secretNames.includes(name)) {
      error(
        out,
        `${name} is a secret but [${s}] sets it as a plain var: its value would be visible in wrangler.toml and the dashboard, and wrangler refuses a var and a secret of the same name.`,
        `remove ${name} from [${s}] in wrangler.toml; set it with: npx wrangler secret put ${name} --env ${env.env}`,
      );
    } else if (name === "WEBHOOK_MAX_RETRIES") {
      warning(
        out,
        `[${s}] sets WEBHOOK_MAX_RETRIES, which keyway no longer reads: the number of retries is the length of WEBHOOK_RETRY_SCHEDULE.`,
        `remove WEBHOOK_MAX_RETRIES from [${s}]; to change the number of retries, lengthen or shorten WEBHOOK_RETRY_SCHEDULE`,
      );
    } else if (!(name in top.vars)) {
      warning(
        out,
        `[${s}] sets ${name}, which the Worker does not read (no such var at the top level).`,
        `remove ${name} from [${s}], or fix its spelling`,
      );
    }
    if (typeof value !== "string") {
      error(
        out,
        `${name} in [${s}] is ${JSON.stringify(value)}, not a string: wrangler would pass a ${typeof value}, which the Worker does not parse like the string it expects.`,
        `in [${s}] of wrangler.toml:\n${name} = ${JSON.stringify(String(value))}`,
      );
    }
  }
  const text = (/** @type {string} */ name) => str(vars[name]);

  for (const [name, [min, max]] of Object.entries(INTEGER_VARS)) {
    const value = text(name);
    if (value === undefined) continue;
    if (!/^\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
      error(
        out,
        `${name} = ${q(value)} in [${s}] is not an integer from ${min} to ${max}: the Worker would answer 503 to every request that reads its configuration.`,
        `in [${s}] of wrangler.toml:\n${name} = ${JSON.stringify(top.vars[name] ?? String(min))}`,
      );
    }
  }

  const insecure = text("WEBHOOK_ALLOW_INSECURE_TARGETS");
  if (insecure !== "false") {
    error(
      out,
      `WEBHOOK_ALLOW_INSECURE_TARGETS is ${insecure === undefined ? "not set" : q(insecure)} in [${s}]; a deployed Worker must have "false", or webhooks and token requests could be sent over plain http and to private addresses.`,
      `in [${s}] of wrangler.toml:\nWEBHOOK_ALLOW_INSECURE_TARGETS = "false"`,
    );
  }

  const schedule = text("WEBHOOK_RETRY_SCHEDULE");
  if (schedule !== undefined) {
    const parsed = parseSchedule(schedule);
    if (parsed === null) {
      error(
        out,
        `WEBHOOK_RETRY_SCHEDULE = ${q(schedule)} in [${s}] is not a retry schedule (comma-separated durations such as 5s,5m,2h; at most 20, each at most 24h): the Worker would refuse to deliver webhooks.`,
        `in [${s}] of wrangler.toml:\nWEBHOOK_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h"`,
      );
    } else if (parsed.length === 0) {
      warning(
        out,
        `WEBHOOK_RETRY_SCHEDULE is empty in [${s}]: a webhook whose first attempt fails is never retried.`,
        `in [${s}] of wrangler.toml:\nWEBHOOK_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h"`,
      );
    }
  }

  // Telemetry settings never fail closed (src/config.ts telemetrySettings): a bad value is replaced
  // by its default with one warning in the logs, which is easy to miss after a deploy.
  const format = text("LOG_FORMAT");
  if (format !== undefined && format !== "json") {
    error(
      out,
      `LOG_FORMAT = ${q(format)} in [${s}]: a deployed Worker logs JSON lines, which Workers Logs indexes and docs/observability.md filters ("pretty" is for npm start).`,
      `in [${s}] of wrangler.toml:\nLOG_FORMAT = "json"`,
    );
  }
  const rate = text("LOG_SUCCESS_SAMPLE_RATE");
  if (rate !== undefined && !/^(0(\.\d+)?|1(\.0+)?)$/.test(rate.trim())) {
    error(
      out,
      `LOG_SUCCESS_SAMPLE_RATE = ${q(rate)} in [${s}] is not a number from 0 to 1: the Worker would ignore it and log every successful request.`,
      `in [${s}] of wrangler.toml:\nLOG_SUCCESS_SAMPLE_RATE = "1"`,
    );
  }

  const base = text("PUBLIC_BASE_URL");
  const production = env.env === PRODUCTION;
  const setBase = `in [${s}] of wrangler.toml, the https origin clients use:\nPUBLIC_BASE_URL = "https://<your API host>"`;
  if (base === undefined || base === "") {
    if (production) {
      unprovisioned(
        out,
        `PUBLIC_BASE_URL is empty in [${s}]: production's API description would name no server ("/"), and the OAuth metadata's issuer would be whichever host a request came in on (workers.dev or a custom domain), not one fixed origin.`,
        setBase,
      );
    }
  } else {
    const url = publicOrigin(base);
    if (url === null) {
      error(out, `PUBLIC_BASE_URL = ${q(base)} in [${s}] is not an origin (scheme and host only): the Worker would answer 503.`, setBase);
    } else if (url.protocol !== "https:") {
      error(
        out,
        `PUBLIC_BASE_URL = ${q(base)} in [${s}] is not https: clients would be told to send API keys and tokens in the clear.`,
        setBase,
      );
    } else if (placeholderHost(url.hostname)) {
      unprovisioned(out, `PUBLIC_BASE_URL = ${q(base)} in [${s}] is a placeholder host, not the deployment's.`, setBase);
    }
  }
}

/**
 * Two environments sharing a resource would mix their data: staging consuming production's
 * webhooks, reading its KV lookups, counting in its metrics.
 * @param {Finding[]} out
 * @param {EnvView} env
 * @param {EnvView[]} others
 */
function checkIsolation(out, env, others) {
  const queuesOf = (/** @type {EnvView} */ e) =>
    new Set([
      ...e.producers.map((p) => p.queue),
      ...e.consumers.flatMap((c) => [c.queue, ...(c.deadLetterQueue ? [c.deadLetterQueue] : [])]),
    ]);
  const mine = queuesOf(env);
  for (const other of others) {
    // Names are unique per account: environments pinned to different accounts share nothing.
    if (env.accountId !== undefined && other.accountId !== undefined && env.accountId !== other.accountId) continue;
    for (const queue of queuesOf(other)) {
      if (queue !== "" && mine.has(queue)) {
        error(
          out,
          `[env.${env.env}] and [env.${other.env}] share the queue "${queue}": each Worker would consume the other's webhook messages.`,
          `give [env.${env.env}] its own queues in wrangler.toml (e.g. ${q(`${env.name}-${env.env}-webhooks`)} and ${q(`${env.name}-${env.env}-webhooks-dlq`)}), then create them:\nnpx wrangler queues create ${env.name}-${env.env}-webhooks\nnpx wrangler queues create ${env.name}-${env.env}-webhooks-dlq`,
        );
      }
    }
    for (const kv of env.kv) {
      const id = str(kv.id);
      if (id !== undefined && !/^0*$/.test(id) && other.kv.some((o) => str(o.id) === id)) {
        error(
          out,
          `[env.${env.env}] and [env.${other.env}] use the same KV namespace ${id}: their credential lookups would mix.`,
          `npx wrangler kv namespace create keyway --binding ${kv.binding} --env ${env.env}\nthen set that id under [[env.${env.env}.kv_namespaces]] in wrangler.toml`,
        );
      }
    }
    for (const dataset of env.datasets) {
      const name = str(dataset.dataset);
      if (name !== undefined && other.datasets.some((o) => str(o.dataset) === name)) {
        error(
          out,
          `[env.${env.env}] and [env.${other.env}] write the same Analytics Engine dataset "${name}": their metrics would be counted together.`,
          `in wrangler.toml, under [[env.${env.env}.analytics_engine_datasets]]:\ndataset = ${q(`${env.name.replaceAll("-", "_")}_metrics`)}`,
        );
      }
    }
  }
}

/**
 * The API Worker of an environment reaches a companion (its API description, its GraphQL engine)
 * through a service binding, which must name the Worker that the companion's configuration
 * deploys for the same environment: a binding to a Worker that does not exist is refused at
 * upload, and one to another environment's would run that environment's code. Two environments
 * of a companion must not share a name, and it must not take the API Worker's own.
 * @param {Finding[]} out
 * @param {EnvView} env
 * @param {Companion} companion
 * @param {Table} raw the companion's configuration
 * @param {string} file
 */
function checkCompanion(out, env, companion, raw, file) {
  const { binding: name, role, serves } = companion;
  const binding = env.services.find((b) => b.binding === name);
  if (!environmentNames(raw).includes(env.env)) {
    error(
      out,
      `${file} has no [env.${env.env}]: the ${role} that [env.${env.env}]'s ${name} binding calls would not be deployed.`,
      `add to ${file}:\n[env.${env.env}]\nname = ${q(binding?.service || `${str(raw.name) ?? "keyway"}-${env.env}`)}`,
    );
    return;
  }
  const mine = environmentView(raw, env.env);
  if (binding === undefined) {
    error(
      out,
      `[env.${env.env}] has no service binding "${name}" (wrangler does not inherit bindings from the top level): ${serves} would fail.`,
      `add to wrangler.toml:\n[[env.${env.env}.services]]\nbinding = ${q(name)}\nservice = ${q(mine.name)}`,
    );
  } else if (binding.service !== mine.name) {
    error(
      out,
      `[env.${env.env}] binds ${name} to the Worker "${binding.service}", but ${file} deploys [env.${env.env}]'s ${role} as "${mine.name}": ${serves} would fail, or run another deployment's code.`,
      `in wrangler.toml, under [[env.${env.env}.services]] binding = ${q(name)}:\nservice = ${q(mine.name)}`,
    );
  }
  if (mine.name === env.name) {
    error(
      out,
      `${file} deploys [env.${env.env}]'s ${role} as "${mine.name}", the API Worker's own name: each deploy would replace the other.`,
      `in ${file}, under [env.${env.env}]:\nname = ${q(`${env.name}-${companion.dist}`)}`,
    );
  }
  for (const other of environmentNames(raw).filter((e) => e !== env.env)) {
    const theirs = environmentView(raw, other);
    const elsewhere = mine.accountId !== undefined && theirs.accountId !== undefined && mine.accountId !== theirs.accountId;
    if (theirs.name === mine.name && !elsewhere) {
      error(
        out,
        `${file} deploys [env.${env.env}] and [env.${other}] as the same Worker "${mine.name}": deploying one would replace the other's ${role}.`,
        `in ${file}, under [env.${env.env}]:\nname = ${q(`${str(raw.name) ?? "keyway"}-${env.env}`)}`,
      );
    }
  }
}

/**
 * Warnings only: things a deploy survives but an operator would want to know.
 * @param {Finding[]} out
 * @param {EnvView} env
 */
function checkServing(out, env) {
  if (table(env.observability).enabled !== true) {
    warning(
      out,
      `[env.${env.env}] has Workers Logs off: \`wrangler tail\` still works, but no log is kept to search after the fact.`,
      `in wrangler.toml (top level or [env.${env.env}.observability]):\n[observability]\nenabled = true`,
    );
  }
  const base = str(env.vars.PUBLIC_BASE_URL);
  const url = base ? publicOrigin(base) : null;
  if (url === null) return;
  const host = url.hostname;
  const onWorkersDev = host.endsWith(".workers.dev") && host.startsWith(`${env.name}.`) && env.workersDev !== false;
  const routed = env.routes.some((r) => {
    const pattern = typeof r === "string" ? r : str(table(r).pattern);
    return (
      pattern !== undefined &&
      pattern
        .replace(/^https?:\/\//, "")
        .split("/")[0]
        ?.replace(/^\*\.?/, "") === host
    );
  });
  if (!onWorkersDev && !routed) {
    warning(
      out,
      `PUBLIC_BASE_URL names ${host}, but [env.${env.env}] has no route or custom domain for it${host.endsWith(".workers.dev") ? ` (its workers.dev host would be ${env.name}.<your subdomain>.workers.dev)` : ""}. Fine if the domain is attached in the dashboard; otherwise clients would reach nothing there.`,
      `in wrangler.toml, under [env.${env.env}]:\nroutes = [{ pattern = ${q(host)}, custom_domain = true }]`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Remote checks
// ---------------------------------------------------------------------------------------------

/**
 * Runs the pinned wrangler, or the executable named by KEYWAY_WRANGLER (tests: a stub that prints
 * canned answers), with wrangler's telemetry off. Never throws: a failure is a non-zero `code`.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {RunWrangler}
 */
export function defaultRunWrangler(env = process.env) {
  return (args) =>
    new Promise((done) => {
      const [bin, argv] = wranglerInvocation(args, env);
      execFile(bin, argv, { cwd: ROOT, env: wranglerEnv(env), maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        done({ code, stdout: String(stdout), stderr: String(stderr) });
      });
    });
}

/**
 * The command line for wrangler with `args`: KEYWAY_WRANGLER's executable if set, else the pinned
 * wrangler on this Node (scripts/wrangler.mjs).
 * @param {string[]} args
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {[string, string[]]}
 */
export function wranglerInvocation(args, env = process.env) {
  const override = env.KEYWAY_WRANGLER;
  return override ? [override, args] : wranglerCommand(args);
}

/** The environment wrangler runs with: no telemetry unless the operator asked for it. */
export function wranglerEnv(/** @type {NodeJS.ProcessEnv} */ env = process.env) {
  return { ...env, WRANGLER_SEND_METRICS: env.WRANGLER_SEND_METRICS ?? "false", WRANGLER_HIDE_BANNER: "true" };
}

/**
 * wrangler's complaint, without colour codes: its [ERROR] line when it printed one, else its last
 * lines; never the path of its log file, which differs per run and would split one cause in two.
 */
function tail(/** @type {WranglerResult} */ result) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences start with ESC
  const plain = `${result.stderr}\n${result.stdout}`.replace(/\u001b\[[0-9;]*m/g, "");
  const lines = plain
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.includes("Logs were written to"));
  const reported = lines.find((l) => l.includes("[ERROR]"))?.replace(/^.*?\[ERROR\]\s*/, "");
  const text = reported ?? (lines.slice(-3).join(" | ") || "(no output)");
  return text.length > 400 ? `${text.slice(0, 400)}...` : text;
}

/**
 * Parses the JSON array wrangler printed (tolerating lines around it).
 * @param {string} stdout
 * @returns {unknown[] | null}
 */
function jsonArray(stdout) {
  const start = stdout.indexOf("[");
  const end = stdout.lastIndexOf("]");
  if (start < 0 || end < start) return null;
  try {
    const value = JSON.parse(stdout.slice(start, end + 1));
    return Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * The checks that ask Cloudflare, through wrangler: the Worker's secrets (by name only; wrangler
 * never returns values), the account's KV namespaces, and every queue the environment uses.
 * @param {EnvView} env
 * @param {{ configPath: string, secretNames: string[], runWrangler: RunWrangler }} options
 * @returns {Promise<Finding[]>}
 */
export async function checkRemote(env, options) {
  const { configPath, secretNames, runWrangler } = options;
  const target = ["--env", env.env, "--config", configPath];
  const cfg = configFlag(configPath);
  /** @type {Finding[]} */
  const out = [];
  // Not logged in, offline, the wrong account: every command fails the same way, reported once.
  /** @type {Map<string, string[]>} */
  const failures = new Map();
  const couldNotAsk = (/** @type {string[]} */ args, /** @type {WranglerResult} */ result) => {
    const why = `exit ${result.code}: ${tail(result)}`;
    failures.set(why, [...(failures.get(why) ?? []), `\`wrangler ${args.join(" ")}\``]);
  };

  const secrets = async () => {
    const args = ["secret", "list", "--format", "json", ...target];
    const result = await runWrangler(args);
    /** @type {string[]} */
    let deployed;
    let absent = false;
    if (result.code === 0) {
      const list = jsonArray(result.stdout);
      if (list === null) return couldNotAsk(args, result);
      deployed = list.flatMap((item) => (isTable(item) && typeof item.name === "string" ? [item.name] : []));
    } else if (/Worker "[^"]+"(?: \(env: [^)]*\))? not found/.test(`${result.stdout}\n${result.stderr}`)) {
      // wrangler 4's answer for a Worker never deployed: `Worker "<name>" (env: <env>) not found.`
      deployed = [];
      absent = true;
    } else {
      return couldNotAsk(args, result);
    }
    const missing = secretNames.filter((name) => !deployed.includes(name));
    if (missing.length === 0) return;
    const file = `.wrangler/secrets-${env.env}.json`;
    error(
      out,
      `${absent ? `The Worker "${env.name}" does not exist yet, so it has no secrets` : `The Worker "${env.name}" lacks the secret${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`}: every route that needs ${missing.length > 1 ? "them" : "it"} would answer 503.`,
      [
        `node scripts/preflight.mjs --new-secrets ${file} ${missing.join(" ")}`,
        `npx wrangler secret bulk ${file} --env ${env.env}${cfg}${absent ? "   # creates the Worker as a placeholder until the deploy" : ""}`,
        `# keep the file's values in your password manager${missing.includes("ADMIN_TOKEN") ? " (ADMIN_TOKEN is the operator's token)" : ""}; rotating a keyring needs its current value`,
        `rm ${file}`,
      ].join("\n"),
    );
  };

  const kv = async () => {
    const ids = env.kv.flatMap((b) => {
      const id = str(b.id);
      return id !== undefined && /^[0-9a-f]{32}$/i.test(id) && !/^0+$/.test(id) ? [{ binding: b.binding, id }] : [];
    });
    if (ids.length === 0) return; // placeholders and malformed ids are refused offline already
    const args = ["kv", "namespace", "list", ...target];
    const result = await runWrangler(args);
    const list = result.code === 0 ? jsonArray(result.stdout) : null;
    if (list === null) return couldNotAsk(args, result);
    const known = new Set(list.flatMap((item) => (isTable(item) && typeof item.id === "string" ? [item.id] : [])));
    for (const { binding, id } of ids) {
      if (!known.has(id)) {
        error(
          out,
          `KV namespace ${id} (binding "${binding}" of [env.${env.env}]) is not in this Cloudflare account: the deploy would be refused.`,
          `npx wrangler kv namespace list${cfg}   # is it in another account? otherwise create one:\nnpx wrangler kv namespace create keyway --binding ${binding} --env ${env.env}${cfg}\nthen set that id under [[env.${env.env}.kv_namespaces]] in wrangler.toml`,
        );
      }
    }
  };

  const queue = async (/** @type {string} */ name) => {
    const args = ["queues", "info", name, ...target];
    const result = await runWrangler(args);
    if (result.code === 0 && new RegExp(`^Queue Name: ${escapeRegExp(name)}$`, "m").test(result.stdout)) return;
    if (/does not exist/i.test(`${result.stdout}\n${result.stderr}`)) {
      error(
        out,
        `Queue "${name}" of [env.${env.env}] does not exist: the upload would succeed and then attaching its consumer would fail, leaving the new code live without its queue.`,
        `npx wrangler queues create ${name}`,
      );
      return;
    }
    couldNotAsk(args, result);
  };

  const queueNames = new Set(
    [...env.producers.map((p) => p.queue), ...env.consumers.flatMap((c) => [c.queue, c.deadLetterQueue ?? ""])].filter((n) => n !== ""),
  );
  await Promise.all([secrets(), kv(), ...[...queueNames].map(queue)]);
  for (const [why, commands] of failures) {
    error(
      out,
      `${commands.join(", ")} failed (${why})`,
      "npx wrangler login   # or set CLOUDFLARE_API_TOKEN (and CLOUDFLARE_ACCOUNT_ID when the token sees several accounts), then deploy again",
    );
  }
  return out;
}

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
  const remote = await checkRemote(environmentView(raw, envName), {
    configPath,
    secretNames: Object.keys(secretTemplates(root)),
    runWrangler: options.runWrangler ?? defaultRunWrangler(),
  });
  return { findings: [...findings, ...remote], skipped: [] };
}

/**
 * Every companion Worker's configuration, parsed.
 * @param {Record<string, string | undefined>} [paths] another configuration, by binding
 */
async function readCompanions(paths) {
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

// ---------------------------------------------------------------------------------------------
// Fresh secrets for `wrangler secret bulk`
// ---------------------------------------------------------------------------------------------

/**
 * Writes `{ NAME: value }` for `names` (default: every secret) to `file`, each value its
 * .dev.vars.example template with every `<random>` replaced by 256 fresh random bits. The file is
 * created owner-only and never overwritten; values are not returned, so they cannot be printed.
 * @param {string} file
 * @param {string[]} [names]
 * @param {string} [root]
 * @returns {Promise<string[]>} the names written
 */
export async function writeNewSecrets(file, names = [], root = ROOT) {
  const templates = secretTemplates(root);
  const chosen = names.length > 0 ? names : Object.keys(templates);
  const unknown = chosen.filter((name) => !(name in templates));
  if (unknown.length > 0) throw new Error(`not a secret of ${DEV_VARS_EXAMPLE}: ${unknown.join(", ")}`);
  /** @type {Record<string, string>} */
  const values = {};
  for (const name of chosen) values[name] = (templates[name] ?? "").replaceAll(PLACEHOLDER, () => randomSecret());
  await mkdir(dirname(resolve(file)), { recursive: true });
  // "wx": an existing file may hold the only copy of secrets already set; never overwrite it.
  await writeFile(file, `${JSON.stringify(values, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  await chmod(file, 0o600); // the mode given to open() is filtered by the umask
  return chosen;
}

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

/** `text` as a literal inside a RegExp. @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
