/**
 * What the operator CLI (scripts/admin.mjs) answers when the command line or the address is wrong
 * (issue 32 item 6): a shortened or mistyped flag, command or value named with what it was meant to
 * be (and never run as an abbreviation), a flag with a fixed set of values answered with them, and
 * a refused connection answered with where the URL came from and how to point the CLI at keyway.
 * None of it needs a running keyway: the command line is refused before anything is sent, and the
 * refused connection is to a port nothing listens on. Issue 45's webhook commands (v1a signatures,
 * polling configurations and their tokens) are checked the same way, their output against a stand-in
 * that answers keyway's envelopes and records what it was sent. So this file starts no keyway and
 * stays fast; admin-cli.test.ts has the walks against a real `npm start`.
 */
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createWebhookCall, rotateSecretCall, shownOnce, WEBHOOK_COLUMNS, webhookState } from "../../scripts/cli/commands.mjs";
import { helpText } from "../../scripts/cli/help.mjs";
import { record, table } from "../../scripts/cli/output.mjs";
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

/** A polling configuration as keyway's views show it (src/http/examples.ts POLLING_CONFIG). */
const POLLING_VIEW = {
  id: "whk_polling0000000000000000000",
  organization_id: "org_polling0000000000000000000",
  delivery: "polling",
  url: null,
  events: ["order.created"],
  description: "Warehouse",
  oauth: null,
  token_cache: false,
  ordered: true,
  rate_limit: null,
  operations: false,
  status: "active",
  disabled_reason: null,
  lane: "new",
  paused_until: null,
  pause_reason: null,
  signature_scheme: null,
  signing_public_key: null,
  signing_secret_rotated_at: "2026-11-28T10:00:00.000Z",
  polling: {
    url: "https://keyway.example.com/v1/polling-endpoints/whk_polling0000000000000000000/events",
    token_active: true,
    backlog: 3,
    last_polled_at: "2026-11-28T10:05:00.000Z",
  },
  created_at: "2026-11-28T10:00:00.000Z",
  updated_at: "2026-11-28T10:00:00.000Z",
};
const POLLING_TOKEN = "kw_poll_q8Zr3xJH0pVtY1mN5aK7bW2cE9fR4sT6uL0oD3gI8hQ";
const PUBLIC_KEY = "whpk_zV3pQ0m2w5k8c1xYtq4rJb7nH6sL9aE0uGiFdCoPyRk=";
/** A push configuration signing with Ed25519 (v1a): no secret, its public key in the view. */
const V1A_VIEW = {
  ...POLLING_VIEW,
  id: "whk_v1a00000000000000000000000",
  delivery: "push",
  url: "https://billing.example/webhooks",
  oauth: { token_url: "https://billing.example/oauth/token", client_id: "keyway", auth_method: "client_secret_post" },
  signature_scheme: "v1a",
  signing_public_key: PUBLIC_KEY,
  polling: null,
};

interface Sent {
  method: string;
  path: string;
  body: unknown;
}

/**
 * A stand-in for keyway's operator API: answers each `METHOD path` (without its query) with the
 * envelope of `answers`' data (404 otherwise) and records every request with its JSON body.
 */
async function standIn(answers: Record<string, unknown>): Promise<{ url: string; sent: Sent[]; close: () => Promise<void> }> {
  const sent: Sent[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      sent.push({ method: req.method ?? "", path, body: text === "" ? undefined : JSON.parse(text) });
      const key = `${req.method} ${path}`;
      const found = Object.hasOwn(answers, key);
      res.statusCode = found ? 200 : 404;
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify(found ? { data: answers[key] } : { data: null, error: "not_found", developer_message: `no ${key}` }));
    });
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}

/** The value of `key` in the CLI's aligned `key  value` output. */
function value(output: string, key: string): string | undefined {
  return new RegExp(`^${key.replace(/\./g, "\\.")} +(\\S.*)$`, "m").exec(output)?.[1];
}

