/**
 * The preflight's remote checks, skipped offline: wrangler asked (through the pinned wrangler, or
 * KEYWAY_WRANGLER's stub in tests) for the Worker's secrets, the account's KV namespaces and each
 * queue.
 */

import { execFile } from "node:child_process";
import process from "node:process";
import { wranglerCommand } from "../wrangler.mjs";
import { isTable, ROOT, str } from "./config.mjs";
import { configFlag, error } from "./offline.mjs";
/** @typedef {import("./config.mjs").Finding} Finding */
/** @typedef {import("./config.mjs").WranglerResult} WranglerResult */
/** @typedef {import("./config.mjs").RunWrangler} RunWrangler */
/** @typedef {import("./config.mjs").EnvView} EnvView */

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
export function tail(/** @type {WranglerResult} */ result) {
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
export function jsonArray(stdout) {
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
 * `only: "secrets"`: the secrets alone, of a companion that shares the API Worker's (its fix uploads
 * the API Worker's values, never new ones); `sharedWith`: the configurations of such companions,
 * whose upload of the same file the API Worker's fix lists too.
 * @param {{ configPath: string, secretNames: string[], runWrangler: RunWrangler, only?: "secrets", sharedWith?: string[] }} options
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
    const upload = (/** @type {string} */ to) =>
      `npx wrangler secret bulk ${file} --env ${env.env}${to}${absent ? "   # creates the Worker as a placeholder until the deploy" : ""}`;
    const shares = (options.sharedWith ?? []).map((path) => upload(configFlag(path)));
    error(
      out,
      `${absent ? `The Worker "${env.name}" does not exist yet, so it has no secrets` : `The Worker "${env.name}" lacks the secret${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`}: every route that needs ${missing.length > 1 ? "them" : "it"} would answer 503.`,
      options.only === "secrets"
        ? [
            // Never fresh values here: this Worker verifies and decrypts what the API Worker signs
            // and seals, and signs in with its operator token.
            `# the API Worker's values, never new ones: put them (from your password manager) in ${file}, then`,
            upload(cfg),
            `rm ${file}`,
          ].join("\n")
        : [
            `node scripts/preflight.mjs --new-secrets ${file} ${missing.join(" ")}`,
            upload(cfg),
            ...shares,
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
  await Promise.all(options.only === "secrets" ? [secrets()] : [secrets(), kv(), ...[...queueNames].map(queue)]);
  for (const [why, commands] of failures) {
    error(
      out,
      `${commands.join(", ")} failed (${why})`,
      "npx wrangler login   # or set CLOUDFLARE_API_TOKEN (and CLOUDFLARE_ACCOUNT_ID when the token sees several accounts), then deploy again",
    );
  }
  return out;
}

/** `text` as a literal inside a RegExp. @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
