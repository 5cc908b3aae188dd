/**
 * Rotating an API key with a grace period (issue 29, item 6; unkey's rotation, unkeyed/unkey#5446):
 * the same key record (id, limits, counters, credits, quota membership, traffic) answers to a new
 * secret, shown once; the secret it replaced keeps working until the grace ends and is refused
 * with 401 from then on; both count against the key's one set of limits; ending the grace early
 * is one call; a push the key's object missed is retried, the old secret working meanwhile.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import { API_KEY_PATTERN, apiKeyObjectId } from "../src/lib/ids";
import {
  admin,
  adminCall,
  body,
  call,
  callAt,
  counting,
  createTenant,
  type Tenant,
  tokenRequest,
  unreachable,
  withObjectEnv,
} from "./helpers";

interface Rotated {
  id: string;
  api_key: string;
  hint: string;
  previous_secret_expires_at: string | null;
  applied: boolean;
}

const keyPath = (t: Tenant) => `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`;
const rotate = (t: Tenant, grace_seconds: number) => admin<Rotated>("POST", `${keyPath(t)}/rotate`, { grace_seconds });
/** The token request (spec 4.1) with this secret as x-api-key, at `at`. */
const tokenWith = (t: Tenant, apiKey: string, at = Date.now()) => callAt(at, "/v1/oauth", tokenRequest({ ...t, apiKey }));

