/**
 * Recipe: introspect (RFC 7662) and revoke (RFC 7009) an access token with openid-client v6, as
 * an organization's own service would: the token is active with its claims, then revoked, then
 * inactive, and refused by the API. Run: KEYWAY_URL=... KEYWAY_API_KEY=... KEYWAY_CLIENT_ID=...
 * KEYWAY_CLIENT_SECRET=... node revoke-introspect-openid-client.mjs (needs `npm install openid-client`).
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
const { access_token: token } = await client.clientCredentialsGrant(config);

const before = await client.tokenIntrospection(config, token);
console.log(`active ${before.active}, client ${before.client_id}, scope ${before.scope}`);

await client.tokenRevocation(config, token);

const after = await client.tokenIntrospection(config, token);
console.log(`active ${after.active}`);

try {
  await client.fetchProtectedResource(config, token, new URL("/v1/me", KEYWAY_URL), "GET");
} catch (err) {
  // openid-client throws on the server's WWW-Authenticate challenge.
  if (!(err instanceof client.WWWAuthenticateChallengeError)) throw err;
  console.log(`GET /v1/me refused: ${err.status} ${err.cause[0]?.parameters.error}`);
}
