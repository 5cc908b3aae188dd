/**
 * Recipe: an access token from keyway with oauth4webapi v3, then a protected call with it.
 * Discovery reads keyway's RFC 8414 metadata (`algorithm: "oauth2"`); the token request is a
 * form-encoded client-credentials grant with HTTP Basic client authentication, plus the
 * `x-api-key` header every keyway request needs. Run: KEYWAY_URL=... KEYWAY_API_KEY=...
 * KEYWAY_CLIENT_ID=... KEYWAY_CLIENT_SECRET=... node token-oauth4webapi.mjs (needs
 * `npm install oauth4webapi`).
 */
import * as oauth from "oauth4webapi";

const { KEYWAY_URL = "http://127.0.0.1:8787", KEYWAY_API_KEY, KEYWAY_CLIENT_ID, KEYWAY_CLIENT_SECRET } = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_CLIENT_SECRET) {
  throw new Error("set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_CLIENT_SECRET");
}

const issuer = new URL(KEYWAY_URL);
// Local runs serve plain http; an https deployment needs no such option.
const insecure = issuer.protocol === "http:" ? { [oauth.allowInsecureRequests]: true } : {};

const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
/** @type {oauth.Client} */
const client = { client_id: KEYWAY_CLIENT_ID };
const response = await oauth.clientCredentialsGrantRequest(
  as,
  client,
  oauth.ClientSecretBasic(KEYWAY_CLIENT_SECRET),
  new URLSearchParams(),
  {
    headers: { "x-api-key": KEYWAY_API_KEY },
    ...insecure,
  },
);
const token = await oauth.processClientCredentialsResponse(as, client, response);
console.log(`access token expires in ${token.expires_in} s`);

const me = await oauth.protectedResourceRequest(
  token.access_token,
  "GET",
  new URL("/v1/me", KEYWAY_URL),
  new Headers({ "x-api-key": KEYWAY_API_KEY }),
  null,
  insecure,
);
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
