/**
 * The documentation's pages hold what the docs index promises: no page of the README or docs/
 * carries project history ("issue 41": that is CHANGELOG.md's); the tutorial and each guide under
 * docs/guides/ stay short (at most 300 lines) and docs/README.md lists each one under its
 * section (Tutorials, How-to guides, Reference, Explanation), and every other page too; every
 * fenced block of a guide is either a file under examples/ shown verbatim that another test runs,
 * a `sh` block this test runs against a real `npm start` (all of a page's blocks in one bash
 * session, in a scratch directory, with the demo's values in the environment), or a `sh norun`
 * block of deploy-only commands, each checked to name a real npm script or wrangler command; and
 * the reference pages name what the code declares: configuration.md every var and binding of the
 * wrangler files and every secret of .dev.vars.example, operator-cli.md every command of the CLI,
 * api.md every path of the OpenAPI document the server serves.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { COMMANDS } from "../../scripts/cli/commands.mjs";
import { freePort, type Keyway, ROOT, sharedKeywayWithOwnDemo } from "./server";

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

const mdUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? mdUnder(`${dir}/${e.name}`) : e.name.endsWith(".md") ? [`${dir}/${e.name}`] : [],
  );

/** Every user-facing page: the README and docs/ with its subfolders. */
const PAGES = ["README.md", ...mdUnder("docs")];
const TUTORIAL = "docs/tutorial.md";
/** The task pages: the tutorial and the how-to guides. */
const GUIDES = [TUTORIAL, ...mdUnder("docs/guides")];

/**
 * The files a guide may show verbatim, each with the test that runs it (and checks what it does).
 * A guide's `js` block, or a `sh` block that is a script rather than commands, must be one of them.
 */
const RUN_ELSEWHERE: Record<string, string> = {
  "examples/recipes/token-openid-client.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/token-oauth4webapi.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/make-client-keys.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/make-client-keys.sh": "test/e2e/recipes.test.ts",
  "examples/recipes/private-key-jwt-dpop-oauth4webapi.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/private-key-jwt-dpop-openid-client.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/revoke-introspect-oauth4webapi.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/revoke-introspect-openid-client.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/federated-oauth4webapi.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/federated-openid-client.mjs": "test/e2e/recipes.test.ts",
  "examples/local-issuer.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/jwt-access-token-jose.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/receiver-standardwebhooks.mjs": "test/e2e/recipes.test.ts",
  "examples/recipes/verify-v1a-node.mjs": "test/e2e/receivers-v1a-polling.test.ts",
  "examples/recipes/poll-events.mjs": "test/e2e/receivers-v1a-polling.test.ts",
};

/**
 * Blocks of a guide that are output to read, not commands (```text), by page and first line.
 * Keep this rare: a command belongs in a `sh` block this test runs.
 */
const OUTPUT_BLOCKS: Record<string, string[]> = {};

/** What the run of each guide's `sh` blocks prints, besides ending with status 0. */
const EXPECTED: Record<string, RegExp[]> = {
  [TUTORIAL]: [/"client_id"/, /^delivery \S+: delivered$/m, /"signature_ok": true/],
  "docs/guides/issue-tokens.md": [/"token_type":"Bearer"/, /^access token expires in \d+ s$/m],
  "docs/guides/private-key-jwt.md": [/^dpop token with scope webhooks:read$/im],
  "docs/guides/federated-clients.md": [/^bearer token, expires in 3600 s$/im],
  "docs/guides/protect-an-api.md": [/^verified: sub \S+, client_id \S+, scope webhooks:read$/m, /^active false$/m],
  "docs/guides/send-webhooks.md": [/webhook\.test\s+\S+\s+delivered/],
  "docs/guides/receive-webhooks.md": [/^verified \S+: .*webhook\.test/m, /^\S+ webhook\.test /m],
  "docs/guides/portal.md": [/order\.created/, /\/portal\/\S+/, /^#e4002b$/m],
  "docs/guides/operate-and-deploy.md": [/^id\s+org_\S+$/m, /^AT\s+ACTOR\s+ACTION/m],
};

interface Block {
  info: string;
  body: string;
  line: number;
}

function blocksOf(path: string): Block[] {
  const text = read(path);
  return [...text.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    info: (m[1] ?? "").trim(),
    body: m[2] ?? "",
    line: text.slice(0, m.index).split("\n").length,
  }));
}

/** A file as the docs show it: without its leading block comment. */
const shown = (path: string) => read(path).replace(/^\/\*\*[\s\S]*?\*\/\n/, "");

const verbatim = (body: string) => Object.keys(RUN_ELSEWHERE).find((file) => shown(file) === body);

