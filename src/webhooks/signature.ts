/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/, "Signature scheme" and
 * "Asymmetric signatures"). Both schemes sign `${webhook-id}.${webhook-timestamp}.${body}`:
 * - `v1`: the secret is `whsec_` + base64 of 32 random bytes; the signature is `v1,` + base64 of
 *   HMAC-SHA256(secret bytes, content);
 * - `v1a` (issue 45): an Ed25519 key pair; keyway keeps `whsk_` + base64 of the 32-byte seed and the
 *   32-byte public key (libsodium's 64-byte secret key layout) sealed, and shows only `whpk_` +
 *   base64 of the 32-byte public key; the signature is `v1a,` + base64 of the 64-byte Ed25519
 *   signature (RFC 8032 5.1.6) of the content.
 * The header carries one signature per live key, space-separated, whatever each one's scheme, so
 * receivers accept either during a rotation, a change of scheme included. The secret's prefix names
 * its scheme, so a rotation's old and new keys need no other marker.
 */
import { base64Decode, base64Encode, base64UrlEncode, encodeUtf8 } from "../lib/encoding";
import type { SignatureScheme } from "../schemas/webhooks";

export const SIGNING_SECRET_PREFIX = "whsec_";
export const SIGNING_PRIVATE_KEY_PREFIX = "whsk_";
export const SIGNING_PUBLIC_KEY_PREFIX = "whpk_";

export function newSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${base64Encode(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/** A new key of a scheme: the secret keyway keeps (sealed by the caller) and, for v1a, the public key it shows. */
export async function newSigningKey(scheme: SignatureScheme): Promise<{ secret: string; publicKey: string | null }> {
  if (scheme === "v1") return { secret: newSigningSecret(), publicKey: null };
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  const seed = base64UrlBytes(jwk.d);
  const pub = base64UrlBytes(jwk.x);
  if (seed === null || pub === null || seed.byteLength !== 32 || pub.byteLength !== 32) throw new Error("Ed25519 key export failed");
  const both = new Uint8Array(64);
  both.set(seed, 0);
  both.set(pub, 32);
  return { secret: `${SIGNING_PRIVATE_KEY_PREFIX}${base64Encode(both)}`, publicKey: `${SIGNING_PUBLIC_KEY_PREFIX}${base64Encode(pub)}` };
}

function base64UrlBytes(text: string | undefined): Uint8Array | null {
  if (text === undefined) return null;
  return base64Decode(
    text
      .replaceAll("-", "+")
      .replaceAll("_", "/")
      .padEnd(Math.ceil(text.length / 4) * 4, "="),
  );
}

async function sign(secret: string, content: string): Promise<string> {
  // Imported per call, not cached: one key per configuration would grow the isolate's cache
  // without bound, and the consumer signs once per delivery attempt.
  if (secret.startsWith(SIGNING_PRIVATE_KEY_PREFIX)) {
    const raw = base64Decode(secret.slice(SIGNING_PRIVATE_KEY_PREFIX.length));
    if (raw === null || raw.byteLength !== 64) throw new Error("malformed v1a signing key");
    const jwk = { kty: "OKP", crv: "Ed25519", d: base64UrlEncode(raw.subarray(0, 32)), x: base64UrlEncode(raw.subarray(32)) };
    const key = await crypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["sign"]);
    const signature = await crypto.subtle.sign({ name: "Ed25519" }, key, encodeUtf8(content));
    return `v1a,${base64Encode(new Uint8Array(signature))}`;
  }
  const raw = base64Decode(secret.slice(SIGNING_SECRET_PREFIX.length));
  if (!secret.startsWith(SIGNING_SECRET_PREFIX) || raw === null) throw new Error("malformed signing secret");
  const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, encodeUtf8(content));
  return `v1,${base64Encode(new Uint8Array(mac))}`;
}

/** The `webhook-signature` header value for a message, signed with every live key. */
export async function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): Promise<string> {
  const content = `${id}.${timestamp}.${body}`;
  return (await Promise.all(secrets.map((s) => sign(s, content)))).join(" ");
}