describe("operator CLI: v1a signatures and polling configurations (issue 45)", () => {
  const org = { org: "org_polling0000000000000000000" };
  const path = "/admin/v1/organizations/org_polling0000000000000000000/webhook-configurations";

  it("builds webhooks create's body: --signature-scheme for push, --delivery polling without any push flag", () => {
    const push = createWebhookCall(org, {
      "webhook-url": "https://billing.example/webhooks",
      "token-url": "https://billing.example/oauth/token",
      "client-id": "keyway",
      "auth-method": "private_key_jwt",
      "signature-scheme": "v1a",
    });
    expect(push).toMatchObject({ method: "POST", path, body: { url: "https://billing.example/webhooks", signature_scheme: "v1a" } });
    expect(push.body).not.toHaveProperty("delivery");
    // Polling: no URL, no token endpoint, no client secret (stdin is not read), only what it uses.
    expect(createWebhookCall(org, { delivery: "polling", events: "order.created", description: "Warehouse", operations: true })).toEqual({
      method: "POST",
      path,
      body: { delivery: "polling", events: ["order.created"], description: "Warehouse", operations: true },
    });
    expect(() => createWebhookCall(org, { delivery: "polling", "webhook-url": "https://x.example", "signature-scheme": "v1a" })).toThrow(
      "webhooks create --delivery polling takes no --webhook-url, --signature-scheme: a polling configuration has no URL, receiver token endpoint, pacing or signature",
    );
    expect(() => createWebhookCall(org, { delivery: "polling", "client-secret-stdin": true })).toThrow(/takes no --client-secret-stdin/);
    expect(rotateSecretCall({ ...org, id: "whk_x" }, {})).toEqual({ method: "POST", path: `${path}/whk_x/rotate-signing-secret` });
    expect(rotateSecretCall({ ...org, id: "whk_x" }, { "signature-scheme": "v1" })).toEqual({
      method: "POST",
      path: `${path}/whk_x/rotate-signing-secret`,
      body: { signature_scheme: "v1" },
    });
  });

  it("refuses a bad --signature-scheme or --delivery, and push without its flags names polling, before sending", async () => {
    for (const [args, first] of [
      [
        ["webhooks", "create", "o", "--delivery", "poll"],
        'admin: --delivery must be one of push, polling; got "poll"; did you mean "polling"?',
      ],
      [
        ["webhooks", "create", "o", "--signature-scheme", "ed25519", "--webhook-url", "https://x.example"],
        'admin: --signature-scheme must be one of v1, v1a; got "ed25519"',
      ],
      [["webhooks", "rotate-secret", "o", "w", "--signature-scheme", "v2"], 'admin: --signature-scheme must be one of v1, v1a; got "v2"'],
      [
        ["webhooks", "create", "o", "--delivery", "polling", "--token-url", "https://x.example/token", "--dpop"],
        "admin: webhooks create --delivery polling takes no --token-url, --dpop: a polling configuration has no URL, receiver token endpoint, pacing or signature (its receiver reads its events with the polling token)",
      ],
      [
        ["webhooks", "create", "o"],
        "admin: webhooks create: give --webhook-url URL; --token-url URL; --client-id ID; --client-secret-stdin or --client-secret-file FILE (or --auth-method private_key_jwt); or --delivery polling, which takes none of them",
      ],
      [["webhooks", "rotate-polling-token", "o"], "admin: webhooks rotate-polling-token: missing <id>"],
      [["webhooks", "revoke-polling-token", "o", "w", "--yes"], "admin: webhooks revoke-polling-token takes no --yes"],
    ] as const) {
      const run = await cli([...args]);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr.split("\n")[0], args.join(" ")).toBe(first);
      expect(run.stderr).not.toMatch(NO_STACK);
    }
  });

  it("prints a v1a answer's public key apart, said to be public, and a polling token apart with the shown-once warning", () => {
    const v1a = shownOnce({ ...V1A_VIEW, signing_secret: null }, {}).text ?? "";
    expect(v1a).not.toMatch(/^signing_secret /m);
    // The key once, apart below the record, and what it is.
    expect(v1a.split(PUBLIC_KEY)).toHaveLength(2);
    expect(v1a).toContain(`\n\nsigning_public_key  ${PUBLIC_KEY}\nsignature_scheme v1a: `);
    expect(v1a).toMatch(/It is public, not a secret: give it to the receiver \(it cannot sign\)/);
    expect(v1a).not.toMatch(/shown only now/);
    expect(value(v1a, "signature_scheme")).toBe("v1a");

    const created = shownOnce({ ...POLLING_VIEW, signing_secret: null, polling: { ...POLLING_VIEW.polling, token: POLLING_TOKEN } }, {});
    const text = created.text ?? "";
    expect(value(text, "url")).toBe("-");
    expect(value(text, "oauth")).toBe("-");
    expect(value(text, "polling.url")).toBe(POLLING_VIEW.polling.url);
    expect(text).not.toMatch(/^signing_secret /m);
    expect(text.split(POLLING_TOKEN)).toHaveLength(2);
    expect(text).toContain(`\n\npolling.token  ${POLLING_TOKEN}\nThe polling.token above is shown only now: keyway keeps only its hash`);
    expect(text).toMatch(/`webhooks rotate-polling-token` makes a new one/);
    // --json keeps the data as it came, token included (the warning goes to stderr, checked through the CLI below).
    expect(created.data).toMatchObject({ polling: { token: POLLING_TOKEN } });

    // v1 as before: the secret apart with its warning.
    const v1 = shownOnce({ ...V1A_VIEW, signature_scheme: "v1", signing_public_key: null, signing_secret: "whsec_abc" }, {}).text ?? "";
    expect(v1).toMatch(/\n\nsigning_secret +whsec_abc\nThe signing_secret above is shown only now/);
    expect(v1).not.toMatch(/public, not a secret/);
  });

  it("shows a polling configuration's view, row and state without a URL or OAuth, and a v1a one's scheme and key", () => {
    const shown = record(POLLING_VIEW);
    expect(value(shown, "delivery")).toBe("polling");
    expect(value(shown, "url")).toBe("-");
    expect(value(shown, "oauth")).toBe("-");
    expect(value(shown, "signature_scheme")).toBe("-");
    expect(value(shown, "polling.backlog")).toBe("3");
    expect(value(shown, "polling.last_polled_at")).toBe("2026-11-28T10:05:00.000Z");
    expect(value(record(V1A_VIEW), "signing_public_key")).toBe(PUBLIC_KEY);
    const rows = table([POLLING_VIEW, V1A_VIEW], WEBHOOK_COLUMNS).split("\n");
    expect(rows[1]).toMatch(/^whk_polling\S+ +Warehouse +\(polling\) +active +new +order\.created$/);
    expect(rows[2]).toContain("https://billing.example/webhooks");
    expect(webhookState(POLLING_VIEW)).toBe("polling: 3 event(s) not read yet, last read 2026-11-28T10:05:00.000Z");
    expect(webhookState({ ...POLLING_VIEW, polling: { ...POLLING_VIEW.polling, last_polled_at: null } })).toMatch(/last read never$/);
    expect(webhookState({ ...POLLING_VIEW, polling: { ...POLLING_VIEW.polling, token_active: false } })).toMatch(
      /^polling, token revoked: no read succeeds until `webhooks rotate-polling-token`/,
    );
    expect(webhookState({ ...POLLING_VIEW, status: "disabled", disabled_reason: "by the operator" })).toBe("disabled: by the operator");
  });

  it("lists the new commands and flags in the help", () => {
    const help = helpText("webhooks");
    expect(help).toContain("\n  webhooks rotate-secret <org> <id> [--signature-scheme v1|v1a]\n");
    expect(help).toContain("\n  webhooks rotate-polling-token <org> <id>\n");
    expect(help).toContain("\n  webhooks revoke-polling-token <org> <id>\n");
    expect(help).toMatch(/\n {2}webhooks create <org> .*\[--signature-scheme v1\|v1a\] \[--delivery push\|polling\]/);
    expect(help).toMatch(/--signature-scheme S +create, rotate-secret: v1 or v1a/);
    expect(help).toMatch(/--delivery D +create: push or polling/);
    expect(helpText("")).toMatch(/polling\.token\nis printed by `webhooks create` and `webhooks rotate-polling-token` only/);
  });

  it("sends the new commands to the operator API and prints their answers (a stand-in keyway)", async () => {
    const base = `${path}/${POLLING_VIEW.id}`;
    const v1aBase = `${path}/${V1A_VIEW.id}`;
    const keyway = await standIn({
      [`POST ${path}`]: { ...POLLING_VIEW, signing_secret: null, polling: { ...POLLING_VIEW.polling, token: POLLING_TOKEN } },
      [`POST ${base}/rotate-polling-token`]: { ...POLLING_VIEW, polling: { ...POLLING_VIEW.polling, token: POLLING_TOKEN } },
      [`DELETE ${base}/polling-token`]: { ...POLLING_VIEW, polling: { ...POLLING_VIEW.polling, token_active: false } },
      [`GET ${base}`]: POLLING_VIEW,
      [`GET ${base}/traffic`]: { last_24h: { succeeded: 0, failed: 0, success_rate: null, latency_ms_avg: null } },
      [`GET ${path}`]: [POLLING_VIEW, V1A_VIEW],
      [`POST ${v1aBase}/rotate-signing-secret`]: {
        ...V1A_VIEW,
        signing_secret: null,
        previous_secret_expires_at: "2026-11-29T10:00:00.000Z",
      },
    });
    const env = { ADMIN_TOKEN: "x", KEYWAY_URL: keyway.url };
    try {
      const created = await cli(["webhooks", "create", org.org, "--delivery", "polling", "--events", "order.created"], env);
      expect(created.code, created.stderr).toBe(0);
      expect(keyway.sent.at(-1)).toEqual({ method: "POST", path, body: { delivery: "polling", events: ["order.created"] } });
      expect(value(created.stdout, "polling.token")).toBe(POLLING_TOKEN);
      expect(created.stdout).toMatch(/The polling\.token above is shown only now/);
      const asJson = await cli(["webhooks", "create", org.org, "--delivery", "polling", "--json"], env);
      expect(JSON.parse(asJson.stdout)).toMatchObject({ signing_secret: null, polling: { token: POLLING_TOKEN } });
      expect(asJson.stderr).toMatch(/^The polling\.token \(data\.polling\.token\) is shown only now/);
      expect(asJson.stderr).not.toContain(POLLING_TOKEN);

      const rotated = await cli(["webhooks", "rotate-polling-token", org.org, POLLING_VIEW.id], env);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(keyway.sent.at(-1)).toEqual({ method: "POST", path: `${base}/rotate-polling-token`, body: undefined });
      expect(value(rotated.stdout, "polling.token")).toBe(POLLING_TOKEN);
      expect(rotated.stdout).toMatch(/shown only now[\s\S]*\nThe previous polling token no longer reads/);

      const revoked = await cli(["webhooks", "revoke-polling-token", org.org, POLLING_VIEW.id], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(keyway.sent.at(-1)).toEqual({ method: "DELETE", path: `${base}/polling-token`, body: undefined });
      expect(value(revoked.stdout, "polling.token_active")).toBe("false");
      expect(revoked.stdout).toContain(
        `Revoked: no read succeeds (401) until \`webhooks rotate-polling-token ${org.org} ${POLLING_VIEW.id}\` makes a new token`,
      );

      const shown = await cli(["webhooks", "show", org.org, POLLING_VIEW.id], env);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(
        /\nReading\nstate +polling: 3 event\(s\) not read yet, last read 2026-11-28T10:05:00\.000Z\nbacklog +3\n/,
      );
      expect(shown.stdout).not.toContain("Last 24 hours");
      const list = await cli(["webhooks", "list", org.org], env);
      expect(list.stdout).toMatch(/^ID +DESCRIPTION +URL +STATUS +LANE +EVENTS\n.*\(polling\)/);

      const toV1a = await cli(["webhooks", "rotate-secret", org.org, V1A_VIEW.id, "--signature-scheme", "v1a"], env);
      expect(toV1a.code, toV1a.stderr).toBe(0);
      expect(keyway.sent.at(-1)).toEqual({
        method: "POST",
        path: `${v1aBase}/rotate-signing-secret`,
        body: { signature_scheme: "v1a" },
      });
      expect(value(toV1a.stdout, "signing_public_key")).toBe(PUBLIC_KEY);
      expect(toV1a.stdout).toMatch(/It is public, not a secret/);
      expect(toV1a.stdout).toMatch(
        /Until 2026-11-29T10:00:00\.000Z each webhook carries a signature with the new key and one with the previous one/,
      );
      expect(toV1a.stdout).not.toMatch(/^signing_secret /m);
    } finally {
      await keyway.close();
    }
  });
});