describe("POST /admin/v1/organizations/{org}/api-keys/{key}/rotate", () => {
  it("gives the same key a new secret; both are admitted within one set of limits during the grace, the old one 401 after it", async () => {
    const t = await createTenant({ per_second: 1000, per_day: 5 });
    await admin("PATCH", keyPath(t), { credits: { remaining: 100 } });
    expect((await tokenWith(t, t.apiKey)).status).toBe(200);
    const rotated = await rotate(t, 60);
    expect(rotated.id).toBe(t.apiKeyId);
    expect(rotated.applied).toBe(true);
    expect(rotated.api_key).toMatch(API_KEY_PATTERN);
    expect(rotated.api_key).not.toBe(t.apiKey);
    expect(rotated.hint).toBe(`kw_live_ak_...${rotated.api_key.slice(50, 54)}`);
    const graceEnd = Date.parse(rotated.previous_secret_expires_at ?? "");
    expect(graceEnd - Date.now()).toBeGreaterThan(55_000);
    // The key's one set of limits: 5 a day, one used before the rotation; both secrets count.
    const at = Date.now();
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await tokenWith(t, t.apiKey, at + i)).status, (await tokenWith(t, rotated.api_key, at + i)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    const key = await admin<{ usage: { day: { used: number }; credits: { remaining: number } }; previous_secret_expires_at: string }>(
      "GET",
      keyPath(t),
    );
    expect(key.usage.day.used).toBe(5);
    expect(key.usage.credits.remaining).toBe(95);
    expect(key.previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);
    // Past the grace (the key's clock injected): the old secret is unknown, the new one counts on.
    await admin("PATCH", keyPath(t), { limits: { per_day: 100 } });
    const old = await tokenWith(t, t.apiKey, graceEnd + 1);
    expect(old.status).toBe(401);
    expect((await body(old)).error).toBe("invalid_api_key");
    expect((await tokenWith(t, rotated.api_key, graceEnd + 1)).status).toBe(200);
    // The audit log says who rotated it and until when the old secret lived, never a secret.
    const audit = await admin<{ action: string; detail: Record<string, unknown> }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    const entry = audit.find((e) => e.action === "api_key.rotated");
    expect(entry?.detail).toMatchObject({ grace_seconds: 60, previous_secret_expires_at: rotated.previous_secret_expires_at });
    expect(JSON.stringify(audit)).not.toContain(rotated.api_key.slice(11, 54));
  });

  it("with no grace, refuses the old secret at once; a second rotation ends the first one's grace", async () => {
    const t = await createTenant();
    const first = await rotate(t, 0);
    expect(first.previous_secret_expires_at).toBeNull();
    expect((await tokenWith(t, t.apiKey)).status).toBe(401);
    expect((await tokenWith(t, first.api_key)).status).toBe(200);
    const second = await rotate(t, 3600);
    const third = await rotate(t, 3600);
    // The secret the second rotation replaced was in its grace: the third ends it.
    expect((await tokenWith(t, first.api_key)).status).toBe(401);
    expect((await tokenWith(t, second.api_key)).status).toBe(200);
    expect((await tokenWith(t, third.api_key)).status).toBe(200);
  });

  it("ends the grace early in one call (DELETE .../previous-secret), at every location on the next request", async () => {
    const t = await createTenant();
    const rotated = await rotate(t, 86_400);
    expect((await tokenWith(t, t.apiKey)).status).toBe(200);
    const ended = await admin<{ previous_secret_expires_at: string | null }>("DELETE", `${keyPath(t)}/previous-secret`);
    expect(ended.previous_secret_expires_at).toBeNull();
    expect((await tokenWith(t, t.apiKey)).status).toBe(401);
    expect((await tokenWith(t, rotated.api_key)).status).toBe(200);
    // Idempotent.
    expect((await adminCall("DELETE", `${keyPath(t)}/previous-secret`)).status).toBe(200);
    const audit = await admin<{ action: string }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    expect(audit.filter((e) => e.action === "api_key.grace_ended")).toHaveLength(1);
  });

  it("refuses a grace outside 0 to 7 days, a revoked key and another organization's key", async () => {
    const t = await createTenant();
    for (const grace of [-1, 7 * 86_400 + 1, 1.5, "60"]) {
      const res = await adminCall("POST", `${keyPath(t)}/rotate`, { grace_seconds: grace });
      expect(res.status, String(grace)).toBe(400);
      expect((await body(res)).developer_message, String(grace)).toContain("grace_seconds");
    }
    expect((await adminCall("POST", `${keyPath(t)}/rotate`, {})).status).toBe(400);
    const other = await createTenant();
    expect((await adminCall("POST", `/organizations/${other.orgId}/api-keys/${t.apiKeyId}/rotate`, { grace_seconds: 0 })).status).toBe(404);
    await admin("DELETE", keyPath(t));
    const revoked = await adminCall("POST", `${keyPath(t)}/rotate`, { grace_seconds: 0 });
    expect(revoked.status).toBe(409);
  });

  it("refuses a secret that carries the key's object id but is not one the key answers to, and a malformed id", async () => {
    const t = await createTenant();
    const rotated = await rotate(t, 60);
    const [, route] = rotated.api_key.split(".");
    const forged = `kw_live_ak_${"A".repeat(43)}.${route}`;
    const res = await tokenWith(t, forged);
    expect(res.status).toBe(401);
    expect((await body(res)).error).toBe("invalid_api_key");
    expect((await tokenWith(t, `kw_live_ak_${"A".repeat(43)}.${"B".repeat(43)}`)).status).toBe(401);
    // A rotated secret of another key is not this key's either (its route names its own object).
    const other = await createTenant();
    const theirs = await rotate(other, 60);
    expect(apiKeyObjectId(theirs.api_key)).not.toBe(apiKeyObjectId(rotated.api_key));
  });

  it("still makes one Durable Object call per request with a rotated secret", async () => {
    const t = await createTenant();
    const rotated = await rotate(t, 60);
    for (const secret of [t.apiKey, rotated.api_key]) {
      const { bindings, calls } = counting();
      const res = await callAt(Date.now(), "/v1/oauth", tokenRequest({ ...t, apiKey: secret }), bindings);
      expect(res.status).toBe(200);
      expect(calls).toEqual(["KEYS.admit"]);
    }
  });

  it("answers the new secret with applied: false when the key's object missed the push; the old works until the retry lands", async () => {
    const t = await createTenant();
    const org = env.ORGS.get(env.ORGS.idFromName(t.orgId));
    const restore = await withObjectEnv(org, (real) => unreachable(real, "KEYS", "sync"));
    const rotated = await rotate(t, 0);
    expect(rotated.applied).toBe(false);
    expect((await tokenWith(t, t.apiKey)).status).toBe(200);
    expect((await tokenWith(t, rotated.api_key)).status).toBe(401);
    await restore();
    await runDurableObjectAlarm(org);
    expect((await tokenWith(t, rotated.api_key)).status).toBe(200);
    expect((await tokenWith(t, t.apiKey)).status).toBe(401);
    // The key's object kept its name: the same counters as before the rotation.
    const objectName = await runInDurableObject(
      org,
      (_i, state) =>
        state.storage.sql.exec<{ object_hash: string }>("SELECT object_hash FROM api_keys WHERE id = ?", t.apiKeyId).one().object_hash,
    );
    expect(objectName).toBe(await sha256Hex(t.apiKey));
  });

  it("counts requests of both secrets in the key's one traffic history", async () => {
    const t = await createTenant();
    expect((await call("/v1/oauth", tokenRequest(t))).status).toBe(200);
    const rotated = await rotate(t, 60);
    expect((await tokenWith(t, rotated.api_key)).status).toBe(200);
    const traffic = await admin<{ hours: { admitted: number }[] }>("GET", `${keyPath(t)}/traffic`);
    expect(traffic.hours.reduce((sum, h) => sum + h.admitted, 0)).toBe(2);
  });
});
