/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/, "Signature scheme"): the
 * secret is `whsec_` + base64 of 32 random bytes; each signature is `v1,` + base64 of
 * HMAC-SHA256(secret bytes, `${webhook-id}.${webhook-timestamp}.${body}`); the header carries
 * one signature per live secret, space-separated, so receivers accept either during rotation.
 */
import { base64Decode, base64Encode, encodeUtf8 } from "../lib/encoding";

export const SIGNING_SECRET_PREFIX = "whsec_";

export function newSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${base64Encode(crypto.getRandomValues(new Uint8Array(32)))}`;
}

async function sign(secret: string, content: string): Promise<string> {
  const raw = base64Decode(secret.slice(SIGNING_SECRET_PREFIX.length));
  if (!secret.startsWith(SIGNING_SECRET_PREFIX) || raw === null) throw new Error("malformed signing secret");
  // Imported per call, not cached: one key per configuration would grow the isolate's cache
  // without bound, and the consumer signs once per delivery attempt.
  const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, encodeUtf8(content));
  return `v1,${base64Encode(new Uint8Array(mac))}`;
}

/** The `webhook-signature` header value for a message, signed with every live secret. */
export async function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): Promise<string> {
  const content = `${id}.${timestamp}.${body}`;
  return (await Promise.all(secrets.map((s) => sign(s, content)))).join(" ");
}
