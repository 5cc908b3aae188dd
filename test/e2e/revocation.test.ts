/**
 * Revocation in a real local run (`npm start`): a revoked client credential and a revoked API key
 * stay refused after the KV lookup entries are written back to their pre-revocation values with
 * `wrangler kv` and the worker is restarted on the same state, because no decision about a secret
 * rests on KV (the key's Durable Object holds the revocations).
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { wranglerCommand } from "../../scripts/wrangler.mjs";
import { type Keyway, ROOT, sleep, startKeyway } from "./server";

const run = promisify(execFile);
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_HIDE_BANNER: "true" };

/** `wrangler kv key ...` against the local state of a (possibly running) dev server. */
async function kv(persistDir: string, ...args: string[]): Promise<string> {
  const [bin, argv] = wranglerCommand(["kv", "key", ...args, "--binding", "KV", "--local", "--persist-to", persistDir]);
  const { stdout } = await run(bin, argv, { cwd: ROOT, env: ENV });
  return stdout;
}

describe("revocation in a local run", () => {
  let keyway: Keyway | undefined;
  let persistDir = "";

  afterAll(async () => {
    await keyway?.stop();
    if (persistDir) await rm(persistDir, { recursive: true, force: true });
  });

  it("holds after the KV entries are put back to their old values and the worker restarts", async () => {
    persistDir = await mkdtemp(join(tmpdir(), "keyway-e2e-revocation-"));
    keyway = await startKeyway({ persistDir });
    const { demo, adminToken } = keyway;
    // The base URL changes with each start (a fresh port).
    const base = () => keyway?.baseUrl ?? "";
    const tokenRequest = (clientId = demo.clientId, clientSecret = demo.clientSecret) =>
      fetch(`${base()}/v1/oauth`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": demo.apiKey },
        body: JSON.stringify({ client_id: clientId, client_secret: clientSecret, grant_type: "client_credentials" }),
      });
    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`${base()}/admin/v1/organizations/${demo.organizationId}${path}`, {
        method,
        headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    const issued = await tokenRequest();
    expect(issued.status).toBe(200);
    const token = ((await issued.json()) as { data: { access_token: string } }).data.access_token;
    // A second credential that stays valid: the control showing that a restart keeps tokens working,
    // so the refusals below are the revocations and not, say, new signing keys.
    const second = await admin("POST", `/users/${demo.userId}/client-credentials`, { name: "control" });
    expect(second.status).toBe(201);
    const control = ((await second.json()) as { data: { client_id: string; client_secret: string } }).data;
    await sleep(1100);
    const controlIssued = await tokenRequest(control.client_id, control.client_secret);
    expect(controlIssued.status).toBe(200);
    const controlToken = ((await controlIssued.json()) as { data: { access_token: string } }).data.access_token;
    const entry = await kv(persistDir, "get", `client:${demo.clientId}`);
    expect(entry).toContain(demo.organizationId);

    expect((await admin("DELETE", `/users/${demo.userId}/client-credentials/${demo.clientId}`)).status).toBe(200);
    await kv(persistDir, "put", `client:${demo.clientId}`, entry.trim());

    keyway = await keyway.restart();
    // The demo key allows one request per second.
    await sleep(1100);
    const refused = await tokenRequest();
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe("invalid_client");
    await sleep(1100);
    const me = await fetch(`${base()}/v1/me`, {
      headers: { "x-api-key": demo.apiKey, Authorization: `Bearer ${token}` },
    });
    expect(me.status).toBe(401);
    expect(((await me.json()) as { error: string }).error).toBe("invalid_token");
    await sleep(1100);
    const controlMe = await fetch(`${base()}/v1/me`, {
      headers: { "x-api-key": demo.apiKey, Authorization: `Bearer ${controlToken}` },
    });
    expect(controlMe.status).toBe(200);

    // The API key too: revoked, then refused after another restart.
    expect((await admin("DELETE", `/api-keys/${demo.apiKeyId}`)).status).toBe(200);
    keyway = await keyway.restart();
    const keyRefused = await fetch(`${base()}/v1/me`, { headers: { "x-api-key": demo.apiKey, Authorization: `Bearer ${token}` } });
    expect(keyRefused.status).toBe(401);
    expect(((await keyRefused.json()) as { error: string }).error).toBe("invalid_api_key");
  });
});
