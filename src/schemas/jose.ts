/**
 * JOSE shapes: the public keys a private_key_jwt client registers (RFC 7517 JWK Set, RFC 7523
 * client authentication) and the algorithms keyway verifies. Only public asymmetric keys are
 * accepted: a symmetric key (`oct`) or any private member (`d`, `p`, `q`, `dp`, `dq`, `qi`, `oth`,
 * `k`) is refused, so no secret of the client is ever stored (node-oidc-provider refuses the same).
 * These schemas check shape only; whether a key can verify a signature (RSA size, curve, a point
 * on its curve, an `alg` that fits) needs WebCrypto's asynchronous import, so the domain checks it
 * on registration (identity/credentials.ts with lib/jwk-check.ts).
 */
import * as z from "zod";
import { publicNames } from "./common";

/** Algorithms keyway verifies, for client assertions and DPoP proofs (no HMAC, no `none`). */
export const SIGNING_ALGS = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] as const;

export const PublicJwk = z
  .looseObject({
    kty: z.enum(["RSA", "EC", "OKP"], { error: 'must be "RSA", "EC" or "OKP" (a public key of an asymmetric pair)' }),
    kid: z.string().min(1).max(128).optional(),
    alg: z.enum(SIGNING_ALGS, { error: `must be one of ${SIGNING_ALGS.join(", ")}` }).optional(),
    use: z.literal("sig", { error: 'must be "sig" when present' }).optional(),
    crv: z.string().max(16).optional(),
    x: z.string().max(1024).optional(),
    y: z.string().max(1024).optional(),
    n: z.string().max(2048).optional(),
    e: z.string().max(16).optional(),
  })
  .superRefine((jwk, ctx) => {
    const present = PRIVATE_MEMBERS.filter((m) => Object.hasOwn(jwk, m));
    if (present.length > 0) {
      ctx.addIssue({ code: "custom", message: `must not hold private key material (${present.join(", ")}): register the public key only` });
    }
    const needs = jwk.kty === "RSA" ? (["n", "e"] as const) : jwk.kty === "EC" ? (["crv", "x", "y"] as const) : (["crv", "x"] as const);
    const missing = needs.filter((m) => typeof jwk[m] !== "string");
    if (missing.length > 0) ctx.addIssue({ code: "custom", message: `must have ${missing.join(", ")} for a ${jwk.kty} key` });
  })
  // Kept: the members that make the public key and name it (other members, such as key_ops, are dropped).
  .transform(({ kty, kid, alg, use, crv, x, y, n, e }) => ({
    kty,
    ...(kid !== undefined ? { kid } : {}),
    ...(alg !== undefined ? { alg } : {}),
    ...(use !== undefined ? { use } : {}),
    ...(crv !== undefined ? { crv } : {}),
    ...(x !== undefined ? { x } : {}),
    ...(y !== undefined ? { y } : {}),
    ...(n !== undefined ? { n } : {}),
    ...(e !== undefined ? { e } : {}),
  }));
export type PublicJwk = z.output<typeof PublicJwk>;

/** A JWK Set of public signing keys: several at once during a rotation. */
export const Jwks = z.strictObject({
  keys: z.array(PublicJwk).min(1, { error: "must hold at least one key" }).max(10, { error: "must hold at most 10 keys" }),
});
export type Jwks = z.output<typeof Jwks>;

publicNames.add(PublicJwk, { name: "PublicJwk" });
publicNames.add(Jwks, { name: "Jwks" });
