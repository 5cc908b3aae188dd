/**
 * Off-the-shelf OAuth interoperability: oauth4webapi discovers the server through RFC 8414
 * metadata and obtains a token at /v1/oauth/token with client_secret_basic or
 * client_secret_post, needing nothing but the extra x-api-key header.
 */
import { exports } from "cloudflare:workers";
import * as oauth from "oauth4webapi";
import { beforeAll, describe, expect, it } from "vitest";
import { authed, BASE, body, call, createTenant, type Tenant } from "./helpers";

let t: Tenant;
const sent: Request[] = [];
const viaWorker = (input: URL | string, init?: RequestInit) => {
  const request = new Request(input, init);
  sent.push(request.clone());
  return exports.default.fetch(request);
};

beforeAll(async () => {
  t = await createTenant();
});

async function discover(): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(BASE);
  const res = await oauth.discoveryRequest(issuer, { algorithm: "oauth2", [oauth.customFetch]: viaWorker });
  return oauth.processDiscoveryResponse(issuer, res);
}

describe("oauth4webapi", () => {
  it("discovers the token endpoint from RFC 8414 metadata", async () => {
    const as = await discover();
    expect(as.token_endpoint).toBe(`${BASE}/v1/oauth/token`);
  });

  it.each([
    ["client_secret_basic", (secret: string) => oauth.ClientSecretBasic(secret)],
    ["client_secret_post", (secret: string) => oauth.ClientSecretPost(secret)],
  ])("obtains a working token with %s and only x-api-key added", async (method, auth) => {
    const as = await discover();
    const client: oauth.Client = { client_id: t.clientId };
    sent.length = 0;
    const response = await oauth.clientCredentialsGrantRequest(as, client, auth(t.clientSecret), new URLSearchParams(), {
      [oauth.customFetch]: viaWorker,
      headers: { "x-api-key": t.apiKey },
    });
    const result = await oauth.processClientCredentialsResponse(as, client, response);
    expect(result.token_type).toBe("bearer"); // oauth4webapi normalises the case
    expect(result.expires_in).toBe(3600);

    // What the library sent: a form-encoded client-credentials grant using the chosen method.
    const request = sent.at(-1)!;
    expect(request.headers.get("content-type")).toMatch(/^application\/x-www-form-urlencoded/);
    const form = new URLSearchParams(new TextDecoder().decode(await request.arrayBuffer()));
    expect(form.get("grant_type")).toBe("client_credentials");
    if (method === "client_secret_basic") expect(request.headers.get("authorization")).toMatch(/^Basic /);
    else expect(form.get("client_secret")).toBe(t.clientSecret);

    const me = await call("/v1/me", authed(t, result.access_token));
    expect(me.status).toBe(200);
    expect((await body<{ client_id: string }>(me)).data.client_id).toBe(t.clientId);
  });

  it("surfaces a wrong secret as the library's Basic challenge error (RFC 6749 5.2)", async () => {
    const as = await discover();
    const client: oauth.Client = { client_id: t.clientId };
    const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic("wrong"), new URLSearchParams(), {
      [oauth.customFetch]: viaWorker,
      headers: { "x-api-key": t.apiKey },
    });
    const failure = await oauth.processClientCredentialsResponse(as, client, response).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    const challenge = failure as oauth.WWWAuthenticateChallengeError;
    expect(challenge.status).toBe(401);
    expect(challenge.cause[0]?.scheme).toBe("basic");
    expect(await challenge.response.json()).toMatchObject({ error: "invalid_client" });
  });
});
