/**
 * Cryptographic primitives used across the service, all on Web Crypto: 256-bit random secrets,
 * SHA-256 hashing of stored secrets, constant-time comparison, and HMAC keys imported once per
 * isolate (importKey is the costly part of an HMAC on the hot path).
 */
import { derived } from "./cache";
import { base64UrlEncode, encodeUtf8, hex } from "./encoding";

/** 32 random bytes (256 bits) from the CSPRNG, base64url-encoded (43 characters). */
export function randomToken(bytes = 32): string {
  return base64UrlEncode(crypto.getRandomValues(new Uint8Array(bytes)));
}

export async function sha256Hex(text: string): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", encodeUtf8(text)));
}

/**
 * Compares two strings in time independent of where they differ. Both sides are hashed first so
 * the comparison is also independent of their lengths.
 */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [ha, hb] = await Promise.all([crypto.subtle.digest("SHA-256", encodeUtf8(a)), crypto.subtle.digest("SHA-256", encodeUtf8(b))]);
  return crypto.subtle.timingSafeEqual(ha, hb);
}

/**
 * A SHA-256 (hex) no secret has: what a presented secret's hash is compared with when there is no
 * credential to compare it with, so that an unknown client_id costs the comparison a known one does.
 */
export const NO_SECRET_HASH = "0".repeat(64);

/** Constant-time equality of two equal-length hex digests (e.g. stored vs computed hashes). */
export function digestsEqual(a: string, b: string): boolean {
  const ea = encodeUtf8(a);
  const eb = encodeUtf8(b);
  if (ea.byteLength !== eb.byteLength) return false;
  return crypto.subtle.timingSafeEqual(ea, eb);
}

/**
 * HMAC-SHA256 key for raw key bytes, imported once per isolate and reused: keyed by the bytes'
 * identity, since config keyrings are parsed once per isolate (config.ts).
 */
export const hmacKey = derived((raw: Uint8Array) =>
  crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]),
);
