/**
 * Encryption at rest for third-party secrets (a receiver's OAuth client_secret, our webhook
 * signing secrets): AES-256-GCM with a fresh random 96-bit IV per value (NIST SP 800-38D 8.2.2)
 * and additional authenticated data binding the ciphertext to its owner, so a value copied onto
 * another record fails to decrypt. The key id travels with the value, so keys rotate.
 */
import { derived } from "./cache";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "./encoding";
import type { VersionedKey } from "./keyring";

/** Stored form: `{kid, iv, ct}` with iv and ct (ciphertext + 128-bit tag) base64url. */
export interface SealedValue {
  kid: string;
  iv: string;
  ct: string;
}

/** Imported once per key: keyed by the key bytes' identity (config.ts parses keyrings once per isolate). */
const aesKey = derived((raw: Uint8Array) => crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]));

export async function seal(keys: VersionedKey[], plaintext: string, aad: string): Promise<SealedValue> {
  const key = keys[0];
  if (key === undefined) throw new Error("no encryption key configured");
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encodeUtf8(aad) },
    await aesKey(key.raw),
    encodeUtf8(plaintext),
  );
  return { kid: key.kid, iv: base64UrlEncode(iv), ct: base64UrlEncode(new Uint8Array(ct)) };
}

/** Decrypts; throws if the key is gone, or the value or its AAD was tampered with. */
export async function open(keys: VersionedKey[], sealed: SealedValue, aad: string): Promise<string> {
  const key = keys.find((k) => k.kid === sealed.kid);
  const iv = base64UrlDecode(sealed.iv);
  const ct = base64UrlDecode(sealed.ct);
  if (key === undefined || iv === null || ct === null) throw new Error(`cannot decrypt a value sealed with key ${sealed.kid}`);
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv, additionalData: encodeUtf8(aad) }, await aesKey(key.raw), ct);
  const text = decodeUtf8(new Uint8Array(plain));
  if (text === null) throw new Error("decrypted value is not UTF-8");
  return text;
}
