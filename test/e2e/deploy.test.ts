/**
 * The deploy preflight (scripts/preflight.mjs, run by `npm run deploy` and `npm run
 * check:deploy`): each way a deploy would go half-wrong is refused with the command or the
 * wrangler.toml lines that fix it. Broken configurations are copies of the repository's
 * wrangler.toml with real-looking ids filled in and one thing broken, written to a temporary
 * directory with a people's Worker configuration consistent with it (peopleFor), so that each
 * test sees the one error it breaks; the checks that ask Cloudflare run against a stub wrangler
 * (a shell script printing canned answers), so nothing here touches the network. The preflight's value rules are compared
 * with src/config.ts, the Worker's own, so the two cannot drift apart unnoticed.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import process from "node:process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  COMPANIONS,
  defaultRunWrangler,
  type Finding,
  formatReport,
  parseSchedule,
  passed,
  preflight,
  type RunWrangler,
  writeNewSecrets,
} from "../../scripts/preflight.mjs";
import { ROOT } from "./server";

const run = promisify(execFile);
const REAL = await readFile(join(ROOT, "wrangler.toml"), "utf8");
/**
 * The people's Worker's configuration (keyway-people), which the API Worker's PEOPLE binding
 * names; it shares the API Worker's KV namespace, Durable Objects, queues, dataset and vars.
 */
const REAL_PEOPLE = await readFile(join(ROOT, "wrangler.people.toml"), "utf8");
/** The companion Workers' configurations, in the order they are deployed (before the API Worker). */
const PEOPLE_TOML = join(ROOT, "wrangler.people.toml");
const GRAPHQL_TOML = join(ROOT, "wrangler.graphql.toml");
/** The API Worker's bundle, built by scripts/build/api.mjs and uploaded with --no-bundle. */
const API_MAIN = join(ROOT, "dist", "api-build", "index.js");
const STAGING_KV = "5a1f0c3e8b9d4e2fa7c6b5d4e3f2a1b0";
const PRODUCTION_KV = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b";
const PUBLIC = "https://keyway.acme.workers.dev";
const SECRETS = ["ADMIN_TOKEN", "TOKEN_SIGNING_KEYS", "WEBHOOK_ENCRYPTION_KEYS"];
/** The delivery queues of each environment (three lanes) and its dead-letter queue. */
const LANES = ["", "-new", "-slow", "-dlq"];
const QUEUES = ["keyway-webhooks", "keyway-staging-webhooks"].flatMap((q) => LANES.map((lane) => `${q}${lane}`));
/** The fast lane's consumer in [env.production], the one these tests break. */
const FAST_CONSUMER = 'queue = "keyway-webhooks"\nmax_batch_size = 10\nmax_batch_timeout = 0\nmax_retries = 5\n';
const KV_CREATE = "npx wrangler kv namespace create keyway --binding KV --env production";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "keyway-deploy-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Replaces `from` (which must occur exactly once: a test must break what it says it breaks). */
function edit(toml: string, from: string | RegExp, to: string): string {
  const count =
    typeof from === "string" ? toml.split(from).length - 1 : (toml.match(new RegExp(from.source, `${from.flags}g`)) ?? []).length;
  if (count !== 1) throw new Error(`expected exactly one ${String(from)} in the configuration, found ${count}`);
  return toml.replace(from, to);
}

