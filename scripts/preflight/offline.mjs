/**
 * The preflight's offline checks of one environment: name and compatibility flags, bindings kept
 * from the top level, KV ids, Durable Object migrations, queues and their dead-letter queues,
 * datasets, vars, isolation from other environments, companion Workers and how the Worker is
 * served. Each finding names the exact fix.
 */

import { isAbsolute, relative, resolve } from "node:path";
import process from "node:process";
import {
  COMPANIONS,
  DEFAULT_CONFIG,
  deadLetterSuffixOfCode,
  environmentNames,
  environmentView,
  PRODUCTION,
  ROOT,
  STRICT_EGRESS_FLAG,
  secretTemplates,
  str,
  strings,
  table,
  tables,
  topLevelView,
} from "./config.mjs";
import { INTEGER_VARS, parseSchedule, placeholderHost, publicOrigin } from "./values.mjs";
/** @typedef {import("./config.mjs").Companion} Companion */
/** @typedef {import("./config.mjs").Finding} Finding */
/** @typedef {import("./config.mjs").Table} Table */
/** @typedef {import("./config.mjs").EnvView} EnvView */

// ---------------------------------------------------------------------------------------------
// Offline checks
// ---------------------------------------------------------------------------------------------

/**
 * How fix commands name the config file: nothing for the repository's own wrangler.toml.
 * @param {string} configPath
 */
export function configFlag(configPath) {
  const abs = resolve(configPath);
  if (abs === DEFAULT_CONFIG) return "";
  const rel = relative(process.cwd(), abs);
  return ` --config ${rel.startsWith("..") || isAbsolute(rel) ? abs : rel}`;
}

/** A TOML string literal. */
export const q = (/** @type {string} */ s) => JSON.stringify(s);

/**
 * @param {Finding[]} out
 * @param {string} message
 * @param {string} fix
 */
export const error = (out, message, fix) => out.push({ level: "error", message, fix });
/**
 * @param {Finding[]} out
 * @param {string} message
 * @param {string} fix
 */
export const warning = (out, message, fix) => out.push({ level: "warning", message, fix });
/**
 * An error that only provisioning fixes (see Finding.provision).
 * @param {Finding[]} out
 * @param {string} message
 * @param {string} fix
 */
export const unprovisioned = (out, message, fix) => out.push({ level: "error", message, fix, provision: true });

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
export function checkNameAndFlags(out, env, others, section) {
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
      `${section} runs without the compatibility flag "${STRICT_EGRESS_FLAG}": webhooks and receivers' token requests could reach the zone's own origin, or a private address a public name resolves to (src/lib/ssrf.ts).`,
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
export function checkBindingParity(out, top, env) {
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
export function checkKv(out, env, cfg) {
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
export function checkDurableObjects(out, env) {
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
export function checkQueues(out, env, dlqSuffix) {
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
export function checkDatasets(out, env) {
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
export function checkVars(out, top, env, secretNames) {
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
export function checkIsolation(out, env, others) {
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
export function checkCompanion(out, env, companion, raw, file) {
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
  if (companion.shares) checkSharedBindings(out, env, mine, file, role);
}

/**
 * A companion that reaches the systems of record itself (the people's Worker) must reach the API
 * Worker's: the same KV namespace, Durable Object bindings to the API Worker's own classes
 * (`script_name` its name in that environment), the same queues and dataset, and the same vars,
 * or the manager would read one deployment's data and the API serve another's.
 * @param {Finding[]} out
 * @param {EnvView} env the API Worker's environment
 * @param {EnvView} mine the companion's
 * @param {string} file
 * @param {string} role
 */
export function checkSharedBindings(out, env, mine, file, role) {
  const s = `env.${env.env}`;
  const differ = (/** @type {string} */ what, /** @type {string} */ fix) =>
    error(out, `${file}'s [${s}] ${what}: the ${role} would read or change another deployment's data than the API Worker's.`, fix);
  for (const kv of env.kv) {
    const theirs = mine.kv.find((b) => b.binding === kv.binding);
    if (theirs?.id !== kv.id) {
      differ(
        `binds KV "${kv.binding}" to ${q(String(theirs?.id ?? "nothing"))}, not the API Worker's ${q(String(kv.id))}`,
        `in ${file}:\n[[${s}.kv_namespaces]]\nbinding = ${q(kv.binding)}\nid = ${q(String(kv.id))}`,
      );
    }
  }
  for (const dobj of env.durableObjects) {
    const theirs = mine.durableObjects.find((b) => b.name === dobj.name);
    if (theirs?.className !== dobj.className || theirs.scriptName !== env.name) {
      differ(
        `does not bind "${dobj.name}" to the API Worker's class ${dobj.className} of "${env.name}"`,
        `in ${file}:\n[[${s}.durable_objects.bindings]]\nname = ${q(dobj.name)}\nclass_name = ${q(dobj.className)}\nscript_name = ${q(env.name)}`,
      );
    }
  }
  for (const producer of env.producers) {
    const theirs = mine.producers.find((b) => b.binding === producer.binding);
    if (theirs?.queue !== producer.queue) {
      differ(
        `does not send "${producer.binding}" to the API Worker's queue "${producer.queue}"`,
        `in ${file}:\n[[${s}.queues.producers]]\nbinding = ${q(producer.binding)}\nqueue = ${q(producer.queue)}`,
      );
    }
  }
  for (const dataset of env.datasets) {
    const theirs = mine.datasets.find((b) => b.binding === dataset.binding);
    if (theirs?.dataset !== dataset.dataset) {
      differ(
        `does not write "${dataset.binding}" to the API Worker's dataset ${q(String(dataset.dataset))}`,
        `in ${file}:\n[[${s}.analytics_engine_datasets]]\nbinding = ${q(dataset.binding)}\ndataset = ${q(String(dataset.dataset))}`,
      );
    }
  }
  for (const [name, value] of Object.entries(env.vars)) {
    if (mine.vars[name] !== value) {
      differ(
        `sets ${name} to ${q(String(mine.vars[name] ?? "nothing"))}, not the API Worker's ${q(String(value))}`,
        `in ${file}, under [${s}.vars]:\n${name} = ${q(String(value))}`,
      );
    }
  }
}

/**
 * Warnings only: things a deploy survives but an operator would want to know.
 * @param {Finding[]} out
 * @param {EnvView} env
 */
export function checkServing(out, env) {
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
