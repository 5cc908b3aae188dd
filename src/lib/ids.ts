/**
 * Identifiers and generated secrets, with their prefixes and shapes in one place. Prefixes make
 * secrets recognisable to secret scanners (GitHub-style) and ids self-describing in logs; the
 * patterns let the service reject malformed input before any storage read.
 */
import { randomToken } from "./crypto";
import { base64UrlDecode, base64UrlEncode, hex } from "./encoding";

const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower case

/** `n` random base32 characters (5 bits each). */
function randomChars(n: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(n));
  let out = "";
  // 256 is a multiple of 32, so `byte % 32` keeps every character uniform.
  for (const byte of bytes) out += ID_ALPHABET[byte % 32];
  return out;
}

/** 26 base32 characters (130 random bits): collision-free in practice and URL/KV-key safe. */
const randomId = (prefix: string): string => `${prefix}_${randomChars(26)}`;

export const ID_PATTERN = /^[a-z]{2,4}_[0-9a-hjkmnp-tv-z]{26}$/;

export const newOrganizationId = (): string => randomId("org");
export const newUserId = (): string => randomId("usr");
export const newApiKeyId = (): string => randomId("key");
export const newTokenId = (): string => randomId("tok");
export const newWebhookConfigurationId = (): string => randomId("whk");
export const newEventId = (): string => randomId("evt");
/** A recovery of an endpoint's failed deliveries (issue 30), found at its endpoint's object. */
export const newRecoveryId = (): string => randomId("rcv");
/** How many characters of its configuration's id a delivery id starts with. */
export const DELIVERY_ROUTE_CHARS = 8;
/**
 * Delivery ids double as the Standard Webhooks `webhook-id`, stable across retries. They start
 * with the first DELIVERY_ROUTE_CHARS characters of their configuration id's random part, so the
 * organization finds a delivery's endpoint among its configurations without keeping a row per
 * delivery (objects/webhooks/publishing.ts `locate`); the other 18 characters are random (90 bits).
 */
export const newDeliveryId = (configurationId: string): string =>
  `msg_${routeOf(configurationId)}${randomChars(26 - DELIVERY_ROUTE_CHARS)}`;
/** The routing part of a configuration or delivery id: the first characters after its prefix. */
export const routeOf = (id: string): string => id.slice(id.indexOf("_") + 1, id.indexOf("_") + 1 + DELIVERY_ROUTE_CHARS);
export const newAdminTokenId = (): string => randomId("oat");
/** A trusted issuer of an organization (issue 44). */
export const newTrustedIssuerId = (): string => randomId("iss");

/** client_id is not a secret (RFC 6749 section 2.2) but is unguessable all the same. */
export const newClientId = (): string => `kw_client_${randomToken(16)}`;
export const CLIENT_ID_PATTERN = /^kw_client_[A-Za-z0-9_-]{22}$/;

/** Secrets: 256 random bits behind a scanner-friendly prefix; only their SHA-256 is stored. */
export const newApiKeySecret = (): string => `kw_live_ak_${randomToken(32)}`;
/**
 * A secret issued by rotating an API key (issue 29). The key keeps its Durable Object, which is
 * named by the hash of the key's first secret; so a rotated secret carries that object's id (its
 * 32 bytes as 43 base64url characters) after a dot, and the edge finds the object from the secret
 * alone, as it does from a first secret's hash. The id is no secret: the object accepts a request
 * only if the hash of the whole secret is one it holds (objects/key.ts).
 */
export const newRotatedApiKeySecret = (objectIdHex: string): string =>
  `${newApiKeySecret()}.${base64UrlEncode(Uint8Array.fromHex(objectIdHex))}`;
export const API_KEY_PATTERN = /^kw_live_ak_[A-Za-z0-9_-]{43}(?:\.[A-Za-z0-9_-]{43})?$/;
/** The object id (hex) a rotated secret carries, or null for a first secret (its hash names its object). */
export function apiKeyObjectId(secret: string): string | null {
  const dot = secret.indexOf(".");
  if (dot < 0) return null;
  const bytes = base64UrlDecode(secret.slice(dot + 1));
  return bytes === null ? null : hex(bytes);
}
/** The last characters of a secret's random part: enough to recognise it, useless to an attacker. */
export const apiKeyHint = (secret: string): string => secret.slice("kw_live_ak_".length, "kw_live_ak_".length + 43).slice(-4);
export const newClientSecret = (): string => `kw_live_cs_${randomToken(32)}`;
