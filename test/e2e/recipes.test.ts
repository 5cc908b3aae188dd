/**
 * The documentation works as pasted: against a real `npm start`, the README's curl session
 * (examples/curl-session.sh, which the README shows verbatim) runs to the end and stops with the
 * server's message at the first error; the client recipes of the guides (the files under
 * examples/recipes/, shown verbatim in docs/guides/*.md) obtain a token with openid-client v6 and with
 * oauth4webapi and make a protected call, one after another with no pause (the demo key's
 * development limit), private_key_jwt with a key pair made by each of the page's two key recipes
 * (jose, openssl); a federated client authenticates with a JWT of the local workload
 * issuer (examples/local-issuer.mjs, shown there too) with each library; a JWT access token
 * verifies with jose against the metadata's jwks_uri; and the receiver recipe verifies a real delivery with
 * the `standardwebhooks` package, its token fetched from examples/oauth-server.mjs.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoToken, freePort, type Keyway, operatorCall, ROOT, sharedKeywayWithOwnDemo, sleep } from "./server";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (at most 30 s) and hands back its exit code and output. */
function run(file: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running example server; `lines` grows with its stdout. */
function serve(script: string, env: Record<string, string>): { proc: ChildProcess; output: () => string } {
  let output = "";
  const proc = spawn(process.execPath, [script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  proc.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  return { proc, output: () => output };
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The fenced code blocks of a Markdown file. */
async function codeBlocks(path: string): Promise<string[]> {
  const text = await readFile(join(ROOT, path), "utf8");
  return [...text.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
}

/** A source file as the docs show it: without its leading block comment (the docs say that in prose). */
async function shown(path: string): Promise<string> {
  return (await readFile(join(ROOT, path), "utf8")).replace(/^\/\*\*[\s\S]*?\*\/\n/, "");
}

const NO_STACK = /^\s+at .+:\d+:\d+\)?$/m;

describe("docs that work as pasted", () => {
  let keyway: Keyway;
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    keyway = await sharedKeywayWithOwnDemo();
  });

  afterAll(async () => {
    for (const proc of started) proc.kill();
  });

  const demoEnv = () => ({
    KEYWAY_URL: keyway.baseUrl,
    KEYWAY_API_KEY: keyway.demo.apiKey,
    KEYWAY_CLIENT_ID: keyway.demo.clientId,
    KEYWAY_CLIENT_SECRET: keyway.demo.clientSecret,
  });

  it("shows the curl session in the README exactly as examples/curl-session.sh has it", async () => {
    const script = await readFile(join(ROOT, "examples/curl-session.sh"), "utf8");
    expect(await codeBlocks("README.md")).toContain(script);
  });

  it("runs the curl session to a protected call on any PORT", async () => {
    const result = await run("bash", ["examples/curl-session.sh"], { PORT: String(keyway.port), ADMIN_TOKEN: "" });
    // stderr holds only the CLI's notices that each one-time secret is shown only now.
    expect(
      result.stderr
        .trim()
        .split("\n")
        .every((line) => line.includes("shown only now")),
    ).toBe(true);
    expect(result.code).toBe(0);
    const [me, tokenType] = result.stdout.trim().split("\n");
    const answer = JSON.parse(me ?? "") as { response_status: number; data: { token: { expires_in: number } } };
    expect(answer.response_status).toBe(200);
    expect(answer.data.token.expires_in).toBeGreaterThan(3500);
    expect(tokenType).toBe("Bearer");
  });

  it("stops the curl session at the first error with the server's message, and no stack trace", async () => {
    const result = await run("bash", ["examples/curl-session.sh"], { PORT: String(keyway.port), ADMIN_TOKEN: "not-the-admin-token" });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("invalid_token, HTTP 401");
    expect(result.stderr).not.toMatch(NO_STACK);
    expect(result.stdout).toBe("");
  });

  it("never sends the local ADMIN_TOKEN of .dev.vars to a BASE other than loopback", async () => {
    const result = await run("bash", ["examples/curl-session.sh"], { BASE: "https://keyway.invalid", ADMIN_TOKEN: "" });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("ADMIN_TOKEN is not set");
    expect(result.stderr).not.toMatch(NO_STACK);
    expect(result.stdout).toBe("");
  });

  it("stops the curl session with one line naming the URL, and a hint on how to point the CLI at keyway, when nothing listens on PORT", async () => {
    const port = await freePort();
    const result = await run("bash", ["examples/curl-session.sh"], { PORT: String(port), ADMIN_TOKEN: "" });
    expect(result.code).not.toBe(0);
    const [reason, hint, ...rest] = result.stderr.trim().split("\n");
    expect(rest).toEqual([]);
    expect(reason).toContain(`127.0.0.1:${port}`);
    expect(hint).toMatch(/^hint: .*PORT=N/);
    expect(result.stderr).not.toMatch(NO_STACK);
  });

  it.each([
    ["openid-client v6", "examples/recipes/token-openid-client.mjs"],
    ["oauth4webapi", "examples/recipes/token-oauth4webapi.mjs"],
  ])("obtains a token with %s as docs/guides/issue-tokens.md shows it, and calls /v1/me with it", async (_name, file) => {
    expect(await codeBlocks("docs/guides/issue-tokens.md")).toContain(await shown(file));
    const result = await run(process.execPath, [file], demoEnv());
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const [expiry, me] = result.stdout.trim().split("\n");
    // 3600 s as issued; openid-client's expiresIn() counts down from the moment the answer
    // arrived, so a slow run may print 3599.
    const seconds = Number(/^access token expires in (\d+) s$/.exec(expiry ?? "")?.[1]);
    expect(seconds).toBeGreaterThanOrEqual(3595);
    expect(seconds).toBeLessThanOrEqual(3600);
    expect(JSON.parse(me ?? "")).toMatchObject({ organization_id: keyway.demo.organizationId, client_id: keyway.demo.clientId });
  });

  /** Makes a private key and key set in `dir` as docs/guides/private-key-jwt.md shows it, with jose or with openssl. */
  const keyMakers = {
    jose: (dir: string) => run(process.execPath, [join(ROOT, "examples/recipes/make-client-keys.mjs"), dir]),
    openssl: (dir: string) => run("sh", ["-c", `cd '${dir}' && sh '${join(ROOT, "examples/recipes/make-client-keys.sh")}'`]),
  };

  it.each([
    ["oauth4webapi", "jose", "examples/recipes/private-key-jwt-dpop-oauth4webapi.mjs"],
    ["openid-client v6", "openssl", "examples/recipes/private-key-jwt-dpop-openid-client.mjs"],
  ] as const)(
    "authenticates with private_key_jwt, gets a DPoP-bound token narrowed to webhooks:read and calls /v1/me with %s, its key made with %s, as docs/guides/private-key-jwt.md shows it",
    async (_name, maker, file) => {
      const blocks = await codeBlocks("docs/guides/private-key-jwt.md");
      expect(blocks).toContain(await shown(file));
      expect(blocks).toContain(
        await shown(maker === "jose" ? "examples/recipes/make-client-keys.mjs" : "examples/recipes/make-client-keys.sh"),
      );
      // The client makes its key pair; the operator registers the public key set; the private key
      // stays in a file of the client's.
      const dir = await mkdtemp(join(tmpdir(), "keyway-client-key-"));
      const made = await keyMakers[maker](dir);
      expect(made.stderr).toBe("");
      expect(made.stdout).toMatch(/^kid \S+: client-key\.json \(private, keep it\) and client-jwks\.json \(public, register it\)$/m);
      const jwks = JSON.parse(await readFile(join(dir, "client-jwks.json"), "utf8")) as { keys: { d?: string }[] };
      expect(jwks.keys).toHaveLength(1);
      expect(jwks.keys[0]?.d).toBeUndefined();
      const registered = await fetch(
        `${keyway.baseUrl}/admin/v1/organizations/${keyway.demo.organizationId}/users/${keyway.demo.userId}/client-credentials`,
        {
          method: "POST",
          headers: { Authorization: `Bearer ${keyway.adminToken}`, "Content-Type": "application/json" },
          body: JSON.stringify({ token_endpoint_auth_method: "private_key_jwt", jwks }),
        },
      );
      expect(registered.status, await registered.clone().text()).toBe(201);
      const clientId = ((await registered.json()) as { data: { client_id: string } }).data.client_id;
      const result = await run(process.execPath, [file], {
        ...demoEnv(),
        KEYWAY_CLIENT_ID: clientId,
        KEYWAY_PRIVATE_JWK: join(dir, "client-key.json"),
      });
      await rm(dir, { recursive: true, force: true });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const [issued, me] = result.stdout.trim().split("\n");
      // The libraries name the token type in lower case.
      expect(issued?.toLowerCase()).toBe("dpop token with scope webhooks:read");
      expect(JSON.parse(me ?? "")).toMatchObject({ organization_id: keyway.demo.organizationId, client_id: clientId });
    },
  );

  it.each([
    ["oauth4webapi", "examples/recipes/revoke-introspect-oauth4webapi.mjs"],
    ["openid-client v6", "examples/recipes/revoke-introspect-openid-client.mjs"],
  ])(
    "introspects and revokes a token with %s as docs/guides/protect-an-api.md shows it: active, then inactive and refused",
    async (_name, file) => {
      expect(await codeBlocks("docs/guides/protect-an-api.md")).toContain(await shown(file));
      const result = await run(process.execPath, [file], demoEnv());
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout.trim().split("\n")).toEqual([
        `active true, client ${keyway.demo.clientId}, scope webhooks:read webhooks:write events:write graphql:mutate`,
        "active false",
        "GET /v1/me refused: 401 invalid_token",
      ]);
    },
  );

  /** The local workload issuer docs/guides/federated-clients.md shows, trusted by the demo organization, and a federated credential of its subject. */
  let federated: Promise<{ issuerUrl: string; clientId: string }> | undefined;
  const FEDERATED_SUBJECT = "repo:acme/api:ref:refs/heads/main";
  const federatedSetup = () =>
    (federated ??= (async () => {
      const port = await freePort();
      const issuer = serve("examples/local-issuer.mjs", { PORT: String(keyway.port), ISSUER_PORT: String(port) });
      started.push(issuer.proc);
      await until("the local issuer", () => issuer.output().includes("listening"));
      const issuerUrl = `http://127.0.0.1:${port}`;
      const trusted = await operatorCall(keyway, "POST", `/organizations/${keyway.demo.organizationId}/trusted-issuers`, {
        issuer: issuerUrl,
      });
      expect(trusted.status, await trusted.clone().text()).toBe(201);
      const created = await operatorCall(
        keyway,
        "POST",
        `/organizations/${keyway.demo.organizationId}/users/${keyway.demo.userId}/client-credentials`,
        {
          token_endpoint_auth_method: "federated_jwt",
          federated: { issuer: issuerUrl, subject: FEDERATED_SUBJECT },
        },
      );
      expect(created.status, await created.clone().text()).toBe(201);
      return { issuerUrl, clientId: ((await created.json()) as { data: { client_id: string } }).data.client_id };
    })());

  it.each([
    ["oauth4webapi", "examples/recipes/federated-oauth4webapi.mjs"],
    ["openid-client v6", "examples/recipes/federated-openid-client.mjs"],
  ])(
    "authenticates a federated client with its workload's JWT from the local issuer with %s, as docs/guides/federated-clients.md shows it",
    async (_name, file) => {
      const blocks = await codeBlocks("docs/guides/federated-clients.md");
      expect(blocks).toContain(await shown(file));
      expect(blocks).toContain(await shown("examples/local-issuer.mjs"));
      const { issuerUrl, clientId } = await federatedSetup();
      // The platform's part: a JWT for keyway, written to a file as a projected token is.
      const minted = await fetch(`${issuerUrl}/token?${new URLSearchParams({ sub: FEDERATED_SUBJECT, aud: keyway.baseUrl })}`);
      expect(minted.status).toBe(200);
      const dir = await mkdtemp(join(tmpdir(), "keyway-workload-"));
      await writeFile(join(dir, "workload.jwt"), `${await minted.text()}\n`);
      const result = await run(process.execPath, [file], {
        ...demoEnv(),
        KEYWAY_CLIENT_ID: clientId,
        KEYWAY_CLIENT_SECRET: "",
        KEYWAY_WORKLOAD_TOKEN_FILE: join(dir, "workload.jwt"),
      });
      await rm(dir, { recursive: true, force: true });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const [issued, me] = result.stdout.trim().split("\n");
      expect(issued?.toLowerCase()).toBe("bearer token, expires in 3600 s");
      expect(JSON.parse(me ?? "")).toMatchObject({ organization_id: keyway.demo.organizationId, client_id: clientId });
    },
  );

  it("verifies a JWT access token with jose against the metadata's jwks_uri, then calls /v1/me with it, as docs/guides/protect-an-api.md shows it", async () => {
    const file = "examples/recipes/jwt-access-token-jose.mjs";
    expect(await codeBlocks("docs/guides/protect-an-api.md")).toContain(await shown(file));
    const created = await operatorCall(
      keyway,
      "POST",
      `/organizations/${keyway.demo.organizationId}/users/${keyway.demo.userId}/client-credentials`,
      {
        access_token_strategy: "jwt",
        scopes: ["webhooks:read"],
      },
    );
    expect(created.status, await created.clone().text()).toBe(201);
    const cred = ((await created.json()) as { data: { client_id: string; client_secret: string } }).data;
    const result = await run(process.execPath, [file], {
      ...demoEnv(),
      KEYWAY_CLIENT_ID: cred.client_id,
      KEYWAY_CLIENT_SECRET: cred.client_secret,
      KEYWAY_ORGANIZATION_ID: keyway.demo.organizationId,
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const [verified, me] = result.stdout.trim().split("\n");
    expect(verified).toBe(`verified: sub ${keyway.demo.userId}, client_id ${cred.client_id}, scope webhooks:read`);
    expect(JSON.parse(me ?? "")).toMatchObject({ organization_id: keyway.demo.organizationId, client_id: cred.client_id });
  });

  it("verifies a real delivery with standardwebhooks as docs/guides/receive-webhooks.md shows it", async () => {
    const file = "examples/recipes/receiver-standardwebhooks.mjs";
    expect(await codeBlocks("docs/guides/receive-webhooks.md")).toContain(await shown(file));

    const oauthPort = await freePort();
    const receiverClientSecret = randomBytes(32).toString("base64url");
    // PORT stays keyway's, as in a shell that runs npm start with it: the servers take their own.
    const oauthServer = serve("examples/oauth-server.mjs", {
      PORT: String(keyway.port),
      TOKEN_SERVER_PORT: String(oauthPort),
      CLIENT_SECRET: receiverClientSecret,
    });
    started.push(oauthServer.proc);
    await until("the OAuth server", () => oauthServer.output().includes("listening"));

    const token = await demoToken(keyway);
    const api = (path: string, payload: unknown) =>
      fetch(`${keyway.baseUrl}${path}`, {
        method: "POST",
        headers: { "x-api-key": keyway.demo.apiKey, Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify(payload),
      });

    const receiverPort = await freePort();
    const created = await api("/v1/webhook-configurations", {
      url: `http://127.0.0.1:${receiverPort}/webhooks`,
      oauth: { token_url: `http://127.0.0.1:${oauthPort}/oauth/token`, client_id: "demo-receiver", client_secret: receiverClientSecret },
    });
    expect(created.status).toBe(201);
    const secret = ((await created.json()) as { data: { signing_secret: string } }).data.signing_secret;

    const receiver = serve(file, { SIGNING_SECRET: secret, PORT: String(keyway.port), RECEIVER_PORT: String(receiverPort) });
    started.push(receiver.proc);
    await until("the receiver", () => receiver.output().includes("listening"));

    const published = await api("/v1/events", { type: "order.created", data: { order_id: "1234" } });
    expect(published.status).toBe(202);
    const eventId = ((await published.json()) as { data: { id: string } }).data.id;
    await until("the verified delivery", () => receiver.output().includes("verified "), 60_000);
    const line =
      receiver
        .output()
        .split("\n")
        .find((l) => l.startsWith("verified ")) ?? "";
    expect(line).toContain(eventId);
    expect(line).toContain('"order_id":"1234"');
    expect(receiver.output()).not.toContain("refused");
    // The token request keyway made to the receiver's authorization server succeeded.
    expect(oauthServer.output()).toMatch(/POST \/oauth\/token 200/);
  });
});
