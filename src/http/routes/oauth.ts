/**
 * The token endpoints and the token's lifecycle. POST /v1/oauth is spec 4.1 (JSON, enveloped
 * answer); POST /v1/oauth/token is the same grant with plain RFC 6749 bodies for off-the-shelf
 * OAuth clients; POST /v1/oauth/revoke (RFC 7009) and POST /v1/oauth/introspect (RFC 7662) serve
 * the organization's own clients. All accept JSON or form bodies, and client_secret_post,
 * client_secret_basic or private_key_jwt authentication (auth/client-auth.ts); the token
 * endpoints also a DPoP proof (RFC 9449), which binds the token to its key.
 */
import type { Context } from "hono";
import * as z from "zod";
import type { PresentedClientRequest } from "../../auth/client-auth";
import { API_KEY_HEADER } from "../../auth/gate";
import { introspectAccessToken, revokeAccessToken } from "../../auth/token-lifecycle";
import { issueAccessToken } from "../../auth/tokens";
import { loadConfig } from "../../config";
import { ApiError } from "../../errors";
import { accessTokenKeys } from "../../lib/token-keys";
import { Jwks } from "../../schemas/jose";
import { IntrospectionResponse, PlainTokenResponse, TokenAdminRequest, TokenData, TokenRequest } from "../../schemas/oauth";
import { parseBasicCredentials, readFields } from "../body";
import { type AppEnv, keywayOrigin } from "../context";
import { ACCESS_TOKEN, TOKEN, TOKEN_REQUEST } from "../examples";

/** An example of a published key (a real one's members are longer). */
const ACCESS_TOKEN_JWK = {
  kty: "EC" as const,
  crv: "P-256",
  x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
  y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
  kid: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
  alg: "ES256",
  use: "sig" as const,
};

import { envelopeRoute, type Route, rawRoute } from "../route";

/** Token requests are small; 16 KiB leaves room for long ids and client assertions without inviting abuse. */
const MAX_TOKEN_REQUEST_BYTES = 16 * 1024;
/** RFC 6749 5.1: token responses are never cached (RFC 7662 4: nor introspection answers). */
const TOKEN_HEADERS = { "Cache-Control": "no-store", Pragma: "no-cache" };
const body = { schema: TokenRequest, example: TOKEN_REQUEST, form: true } as const;
const adminBody = {
  schema: TokenAdminRequest,
  example: { token: ACCESS_TOKEN, client_id: TOKEN_REQUEST.client_id, client_secret: TOKEN_REQUEST.client_secret },
  form: true,
} as const;
const CLIENT_AUTH =
  "The client authenticates with `client_id` and `client_secret` in the body or with HTTP Basic, or with a client assertion (`private_key_jwt`: `client_assertion_type` `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` and `client_assertion`, signed by a registered key, `iss` = `sub` = client_id, `aud` the issuer or this endpoint's URL, `exp` at most 300 s ahead, `jti` used once; keys registered as `jwks` or published at the credential's `jwks_uri`), or a federated workload's JWT (`federated_jwt`: the same `client_assertion_type`, `client_assertion` the JWT its trusted issuer signed with `iss` the issuer, `sub` the credential's subject, `aud` the issuer or this endpoint's URL, and `client_id` in the body). The credential must belong to the API key's organization.";
const DPOP =
  "With a `DPoP` header holding a valid proof (RFC 9449: `typ` dpop+jwt, `htm` POST, `htu` this URL, `iat` within 60 s, a fresh `jti`) the token is DPoP-bound: `token_type` is `DPoP`, and it works only as `Authorization: DPoP <token>` with a proof of the same key, with the API key it was issued with. `scope` narrows the token (unknown or disallowed: 400 `invalid_scope`).";

/** Where keyway publishes the public keys of its JWT access tokens (RFC 8414 `jwks_uri`). */
export const JWKS_PATH = "/.well-known/jwks.json";
/**
 * How long a resource server may cache the key set: a new key is published (the keyring's step 1,
 * docs/deploy.md) at least this long before it signs, so that no cached copy meets a token it cannot verify.
 */
