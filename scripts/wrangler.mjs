/**
 * How the project's own scripts (npm start, the bench) run wrangler: the pinned copy in
 * node_modules, on the Node that runs the script. npm scripts run on the Node LTS that `npm ci`
 * installs as the `node` devDependency (node_modules/.bin comes first on their PATH), so a
 * machine that only has an older system Node still runs everything on a maintained one. A
 * script started by hand with an older Node gets a clear message instead of wrangler's refusal.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** wrangler 4.87 and later refuse Node older than 22. */
export const MIN_NODE_MAJOR = 22;

/** Throws unless this process runs on a Node that the pinned toolchain supports. */
export function assertSupportedNode() {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < MIN_NODE_MAJOR) {
    throw new Error(
      `this runs on Node ${MIN_NODE_MAJOR} or later, but ${process.execPath} is Node ${process.versions.node}. ` +
        "Run it through npm (npm start, npm test, npm run bench): npm ci installs Node 24 in node_modules/.bin and npm scripts use it.",
    );
  }
}

/**
 * The command line that runs the pinned wrangler with `args`: this process's Node and wrangler's
 * JavaScript entry point, never a PATH lookup (which could find the system Node) and never npx
 * (which may prompt or download another version on an offline machine).
 * @param {string[]} args
 * @returns {[string, string[]]}
 */
export function wranglerCommand(args) {
  assertSupportedNode();
  const entry = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  if (!existsSync(entry)) throw new Error("wrangler is not installed here; run `npm ci` first.");
  return [process.execPath, [entry, ...args]];
}

/**
 * The Workers keyway runs as, for `wrangler dev`: the API Worker first (the one served on the
 * port), then the companions its service bindings call, the people's Worker (PEOPLE,
 * wrangler.people.toml) and the GraphQL Worker (GRAPHQL, wrangler.graphql.toml), in one process.
 * Deployed, they are three Workers (scripts/deploy.mjs).
 */
export const KEYWAY_CONFIGS = ["wrangler.toml", "wrangler.people.toml", "wrangler.graphql.toml"];

/** `--config` arguments for every Worker in KEYWAY_CONFIGS. */
export const devConfigArgs = () => KEYWAY_CONFIGS.flatMap((config) => ["--config", config]);
