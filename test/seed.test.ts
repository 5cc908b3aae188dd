/**
 * The demo seeding of `npm start` (scripts/seed.mjs), run inside workerd against the Worker
 * itself: the credentials it returns, and the curl commands it prints, must really obtain an
 * access token that the protected API accepts. Runs without wrangler dev, so a broken seed shows
 * up in the fast suite and not only in the end-to-end one.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { formatDemo, seedDemo } from "../scripts/seed.mjs";

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

    // The default rate limit is one request per second per API key, as the printout warns.
    await new Promise((done) => setTimeout(done, 1_100));
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
      `curl -sS -X POST ${BASE}/v1/oauth -H 'Content-Type: application/json' -H 'x-api-key: ${demo.apiKey}' -d '${body}'`,
    );
    expect(text).toContain(`curl -sS ${BASE}/v1/me -H 'x-api-key: ${demo.apiKey}' -H "Authorization: Bearer $TOKEN"`);
    for (const value of [demo.organizationId, demo.userId, demo.clientId, demo.clientSecret, demo.apiKey]) {
      expect(text).toContain(value);
    }
    expect(text).toContain("data.access_token");
    expect(text).toContain("wait a second between calls");
  });

  it("reports the status and developer_message when the operator API refuses", async () => {
    await expect(seedDemo({ baseUrl: BASE, adminToken: "wrong-token", fetch: workerFetch })).rejects.toThrow(
      /POST \/admin\/v1\/organizations answered 401: \S/,
    );
  });
});
