/**
 * The token endpoints. POST /v1/oauth is spec 4.1 (JSON, enveloped answer); POST /v1/oauth/token
 * is the same grant with plain RFC 6749 bodies for off-the-shelf OAuth clients. Both accept JSON
 * or form bodies and client_secret_post or client_secret_basic authentication.
 */
import type { Context } from "hono";
import { API_KEY_HEADER } from "../../auth/gate";
import { issueAccessToken, type PresentedTokenRequest } from "../../auth/tokens";
import { ApiError } from "../../errors";
import { PlainTokenResponse, TokenData, TokenRequest } from "../../schemas/oauth";
import { parseBasicCredentials, readFields } from "../body";
import type { AppEnv } from "../context";
import { ACCESS_TOKEN, TOKEN, TOKEN_REQUEST } from "../examples";
import { envelopeRoute, type Route, rawRoute } from "../route";

/** Token requests are small; 16 KiB leaves room for long ids without inviting abuse. */
const MAX_TOKEN_REQUEST_BYTES = 16 * 1024;
/** RFC 6749 5.1: token responses are never cached. */
const TOKEN_HEADERS = { "Cache-Control": "no-store", Pragma: "no-cache" };
const body = { schema: TokenRequest, example: TOKEN_REQUEST, form: true } as const;

export const oauthRoutes: Route[] = [
  envelopeRoute({
    method: "POST",
    path: "/v1/oauth",
    operationId: "issueAccessToken",
    summary: "Exchange client credentials for an access token",
    description:
      "Spec 4.1. JSON or form body; the client authenticates with `client_id` and `client_secret` in the body or with HTTP Basic (not both). The credential must belong to the API key's organization.",
    tag: "Access tokens",
    auth: "apiKey",
    body,
    response: { schema: TokenData, example: TOKEN },
    headers: TOKEN_HEADERS,
    handle: tokenFor,
  }),
  rawRoute({
    method: "POST",
    path: "/v1/oauth/token",
    operationId: "issueAccessTokenPlain",
    summary: "Token endpoint with plain RFC 6749 bodies",
    description:
      "The same grant as `POST /v1/oauth` for off-the-shelf OAuth clients: the answer is the RFC 6749 5.1 body, errors the RFC 6749 5.2 body, no envelope. Advertised by `/.well-known/oauth-authorization-server`.",
    tag: "Access tokens",
    auth: "apiKey",
    body,
    response: { schema: PlainTokenResponse, example: { access_token: ACCESS_TOKEN, token_type: "Bearer", expires_in: 3600 } },
    wire: "json",
    errorStyle: "oauth",
    reply: async (c) => c.json(PlainTokenResponse.parse(await tokenFor(c)), 200, TOKEN_HEADERS),
  }),
];

async function tokenFor(c: Context<AppEnv>) {
  let request: PresentedTokenRequest | ApiError;
  try {
    request = await presentedTokenRequest(c);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    request = err;
  }
  return issueAccessToken(c.get("deps"), c.req.header(API_KEY_HEADER), request, (admitted) => c.set("admitted", admitted));
}

/** The body (JSON or form) and HTTP Basic credentials of a token request (RFC 6749 2.3.1, 4.4.2). */
async function presentedTokenRequest(c: Context<AppEnv>): Promise<PresentedTokenRequest> {
  const fields = await readFields(c.req.raw, ["json", "form"], MAX_TOKEN_REQUEST_BYTES);
  const basic = parseBasicCredentials(c.req.header("authorization"));
  if (basic === null) return { params: fields, method: "body" };
  // RFC 6749 2.3: one authentication method per request. A client_id in the body is
  // tolerated (RFC 6749 3.2.1) only if it names the same client.
  if (fields.client_secret !== undefined) {
    throw new ApiError("invalid_request", "Send client credentials either in the Authorization header or in the body, not both.");
  }
  if (fields.client_id !== undefined && fields.client_id !== basic.client_id) {
    throw new ApiError("invalid_request", "client_id in the body differs from the one in the Authorization header.");
  }
  return { params: { ...fields, ...basic }, method: "basic" };
}
