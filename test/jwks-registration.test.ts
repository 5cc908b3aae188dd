/**
 * Public keys that could never verify a client assertion are refused when a private_key_jwt
 * credential is registered or its key set replaced (issue 29, item 5): 400 `invalid_request`
 * naming the key (`jwks.keys.N`) and why, instead of a 201 for a credential whose every token
 * request then fails with 401. Keys are made with jose and WebCrypto, the client side's tools;
 * the broken ones are valid keys with one thing wrong. Usable RSA-2048, P-256, P-384 and Ed25519
 * keys are still accepted, through the operator API's POST and PATCH alike.
 */
import { exportJWK, generateKeyPair, type JWK } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { admin, adminCall, body, createTenant, type Tenant } from "./helpers";

const b64u = (bytes: Uint8Array): string => bytes.toBase64({ alphabet: "base64url", omitPadding: true });
const bytesOf = (text: string): Uint8Array => Uint8Array.fromBase64(text, { alphabet: "base64url" });

const publicOf = async (alg: string, options: { crv?: string } = {}): Promise<JWK> =>
  exportJWK((await generateKeyPair(alg, { extractable: true, ...options })).publicKey);

/** jose will not make an RSA key under 2048 bits, so WebCrypto does. */
async function rsa1024(): Promise<JWK> {
  const pair = (await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  )) as CryptoKeyPair;
  return exportJWK(pair.publicKey);
}

/** A valid key's `member` with one byte changed. */
function oneByteOff(jwk: JWK, member: "x" | "y"): JWK {
  const bytes = bytesOf(jwk[member] ?? "");
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0x01;
  return { ...jwk, [member]: b64u(bytes) };
}

let t: Tenant;
let p256: JWK;
let p384: JWK;
let ed25519: JWK;
let rsa2048: JWK;
/** Each refused key set, what the message must say about it, and the key it names. */
let refused: [string, JWK[], RegExp, number][];

beforeAll(async () => {
  t = await createTenant();
  [p256, p384, ed25519, rsa2048] = await Promise.all([
    publicOf("ES256"),
    publicOf("ES384"),
    publicOf("EdDSA", { crv: "Ed25519" }),
    publicOf("RS256"),
  ]);
  refused = [
    ["1024-bit RSA", [await rsa1024()], /RSA modulus \(n\) of 1024 bits; at least 2048/, 0],
    ["RSA with public exponent 3", [{ ...rsa2048, e: "Aw" }], /public exponent \(e\) other than 65537/, 0],
    [
      "RSA with an even modulus",
      [{ ...rsa2048, n: b64u(bytesOf(rsa2048.n ?? "").map((b, i, a) => (i === a.length - 1 ? b & 0xfe : b))) }],
      /even RSA modulus/,
      0,
    ],
    ["RSA claiming ES256", [{ ...rsa2048, alg: "ES256" }], /alg ES256, not one for an RSA key; use RS256 or PS256/, 0],
    ["an off-curve P-256 point (one byte of y changed)", [oneByteOff(p256, "y")], /point \(x, y\) that is not on curve P-256/, 0],
    ["P-384 claiming ES256", [{ ...p384, alg: "ES256" }], /crv P-384 but alg ES256, which needs P-256/, 0],
    ["P-256 claiming ES384", [{ ...p256, alg: "ES384" }], /crv P-256 but alg ES384, which needs P-384/, 0],
    ["P-256 with a 31-byte x", [{ ...p256, x: b64u(bytesOf(p256.x ?? "").slice(1)) }], /x of 31 bytes; a P-256 coordinate is 32 bytes/, 0],
    ["an unsupported curve", [{ ...p256, crv: "P-521" }], /crv "P-521", not supported for an EC key/, 0],
    ["an EC key on Ed25519", [{ ...p256, crv: "Ed25519" }], /crv "Ed25519", not supported for an EC key/, 0],
    [
      "an Ed25519 key with a 16-byte x",
      [{ ...ed25519, x: b64u(new Uint8Array(16).fill(7)) }],
      /x of 16 bytes; an Ed25519 public key is 32 bytes/,
      0,
    ],
    ["an OKP key on X25519", [{ ...ed25519, crv: "X25519" }], /crv "X25519", not supported for an OKP key; use Ed25519/, 0],
    ["an Ed25519 key claiming ES256", [{ ...ed25519, alg: "ES256" }], /alg ES256, not one for an OKP key; use EdDSA or Ed25519/, 0],
    ["garbage base64 in x", [{ ...p256, x: "not base64!*" }], /x that is not unpadded base64url/, 0],
    ["padded base64 in n", [{ ...rsa2048, n: `${rsa2048.n}==` }], /n that is not unpadded base64url/, 0],
    ["an RSA key with EC members", [{ ...rsa2048, crv: "P-256" }], /crv, not a member of an RSA key/, 0],
    ["a bad key after a good one", [p256, { ...p384, alg: "ES256" }], /crv P-384 but alg ES256/, 1],
  ];
});

