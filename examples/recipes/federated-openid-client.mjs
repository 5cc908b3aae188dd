import { readFile } from "node:fs/promises";
import * as client from "openid-client";

const { KEYWAY_URL = "http://127.0.0.1:8787", KEYWAY_API_KEY, KEYWAY_CLIENT_ID, KEYWAY_WORKLOAD_TOKEN_FILE } = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_WORKLOAD_TOKEN_FILE) {
  throw new Error("set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_WORKLOAD_TOKEN_FILE (a file holding the workload's JWT)");
}

// The JWT the workload's platform gave it. A long-running client reads the file anew before each
// token request: the platform replaces it before the JWT expires.
const workloadJwt = (await readFile(KEYWAY_WORKLOAD_TOKEN_FILE, "utf8")).trim();

// The client authenticates with that JWT (RFC 7523 2.2).
/** @type {import("openid-client").ClientAuth} */
const workloadIdentity = (_as, metadata, body) => {
  body.set("client_id", metadata.client_id);
  body.set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
  body.set("client_assertion", workloadJwt);
};

/** @type {import("openid-client").CustomFetch} */
const withApiKey = (url, options) => {
  const headers = new Headers(options.headers);
  headers.set("x-api-key", KEYWAY_API_KEY);
  return fetch(url, { ...options, headers });
};

const issuer = new URL(KEYWAY_URL);
const config = await client.discovery(issuer, KEYWAY_CLIENT_ID, undefined, workloadIdentity, {
  algorithm: "oauth2",
  // Local runs serve plain http; drop this line for an https deployment.
  ...(issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests] } : {}),
});
config[client.customFetch] = withApiKey;

const token = await client.clientCredentialsGrant(config);
console.log(`${token.token_type} token, expires in ${token.expires_in} s`);

const me = await client.fetchProtectedResource(config, token.access_token, new URL("/v1/me", KEYWAY_URL), "GET");
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
