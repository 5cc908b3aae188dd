/**
 * What the operator CLI (scripts/admin.mjs) answers when the command line or the address is wrong
 * (issue 32 item 6): a shortened or mistyped flag, command or value named with what it was meant to
 * be (and never run as an abbreviation), a flag with a fixed set of values answered with them, and
 * a refused connection answered with where the URL came from and how to point the CLI at keyway.
 * None of it needs a running keyway: the command line is refused before anything is sent, and the
 * refused connection is to a port nothing listens on. So this file starts no server and stays fast;
 * admin-cli.test.ts has the walks against a real `npm start`.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closest, suggest } from "../../scripts/cli/values.mjs";
import { freePort, ROOT } from "./server";

const CLI = join(ROOT, "scripts", "admin.mjs");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with `env` on top of the environment without ADMIN_TOKEN, KEYWAY_URL or PORT. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = { ...process.env };
  delete base.ADMIN_TOKEN;
  delete base.KEYWAY_URL;
  delete base.PORT;
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...base, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stdout, stderr });
    });
  });
}

const NO_STACK = /\n\s+at |Error:|node:internal/;

describe("operator CLI answers", () => {
  it("names the flag or command a shortened one begins, and does not run it as an abbreviation", async () => {
    // A port nothing listens on: had a shortened flag been accepted, the run would reach the network (exit 1).
    const env = { ADMIN_TOKEN: "x", KEYWAY_URL: `http://127.0.0.1:${await freePort()}` };
    for (const [args, first] of [
      [["keys", "create", "o", "--per-sec", "3"], 'admin: unknown flag --per-sec; did you mean "--per-second"?'],
      [["keys", "create", "o", "--per-sec=3"], 'admin: unknown flag --per-sec; did you mean "--per-second"?'],
      [["orgs", "limits", "o", "--per", "3"], 'admin: unknown flag --per; did you mean "--per-second", "--per-day" or "--per-month"?'],
      [["keys", "rotate", "o", "k", "--gra", "60"], 'admin: unknown flag --gra; did you mean "--grace"?'],
      [["webhooks", "create", "o", "--webhook", "u"], 'admin: unknown flag --webhook; did you mean "--webhook-url"?'],
      // A shortened word with a typo in it.
      [["keys", "create", "o", "--per-secn", "3"], 'admin: unknown flag --per-secn; did you mean "--per-second"?'],
      [["cred", "list", "o", "u"], 'admin: unknown command "cred"; did you mean "credentials"?'],
      [["web", "list", "o"], 'admin: unknown command "web"; did you mean "webhooks" or "webhook-settings"?'],
      [["keys", "cr", "o"], 'admin: unknown command "keys cr"; did you mean "keys create" or "keys credits"?'],
      [["keys", "rot", "o", "k"], 'admin: unknown command "keys rot"; did you mean "keys rotate"?'],
      [["deliveries", "li", "o", "w"], 'admin: unknown command "deliveries li"; did you mean "deliveries list"?'],
    ] as const) {
      const run = await cli([...args], env);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr.split("\n")[0], args.join(" ")).toBe(first);
      expect(run.stderr).not.toMatch(NO_STACK);
    }
  });

  it("suggests nothing for a word that is neither a typo nor the beginning of one, or begins too many", () => {
    expect(suggest("frobnicate", ["orgs", "keys", "credentials"])).toBe("");
    // One letter begins too much to be meant as any one of them.
    expect(closest("p", ["per-second", "per-day", "per-month"])).toEqual([]);
    // Five candidates begun: more than is worth naming.
    expect(closest("no", ["no-ordered", "no-token-cache", "no-schema", "no-deprecated", "no-dpop"])).toEqual([]);
    expect(closest("per-sec", ["per-second", "per-day", "per-month"])).toEqual(["per-second"]);
    // A typo's match comes first, and is not named twice.
    expect(closest("grce", ["grace", "days"])).toEqual(["grace"]);
    expect(suggest("des", ["yes", "description"], "--")).toBe('; did you mean "--yes" or "--description"?');
  });

  it("answers a value outside a flag's fixed set with the valid values, and the closest, before sending", async () => {
    for (const [args, first] of [
      [
        ["deliveries", "list", "o", "w", "--status", "bogus"],
        'admin: --status must be one of pending, retrying, delivered, failed; got "bogus"',
      ],
      [
        ["deliveries", "list", "o", "w", "--status", "deliverd"],
        'admin: --status must be one of pending, retrying, delivered, failed; got "deliverd"; did you mean "delivered"?',
      ],
      [
        ["deliveries", "list", "o", "w", "--status", "fail"],
        'admin: --status must be one of pending, retrying, delivered, failed; got "fail"; did you mean "failed"?',
      ],
      [
        ["keys", "create", "o", "--location-hint", "eu"],
        'admin: --location-hint must be one of wnam, enam, sam, weur, eeur, apac, oc, afr, me; got "eu"',
      ],
      [
        ["webhooks", "update", "o", "w", "--auth-method", "private_key"],
        'admin: --auth-method must be one of client_secret_post, client_secret_basic, private_key_jwt; got "private_key"; did you mean "private_key_jwt"?',
      ],
    ] as const) {
      // No ADMIN_TOKEN and no URL: the value is refused before either is needed.
      const run = await cli([...args]);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr.split("\n")[0], args.join(" ")).toBe(first);
      expect(run.stderr).toMatch(/Usage: npm run admin -- /);
      expect(run.stderr).not.toMatch(NO_STACK);
    }
    // The help lists the same values the check uses.
    const help = await cli(["deliveries", "--help"]);
    expect(help.stdout).toMatch(/--status S +pending, retrying, delivered or failed\n/);
  });

  it("answers a refused connection with where the URL came from and how to point the CLI at keyway", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    for (const [env, args, from] of [
      [{ PORT: String(port) }, [], `PORT=${port}`],
      [{ KEYWAY_URL: url }, [], "KEYWAY_URL"],
      [{ KEYWAY_URL: "http://127.0.0.1:1" }, ["--url", url], "--url"],
    ] as const) {
      const run = await cli(["orgs", "list", ...args], { ADMIN_TOKEN: "x", ...env });
      expect(run.code, from).toBe(1);
      expect(run.stdout).toBe("");
      const lines = run.stderr.trimEnd().split("\n");
      expect(lines, from).toEqual([
        `admin: cannot reach keyway at ${url} (connection refused: is it running?)`,
        `hint: the URL came from ${from}. Start keyway (\`npm start\` listens on $PORT, 8787 by default) or point the CLI at it: --url URL or KEYWAY_URL=URL for any keyway, or PORT=N for http://127.0.0.1:N (used when neither is given).`,
      ]);
    }
  });
});
