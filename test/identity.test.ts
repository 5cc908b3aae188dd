/**
 * Identity has one system of record per organization (a Durable Object) and KV holds only lookup
 * entries derived from it. These tests try it as an attacker would: a revoked API key, client
 * credential or user is refused on the very next request, with the KV lookup entries put back to
 * their pre-revocation values (with the isolate's caches lapsed, or still holding them); "last
 * used" writes racing a revocation never undo it, and are made at most once a minute per key and
 * per credential; a revocation push that fails is retried until it lands; a missing, stale or
 * corrupt lookup entry costs a slower path, never a different answer; and every change is in the
 * audit log, with no secret in it (API keys, client secrets, access tokens, administrator tokens,
 * manager sessions, or their hashes).
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { VERIFIED_CACHE_TTL_MS } from "../src/auth/access-token";
import { sha256Hex } from "../src/lib/crypto";
import { base64UrlDecode, decodeUtf8 } from "../src/lib/encoding";
import { CONFIRM_TIMEOUT_MS, type KeyObject } from "../src/objects/key";
import { LOOKUP_CACHE_TTL_MS, readCredentialLookup } from "../src/objects/lookup";
import {
  admin,
  adminCall,
  authed,
  body,
  call,
  callAt,
  createTenant,
  issueToken,
  type Tenant,
  tokenRequest,
  unreachable,
  withObjectEnv,
} from "./helpers";
import { Browser, SESSION } from "./manager-helpers";

const orgStub = (t: Tenant) => env.ORGS.get(env.ORGS.idFromName(t.orgId));
const keyStub = async (t: Tenant) => env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
const lookupKey = (t: Tenant) => `client:${t.clientId}`;
const credentialPath = (t: Tenant) => `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${t.clientId}`;

const unreachableKeys = (real: Env): Partial<Env> => unreachable(real, "KEYS", "sync");

/** Makes the key's object treat its copy as unconfirmed, as it does once KEY_LEASE_MS has passed. */
const lapseLease = (key: DurableObjectStub<KeyObject>) =>
  runInDurableObject(key, (instance: KeyObject) => {
    // The object's admission state (ratelimit/admission.ts) as its last confirmation left it, aged past the lease.
    const held = (instance as unknown as { shell: { state: { confirmedAt: number } } }).shell;
    held.state = { ...held.state, confirmedAt: 0 };
  });

/** A request now through the entry point, or, with `at`, through an app whose clock reads `at`. */
const request = (path: string, init: RequestInit, at?: number) => (at === undefined ? call(path, init) : callAt(at, path, init));

async function tokenStatus(t: Tenant, at?: number): Promise<{ status: number; error?: string }> {
  const res = await request("/v1/oauth", tokenRequest(t), at);
  return { status: res.status, error: (await body(res)).error };
}

async function meStatus(t: Tenant, token: string, at?: number): Promise<{ status: number; error?: string }> {
  const res = await request("/v1/me", authed(t, token), at);
  return { status: res.status, error: (await body(res)).error };
}

/**
 * Later than every time-to-live of the isolate's caches (KV lookup entries, verified access
 * tokens) and well within an access token's lifetime: a request whose clock reads this much
 * later finds nothing servable in them, as a new isolate would.
 */
const CACHES_LAPSED_MS = Math.max(LOOKUP_CACHE_TTL_MS, VERIFIED_CACHE_TTL_MS) + 1_000;

/** The session id a manager cookie refers to (`kw_session_<kid>.<base64url JSON>.<mac>`). */
function sessionId(cookie: string): string {
  const payload = base64UrlDecode(cookie.split(".")[1] ?? "");
  const sid = (JSON.parse((payload && decodeUtf8(payload)) ?? "{}") as { sid?: unknown }).sid;
  expect(typeof sid).toBe("string");
  return sid as string;
}

