/**
 * Standard Webhooks' asymmetric signatures (issue 45): a `v1a` configuration's webhooks carry
 * `v1a,<base64 Ed25519 signature>` over `id.timestamp.body`, which its public key (`whpk_`,
 * shown on create and in the view) verifies and no other key does; rotation keeps every key of
 * its grace signing, whatever its scheme, so a change of scheme is a rotation the receiver can
 * follow without dropping a webhook. Verified with WebCrypto's Ed25519 here and with Node's
 * `crypto.verify` against `npm start` (test/e2e/receivers-v1a.test.ts).
 */
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { base64Decode } from "../src/lib/encoding";
import { fakeNetwork, receiver, WEBHOOK_URL } from "./fake-network";
import { body, createTenant, issueToken, type Tenant } from "./helpers";
import { api, attemptNow, createConfig, publishTo } from "./webhook-helpers";

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant({ per_second: 1000, per_day: 1_000_000 });
  token = await issueToken(t);
});

/** Whether `publicKey` (whpk_) verifies one of the header's v1a signatures of the webhook. */
async function verifiesV1a(publicKey: string, headers: Record<string, string>, payload: string): Promise<boolean[]> {
  const raw = base64Decode(publicKey.slice("whpk_".length));
  if (raw === null) throw new Error("not base64");
  const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
  const content = new TextEncoder().encode(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${payload}`);
  const signatures = (headers["webhook-signature"] ?? "").split(" ").filter((s) => s.startsWith("v1a,"));
  return Promise.all(
    signatures.map((s) => crypto.subtle.verify({ name: "Ed25519" }, key, base64Decode(s.slice(4)) ?? new Uint8Array(), content)),
  );
}

describe("v1a signatures", () => {
  it("signs with Ed25519: the public key shown verifies the webhook, no secret is shown", async () => {
    const sent = fakeNetwork(receiver());
    const created = (await createConfig(t, token, "receiver-secret", { signature_scheme: "v1a" })) as unknown as Record<string, unknown> & {
      id: string;
    };
    expect(created.signing_secret).toBeNull();
    expect(created.signature_scheme).toBe("v1a");
    expect(created.signing_public_key).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    const id = await publishTo(t, token, created.id);
    const { record } = await attemptNow(t, token, id);
    expect(record.status).toBe("delivered");
    const hook = sent.find((s) => s.url === WEBHOOK_URL);
    expect(hook?.headers["webhook-signature"]).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(await verifiesV1a(created.signing_public_key as string, hook!.headers, hook!.body)).toEqual([true]);
    const other = await createConfig(t, token, "receiver-secret", { signature_scheme: "v1a" });
    expect(await verifiesV1a((other as unknown as { signing_public_key: string }).signing_public_key, hook!.headers, hook!.body)).toEqual([
      false,
    ]);
    // A v1 verifier finds no signature of its kind.
    expect(() => new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").verify(hook!.body, hook!.headers)).toThrow();
    const view = await body<Record<string, unknown>>(await api(t, token, `/v1/webhook-configurations/${created.id}`));
    expect(view.data).toMatchObject({ signature_scheme: "v1a", signing_public_key: created.signing_public_key });
  });

  it("rotation keeps every key of its grace signing; a change of scheme is a rotation (v1 to v1a and back)", async () => {
    const sent = fakeNetwork(receiver());
    const created = await createConfig(t, token, "receiver-secret");
    const v1Secret = created.signing_secret;
    // v1 -> v1a: the new key's public key is shown, no secret; the old HMAC secret still signs.
    const toV1a = await api(t, token, `/v1/webhook-configurations/${created.id}/rotate-signing-secret`, "POST", {
      signature_scheme: "v1a",
    });
    const a = (await body<Record<string, unknown>>(toV1a)).data;
    expect(toV1a.status).toBe(200);
    expect(a).toMatchObject({ signing_secret: null, signature_scheme: "v1a", previous_secret_expires_at: expect.any(String) });
    const firstPublic = a.signing_public_key as string;
    expect(firstPublic).toMatch(/^whpk_/);
    // v1a -> v1a (no body: the current scheme): a second public key; both v1a keys and the v1 secret sign.
    const again = (
      await body<Record<string, unknown>>(await api(t, token, `/v1/webhook-configurations/${created.id}/rotate-signing-secret`, "POST"))
    ).data;
    expect(again.signature_scheme).toBe("v1a");
    const secondPublic = again.signing_public_key as string;
    expect(secondPublic).not.toBe(firstPublic);
    const id = await publishTo(t, token, created.id);
    await attemptNow(t, token, id);
    const hook = sent.filter((s) => s.url === WEBHOOK_URL).at(-1)!;
    const parts = hook.headers["webhook-signature"]!.split(" ");
    expect(parts.map((p) => p.split(",")[0])).toEqual(["v1a", "v1a", "v1"]);
    expect(await verifiesV1a(secondPublic, hook.headers, hook.body)).toEqual([true, false]);
    expect(await verifiesV1a(firstPublic, hook.headers, hook.body)).toEqual([false, true]);
    // The v1 receiver still verifies with the standardwebhooks library during the grace.
    expect(new Webhook(v1Secret).verify(hook.body, hook.headers)).toBeTruthy();
    // And back to v1: a whsec_ secret shown once, which verifies the next webhook.
    const back = (
      await body<Record<string, unknown>>(
        await api(t, token, `/v1/webhook-configurations/${created.id}/rotate-signing-secret`, "POST", { signature_scheme: "v1" }),
      )
    ).data;
    expect(back).toMatchObject({ signature_scheme: "v1", signing_public_key: null, signing_secret: expect.stringMatching(/^whsec_/) });
    const id2 = await publishTo(t, token, created.id);
    await attemptNow(t, token, id2);
    const hook2 = sent.filter((s) => s.url === WEBHOOK_URL).at(-1)!;
    expect(hook2.headers["webhook-signature"]!.split(" ").map((p) => p.split(",")[0])).toEqual(["v1", "v1a", "v1a", "v1"]);
    expect(new Webhook(back.signing_secret as string).verify(hook2.body, hook2.headers)).toBeTruthy();
    // Never the private key, in any answer.
    for (const answer of [a, again, back]) expect(JSON.stringify(answer)).not.toMatch(/whsk_/);
  });

  it("refuses an unknown scheme (400), and signature_scheme on a polling configuration", async () => {
    const res = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: WEBHOOK_URL,
      oauth: { token_url: "https://receiver.example/oauth/token", client_id: "k", client_secret: "s" },
      signature_scheme: "v2",
    });
    expect(res.status).toBe(400);
    const polling = await api(t, token, "/v1/webhook-configurations", "POST", { delivery: "polling", signature_scheme: "v1a" });
    expect(polling.status).toBe(400);
    const created = await createConfig(t, token, "receiver-secret");
    const rotate = await api(t, token, `/v1/webhook-configurations/${created.id}/rotate-signing-secret`, "POST", {
      signature_scheme: "v3",
    });
    expect(rotate.status).toBe(400);
  });
});