const SCRIPTS = Object.keys((JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts);
const WRANGLER = ["login", "whoami", "deploy", "rollback", "versions", "tail", "secret", "kv", "queues"];

/** Why a deploy-only command line names nothing real, or undefined when it does. */
function unreal(line: string): string | undefined {
  for (const part of line.replace(/\s+#.*$/, "").split("&&")) {
    const words = part.trim().split(/\s+/);
    const [tool, verb, name] = words;
    if (tool === "npm" && (verb === "ci" || verb === "start" || verb === "test")) continue;
    if (tool === "npm" && verb === "run" && name !== undefined && SCRIPTS.includes(name)) {
      if (name !== "admin") continue;
      const command = words.slice(words.indexOf("--") + 1).filter((w) => !w.startsWith("-"));
      if (COMMANDS.some((c) => c.words.every((w: string, i: number) => command[i] === w))) continue;
      return `no CLI command in "${part.trim()}"`;
    }
    if (tool === "npx" && verb === "wrangler" && name !== undefined && WRANGLER.includes(name)) continue;
    return `"${part.trim()}" is no npm script, CLI or wrangler command`;
  }
  return undefined;
}

/** The links of a Markdown text outside code, without their fragment. */
const linksIn = (text: string) =>
  [...text.replace(/```[\s\S]*?```/g, "").matchAll(/\]\(([^)\s#]+)(?:#[^)\s]*)?\)/g)].map((m) => m[1] ?? "");

describe("the documentation's pages", () => {
  it.each(PAGES)("%s names no issue (project history belongs to CHANGELOG.md)", (page) => {
    const found = read(page)
      .split("\n")
      .flatMap((text, i) => (/\bissues?\s+#?\d+/i.test(text) ? [`${page}:${i + 1}: ${text.trim()}`] : []));
    expect(found).toEqual([]);
  });

  it.each(GUIDES)("%s is a page a reader finishes in minutes: at most 300 lines", (page) => {
    expect(read(page).split("\n").length).toBeLessThanOrEqual(300);
  });

  it("the docs index lists the tutorial, every guide and every other page, each under its section", () => {
    const index = read("docs/README.md");
    const sections = new Map<string, string>();
    for (const part of index.split(/^## /m).slice(1)) {
      const [title = "", ...rest] = part.split("\n");
      sections.set(title.trim(), rest.join("\n"));
    }
    expect([...sections.keys()]).toEqual(expect.arrayContaining(["Tutorials", "How-to guides", "Reference", "Explanation"]));
    const under = (title: string) => new Set(linksIn(sections.get(title) ?? "").map((l) => `docs/${l}`));
    expect(under("Tutorials").has(TUTORIAL), TUTORIAL).toBe(true);
    for (const guide of GUIDES.filter((g) => g !== TUTORIAL)) expect(under("How-to guides").has(guide), guide).toBe(true);
    const described = new Set([...under("Reference"), ...under("Explanation")]);
    for (const page of mdUnder("docs").filter((p) => !GUIDES.includes(p) && p !== "docs/README.md")) {
      expect(described.has(page), `${page} is in Reference or Explanation`).toBe(true);
    }
  });

  it.each(GUIDES)("%s: every block is a file another test runs, a command this test runs, or a deploy-only command", (page) => {
    for (const block of blocksOf(page)) {
      const where = `${page}:${block.line} (\`\`\`${block.info})`;
      const file = verbatim(block.body);
      if (file !== undefined) {
        const runner = RUN_ELSEWHERE[file] ?? "";
        expect(read(runner), `${where}: ${runner} runs ${file}`).toContain(file);
        continue;
      }
      if (block.info === "sh") continue;
      if (block.info === "sh norun") {
        const lines = block.body.split("\n").filter((l) => l.trim() !== "" && !l.trim().startsWith("#"));
        expect(lines.length, where).toBeGreaterThan(0);
        expect(
          lines.map(unreal).filter((why) => why !== undefined),
          where,
        ).toEqual([]);
        continue;
      }
      if (block.info === "text" && (OUTPUT_BLOCKS[page] ?? []).includes(block.body.split("\n")[0] ?? "")) continue;
      expect.fail(`${where}: neither a file under examples/ that a test runs, nor a sh block, nor listed output`);
    }
  });
});

describe("the reference names what the code declares", () => {
  it("configuration.md names every var and binding of the wrangler files and every secret of .dev.vars.example", () => {
    const page = read("docs/configuration.md");
    const tomls = readdirSync(ROOT).filter((f) => /^wrangler.*\.toml$/.test(f));
    expect(tomls.length).toBeGreaterThanOrEqual(3);
    const names = new Set<string>();
    for (const toml of tomls) {
      const text = read(toml);
      for (const m of text.matchAll(/^([A-Z][A-Z0-9_]*) = /gm)) names.add(m[1] ?? "");
      for (const m of text.matchAll(/^(?:binding|name) = "([A-Z][A-Z0-9_]*)"/gm)) names.add(m[1] ?? "");
    }
    for (const m of read(".dev.vars.example").matchAll(/^([A-Z][A-Z0-9_]*)=/gm)) names.add(m[1] ?? "");
    expect(names.size).toBeGreaterThan(20);
    expect([...names].filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });

  it("operator-cli.md names every command the CLI accepts", () => {
    const page = read("docs/operator-cli.md");
    expect(COMMANDS.length).toBeGreaterThan(50);
    const missing = COMMANDS.map((c) => c.words.join(" ")).filter((words: string) => !page.includes(`\`${words}`));
    expect(missing).toEqual([]);
  });

  it("api.md names every path of the OpenAPI document the server serves", async () => {
    const keyway = await sharedKeywayWithOwnDemo();
    const res = await fetch(`${keyway.baseUrl}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, unknown> };
    const paths = Object.keys(doc.paths);
    expect(paths.length).toBeGreaterThan(30);
    // api.md writes a route in full, relative to /admin/v1 for the operator's, or as the tail after
    // a row's first route (`.../api-keys/{id}/rotate`), an optional tail in brackets
    // (`recoveries[/{recovery}]`); the operator's mirror of a /v1 route is named by that route.
    const normal = (s: string) => s.replace(/\{[^}/]*\}/g, "{}");
    const text = normal(read("docs/api.md"));
    const page = `${text}\n${text.replace(/\[(\/[^\]]*)\]/g, "$1")}`;
    /** Whether the page holds `route` as a whole route: not followed by more of a path. */
    const has = (route: string) => {
      for (let at = page.indexOf(route); at >= 0; at = page.indexOf(route, at + 1)) {
        if (!/[\w/{}-]/.test(page[at + route.length] ?? "")) return true;
      }
      return false;
    };
    const named = (path: string): boolean => {
      const p = normal(path);
      if (has(p)) return true;
      if (p.startsWith("/admin/v1/") && named(p.slice("/admin/v1".length))) return true;
      const mirror = /^\/admin\/v1\/organizations\/\{\}(\/.+)$/.exec(p)?.[1];
      if (mirror !== undefined && !p.startsWith("/admin/v1/organizations/{}/organizations") && has(`/v1${mirror}`)) return true;
      const segments = p.split("/");
      for (let k = 2; k <= segments.length - 2; k++) if (has(`.../${segments.slice(k).join("/")}`)) return true;
      return false;
    };
    const missing = paths.filter((path) => !named(path));
    expect(missing).toEqual([]);
  });
});

interface Run {
  code: number | null;
  output: string;
}

/**
 * Runs a script in one `bash -euo pipefail` session, in its own process group, and ends the
 * group (the servers the script started in the background) once bash exits or after `ms`.
 */
function session(script: string, cwd: string, env: Record<string, string>, ms = 150_000): Promise<Run> {
  return new Promise((resolve) => {
    let output = "";
    const proc = spawn("bash", ["-euo", "pipefail", "-c", script], {
      cwd,
      env: { ...process.env, ...env },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    const end = () => {
      try {
        process.kill(-(proc.pid ?? 0), "SIGTERM");
      } catch {
        // the group has already ended
      }
    };
    const timer = setTimeout(() => {
      output += `\n(timed out after ${ms} ms)`;
      end();
    }, ms);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      end();
      setTimeout(() => resolve({ code, output }), 200);
    });
  });
}

describe("the guides' commands, run against npm start", () => {
  let keyway: Keyway;

  beforeAll(async () => {
    keyway = await sharedKeywayWithOwnDemo();
  });

  const runnable = GUIDES.filter((page) => blocksOf(page).some((b) => b.info === "sh" && verbatim(b.body) === undefined));

  it("runs a page's commands for every guide that has any", () => {
    expect(Object.keys(EXPECTED).sort()).toEqual([...runnable].sort());
  });

  it.each(runnable)("%s: its sh blocks run to the end, in order, in one shell", { timeout: 180_000 }, async (page) => {
    const script = blocksOf(page)
      .filter((b) => b.info === "sh" && verbatim(b.body) === undefined)
      .map((b) => b.body)
      .join("\n");
    // A scratch directory that looks like the repository root to the commands (they run
    // examples/, scripts/ and npm run admin from there), so that what they write stays out of it.
    const dir = await mkdtemp(join(tmpdir(), "keyway-guide-"));
    for (const name of ["examples", "scripts", "node_modules", "package.json"]) {
      if (existsSync(join(ROOT, name))) await symlink(join(ROOT, name), join(dir, name));
    }
    const env = {
      KEYWAY_URL: keyway.baseUrl,
      KEYWAY_API_KEY: keyway.demo.apiKey,
      KEYWAY_CLIENT_ID: keyway.demo.clientId,
      KEYWAY_CLIENT_SECRET: keyway.demo.clientSecret,
      KEYWAY_ORG: keyway.demo.organizationId,
      KEYWAY_USER: keyway.demo.userId,
      ADMIN_TOKEN: keyway.adminToken,
      PORT: String(keyway.port),
      TOKEN_SERVER_PORT: String(await freePort()),
      RECEIVER_PORT: String(await freePort()),
      V1A_RECEIVER_PORT: String(await freePort()),
      ISSUER_PORT: String(await freePort()),
    };
    const result = await session(script, dir, env);
    await rm(dir, { recursive: true, force: true });
    expect(result.code, result.output).toBe(0);
    for (const expected of EXPECTED[page] ?? []) expect(result.output).toMatch(expected);
  });
});
