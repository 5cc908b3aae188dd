/**
 * RFC 9728 (OAuth 2.0 Protected Resource Metadata): GET /.well-known/oauth-protected-resource
 * describes the /v1 API with the authorization server's issuer as its identifier, oauth4webapi
 * validates it, and every Bearer and DPoP challenge of /v1 names it in `resource_metadata` (RFC
 * 9728 5.1), read back by oauth4webapi's WWW-Authenticate parser, while the operator's /admin
 * challenge and Basic challenges go without it. The insertion itself is unit-tested on tricky
 * challenge strings (http/resource-metadata.ts).
 */
import { env, exports } from "cloudflare:workers";
import { generateKeyPair } from "jose";
import * as oauth from "oauth4webapi";
import { beforeAll, describe, expect, it } from "vitest";
import { RESOURCE_METADATA_PATH, resourceMetadataUrl, withResourceMetadata } from "../src/http/resource-metadata";
import { athOf, BASE, basic, body, call, callAt, createTenant, dpopProof, issueToken, type Tenant, tokenRequest } from "./helpers";

const METADATA_URL = `${BASE}/.well-known/oauth-protected-resource`;
const ALGS = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"];
const SCOPES = ["webhooks:read", "webhooks:write", "events:write", "graphql:mutate"];

const viaWorker = (input: URL | string, init?: RequestInit): Promise<Response> => exports.default.fetch(new Request(input, init));
/** The same, with the request's Authorization removed: a request that carries no access token. */
const withoutToken = (input: URL | string, init?: RequestInit): Promise<Response> => {
  const request = new Request(input, init);
  const headers = new Headers(request.headers);
  headers.delete("authorization");
  return exports.default.fetch(new Request(request, { headers }));
};

/**
 * The challenges oauth4webapi parses from a response (its parser runs inside
 * protectedResourceRequest, which throws them as a WWWAuthenticateChallengeError).
 */
async function challengesOf(
  url: string,
  token: string,
  headers: Record<string, string>,
  fetchImpl: (input: URL | string, init?: RequestInit) => Promise<Response>,
): Promise<{ status: number; challenges: oauth.WWWAuthenticateChallenge[] }> {
  const failure = await oauth
    .protectedResourceRequest(token, "GET", new URL(url), new Headers(headers), null, { [oauth.customFetch]: fetchImpl })
    .then(
      (res) => new Error(`expected a challenge, got ${res.status}`),
      (e: unknown) => e,
    );
  expect(failure).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
  const error = failure as oauth.WWWAuthenticateChallengeError;
  return { status: error.status, challenges: error.cause };
}

/** oauth4webapi's reading of one WWW-Authenticate value. */
const parse = (value: string) =>
  challengesOf(`${BASE}/anything`, "x", {}, () =>
    Promise.resolve(new Response(null, { status: 401, headers: { "WWW-Authenticate": value } })),
  );

let t: Tenant;
beforeAll(async () => {
  t = await createTenant();
});

