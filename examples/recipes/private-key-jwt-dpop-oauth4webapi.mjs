/**
 * Recipe: a DPoP-bound, narrowed access token with oauth4webapi v3, the client authenticated by a
 * JWT signed with its private key (private_key_jwt, RFC 7523; keyway keeps only the public key),
 * then a protected call proving possession of the DPoP key (RFC 9449). Run: KEYWAY_URL=...
 * KEYWAY_API_KEY=... KEYWAY_CLIENT_ID=... KEYWAY_PRIVATE_JWK=client-key.json node
 * private-key-jwt-dpop-oauth4webapi.mjs (needs `npm install oauth4webapi`).
 */
import { readFile } from "node:fs/promises";
import * as oauth from "oauth4webapi";

const { KEYWAY_URL = "http://127.0.0.1:8787", KEYWAY_API_KEY, KEYWAY_CLIENT_ID, KEYWAY_PRIVATE_JWK } = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_PRIVATE_JWK) {
  throw new Error("set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_PRIVATE_JWK (a file holding the client's private EC JWK)");
}

// The client's private key (its public half is registered with the credential).
const jwk = JSON.parse(await readFile(KEYWAY_PRIVATE_JWK, "utf8"));
const clientKey = await crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
const clientAuth = oauth.PrivateKeyJwt({ key: clientKey, kid: jwk.kid });

const issuer = new URL(KEYWAY_URL);
// Local runs serve plain http; an https deployment needs no such option.
const insecure = issuer.protocol === "http:" ? { [oauth.allowInsecureRequests]: true } : {};
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
const client = /** @type {oauth.Client} */ ({ client_id: KEYWAY_CLIENT_ID });
const headers = new Headers({ "x-api-key": KEYWAY_API_KEY });

// A DPoP key that never leaves this process: the token is worthless without it.
const dpopKeys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
const DPoP = oauth.DPoP(client, dpopKeys);

const scope = new URLSearchParams({ scope: "webhooks:read" });
const response = await oauth.clientCredentialsGrantRequest(as, client, clientAuth, scope, { headers, DPoP, ...insecure });
const token = await oauth.processClientCredentialsResponse(as, client, response);
console.log(`${token.token_type} token with scope ${token.scope}`);

const me = await oauth.protectedResourceRequest(token.access_token, "GET", new URL("/v1/me", KEYWAY_URL), headers, null, {
  DPoP,
  ...insecure,
});
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
