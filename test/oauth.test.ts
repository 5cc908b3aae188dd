/** POST /v1/oauth (spec 4.1) and POST /v1/oauth/token (RFC 6749) behaviour, field by field. */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { adminCall, BASE, basic, body, call, callAt, createTenant, type Tenant, tokenRequest } from "./helpers";

let t: Tenant;
beforeAll(async () => {
  t = await createTenant();
});

describe("POST /v1/oauth", () => {
  it("answers the documented JSON request with the documented envelope, field by field", async () => {
    const res = await call("/v1/oauth", tokenRequest(t));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("pragma")).toBe("no-cache");
    const json = await body<Record<string, unknown>>(res);
    expect(Object.keys(json).sort()).toEqual(["_links", "data", "developer_message", "response_status", "user_message"]);
    expect(json.response_status).toBe(200);
    expect(json.developer_message).toBe("Success");
    expect(json.user_message).toBe("Success");
    expect(json._links).toEqual({ self: { href: `${BASE}/v1/oauth` } });
    expect(Object.keys(json.data).sort()).toEqual(["access_token", "expires_in", "refresh_token", "scope", "token_type"]);
    // Without `scope`, every scope the credential allows (RFC 6749 3.3).
    expect(json.data.scope).toBe("webhooks:read webhooks:write events:write graphql:mutate");
    expect(json.data.access_token).toMatch(/^kw_at_t1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(json.data.refresh_token).toBeNull();
    expect(json.data.token_type).toBe("Bearer");
    expect(json.data.expires_in).toBe(3600);
  });

  it("issues a different token on every request", async () => {
    const a = await body<{ access_token: string }>(await call("/v1/oauth", tokenRequest(t)));
    const b = await body<{ access_token: string }>(await call("/v1/oauth", tokenRequest(t)));
    expect(a.data.access_token).not.toBe(b.data.access_token);
  });

  it("accepts a form-encoded body (RFC 6749 4.4.2)", async () => {
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret }),
    });
    expect(res.status).toBe(200);
    expect((await body<{ access_token: string }>(res)).data.access_token).toMatch(/^kw_at_/);
  });

  it("accepts HTTP Basic client authentication with only grant_type in the body (RFC 6749 2.3.1)", async () => {
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "x-api-key": t.apiKey,
        Authorization: basic(t.clientId, t.clientSecret),
      },
      body: "grant_type=client_credentials",
    });
    expect(res.status).toBe(200);
  });

  it("accepts Basic authentication with a JSON body and a matching client_id in it", async () => {
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey, Authorization: basic(t.clientId, t.clientSecret) },
      body: JSON.stringify({ grant_type: "client_credentials", client_id: t.clientId }),
    });
    expect(res.status).toBe(200);
  });

  it("refuses two client authentication methods in one request", async () => {
    const res = await call("/v1/oauth", {
      ...tokenRequest(t),
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey, Authorization: basic(t.clientId, t.clientSecret) },
    });
    expect(res.status).toBe(400);
    expect((await body(res)).error).toBe("invalid_request");
  });

  it("answers 401 invalid_client with a Basic challenge when Basic credentials are wrong", async () => {
    const res = await call("/v1/oauth", {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": t.apiKey, Authorization: basic(t.clientId, "nope") },
      body: JSON.stringify({ grant_type: "client_credentials" }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Basic realm="keyway"');
    expect((await body(res)).error).toBe("invalid_client");
  });

  describe("API key", () => {
    it("is required: 401 invalid_api_key envelope when x-api-key is missing", async () => {
      const res = await call("/v1/oauth", { ...tokenRequest(t), headers: { "Content-Type": "application/json" } });
      expect(res.status).toBe(401);
      const json = await body(res);
      expect(json).toMatchObject({ response_status: 401, data: null, error: "invalid_api_key" });
      expect(json.developer_message).toMatch(/x-api-key header is missing/);
      expect(json.user_message).toBeTruthy();
      expect(json._links.self.href).toBe(`${BASE}/v1/oauth`);
      expect(res.headers.get("cache-control")).toBe("no-store");
    });

    it("refuses an unknown API key with 401", async () => {
      const res = await call("/v1/oauth", {
        ...tokenRequest(t),
        headers: { "Content-Type": "application/json", "x-api-key": `kw_live_ak_${"A".repeat(43)}` },
      });
      expect(res.status).toBe(401);
      expect((await body(res)).developer_message).toMatch(/does not hold a valid API key/);
    });

    it("refuses a revoked API key with 401, and keeps refusing it", async () => {
      const other = await createTenant();
      expect((await call("/v1/oauth", tokenRequest(other))).status).toBe(200);
      const revoke = await adminCall("DELETE", `/organizations/${other.orgId}/api-keys/${other.apiKeyId}`);
      expect(revoke.status).toBe(200);
      for (let i = 0; i < 2; i++) {
        const res = await call("/v1/oauth", tokenRequest(other));
        expect(res.status).toBe(401);
        expect((await body(res)).developer_message).toBe("The API key has been revoked.");
      }
    });
  });

  describe("client authentication", () => {
    async function failure(overrides: Record<string, unknown>) {
      const res = await call("/v1/oauth", tokenRequest(t, overrides));
      return { status: res.status, json: await body(res), challenge: res.headers.get("www-authenticate") };
    }

    it("gives the same 401 answer for an unknown client_id and for a wrong client_secret", async () => {
      const unknownId = await failure({ client_id: "kw_client_AAAAAAAAAAAAAAAAAAAAAA" });
      const wrongSecret = await failure({ client_secret: `${t.clientSecret.slice(0, -1)}x` });
      const garbageId = await failure({ client_id: "someone-else" });
      for (const f of [unknownId, wrongSecret, garbageId]) {
        expect(f.status).toBe(401);
        expect(f.json.error).toBe("invalid_client");
        expect(f.json.data).toBeNull();
        expect(f.challenge).toBeNull();
      }
      expect(unknownId.json).toEqual(wrongSecret.json);
      expect(garbageId.json).toEqual(wrongSecret.json);
    });

    it("refuses a revoked client credential with the same invalid_client answer", async () => {
      const cred = await adminCall("POST", `/organizations/${t.orgId}/users/${t.userId}/client-credentials`, {});
      const { client_id, client_secret } = (await body<{ client_id: string; client_secret: string }>(cred)).data;
      expect((await call("/v1/oauth", tokenRequest(t, { client_id, client_secret }))).status).toBe(200);
      await adminCall("DELETE", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${client_id}`);
      const res = await failure({ client_id, client_secret });
      expect(res.status).toBe(401);
      expect(res.json.error).toBe("invalid_client");
    });

    it("refuses credentials of another organization than the API key's", async () => {
      const other = await createTenant();
      const res = await failure({ client_id: other.clientId, client_secret: other.clientSecret });
      expect(res.status).toBe(401);
      expect(res.json.error).toBe("invalid_client");
      expect(res.json.developer_message).toMatch(/different organization/);
    });
  });

  describe("request validation", () => {
    it.each([
      ["grant_type missing", { grant_type: undefined }, 400, "invalid_request", /grant_type is required/],
      ["client_id missing", { client_id: undefined }, 400, "invalid_request", /client_id is required/],
      ["client_secret missing", { client_secret: undefined }, 400, "invalid_request", /client_secret is required/],
      ["client_id a number", { client_id: 42 }, 400, "invalid_request", /client_id must be a string/],
      ["client_secret an object", { client_secret: { a: 1 } }, 400, "invalid_request", /client_secret must be a string/],
      ["client_id empty", { client_id: "" }, 400, "invalid_request", /client_id must not be empty/],
      ["grant_type password", { grant_type: "password" }, 400, "unsupported_grant_type", /"password" is not supported/],
      ["grant_type null", { grant_type: null }, 400, "invalid_request", /grant_type must be a string/],
    ])("%s -> %i %s", async (_name, overrides, status, code, message) => {
      const res = await call("/v1/oauth", tokenRequest(t, overrides));
      expect(res.status).toBe(status);
      const json = await body(res);
      expect(json).toMatchObject({ response_status: status, data: null, error: code });
      expect(json.developer_message).toMatch(message);
    });

    it("reports an unsupported grant_type even when the credentials are missing (RFC 6749 5.2)", async () => {
      const res = await call("/v1/oauth", {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": t.apiKey },
        body: JSON.stringify({ grant_type: "authorization_code" }),
      });
      expect(res.status).toBe(400);
      expect((await body(res)).error).toBe("unsupported_grant_type");
    });

    it("ignores unknown parameters (RFC 6749 3.2)", async () => {
      expect((await call("/v1/oauth", tokenRequest(t, { audience: "read", extra: [1] }))).status).toBe(200);
    });
  });
});

describe("POST /v1/oauth/token (plain RFC 6749 bodies)", () => {
  it("answers with access_token, token_type, expires_in and scope only", async () => {
    const res = await call("/v1/oauth/token", {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "x-api-key": t.apiKey,
        Authorization: basic(t.clientId, t.clientSecret),
      },
      body: "grant_type=client_credentials",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const json = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(json).sort()).toEqual(["access_token", "expires_in", "scope", "token_type"]);
    expect(json.token_type).toBe("Bearer");
    expect(json.expires_in).toBe(3600);
  });

  it("answers errors as {error, error_description}, the API key check included", async () => {
    const noKey = await call("/v1/oauth/token", { method: "POST", body: "grant_type=client_credentials" });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toEqual({ error: "invalid_api_key", error_description: expect.stringMatching(/x-api-key/) });

    const badGrant = await call("/v1/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey },
      body: "grant_type=implicit",
    });
    expect(badGrant.status).toBe(400);
    expect(await badGrant.json()).toEqual({ error: "unsupported_grant_type", error_description: expect.any(String) });
  });
});

describe("GET /.well-known/oauth-authorization-server (RFC 8414)", () => {
  it("names PUBLIC_BASE_URL as the issuer when it is set, whatever Host the request came to", async () => {
    const res = await callAt(
      Date.now(),
      "/.well-known/oauth-authorization-server",
      {},
      { ...env, PUBLIC_BASE_URL: "https://api.example.com" },
    );
    expect(await res.json()).toMatchObject({ issuer: "https://api.example.com", token_endpoint: "https://api.example.com/v1/oauth/token" });
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
  });

  it("is not stored by caches when its issuer comes from the request's Host (no PUBLIC_BASE_URL)", async () => {
    const res = await callAt(
      Date.now(),
      "/.well-known/oauth-authorization-server",
      { headers: { Host: "evil.example" } },
      { ...env, PUBLIC_BASE_URL: "" },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("describes every endpoint, method, algorithm and scope without needing an API key", async () => {
    const res = await call("/.well-known/oauth-authorization-server");
    expect(res.status).toBe(200);
    const methods = ["client_secret_basic", "client_secret_post", "private_key_jwt"];
    const algs = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"];
    expect(await res.json()).toEqual({
      issuer: BASE,
      token_endpoint: `${BASE}/v1/oauth/token`,
      jwks_uri: `${BASE}/.well-known/jwks.json`,
      grant_types_supported: ["client_credentials"],
      token_endpoint_auth_methods_supported: methods,
      token_endpoint_auth_signing_alg_values_supported: algs,
      response_types_supported: [],
      scopes_supported: ["webhooks:read", "webhooks:write", "events:write", "graphql:mutate"],
      dpop_signing_alg_values_supported: algs,
      revocation_endpoint: `${BASE}/v1/oauth/revoke`,
      revocation_endpoint_auth_methods_supported: methods,
      revocation_endpoint_auth_signing_alg_values_supported: algs,
      introspection_endpoint: `${BASE}/v1/oauth/introspect`,
      introspection_endpoint_auth_methods_supported: methods,
      introspection_endpoint_auth_signing_alg_values_supported: algs,
    });
  });
});
