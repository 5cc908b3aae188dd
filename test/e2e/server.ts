/**
 * A real `npm start` for the end-to-end tests: `startKeyway()` runs `node scripts/start.mjs` on a
 * free port with a temporary state directory (so it never touches a developer's running instance
 * or local data), in its own process group, waits for "keyway is ready on", and hands back the
 * base URL, everything printed so far, the demo tenant read out of that printout (as a person
 * would read it), and the ADMIN_TOKEN from `.dev.vars`. `stop()` ends the whole group (start.mjs,
 * wrangler and workerd), waits until every member is gone, deletes the state directory and removes
 * `.dev.vars` if this run created it. `restart()` is a restart of the same deployment: same state
 * directory and the same `.dev.vars` (its signing keys and ADMIN_TOKEN are part of that
 * deployment), so tokens issued before it are judged by the same keys after it.
 *
 * Most files need a running keyway, not a private one: `sharedKeyway()` is the one `npm start` the
 * e2e and browser projects' global setup started (test/e2e/global-setup.ts) for every file, which
 * run side by side against it and own their data (organizations of their own). A file whose test
 * restarts or kills the server, or runs it with other settings, starts its own with `startKeyway()`
 * and says why in its first lines.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { parseDevVars } from "../../scripts/dev-vars.mjs";
import { seedDemo } from "../../scripts/seed.mjs";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const DEV_VARS = join(ROOT, ".dev.vars");
export const READY = "keyway is ready on";
const READY_TIMEOUT_MS = 90_000;

/** The demo tenant `npm start` seeds and prints. */
export interface Demo {
  organizationId: string;
  userId: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  apiKeyId: string;
}

