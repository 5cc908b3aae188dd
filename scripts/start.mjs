/**
 * `npm start`: one command from a fresh clone to a working local keyway. It creates `.dev.vars`
 * with fresh secrets if it is missing (dev-vars.mjs), runs `wrangler dev` on 127.0.0.1 with local
 * persistence, waits for /healthz, then seeds a demo organization (seed.mjs) once per state
 * directory and prints credentials plus curl commands that work as pasted. The demo credentials
 * are kept next to the local KV data, so they are reused exactly as long as that data lives. Its
 * ready banner carries two links that need no copying (issue 43): a single-use manager sign-in
 * link (POST /admin/v1/manager-sign-in-links, 5 minutes) and the GraphQL explorer with the demo's
 * API key and client credentials in the URL fragment, which the browser keeps to itself and the
 * page uses to fetch its own access tokens (src/http/explorer-page.ts).
 * wrangler runs in our process group, its output shown through dev-log.mjs (one line per
 * request, each bindings table once), and a terminal Ctrl-C or a group kill reaches it too; signals sent to this process alone are
 * forwarded, and this process exits with wrangler's status.
 *
 * Environment: PORT (default 8787), KEYWAY_PERSIST_DIR (default .wrangler/state),
 * KEYWAY_SEED=0 to skip the demo data, KEYWAY_API_BUNDLE=<file> to run the API Worker from a built
 * bundle (scripts/build/api.mjs), KEYWAY_LOCAL_TRACES=1 and KEYWAY_WRANGLER_LOGS=1 to keep
 * wrangler's local traces and debug log file, and KEYWAY_VAR_<NAME>=<value> to set any of wrangler.toml's
 * vars for this run (e.g. KEYWAY_VAR_WEBHOOK_RETRY_SCHEDULE=1s to watch a delivery exhaust its
 * retries in seconds; docs/configuration.md). KEYWAY_DEV_CONFIG=<wrangler.toml> runs that Worker
 * instead of keyway's three, under the same runner (bench/processes.mjs measures the floor so).
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { constants } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { devLogFilter, pipeLines } from "./dev-log.mjs";
import { ensureDevVars, readDevVars } from "./dev-vars.mjs";
import { DEMO_LIMITS, formatDemo, seedDemo } from "./seed.mjs";
import { assertSupportedNode, devConfigArgs, wranglerCommand } from "./wrangler.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const HOST = "127.0.0.1";
const HEALTH_POLL_MS = 250;
const HEALTH_TIMEOUT_MS = 60_000;
const DEMO_FILE = "keyway-demo.json";

/** @type {import("node:child_process").ChildProcess | undefined} */
let child;

main().catch(async (err) => {
  console.error(`\nnpm start: ${err instanceof Error ? err.message : String(err)}`);
  await stopChild();
  process.exit(1);
});

async function main() {
  assertSupportedNode();
  const port = parsePort(process.env.PORT);
  const persistDir = resolve(ROOT, process.env.KEYWAY_PERSIST_DIR || ".wrangler/state");
  const baseUrl = `http://${HOST}:${port}`;

  forwardSignals();

  const devVars = await ensureDevVars(ROOT);
  if (devVars.created) {
    console.log(`Created ${relative(ROOT, devVars.path)} from .dev.vars.example with fresh random secrets (git-ignored, not shown).`);
  } else if (devVars.added.length > 0) {
    console.log(`Added ${devVars.added.join(", ")} to ${relative(ROOT, devVars.path)} with fresh random values (not shown).`);
  }

  // With the port taken, wrangler would fail or the health check could reach some other server
  // (an older keyway, say) and seed it; refusing early gives a clear message instead.
  await assertPortFree(port);

  child = spawnWrangler(port, persistDir);
  await waitForHealth(baseUrl);

  const vars = await readDevVars(ROOT);
  const adminToken = vars.ADMIN_TOKEN;
  if (!adminToken) throw new Error("ADMIN_TOKEN is missing from .dev.vars (delete the file to have it regenerated).");
  /** @type {import("./seed.mjs").Demo | undefined} */
  let demo;
  if (process.env.KEYWAY_SEED !== "0") {
    demo = await loadOrSeedDemo(baseUrl, adminToken, persistDir);
    console.log(`\n${formatDemo(demo)}`);
  }
  const signIn = await signInLink(baseUrl, adminToken);
  console.log(`\n${readyBanner(baseUrl, relative(ROOT, persistDir) || persistDir, signIn, demo)}\n`);
}