/** The repository's wrangler.toml as an operator would leave it: ids and the public origin set. */
function filled(): string {
  let toml = edit(REAL, /(\[\[env\.staging\.kv_namespaces\]\]\nbinding = "KV"\nid = )"0+"/, `$1"${STAGING_KV}"`);
  toml = edit(toml, /(\[\[env\.production\.kv_namespaces\]\]\nbinding = "KV"\nid = )"0+"/, `$1"${PRODUCTION_KV}"`);
  return edit(toml, /(\[env\.production\.vars\][^[]*?PUBLIC_BASE_URL = )""/, `$1"${PUBLIC}"`);
}

/** The text of the [env.production] part of a configuration (it is the last section). */
const production = (toml: string) => toml.slice(toml.indexOf("[env.production]"));
/** Edits only inside [env.production], so the same lines of the top level and staging stay as they are. */
function editProduction(toml: string, from: string | RegExp, to: string): string {
  const start = toml.indexOf("[env.production]");
  return toml.slice(0, start) + edit(production(toml), from, to);
}

/** Replaces every `from` inside [env.production] (there must be at least one). */
function editProductionAll(toml: string, from: string, to: string): string {
  const start = toml.indexOf("[env.production]");
  const section = production(toml);
  if (!section.includes(from)) throw new Error(`expected ${from} in [env.production]`);
  return toml.slice(0, start) + section.replaceAll(from, to);
}

/** `text` as a literal inside a RegExp. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The block of a configuration that starts at the line `header`: it and the lines after it, up to a blank line or a header. */
const blockOf = (header: string) => new RegExp(`^${literal(header)}\\n(?:(?!\\[)[^\\n]+(?:\\n|$))*`, "m");

/**
 * The people's Worker's configuration consistent with the API configuration `apiToml`, as an
 * operator keeps them (checkSharedBindings holds them equal): its [vars], each [env.*.vars] and
 * each KV namespace block replaced by the API configuration's, so a test that breaks one thing in
 * the API configuration sees only that one error.
 */
function peopleFor(apiToml: string): string {
  const envs = [...REAL_PEOPLE.matchAll(/^\[env\.([\w-]+)\]$/gm)].map((m) => m[1] ?? "");
  const headers = ["[vars]", "[[kv_namespaces]]", ...envs.flatMap((e) => [`[env.${e}.vars]`, `[[env.${e}.kv_namespaces]]`])];
  let toml = REAL_PEOPLE;
  for (const header of headers) {
    const pattern = blockOf(header);
    if (!pattern.test(toml)) throw new Error(`expected ${header} in wrangler.people.toml`);
    const api = pattern.exec(apiToml)?.[0];
    if (api !== undefined) toml = toml.replace(pattern, () => api);
  }
  return toml;
}

/** How the preflight names a companion's configuration in its messages (relative to the repository). */
const fileName = (path: string) => relative(ROOT, path);

let configs = 0;
async function writeConfig(toml: string): Promise<string> {
  const path = join(dir, `wrangler-${++configs}.toml`);
  await writeFile(path, toml);
  return path;
}

const errors = (findings: Finding[]) => findings.filter((f) => f.level === "error");

async function offline(toml: string, env: string | undefined = "production", peopleToml: string = peopleFor(toml)) {
  const peoplePath = await writeConfig(peopleToml);
  const result = await preflight({ env, configPath: await writeConfig(toml), companionConfigs: { PEOPLE: peoplePath }, offline: true });
  return { ...result, errors: errors(result.findings), peoplePath };
}

/** The one error whose message contains `text`; fails listing all of them otherwise. */
function theError(list: Finding[], text: string): Finding {
  const matching = list.filter((f) => f.message.includes(text));
  expect(matching, `errors: ${JSON.stringify(list, null, 2)}`).toHaveLength(1);
  return matching[0]!;
}

interface StubAnswers {
  secrets?: { out?: string; err?: string; code?: number };
  kv?: { out?: string; err?: string; code?: number };
  queues?: string[];
  /** A `wrangler deploy` whose arguments contain this fails, as a refused upload does. */
  failDeployOf?: string;
}

/**
 * A wrangler stand-in: logs its arguments, answers `secret list`, `kv namespace list` and `queues
 * info` as configured (by default, as a complete deployment would), and "deploys" by printing.
 */
async function stubWrangler(answers: StubAnswers = {}): Promise<{ bin: string; calls: () => Promise<string[]> }> {
  const home = await mkdtemp(join(dir, "stub-"));
  const reply = async (name: string, a: { out?: string; err?: string; code?: number }) => {
    if (a.out !== undefined) await writeFile(join(home, `${name}.out`), a.out);
    if (a.err !== undefined) await writeFile(join(home, `${name}.err`), a.err);
    await writeFile(join(home, `${name}.code`), String(a.code ?? 0));
  };
  await reply("secrets", answers.secrets ?? { out: JSON.stringify(SECRETS.map((name) => ({ name, type: "secret_text" }))) });
  await reply(
    "kv",
    answers.kv ?? {
      out: JSON.stringify([
        { id: STAGING_KV, title: "staging-keyway" },
        { id: PRODUCTION_KV, title: "production-keyway" },
      ]),
    },
  );
  await writeFile(join(home, "queues.txt"), `${(answers.queues ?? QUEUES).join("\n")}\n`);
  if (answers.failDeployOf !== undefined) await writeFile(join(home, "fail-deploy"), answers.failDeployOf);
  const bin = join(home, "wrangler");
  await writeFile(
    bin,
    `#!/bin/sh
D='${home}'
printf '%s\\n' "$*" >> "$D/calls.log"
reply() { [ -f "$D/$1.out" ] && cat "$D/$1.out"; [ -f "$D/$1.err" ] && cat "$D/$1.err" >&2; exit "$(cat "$D/$1.code")"; }
case "$1 $2" in
  "secret list") reply secrets ;;
  "kv namespace") reply kv ;;
  "queues info")
    if grep -qxF "$3" "$D/queues.txt"; then echo "Queue Name: $3"; echo "Number of Consumers: 1"
    else echo "X [ERROR] Queue \\"$3\\" does not exist. To create it, run: wrangler queues create $3" >&2; exit 1; fi ;;
  deploy*)
    if [ -f "$D/fail-deploy" ] && printf '%s' "$*" | grep -qF "$(cat "$D/fail-deploy")"; then echo "X [ERROR] stub: upload refused" >&2; exit 1; fi
    echo "stub: deployed" ;;
  *) echo "stub: unexpected wrangler $*" >&2; exit 2 ;;
esac
`,
  );
  await chmod(bin, 0o755);
  const calls = async () => {
    try {
      return (await readFile(join(home, "calls.log"), "utf8")).trim().split("\n");
    } catch {
      return [];
    }
  };
  return { bin, calls };
}

async function online(toml: string, answers: StubAnswers = {}, peopleToml: string = peopleFor(toml)) {
  const stub = await stubWrangler(answers);
  const configPath = await writeConfig(toml);
  const peoplePath = await writeConfig(peopleToml);
  const result = await preflight({
    env: "production",
    configPath,
    companionConfigs: { PEOPLE: peoplePath },
    runWrangler: defaultRunWrangler({ ...process.env, KEYWAY_WRANGLER: stub.bin }),
  });
  return { ...result, errors: errors(result.findings), configPath, peoplePath, calls: await stub.calls() };
}

/** An API configuration for deployScript and a people's configuration consistent with it (peopleFor). */
async function deployConfigs(toml: string): Promise<{ config: string; people: string }> {
  return { config: await writeConfig(toml), people: await writeConfig(peopleFor(toml)) };
}

/** Runs scripts/deploy.mjs as npm would, with `env` added; never rejects. */
async function deployScript(args: string[], env: Record<string, string> = {}) {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true" };
  delete childEnv.CLOUDFLARE_ENV;
  try {
    const { stdout, stderr } = await run(process.execPath, [join(ROOT, "scripts/deploy.mjs"), ...args], { cwd: ROOT, env: childEnv });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/** Runs `npm <args>` in the repository as a user would (the pinned tools first on PATH); never rejects. */
async function npmRun(args: string[]): Promise<{ output: string; code: number }> {
  const env = { ...process.env, PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH}`, WRANGLER_SEND_METRICS: "false" };
  return run("npm", args, { cwd: ROOT, env }).then(
    (r) => ({ output: r.stdout + r.stderr, code: 0 }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({
      output: `${err.stdout ?? ""}${err.stderr ?? ""}`,
      code: err.code ?? 1,
    }),
  );
}

describe("the environment to deploy", () => {
  it("is required: without --env the top level (local, placeholder KV id) is refused, pointing to staging and production", async () => {
    const result = await preflight({ env: undefined, configPath: await writeConfig(filled()), offline: true });
    const error = theError(errors(result.findings), "No environment given");
    expect(error.fix).toContain("npm run deploy -- --env staging");
    expect(error.fix).toContain("npm run deploy -- --env production");
  });

  it("must be one wrangler.toml defines; the refusal lists the ones it does", async () => {
    const result = await offline(filled(), "prod");
    expect(theError(result.errors, "no [env.prod]").fix).toBe("npm run deploy -- --env staging\nnpm run deploy -- --env production");
  });
});

describe("the repository's wrangler.toml", () => {
  it("passes every offline check for production once its KV id and PUBLIC_BASE_URL are filled in", async () => {
    const result = await offline(filled(), "production");
    expect(result.findings).toEqual([]);
    expect(result.skipped).toEqual(["wrangler secret list", "wrangler kv namespace list", "wrangler queues info"]);
  });

  it("passes every offline check for staging once its KV id is filled in (its own queues, dead letters recognised by suffix)", async () => {
    const result = await offline(filled(), "staging");
    expect(result.findings).toEqual([]);
  });

  it("as committed, passes `npm run check:deploy`: every environment's checks, provisioning left as warnings, and the real wrangler bundles the three Workers, each within its size budget", async () => {
    const { output, code } = await npmRun(["run", "check:deploy"]);
    expect(code, output).toBe(0);
    for (const env of ["staging", "production"]) {
      expect(output).toContain(`Preflight for [env.${env}] (offline):`);
      expect(output).toContain(`warning: before the first deploy: KV binding "KV" of [env.${env}] still has the placeholder id`);
    }
    expect(output).toContain("warning: before the first deploy: PUBLIC_BASE_URL is empty in [env.production.vars]");
    expect(output).not.toContain("error:");
    // wrangler 4.155 bundled the people's Worker, the GraphQL Worker, then the API Worker (README,
    // "Performance"; docs/performance.md: issue 30's receivers' portal, event-type schemas and
    // their validator took the API Worker from 147 to 184 KiB gzipped, issue 31's receiver OAuth to
    // 201, issue 32's manager (navigation, dark mode, cards, times, chart values) and GET / with
    // issue 33's shards and leased slices to 212, issue 41's admission to 216.6, issue 42's
    // per-configuration keys, portal limits, pause, example events and their pages to 225.3).
    // Issue 43 moved the people's pages (the manager, the portal, the landing page, /docs, the
    // explorer and the API description) to the people's Worker, and the API Worker's own build
    // (scripts/build/api.mjs) leaves out the text that only describes the API and zod's JSON
    // Schema conversion: 225.3 -> 146.75 KiB. Measured then: people's Worker 189.25, GraphQL Worker
    // 46.67, API Worker 146.75; budgets 200, 60 and 150. Issue 44 (clients without shared secrets:
    // trusted issuers, key sets fetched from URLs, JWT access tokens, protected resource metadata)
    // took the API Worker to 153.8 and the people's Worker (its pages for them) to 200.0: budgets
    // 160 and 210 (docs/performance.md). Routes decided at the edge without an API key, and the
    // objects' logic moved into shells hosted by the Durable Objects, took the API Worker to 160.5:
    // budget 165. The delivery attempt as a pure step (163.0) and payload filters (the language,
    // the schema check and the routing: 168.9) took it to budget 175. The portal's filter page and the
    // manager's filter fields took the people's Worker from 209.66 to 211.95: budget 220. The manager's overview, the audit
    // log's filters and the portal's branding (the contrast palette, multipart forms, image checks) took it to 221.5:
    // budget 235 (it serves people's pages only; no token request runs it). The runs are one after the other, so
    // wrangler's own lines come in that order: the people's Worker has its static assets (the
    // GraphQL explorer's files, issue 32, which its build command copies first and which do not
    // count toward its size) and the API Worker's systems of record (KV, Durable Objects of
    // "keyway", queues, METRICS) and vars; the GraphQL Worker no bindings; the API Worker, built
    // by deploy.mjs and uploaded unbundled, its PEOPLE and GRAPHQL bindings to them.
    expect(output).toMatch(
      new RegExp(
        [
          String.raw`Total Upload: [\d.]+ KiB[^\n]*\nNo bindings found\.`,
          String.raw`Total Upload: [\d.]+ KiB`,
          String.raw`env\.PEOPLE \(keyway-people\) +Worker`,
          String.raw`env\.GRAPHQL \(keyway-graphql\) +Worker`,
          String.raw`\[custom build\] Running: node scripts/explorer-assets\.mjs`,
          String.raw`Total Upload: [\d.]+ KiB[^\n]*\n[^\n]*bindings:\nBinding +Resource *\n`,
          String.raw`env\.KEYS \(KeyObject, defined in keyway\) +Durable Object`,
          String.raw`env\.KV \(0+\) +KV Namespace`,
          String.raw`env\.WEBHOOK_QUEUE \(keyway-webhooks\) +Queue`,
          String.raw`env\.METRICS \(keyway_metrics\) +Analytics Engine Dataset`,
          String.raw`env\.ASSETS +Assets *\n`,
          String.raw`env\.PUBLIC_BASE_URL \(""\) +Environment Variable`,
        ].join(String.raw`[\s\S]*?`),
      ),
    );
    // deploy.mjs's own lines (on stderr, which npmRun appends after wrangler's stdout), in order.
    const commands = [
      `wrangler deploy --env= --config ${GRAPHQL_TOML} --dry-run --outdir dist/graphql\n`,
      `API Worker built into ${API_MAIN} (`,
      `wrangler deploy ${API_MAIN} --no-bundle --no-minify --env= --config ${join(ROOT, "wrangler.toml")} --dry-run --outdir dist/api\n`,
      `wrangler deploy --env= --config ${PEOPLE_TOML} --dry-run --outdir dist/people\n`,
    ].map((line) => output.indexOf(line));
    expect(commands.every((at) => at >= 0)).toBe(true);
    expect([...commands].sort((a, b) => a - b)).toEqual(commands);
    const uploads = [...output.matchAll(/Total Upload: [\d.]+ KiB \/ gzip: ([\d.]+) KiB/g)].map((m) => Number(m[1]));
    expect(uploads).toHaveLength(3);
    // In deploy order: GraphQL, API, people's.
    const budgets = [60, 175, 235];
    for (const [i, gzipKiB] of uploads.entries()) {
      expect(gzipKiB).toBeGreaterThan(0);
      expect(gzipKiB).toBeLessThanOrEqual(budgets[i] ?? 0);
    }
  });

  it("as committed, fails `npm run check:deploy -- --env staging` on the placeholder KV id with the command that creates one, before bundling", async () => {
    const { output, code } = await npmRun(["run", "check:deploy", "--", "--env", "staging"]);
    expect(code).not.toBe(0);
    expect(output).toContain('KV binding "KV" of [env.staging] still has the placeholder id 00000000000000000000000000000000');
    expect(output).toContain("npx wrangler kv namespace create keyway --binding KV --env staging");
    expect(output).toContain("skipped offline: `wrangler secret list`");
    expect(output).not.toContain("wrangler deploy"); // the dry-run bundle never started
  });
});

describe("offline checks refuse", () => {
  it("a placeholder KV namespace id, with the command that creates the namespace", async () => {
    const result = await offline(editProduction(filled(), PRODUCTION_KV, "00000000000000000000000000000000"));
    expect(result.errors).toHaveLength(1);
    const error = theError(result.errors, "still has the placeholder id");
    expect(error.fix).toContain(KV_CREATE);
    expect(error.fix).toContain("[[env.production.kv_namespaces]]");
  });

  it("a missing KV namespace id, with the same command", async () => {
    const result = await offline(editProduction(filled(), `id = "${PRODUCTION_KV}"\n`, ""));
    expect(theError(result.errors, "has no namespace id").fix).toContain(KV_CREATE);
  });

  it("an environment without the KV binding at all (bindings are not inherited)", async () => {
    const result = await offline(
      editProduction(filled(), `[[env.production.kv_namespaces]]\nbinding = "KV"\nid = "${PRODUCTION_KV}"\n`, ""),
    );
    expect(theError(result.errors, 'has no KV binding "KV"').fix).toContain("[[env.production.kv_namespaces]]");
  });

  it("a queue producer whose queue has no consumer", async () => {
    const toml = editProduction(filled(), 'queue = "keyway-webhooks"\nmax_batch_size', 'queue = "keyway-other"\nmax_batch_size');
    const result = await offline(toml);
    const error = theError(result.errors, 'Queue "keyway-webhooks" (producer binding "WEBHOOK_QUEUE" of [env.production]) has no consumer');
    expect(error.fix).toContain('[[env.production.queues.consumers]]\nqueue = "keyway-webhooks"');
    expect(error.fix).toContain('dead_letter_queue = "keyway-webhooks-dlq"');
  });

  it("a consumer without a dead-letter queue", async () => {
    const result = await offline(editProduction(filled(), `${FAST_CONSUMER}dead_letter_queue = "keyway-webhooks-dlq"\n`, FAST_CONSUMER));
    const error = theError(result.errors, 'The consumer of "keyway-webhooks" in [env.production] has no dead_letter_queue');
    expect(error.fix).toContain('dead_letter_queue = "keyway-webhooks-dlq"');
  });

  it("a dead-letter queue that nothing consumes", async () => {
    const toml = editProduction(filled(), /\[\[env\.production\.queues\.consumers\]\]\nqueue = "keyway-webhooks-dlq"\n[^[]*/, "");
    const result = await offline(toml);
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'Dead-letter queue "keyway-webhooks-dlq" of [env.production] has no consumer').fix).toContain(
      '[[env.production.queues.consumers]]\nqueue = "keyway-webhooks-dlq"',
    );
  });

  it("a consumer with max_retries 0 (our own brief faults would dead-letter at once)", async () => {
    const result = await offline(editProduction(filled(), FAST_CONSUMER, FAST_CONSUMER.replace("max_retries = 5", "max_retries = 0")));
    expect(theError(result.errors, "has max_retries = 0").fix).toContain("max_retries = 5");
  });

  it("a dead-letter queue the Worker's code does not treat as one", async () => {
    const toml = editProduction(
      editProductionAll(filled(), 'dead_letter_queue = "keyway-webhooks-dlq"', 'dead_letter_queue = "keyway-dead"'),
      'queue = "keyway-webhooks-dlq"',
      'queue = "keyway-dead"',
    );
    const result = await offline(toml);
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'Dead-letter queue "keyway-dead" of [env.production] is not one the Worker recognizes').fix).toContain(
      "npx wrangler queues create keyway-dead-dlq",
    );
  });

  it("a producer that sends straight into the dead-letter queue", async () => {
    const config = filled();
    const start = config.indexOf("[env.production]");
    const section = production(config);
    const producer = /(\[\[env\.production\.queues\.producers\]\]\nbinding = "WEBHOOK_QUEUE"\nqueue = )"keyway-webhooks"/;
    expect(producer.test(section)).toBe(true);
    const toml = config.slice(0, start) + section.replace(producer, '$1"keyway-webhooks-dlq"');
    const result = await offline(toml);
    theError(result.errors, 'sends to "keyway-webhooks-dlq", a dead-letter queue');
  });

  it("a delivery queue whose name the Worker would take for a dead-letter queue", async () => {
    const config = filled();
    const start = config.indexOf("[env.production]");
    // Its producer and its consumer both name it.
    const toml = config.slice(0, start) + production(config).replaceAll('queue = "keyway-webhooks"\n', 'queue = "keyway-main-dlq"\n');
    const result = await offline(toml);
    theError(result.errors, 'Queue "keyway-main-dlq" of [env.production] is a delivery queue, but its name ends in "-dlq"');
  });

  it('WEBHOOK_ALLOW_INSECURE_TARGETS other than "false" in a deployed environment', async () => {
    const result = await offline(
      editProduction(filled(), 'WEBHOOK_ALLOW_INSECURE_TARGETS = "false"', 'WEBHOOK_ALLOW_INSECURE_TARGETS = "true"'),
    );
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'WEBHOOK_ALLOW_INSECURE_TARGETS is "true"').fix).toContain('WEBHOOK_ALLOW_INSECURE_TARGETS = "false"');
  });

  it("an invalid WEBHOOK_RETRY_SCHEDULE", async () => {
    const result = await offline(
      editProduction(filled(), 'WEBHOOK_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h"', 'WEBHOOK_RETRY_SCHEDULE = "5s,2d"'),
    );
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'WEBHOOK_RETRY_SCHEDULE = "5s,2d"').fix).toContain('WEBHOOK_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h"');
  });

  it("an integer var outside the bounds the Worker accepts", async () => {
    const result = await offline(editProduction(filled(), 'ACCESS_TOKEN_TTL_SECONDS = "3600"', 'ACCESS_TOKEN_TTL_SECONDS = "30"'));
    expect(theError(result.errors, 'ACCESS_TOKEN_TTL_SECONDS = "30"').message).toContain("from 60 to 86400");
  });

  it("log settings a deployed Worker would silently replace by defaults, or its local pretty format", async () => {
    const pretty = await offline(editProduction(filled(), 'LOG_FORMAT = "json"', 'LOG_FORMAT = "pretty"'));
    expect(theError(pretty.errors, 'LOG_FORMAT = "pretty"').fix).toContain('LOG_FORMAT = "json"');
    const rate = await offline(editProduction(filled(), 'LOG_SUCCESS_SAMPLE_RATE = "0.01"', 'LOG_SUCCESS_SAMPLE_RATE = "10%"'));
    expect(theError(rate.errors, 'LOG_SUCCESS_SAMPLE_RATE = "10%"').fix).toContain('LOG_SUCCESS_SAMPLE_RATE = "1"');
  });

  it("a var that is not a string (wrangler would pass a number)", async () => {
    const result = await offline(editProduction(filled(), 'RATE_LIMIT_PER_DAY = "1000"', "RATE_LIMIT_PER_DAY = 1000"));
    expect(theError(result.errors, "RATE_LIMIT_PER_DAY in [env.production.vars] is 1000, not a string").fix).toContain(
      'RATE_LIMIT_PER_DAY = "1000"',
    );
  });

  it("a var of the top level missing from the environment (vars are not inherited)", async () => {
    const result = await offline(editProduction(filled(), 'WEBHOOK_REDISPATCH_SECONDS = "120"\n', ""));
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, "[env.production.vars] lacks WEBHOOK_REDISPATCH_SECONDS").fix).toContain(
      'WEBHOOK_REDISPATCH_SECONDS = "120"',
    );
  });

  it("a secret set as a plain var", async () => {
    const result = await offline(
      editProduction(filled(), "[env.production.vars]\n", '[env.production.vars]\nADMIN_TOKEN = "not-secret-at-all-0123456789abcdef"\n'),
    );
    expect(theError(result.errors, "ADMIN_TOKEN is a secret but [env.production.vars] sets it").fix).toContain(
      "npx wrangler secret put ADMIN_TOKEN --env production",
    );
  });

  it("PUBLIC_BASE_URL empty in production", async () => {
    const result = await offline(editProduction(filled(), `PUBLIC_BASE_URL = "${PUBLIC}"`, 'PUBLIC_BASE_URL = ""'));
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, "PUBLIC_BASE_URL is empty in [env.production.vars]").fix).toContain('PUBLIC_BASE_URL = "https://');
  });

  it("PUBLIC_BASE_URL over plain http", async () => {
    const result = await offline(editProduction(filled(), `PUBLIC_BASE_URL = "${PUBLIC}"`, 'PUBLIC_BASE_URL = "http://api.acme.dev"'));
    theError(result.errors, "is not https");
  });

  it("PUBLIC_BASE_URL left at an example host", async () => {
    const result = await offline(editProduction(filled(), `PUBLIC_BASE_URL = "${PUBLIC}"`, 'PUBLIC_BASE_URL = "https://api.example.com"'));
    theError(result.errors, "is a placeholder host");
  });

  it("an environment without the METRICS Analytics Engine binding", async () => {
    const toml = editProduction(
      filled(),
      '[[env.production.analytics_engine_datasets]]\nbinding = "METRICS"\ndataset = "keyway_metrics"\n',
      "",
    );
    const result = await offline(toml);
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'has no Analytics Engine binding "METRICS"').fix).toContain(
      "[[env.production.analytics_engine_datasets]]",
    );
  });

  it("a Durable Object class that no migration creates, with the migration to add", async () => {
    const producer = '[[env.production.queues.producers]]\nbinding = "WEBHOOK_QUEUE"\n';
    const audit = '[[env.production.durable_objects.bindings]]\nname = "AUDIT"\nclass_name = "AuditObject"\n';
    const toml = editProduction(filled(), producer, `${audit}\n${producer}`);
    // The people's Worker binds it too, as the shared bindings require, so the migration is the one error.
    const people = editProduction(peopleFor(toml), producer, `${audit}script_name = "keyway"\n\n${producer}`);
    const result = await offline(toml, "production", people);
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'No [[migrations]] creates the Durable Object class "AuditObject"').fix).toContain(
      '[[migrations]]\ntag = "v7"\nnew_sqlite_classes = ["AuditObject"]',
    );
  });

  it("a Durable Object binding to another class than the code's", async () => {
    const result = await offline(editProduction(filled(), 'class_name = "KeyObject"', 'class_name = "WebhookObject"'));
    theError(result.errors, 'binds "KEYS" to class "WebhookObject"');
  });

  it("an environment without the PEOPLE service binding, with the lines naming its people's Worker", async () => {
    const result = await offline(
      editProduction(filled(), '[[env.production.services]]\nbinding = "PEOPLE"\nservice = "keyway-people"\n', ""),
    );
    expect(result.errors).toHaveLength(1);
    const error = theError(result.errors, 'has no service binding "PEOPLE"');
    expect(error.message).toContain("the manager, the portal, GET /, /docs, /explorer and GET /v1/openapi.json would fail");
    expect(error.fix).toContain('[[env.production.services]]\nbinding = "PEOPLE"\nservice = "keyway-people"');
  });

  it("an environment without the GRAPHQL service binding, or with one to the API Worker itself", async () => {
    const missing = await offline(
      editProduction(filled(), '[[env.production.services]]\nbinding = "GRAPHQL"\nservice = "keyway-graphql"\n', ""),
    );
    expect(theError(missing.errors, 'has no service binding "GRAPHQL"').message).toContain("/v1/graphql would fail");
    const self = await offline(
      editProduction(filled(), 'binding = "GRAPHQL"\nservice = "keyway-graphql"', 'binding = "GRAPHQL"\nservice = "keyway"'),
    );
    expect(theError(self.errors, 'binds GRAPHQL to the Worker "keyway"').fix).toContain('service = "keyway-graphql"');
  });

  it("a PEOPLE binding to another environment's people's Worker", async () => {
    const toml = edit(filled(), 'service = "keyway-people-staging"', 'service = "keyway-people"');
    const result = await offline(toml, "staging");
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, '[env.staging] binds PEOPLE to the Worker "keyway-people"').fix).toContain(
      'service = "keyway-people-staging"',
    );
  });

  it("a people's Worker configuration without the environment, or deploying it under the API Worker's name or another environment's", async () => {
    const people = peopleFor(filled());
    // Its [env.production] is the last part of the file: without it, and its vars and bindings, there is no such environment.
    const missing = await offline(filled(), "production", people.slice(0, people.indexOf("[env.production]")));
    expect(missing.errors).toHaveLength(1);
    const error = theError(missing.errors, `${fileName(missing.peoplePath)} has no [env.production]`);
    expect(error.message).toContain("the people's Worker that [env.production]'s PEOPLE binding calls would not be deployed");
    expect(error.fix).toBe(`add to ${fileName(missing.peoplePath)}:\n[env.production]\nname = "keyway-people"`);

    const clash = await offline(
      filled(),
      "production",
      edit(people, '[env.production]\nname = "keyway-people"', '[env.production]\nname = "keyway"'),
    );
    expect(theError(clash.errors, "the API Worker's own name").fix).toContain('name = "keyway-people"');

    const shared = await offline(filled(), "production", edit(people, 'name = "keyway-people-staging"', 'name = "keyway-people"'));
    expect(shared.errors).toHaveLength(1);
    theError(shared.errors, 'deploys [env.production] and [env.staging] as the same Worker "keyway-people"');
  });

  it("a people's Worker bound to another KV namespace than the API Worker's, with the lines that bind the same", async () => {
    const other = "0123456789abcdef0123456789abcdef";
    const result = await offline(filled(), "production", editProduction(peopleFor(filled()), `id = "${PRODUCTION_KV}"`, `id = "${other}"`));
    expect(result.errors).toHaveLength(1);
    const file = fileName(result.peoplePath);
    const error = theError(
      result.errors,
      `${file}'s [env.production] binds KV "KV" to "${other}", not the API Worker's "${PRODUCTION_KV}"`,
    );
    expect(error.message).toContain("the people's Worker would read or change another deployment's data than the API Worker's");
    expect(error.fix).toBe(`in ${file}:\n[[env.production.kv_namespaces]]\nbinding = "KV"\nid = "${PRODUCTION_KV}"`);
  });

  it("a people's Worker whose Durable Object binding lacks script_name (its own class) or names another Worker's", async () => {
    const people = peopleFor(filled());
    const fix = (file: string, name: string, className: string) =>
      `in ${file}:\n[[env.production.durable_objects.bindings]]\nname = "${name}"\nclass_name = "${className}"\nscript_name = "keyway"`;

    const own = await offline(
      filled(),
      "production",
      editProduction(people, 'class_name = "ProofObject"\nscript_name = "keyway"\n', 'class_name = "ProofObject"\n'),
    );
    expect(own.errors).toHaveLength(1);
    const ownFile = fileName(own.peoplePath);
    expect(
      theError(own.errors, `${ownFile}'s [env.production] does not bind "PROOFS" to the API Worker's class ProofObject of "keyway"`).fix,
    ).toBe(fix(ownFile, "PROOFS", "ProofObject"));

    const staging = await offline(
      filled(),
      "production",
      editProduction(
        people,
        'class_name = "KeyObject"\nscript_name = "keyway"',
        'class_name = "KeyObject"\nscript_name = "keyway-staging"',
      ),
    );
    expect(staging.errors).toHaveLength(1);
    const stagingFile = fileName(staging.peoplePath);
    expect(
      theError(staging.errors, `${stagingFile}'s [env.production] does not bind "KEYS" to the API Worker's class KeyObject of "keyway"`)
        .fix,
    ).toBe(fix(stagingFile, "KEYS", "KeyObject"));
  });

  it("a people's Worker sending to another queue or writing another dataset than the API Worker's", async () => {
    let people = editProduction(peopleFor(filled()), 'queue = "keyway-webhooks-slow"', 'queue = "keyway-staging-webhooks-slow"');
    people = editProduction(people, 'dataset = "keyway_metrics"', 'dataset = "keyway_staging_metrics"');
    const result = await offline(filled(), "production", people);
    expect(result.errors).toHaveLength(2);
    const file = fileName(result.peoplePath);
    expect(theError(result.errors, `does not send "WEBHOOK_QUEUE_SLOW" to the API Worker's queue "keyway-webhooks-slow"`).fix).toBe(
      `in ${file}:\n[[env.production.queues.producers]]\nbinding = "WEBHOOK_QUEUE_SLOW"\nqueue = "keyway-webhooks-slow"`,
    );
    expect(theError(result.errors, `does not write "METRICS" to the API Worker's dataset "keyway_metrics"`).fix).toBe(
      `in ${file}:\n[[env.production.analytics_engine_datasets]]\nbinding = "METRICS"\ndataset = "keyway_metrics"`,
    );
  });

  it("a people's Worker whose var differs from the API Worker's, with the line that makes it the same", async () => {
    const other = "https://people.acme.dev";
    const result = await offline(
      filled(),
      "production",
      editProduction(peopleFor(filled()), `PUBLIC_BASE_URL = "${PUBLIC}"`, `PUBLIC_BASE_URL = "${other}"`),
    );
    expect(result.errors).toHaveLength(1);
    const file = fileName(result.peoplePath);
    const error = theError(
      result.errors,
      `${file}'s [env.production] sets PUBLIC_BASE_URL to "${other}", not the API Worker's "${PUBLIC}"`,
    );
    expect(error.fix).toBe(`in ${file}, under [env.production.vars]:\nPUBLIC_BASE_URL = "${PUBLIC}"`);
  });

  it("two environments deploying the same Worker name", async () => {
    const result = await offline(edit(filled(), 'name = "keyway-staging"', 'name = "keyway"'));
    theError(result.errors, 'both deploy the Worker "keyway"');
  });

  it("two environments sharing a queue, with the commands that create separate ones", async () => {
    const toml = edit(
      filled(),
      'binding = "WEBHOOK_QUEUE"\nqueue = "keyway-staging-webhooks"',
      'binding = "WEBHOOK_QUEUE"\nqueue = "keyway-webhooks"',
    );
    const result = await offline(toml);
    // The fix names queues of its own, not the shared one again.
    expect(theError(result.errors, 'share the queue "keyway-webhooks"').fix).toContain(
      "npx wrangler queues create keyway-production-webhooks-dlq",
    );
  });

  it("nothing shared between environments pinned to different accounts (names are unique per account)", async () => {
    let toml = edit(filled(), 'name = "keyway-staging"', 'name = "keyway"\naccount_id = "11111111111111111111111111111111"');
    toml = edit(
      toml,
      'binding = "WEBHOOK_QUEUE"\nqueue = "keyway-staging-webhooks"',
      'binding = "WEBHOOK_QUEUE"\nqueue = "keyway-webhooks"',
    );
    toml = editProduction(
      toml,
      '[env.production]\nname = "keyway"',
      '[env.production]\nname = "keyway"\naccount_id = "22222222222222222222222222222222"',
    );
    expect((await offline(toml)).errors).toEqual([]);
  });

  it("two environments sharing a KV namespace or an Analytics Engine dataset", async () => {
    const toml = edit(edit(filled(), STAGING_KV, PRODUCTION_KV), 'dataset = "keyway_staging_metrics"', 'dataset = "keyway_metrics"');
    const result = await offline(toml);
    theError(result.errors, `use the same KV namespace ${PRODUCTION_KV}`);
    theError(result.errors, 'write the same Analytics Engine dataset "keyway_metrics"');
  });

  it("an environment running without global_fetch_strictly_public", async () => {
    const toml = editProduction(
      filled(),
      '[env.production]\nname = "keyway"',
      '[env.production]\nname = "keyway"\ncompatibility_flags = ["nodejs_compat"]',
    );
    const result = await offline(toml);
    expect(theError(result.errors, 'without the compatibility flag "global_fetch_strictly_public"').fix).toContain(
      'compatibility_flags = ["nodejs_compat","global_fetch_strictly_public"]',
    );
  });

  it("nothing remote: an offline run never calls wrangler and says what it skipped", async () => {
    const calls: string[][] = [];
    const spy: RunWrangler = async (args) => {
      calls.push(args);
      return { code: 0, stdout: "[]", stderr: "" };
    };
    const result = await preflight({
      env: "production",
      configPath: await writeConfig(filled()),
      companionConfigs: { PEOPLE: await writeConfig(peopleFor(filled())) },
      offline: true,
      runWrangler: spy,
    });
    expect(calls).toEqual([]);
    expect(formatReport(result, { env: "production", offline: true })).toContain(
      "skipped offline: `wrangler secret list`, `wrangler kv namespace list`, `wrangler queues info` (npm run deploy runs them before deploying)",
    );
  });
});