describe("GET /.well-known/oauth-protected-resource (RFC 9728)", () => {
  it("describes the /v1 API, every field, without credentials, with the authorization server's issuer as its identifier", async () => {
    const res = await call(RESOURCE_METADATA_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    // No PUBLIC_BASE_URL in the tests: the identifier comes from the request's Host, so not stored.
    expect(res.headers.get("cache-control")).toBe("no-store");
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata).toEqual({
      resource: BASE,
      authorization_servers: [BASE],
      scopes_supported: SCOPES,
      bearer_methods_supported: ["header"],
      dpop_signing_alg_values_supported: ALGS,
      resource_name: "keyway API",
      resource_documentation: `${BASE}/docs`,
    });
    const as = (await (await call("/.well-known/oauth-authorization-server")).json()) as Record<string, unknown>;
    // RFC 9728 3.3 and RFC 8414 3.3: one identifier, the same value in both documents.
    expect(metadata.resource).toBe(as.issuer);
    expect(metadata.authorization_servers).toEqual([as.issuer]);
    expect(metadata.scopes_supported).toEqual(as.scopes_supported);
    expect(metadata.dpop_signing_alg_values_supported).toEqual(as.dpop_signing_alg_values_supported);
  });

  it("names PUBLIC_BASE_URL when it is set, whatever Host the request came to, and may then be cached", async () => {
    const bindings = { ...env, PUBLIC_BASE_URL: "https://api.example.com" };
    const res = await callAt(Date.now(), RESOURCE_METADATA_PATH, { headers: { Host: "evil.example" } }, bindings);
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      resource: "https://api.example.com",
      authorization_servers: ["https://api.example.com"],
      resource_documentation: "https://api.example.com/docs",
    });
    const as = (await (await callAt(Date.now(), "/.well-known/oauth-authorization-server", {}, bindings)).json()) as { issuer: string };
    expect(metadata.resource).toBe(as.issuer);
  });

  it("is validated by oauth4webapi (resource = the identifier the URL was built from), and leads to the token endpoint", async () => {
    const resource = new URL(BASE);
    const asked: string[] = [];
    const res = await oauth.resourceDiscoveryRequest(resource, {
      [oauth.customFetch]: (input: URL | string, init?: RequestInit) => {
        asked.push(String(input));
        return viaWorker(input, init);
      },
    });
    expect(asked).toEqual([METADATA_URL]);
    const rs = await oauth.processResourceDiscoveryResponse(resource, res);
    expect(rs.resource).toBe(BASE);
    expect(rs.bearer_methods_supported).toEqual(["header"]);
    // A client that knows only the resource discovers its authorization server (RFC 9728 7.6).
    const issuer = new URL(rs.authorization_servers?.[0] ?? "");
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", [oauth.customFetch]: viaWorker }),
    );
    expect(as.token_endpoint).toBe(`${BASE}/v1/oauth/token`);
  });

  it("is refused by oauth4webapi for another resource identifier (RFC 9728 3.3)", async () => {
    const bindings = { ...env, PUBLIC_BASE_URL: "https://api.example.com" };
    const resource = new URL(BASE);
    const res = await oauth.resourceDiscoveryRequest(resource, {
      [oauth.customFetch]: async (input: URL | string, init?: RequestInit) => callAt(Date.now(), new URL(input).pathname, init, bindings),
    });
    await expect(oauth.processResourceDiscoveryResponse(resource, res)).rejects.toThrow(/"resource" property does not match/);
  });
});