/**
 * How long the printed sign-in link may be used in: the longest keyway allows (15 minutes), so a
 * newcomer following the README from the top still finds it working when they reach the manager
 * (with the default 5 minutes, one had 1 min 40 s left).
 */
const SIGN_IN_LINK_SECONDS = 900;

/**
 * A single-use link that signs the operator in to the manager (POST /admin/v1/manager-sign-in-links),
 * or undefined when keyway would not make one (the banner then falls back to the token sign-in).
 * @param {string} baseUrl
 * @param {string} adminToken
 * @returns {Promise<{ url: string, expires_at: string } | undefined>}
 */
async function signInLink(baseUrl, adminToken) {
  try {
    const res = await fetch(`${baseUrl}/admin/v1/manager-sign-in-links`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ expires_in: SIGN_IN_LINK_SECONDS }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = /** @type {{ data?: { url?: unknown, expires_at?: unknown } | null }} */ (await res.json());
    const { url, expires_at } = body.data ?? {};
    if (res.status === 200 && typeof url === "string" && typeof expires_at === "string") return { url, expires_at };
    console.warn(`No manager sign-in link: POST /admin/v1/manager-sign-in-links answered ${res.status}.`);
  } catch (err) {
    console.warn(`No manager sign-in link: ${err instanceof Error ? err.message : String(err)}.`);
  }
  return undefined;
}

/**
 * The explorer's link for the demo client: its API key and client credentials in the fragment,
 * which browsers never send to a server; the page takes them from there (src/http/explorer-page.ts).
 * @param {string} baseUrl
 * @param {import("./seed.mjs").Demo} demo
 */
function explorerLink(baseUrl, demo) {
  const fragment = new URLSearchParams({ api_key: demo.apiKey, client_id: demo.clientId, client_secret: demo.clientSecret });
  return `${baseUrl}/explorer#${fragment}`;
}

/**
 * Where everything is, and how to sign in to the manager, so a newcomer needs no docs to find
 * them: a sign-in link to click, and the token sign-in as the fallback. The token itself is not
 * printed: it stays in .dev.vars, which the command shows.
 * @param {string} baseUrl
 * @param {string} stateDir
 * @param {{ url: string, expires_at: string } | undefined} signIn
 * @param {import("./seed.mjs").Demo | undefined} demo
 */
function readyBanner(baseUrl, stateDir, signIn, demo) {
  const until = signIn?.expires_at.replace(/^.*T(\d\d:\d\d:\d\d).*$/, "$1 UTC");
  const tokenSignIn = `sign in with the operator token: grep ADMIN_TOKEN .dev.vars`;
  return [
    `keyway is ready on ${baseUrl}`,
    `  API       ${baseUrl}/v1  (every request needs x-api-key; the demo's curl commands above)`,
    ...(signIn
      ? [
          `  Manager   ${signIn.url}`,
          `            (signs you in once within ${SIGN_IN_LINK_SECONDS / 60} minutes, until ${until}; a new link: npm run admin -- manager sign-in-link; or at ${baseUrl}/manager, ${tokenSignIn})`,
        ]
      : [`  Manager   ${baseUrl}/manager  (${tokenSignIn})`]),
    `  API docs  ${baseUrl}/docs  (OpenAPI: ${baseUrl}/v1/openapi.json)`,
    ...(demo
      ? [
          `  GraphQL   ${explorerLink(baseUrl, demo)}`,
          `            (GraphiQL, signed in as the demo client: it fetches and renews its own access token; the credentials stay in the URL fragment, never sent to the server)`,
        ]
      : [`  GraphQL   ${baseUrl}/explorer  (GraphiQL; paste an API key and an access token into its Headers tab)`]),
    `  Links     ${baseUrl}/  (every entry point, as a page or as JSON)`,
    `  Stop with Ctrl-C; the local state stays in ${stateDir} for the next npm start.`,
  ].join("\n");
}