export interface Keyway {
  /** `http://127.0.0.1:<port>`, as npm start prints it. */
  readonly baseUrl: string;
  readonly port: number;
  /** stdout and stderr of the whole group so far (it keeps growing while the server runs). */
  readonly output: string;
  readonly demo: Demo;
  readonly adminToken: string;
  /** Whether `.dev.vars` existed before this run (if not, npm start created it and stop() removes it). */
  readonly devVarsExisted: boolean;
  /** Where the local KV, Durable Object and Queue state lives (wrangler dev --persist-to). */
  readonly persistDir: string;
  stop(): Promise<void>;
  /** Ends the whole process group at once with SIGKILL, as a crash would (no graceful shutdown). */
  kill(): Promise<void>;
  /**
   * Ends this run (gracefully, or with SIGKILL when `crash`) and starts another on the same state
   * directory and the same `.dev.vars`; resolves to the new run once it is ready.
   */
  restart(options?: { crash?: boolean }): Promise<Keyway>;
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal` to process group `pgid`; false once no process of the group is left. */
function signalGroup(pgid: number, signal: string | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** A port nothing listens on right now: bind port 0, note what the OS chose, release it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no port assigned"))));
    });
  });
}

/** Reads the demo block of npm start's output (scripts/seed.mjs formatDemo); throws naming what is missing. */
export function parseDemo(output: string): Demo {
  const field = (label: string): string => {
    const value = new RegExp(`^ {2}${label} +(\\S+)$`, "m").exec(output)?.[1];
    if (value === undefined) throw new Error(`npm start printed no "${label}":\n${output}`);
    return value;
  };
  return {
    organizationId: field("organization id"),
    userId: field("user id"),
    clientId: field("client_id"),
    clientSecret: field("client_secret"),
    apiKey: field("api key"),
    apiKeyId: field("api key id"),
  };
}

export interface StartOptions {
  /**
   * Where the local state lives: it then outlives stop() (the caller removes it), and a second
   * start on it is a restart of the same deployment. Without it, a temporary directory.
   */
  persistDir?: string;
  /** wrangler.toml vars set for this run (npm start's KEYWAY_VAR_<NAME>), e.g. a short retry schedule. */
  vars?: Record<string, string>;
  /** Everything the run prints is appended there too, as it comes (the shared server's output, read by other processes). */
  logFile?: string;
  /**
   * Whether wrangler prints its "[wrangler:info] GET /path 200 OK" line for every request, as it
   * does for a person running npm start. Off by default (wrangler's log level `warn`): each line is
   * a request from workerd to wrangler's Node process and a line through two pipes, about 1 ms of
   * CPU (wrangler's and workerd's) and a third of the wall time of a request on a two-core machine,
   * and only start.test.ts reads them. The Workers' own lines, warnings and errors are printed
   * either way.
   */
  requestLines?: boolean;
}

/** Starts `npm start` (scripts/start.mjs) with the demo seeded; resolves once it is ready. */
export async function startKeyway(options: StartOptions = {}): Promise<Keyway> {
  return launch(options, await exists(DEV_VARS));
}

/** How many times a start that lost a port to another server is tried again. */
const PORT_RETRIES = 4;

/** One run of npm start; `devVarsExisted` is carried over by restart() from the first run. */
async function launch(options: StartOptions, devVarsExisted: boolean, retries = PORT_RETRIES): Promise<Keyway> {
  const { vars = {}, logFile } = options;
  const port = await freePort();
  const persistDir = options.persistDir ?? (await mkdtemp(join(tmpdir(), "keyway-e2e-")));
  let output = "";

  // detached: its own process group, so stop() can end wrangler and workerd with it.
  const proc: ChildProcess = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      PORT: String(port),
      KEYWAY_PERSIST_DIR: persistDir,
      KEYWAY_SEED: "1",
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_HIDE_BANNER: "true",
      ...(options.requestLines === true ? {} : { WRANGLER_LOG: "warn" }),
      ...Object.fromEntries(Object.entries(vars).map(([name, value]) => [`KEYWAY_VAR_${name}`, value])),
    },
  });
  const exited = new Promise<void>((done) => proc.once("exit", () => done()));
  proc.stdout?.setEncoding("utf8");
  proc.stderr?.setEncoding("utf8");
  const take = (chunk: string) => {
    output += chunk;
    if (logFile !== undefined) appendFileSync(logFile, chunk);
  };
  proc.stdout?.on("data", take);
  proc.stderr?.on("data", take);

  let ended: Promise<void> | undefined;
  /** Ends the whole group (SIGTERM, then SIGKILL if anything is left); keeps state and .dev.vars. */
  const end = (): Promise<void> =>
    (ended ??= (async () => {
      const pid = proc.pid;
      if (pid !== undefined) {
        // The whole group: start.mjs, wrangler and the workerd processes it runs.
        signalGroup(pid, "SIGTERM");
        // Wait for every member, not just start.mjs: workerd may outlive it by a moment, and it
        // must be gone before its state directory is removed or the next test starts another one.
        const deadline = Date.now() + 10_000;
        while (signalGroup(pid, 0) && Date.now() < deadline) await sleep(100);
        if (signalGroup(pid, "SIGKILL")) await sleep(200);
        await exited;
      }
    })());

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await end();
      if (options.persistDir === undefined) await rm(persistDir, { recursive: true, force: true });
      if (!devVarsExisted) await rm(DEV_VARS, { force: true });
    })());

  const crash = async (): Promise<void> => {
    if (proc.pid !== undefined) signalGroup(proc.pid, "SIGKILL");
    await end();
  };
  const kill = async (): Promise<void> => {
    await crash();
    await stop();
  };
  const restart = async (restartOptions: { crash?: boolean } = {}): Promise<Keyway> => {
    await (restartOptions.crash === true ? crash() : end());
    return launch({ ...options, persistDir }, devVarsExisted);
  };

  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!output.includes(READY)) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`npm start exited (${proc.exitCode ?? proc.signalCode}) before ready:\n${output}`);
      }
      if (Date.now() > deadline) throw new Error(`npm start not ready after ${READY_TIMEOUT_MS} ms:\n${output}`);
      await sleep(200);
    }
    const demo = parseDemo(output);
    const adminToken = parseDevVars(await readFile(DEV_VARS, "utf8")).ADMIN_TOKEN ?? "";
    if (adminToken === "") throw new Error("ADMIN_TOKEN is missing from .dev.vars");
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      port,
      get output() {
        return output;
      },
      demo,
      adminToken,
      devVarsExisted,
      persistDir,
      stop,
      kill,
      restart,
    };
  } catch (err) {
    // Several servers start side by side in a run (up to eight e2e files at once), and wrangler
    // picks its workers' internal ports itself: one taken between its choice and its bind ends the
    // start. That is the machine, not keyway, so the start is tried again, after a random pause so
    // that two servers that collided do not collide again (on the same state and .dev.vars), up to
    // PORT_RETRIES times; anything else fails.
    if (retries > 0 && output.includes("Address already in use")) {
      await end();
      if (options.persistDir === undefined) await rm(persistDir, { recursive: true, force: true });
      await sleep(200 + Math.floor(Math.random() * 800));
      return launch(options, devVarsExisted, retries - 1);
    }
    await stop();
    throw err;
  }
}

/** What the global setup hands every file of the shared server (vitest's provide/inject). */
export interface SharedKeywayInfo {
  baseUrl: string;
  port: number;
  demo: Demo;
  adminToken: string;
  devVarsExisted: boolean;
  persistDir: string;
  /** Where the server's output is appended as it comes (`output` reads it). */
  logFile: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    keyway: SharedKeywayInfo;
  }
}

/**
 * The `npm start` every file of the e2e and browser projects shares (test/e2e/global-setup.ts).
 * Its output is read from the log file the setup appends to; stopping, killing or restarting it is
 * refused, since other files are using it: a test that needs that starts its own (startKeyway).
 * `demo` is the tenant npm start seeded and printed: files only read it (start.test.ts reads the
 * banner); a file that changes what it uses takes one of its own (sharedKeywayWithOwnDemo).
 */
export function sharedKeyway(): Keyway {
  const info = inject("keyway");
  return sharedWith(info, info.demo);
}

/**
 * The shared keyway with a demo tenant of this file's own, seeded exactly as npm start seeds its
 * demo (scripts/seed.mjs: "Demo organization", "Demo user", "Demo credential", "Demo key" with the
 * development limit), so the file sees what a person sees after npm start while owning its data.
 */
export async function sharedKeywayWithOwnDemo(): Promise<Keyway> {
  const info = inject("keyway");
  const seeded = await seedDemo({ baseUrl: info.baseUrl, adminToken: info.adminToken });
  const { organizationId, userId, clientId, clientSecret, apiKey, apiKeyId } = seeded;
  return sharedWith(info, { organizationId, userId, clientId, clientSecret, apiKey, apiKeyId });
}

function sharedWith(info: SharedKeywayInfo, demo: Demo): Keyway {
  const notYours = (what: string) => () =>
    Promise.reject(new Error(`the shared keyway cannot be ${what}: start your own with startKeyway()`));
  return {
    baseUrl: info.baseUrl,
    port: info.port,
    get output() {
      return readFileSync(info.logFile, "utf8");
    },
    demo,
    adminToken: info.adminToken,
    devVarsExisted: info.devVarsExisted,
    persistDir: info.persistDir,
    stop: notYours("stopped"),
    kill: notYours("killed"),
    restart: notYours("restarted"),
  };
}

/** A webhook receiver on loopback (loopback targets are allowed under npm start). */
export interface Receiver {
  /** `http://127.0.0.1:<port>`: `/token` is its token endpoint, any other path its webhook URL. */
  url: string;
  /** How many times each webhook-id has arrived. */
  ids: Map<string, number>;
  close(): Promise<void>;
}

