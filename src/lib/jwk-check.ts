/**
 * Whether a registered public JWK can ever verify a signature, decided when it is registered
 * rather than at its first use (issue 29): a private_key_jwt client whose keys jose would refuse
 * at the token endpoint gets a 400 that says why, not a credential that answers every assertion
 * with 401. The rules are those of the algorithms keyway verifies (lib/jwt.ts JWT_ALGS): RSA keys
 * of at least 2048 bits (RFC 7518 3.3 and 3.5) with the public exponent 65537; EC keys on P-256
 * (ES256) or P-384 (ES384) with full-size coordinates (RFC 7518 6.2.1) of a point on the curve;
 * OKP keys on Ed25519 (RFC 8037) with a 32-byte `x`; a declared `alg` that fits the key; every
 * member unpadded base64url (RFC 7518 6). Whether the point is on its curve is left to WebCrypto,
 * which refuses to import one that is not: no curve arithmetic of our own.
 */
import { base64UrlDecode } from "./encoding";

/** The members of a public JWK this check reads (schemas/jose.ts PublicJwk has them all). */
export interface JwkMembers {
  kty: string;
  alg?: string | undefined;
  crv?: string | undefined;
  x?: string | undefined;
  y?: string | undefined;
  n?: string | undefined;
  e?: string | undefined;
}

/** RFC 7518 3.3: "A key of size 2048 bits or larger MUST be used with these algorithms" (RS256, PS256 by 3.5). */
export const MIN_RSA_BITS = 2048;
/** Larger moduli only cost verification time (a 16,384-bit key is ~64x a 2048-bit one): none is needed. */
export const MAX_RSA_BITS = 8192;

/** EC curves keyway verifies, with the algorithm each goes with and its coordinate size (RFC 7518 3.4, 6.2.1.2). */
const EC_CURVES: Record<string, { alg: string; bytes: number }> = {
  "P-256": { alg: "ES256", bytes: 32 },
  "P-384": { alg: "ES384", bytes: 48 },
};
/** RFC 8037 2 and 3.1: an Ed25519 public key is 32 bytes; JWS names its algorithm EdDSA, or Ed25519 (RFC 9864). */
const ED25519_BYTES = 32;
const ALGS_OF_KTY: Record<string, readonly string[]> = {
  RSA: ["RS256", "PS256"],
  EC: ["ES256", "ES384"],
  OKP: ["EdDSA", "Ed25519"],
};
/** RFC 7518 6.2.1, 6.3.1 and RFC 8037 2: the key members of each key type; any other one is a mix-up. */
const MEMBERS_OF_KTY: Record<string, readonly ("crv" | "x" | "y" | "n" | "e")[]> = {
  RSA: ["n", "e"],
  EC: ["crv", "x", "y"],
  OKP: ["crv", "x"],
};
const KEY_MEMBERS = ["crv", "x", "y", "n", "e"] as const;

/**
 * Why this public key could not be used to verify a signature, or null when it can. The reason
 * is a predicate that follows the key's path in a message ("has ...", "is ...", "must ..."); it
 * names members, sizes and curve names, never the key material itself.
 */
export async function jwkProblem(jwk: JwkMembers): Promise<string | null> {
  const allowed = MEMBERS_OF_KTY[jwk.kty];
  const algs = ALGS_OF_KTY[jwk.kty];
  if (allowed === undefined || algs === undefined) return `has kty ${printable(jwk.kty)}, not supported; use RSA, EC or OKP`;
  const stray = KEY_MEMBERS.filter((m) => jwk[m] !== undefined && !allowed.includes(m));
  if (stray.length > 0) return `has ${stray.join(", ")}, not ${stray.length > 1 ? "members" : "a member"} of an ${jwk.kty} key`;
  if (jwk.alg !== undefined && !algs.includes(jwk.alg))
    return `has alg ${jwk.alg}, not one for an ${jwk.kty} key; use ${algs.join(" or ")}`;
  const decoded: Partial<Record<"x" | "y" | "n" | "e", Uint8Array>> = {};
  for (const member of ["x", "y", "n", "e"] as const) {
    const value = jwk[member];
    if (value === undefined) continue;
    const bytes = base64UrlDecode(value);
    if (bytes === null || bytes.length === 0) return `has ${member} that is not unpadded base64url (RFC 7518 6)`;
    decoded[member] = bytes;
  }
  if (jwk.kty === "RSA") return rsaProblem(jwk, decoded.n, decoded.e);
  if (jwk.kty === "EC") return ecProblem(jwk, decoded.x, decoded.y);
  return okpProblem(jwk, decoded.x);
}