describe("remote checks (through a stub wrangler)", () => {
  it("pass a complete deployment, asking wrangler about this environment and config files only: the people's Worker's secrets too", async () => {
    const result = await online(filled());
    expect(result.findings).toEqual([]);
    expect(result.calls.sort()).toEqual(
      [
        ...["secret list --format json", "kv namespace list", ...LANES.map((lane) => `queues info keyway-webhooks${lane}`)].map(
          (c) => `${c} --env production --config ${result.configPath}`,
        ),
        // It shares the API Worker's KV namespace and queues, asked about above; its secrets are its own.
        `secret list --format json --env production --config ${result.peoplePath}`,
      ].sort(),
    );
  });

  it("refuse a missing secret, naming it, with commands that generate and upload it", async () => {
    const listed = SECRETS.filter((s) => s !== "WEBHOOK_ENCRYPTION_KEYS").map((name) => ({ name, type: "secret_text" }));
    const result = await online(filled(), { secrets: { out: JSON.stringify(listed) } });
    // The stub lists the same secrets for both Workers: each lacks it, and each is told how to upload it.
    expect(result.errors).toHaveLength(2);
    // The API Worker's fix makes fresh values and uploads the same file to both Workers; the
    // people's Worker's never makes new ones (it verifies and decrypts what the API Worker signs
    // and seals): it uploads the API Worker's values.
    const api = theError(result.errors, 'The Worker "keyway" lacks the secret WEBHOOK_ENCRYPTION_KEYS:');
    expect(api.fix).toContain("node scripts/preflight.mjs --new-secrets .wrangler/secrets-production.json WEBHOOK_ENCRYPTION_KEYS\n");
    for (const configPath of [result.configPath, result.peoplePath]) {
      expect(api.fix).toContain(`npx wrangler secret bulk .wrangler/secrets-production.json --env production --config ${configPath}`);
    }
    expect(api.fix).toContain("rm .wrangler/secrets-production.json");
    const people = theError(result.errors, 'The Worker "keyway-people" lacks the secret WEBHOOK_ENCRYPTION_KEYS:');
    expect(people.fix).not.toContain("--new-secrets");
    expect(people.fix).toContain("the API Worker's values, never new ones");
    expect(people.fix).toContain(
      `npx wrangler secret bulk .wrangler/secrets-production.json --env production --config ${result.peoplePath}`,
    );
  });

  it("refuse a Worker that does not exist yet: every secret is missing", async () => {
    const result = await online(filled(), {
      secrets: {
        err: 'X [ERROR] Worker "keyway" (env: production) not found.\n\nIf this is a new Worker, run `wrangler deploy` first',
        code: 1,
      },
    });
    const error = theError(result.errors, 'The Worker "keyway" does not exist yet');
    expect(error.fix).toContain("--new-secrets .wrangler/secrets-production.json ADMIN_TOKEN TOKEN_SIGNING_KEYS WEBHOOK_ENCRYPTION_KEYS");
    expect(theError(result.errors, 'The Worker "keyway-people" does not exist yet').fix).toContain(
      "the API Worker's values, never new ones",
    );
  });

  it("refuse a queue that was never created, with the command that creates it", async () => {
    const result = await online(filled(), { queues: QUEUES.filter((q) => q !== "keyway-webhooks-dlq") });
    expect(result.errors).toHaveLength(1);
    expect(theError(result.errors, 'Queue "keyway-webhooks-dlq" of [env.production] does not exist').fix).toBe(
      "npx wrangler queues create keyway-webhooks-dlq",
    );
  });

  it("refuse a KV namespace id that is not in the account", async () => {
    const result = await online(filled(), { kv: { out: JSON.stringify([{ id: STAGING_KV, title: "staging-keyway" }]) } });
    expect(
      theError(result.errors, `KV namespace ${PRODUCTION_KV} (binding "KV" of [env.production]) is not in this Cloudflare account`).fix,
    ).toContain("npx wrangler kv namespace create keyway --binding KV --env production");
  });

  it("refuse when wrangler cannot ask Cloudflare, once per cause and Worker, pointing to wrangler login", async () => {
    const notLoggedIn = { err: "X [ERROR] You are not authenticated. Please run `wrangler login`.", code: 1 };
    const result = await online(filled(), { secrets: notLoggedIn, kv: notLoggedIn });
    // One cause, one report per Worker asked about: the API Worker's commands that failed the same
    // way are named in a single error, the people's Worker's secret list in another.
    expect(result.errors).toHaveLength(2);
    const api = theError(result.errors, `--config ${result.configPath}\``);
    expect(api.message).toContain("You are not authenticated");
    expect(api.message).toContain(`\`wrangler secret list --format json --env production --config ${result.configPath}\``);
    expect(api.message).toContain(`\`wrangler kv namespace list --env production --config ${result.configPath}\``);
    expect(api.fix).toContain("npx wrangler login");
    const people = theError(result.errors, `--config ${result.peoplePath}\``);
    expect(people.message).toBe(
      `\`wrangler secret list --format json --env production --config ${result.peoplePath}\` failed (exit 1: You are not authenticated. Please run \`wrangler login\`.)`,
    );
    expect(people.fix).toContain("npx wrangler login");
  });
});