describe("revocation takes effect on the next request, whatever KV says", () => {
  it("refuses a revoked client credential and its tokens, with its KV entry put back and cached", async () => {
    const t = await createTenant();
    const token = await issueToken(t); // the lookup entry is now also in this isolate's cache
    const entry = await env.KV.get(lookupKey(t));
    expect(entry).not.toBeNull();

    await admin("DELETE", credentialPath(t));
    await env.KV.put(lookupKey(t), entry as string); // a location whose KV has not caught up

    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_client" });
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_token" });
  });

  it("refuses a revoked API key on its next request", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    await admin("DELETE", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_api_key" });
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_api_key" });
  });

  it("refuses a removed user's credentials and tokens", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const entry = await env.KV.get(lookupKey(t));
    await admin("DELETE", `/organizations/${t.orgId}/users/${t.userId}`);
    await env.KV.put(lookupKey(t), entry as string);
    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_client" });
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_token" });
  });

  it("refuses them after the objects are evicted too (the decision is stored, not only in memory)", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const entry = await env.KV.get(lookupKey(t));
    await admin("DELETE", credentialPath(t));
    await env.KV.put(lookupKey(t), entry as string);
    // Evict every object: the next call constructs the key's object from its storage.
    await abortAllDurableObjects();
    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_client" });
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_token" });
  });

  // The tests share one module instance with the Worker and its objects, so the isolate's caches
  // are theirs. Cold: every cache has lapsed, so the stale entry is read from KV and the token
  // verified afresh. Warm: the cache still holds the pre-revocation entry, as an edge isolate
  // would (the organization's object, in another isolate there, cannot drop it).
  it.each([
    ["a revoked client credential", (t: Tenant) => credentialPath(t)],
    ["a removed user's credential", (t: Tenant) => `/organizations/${t.orgId}/users/${t.userId}`],
  ])("refuses %s and its tokens with every isolate cache lapsed and the old KV entry put back", async (_name, removed) => {
    const t = await createTenant();
    const token = await issueToken(t);
    const entry = await env.KV.get(lookupKey(t));
    const cold = Date.now() + CACHES_LAPSED_MS;
    // The control: with every cache lapsed, the same requests are admitted before the revocation.
    expect(await tokenStatus(t, cold)).toEqual({ status: 200, error: undefined });
    expect(await meStatus(t, token, cold)).toEqual({ status: 200, error: undefined });

    await admin("DELETE", removed(t));
    await env.KV.put(lookupKey(t), entry as string);
    const colder = cold + CACHES_LAPSED_MS;
    expect(await tokenStatus(t, colder)).toEqual({ status: 401, error: "invalid_client" });
    expect(await meStatus(t, token, colder)).toEqual({ status: 401, error: "invalid_token" });
  });

  it("refuses a revoked client credential while the isolate's cache still holds its pre-revocation lookup entry", async () => {
    const t = await createTenant();
    await issueToken(t);
    const entry = await env.KV.get(lookupKey(t));
    await admin("DELETE", credentialPath(t));
    // Warm this isolate's cache with the old entry, then take it out of KV: only the cache has it.
    await env.KV.put(lookupKey(t), entry as string);
    expect(await readCredentialLookup(env.KV, t.clientId, Date.now())).not.toBeNull();
    await env.KV.delete(lookupKey(t));
    expect(await readCredentialLookup(env.KV, t.clientId, Date.now())).toMatchObject({ organization_id: t.orgId });
    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_client" });
  });
});

describe("stale, missing and corrupt lookup entries cost a slower path, never a different answer", () => {
  it("issues a token when the credential's KV entry is missing (the organization's object answers)", async () => {
    const t = await createTenant();
    await env.KV.delete(lookupKey(t));
    expect((await tokenStatus(t)).status).toBe(200);
  });

  it("ignores a corrupt KV entry and still issues the token", async () => {
    const t = await createTenant();
    await env.KV.put(lookupKey(t), JSON.stringify({ organization_id: 1 }));
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await tokenStatus(t)).status).toBe(200);
    warned.mockRestore();
  });

  it("refuses a credential of another organization, whatever its KV entry says", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const res = await call("/v1/oauth", tokenRequest({ ...a, clientId: b.clientId, clientSecret: b.clientSecret }));
    expect(res.status).toBe(401);
    expect((await body(res)).developer_message).toMatch(/different organization/);
    // With B's entry missing, A's object is asked, and does not know B's credential.
    await env.KV.delete(`client:${b.clientId}`);
    const slow = await call("/v1/oauth", tokenRequest({ ...a, clientId: b.clientId, clientSecret: b.clientSecret }));
    expect(slow.status).toBe(401);
  });
});

