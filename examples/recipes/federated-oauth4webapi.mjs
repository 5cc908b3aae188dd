import { readFile } from "node:fs/promises";
import * as oauth from "oauth4webapi";

const { KEYWAY_URL = "http://127.0.0.1:8787", KEYWAY_API_KEY, KEYWAY_CLIENT_ID, KEYWAY_WORKLOAD_TOKEN_FILE } = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_WORKLOAD_TOKEN_FILE) {
  throw new Error("set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_WORKLOAD_TOKEN_FILE (a file holding the workload's JWT)");
}

const issuer = new URL(KEYWAY_URL);
// Local runs serve plain http; an https deployment needs no such option.
const insecure = issuer.protocol === "http:" ? { [oauth.allowInsecureRequests]: true } : {};
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
const client = /** @type {oauth.Client} */ ({ client_id: KEYWAY_CLIENT_ID });
const headers = new Headers({ "x-api-key": KEYWAY_API_KEY });

// The JWT the workload's platform gave it. A long-running client reads the file anew before each
// token request: the platform replaces it before the JWT expires.
const workloadJwt = (await readFile(KEYWAY_WORKLOAD_TOKEN_FILE, "utf8")).trim();

// The client authenticates with that JWT (RFC 7523 2.2).
/** @type {oauth.ClientAuth} */
const workloadIdentity = (_as, client, body) => {
  body.set("client_id", client.client_id);
  body.set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
  body.set("client_assertion", workloadJwt);
};

const response = await oauth.clientCredentialsGrantRequest(as, client, workloadIdentity, new URLSearchParams(), {
  headers,
  ...insecure,
});
const token = await oauth.processClientCredentialsResponse(as, client, response);
console.log(`${token.token_type} token, expires in ${token.expires_in} s`);

const me = await oauth.protectedResourceRequest(token.access_token, "GET", new URL("/v1/me", KEYWAY_URL), headers, null, insecure);
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
