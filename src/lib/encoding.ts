/**
 * Byte/text encodings shared by the token, secret and id code: base64url (RFC 4648 section 5,
 * unpadded) with a strict decoder that refuses anything a canonical encoder would not produce,
 * hex, and a fatal UTF-8 decoder so malformed client bytes become a 400, not U+FFFD.
 */

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Standard, padded base64 (RFC 4648 section 4), as Standard Webhooks secrets and signatures use. */
export function base64Encode(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function base64UrlEncode(bytes: Uint8Array): string {
  return base64Encode(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Decodes unpadded base64url; returns null for any non-canonical input (RFC 4648 section 3.5). */
export function base64UrlDecode(text: string): Uint8Array | null {
  if (!B64URL.test(text) || text.length % 4 === 1) return null;
  const bytes = decodeBase64(text.replaceAll("-", "+").replaceAll("_", "/"));
  if (bytes === null || base64UrlEncode(bytes) !== text) return null;
  return bytes;
}

/** Decodes standard base64 (with or without padding), as used by HTTP Basic (RFC 7617). */
export function base64Decode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  return decodeBase64(text);
}

function decodeBase64(text: string): Uint8Array | null {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function hex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = "";
  for (const byte of view) out += byte.toString(16).padStart(2, "0");
  return out;
}

const utf8Strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
const utf8 = new TextEncoder();

/** UTF-8 decode that returns null on malformed input instead of substituting U+FFFD. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8Strict.decode(bytes);
  } catch {
    return null;
  }
}

export function encodeUtf8(text: string): Uint8Array {
  return utf8.encode(text);
}