describe("npm run deploy (scripts/deploy.mjs, wrangler stubbed)", () => {
  it("deploys the environment after every check passed, passing other arguments through to wrangler deploy", async () => {
    const stub = await stubWrangler();
    const { config, people } = await deployConfigs(filled());
    const result = await deployScript(["--env", "production", "--config", config, "--people-config", people, "--message", "release 1"], {
      KEYWAY_WRANGLER: stub.bin,
    });
    expect(result.output).toContain("passed.");
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain(`API Worker built into ${API_MAIN}`);
    const calls = await stub.calls();
    // The API Worker's secrets, KV, four queues (three lanes and their dead-letter queue), the
    // people's Worker's secrets, then the three deploys: the GraphQL Worker (the API Worker's binding
    // needs it), the API Worker's own build, unbundled, with the other arguments, then the people's
    // Worker (its Durable Object bindings need the API Worker's classes).
    expect(calls).toHaveLength(10);
    expect(calls.slice(0, -3)).toContain(`secret list --format json --env production --config ${people}`);
    expect(calls.slice(-3)).toEqual([
      `deploy --env production --config ${GRAPHQL_TOML}`,
      `deploy ${API_MAIN} --no-bundle --no-minify --env production --config ${config} --message release 1`,
      `deploy --env production --config ${people}`,
    ]);
  });

  it("stops before the API Worker when a companion's upload fails, saying so", async () => {
    const stub = await stubWrangler({ failDeployOf: "wrangler.graphql.toml" });
    const { config, people } = await deployConfigs(filled());
    const result = await deployScript(["--env", "production", "--config", config, "--people-config", people], {
      KEYWAY_WRANGLER: stub.bin,
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain("The GraphQL Worker was not deployed, so the API Worker was not either.");
    expect(result.output).not.toContain("API Worker built into");
    expect((await stub.calls()).filter((c) => c.startsWith("deploy"))).toEqual([`deploy --env production --config ${GRAPHQL_TOML}`]);
  });

  it("says the API Worker went up and serves the previous people's pages when the people's Worker's upload fails after it", async () => {
    const { config, people } = await deployConfigs(filled());
    const failing = await stubWrangler({ failDeployOf: people });
    const result = await deployScript(["--env", "production", "--config", config, "--people-config", people], {
      KEYWAY_WRANGLER: failing.bin,
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain("The people's Worker was not deployed; the API Worker was");
    expect((await failing.calls()).filter((c) => c.startsWith("deploy"))).toEqual([
      `deploy --env production --config ${GRAPHQL_TOML}`,
      `deploy ${API_MAIN} --no-bundle --no-minify --env production --config ${config}`,
      `deploy --env production --config ${people}`,
    ]);
  });

  it("never calls wrangler deploy when the preflight fails", async () => {
    const stub = await stubWrangler({ secrets: { out: "[]" } });
    const { config, people } = await deployConfigs(filled());
    const result = await deployScript(["-e", "production", `--config=${config}`, `--people-config=${people}`], {
      KEYWAY_WRANGLER: stub.bin,
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain("nothing was deployed");
    expect((await stub.calls()).filter((c) => c.startsWith("deploy"))).toEqual([]);
  });

  it("refuses to run without --env, calling no wrangler at all", async () => {
    const stub = await stubWrangler();
    const result = await deployScript([], { KEYWAY_WRANGLER: stub.bin });
    expect(result.code).toBe(1);
    expect(result.output).toContain("npm run deploy -- --env production");
    expect(await stub.calls()).toEqual([]);
  });

  it("with --dry-run and no environment checks every environment and bundles the top level, or stops on a structural error", async () => {
    const stub = await stubWrangler();
    const { config, people } = await deployConfigs(REAL);
    const ok = await deployScript(["--dry-run", "--config", config, "--people-config", people], { KEYWAY_WRANGLER: stub.bin });
    expect(ok.code, ok.output).toBe(0);
    expect(await stub.calls()).toEqual([
      `deploy --env= --config ${GRAPHQL_TOML} --dry-run --outdir dist/graphql`,
      `deploy ${API_MAIN} --no-bundle --no-minify --env= --config ${config} --dry-run --outdir dist/api`,
      `deploy --env= --config ${people} --dry-run --outdir dist/people`,
    ]);

    const broken = await deployConfigs(
      editProduction(REAL, 'queue = "keyway-webhooks"\nmax_batch_size', 'queue = "keyway-other"\nmax_batch_size'),
    );
    const refused = await deployScript(["--dry-run", "--config", broken.config, "--people-config", broken.people], {
      KEYWAY_WRANGLER: stub.bin,
    });
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(/error: Queue "keyway-webhooks" .*\[env\.production\]\) has no consumer/);
    expect(await stub.calls()).toHaveLength(3); // no more bundles

    // Without --people-config, the repository's wrangler.people.toml, which agrees with wrangler.toml.
    const repository = await stubWrangler();
    const byDefault = await deployScript(["--dry-run", "--config", config], { KEYWAY_WRANGLER: repository.bin });
    expect(byDefault.code, byDefault.output).toBe(0);
    expect((await repository.calls()).at(-1)).toBe(`deploy --env= --config ${PEOPLE_TOML} --dry-run --outdir dist/people`);
  });

  it("with --dry-run (check:deploy) runs only the offline checks, then wrangler deploy --dry-run of the three Workers", async () => {
    const stub = await stubWrangler();
    const { config, people } = await deployConfigs(filled());
    const result = await deployScript(["--dry-run", "--env", "production", "--config", config, "--people-config", people], {
      KEYWAY_WRANGLER: stub.bin,
    });
    expect(result.code, result.output).toBe(0);
    expect(await stub.calls()).toEqual([
      `deploy --env production --config ${GRAPHQL_TOML} --dry-run --outdir dist/graphql`,
      `deploy ${API_MAIN} --no-bundle --no-minify --env production --config ${config} --dry-run --outdir dist/api`,
      `deploy --env production --config ${people} --dry-run --outdir dist/people`,
    ]);
  });
});

describe("fresh secrets for wrangler secret bulk", () => {
  it("are written owner-only in .dev.vars.example's shapes, never printed, and never over an existing file", async () => {
    const file = join(dir, "nested", "secrets.json");
    const { stdout, stderr } = await run(process.execPath, [join(ROOT, "scripts/preflight.mjs"), "--new-secrets", file], { cwd: ROOT });
    const values = JSON.parse(await readFile(file, "utf8")) as Record<string, string>;
    expect(Object.keys(values)).toEqual(SECRETS);
    expect(values.ADMIN_TOKEN).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(values.TOKEN_SIGNING_KEYS).toMatch(/^k1:[A-Za-z0-9_-]{43}$/);
    expect(values.WEBHOOK_ENCRYPTION_KEYS).toMatch(/^w1:[A-Za-z0-9_-]{43}$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    for (const value of Object.values(values)) expect(stdout + stderr).not.toContain(value.slice(-43));

    await expect(writeNewSecrets(file, ["ADMIN_TOKEN"])).rejects.toThrow(/EEXIST/);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(values);
  });

  it("refuse a name that is not a secret", async () => {
    await mkdir(join(dir, "other"), { recursive: true });
    await expect(writeNewSecrets(join(dir, "other", "s.json"), ["PUBLIC_BASE_URL"])).rejects.toThrow(
      "not a secret of .dev.vars.example: PUBLIC_BASE_URL",
    );
  });
});

describe("the preflight's rules agree with the Worker's (src/config.ts)", () => {
  interface WorkerConfig {
    parseSchedule(value: string): number[] | null;
    loadConfig(env: Record<string, string>): unknown;
  }
  // Imported by path at run time: src/ is typed for workerd, not for this Node project.
  const workerConfig = async () => (await import(/* @vite-ignore */ join(ROOT, "src/config.ts"))) as WorkerConfig;

  it("on retry schedules", async () => {
    const { parseSchedule: workers } = await workerConfig();
    const samples = [
      "",
      " ",
      "5s",
      "5s,5m,30m,2h,5h,10h,10h",
      "24h",
      "25h",
      "1441m",
      "0s",
      "5 s",
      " 5s , 1m ",
      "5s,",
      "1d",
      "1000000s",
      "5S",
      `${"1s,".repeat(20)}1s`,
    ];
    for (const sample of samples) expect(parseSchedule(sample), sample).toEqual(workers(sample));
  });

  it("on the vars of a deployed environment: what the preflight passes, the Worker loads, and what it refuses, the Worker refuses", async () => {
    const { loadConfig } = await workerConfig();
    const secretsFile = join(dir, "parity-secrets.json");
    await writeNewSecrets(secretsFile);
    const secrets = JSON.parse(await readFile(secretsFile, "utf8")) as Record<string, string>;
    const cases: [string, string][] = [
      ["ACCESS_TOKEN_TTL_SECONDS", "59"],
      ["ACCESS_TOKEN_TTL_SECONDS", "86401"],
      ["RATE_LIMIT_PER_SECOND", "0"],
      ["WEBHOOK_TIMEOUT_SECONDS", "121"],
      ["WEBHOOK_REDISPATCH_SECONDS", "3601"],
      ["WEBHOOK_DISABLE_AFTER_SECONDS", "59"],
      ["WEBHOOK_RETRY_SCHEDULE", "5s,5x"],
      ["PUBLIC_BASE_URL", "https://api.acme.dev/v1"],
    ];
    const good = filled();
    const vars = (toml: string) => {
      const section = production(toml).split("[env.production.vars]")[1]!.split("[[")[0]!;
      return Object.fromEntries([...section.matchAll(/^([A-Z_]+) = "(.*)"$/gm)].map((m) => [m[1]!, m[2]!]));
    };
    // The settings loadConfig names as invalid. It checks vars before it decodes the keyrings, and
    // only that first verdict is compared: this Node lacks Uint8Array.fromBase64, which workerd has.
    const refused = (toml: string): string[] => {
      try {
        loadConfig({ ...vars(toml), ...secrets });
        return [];
      } catch (err) {
        const detail = (err as { detail?: string }).detail ?? "";
        return /invalid or missing setting\(s\): (.+)$/.exec(detail)?.[1]?.split(", ") ?? [];
      }
    };
    expect(passed(await offline(good))).toBe(true);
    // The committed vars pass loadConfig's checks; anything else it throws must be the keyring
    // decoding this Node cannot do (no Uint8Array.fromBase64, so the keyrings read as malformed),
    // never a refused var.
    try {
      loadConfig({ ...vars(good), ...secrets });
    } catch (err) {
      expect(`${(err as { detail?: string }).detail}`).toMatch(/^configuration error: (TOKEN_SIGNING_KEYS|WEBHOOK_ENCRYPTION_KEYS) /);
    }
    expect(refused(good)).toEqual([]);
    for (const [name, value] of cases) {
      const toml = editProduction(good, new RegExp(`^${name} = ".*"$`, "m"), `${name} = "${value}"`);
      expect(passed(await offline(toml)), `${name}=${value}`).toBe(false);
      expect(refused(toml), `${name}=${value}`).toEqual([name]);
    }
  });
});

describe("docs/deploy.md", () => {
  const page = readFileSync(join(ROOT, "docs/deploy.md"), "utf8");

  it("quotes no bundle size: it shows the command that prints them (check:deploy, budgeted above), since every release moves them", () => {
    expect(page.match(/\d+(?:[.,]\d+)?\s*(?:KiB|KB|MiB|MB)\b/g) ?? []).toEqual([]);
    expect(page).toContain("npm run check:deploy");
    expect(page).toContain("`Total Upload: … KiB / gzip: … KiB`");
  });

  it("lists the rollout in the order scripts/deploy.mjs runs it (the companions it only calls, the API Worker, then those that bind its objects) and rolls back each of the three Workers", () => {
    const rollout = page.slice(page.indexOf("## Rolling out a release"), page.indexOf("### Gradual rollout"));
    const order = [
      ...COMPANIONS.filter((c) => !c.shares).map((c) => `--config ${c.file}\``),
      "--config wrangler.toml`",
      ...COMPANIONS.filter((c) => c.shares).map((c) => `--config ${c.file}\``),
    ].map((s) => rollout.indexOf(s));
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const rollback = page.slice(page.indexOf("## Rolling back"), page.indexOf("## The companions' contract"));
    for (const c of COMPANIONS) expect(rollback).toContain(`npx wrangler rollback <version-id> -c ${c.file} --env production`);
    expect(rollback).toContain("npx wrangler rollback <version-id> --env production");
  });
});
