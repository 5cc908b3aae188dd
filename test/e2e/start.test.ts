/**
 * End to end from a developer's point of view: `node scripts/start.mjs` (what `npm start` runs)
 * must bring up wrangler dev, seed the demo and print a curl session that, pasted as one block into
 * `sh` as a person would, obtains a token and calls /v1/me and GraphQL with it, each answering 200
 * with no pause between them (the demo key's development limit, scripts/seed.mjs DEMO_LIMITS), so a
 * wrong or stale printout fails it. The server comes from
 * server.ts: a free port and a temporary state directory, so it never touches a developer's
 * running instance or local data, and `.dev.vars` removed afterwards only if the run created it.
 * The ready banner's links need no copying (issue 43): the manager's single-use sign-in link
 * signs a browser in once (its page's GET, then the POST, with cookies, as a browser sends them)
 * and a second use is refused; the explorer's link carries the demo's credentials in its fragment.
 * A second test covers the `.dev.vars` generation on its own, in a temporary directory.
 * This file starts its own npm start rather than using the shared one: what it tests is what a
 * start prints and does in its first minutes (the banner's sign-in link is single-use and lasts
 * five minutes, the request lines are counted), which a server other files have used for longer
 * cannot show.
 */
import { execFile } from "node:child_process";
import { access, copyFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureDevVars, parseDevVars } from "../../scripts/dev-vars.mjs";
import { DEV_VARS, type Keyway, READY, ROOT, sleep, startKeyway } from "./server";

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** A /v1 answer's envelope, as much of it as the banner's session reads. */
interface Envelope {
  response_status?: number;
  data?: { organization_id?: string; token_type?: string } | null;
}

