/** The operator API (/admin/v1): auth, resources, secrets shown once, validation, pagination. */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import { ADMIN_TOKEN, admin, adminCall, BASE, body, call, createTenant, type Tenant } from "./helpers";

describe("operator authentication", () => {
  it.each([
    ["no Authorization header", undefined],
    ["a wrong token", "Bearer wrong-token"],
    ["the right token one character short", `Bearer ${ADMIN_TOKEN.slice(0, -1)}`],
    ["the right token under another scheme", `Basic ${ADMIN_TOKEN}`],
  ])("refuses %s with 401 and a Bearer challenge", async (_name, authorization) => {
    const res = await call("/admin/v1/organizations", authorization ? { headers: { Authorization: authorization } } : {});
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="keyway-admin"');
    expect(await body(res)).toMatchObject({ response_status: 401, data: null, error: "invalid_token" });
  });

  it("does not accept an access token or an API key in place of the admin token", async () => {
    const t = await createTenant();
    const res = await call("/admin/v1/organizations", { headers: { Authorization: `Bearer ${t.apiKey}`, "x-api-key": t.apiKey } });
    expect(res.status).toBe(401);
  });
});

describe("organizations and users", () => {
  it("creates an organization with 201, a Location and the envelope", async () => {
    const res = await adminCall("POST", "/organizations", { name: "  Globex  " });
    expect(res.status).toBe(201);
    const json = await body<{ id: string; name: string; created_at: string }>(res);
    expect(json.response_status).toBe(201);
    expect(json.data).toEqual({ id: expect.stringMatching(/^org_[0-9a-z]{26}$/), name: "Globex", created_at: expect.any(String) });
    expect(res.headers.get("location")).toBe(`/admin/v1/organizations/${json.data.id}`);
    // The created resource, not the collection it was posted to.
    expect(json._links.self.href).toBe(`${BASE}/admin/v1/organizations/${json.data.id}`);
    const fetched = await admin("GET", `/organizations/${json.data.id}`);
    expect(fetched).toEqual({ ...json.data, limits: null });
  });

  it("creates users with an optional e-mail and lists them", async () => {
    const org = await admin<{ id: string }>("POST", "/organizations", { name: "Initech" });
    const a = await admin("POST", `/organizations/${org.id}/users`, { name: "Peter", email: "peter@initech.example" });
    const b = await admin("POST", `/organizations/${org.id}/users`, { name: "Milton" });
    expect(a).toMatchObject({ organization_id: org.id, name: "Peter", email: "peter@initech.example" });
    expect(b).toMatchObject({ email: null });
    const list = await admin<unknown[]>("GET", `/organizations/${org.id}/users`);
    expect(list).toHaveLength(2);
  });

  it("answers 404 for unknown organizations and users, whatever the id looks like", async () => {
    for (const path of [
      "/organizations/org_00000000000000000000000000",
      "/organizations/nope",
      "/organizations/..%2F..%2Fapikey",
      "/organizations/org_00000000000000000000000000/users",
    ]) {
      const res = await adminCall("GET", path);
      expect(res.status, path).toBe(404);
      expect((await body(res)).error).toBe("not_found");
    }
    const res = await adminCall("POST", "/organizations/org_00000000000000000000000000/users", { name: "x" });
    expect(res.status).toBe(404);
  });

  it("paginates lists with limit and an opaque cursor in _links.next", async () => {
    const org = await admin<{ id: string }>("POST", "/organizations", { name: "Paged" });
    for (let i = 0; i < 3; i++) await admin("POST", `/organizations/${org.id}/users`, { name: `u${i}` });
    const first = await body<{ id: string }[]>(await adminCall("GET", `/organizations/${org.id}/users?limit=2`));
    expect(first.data).toHaveLength(2);
    expect(first._links.next?.href).toMatch(/cursor=/);
    const next = new URL(first._links.next!.href);
    const second = await body<{ id: string }[]>(await adminCall("GET", `/organizations/${org.id}/users${next.search}`));
    expect(second.data).toHaveLength(1);
    expect(second._links.next).toBeUndefined();
    expect(new Set([...first.data, ...second.data].map((u) => u.id)).size).toBe(3);
  });

  it.each([
    ["limit=0", /limit must be at least 1/],
    ["limit=101", /limit must be at most 100/],
    ["limit=abc", /limit must be a number/],
  ])("refuses list query %s with 400", async (query, message) => {
    const res = await adminCall("GET", `/organizations?${query}`);
    expect(res.status).toBe(400);
    expect((await body(res)).developer_message).toMatch(message);
  });
});