/**
 * Starts a receiver: `/token` issues a token; every other path accepts the webhook with 204,
 * after `delayMs` (so attempts can be caught in flight), counting its webhook-id.
 */
export async function startReceiver(options: { delayMs?: number } = {}): Promise<Receiver> {
  const ids = new Map<string, number>();
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/token") {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ access_token: "local-token", token_type: "Bearer", expires_in: 300 }));
        return;
      }
      const id = String(req.headers["webhook-id"] ?? "");
      ids.set(id, (ids.get(id) ?? 0) + 1);
      setTimeout(() => {
        res.writeHead(204);
        res.end();
      }, options.delayMs ?? 0);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, ids, close: () => new Promise((done) => server.close(() => done())) };
}

/** A loopback server answering every path with one public key set (a fresh EC P-256 key). */
export async function serveJwks(): Promise<{ url: string; close(): Promise<void> }> {
  const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ format: "jwk" });
  const body = JSON.stringify({ keys: [{ ...jwk, kid: "walk-1", alg: "ES256", use: "sig" }] });
  const server = createHttpServer((req, res) => {
    req.resume();
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(body);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(() => done())) };
}

/** The demo tenant's access token, issued with the client credentials npm start printed. */
export async function demoToken(keyway: Keyway): Promise<string> {
  const issued = await fetch(`${keyway.baseUrl}/v1/oauth`, {
    method: "POST",
    headers: { "x-api-key": keyway.demo.apiKey, "Content-Type": "application/json" },
    body: JSON.stringify({ client_id: keyway.demo.clientId, client_secret: keyway.demo.clientSecret, grant_type: "client_credentials" }),
  });
  return ((await issued.json()) as { data: { access_token: string } }).data.access_token;
}