export const JWKS_MAX_AGE_S = 300;

export const oauthRoutes: Route[] = [
  rawRoute({
    method: "GET",
    path: JWKS_PATH,
    operationId: "getAccessTokenKeySet",
    summary: "The public keys of keyway's JWT access tokens (JWK Set)",
    description: `The ES256 keys that sign the RFC 9068 access tokens of credentials with \`access_token_strategy: "jwt"\`, each named by its RFC 7638 thumbprint (\`kid\`). During a rotation it lists the key that signs and the ones whose tokens may still be live. Cacheable for ${JWKS_MAX_AGE_S} s; no API key needed.`,
    tag: "Access tokens",
    auth: "none",
    response: { schema: Jwks, example: { keys: [ACCESS_TOKEN_JWK] } },
    wire: "json",
    errors: [503],
    reply: async (c) => {
      // A service route: no deps middleware runs before it (no API key, no clock), only the config.
      const keys = await accessTokenKeys(loadConfig(c.env).signingKeys);
      return c.json({ keys: keys.map((key) => key.publicJwk) }, 200, { "Cache-Control": `public, max-age=${JWKS_MAX_AGE_S}` });
    },
  }),
  envelopeRoute({
    method: "POST",
    path: "/v1/oauth",
    operationId: "issueAccessToken",
    summary: "Exchange client credentials for an access token",
    description: `Spec 4.1. JSON or form body. ${CLIENT_AUTH} ${DPOP}`,
    tag: "Access tokens",
    auth: "apiKey",
    body,
    prebuilt: true,
    response: { schema: TokenData, example: TOKEN },
    headers: TOKEN_HEADERS,
    handle: tokenFor,
  }),
  rawRoute({
    method: "POST",
    path: "/v1/oauth/token",
    operationId: "issueAccessTokenPlain",
    summary: "Token endpoint with plain RFC 6749 bodies",
    description: `The same grant as \`POST /v1/oauth\` for off-the-shelf OAuth clients: the answer is the RFC 6749 5.1 body, errors the RFC 6749 5.2 body, no envelope. Advertised by \`/.well-known/oauth-authorization-server\`. ${CLIENT_AUTH} ${DPOP}`,
    tag: "Access tokens",
    auth: "apiKey",
    body,
    response: {
      schema: PlainTokenResponse,
      example: { access_token: ACCESS_TOKEN, token_type: "Bearer", expires_in: 3600, scope: TOKEN.scope },
    },
    wire: "json",
    errorStyle: "oauth",
    reply: async (c) => c.json(PlainTokenResponse.parse(await tokenFor(c)), 200, TOKEN_HEADERS),
  }),
  rawRoute({
    method: "POST",
    path: "/v1/oauth/revoke",
    operationId: "revokeAccessToken",
    summary: "Revoke an access token (RFC 7009)",
    description: `The client that owns \`token\` revokes it: it is refused on the very next request, at every location. Any other token (unknown, expired, another client's or organization's) answers 200 too and nothing is revoked. ${CLIENT_AUTH}`,
    tag: "Access tokens",
    auth: "apiKey",
    body: adminBody,
    response: { schema: z.object({}).describe("Empty (RFC 7009 2.2)."), example: {} },
    wire: "json",
    errorStyle: "oauth",
    reply: async (c) => {
      await revokeAccessToken(c.get("deps"), c.req.header(API_KEY_HEADER), await adminContext(c), (a) => c.set("admitted", a));
      return c.json({}, 200, TOKEN_HEADERS);
    },
  }),
  rawRoute({
    method: "POST",
    path: "/v1/oauth/introspect",
    operationId: "introspectAccessToken",
    summary: "Introspect an access token (RFC 7662)",
    description: `For the organization's own services that receive keyway's tokens: a token of the caller's organization that is valid, unexpired and not revoked is \`active\` with its claims (\`client_id\`, \`scope\`, \`token_type\`, \`exp\`, \`iat\`, \`sub\`, \`jti\`, and \`cnf.jkt\` when DPoP-bound); any other is \`{"active": false}\`. ${CLIENT_AUTH}`,
    tag: "Access tokens",
    auth: "apiKey",
    body: adminBody,
    response: {
      schema: IntrospectionResponse,
      example: {
        active: true,
        client_id: TOKEN_REQUEST.client_id,
        scope: TOKEN.scope,
        token_type: "Bearer",
        exp: 1780318800,
        iat: 1780315200,
        sub: "usr_01",
        jti: "tok_01",
      },
    },
    wire: "json",
    errorStyle: "oauth",
    reply: async (c) => {
      const answer = await introspectAccessToken(c.get("deps"), c.req.header(API_KEY_HEADER), await adminContext(c), (a) =>
        c.set("admitted", a),
      );
      return c.json(IntrospectionResponse.parse(answer), 200, TOKEN_HEADERS);
    },
  }),
];

