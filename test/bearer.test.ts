/** Bearer protection of /v1 (RFC 6750) and GET /v1/me: tampering, truncation, expiry, revocation. */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { signAccessToken } from "../src/auth/access-token";
import { loadConfig } from "../src/config";
import { adminCall, authed, BASE, body, call, callAt, createTenant, issueToken, type Tenant, tokenRequest } from "./helpers";

/** RFC 9728 5.1: every /v1 challenge names the protected resource's metadata (test/protected-resource.test.ts). */
const RESOURCE_METADATA = `resource_metadata="${BASE}/.well-known/oauth-protected-resource"`;

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
});

async function me(tenant: Tenant, bearer: string) {
  const res = await call("/v1/me", authed(tenant, bearer));
  return { res, json: await body<Record<string, unknown>>(res) };
}

describe("GET /v1/me", () => {
  it("tells who the token speaks for", async () => {
    const { res, json } = await me(t, token);
    expect(res.status).toBe(200);
    expect(json.data).toMatchObject({
      organization_id: t.orgId,
      user_id: t.userId,
      client_id: t.clientId,
      api_key_id: t.apiKeyId,
      token: { id: expect.stringMatching(/^tok_/), expires_in: expect.any(Number) },
    });
    const tok = json.data.token as { issued_at: string; expires_at: string };
    expect(Date.parse(tok.expires_at) - Date.parse(tok.issued_at)).toBe(3600_000);
  });

  it("still needs the API key: a token alone is 401 invalid_api_key", async () => {
    const res = await call("/v1/me", { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
    expect((await body(res)).error).toBe("invalid_api_key");
  });
});

describe("bearer middleware", () => {
  it("answers a missing token with 401 and a bare Bearer challenge (RFC 6750 3.1)", async () => {
    const res = await call("/v1/me", { headers: { "x-api-key": t.apiKey } });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer ${RESOURCE_METADATA}, realm="keyway", DPoP ${RESOURCE_METADATA}, realm="keyway", algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"`,
    );
    const json = await body(res);
    expect(json).toMatchObject({ response_status: 401, data: null, error: "invalid_token" });
    expect(json.developer_message).toMatch(/Authorization: Bearer/);
  });

  it("treats another scheme as a missing token", async () => {
    const res = await call("/v1/me", { headers: { "x-api-key": t.apiKey, Authorization: `Basic ${btoa("a:b")}` } });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer ${RESOURCE_METADATA}, realm="keyway", DPoP ${RESOURCE_METADATA}, realm="keyway", algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"`,
    );
  });

  it("accepts the scheme name in any case", async () => {
    const res = await call("/v1/me", { headers: { "x-api-key": t.apiKey, Authorization: `bearer ${token}` } });
    expect(res.status).toBe(200);
  });

  it.each([
    ["a flipped MAC character", (tok: string) => tok.slice(0, -2) + (tok.at(-2) === "A" ? "B" : "A") + tok.slice(-1)],
    ["truncated by one character", (tok: string) => tok.slice(0, -1)],
    ["truncated to its claims", (tok: string) => tok.slice(0, tok.lastIndexOf("."))],
    [
      "claims swapped for forged ones",
      (tok: string) => {
        const [head, , sig] = tok.split(".");
        const forged = btoa(JSON.stringify({ v: 1, org: "org_x", sub: "u", cid: "c", iat: 0, exp: 9e9, jti: "j" }))
          .replaceAll("+", "-")
          .replaceAll("/", "_")
          .replace(/=+$/, "");
        return `${head}.${forged}.${sig}`;
      },
    ],
    ["an unknown key id", (tok: string) => tok.replace(/^kw_at_t1\./, "kw_at_zz.")],
    ["no prefix", (tok: string) => tok.slice("kw_at_".length)],
    ["random text", () => "hello"],
    ["2000 characters", () => `kw_at_t1.${"A".repeat(2000)}.${"A".repeat(43)}`],
  ])("refuses a token with %s: 401 invalid_token with an error challenge", async (_name, mutate) => {
    const { res, json } = await me(t, mutate(token));
    expect(res.status).toBe(401);
    expect(json.error).toBe("invalid_token");
    expect(res.headers.get("www-authenticate")).toMatch(
      /^Bearer resource_metadata="[^"]+", realm="keyway", error="invalid_token", error_description="/,
    );
  });

  it("refuses a token once it expires, and not a millisecond before", async () => {
    const issuedAt = Date.UTC(2026, 0, 1, 12, 0, 0);
    const res = await callAt(issuedAt, "/v1/oauth", tokenRequest(t));
    const short = (await body<{ access_token: string }>(res)).data.access_token;
    const lastValid = await callAt(issuedAt + 3600_000 - 1, "/v1/me", authed(t, short));
    expect(lastValid.status).toBe(200);
    const expired = await callAt(issuedAt + 3600_000, "/v1/me", authed(t, short));
    expect(expired.status).toBe(401);
    expect((await body(expired)).developer_message).toMatch(/has expired/);
    expect(expired.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
  });

  it("refuses an expired token even when the isolate verified it seconds before (verification cache)", async () => {
    const issuedAt = Date.UTC(2026, 0, 2, 12, 0, 0);
    const res = await callAt(issuedAt, "/v1/oauth", tokenRequest(t));
    const token = (await body<{ access_token: string }>(res)).data.access_token;
    expect((await callAt(issuedAt + 3600_000 - 2_000, "/v1/me", authed(t, token))).status).toBe(200);
    const expired = await callAt(issuedAt + 3600_000, "/v1/me", authed(t, token));
    expect(expired.status).toBe(401);
    expect((await body(expired)).developer_message).toMatch(/has expired/);
  });

  it("verifies tokens signed with a retired key that is still configured (rotation)", async () => {
    const config = loadConfig(env);
    const retired = config.signingKeys.filter((k) => k.kid === "t0");
    const now = Math.floor(Date.now() / 1000);
    const old = await signAccessToken(retired, {
      v: 1,
      org: t.orgId,
      sub: t.userId,
      cid: t.clientId,
      iat: now,
      exp: now + 60,
      jti: "tok_x",
    });
    expect(old.startsWith("kw_at_t0.")).toBe(true);
    expect((await me(t, old)).res.status).toBe(200);
  });

  it("refuses a genuine token presented with another organization's API key", async () => {
    const other = await createTenant();
    const res = await call("/v1/me", { headers: { "x-api-key": other.apiKey, Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
    expect((await body(res)).developer_message).toMatch(/different organization/);
  });

  it("stops accepting outstanding tokens once their client credential is revoked", async () => {
    const tenant = await createTenant();
    const live = await issueToken(tenant);
    expect((await me(tenant, live)).res.status).toBe(200);
    const revoke = await adminCall("DELETE", `/organizations/${tenant.orgId}/users/${tenant.userId}/client-credentials/${tenant.clientId}`);
    expect(revoke.status).toBe(200);
    const { res, json } = await me(tenant, live);
    expect(res.status).toBe(401);
    expect(json.developer_message).toMatch(/revoked/);
    // Other credentials of the same organization keep working.
    const cred = await body<{ client_id: string; client_secret: string }>(
      await adminCall("POST", `/organizations/${tenant.orgId}/users/${tenant.userId}/client-credentials`, {}),
    );
    const fresh = await issueToken({ ...tenant, clientId: cred.data.client_id, clientSecret: cred.data.client_secret });
    expect((await me(tenant, fresh)).res.status).toBe(200);
  });

  it("stops accepting every request once the API key is revoked, tokens included", async () => {
    const tenant = await createTenant();
    const live = await issueToken(tenant);
    await adminCall("DELETE", `/organizations/${tenant.orgId}/api-keys/${tenant.apiKeyId}`);
    const { res, json } = await me(tenant, live);
    expect(res.status).toBe(401);
    expect(json.error).toBe("invalid_api_key");
  });
});
