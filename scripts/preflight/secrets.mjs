/**
 * Fresh secrets for `wrangler secret bulk`: written in the shapes of .dev.vars.example to a
 * mode-600 file, never printed.
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { DEV_VARS_EXAMPLE, PLACEHOLDER, randomSecret } from "../dev-vars.mjs";
import { ROOT, secretTemplates } from "./config.mjs";

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