/** @param {string | undefined} value */
function parsePort(value) {
  if (value === undefined || value === "") return 8787;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`PORT must be an integer in 1..65535, got "${value}".`);
  return port;
}

/** @param {number} port */
function assertPortFree(port) {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once("error", (/** @type {NodeJS.ErrnoException} */ err) => {
      reject(
        err.code === "EADDRINUSE"
          ? new Error(`port ${port} on ${HOST} is already in use (another npm start?). Set PORT to use another one.`)
          : err,
      );
    });
    server.listen(port, HOST, () => server.close(() => resolvePromise(undefined)));
  });
}

/**
 * `KEYWAY_VAR_<NAME>=<value>` in the environment becomes `--var <NAME>:<value>` (after the
 * defaults above, so it wins): a local run can shorten the retry schedule or the disable period
 * without editing wrangler.toml. Names are checked (upper-case vars only); values are passed as given.
 * @param {NodeJS.ProcessEnv} env
 */
function varOverrides(env) {
  return Object.entries(env).flatMap(([key, value]) => {
    const name = /^KEYWAY_VAR_([A-Z][A-Z0-9_]*)$/.exec(key)?.[1];
    return name === undefined || value === undefined ? [] : ["--var", `${name}:${value}`];
  });
}

/**
 * @param {number} port
 * @param {string} persistDir
 */
function spawnWrangler(port, persistDir) {
  // KEYWAY_API_BUNDLE: the API Worker from that built bundle (scripts/build/api.mjs, what the
  // deploy uploads) instead of src/index.ts; test/e2e/api-bundle.test.ts serves it this way.
  const bundle = process.env.KEYWAY_API_BUNDLE;
  if (bundle) console.log(`The API Worker runs from the built bundle ${bundle} (KEYWAY_API_BUNDLE).`);
  const [bin, args] = wranglerCommand([
    "dev",
    ...(bundle ? [bundle, "--no-bundle"] : []),
    // The API Worker and the companions it calls (wrangler.people.toml, wrangler.graphql.toml);
    // KEYWAY_DEV_CONFIG=<wrangler.toml> runs another Worker under this same runner instead
    // (bench/processes.mjs: the design floor, so both are measured through the same processes).
    ...(process.env.KEYWAY_DEV_CONFIG ? ["--config", process.env.KEYWAY_DEV_CONFIG] : devConfigArgs()),
    "--port",
    String(port),
    "--ip",
    HOST,
    "--persist-to",
    persistDir,
    // Local webhook receivers are usually plain http on localhost; only local runs allow them.
    "--var",
    "WEBHOOK_ALLOW_INSECURE_TARGETS:true",
    // The local Queue keeps messages in memory: a restart loses them, and the webhook objects
    // send them again after this bound (production keeps wrangler.toml's 120 s).
    "--var",
    "WEBHOOK_REDISPATCH_SECONDS:10",
    // One readable line per request and delivery attempt (docs/observability.md) instead of JSON.
    // wrangler's own "[wrangler:info] GET /path 200 OK" line stays; ours adds the route
    // template, the error code, the API key and organization, and the request id.
    "--var",
    "LOG_FORMAT:pretty",
    ...varOverrides(process.env),
    "--show-interactive-dev-session=false",
  ]);
  const proc = spawn(bin, args, {
    cwd: ROOT,
    // stdin is not needed without the interactive session; stdout/stderr go through dev-log.mjs
    // (one line per request, each bindings table once).
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      // No telemetry, no Cloudflare API lookups and no banner: runs must work offline.
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_HIDE_BANNER: "true",
      // wrangler's local tracing store records every invocation on disk and is never pruned; it
      // cost npm start about a quarter of its throughput and 1.4 ms of CPU per request (issue 33,
      // docs/performance.md, "The local tracing store"). Off unless asked for with
      // KEYWAY_LOCAL_TRACES=1 (production has no such store).
      X_LOCAL_OBSERVABILITY: process.env.KEYWAY_LOCAL_TRACES === "1" ? "true" : "false",
      // wrangler also appends every line it prints, at any log level, to a debug log file under
      // ~/.config/.wrangler/logs, never pruned: about 1 ms of its CPU per request, 40 to 50% of
      // npm start's own (issue 43, docs/performance.md, "The API Worker's tail"). Off unless asked
      // for with KEYWAY_WRANGLER_LOGS=1; the terminal shows the same lines.
      WRANGLER_WRITE_LOGS: process.env.KEYWAY_WRANGLER_LOGS === "1" ? "true" : "false",
    },
  });
  const filter = devLogFilter({ fullTables: process.env.KEYWAY_SHOW_BINDINGS === "1" });
  if (proc.stdout) pipeLines(proc.stdout, process.stdout, filter);
  if (proc.stderr) pipeLines(proc.stderr, process.stderr, filter);
  proc.once("error", (err) => {
    console.error(`npm start: could not run wrangler: ${err.message}.`);
    process.exit(1);
  });
  proc.once("exit", (code, signal) => {
    process.exit(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 1));
  });
  return proc;
}

