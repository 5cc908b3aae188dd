/**
 * Recipe: the key pair and key set a private_key_jwt client needs, with jose. Writes
 * client-key.json (the private key as a JWK: keep it to the client, the recipes read it as
 * KEYWAY_PRIVATE_JWK) and client-jwks.json (the public key set the operator registers) into the
 * directory given as the first argument, or the current one. Run: node make-client-keys.mjs
 * (needs `npm install jose`).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";

const dir = process.argv[2] ?? ".";
// ES256 (EC P-256): a small key, fast to sign, and accepted by every OAuth library.
const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
const publicJwk = await exportJWK(publicKey);
// The kid names the key in each assertion's header; its RFC 7638 thumbprint is a stable, unique name.
const kid = await calculateJwkThumbprint(publicJwk);

await writeFile(join(dir, "client-key.json"), JSON.stringify({ ...(await exportJWK(privateKey)), kid }), { mode: 0o600 });
await writeFile(join(dir, "client-jwks.json"), `${JSON.stringify({ keys: [{ ...publicJwk, kid, alg: "ES256", use: "sig" }] }, null, 2)}\n`);
console.log(`kid ${kid}: client-key.json (private, keep it) and client-jwks.json (public, register it)`);
