/**
 * Recipe: introspect (RFC 7662) and revoke (RFC 7009) an access token with oauth4webapi v3, as an
 * organization's own service would: the token is active with its claims, then revoked, then
 * inactive, and refused by the API. Run: KEYWAY_URL=... KEYWAY_API_KEY=... KEYWAY_CLIENT_ID=...
 * KEYWAY_CLIENT_SECRET=... node revoke-introspect-oauth4webapi.mjs (needs `npm install oauth4webapi`).
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
const client = { client_id: KEYWAY_CLIENT_ID };
const clientAuth = oauth.ClientSecretBasic(KEYWAY_CLIENT_SECRET);
const headers = new Headers({ "x-api-key": KEYWAY_API_KEY });
const issued = await oauth.clientCredentialsGrantRequest(as, client, clientAuth, new URLSearchParams(), { headers, ...insecure });
const { access_token: token } = await oauth.processClientCredentialsResponse(as, client, issued);

const before = await oauth.processIntrospectionResponse(
  as,
  client,
  await oauth.introspectionRequest(as, client, clientAuth, token, { headers, ...insecure }),
);
console.log(`active ${before.active}, client ${before.client_id}, scope ${before.scope}`);

await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, token, { headers, ...insecure }));

const after = await oauth.processIntrospectionResponse(
  as,
  client,
  await oauth.introspectionRequest(as, client, clientAuth, token, { headers, ...insecure }),
);
console.log(`active ${after.active}`);

try {
  await oauth.protectedResourceRequest(token, "GET", new URL("/v1/me", KEYWAY_URL), headers, null, insecure);
} catch (err) {
  // oauth4webapi throws on the server's WWW-Authenticate challenge.
  if (!(err instanceof oauth.WWWAuthenticateChallengeError)) throw err;
  console.log(`GET /v1/me refused: ${err.status} ${err.cause[0]?.parameters.error}`);
}
