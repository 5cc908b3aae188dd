/**
 * Revocation in a real local run (`npm start`): a revoked client credential, a removed user's
 * credential and a revoked API key stay refused after the KV lookup entries are written back to
 * their pre-revocation values with `wrangler kv` and the worker is restarted on the same state,
 * because no decision about a secret rests on KV (the key's Durable Object holds the
 * revocations); and a revoked organization administrator token, and the manager session opened
 * with it, stay refused after the restart. Controls (a credential, an administrator token that
 * stay valid) show the refusals are the revocations, not the restart.
 * It starts its own npm start, not the shared one (server.ts): it edits the local KV store and
 * restarts the server on the same state.
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

/** The value of cookie `name` among a response's Set-Cookie lines ("" when it sets none). */
function cookieValue(res: Response, name: string): string {
  const line = res.headers.getSetCookie().find((l) => l.startsWith(`${name}=`));
  return line?.split(";")[0]?.slice(name.length + 1) ?? "";
}

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

    // A user with a credential and a token, removed; its credential's entry put back too. Its
    // requests go through a key of its own with room for them (the demo key allows 1 request/s).
    const created = await admin("POST", "/api-keys", { name: "e2e", limits: { per_second: 50, per_day: 1000 } });
    expect(created.status).toBe(201);
    const roomyKey = ((await created.json()) as { data: { api_key: string } }).data.api_key;
    const leaverCreated = await admin("POST", "/users", { name: "Leaver" });
    expect(leaverCreated.status).toBe(201);
    const leaverId = ((await leaverCreated.json()) as { data: { id: string } }).data.id;
    const leaverCredential = await admin("POST", `/users/${leaverId}/client-credentials`, { name: "leaver" });
    expect(leaverCredential.status).toBe(201);
    const leaver = ((await leaverCredential.json()) as { data: { client_id: string; client_secret: string } }).data;
    const leaverTokenRequest = () =>
      fetch(`${base()}/v1/oauth`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": roomyKey },
        body: JSON.stringify({ client_id: leaver.client_id, client_secret: leaver.client_secret, grant_type: "client_credentials" }),
      });
    const leaverIssued = await leaverTokenRequest();
    expect(leaverIssued.status).toBe(200);
    const leaverToken = ((await leaverIssued.json()) as { data: { access_token: string } }).data.access_token;
    const leaverEntry = await kv(persistDir, "get", `client:${leaver.client_id}`);
    expect(leaverEntry).toContain(leaverId);
    expect((await admin("DELETE", `/users/${leaverId}`)).status).toBe(200);
    await kv(persistDir, "put", `client:${leaver.client_id}`, leaverEntry.trim());

    // Two organization administrators signed in to the manager; one token is revoked.
    const manager = (path: string, init: RequestInit = {}) => fetch(`${base()}${path}`, { redirect: "manual", ...init });
    const signIn = async (token: string): Promise<{ status: number; cookie: string }> => {
      const form = await manager("/manager/sign-in");
      const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
      const res = await manager("/manager/sign-in", {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          Cookie: `__Host-kw_login_csrf=${cookieValue(form, "__Host-kw_login_csrf")}`,
        },
        body: new URLSearchParams({ csrf, token }).toString(),
      });
      return { status: res.status, cookie: cookieValue(res, "__Host-kw_session") };
    };
    const settings = `/manager/organizations/${demo.organizationId}`;
    const page = (cookie: string) => manager(settings, { headers: { Cookie: `__Host-kw_session=${cookie}` } });
    const mint = async (name: string) => {
      const res = await admin("POST", "/admin-tokens", { name });
      expect(res.status).toBe(201);
      return ((await res.json()) as { data: { id: string; token: string } }).data;
    };
    const revokedAdmin = await mint("revoked");
    const controlAdmin = await mint("control");
    const revokedSession = await signIn(revokedAdmin.token);
    const controlSession = await signIn(controlAdmin.token);
    expect([revokedSession.status, controlSession.status]).toEqual([303, 303]);
    expect((await page(revokedSession.cookie)).status).toBe(200);
    expect((await admin("DELETE", `/admin-tokens/${revokedAdmin.id}`)).status).toBe(200);

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

    // The removed user: neither its token nor its credential gets through.
    const leaverMe = await fetch(`${base()}/v1/me`, { headers: { "x-api-key": roomyKey, Authorization: `Bearer ${leaverToken}` } });
    expect(leaverMe.status).toBe(401);
    expect(((await leaverMe.json()) as { error: string }).error).toBe("invalid_token");
    const leaverRefused = await leaverTokenRequest();
    expect(leaverRefused.status).toBe(401);
    expect(((await leaverRefused.json()) as { error: string }).error).toBe("invalid_client");

    // The revoked administrator token: its session is gone and it signs in no more; the control's session lives on.
    const ended = await page(revokedSession.cookie);
    expect(ended.status).toBe(303);
    expect(ended.headers.get("location")).toBe("/manager/sign-in");
    expect((await signIn(revokedAdmin.token)).status).toBe(401);
    expect((await page(controlSession.cookie)).status).toBe(200);

    // The API key too: revoked, then refused after another restart.
    expect((await admin("DELETE", `/api-keys/${demo.apiKeyId}`)).status).toBe(200);
    keyway = await keyway.restart();
    const keyRefused = await fetch(`${base()}/v1/me`, { headers: { "x-api-key": demo.apiKey, Authorization: `Bearer ${token}` } });
    expect(keyRefused.status).toBe(401);
    expect(((await keyRefused.json()) as { error: string }).error).toBe("invalid_api_key");
  });
});