function forwardSignals() {
  for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM"])) {
    process.on(signal, () => {
      // Before wrangler runs (or after it is gone) there is nothing to wait for.
      if (!child || child.exitCode !== null || child.signalCode !== null) process.exit(128 + constants.signals[signal]);
      // Our exit follows wrangler's, from its "exit" handler.
      child.kill(signal);
    });
  }
}

/** Stops wrangler (TERM, then KILL after 5 s) when we give up; a no-op if it never started. */
async function stopChild() {
  const proc = child;
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.removeAllListeners("exit");
  const exited = new Promise((done) => proc.once("exit", done));
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** @param {string} baseUrl */
async function waitForHealth(baseUrl) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, HEALTH_POLL_MS));
  }
  throw new Error(`wrangler dev did not answer ${baseUrl}/healthz with 200 within ${HEALTH_TIMEOUT_MS / 1000} s; stopping it.`);
}

/**
 * Reuses the saved demo while its organization still exists in the local state (and the current
 * ADMIN_TOKEN can see it); otherwise seeds a new one and saves it.
 * @param {string} baseUrl
 * @param {string} adminToken
 * @param {string} persistDir
 */
async function loadOrSeedDemo(baseUrl, adminToken, persistDir) {
  const file = join(persistDir, DEMO_FILE);
  /** @type {import("./seed.mjs").Demo | undefined} */
  let saved;
  try {
    saved = JSON.parse(await readFile(file, "utf8"));
  } catch {
    saved = undefined; // missing or unreadable: seed afresh
  }
  if (saved?.organizationId) {
    const res = await fetch(`${baseUrl}/admin/v1/organizations/${encodeURIComponent(saved.organizationId)}`, {
      headers: { Authorization: `Bearer ${adminToken}` },
    });
    await res.body?.cancel();
    // The port may differ from the run that saved the file; the printed URLs use this run's.
    if (res.status === 200) {
      // A demo saved before the demo key had its development limit (seed.mjs DEMO_LIMITS) gets it
      // now, once: the banner's session and the recipes are written for that limit.
      if (saved.limits?.per_second !== DEMO_LIMITS.per_second && (await applyDemoLimits(baseUrl, adminToken, saved))) {
        await writeFile(file, `${JSON.stringify({ ...saved, limits: DEMO_LIMITS }, null, 2)}\n`, { mode: 0o600 });
      }
      return { ...saved, baseUrl };
    }
  }

  const demo = await seedDemo({ baseUrl, adminToken, fetch: (input, init) => fetch(input, init) });
  await mkdir(persistDir, { recursive: true });
  await writeFile(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600); // an older file keeps its mode on overwrite, and umask filters it on create
  return demo;
}

/**
 * Gives a saved demo's key the development limit and records that in the saved file.
 * @param {string} baseUrl
 * @param {string} adminToken
 * @param {import("./seed.mjs").Demo} demo
 * @returns {Promise<boolean>} whether the key took it
 */
async function applyDemoLimits(baseUrl, adminToken, demo) {
  const path = `/admin/v1/organizations/${encodeURIComponent(demo.organizationId)}/api-keys/${encodeURIComponent(demo.apiKeyId)}`;
  const res = await fetch(`${baseUrl}${path}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ limits: DEMO_LIMITS }),
  });
  await res.body?.cancel();
  if (res.status !== 200) console.warn(`The demo key keeps its old limit: PATCH ${path} answered ${res.status}.`);
  return res.status === 200;
}