describe("API keys", () => {
  let orgId: string;
  beforeAll(async () => {
    orgId = (await admin<{ id: string }>("POST", "/organizations", { name: "Keys Inc" })).id;
  });

  it("issues a 256-bit key shown once, stores only its hash, and lists keys without it", async () => {
    const created = await admin<Record<string, unknown>>("POST", `/organizations/${orgId}/api-keys`, { name: "prod" });
    const apiKey = created.api_key as string;
    expect(apiKey).toMatch(/^kw_live_ak_[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({
      organization_id: orgId,
      name: "prod",
      status: "active",
      limits: { per_second: 1, per_day: 1000 },
      limit_overrides: { per_second: false, per_day: false },
      hint: `kw_live_ak_...${apiKey.slice(-4)}`,
      revoked_at: null,
    });

    const list = await admin<Record<string, unknown>[]>("GET", `/organizations/${orgId}/api-keys`);
    const one = await admin<Record<string, unknown>>("GET", `/organizations/${orgId}/api-keys/${created.id as string}`);
    for (const shown of [JSON.stringify(list), JSON.stringify(one)]) {
      expect(shown).not.toContain(apiKey);
      expect(shown).not.toContain('api_key"');
      expect(shown).not.toContain("hash");
    }
    // Nothing stored in KV holds the key itself.
    const keys = await env.KV.list();
    for (const { name } of keys.keys) {
      expect(name).not.toContain(apiKey);
      expect(await env.KV.get(name)).not.toContain(apiKey);
    }
  });

  it("takes per-key limits at creation and changes them with PATCH (null restores the default)", async () => {
    const created = await admin<{ id: string }>("POST", `/organizations/${orgId}/api-keys`, { limits: { per_second: 5 } });
    expect(created).toMatchObject({ limits: { per_second: 5, per_day: 1000 }, limit_overrides: { per_second: true, per_day: false } });
    const patched = await admin("PATCH", `/organizations/${orgId}/api-keys/${created.id}`, { limits: { per_day: 50, per_second: null } });
    expect(patched).toMatchObject({ limits: { per_second: 1, per_day: 50 }, limit_overrides: { per_second: false, per_day: true } });
    const renamed = await admin("PATCH", `/organizations/${orgId}/api-keys/${created.id}`, { name: "renamed" });
    expect(renamed).toMatchObject({ name: "renamed", limits: { per_day: 50 } });
  });

  it.each([
    [{ limits: { per_second: 0 } }, /limits.per_second must be at least 1/],
    [{ limits: { per_second: 1.5 } }, /limits.per_second must be an integer/],
    [{ limits: { per_sec: 2 } }, /unknown field per_sec in limits/],
    [{ limits: { per_day: "10" } }, /limits.per_day must be a number/],
    [{ name: "" }, /name must not be empty/],
    [{ extra: true }, /unknown field extra/],
  ])("refuses invalid key input %j with 400", async (payload, message) => {
    const res = await adminCall("POST", `/organizations/${orgId}/api-keys`, payload);
    expect(res.status).toBe(400);
    const json = await body(res);
    expect(json.error).toBe("invalid_request");
    expect(json.developer_message).toMatch(message);
  });

  it("revokes idempotently and keeps the key listed as revoked", async () => {
    const created = await admin<{ id: string }>("POST", `/organizations/${orgId}/api-keys`, {});
    const first = await admin<{ revoked_at: string }>("DELETE", `/organizations/${orgId}/api-keys/${created.id}`);
    const second = await admin<{ revoked_at: string }>("DELETE", `/organizations/${orgId}/api-keys/${created.id}`);
    expect(first).toMatchObject({ status: "revoked" });
    expect(second.revoked_at).toBe(first.revoked_at);
    expect(await admin("GET", `/organizations/${orgId}/api-keys/${created.id}`)).toMatchObject({ status: "revoked" });
  });

  it("records a key's location hint, where its object is created, and refuses an unknown region", async () => {
    const created = await admin<{ id: string; location_hint: string | null }>("POST", `/organizations/${orgId}/api-keys`, {
      location_hint: "apac",
    });
    expect(created.location_hint).toBe("apac");
    expect(await admin("GET", `/organizations/${orgId}/api-keys/${created.id}`)).toMatchObject({ location_hint: "apac" });
    const plain = await admin<{ location_hint: string | null }>("POST", `/organizations/${orgId}/api-keys`, {});
    expect(plain.location_hint).toBeNull();
    const bad = await adminCall("POST", `/organizations/${orgId}/api-keys`, { location_hint: "mars" });
    expect(bad.status).toBe(400);
    expect((await body(bad)).developer_message).toMatch(/location_hint must be one of wnam, enam/);
  });

  it("does not reach another organization's key through this organization's path", async () => {
    const other = await createTenant();
    const res = await adminCall("GET", `/organizations/${orgId}/api-keys/${other.apiKeyId}`);
    expect(res.status).toBe(404);
  });
});

describe("client credentials", () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await createTenant();
  });

  it("creates a credential whose secret is shown once and never listed", async () => {
    const path = `/organizations/${t.orgId}/users/${t.userId}/client-credentials`;
    const res = await adminCall("POST", path, { name: "deploy bot" });
    expect(res.status).toBe(201);
    const created = (await body<Record<string, string>>(res)).data;
    expect(created.client_id).toMatch(/^kw_client_[A-Za-z0-9_-]{22}$/);
    expect(created.client_secret).toMatch(/^kw_live_cs_[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({ organization_id: t.orgId, user_id: t.userId, name: "deploy bot", status: "active" });
    expect(res.headers.get("location")).toBe(`/admin/v1${path}/${created.client_id}`);

    const list = await admin<Record<string, unknown>[]>("GET", path);
    expect(list.map((c) => c.client_id)).toEqual(expect.arrayContaining([t.clientId, created.client_id]));
    const one = await admin("GET", `${path}/${created.client_id}`);
    for (const shown of [JSON.stringify(list), JSON.stringify(one)]) {
      expect(shown).not.toContain(created.client_secret);
      expect(shown).not.toContain(t.clientSecret);
      // No field holds a secret or its hash (the auth method's name, client_secret_basic, is not one).
      expect(shown).not.toMatch(/"(client_secret|secret_hash|secret)":/);
    }
  });

  it("accepts an empty body (no Content-Type) when creating a credential", async () => {
    const res = await call(`/admin/v1/organizations/${t.orgId}/users/${t.userId}/client-credentials`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(201);
    expect((await body<{ name: null }>(res)).data.name).toBeNull();
  });

  it("answers 404 for a credential under the wrong user or organization", async () => {
    const other = await createTenant();
    const paths = [
      `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${other.clientId}`,
      `/organizations/${other.orgId}/users/${t.userId}/client-credentials/${t.clientId}`,
      `/organizations/${t.orgId}/users/usr_00000000000000000000000000/client-credentials`,
    ];
    for (const path of paths) expect((await adminCall("GET", path)).status, path).toBe(404);
    expect((await adminCall("DELETE", paths[0]!)).status).toBe(404);
  });
});

describe("users removal, administrator tokens and last use", () => {
  it("removes a user after revoking their credentials, whose tokens then stop working", async () => {
    const t = await createTenant();
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey },
      body: JSON.stringify({ grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret }),
    });
    const token = (await body<{ access_token: string }>(res)).data.access_token;
    const removed = await adminCall("DELETE", `/organizations/${t.orgId}/users/${t.userId}`);
    expect(removed.status).toBe(200);
    expect((await adminCall("GET", `/organizations/${t.orgId}/users/${t.userId}`)).status).toBe(404);
    const me = await call("/v1/me", { headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${token}` } });
    expect(me.status).toBe(401);
  });

  it("mints an organization administrator token shown once and stored only hashed", async () => {
    const org = await admin<{ id: string }>("POST", "/organizations", { name: "Minted" });
    const res = await adminCall("POST", `/organizations/${org.id}/admin-tokens`, { name: "ops" });
    expect(res.status).toBe(201);
    const minted = (await body<{ id: string; token: string; organization_id: string }>(res)).data;
    expect(minted.token).toMatch(/^kw_live_oa_[0-9a-z]{26}_[A-Za-z0-9_-]{43}$/);
    expect(minted.token).toContain(org.id.slice("org_".length));
    expect(minted.organization_id).toBe(org.id);
    // The organization's object keeps only the token's hash.
    const stored = await runInDurableObject(env.ORGS.get(env.ORGS.idFromName(org.id)), (_instance, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM admin_tokens").toArray()),
    );
    expect(stored).toContain(await sha256Hex(minted.token));
    expect(stored).not.toContain(minted.token);
    expect((await adminCall("POST", "/organizations/org_00000000000000000000000000/admin-tokens", {})).status).toBe(404);
  });

  it("records when a client credential was last used to obtain a token", async () => {
    const t = await createTenant();
    const path = `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${t.clientId}`;
    expect(await admin("GET", path)).toMatchObject({ last_used_at: null });
    await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey },
      body: JSON.stringify({ grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret }),
    });
    // The key's object notes the use and flushes it to the organization within a minute.
    expect(await runDurableObjectAlarm(env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey))))).toBe(true);
    const after = await admin<{ last_used_at: string | null }>("GET", path);
    expect(after.last_used_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });
});