describe("changes never go backwards", () => {
  it("keeps a credential revoked while its uses are flushed concurrently", async () => {
    const t = await createTenant();
    await issueToken(t);
    const key = await keyStub(t);
    // A flush of noted uses races the revocation; "last used" only ever moves a timestamp.
    await Promise.all([runDurableObjectAlarm(key), admin("DELETE", credentialPath(t)), runDurableObjectAlarm(key)]);
    await orgStub(t).recordUses(t.apiKeyId, [{ subject: t.clientId, at: Date.now() + 60_000 }]);
    const credential = await admin<{ status: string; revoked_at: string | null }>("GET", credentialPath(t));
    expect(credential.status).toBe("revoked");
    expect(credential.revoked_at).not.toBeNull();
    expect((await tokenStatus(t)).status).toBe(401);
  });

  it("keeps both of two concurrent PATCHes of different limits", async () => {
    const t = await createTenant({ per_second: 100, per_day: 1000 });
    const path = `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`;
    await Promise.all([adminCall("PATCH", path, { limits: { per_second: 7 } }), adminCall("PATCH", path, { limits: { per_day: 777 } })]);
    const key = await admin<{ limits: { per_second: number; per_day: number } }>("GET", path);
    expect(key.limits).toEqual({ per_second: 7, per_day: 777 });
    await adminCall("PATCH", path, { limits: { per_day: null } });
    expect((await admin<{ limits: { per_second: number } }>("GET", path)).limits.per_second).toBe(7);
  });

  it("keeps a key revoked when a rename races the revocation", async () => {
    const t = await createTenant();
    const path = `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`;
    await Promise.all([adminCall("PATCH", path, { name: "renamed" }), admin("DELETE", path), adminCall("PATCH", path, { name: "again" })]);
    const key = await admin<{ status: string }>("GET", path);
    expect(key.status).toBe("revoked");
    expect((await tokenStatus(t)).error).toBe("invalid_api_key");
  });

  it("ignores an older push arriving after a newer one at the key's object", async () => {
    const t = await createTenant({ per_second: 100, per_day: 1000 });
    const key = await keyStub(t);
    const current = await runInDurableObject(key, (_i, state) =>
      state.storage.sql.exec<{ version: number; revision: number }>("SELECT version, revision FROM key").one(),
    );
    await admin("DELETE", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`);
    // A late copy of the state before the revocation.
    await key.sync({
      id: t.apiKeyId,
      organization_id: t.orgId,
      status: "active",
      limits: {},
      version: current.version,
      revision: current.revision,
      since: current.revision,
      revocations: [],
    });
    expect((await tokenStatus(t)).error).toBe("invalid_api_key");
  });
});

describe('"last used" is recorded at most once a minute per key and per credential', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  const keyLastUsed = async (t: Tenant) =>
    (await admin<{ id: string; last_used_at: string | null }[]>("GET", `/organizations/${t.orgId}/api-keys`)).find(
      (k) => k.id === t.apiKeyId,
    )?.last_used_at;
  const credentialLastUsed = async (t: Tenant) => (await admin<{ last_used_at: string | null }>("GET", credentialPath(t))).last_used_at;

  it("records an API key's use when the key's object flushes it, and notes a use at most once a minute", async () => {
    const t = await createTenant();
    const key = await keyStub(t);
    const t0 = Date.now();
    expect(await keyLastUsed(t)).toBeNull();
    expect((await tokenStatus(t, t0)).status).toBe(200);
    expect(await runDurableObjectAlarm(key)).toBe(true); // the flush
    expect(await keyLastUsed(t)).toBe(iso(t0));

    // Used again within the minute: nothing new is noted, so there is no flush and no change.
    expect((await tokenStatus(t, t0 + 59_000)).status).toBe(200);
    expect(await runDurableObjectAlarm(key)).toBe(false);
    expect(await keyLastUsed(t)).toBe(iso(t0));

    // A minute later, the use is noted and flushed.
    expect((await tokenStatus(t, t0 + 61_000)).status).toBe(200);
    expect(await runDurableObjectAlarm(key)).toBe(true);
    expect(await keyLastUsed(t)).toBe(iso(t0 + 61_000));
  });

  it("records a client credential's use through the key's flush, at most once a minute", async () => {
    const t = await createTenant();
    const key = await keyStub(t);
    const t0 = Date.now();
    expect(await credentialLastUsed(t)).toBeNull();
    expect((await tokenStatus(t, t0)).status).toBe(200);
    await runDurableObjectAlarm(key);
    expect(await credentialLastUsed(t)).toBe(iso(t0));
    expect((await tokenStatus(t, t0 + 59_000)).status).toBe(200);
    await runDurableObjectAlarm(key);
    expect(await credentialLastUsed(t)).toBe(iso(t0));
    expect((await tokenStatus(t, t0 + 61_000)).status).toBe(200);
    await runDurableObjectAlarm(key);
    expect(await credentialLastUsed(t)).toBe(iso(t0 + 61_000));
  });

  it("records a client credential's use on the token endpoint's slow path (no KV entry) at most once a minute", async () => {
    const t = await createTenant();
    await env.KV.delete(lookupKey(t)); // the organization's object authenticates, and notes the use itself
    const t0 = Date.now();
    expect((await tokenStatus(t, t0)).status).toBe(200);
    expect(await credentialLastUsed(t)).toBe(iso(t0));
    expect((await tokenStatus(t, t0 + 59_000)).status).toBe(200);
    expect(await credentialLastUsed(t)).toBe(iso(t0));
    expect((await tokenStatus(t, t0 + 61_000)).status).toBe(200);
    expect(await credentialLastUsed(t)).toBe(iso(t0 + 61_000));
  });
});

describe("a revocation push that fails", () => {
  it("is reported as not yet in effect, retried by the organization's alarm, and then holds", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const org = orgStub(t);
    const restore = await withObjectEnv(org, unreachableKeys);
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    const res = await adminCall("DELETE", credentialPath(t));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect((await body(res)).developer_message).toMatch(/recorded and is still being applied to 1 API key/);
    warned.mockRestore();

    // The key's object has not heard of it yet; the organization retries.
    await restore();
    expect(await runDurableObjectAlarm(org)).toBe(true);
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_token" });
    // Repeating the revocation now confirms it is in effect everywhere.
    expect((await adminCall("DELETE", credentialPath(t))).status).toBe(200);
  });

  it("cannot let the revoked credential or key through once the key object's lease lapses, even if the push never lands", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const org = orgStub(t);
    const key = await keyStub(t);
    const restore = await withObjectEnv(org, unreachableKeys); // every push fails until the end
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await adminCall("DELETE", credentialPath(t))).status).toBe(503);
    expect((await adminCall("DELETE", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`)).status).toBe(503);
    warned.mockRestore();

    // Past the lease, the key's object asks the organization before it admits anything.
    await lapseLease(key);
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_api_key" });
    const state = await runInDurableObject(key, (_i, s) => s.storage.sql.exec<{ status: string }>("SELECT status FROM key").one());
    expect(state.status).toBe("revoked");
    await restore();
  });

  it("learns a credential's revocation from the organization when its lease lapses", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const org = orgStub(t);
    const restore = await withObjectEnv(org, unreachableKeys);
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await adminCall("DELETE", credentialPath(t))).status).toBe(503);
    warned.mockRestore();
    await restore();
    await lapseLease(await keyStub(t));
    expect(await meStatus(t, token)).toEqual({ status: 401, error: "invalid_token" });
    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_client" });
  });

  it("fails closed (503) when the lease has lapsed and the organization cannot be asked", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const key = await keyStub(t);
    const restore = await withObjectEnv(key, (real) => unreachable(real, "ORGS", "confirmKey"));
    await lapseLease(key);
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await call("/v1/me", authed(t, token));
    logged.mockRestore();
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    await restore();
    expect((await meStatus(t, token)).status).toBe(200);
  });

  it("fails closed (503) within CONFIRM_TIMEOUT_MS when the organization's object hangs, and recovers when it answers", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const key = await keyStub(t);
    await lapseLease(key);
    // An organization object that never answers (as one stuck behind a hung call would).
    const restore = await withObjectEnv(key, (real) => ({
      ORGS: {
        ...real.ORGS,
        idFromName: real.ORGS.idFromName.bind(real.ORGS),
        get: () => ({ confirmKey: () => new Promise(() => {}) }),
      } as unknown as Env["ORGS"],
    }));
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const started = Date.now();
    const res = await call("/v1/me", authed(t, token));
    const waited = Date.now() - started;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(waited).toBeGreaterThanOrEqual(CONFIRM_TIMEOUT_MS - 50);
    // Well before a client's patience runs out; the margin is for a loaded two-core CI machine,
    // where the request's own work beside the wait has taken over a second.
    expect(waited).toBeLessThan(CONFIRM_TIMEOUT_MS + 2_500);
    expect(warned.mock.calls.some(([line]) => String(line).includes("did not answer within"))).toBe(true);
    warned.mockRestore();
    logged.mockRestore();
    // The hung call is given up: once the organization answers, the next request asks again.
    await restore();
    expect((await meStatus(t, token)).status).toBe(200);
  });

  it("gives a key created while a revocation is still being pushed the whole revocation set", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const org = orgStub(t);
    const restore = await withObjectEnv(org, unreachableKeys);
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await adminCall("DELETE", credentialPath(t))).status).toBe(503);
    await restore();
    warned.mockRestore();
    const second = await admin<{ api_key: string }>("POST", `/organizations/${t.orgId}/api-keys`, {
      limits: { per_second: 100, per_day: 1000 },
    });
    const other = { ...t, apiKey: second.api_key };
    expect(await meStatus(other, token)).toEqual({ status: 401, error: "invalid_token" });
    expect(await tokenStatus(other)).toEqual({ status: 401, error: "invalid_client" });
  });
});

