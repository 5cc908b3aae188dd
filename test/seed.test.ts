/**
 * The demo seeding of `npm start` (scripts/seed.mjs), run inside workerd against the Worker
 * itself: the credentials it returns, and the curl commands it prints, must really obtain an
 * access token that the protected API accepts. Runs without wrangler dev, so a broken seed shows
 * up in the fast suite and not only in the end-to-end one.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEMO_LIMITS, formatDemo, seedDemo } from "../scripts/seed.mjs";

const BASE = "https://keyway.test";
/** Must match vitest.config.ts. */
const ADMIN_TOKEN = "test-admin-token-0123456789abcdefghijklmnopqrstuv";

const workerFetch = (input: string, init?: RequestInit) => exports.default.fetch(new Request(input, init));

describe("seedDemo", () => {
  it("seeds an organization whose printed credentials obtain a token that /v1/me accepts", async () => {
    const demo = await seedDemo({ baseUrl: BASE, adminToken: ADMIN_TOKEN, fetch: workerFetch });
    expect(demo.baseUrl).toBe(BASE);
    expect(demo.organizationId).toMatch(/^org_/);
    expect(demo.userId).toMatch(/^usr_/);
    expect(demo.apiKeyId).toMatch(/^key_/);

    const tokenRes = await workerFetch(`${BASE}/v1/oauth`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": demo.apiKey },
      body: JSON.stringify({ client_id: demo.clientId, client_secret: demo.clientSecret, grant_type: "client_credentials" }),
    });
    const tokenBody = await tokenRes.json<{ data: { access_token: string } }>();
    expect(tokenRes.status, JSON.stringify(tokenBody)).toBe(200);
    const token = tokenBody.data.access_token;
    expect(token).toBeTruthy();

    // No pause: the demo key has a development limit (DEMO_LIMITS), unlike every other key.
    const meRes = await workerFetch(`${BASE}/v1/me`, {
      headers: { "x-api-key": demo.apiKey, Authorization: `Bearer ${token}` },
    });
    const meBody = await meRes.json<{ data: { organization_id: string; user_id: string; client_id: string } }>();
    expect(meRes.status, JSON.stringify(meBody)).toBe(200);
    expect(meBody.data).toMatchObject({
      organization_id: demo.organizationId,
      user_id: demo.userId,
      client_id: demo.clientId,
    });
  });

  it("prints curl commands carrying the seeded api key and client credentials", async () => {
    const demo = await seedDemo({ baseUrl: `${BASE}/`, adminToken: ADMIN_TOKEN, fetch: workerFetch });
    const text = formatDemo(demo);
    const body = JSON.stringify({
      client_id: demo.clientId,
      client_secret: demo.clientSecret,
      grant_type: "client_credentials",
    });
    expect(text).toContain(
      `TOKEN=$(curl -sS -X POST ${BASE}/v1/oauth -H 'Content-Type: application/json' -H 'x-api-key: ${demo.apiKey}' -d '${body}' | sed -E 's/.*"access_token":"([^"]*)".*/\\1/')`,
    );
    expect(text).toContain(`curl -sS ${BASE}/v1/me -H 'x-api-key: ${demo.apiKey}' -H "Authorization: Bearer $TOKEN"; echo`);
    expect(text).toContain(`-u '${demo.clientId}:${demo.clientSecret}'`);
    for (const value of [demo.organizationId, demo.userId, demo.clientId, demo.clientSecret, demo.apiKey]) {
      expect(text).toContain(value);
    }
    // The guides' variables as one line to paste, which a shell reads back exactly.
    const line = text.split("\n").find((l) => l.startsWith("export KEYWAY_URL="));
    expect(line).toBe(
      `export KEYWAY_URL='${BASE}' KEYWAY_API_KEY='${demo.apiKey}' KEYWAY_CLIENT_ID='${demo.clientId}' KEYWAY_CLIENT_SECRET='${demo.clientSecret}' KEYWAY_ORG='${demo.organizationId}' KEYWAY_USER='${demo.userId}'`,
    );
    expect(text).toContain("The demo key's limit is 100 requests per second and 100,000 per day");
    expect(text).toContain("1 request per second and 1000 per day");
  });

  it("gives the demo key its development limit, and only the demo key", async () => {
    const demo = await seedDemo({ baseUrl: BASE, adminToken: ADMIN_TOKEN, fetch: workerFetch });
    expect(demo.limits).toEqual(DEMO_LIMITS);
    const orgPath = `${BASE}/admin/v1/organizations/${demo.organizationId}`;
    const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const shown = await (await workerFetch(`${orgPath}/api-keys/${demo.apiKeyId}`, { headers: auth })).json<{
      data: { limits: unknown };
    }>();
    expect(shown.data.limits).toEqual(DEMO_LIMITS);
    const other = await workerFetch(`${orgPath}/api-keys`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Another key" }),
    });
    const created = await other.json<{ data: { limits: unknown } }>();
    expect(created.data.limits).toEqual({ per_second: 1, per_day: 1000 });
  });

  it("reports the status and developer_message when the operator API refuses", async () => {
    await expect(seedDemo({ baseUrl: BASE, adminToken: "wrong-token", fetch: workerFetch })).rejects.toThrow(
      /POST \/admin\/v1\/organizations answered 401: \S/,
    );
  });
});