/** A call to the demo tenant's /v1 API with `token`: the answer's status, its `data`, and the whole envelope. */
export async function demoApi<T>(
  keyway: Keyway,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; data: T; raw: unknown }> {
  const res = await fetch(`${keyway.baseUrl}${path}`, {
    method,
    headers: {
      "x-api-key": keyway.demo.apiKey,
      Authorization: `Bearer ${token}`,
      ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const raw = (await res.json()) as { data: T };
  return { status: res.status, data: raw.data, raw };
}

/** One request a scripted receiver got. */
export interface Arrival {
  /** `token` for its OAuth endpoint, `webhook` for anything else. */
  kind: "token" | "webhook";
  /** performance.now() when the request's body had arrived. */
  at: number;
  webhookId: string;
  authorization: string;
  /** The event's id (from the body), for webhooks. */
  eventId: string;
  /** The event's type (from the body), for webhooks. */
  eventType?: string;
  /** The raw body and the headers (Standard Webhooks verification), for webhooks. */
  body?: string;
  headers?: Record<string, string>;
  /** What the receiver answered. */
  status: number;
}

/** What a scripted receiver answers a webhook: a status, headers, and how long it takes. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  delayMs?: number;
}

export interface ScriptedReceiver {
  url: string;
  arrivals: Arrival[];
  /** Token requests so far. */
  tokens(): number;
  close(): Promise<void>;
}

/**
 * A receiver whose webhook answers come from `answer` (given the arrival and how many webhooks came
 * before it) and whose token endpoint (`/token`) issues `tok-1`, `tok-2` ... valid for `expiresIn`
 * seconds. Every request is recorded with its arrival time, so tests can check pauses and rates.
 */
export async function startScriptedReceiver(
  answer: (arrival: Arrival, index: number) => Answer,
  options: {
    expiresIn?: number;
    /** Holds each token request open until the promise it returns settles (a receiver's slow OAuth server). */
    holdToken?: () => Promise<void>;
    /** The token answer's token_type (default Bearer; DPoP for a configuration that asks for DPoP-bound tokens). */
    tokenType?: string;
  } = {},
): Promise<ScriptedReceiver> {
  const arrivals: Arrival[] = [];
  let tokens = 0;
  let webhooks = 0;
  const server = createHttpServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const at = performance.now();
      if (req.url === "/token") {
        tokens++;
        arrivals.push({ kind: "token", at, webhookId: "", authorization: "", eventId: "", status: 200 });
        const issued = tokens;
        const reply = () => {
          if (res.destroyed) return;
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end(
            JSON.stringify({
              access_token: `tok-${issued}`,
              token_type: options.tokenType ?? "Bearer",
              expires_in: options.expiresIn ?? 300,
            }),
          );
        };
        if (options.holdToken) void options.holdToken().then(reply);
        else reply();
        return;
      }
      let eventId = "";
      let eventType = "";
      try {
        const parsed = JSON.parse(body) as { id?: unknown; type?: unknown };
        eventId = String(parsed.id ?? "");
        eventType = String(parsed.type ?? "");
      } catch {
        // not an event: recorded without its id
      }
      const arrival: Arrival = {
        kind: "webhook",
        at,
        webhookId: String(req.headers["webhook-id"] ?? ""),
        authorization: String(req.headers.authorization ?? ""),
        eventId,
        eventType,
        body,
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        status: 0,
      };
      const reply = answer(arrival, webhooks++);
      arrival.status = reply.status;
      arrivals.push(arrival);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status, reply.headers ?? {});
        res.end();
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    tokens: () => tokens,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** `data` of keyway's JSON envelope; a non-2xx answer throws with its status and body. */
export async function envelopeData<T>(res: Response): Promise<T> {
  const body = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

/** A call to the operator API (`/admin/v1`) of a running keyway, with its ADMIN_TOKEN. */
export function operatorCall(keyway: Keyway, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${keyway.baseUrl}/admin/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${keyway.adminToken}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

/** An organization's client against a running keyway: its id, and requests with its API key and access token. */
export interface E2eTenant {
  orgId: string;
  api(path: string, init?: RequestInit): Promise<Response>;
}

/** An organization provisioned through the operator API: its user, client credential and API key. */
export interface Provisioned {
  orgId: string;
  userId: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  apiKeyId: string;
}

/** A new organization with a user, a client credential and an API key of `limits` (and `credits`), through the operator API. */
export async function provisionOn(
  keyway: Keyway,
  options: { name?: string; limits?: { per_second: number; per_day: number }; credits?: { remaining: number } } = {},
): Promise<Provisioned> {
  const operator = async <T>(path: string, body: unknown): Promise<T> => envelopeData<T>(await operatorCall(keyway, "POST", path, body));
  const org = await operator<{ id: string }>("/organizations", { name: options.name ?? "E2E" });
  const user = await operator<{ id: string }>(`/organizations/${org.id}/users`, { name: "Ada" });
  const cred = await operator<{ client_id: string; client_secret: string }>(
    `/organizations/${org.id}/users/${user.id}/client-credentials`,
    {},
  );
  const key = await operator<{ id: string; api_key: string }>(`/organizations/${org.id}/api-keys`, {
    limits: options.limits ?? { per_second: 1000, per_day: 1_000_000 },
    ...(options.credits ? { credits: options.credits } : {}),
  });
  return {
    orgId: org.id,
    userId: user.id,
    clientId: cred.client_id,
    clientSecret: cred.client_secret,
    apiKey: key.api_key,
    apiKeyId: key.id,
  };
}

/** A new organization with a user, a client credential, an API key (high limits) and an access token, made through the operator API. */
export async function tenantOn(keyway: Keyway, name = "E2E"): Promise<E2eTenant> {
  const p = await provisionOn(keyway, { name });
  const issued = await fetch(`${keyway.baseUrl}/v1/oauth`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": p.apiKey },
    body: JSON.stringify({ client_id: p.clientId, client_secret: p.clientSecret, grant_type: "client_credentials" }),
  });
  const token = ((await issued.json()) as { data: { access_token: string } }).data.access_token;
  return {
    orgId: p.orgId,
    api: (path, init = {}) =>
      fetch(`${keyway.baseUrl}${path}`, {
        ...init,
        headers: { "x-api-key": p.apiKey, Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
      }),
  };
}