async function rsaProblem(jwk: JwkMembers, n: Uint8Array | undefined, e: Uint8Array | undefined): Promise<string | null> {
  if (n === undefined || e === undefined) return "must have n and e for an RSA key";
  const bits = bitLength(n);
  if (bits < MIN_RSA_BITS) return `has an RSA modulus (n) of ${bits} bits; at least ${MIN_RSA_BITS} are required (RFC 7518 3.3)`;
  if (bits > MAX_RSA_BITS) return `has an RSA modulus (n) of ${bits} bits; at most ${MAX_RSA_BITS} are accepted`;
  // An RSA modulus is the product of two odd primes.
  if (((n[n.length - 1] ?? 0) & 1) === 0) return "has an even RSA modulus (n), which no RSA key has";
  // 65537 is what every current key generator uses; a small exponent such as 3 has a history of
  // signature forgeries against lax verifiers, and accepting one exponent keeps the rule simple.
  if (bitLength(e) !== 17 || !isF4(e)) return "has an RSA public exponent (e) other than 65537 (AQAB), the only one accepted";
  const algorithm = jwk.alg === "PS256" ? { name: "RSA-PSS", hash: "SHA-256" } : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  return importProblem({ kty: "RSA", n: jwk.n, e: jwk.e }, algorithm);
}

async function ecProblem(jwk: JwkMembers, x: Uint8Array | undefined, y: Uint8Array | undefined): Promise<string | null> {
  const crv = jwk.crv ?? "";
  const curve = EC_CURVES[crv];
  if (curve === undefined) return `has crv ${printable(crv)}, not supported for an EC key; use P-256 (ES256) or P-384 (ES384)`;
  if (jwk.alg !== undefined && jwk.alg !== curve.alg) {
    const wanted = Object.entries(EC_CURVES).find(([, c]) => c.alg === jwk.alg)?.[0];
    return `has crv ${crv} but alg ${jwk.alg}, which needs ${wanted ?? "another curve"} (RFC 7518 3.4)`;
  }
  if (x === undefined || y === undefined) return "must have crv, x and y for an EC key";
  for (const [member, bytes] of [
    ["x", x],
    ["y", y],
  ] as const) {
    if (bytes.length !== curve.bytes) {
      return `has ${member} of ${bytes.length} bytes; a ${crv} coordinate is ${curve.bytes} bytes (RFC 7518 6.2.1.2)`;
    }
  }
  const refused = await importProblem({ kty: "EC", crv, x: jwk.x, y: jwk.y }, { name: "ECDSA", namedCurve: crv });
  return refused === null ? null : `has a point (x, y) that is not on curve ${crv}`;
}

async function okpProblem(jwk: JwkMembers, x: Uint8Array | undefined): Promise<string | null> {
  const crv = jwk.crv ?? "";
  if (crv !== "Ed25519") return `has crv ${printable(crv)}, not supported for an OKP key; use Ed25519 (EdDSA)`;
  if (x === undefined) return "must have crv and x for an OKP key";
  if (x.length !== ED25519_BYTES) return `has x of ${x.length} bytes; an Ed25519 public key is ${ED25519_BYTES} bytes (RFC 8037 2)`;
  return importProblem({ kty: "OKP", crv, x: jwk.x }, { name: "Ed25519" });
}

/** Whether WebCrypto takes the key for verifying with the algorithm jose would use. */
async function importProblem(key: JsonWebKey, algorithm: SubtleCryptoImportKeyAlgorithm): Promise<string | null> {
  try {
    await crypto.subtle.importKey("jwk", { ...key, ext: true }, algorithm, true, ["verify"]);
    return null;
  } catch {
    return `is not an ${key.kty} public key that WebCrypto can import`;
  }
}

/** Bits of a big-endian unsigned integer, leading zero octets ignored. */
function bitLength(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  if (i === bytes.length) return 0;
  return (bytes.length - i - 1) * 8 + (32 - Math.clz32(bytes[i] ?? 0));
}

/** The integer is 65537 (0x010001), leading zero octets allowed. */
function isF4(bytes: Uint8Array): boolean {
  const value = bytes.slice(bytes.length - 3);
  return value.length === 3 && value[0] === 1 && value[1] === 0 && value[2] === 1;
}

/** A client's `crv` in a message: printable ASCII, bounded (it is at most 16 characters by the schema). */
function printable(value: string): string {
  return JSON.stringify(value.replace(/[^\x20-\x7e]/g, "?").slice(0, 16));
}
