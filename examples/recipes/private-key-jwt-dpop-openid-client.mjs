/**
 * Recipe: a DPoP-bound, narrowed access token with openid-client v6, the client authenticated by
 * a JWT signed with its private key (private_key_jwt, RFC 7523; keyway keeps only the public
 * key), then a protected call proving possession of the DPoP key (RFC 9449). Run: KEYWAY_URL=...
 * KEYWAY_API_KEY=... KEYWAY_CLIENT_ID=... KEYWAY_PRIVATE_JWK=client-key.json node
 * private-key-jwt-dpop-openid-client.mjs (needs `npm install openid-client`).
 */
import { readFile } from "node:fs/promises";
import * as client from "openid-client";

const { KEYWAY_URL = "http://127.0.0.1:8787", KEYWAY_API_KEY, KEYWAY_CLIENT_ID, KEYWAY_PRIVATE_JWK } = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_PRIVATE_JWK) {
  throw new Error("set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_PRIVATE_JWK (a file holding the client's private EC JWK)");
}

// The client's private key (its public half is registered with the credential).
const jwk = JSON.parse(await readFile(KEYWAY_PRIVATE_JWK, "utf8"));
const clientKey = await crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);

/** @type {import("openid-client").CustomFetch} */
const withApiKey = (url, options) => {
  const headers = new Headers(options.headers);
  headers.set("x-api-key", KEYWAY_API_KEY);
  return fetch(url, { ...options, headers });
};

const issuer = new URL(KEYWAY_URL);
const config = await client.discovery(issuer, KEYWAY_CLIENT_ID, undefined, client.PrivateKeyJwt({ key: clientKey, kid: jwk.kid }), {
  algorithm: "oauth2",
  // Local runs serve plain http; drop this line for an https deployment.
  ...(issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests] } : {}),
});
config[client.customFetch] = withApiKey;

// A DPoP key that never leaves this process: the token is worthless without it.
const dpopKeys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
const DPoP = client.getDPoPHandle(config, dpopKeys);

const token = await client.clientCredentialsGrant(config, { scope: "webhooks:read" }, { DPoP });
console.log(`${token.token_type} token with scope ${token.scope}`);

const me = await client.fetchProtectedResource(config, token.access_token, new URL("/v1/me", KEYWAY_URL), "GET", undefined, undefined, {
  DPoP,
});
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
