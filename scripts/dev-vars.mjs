/**
 * Local secrets for `npm start`. wrangler dev reads `.dev.vars` from the project root, and the
 * Worker refuses to run without ADMIN_TOKEN and TOKEN_SIGNING_KEYS (src/config.ts), so the first
 * start derives `.dev.vars` from the committed `.dev.vars.example`, giving every `<random>` its
 * own 256 random bits. An existing `.dev.vars` keeps every value it has (a developer may have
 * chosen them, and rewriting would invalidate tokens and the seeded demo); only settings that a
 * newer `.dev.vars.example` introduced are appended, so an upgrade never leaves the Worker
 * without a secret it needs. Secret values are never printed; callers learn which names changed.
 */
import { randomBytes } from "node:crypto";
import { appendFile, chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const DEV_VARS = ".dev.vars";
export const DEV_VARS_EXAMPLE = ".dev.vars.example";
export const PLACEHOLDER = "<random>";

/** 32 bytes from the OS CSPRNG as base64url without padding: 43 characters. */
export function randomSecret() {
  return randomBytes(32).toString("base64url");
}

/**
 * Creates `<dir>/.dev.vars` from `<dir>/.dev.vars.example`, or appends to an existing one the
 * settings it lacks.
 * @param {string} dir project root
 * @returns {Promise<{ created: boolean, added: string[], path: string }>}
 */
export async function ensureDevVars(dir) {
  const path = join(dir, DEV_VARS);
  const template = await readFile(join(dir, DEV_VARS_EXAMPLE), "utf8");
  // A replacer function runs once per match, so each placeholder gets a distinct secret.
  const fill = (/** @type {string} */ text) => text.replaceAll(PLACEHOLDER, () => randomSecret());
  try {
    // "wx" fails if the file exists, so a concurrent or earlier file is never overwritten.
    await writeFile(path, fill(template), { mode: 0o600, flag: "wx" });
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code !== "EEXIST") throw err;
    const existing = parseDevVars(await readFile(path, "utf8"));
    const missing = Object.entries(parseDevVars(template)).filter(([name]) => !(name in existing));
    if (missing.length > 0) {
      const lines = missing.map(([name, value]) => `${name}=${fill(value)}`).join("\n");
      await appendFile(path, `\n# Added by npm start from a newer .dev.vars.example\n${lines}\n`);
    }
    return { created: false, added: missing.map(([name]) => name), path };
  }
  // The mode given to open() is filtered by the umask; secrets must be owner-only regardless.
  await chmod(path, 0o600);
  return { created: true, added: [], path };
}

/**
 * Parses dotenv-style KEY=VALUE lines; blank lines and `#` comments are skipped and one pair of
 * surrounding quotes is removed, which covers what wrangler accepts in `.dev.vars`.
 * @param {string} text
 * @returns {Record<string, string>}
 */
export function parseDevVars(text) {
  /** @type {Record<string, string>} */
  const vars = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
      value = value.slice(1, -1);
    }
    vars[key] = value;
  }
  return vars;
}

/**
 * @param {string} dir project root
 * @returns {Promise<Record<string, string>>}
 */
export async function readDevVars(dir) {
  return parseDevVars(await readFile(join(dir, DEV_VARS), "utf8"));
}
