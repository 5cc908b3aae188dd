/**
 * Standard Webhooks signatures (webhooks/signature.ts) checked by the other side's code, in Node:
 * a `v1` header verified by the reference `standardwebhooks` package, a `v1a` one by Node's own
 * Ed25519 (`crypto.verify`, as docs/receivers.md shows receivers), one signature per live key
 * whatever its scheme, and keys of the documented shapes. The consumer that sends them is tested
 * in the workers tier.
 */
import { createPublicKey, verify } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newSigningKey, newSigningSecret, signatureHeader } from "../../src/webhooks/signature";

const BODY = JSON.stringify({ id: "evt_1", type: "order.created", data: { order_id: "1234" } });
const TIMESTAMP = Math.floor(Date.now() / 1000);

/** Verifies one `v1a,<sig>` with the `whpk_` key, as a receiver with Node's crypto does. */
function verifiesV1a(publicKey: string, id: string, signature: string): boolean {
  const raw = Buffer.from(publicKey.slice("whpk_".length), "base64");
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  return verify(null, Buffer.from(`${id}.${TIMESTAMP}.${BODY}`), key, Buffer.from(signature.slice("v1a,".length), "base64"));
}

describe("signatureHeader", () => {
  it("signs v1 so that standardwebhooks verifies it, and a changed body or another secret does not", async () => {
    const secret = newSigningSecret();
    const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(TIMESTAMP), "webhook-signature": "" };
    headers["webhook-signature"] = await signatureHeader([secret], "msg_1", TIMESTAMP, BODY);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(() => new Webhook(secret).verify(`${BODY} `, headers)).toThrow();
    expect(() => new Webhook(newSigningSecret()).verify(BODY, headers)).toThrow();
  });

  it("signs v1a with Ed25519 so that its public key verifies it, and another key does not", async () => {
    const key = await newSigningKey("v1a");
    const other = await newSigningKey("v1a");
    const header = await signatureHeader([key.secret], "msg_2", TIMESTAMP, BODY);
    expect(header).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(verifiesV1a(key.publicKey ?? "", "msg_2", header)).toBe(true);
    expect(verifiesV1a(other.publicKey ?? "", "msg_2", header)).toBe(false);
    expect(verifiesV1a(key.publicKey ?? "", "msg_3", header)).toBe(false);
  });

  it("carries one signature per live key, in order, whatever each one's scheme", async () => {
    const v1 = newSigningSecret();
    const v1a = await newSigningKey("v1a");
    const parts = (await signatureHeader([v1a.secret, v1], "msg_4", TIMESTAMP, BODY)).split(" ");
    expect(parts.map((p) => p.split(",")[0])).toEqual(["v1a", "v1"]);
    expect(verifiesV1a(v1a.publicKey ?? "", "msg_4", parts[0] ?? "")).toBe(true);
    const headers = { "webhook-id": "msg_4", "webhook-timestamp": String(TIMESTAMP), "webhook-signature": parts.join(" ") };
    expect(new Webhook(v1).verify(BODY, headers)).toEqual(JSON.parse(BODY));
  });

  it("refuses a malformed key rather than signing with it", async () => {
    await expect(signatureHeader(["whsec_***"], "msg_5", TIMESTAMP, BODY)).rejects.toThrow(/malformed/);
    await expect(signatureHeader(["whsk_AAAA"], "msg_5", TIMESTAMP, BODY)).rejects.toThrow(/malformed/);
    await expect(signatureHeader(["plain"], "msg_5", TIMESTAMP, BODY)).rejects.toThrow(/malformed/);
  });
});

describe("newSigningKey", () => {
  it("makes 256-bit v1 secrets and v1a keys of the documented shapes, never twice the same", async () => {
    const v1 = await newSigningKey("v1");
    expect(v1.publicKey).toBeNull();
    expect(Buffer.from(v1.secret.slice("whsec_".length), "base64")).toHaveLength(32);
    const v1a = await newSigningKey("v1a");
    expect(Buffer.from(v1a.secret.slice("whsk_".length), "base64")).toHaveLength(64);
    expect(Buffer.from((v1a.publicKey ?? "").slice("whpk_".length), "base64")).toHaveLength(32);
    // The kept secret ends with the public key (libsodium's 64-byte layout).
    expect(Buffer.from(v1a.secret.slice(5), "base64").subarray(32).toString("base64")).toBe((v1a.publicKey ?? "").slice(5));
    expect(new Set(await Promise.all(Array.from({ length: 20 }, async () => (await newSigningKey("v1")).secret))).size).toBe(20);
  });
});