/**
 * The URLs a client assertion's `aud` may name: the issuer (keywayOrigin), a token endpoint, this
 * endpoint, all at the issuer's origin. RFC 7523 3, point 3: the audience must identify this
 * authorization server. With PUBLIC_BASE_URL set, the origin the request's Host header names is
 * not that: the sender chooses it, so an assertion made for a server at another origin would pass.
 * Without it (local development) the request's origin is the issuer, as for the metadata.
 */
function audiencesOf(issuer: string, url: URL): string[] {
  return [...new Set([issuer, `${issuer}/v1/oauth`, `${issuer}/v1/oauth/token`, `${issuer}${url.pathname}`])];
}

/**
 * What the token endpoints read of the request's URL, from one parse of it (each parse is a few
 * microseconds of every token request): the issuer (keywayOrigin), the audiences a client
 * assertion may name, and the URL without query, as DPoP's `htu` names it (RFC 9449 4.3).
 */
function whereOf(c: Context<AppEnv>): { issuer: string; audiences: string[]; url: string } {
  const url = new URL(c.req.url);
  const issuer = keywayOrigin(c, url);
  return { issuer, audiences: audiencesOf(issuer, url), url: `${url.origin}${url.pathname}` };
}

async function tokenFor(c: Context<AppEnv>) {
  const request = await presented(c);
  const { issuer, audiences, url } = whereOf(c);
  return issueAccessToken(
    c.get("deps"),
    c.req.header(API_KEY_HEADER),
    {
      request,
      dpop: c.req.raw.headers.get("dpop"),
      method: c.req.method,
      url,
      audiences,
      issuer,
    },
    (admitted) => c.set("admitted", admitted),
  );
}

async function adminContext(c: Context<AppEnv>) {
  const { issuer, audiences } = whereOf(c);
  return { request: await presented(c), audiences, issuer };
}

/** What the request presents, or the error reading it raised (answered after the API key's refusals). */
async function presented(c: Context<AppEnv>): Promise<PresentedClientRequest | ApiError> {
  try {
    return await presentedClientRequest(c);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return err;
  }
}

/** The body (JSON or form) and HTTP Basic credentials of a request (RFC 6749 2.3.1, 4.4.2). */
async function presentedClientRequest(c: Context<AppEnv>): Promise<PresentedClientRequest> {
  const fields = await readFields(c.req.raw, ["json", "form"], MAX_TOKEN_REQUEST_BYTES);
  const basic = parseBasicCredentials(c.req.header("authorization"));
  if (basic === null) return { params: fields, method: "body" };
  // RFC 6749 2.3: one authentication method per request. A client_id in the body is
  // tolerated (RFC 6749 3.2.1) only if it names the same client.
  if (fields.client_secret !== undefined || fields.client_assertion !== undefined) {
    throw new ApiError("invalid_request", "Send client credentials either in the Authorization header or in the body, not both.");
  }
  if (fields.client_id !== undefined && fields.client_id !== basic.client_id) {
    throw new ApiError("invalid_request", "client_id in the body differs from the one in the Authorization header.");
  }
  return { params: { ...fields, ...basic }, method: "basic" };
}
