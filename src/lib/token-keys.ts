/**
 * keyway's own asymmetric keys for RFC 9068 JWT access tokens (issue 44): one ES256 (P-256) key
 * pair per entry of the TOKEN_SIGNING_KEYS keyring, derived from that entry's secret with HKDF
 * (RFC 5869; salt and info below), so that every isolate at every location holds the same pair
 * without a new secret, a storage read or a call. The keyring's rotation is theirs: the first
 * entry's key signs, every entry's public key is published (`/.well-known/jwks.json`), so the
 * three-step rotation of docs/deploy.md publishes a new key before it signs and keeps the old one
 * published while its tokens live. The `kid` is the public key's RFC 7638 thumbprint: it names
 * the key and reveals nothing of the keyring's entry names.
 *
 * ES256 because every JWT library verifies it (RFC 7518 3.1 lists it Recommended+); the private
 * scalar is the HKDF output read as a big-endian integer, retried with the next counter in the
 * 2^-32 case that it is zero or not below the curve's order (as FIPS 186-5 A.2.2 rejection
 * sampling does), and imported as PKCS #8 (RFC 5915 ECPrivateKey without its optional public
 * key, which WebCrypto computes).
 */
import { calculateJwkThumbprint, type JWK } from "jose";
import { derived } from "./cache";
import { encodeUtf8, hex } from "./encoding";
import type { VersionedKey } from "./keyring";

export const ACCESS_TOKEN_ALG = "ES256";

export interface AccessTokenKey {
  /** RFC 7638 thumbprint of the public key. */
  kid: string;
  /** Non-extractable; signs. */
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** What the key set publishes: `kty`, `crv`, `x`, `y`, `kid`, `alg`, `use`. */
  publicJwk: JWK;
}

/** The order n of P-256 (SEC 2, 2.4.2). */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
/** PKCS #8 PrivateKeyInfo for id-ecPublicKey on prime256v1, up to the 32-byte private key (RFC 5915, RFC 5480). */
const PKCS8_P256_PREFIX = Uint8Array.from([
  0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d,
  0x03, 0x01, 0x07, 0x04, 0x27, 0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20,
]);
const SALT = encodeUtf8("keyway RFC 9068 access token keys");
const EC = { name: "ECDSA", namedCurve: "P-256" } as const;

async function deriveKey(entry: VersionedKey): Promise<AccessTokenKey> {
  const base = await crypto.subtle.importKey("raw", entry.raw, "HKDF", false, ["deriveBits"]);
  for (let counter = 0; ; counter++) {
    const scalar = new Uint8Array(
      await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: SALT, info: encodeUtf8(`ES256 ${counter}`) }, base, 256),
    );
    const d = BigInt(`0x${hex(scalar)}`);
    if (d === 0n || d >= P256_ORDER) continue;
    const der = new Uint8Array(PKCS8_P256_PREFIX.length + scalar.length);
    der.set(PKCS8_P256_PREFIX);
    der.set(scalar, PKCS8_P256_PREFIX.length);
    // Imported once extractable to read the public point, once not for signing.
    const readable = await crypto.subtle.importKey("pkcs8", der, EC, true, ["sign"]);
    const { x, y } = (await crypto.subtle.exportKey("jwk", readable)) as JsonWebKey;
    const point = { kty: "EC", crv: "P-256", x, y } as JWK;
    const [privateKey, publicKey, kid] = await Promise.all([
      crypto.subtle.importKey("pkcs8", der, EC, false, ["sign"]),
      crypto.subtle.importKey("jwk", point as JsonWebKey, EC, true, ["verify"]),
      calculateJwkThumbprint(point, "sha256"),
    ]);
    return { kid, privateKey, publicKey, publicJwk: { ...point, kid, alg: ACCESS_TOKEN_ALG, use: "sig" } };
  }
}

/** The keyring's access token keys, first the one that signs; derived once per keyring (config.ts parses it once per isolate). */
export const accessTokenKeys = derived((keys: VersionedKey[]): Promise<AccessTokenKey[]> => Promise.all(keys.map(deriveKey)));
