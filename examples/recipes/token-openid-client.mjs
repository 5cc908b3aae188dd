/**
 * Recipe: an access token from keyway with openid-client v6, then a protected call with it.
 * keyway is a plain OAuth 2.0 authorization server (RFC 8414 metadata, no OpenID Connect), so
 * discovery uses `algorithm: "oauth2"`; every request to keyway also needs the API key, which a
 * custom fetch adds. Run: KEYWAY_URL=... KEYWAY_API_KEY=... KEYWAY_CLIENT_ID=... \
 * KEYWAY_CLIENT_SECRET=... node token-openid-client.mjs (needs `npm install openid-client`).
 */
import * as client from "openid-client";

const { KEYWAY_URL = "http://127.0.0.1:8787", KEYWAY_API_KEY, KEYWAY_CLIENT_ID, KEYWAY_CLIENT_SECRET } = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_CLIENT_SECRET) {
  throw new Error("set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_CLIENT_SECRET");
}

/** @type {import("openid-client").CustomFetch} */
const withApiKey = (url, options) => {
  const headers = new Headers(options.headers);
  headers.set("x-api-key", KEYWAY_API_KEY);
  return fetch(url, { ...options, headers });
};

const issuer = new URL(KEYWAY_URL);
const config = await client.discovery(issuer, KEYWAY_CLIENT_ID, KEYWAY_CLIENT_SECRET, client.ClientSecretBasic(KEYWAY_CLIENT_SECRET), {
  algorithm: "oauth2",
  // Local runs serve plain http; drop this line for an https deployment.
  ...(issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests] } : {}),
});
config[client.customFetch] = withApiKey;

const token = await client.clientCredentialsGrant(config);
console.log(`access token expires in ${token.expiresIn()} s`);

const me = await client.fetchProtectedResource(config, token.access_token, new URL("/v1/me", KEYWAY_URL), "GET");
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
