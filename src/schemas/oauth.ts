/**
 * The token request of spec section 4.1 (also RFC 6749 section 4.4.2) and the token data
 * returned in the envelope (spec 2.3) or, on /v1/oauth/token, as a plain RFC 6749 5.1 body.
 */
import * as z from "zod";
import { publicNames } from "./common";

const Credential = z.string().min(1, { error: "must not be empty" }).max(512, { error: "must be at most 512 characters" });

export const TokenRequest = z.object({
  grant_type: z.string(),
  client_id: Credential,
  client_secret: Credential,
});
export type TokenRequest = z.output<typeof TokenRequest>;

export const TokenData = z.object({
  access_token: z.string(),
  token_type: z.literal("Bearer"),
  expires_in: z.number().int(),
  refresh_token: z.null(),
});
export type TokenData = z.output<typeof TokenData>;

/** RFC 6749 section 5.1 success body of /v1/oauth/token. */
export const PlainTokenResponse = TokenData.omit({ refresh_token: true });

/** RFC 6749 section 5.2 error body of /v1/oauth/token. */
export const PlainTokenError = z.object({ error: z.string(), error_description: z.string() });

export const MeView = z.object({
  organization_id: z.string(),
  user_id: z.string(),
  client_id: z.string(),
  api_key_id: z.string(),
  token: z.object({ id: z.string(), issued_at: z.iso.datetime(), expires_at: z.iso.datetime(), expires_in: z.number().int() }),
});
export type MeView = z.output<typeof MeView>;

/** RFC 8414 authorization server metadata, as GET /.well-known/oauth-authorization-server serves it. */
export const AuthorizationServerMetadata = z.object({
  issuer: z.url(),
  token_endpoint: z.url(),
  grant_types_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
});

// Public names in the API description (http/openapi.ts).
publicNames.add(TokenRequest, { name: "TokenRequest" });
publicNames.add(TokenData, { name: "TokenData" });
publicNames.add(PlainTokenResponse, { name: "PlainTokenResponse" });
publicNames.add(PlainTokenError, { name: "PlainTokenError" });
publicNames.add(MeView, { name: "MeView" });
publicNames.add(AuthorizationServerMetadata, { name: "AuthorizationServerMetadata" });