describe("KV lookup entries follow the record, in order", () => {
  it("removes a revoked credential's entry even when its creation's KV write lands after the revocation's", async () => {
    const org = await admin<{ id: string }>("POST", "/organizations", { name: "Race" });
    const user = await admin<{ id: string }>("POST", `/organizations/${org.id}/users`, { name: "Ada" });
    const stub = env.ORGS.get(env.ORGS.idFromName(org.id));
    // The creation's KV put stalls until released; the revocation runs meanwhile.
    let release = () => {};
    const stalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    const restore = await withObjectEnv(stub, (real) => ({
      KV: {
        ...real.KV,
        get: real.KV.get.bind(real.KV),
        delete: real.KV.delete.bind(real.KV),
        put: async (...args: Parameters<KVNamespace["put"]>) => {
          await stalled;
          return real.KV.put(...args);
        },
      } as unknown as KVNamespace,
    }));
    const created = adminCall("POST", `/organizations/${org.id}/users/${user.id}/client-credentials`, { name: "racy" });
    // Wait until the credential exists in the record (its put is now stalled).
    let clientId: string | undefined;
    for (let i = 0; i < 100 && clientId === undefined; i++) {
      const list = await admin<{ client_id: string }[]>("GET", `/organizations/${org.id}/users/${user.id}/client-credentials`);
      clientId = list[0]?.client_id;
      if (clientId === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(clientId).toBeDefined();
    const revoked = adminCall("DELETE", `/organizations/${org.id}/users/${user.id}/client-credentials/${clientId}`);
    await new Promise((r) => setTimeout(r, 50));
    release();
    expect((await created).status).toBe(201);
    expect((await revoked).status).toBe(200);
    await restore();
    await runDurableObjectAlarm(stub);
    expect(await env.KV.get(`client:${clientId}`)).toBeNull();
    const pending = await runInDurableObject(stub, (_i, s) =>
      s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pending_lookups").one(),
    );
    expect(pending.n).toBe(0);
  });

  it("refuses a revoked credential on the slow path too (no KV entry at all)", async () => {
    const t = await createTenant();
    await admin("DELETE", credentialPath(t));
    await env.KV.delete(lookupKey(t));
    expect(await tokenStatus(t)).toEqual({ status: 401, error: "invalid_client" });
  });
});

describe("housekeeping", () => {
  it("keeps an alarm on every organization and prunes expired sessions and audit entries with it", async () => {
    const t = await createTenant();
    const org = orgStub(t);
    expect(await runInDurableObject(org, (_i, s) => s.storage.getAlarm())).not.toBeNull();
    await runInDurableObject(org, (_i, s) => {
      s.storage.sql.exec(
        "INSERT INTO audit_log (at, actor, action, resource_type, resource_id) VALUES ('2020-01-01T00:00:00.000Z', '{\"type\":\"operator\"}', 'old.thing', 'x', 'y')",
      );
      s.storage.sql.exec(
        "INSERT INTO sessions (id_hash, admin_token_id, csrf, created_at, expires_at) VALUES ('h', 't', 'c', '2020-01-01T00:00:00.000Z', '2020-01-01T08:00:00.000Z')",
      );
    });
    expect(await runDurableObjectAlarm(org)).toBe(true);
    const left = await runInDurableObject(org, (_i, s) => ({
      old: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'old.thing'").one().n,
      sessions: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sessions WHERE id_hash = 'h'").one().n,
      recent: s.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM audit_log").one().n,
      alarm: s.storage.getAlarm(),
    }));
    expect(left.old).toBe(0);
    expect(left.sessions).toBe(0);
    expect(left.recent).toBeGreaterThan(0);
    expect(await left.alarm).not.toBeNull();
  });
});

describe("the audit log", () => {
  it("records who changed what, newest first, through the operator API and /v1, with no secret in it", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    await call(
      "/v1/webhook-configurations",
      authed(t, token, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          url: "https://receiver.example/hook",
          oauth: { token_url: "https://receiver.example/token", client_id: "a", client_secret: "receiver-secret-1" },
        }),
      }),
    );
    await admin("DELETE", credentialPath(t));
    const log = await admin<{ action: string; actor: { type: string; id?: string; api_key_id?: string }; resource: { id: string } }[]>(
      "GET",
      `/organizations/${t.orgId}/audit-log`,
    );
    expect(log.map((e) => e.action)).toEqual([
      "client_credential.revoked",
      "webhook_configuration.created",
      "api_key.created",
      "client_credential.created",
      "user.created",
      "organization.created",
    ]);
    expect(log[0]).toMatchObject({ actor: { type: "operator" }, resource: { id: t.clientId } });
    expect(log[1]).toMatchObject({ actor: { type: "api_client", id: t.clientId, api_key_id: t.apiKeyId } });
    const text = JSON.stringify(log);
    for (const secret of [
      t.apiKey,
      t.clientSecret,
      token,
      "receiver-secret-1",
      await sha256Hex(t.clientSecret),
      await sha256Hex(t.apiKey),
    ]) {
      expect(text).not.toContain(secret);
    }
  });

  it("holds no administrator token, token hash, or manager session id, cookie or CSRF token", async () => {
    const t = await createTenant();
    const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, { name: "ops" });
    // Two manager sessions opened with the token: one acts and signs out, the other is ended by the revocation.
    const first = await Browser.signedIn(minted.token);
    const second = await Browser.signedIn(minted.token);
    const cookies = [first, second].map((b) => b.cookies.get(SESSION) ?? "");
    const home = `/manager/organizations/${t.orgId}`;
    const csrf = await first.csrfOf(home);
    expect(csrf).not.toBe("");
    expect((await first.post(`${home}/users`, { csrf, name: "Grace", email: "" })).status).toBe(303);
    expect((await first.post("/manager/sign-out", { csrf })).status).toBe(303);
    await admin("DELETE", `/organizations/${t.orgId}/admin-tokens/${minted.id}`);

    const log = await admin<{ action: string }[]>("GET", `/organizations/${t.orgId}/audit-log?limit=100`);
    expect(log.map((e) => e.action).slice(0, 5)).toEqual([
      "admin_token.revoked",
      "session.ended",
      "user.created",
      "session.started",
      "session.started",
    ]);
    const text = JSON.stringify(log);
    const secrets = [minted.token, await sha256Hex(minted.token), csrf];
    for (const cookie of cookies) {
      const sid = sessionId(cookie);
      secrets.push(cookie, cookie.split(".")[2] ?? "", sid, await sha256Hex(sid));
    }
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(20);
      expect(text).not.toContain(secret);
    }
  });

  it("pages newest first with a cursor", async () => {
    const t = await createTenant();
    const first = await call(`/admin/v1/organizations/${t.orgId}/audit-log?limit=2`, {
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` },
    });
    const page = await body<{ id: string }[]>(first);
    expect(page.data).toHaveLength(2);
    const next = page._links.next?.href;
    expect(next).toBeDefined();
    const url = new URL(next as string);
    const second = await body<{ id: string }[]>(
      await call(url.pathname + url.search, { headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
    );
    expect(second.data.length).toBeGreaterThan(0);
    expect(Number(second.data[0]?.id)).toBeLessThan(Number(page.data[1]?.id));
    expect(Number(page.data[0]?.id)).toBeGreaterThan(Number(page.data[1]?.id));
  });
});