const credentialsPath = () => `/organizations/${t.orgId}/users/${t.userId}/client-credentials`;

async function expectRefused(res: Response, name: string, why: RegExp, index: number): Promise<void> {
  const json = await body(res);
  expect(res.status, `${name}: ${JSON.stringify(json)}`).toBe(400);
  expect(json.error, name).toBe("invalid_request");
  expect(json.developer_message, name).toContain(`jwks.keys.${index} `);
  expect(json.developer_message, name).toMatch(why);
}

describe("registering a private_key_jwt client's public keys", () => {
  it("accepts usable RSA-2048, P-256, P-384 and Ed25519 keys (201), with or without a matching alg", async () => {
    for (const [name, keys] of [
      ["RSA-2048", [rsa2048]],
      ["RSA-2048 for PS256", [{ ...rsa2048, alg: "PS256" }]],
      ["P-256", [{ ...p256, alg: "ES256" }]],
      ["P-384", [{ ...p384, alg: "ES384" }]],
      ["Ed25519", [ed25519]],
      ["Ed25519 as EdDSA", [{ ...ed25519, alg: "EdDSA" }]],
      ["all four", [rsa2048, p256, p384, ed25519]],
    ] as const) {
      const res = await adminCall("POST", credentialsPath(), { token_endpoint_auth_method: "private_key_jwt", jwks: { keys } });
      expect(res.status, `${name}: ${JSON.stringify(await body(res.clone()))}`).toBe(201);
    }
  });

  it("refuses each unusable key on POST with 400 invalid_request naming the key and why", async () => {
    for (const [name, keys, why, index] of refused) {
      const res = await adminCall("POST", credentialsPath(), { token_endpoint_auth_method: "private_key_jwt", jwks: { keys } });
      await expectRefused(res, name, why, index);
    }
  });

  it("refuses each unusable key on PATCH, leaving the key set as it was; a usable replacement is taken", async () => {
    const created = await admin<{ client_id: string }>("POST", credentialsPath(), {
      token_endpoint_auth_method: "private_key_jwt",
      jwks: { keys: [{ ...p256, kid: "k1" }] },
    });
    const path = `${credentialsPath()}/${created.client_id}`;
    for (const [name, keys, why, index] of refused) {
      await expectRefused(await adminCall("PATCH", path, { jwks: { keys } }), name, why, index);
    }
    const unchanged = await admin<{ jwks: { keys: JWK[] } }>("GET", path);
    expect(unchanged.jwks.keys).toEqual([{ ...p256, kid: "k1" }]);

    const rotated = await adminCall("PATCH", path, {
      jwks: {
        keys: [
          { ...p256, kid: "k1" },
          { ...rsa2048, kid: "k2" },
          { ...ed25519, kid: "k3" },
        ],
      },
    });
    expect(rotated.status).toBe(200);
    expect((await admin<{ jwks: { keys: JWK[] } }>("GET", path)).jwks.keys.map((k) => k.kid)).toEqual(["k1", "k2", "k3"]);
  });
});
