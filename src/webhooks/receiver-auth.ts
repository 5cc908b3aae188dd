/**
 * What keyway sends a receiver's OAuth server and webhook URL to prove who it is (issue 31): the
 * token request's body and headers for each client authentication method (spec 4.3's form body,
 * `client_secret_post`, unchanged byte for byte; `client_secret_basic`, RFC 6749 2.3.1;
 * `private_key_jwt`, RFC 7523 2.2 with the claims of RFC 7523 3), the optional `scope` (RFC 6749
 * 3.3), `resource` (RFC 8707 2) and `audience` parameters, and DPoP proofs (RFC 9449 4) for the
 * token request and for each webhook (`ath`, section 4.2, binding the proof to the token). Pure
 * apart from signing: the keys come opened (webhooks/receiver-keys.ts), the clock from the caller.
 */
import { SignJWT } from "jose";
import { randomToken } from "../lib/crypto";
import { base64UrlEncode, encodeUtf8 } from "../lib/encoding";
import type { ReceiverOAuth } from "../schemas/webhooks";
import type { OpenedKey } from "./receiver-keys";

/** RFC 7523 2.2. */
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** An assertion lives one minute: long enough for the request, short enough to be useless later. */
const ASSERTION_LIFETIME_S = 60;

/** What the token request carries besides its URL: the form, and an Authorization header for Basic. */
export interface TokenRequestParts {
  form: string;
  authorization: string | null;
}

/** RFC 6749 2.3.1: the client id and secret are form-urlencoded (Appendix B) before Basic's base64. */
const formEncode = (value: string): string => new URLSearchParams({ v: value }).toString().slice(2);

/**
 * The token request. Without any of issue 31's settings it is exactly spec 4.3's form:
 * `client_id`, `client_secret`, `grant_type=client_credentials`, in that order.
 */
export async function tokenRequest(
  o: ReceiverOAuth,
  clientSecret: string,
  assertionKey: (OpenedKey & { kid: string }) | null,
  nowMs: number,
): Promise<TokenRequestParts> {
  const form = new URLSearchParams();
  let authorization: string | null = null;
  if (o.auth_method === "client_secret_post") {
    form.append("client_id", o.client_id);
    form.append("client_secret", clientSecret);
    form.append("grant_type", "client_credentials");
  } else if (o.auth_method === "client_secret_basic") {
    authorization = `Basic ${btoa(`${formEncode(o.client_id)}:${formEncode(clientSecret)}`)}`;
    form.append("grant_type", "client_credentials");
  } else {
    if (assertionKey === null) throw new Error("private_key_jwt without the organization's assertion key");
    form.append("grant_type", "client_credentials");
    form.append("client_id", o.client_id);
    form.append("client_assertion_type", CLIENT_ASSERTION_TYPE);
    form.append("client_assertion", await clientAssertion(assertionKey, o.client_id, o.assertion_audience ?? o.token_url, nowMs));
  }
  if (o.scope !== null) form.append("scope", o.scope);
  for (const resource of o.resource ?? []) form.append("resource", resource);
  if (o.audience !== null) form.append("audience", o.audience);
  return { form: form.toString(), authorization };
}

/** RFC 7523 3: `iss` = `sub` = the client id, `aud` the token endpoint (or issuer), a fresh `jti`, a short `exp`. */
export function clientAssertion(key: OpenedKey & { kid: string }, clientId: string, audience: string, nowMs: number): Promise<string> {
  const iat = Math.floor(nowMs / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "JWT" })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(audience)
    .setJti(randomToken(16))
    .setIssuedAt(iat)
    .setExpirationTime(iat + ASSERTION_LIFETIME_S)
    .sign(key.key);
}

/** RFC 9449 4.2: `htu` is the target URI without its query and fragment. */
export function htuOf(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

/**
 * A DPoP proof (RFC 9449 4.2) for one request: `typ` dpop+jwt, the public key in the header, a new
 * `jti`, `htm`, `htu`, `iat`, the server's `nonce` when it asked for one (sections 8 and 9), and
 * `ath` (the access token's SHA-256, base64url) when the request carries a token.
 */
export async function dpopProof(
  key: OpenedKey,
  htm: string,
  url: string,
  nowMs: number,
  extra: { nonce?: string | null; accessToken?: string } = {},
): Promise<string> {
  const claims: Record<string, unknown> = { htm, htu: htuOf(url) };
  if (extra.nonce) claims.nonce = extra.nonce;
  if (extra.accessToken !== undefined) {
    const digest = await crypto.subtle.digest("SHA-256", encodeUtf8(extra.accessToken));
    claims.ath = base64UrlEncode(new Uint8Array(digest));
  }
  return new SignJWT(claims)
    .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk })
    .setJti(randomToken(16))
    .setIssuedAt(Math.floor(nowMs / 1000))
    .sign(key.key);
}

/**
 * The nonce a server asks for (RFC 9449 8, 9): the `DPoP-Nonce` header of a 400 `use_dpop_nonce`
 * token answer or a 401 whose `WWW-Authenticate` names `use_dpop_nonce`; null otherwise. Only a
 * value of the header's grammar (visible ASCII, section 8.1) is taken.
 */
export function nonceAsked(status: number, headers: Headers, tokenError: string | null): string | null {
  const nonce = headers.get("dpop-nonce");
  if (nonce === null || !/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/.test(nonce)) return null;
  if (status === 400 && tokenError === "use_dpop_nonce") return nonce;
  if (status === 401 && /use_dpop_nonce/.test(headers.get("www-authenticate") ?? "")) return nonce;
  return null;
}
