import { createRemoteJWKSet, jwtVerify } from "jose";
import * as oauth from "oauth4webapi";

const {
  KEYWAY_URL = "http://127.0.0.1:8787",
  KEYWAY_API_KEY,
  KEYWAY_CLIENT_ID,
  KEYWAY_CLIENT_SECRET,
  KEYWAY_ORGANIZATION_ID,
} = process.env;
if (!KEYWAY_API_KEY || !KEYWAY_CLIENT_ID || !KEYWAY_CLIENT_SECRET || !KEYWAY_ORGANIZATION_ID) {
  throw new Error(
    'set KEYWAY_API_KEY, KEYWAY_CLIENT_ID and KEYWAY_CLIENT_SECRET (of a credential with access_token_strategy "jwt") and KEYWAY_ORGANIZATION_ID (the resource server\'s organization)',
  );
}

const issuer = new URL(KEYWAY_URL);
// Local runs serve plain http; an https deployment needs no such option.
const insecure = issuer.protocol === "http:" ? { [oauth.allowInsecureRequests]: true } : {};
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
const client = { client_id: KEYWAY_CLIENT_ID };
const headers = new Headers({ "x-api-key": KEYWAY_API_KEY });

// The client: a token, as with any credential.
const response = await oauth.clientCredentialsGrantRequest(
  as,
  client,
  oauth.ClientSecretBasic(KEYWAY_CLIENT_SECRET),
  new URLSearchParams(),
  {
    headers,
    ...insecure,
  },
);
const { access_token: token } = await oauth.processClientCredentialsResponse(as, client, response);

// A resource server that is not keyway checks the token offline, with keyway's published keys
// (found through the metadata's jwks_uri; jose caches them and refetches on an unknown kid).
if (typeof as.jwks_uri !== "string") throw new Error("keyway's metadata names no jwks_uri");
const keyway = createRemoteJWKSet(new URL(as.jwks_uri));
const { payload } = await jwtVerify(token, keyway, {
  issuer: as.issuer,
  // Every organization's tokens come from this issuer and key set: the audience names this
  // resource server's organization, so another organization's token is refused here.
  audience: `urn:keyway:org:${KEYWAY_ORGANIZATION_ID}`,
  typ: "at+jwt",
  algorithms: ["ES256"],
});
console.log(`verified: sub ${payload.sub}, client_id ${payload.client_id}, scope ${payload.scope}`);

// keyway's own API takes the same token (and refuses it on the request after its revocation).
const me = await oauth.protectedResourceRequest(token, "GET", new URL("/v1/me", KEYWAY_URL), headers, null, insecure);
const body = /** @type {{ data: unknown }} */ (await me.json());
console.log(JSON.stringify(body.data));