describe("resource_metadata on the /v1 API's challenges (RFC 9728 5.1)", () => {
  const key = () => ({ "x-api-key": t.apiKey });

  it("on a request without an access token: both challenges, Bearer and DPoP, name it", async () => {
    const raw = await call("/v1/me", { headers: key() });
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${METADATA_URL}", realm="keyway", DPoP resource_metadata="${METADATA_URL}", realm="keyway", algs="${ALGS.join(" ")}"`,
    );
    const { status, challenges } = await challengesOf(`${BASE}/v1/me`, "unused", key(), withoutToken);
    expect(status).toBe(401);
    expect(challenges).toEqual([
      { scheme: "bearer", parameters: { resource_metadata: METADATA_URL, realm: "keyway" } },
      { scheme: "dpop", parameters: { resource_metadata: METADATA_URL, realm: "keyway", algs: ALGS.join(" ") } },
    ]);
  });

  it("on a bad token: the invalid_token challenge keeps its error and description", async () => {
    const { status, challenges } = await challengesOf(`${BASE}/v1/me`, "kw_at_t1.nonsense.AAAA", key(), viaWorker);
    expect(status).toBe(401);
    expect(challenges).toEqual([
      {
        scheme: "bearer",
        parameters: { resource_metadata: METADATA_URL, realm: "keyway", error: "invalid_token", error_description: expect.any(String) },
      },
    ]);
  });

  it("on a DPoP-bound token sent as Bearer, and on a DPoP-bound token without its proof (invalid_dpop_proof)", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const issued = await call("/v1/oauth/token", {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "x-api-key": t.apiKey,
        DPoP: await dpopProof(pair, "POST", `${BASE}/v1/oauth/token`),
      },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret }).toString(),
    });
    const { access_token: token, token_type } = (await issued.json()) as { access_token: string; token_type: string };
    expect(token_type).toBe("DPoP");

    const asBearer = await challengesOf(`${BASE}/v1/me`, token, key(), viaWorker);
    expect(asBearer.status).toBe(401);
    expect(asBearer.challenges).toHaveLength(1);
    expect(asBearer.challenges[0]).toMatchObject({
      scheme: "dpop",
      parameters: { resource_metadata: METADATA_URL, realm: "keyway", error: "invalid_token" },
    });
    // The description speaks of `Authorization: DPoP <token>`, and is not mistaken for a challenge.
    expect(asBearer.challenges[0]?.parameters.error_description).toMatch(/DPoP/);

    const noProof = await call("/v1/me", { headers: { ...key(), Authorization: `DPoP ${token}` } });
    expect(noProof.status).toBe(401);
    expect((await body(noProof)).error).toBe("invalid_dpop_proof");
    const [challenge, ...others] = (await parse(noProof.headers.get("www-authenticate") ?? "")).challenges;
    expect(others).toEqual([]);
    expect(challenge).toMatchObject({ scheme: "dpop", parameters: { resource_metadata: METADATA_URL, error: "invalid_dpop_proof" } });

    // And the same token used right: no challenge at all.
    const proof = await dpopProof(pair, "GET", `${BASE}/v1/me`, { ath: await athOf(token) });
    expect((await call("/v1/me", { headers: { ...key(), Authorization: `DPoP ${token}`, DPoP: proof } })).status).toBe(200);
  });

  it("on insufficient_scope (403, RFC 6750 3.1)", async () => {
    const res = await call("/v1/oauth", tokenRequest(t, { scope: "webhooks:read" }));
    const token = (await body<{ access_token: string }>(res)).data.access_token;
    const publish = await call("/v1/events", {
      method: "POST",
      headers: { ...key(), Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ type: "a.b", data: {} }),
    });
    expect(publish.status).toBe(403);
    expect((await body(publish)).error).toBe("insufficient_scope");
    expect((await parse(publish.headers.get("www-authenticate") ?? "")).challenges).toEqual([
      {
        scheme: "bearer",
        parameters: {
          resource_metadata: METADATA_URL,
          realm: "keyway",
          error: "insufficient_scope",
          error_description: "The access token lacks a needed scope",
          scope: "events:write",
        },
      },
    ]);
  });

  it("on an unknown /v1 path, refused for its credentials first", async () => {
    const res = await call("/v1/no-such-thing", { headers: key() });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain(`resource_metadata="${METADATA_URL}"`);
  });

  it("names PUBLIC_BASE_URL's metadata when it is set, the URL the metadata's own resource is built from", async () => {
    const bindings = { ...env, PUBLIC_BASE_URL: "https://api.example.com" };
    const res = await callAt(Date.now(), "/v1/me", { headers: { ...key(), Authorization: "Bearer nope" } }, bindings);
    expect(res.status).toBe(401);
    const [challenge] = (await parse(res.headers.get("www-authenticate") ?? "")).challenges;
    expect(challenge?.parameters.resource_metadata).toBe("https://api.example.com/.well-known/oauth-protected-resource");
  });

  it("leads a client from a 401 to the token endpoint: resource_metadata, then authorization_servers", async () => {
    const { challenges } = await challengesOf(`${BASE}/v1/me`, "unused", key(), withoutToken);
    const url = challenges[0]?.parameters.resource_metadata ?? "";
    expect(url).toBe(METADATA_URL);
    const rs = await oauth.processResourceDiscoveryResponse(new URL(BASE), await viaWorker(url));
    expect(rs.authorization_servers).toEqual([BASE]);
    // Each access token works for the resource the metadata names.
    const token = await issueToken(t);
    expect((await call("/v1/me", { headers: { ...key(), Authorization: `Bearer ${token}` } })).status).toBe(200);
  });
});

describe("challenges that do not get resource_metadata", () => {
  it('the operator\'s /admin/v1 401 keeps its bare Bearer realm="keyway-admin"', async () => {
    const raw = await call("/admin/v1/organizations", { headers: { Authorization: "Bearer wrong" } });
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toBe('Bearer realm="keyway-admin"');
    const { challenges } = await challengesOf(`${BASE}/admin/v1/organizations`, "wrong", {}, viaWorker);
    expect(challenges).toEqual([{ scheme: "bearer", parameters: { realm: "keyway-admin" } }]);
  });

  it("the token endpoint's Basic challenge for wrong client credentials (RFC 6749 5.2)", async () => {
    for (const path of ["/v1/oauth/token", "/v1/oauth"]) {
      const res = await call(path, {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "x-api-key": t.apiKey,
          Authorization: basic(t.clientId, "wrong"),
        },
        body: "grant_type=client_credentials",
      });
      expect(res.status, path).toBe(401);
      expect(res.headers.get("www-authenticate"), path).toBe('Basic realm="keyway"');
    }
  });
});