describe("npm start", () => {
  let keyway: Keyway | undefined;
  let port = 0;
  let devVarsExisted = true;

  beforeAll(async () => {
    keyway = await startKeyway({ requestLines: true });
    port = keyway.port;
    devVarsExisted = keyway.devVarsExisted;
  });

  afterAll(async () => {
    await keyway?.stop();
  });

  it("prints a session that, pasted as one block into a shell, answers 200 at every step", async () => {
    const output = keyway?.output ?? "";
    const base = `http://127.0.0.1:${port}`;
    expect(output).toContain(`${READY} ${base}`);
    expect(output).toContain("The demo key's limit is 100 requests per second");
    expect(output).toContain("Every other key gets the\nspecification's default: 1 request per second and 1000 per day");

    // The block as printed: the lines after "Paste this block" up to the rule that ends the banner.
    const lines = output.split("\n");
    const start = lines.findIndex((line) => line.startsWith("Paste this block as it is"));
    expect(start, output).toBeGreaterThan(0);
    const end = lines.findIndex((line, i) => i > start && /^-{72}$/.test(line));
    const block = lines
      .slice(start + 1, end)
      .filter((line) => line.trim() !== "")
      .join("\n");
    expect(block.split("\n").length).toBe(4);
    expect(block).toContain(`curl -sS ${base}/v1/me `);

    // Pasted at once, with no pause: every answer is a 200 (each curl prints one JSON line).
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      execFile("sh", ["-c", block], { timeout: 30_000 }, (err, out, errOut) =>
        err ? reject(err) : resolve({ stdout: out, stderr: errOut }),
      ),
    );
    const answers = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(answers, stderr).toHaveLength(3);
    const [me, graphql, basic] = answers as [Envelope, { data?: { viewer?: Record<string, unknown> }; errors?: unknown }, Envelope];
    expect(me.response_status, JSON.stringify(me)).toBe(200);
    expect(me.data?.organization_id).toBe(/organization id\s+(\S+)/.exec(output)?.[1]);
    expect(graphql.errors, JSON.stringify(graphql)).toBeUndefined();
    expect(graphql.data?.viewer?.organizationId).toBe(me.data?.organization_id);
    expect(basic.response_status, JSON.stringify(basic)).toBe(200);
    expect(basic.data?.token_type).toBe("Bearer");
    // wrangler's local tracing store stays off (KEYWAY_LOCAL_TRACES=1 turns it on): it would have
    // recorded those requests under the state directory.
    expect(await exists(join(keyway?.persistDir ?? "", "v3", "observability"))).toBe(false);
  });

  it("logs one line per request, and shows each Worker's bindings once, in one line, its service bindings reaching their Workers", async () => {
    const base = `http://127.0.0.1:${port}`;
    // Unmatched paths are logged under their route, "(unmatched)"; wrangler's own line would name the path.
    const probe = `/probe-${Math.random().toString(36).slice(2)}`;
    const ours = () =>
      (keyway?.output ?? "").split("\n").filter((line) => /^\[keyway\] .* GET \(unmatched\) 404 not_found \d+ms rid=/.test(line));
    const before = ours().length;
    for (let i = 0; i < 3; i++) expect((await fetch(`${base}${probe}`)).status).toBe(404);
    for (let i = 0; i < 40 && ours().length < before + 3; i++) await sleep(50);
    await sleep(300); // a second line for any of them would come within this
    expect(ours().length - before).toBe(3);
    expect(keyway?.output ?? "").not.toContain(probe);
    const output = keyway?.output ?? "";
    // One line per Worker, counting its bindings by kind: wrangler's tables (about 70 lines, one
    // value "(hidden)" in one table and shown in another) buried the demo's credentials.
    for (const worker of ["keyway", "keyway-people", "keyway-graphql"]) {
      expect(output.split(`\n${worker}: `).length - 1, worker).toBe(1);
    }
    expect(output).not.toContain("has access to the following bindings");
    expect(output).not.toContain('("(hidden)")');
    expect(output.split("\n").filter((l) => l.startsWith("Using secrets defined in"))).toHaveLength(1);
    expect(output).toMatch(/\nkeyway: 7 Durable Objects, 1 KV namespace, 3 queues, 2 service bindings \(/);
    // wrangler sees each service binding's state at that moment, which races with the companions'
    // own builds (the people's Worker's is the longest): "not connected" may show for a Worker that
    // is up a moment later. What counts is that the bindings reach them.
    expect(output).toMatch(/PEOPLE keyway-people (?:not )?connected/);
    expect(output).toMatch(/GRAPHQL keyway-graphql (?:not )?connected/);
    // The credentials now come within a screen of wrangler's first line.
    const lines = output.split("\n");
    const first = lines.findIndex((l) => l.includes("Using secrets defined in"));
    const demo = lines.findIndex((l) => l.startsWith("Demo data"));
    expect(demo - first).toBeLessThan(30);
    expect((await fetch(`${base}/docs`)).status).toBe(200);
    expect((await fetch(`${base}/v1/openapi.json`)).status).toBe(200);
  });

  it("says where the API, the manager and the docs are, and how to sign in, and each answers there", async () => {
    const output = keyway?.output ?? "";
    const base = `http://127.0.0.1:${port}`;
    expect(output).toContain(`API       ${base}/v1`);
    expect(output).toMatch(new RegExp(`  Manager   ${base}/manager/sign-in/link\\?ticket=kw_signin_[\\w-]{43}\n`));
    expect(output).toContain("(signs you in once within 15 minutes, until ");
    expect(output).toContain("a new link: npm run admin -- manager sign-in-link;");
    expect(output).toContain(`or at ${base}/manager, sign in with the operator token: grep ADMIN_TOKEN .dev.vars)`);
    // Long enough to follow the README to the manager: at least 10 of its 15 minutes are still left.
    const [, h, m, s] = /until (\d\d):(\d\d):(\d\d) UTC/.exec(output) ?? [];
    const now = new Date();
    const left =
      (Number(h) * 3600 +
        Number(m) * 60 +
        Number(s) -
        (now.getUTCHours() * 3600 + now.getUTCMinutes() * 60 + now.getUTCSeconds()) +
        86_400) %
      86_400;
    expect(left).toBeGreaterThan(600);
    expect(left).toBeLessThanOrEqual(900);
    expect(output).toContain(`API docs  ${base}/docs`);
    expect(output).toMatch(new RegExp(`  GraphQL   ${base}/explorer#api_key=kw_live_ak_\\S+&client_id=\\S+&client_secret=\\S+\n`));
    expect(output).toContain("(GraphiQL, signed in as the demo client");
    expect(output).toContain(`Links     ${base}/  (every entry point`);
    const signIn = await fetch(`${base}/manager`, { redirect: "manual" });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get("location")).toBe("/manager/sign-in");
    const form = await (await fetch(`${base}/manager/sign-in`)).text();
    expect(form).toContain("Administrator token");
    expect((await fetch(`${base}/docs`)).status).toBe(200);
    expect((await fetch(`${base}/explorer`)).status).toBe(200);
    expect((await fetch(`${base}/`, { headers: { Accept: "application/json" } })).status).toBe(200);
  });

  it("prints a manager sign-in link that signs a browser in once; a second use is refused", async () => {
    const output = keyway?.output ?? "";
    const base = `http://127.0.0.1:${port}`;
    const link = new RegExp(`  Manager   (${base}/manager/sign-in/link\\?ticket=\\S+)\n`).exec(output)?.[1];
    expect(link, output).toBeDefined();

    /** A browser's cookie jar over Set-Cookie, and its form POST (Origin and Sec-Fetch-Site as a browser sends them). */
    const jar = new Map<string, string>();
    const send = async (url: string, init: RequestInit = {}): Promise<Response> => {
      const headers = new Headers(init.headers);
      if (jar.size > 0) headers.set("Cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
      const res = await fetch(url, { ...init, headers, redirect: "manual" });
      for (const line of res.headers.getSetCookie()) {
        const [pair = ""] = line.split(";");
        const [name = "", ...value] = pair.split("=");
        if (/max-age=0/i.test(line) || value.join("=") === "") jar.delete(name);
        else jar.set(name, value.join("="));
      }
      return res;
    };
    const open = async (): Promise<Response> => {
      const page = await send(link ?? "");
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain(">Sign in</button>");
      const fields = Object.fromEntries(
        [...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)].map((m) => [
          m[1] ?? "",
          (m[2] ?? "").replace(/&amp;/g, "&"),
        ]),
      );
      return send(`${base}/manager/sign-in/link`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: base, "Sec-Fetch-Site": "same-origin" },
        body: new URLSearchParams(fields).toString(),
      });
    };

    const signedIn = await open();
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get("location")).toBe("/manager/organizations");
    expect(jar.has("__Host-kw_session")).toBe(true);
    const home = await send(`${base}/manager/organizations`);
    expect(home.status).toBe(200);
    const homeHtml = await home.text();
    expect(homeHtml).toContain("Demo organization");
    expect(homeHtml).toContain("Sign out");

    // The same link again, from a browser with no session: refused, and nobody signed in.
    jar.clear();
    const again = await open();
    expect(again.status).toBe(410);
    expect(await again.text()).toContain("This sign-in link has already been used");
    expect(jar.has("__Host-kw_session")).toBe(false);
  });

  it("makes another sign-in link with the operator CLI (npm run admin -- manager sign-in-link)", async () => {
    const base = `http://127.0.0.1:${port}`;
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(
        process.execPath,
        ["scripts/admin.mjs", "manager", "sign-in-link", "--url", base, "--json", "--expires-in", "120"],
        { cwd: ROOT, env: { ...process.env, ADMIN_TOKEN: keyway?.adminToken ?? "" }, timeout: 30_000 },
        (err, out) => (err ? reject(err) : resolve({ stdout: out })),
      ),
    );
    const made = JSON.parse(stdout) as { url: string; expires_at: string };
    expect(made.url).toMatch(new RegExp(`^${base}/manager/sign-in/link\\?ticket=kw_signin_[\\w-]{43}$`));
    expect(Date.parse(made.expires_at) - Date.now()).toBeLessThanOrEqual(120_000);
    expect((await fetch(made.url)).status).toBe(200);
  });

  it("never prints the secrets of .dev.vars", async () => {
    const output = keyway?.output ?? "";
    const vars = parseDevVars(await readFile(DEV_VARS, "utf8"));
    for (const name of ["ADMIN_TOKEN", "TOKEN_SIGNING_KEYS"]) {
      const value = vars[name] ?? "";
      expect(value.length, name).toBeGreaterThan(0);
      expect(output.includes(value), `${name} appears in the output`).toBe(false);
    }
    if (!devVarsExisted) expect(output).toContain("Created .dev.vars");
  });
});

