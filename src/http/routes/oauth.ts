/**
 * The token endpoints. POST /v1/oauth is spec 4.1 (JSON, enveloped answer); POST /v1/oauth/token
 * is the same grant with plain RFC 6749 bodies for off-the-shelf OAuth clients. Both accept JSON
 * or form bodies and client_secret_post or client_secret_basic authentication.
 */
import type { Context, MiddlewareHandler } from "hono";
import { Hono } from "hono";
import { issueAccessToken } from "../../auth/tokens";
import { ApiError } from "../../errors";
import type { TokenData } from "../../schemas/oauth";
import { parseBasicCredentials, readFields } from "../body";
import type { AppEnv } from "../context";
import { respond } from "../envelope";
import { methods } from "../route";

/** Token requests are small; 16 KiB leaves room for long ids without inviting abuse. */
const MAX_TOKEN_REQUEST_BYTES = 16 * 1024;
const TOKEN_HEADERS = { "Cache-Control": "no-store", Pragma: "no-cache" };

export const oauth = new Hono<AppEnv>();

/**
 * Marks the plain endpoint so http/errors.ts answers it with RFC 6749 5.2 bodies; registered in
 * app.ts ahead of the API key check so that check's errors use the same format.
 */
export const plainOAuthErrors: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("errorStyle", "oauth");
  await next();
};

methods(oauth, "/v1/oauth", {
  POST: async (c) => respond(c, await tokenFor(c), { headers: TOKEN_HEADERS }),
});

methods(oauth, "/v1/oauth/token", {
  POST: async (c) => {
    const token = await tokenFor(c);
    return c.json({ access_token: token.access_token, token_type: token.token_type, expires_in: token.expires_in }, 200, TOKEN_HEADERS);
  },
});

async function tokenFor(c: Context<AppEnv>): Promise<TokenData> {
  const fields = await readFields(c.req.raw, ["json", "form"], MAX_TOKEN_REQUEST_BYTES);
  const basic = parseBasicCredentials(c.req.header("authorization"));
  if (basic === null) return issueAccessToken(c.get("deps"), c.get("apiKey"), fields, { method: "body" });

  // RFC 6749 2.3: one authentication method per request. A client_id in the body is
  // tolerated (RFC 6749 3.2.1) only if it names the same client.
  if (fields.client_secret !== undefined) {
    throw new ApiError("invalid_request", "Send client credentials either in the Authorization header or in the body, not both.");
  }
  if (fields.client_id !== undefined && fields.client_id !== basic.client_id) {
    throw new ApiError("invalid_request", "client_id in the body differs from the one in the Authorization header.");
  }
  return issueAccessToken(c.get("deps"), c.get("apiKey"), { ...fields, ...basic }, { method: "basic" });
}