describe("withResourceMetadata (the insertion, http/resource-metadata.ts)", () => {
  const U = "https://keyway.example.com/.well-known/oauth-protected-resource";
  const P = `resource_metadata="${U}"`;

  it.each([
    ["a bare Bearer", "Bearer", `Bearer ${P}`],
    ["an error challenge", 'Bearer realm="keyway", error="invalid_token"', `Bearer ${P}, realm="keyway", error="invalid_token"`],
    [
      "Bearer and DPoP",
      'Bearer realm="keyway", DPoP realm="keyway", algs="ES256 ES384"',
      `Bearer ${P}, realm="keyway", DPoP ${P}, realm="keyway", algs="ES256 ES384"`,
    ],
    [
      "the schemes' names inside a description, with commas",
      'Bearer realm="keyway", error_description="Send it as Bearer, DPoP realm=x, or Basic"',
      `Bearer ${P}, realm="keyway", error_description="Send it as Bearer, DPoP realm=x, or Basic"`,
    ],
    [
      "escaped quotes inside a quoted-string",
      'DPoP error_description="a \\"quoted\\", Bearer x", algs="ES256"',
      `DPoP ${P}, error_description="a \\"quoted\\", Bearer x", algs="ES256"`,
    ],
    ["the scheme in another case (RFC 9110 11.1)", 'bearer error="x", dpop', `bearer ${P}, error="x", dpop ${P}`],
    ["Basic alone", 'Basic realm="keyway"', 'Basic realm="keyway"'],
    ["Basic naming Bearer as its realm, then Bearer", 'Basic realm="Bearer", Bearer', `Basic realm="Bearer", Bearer ${P}`],
    [
      "RFC 9110 11.6.1's example, without Bearer",
      'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
      'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
    ],
    ["an auth-param named Bearer or DPoP", 'Foo Bearer=1, DPoP = "x", dpop', `Foo Bearer=1, DPoP = "x", dpop ${P}`],
    ["an unquoted value Bearer", "Foo realm=Bearer, Bearer realm=DPoP", `Foo realm=Bearer, Bearer ${P}, realm=DPoP`],
    ["Bearer with a token68 (no auth-param may join it)", "Bearer abc==, Negotiate a/b+c=", "Bearer abc==, Negotiate a/b+c="],
    ["a scheme that only starts with Bearer", 'Bearer-ish realm="x", XDPoP', 'Bearer-ish realm="x", XDPoP'],
    ["empty list elements and tabs", ' , Bearer\trealm="k" ,, DPoP', ` , Bearer ${P},\trealm="k" ,, DPoP ${P}`],
    ["an unterminated quoted-string", 'Bearer error_description="oops, DPoP', `Bearer ${P}, error_description="oops, DPoP`],
  ])("%s", (_name, header, expected) => {
    expect(withResourceMetadata(header, U)).toBe(expected);
  });

  it("gives oauth4webapi's parser the parameter on each Bearer and DPoP challenge, the rest unchanged", async () => {
    const header =
      'Basic realm="Bearer, DPoP", Bearer realm="keyway", error="invalid_token", error_description="Bearer, DPoP realm=\\"x\\"", DPoP realm="keyway", algs="ES256 EdDSA"';
    const { challenges } = await parse(withResourceMetadata(header, U));
    expect(challenges).toEqual([
      { scheme: "basic", parameters: { realm: "Bearer, DPoP" } },
      {
        scheme: "bearer",
        parameters: { resource_metadata: U, realm: "keyway", error: "invalid_token", error_description: 'Bearer, DPoP realm="x"' },
      },
      { scheme: "dpop", parameters: { resource_metadata: U, realm: "keyway", algs: "ES256 EdDSA" } },
    ]);
  });

  it("quotes the URL as a quoted-string (RFC 9110 5.6.4)", () => {
    expect(withResourceMetadata("Bearer", 'https://x.example/a"b\\c')).toBe('Bearer resource_metadata="https://x.example/a\\"b\\\\c"');
  });
});

describe("resourceMetadataUrl (RFC 9728 3.1)", () => {
  it("inserts the well-known suffix between the host and the path", () => {
    expect(resourceMetadataUrl("https://keyway.example.com")).toBe("https://keyway.example.com/.well-known/oauth-protected-resource");
    expect(resourceMetadataUrl("https://keyway.example.com/")).toBe("https://keyway.example.com/.well-known/oauth-protected-resource");
    expect(resourceMetadataUrl("https://r.example:8443/resource1")).toBe(
      "https://r.example:8443/.well-known/oauth-protected-resource/resource1",
    );
  });
});
