/**
 * The token request of spec section 4.1 (also RFC 6749 section 4.4.2) and the token data
 * returned in the envelope (spec 2.3) or, on /v1/oauth/token, as a plain RFC 6749 5.1 body.
 */
import * as z from "zod";
import { publicNames } from "./common";

const Credential = z.string().min(1, { error: "must not be empty" }).max(512, { error: "must be at most 512 characters" });

/**
 * The client authenticates with `client_id` and `client_secret` (here or with HTTP Basic), or
 * with a client assertion (private_key_jwt, RFC 7523 2.2): `client_assertion_type`
 * `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` and the signed JWT.
 */
export const TokenRequest = z.object({
  grant_type: z.string(),
  client_id: Credential.optional(),
  client_secret: Credential.optional(),
  client_assertion_type: z.string().max(128).optional(),
  client_assertion: z.string().min(1).max(8192).optional(),
  scope: z.string().max(512).optional().describe("Space-separated scopes (RFC 6749 3.3); omitted: every scope the credential allows."),
});
export type TokenRequest = z.output<typeof TokenRequest>;

/** A client authenticating with its secret (in the body, or HTTP Basic) names both. */
export const SecretCredentials = z.looseObject({ client_id: Credential, client_secret: Credential });

export const TokenData = z.object({
  access_token: z.string(),
  /** "DPoP" when the request carried a DPoP proof (RFC 9449 5): the token is bound to its key. */
  token_type: z.enum(["Bearer", "DPoP"]),
  expires_in: z.number().int(),
  refresh_token: z.null(),
  /** The granted scopes, space-separated (RFC 6749 5.1). */
  scope: z.string(),
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
  token: z.object({
    id: z.string(),
    issued_at: z.iso.datetime(),
    expires_at: z.iso.datetime(),
    expires_in: z.number().int(),
    /** `jwt` for an RFC 9068 token (a credential with `access_token_strategy: "jwt"`, issue 44), else `opaque`. */
    format: z.enum(["opaque", "jwt"]),
  }),
});
export type MeView = z.output<typeof MeView>;

/** RFC 7009 2.1 and RFC 7662 2.1: the token to revoke or introspect, and the client's authentication. */
export const TokenAdminRequest = z.object({
  token: z.string().min(1).max(2048),
  token_type_hint: z.string().max(64).optional().describe("Ignored: keyway issues access tokens only."),
  client_id: Credential.optional(),
  client_secret: Credential.optional(),
  client_assertion_type: z.string().max(128).optional(),
  client_assertion: z.string().min(1).max(8192).optional(),
});

/** RFC 7662 2.2: an active token's claims, or only `active: false`. */
export const IntrospectionResponse = z.object({
  active: z.boolean(),
  client_id: z.string().optional(),
  scope: z.string().optional(),
  token_type: z.enum(["Bearer", "DPoP"]).optional(),
  exp: z.number().int().optional(),
  iat: z.number().int().optional(),
  sub: z.string().optional(),
  jti: z.string().optional(),
  /** RFC 9449 6.2: the key a DPoP-bound token is bound to. */
  cnf: z.object({ jkt: z.string() }).optional(),
});
export type IntrospectionResponse = z.output<typeof IntrospectionResponse>;

/** RFC 8414 authorization server metadata, as GET /.well-known/oauth-authorization-server serves it. */
export const AuthorizationServerMetadata = z.object({
  issuer: z.url(),
  token_endpoint: z.url(),
  /** RFC 8414 2: the key set of keyway's JWT access tokens (issue 44). */
  jwks_uri: z.url(),
  grant_types_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  token_endpoint_auth_signing_alg_values_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  dpop_signing_alg_values_supported: z.array(z.string()),
  revocation_endpoint: z.url(),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  revocation_endpoint_auth_signing_alg_values_supported: z.array(z.string()),
  introspection_endpoint: z.url(),
  introspection_endpoint_auth_methods_supported: z.array(z.string()),
  introspection_endpoint_auth_signing_alg_values_supported: z.array(z.string()),
});

// Public names in the API description (http/openapi.ts).
export type AuthorizationServerMetadata = z.output<typeof AuthorizationServerMetadata>;

publicNames.add(TokenRequest, { name: "TokenRequest" });
publicNames.add(TokenData, { name: "TokenData" });
publicNames.add(PlainTokenResponse, { name: "PlainTokenResponse" });
publicNames.add(PlainTokenError, { name: "PlainTokenError" });
publicNames.add(MeView, { name: "MeView" });
publicNames.add(AuthorizationServerMetadata, { name: "AuthorizationServerMetadata" });
publicNames.add(TokenAdminRequest, { name: "TokenAdminRequest" });
publicNames.add(IntrospectionResponse, { name: "IntrospectionResponse" });

/**
 * RFC 9728 section 2 protected resource metadata, as GET /.well-known/oauth-protected-resource
 * serves it: the /v1 API's resource identifier (the issuer's origin, RFC 9728 3.3), the
 * authorization server that issues its tokens, and how tokens are presented to it.
 */
export const ProtectedResourceMetadata = z.object({
  resource: z.url(),
  authorization_servers: z.array(z.url()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  dpop_signing_alg_values_supported: z.array(z.string()),
  resource_name: z.string(),
  resource_documentation: z.url(),
});
export type ProtectedResourceMetadata = z.output<typeof ProtectedResourceMetadata>;

publicNames.add(ProtectedResourceMetadata, { name: "ProtectedResourceMetadata" });
