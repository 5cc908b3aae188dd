/**
 * Recipe: a webhook receiver that verifies keyway's v1a (Ed25519) signatures with Node's own
 * crypto, no package: the `standardwebhooks` package (1.1.1) checks only `v1,` (HMAC) signatures.
 * It answers 204 when the delivery verifies and 400 when it does not, and prints each verified
 * event. A real receiver also checks `Authorization: Bearer <token>` against its own authorization
 * server (see ../receiver.mjs) and processes each webhook-id once, since a retry repeats it.
 * Run: SIGNING_PUBLIC_KEY=whpk_... RECEIVER_PORT=9002 node verify-v1a-node.mjs (Node 20+).
 */
import { createPublicKey, verify } from "node:crypto";
import { createServer } from "node:http";

const TOLERANCE_SECONDS = 5 * 60; // as the Standard Webhooks libraries

const text = process.env.SIGNING_PUBLIC_KEY;
if (!text?.startsWith("whpk_")) throw new Error("set SIGNING_PUBLIC_KEY to the whpk_... value keyway returned");
// whpk_ + base64 of the raw 32-byte Ed25519 public key; Node takes it as a JWK (RFC 8037).
const raw = Buffer.from(text.slice("whpk_".length), "base64");
if (raw.length !== 32) throw new Error("SIGNING_PUBLIC_KEY is not 32 bytes of Ed25519 public key");
const publicKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
const port = Number(process.env.RECEIVER_PORT ?? 9002);

/**
 * The event if the delivery verifies; throws saying why not.
 * @param {Buffer} body the raw body as received
 * @param {string} id webhook-id
 * @param {string} timestamp webhook-timestamp
 * @param {string} signatures webhook-signature
 * @returns {unknown}
 */
function verifyWebhook(body, id, timestamp, signatures) {
  if (!id || !timestamp || !signatures) throw new Error("missing webhook-id, webhook-timestamp or webhook-signature");
  const seconds = Number(timestamp);
  const now = Math.floor(Date.now() / 1000);
  if (!Number.isInteger(seconds)) throw new Error("webhook-timestamp is not a number of seconds");
  if (now - seconds > TOLERANCE_SECONDS) throw new Error("message timestamp too old");
  if (seconds - now > TOLERANCE_SECONDS) throw new Error("message timestamp too new");
  // Signed: `${webhook-id}.${webhook-timestamp}.${body}`, the body's exact bytes.
  const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  // The header may carry several signatures, space-separated (a rotation's old and new keys, a
  // v1 one during a change of scheme): one v1a signature that verifies is enough.
  for (const entry of signatures.split(" ")) {
    const [version, signature] = entry.split(",");
    if (version !== "v1a" || !signature) continue;
    const bytes = Buffer.from(signature, "base64");
    if (bytes.length === 64 && verify(null, content, publicKey, bytes)) return JSON.parse(body.toString("utf8"));
  }
  throw new Error("no v1a signature verifies with this public key");
}

createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  // Verify the raw bytes: parsing and re-serializing the JSON first would break the signature.
  const body = Buffer.concat(chunks);
  const id = String(req.headers["webhook-id"] ?? "");
  try {
    const event = verifyWebhook(body, id, String(req.headers["webhook-timestamp"] ?? ""), String(req.headers["webhook-signature"] ?? ""));
    console.log(`verified ${id}: ${JSON.stringify(event)}`);
    res.writeHead(204).end();
  } catch (err) {
    console.log(`refused ${id || "(no id)"}: ${err instanceof Error ? err.message : String(err)}`);
    res.writeHead(400).end();
  }
}).listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}`));
