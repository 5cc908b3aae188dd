/**
 * Byte/text encodings shared by the token, secret and id code: base64url (RFC 4648 section 5,
 * unpadded) with a strict decoder that refuses anything a canonical encoder would not produce,
 * hex, and a fatal UTF-8 decoder so malformed client bytes become a 400, not U+FFFD.
 */

const B64URL = /^[A-Za-z0-9_-]*$/;

// The codecs are the runtime's native Uint8Array methods (ES2026): the JavaScript loops they
// replace were a measurable share of each bearer-authenticated request (see bench/).

/** Standard, padded base64 (RFC 4648 section 4), as Standard Webhooks secrets and signatures use. */
export function base64Encode(bytes: Uint8Array): string {
  return bytes.toBase64();
}

export function base64UrlEncode(bytes: Uint8Array): string {
  return bytes.toBase64({ alphabet: "base64url", omitPadding: true });
}

/** Decodes unpadded base64url; returns null for any non-canonical input (RFC 4648 section 3.5). */
export function base64UrlDecode(text: string): Uint8Array | null {
  if (!B64URL.test(text) || text.length % 4 === 1) return null;
  const bytes = decodeBase64(text, "base64url");
  // Re-encoding catches non-zero trailing bits, which the decoder ignores.
  if (bytes === null || base64UrlEncode(bytes) !== text) return null;
  return bytes;
}

/** Decodes standard base64 (with or without padding), as used by HTTP Basic (RFC 7617). */
export function base64Decode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  return decodeBase64(text, "base64");
}

function decodeBase64(text: string, alphabet: "base64" | "base64url"): Uint8Array | null {
  try {
    return Uint8Array.fromBase64(text, { alphabet });
  } catch {
    return null;
  }
}

export function hex(bytes: ArrayBuffer | Uint8Array): string {
  return (bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)).toHex();
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