describe("ensureDevVars", () => {
  let dir = "";

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "keyway-devvars-"));
    await copyFile(join(ROOT, ".dev.vars.example"), join(dir, ".dev.vars.example"));
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("creates an owner-only .dev.vars with a distinct 256-bit secret per placeholder, then leaves it alone", async () => {
    const template = await readFile(join(dir, ".dev.vars.example"), "utf8");
    const placeholders = template.split("<random>").length - 1;
    expect(placeholders).toBeGreaterThan(0);

    const first = await ensureDevVars(dir);
    expect(first).toEqual({ created: true, added: [], path: join(dir, ".dev.vars") });
    expect((await stat(first.path)).mode & 0o777).toBe(0o600);
    const content = await readFile(first.path, "utf8");
    expect(content).not.toContain("<random>");

    // Everything but the placeholders is copied verbatim; each becomes 43 base64url characters.
    const escaped = template.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const shape = new RegExp(`^${escaped.split("<random>").join("([A-Za-z0-9_-]+)")}$`);
    const secrets = shape.exec(content)?.slice(1) ?? [];
    expect(secrets).toHaveLength(placeholders);
    for (const secret of secrets) expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set(secrets).size).toBe(secrets.length);

    const second = await ensureDevVars(dir);
    expect(second).toMatchObject({ created: false, added: [] });
    expect(await readFile(first.path, "utf8")).toBe(content);
  });

  it("appends settings a newer .dev.vars.example introduced, keeping existing values", async () => {
    const path = join(dir, ".dev.vars");
    await writeFile(path, "ADMIN_TOKEN=chosen-by-the-developer-0123456789abcdef\n", { mode: 0o600 });
    const result = await ensureDevVars(dir);
    const vars = parseDevVars(await readFile(path, "utf8"));
    const expected = Object.keys(parseDevVars(await readFile(join(dir, ".dev.vars.example"), "utf8"))).filter((n) => n !== "ADMIN_TOKEN");
    expect(result).toMatchObject({ created: false, added: expected });
    expect(vars.ADMIN_TOKEN).toBe("chosen-by-the-developer-0123456789abcdef");
    expect(vars.WEBHOOK_ENCRYPTION_KEYS).toMatch(/^w1:[A-Za-z0-9_-]{43}$/);
    expect(vars.TOKEN_SIGNING_KEYS).toMatch(/^k1:[A-Za-z0-9_-]{43}$/);
  });
});
