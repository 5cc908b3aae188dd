/**
 * Issue 41's findings, tried from outside as they were reported, against a real `npm start` with a
 * receiver on loopback: a token revoked while its key runs at 500/s stays refused once the key is
 * raised past one object (1,500/s); a revoked credential's token is refused by the shard a raised
 * limit adds; credits pay for the requests served, not for the slices the shards were granted; a
 * DPoP proof is accepted once across a limit change; and a DPoP-bound webhook whose receiver holds
 * the first POST and then asks for a nonce sends nothing after its configuration's DELETE answered.
 * Figures are printed for the record.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  envelopeData,
  type Keyway,
  operatorCall,
  type Provisioned,
  provisionOn,
  type ScriptedReceiver,
  sharedKeyway,
  sleep,
  startScriptedReceiver,
} from "./server";

let keyway: Keyway;
const receivers: ScriptedReceiver[] = [];

beforeAll(async () => {
  keyway = sharedKeyway();
});

afterAll(async () => {
  for (const r of receivers) await r.close();
});

const data = envelopeData;
const operator = (method: string, path: string, body?: unknown) => operatorCall(keyway, method, path, body);

type Tenant = Provisioned;

const tenant = (limits: { per_second: number; per_day: number }, credits?: { remaining: number }): Promise<Tenant> =>
  provisionOn(keyway, { name: "Admission", limits, ...(credits ? { credits } : {}) });

async function setLimits(t: Tenant, per_second: number): Promise<void> {
  const res = await operator("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { limits: { per_second } });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function token(t: Tenant, dpop?: string): Promise<{ access_token: string; token_type: string }> {
  const res = await fetch(`${keyway.baseUrl}/v1/oauth`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": t.apiKey, ...(dpop ? { DPoP: dpop } : {}) },
    body: JSON.stringify({ client_id: t.clientId, client_secret: t.clientSecret, grant_type: "client_credentials" }),
  });
  return data(res);
}

const me = (t: Tenant, headers: Record<string, string>) =>
  fetch(`${keyway.baseUrl}/v1/me`, { headers: { "x-api-key": t.apiKey, ...headers } });

/** `n` GET /v1/me with a Bearer token, `concurrency` at a time; the statuses counted. */
async function burst(t: Tenant, bearer: string, n: number, concurrency: number): Promise<Record<number, number>> {
  const counts: Record<number, number> = {};
  for (let sent = 0; sent < n; sent += concurrency) {
    const wave = Array.from({ length: Math.min(concurrency, n - sent) }, () => me(t, { Authorization: `Bearer ${bearer}` }));
    for (const res of await Promise.all(wave)) {
      counts[res.status] = (counts[res.status] ?? 0) + 1;
      await res.body?.cancel();
    }
  }
  return counts;
}

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
async function proof(pair: KeyPair, htm: string, htu: string, extra: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT({ htm, htu, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000), ...extra })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: await exportJWK(pair.publicKey) })
    .sign(pair.privateKey);
}
const athOf = async (token: string) =>
  Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token))).toString("base64url");

describe("admission at a key past one object (issue 41), against npm start", () => {
  it("finding 1: a token revoked at 500/s stays refused once the key is raised to 1,500/s", async () => {
    const t = await tenant({ per_second: 500, per_day: 1_000_000 });
    const { access_token } = await token(t);
    const revoked = await fetch(`${keyway.baseUrl}/v1/oauth/revoke`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey },
      body: new URLSearchParams({ token: access_token, client_id: t.clientId, client_secret: t.clientSecret }).toString(),
    });
    expect(revoked.status).toBe(200);
    await setLimits(t, 1_500);
    const counts = await burst(t, access_token, 12, 4);
    console.info(`finding 1 (token revoked, 500/s -> 1,500/s): ${JSON.stringify(counts)}`);
    expect(counts).toEqual({ 401: 12 });
  });

  it("finding 1: a revoked credential's token is refused by the shard a raised limit adds (2 -> 3 shards)", async () => {
    const t = await tenant({ per_second: 2_000, per_day: 1_000_000 });
    const { access_token } = await token(t);
    expect(await burst(t, access_token, 10, 5)).toEqual({ 200: 10 });
    const res = await operator("DELETE", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${t.clientId}`);
    expect(res.status).toBe(200);
    await setLimits(t, 2_500);
    const counts = await burst(t, access_token, 30, 6);
    console.info(`finding 1 (credential revoked, 2 -> 3 shards): ${JSON.stringify(counts)}`);
    expect(counts).toEqual({ 401: 30 });
  });

  it("finding 2: credits pay for the requests served, one a second, at a key of 1,500/s", async () => {
    const t = await tenant({ per_second: 1_500, per_day: 1_000_000 }, { remaining: 100 });
    const { access_token } = await token(t);
    for (let i = 0; i < 6; i++) {
      expect((await burst(t, access_token, 1, 1))[200]).toBe(1);
      await sleep(1_050);
    }
    // A quiet shard hands back its slice's rest by its alarm, about two seconds after its second.
    const deadline = Date.now() + 8_000;
    let remaining = -1;
    for (;;) {
      const key = await data<{ usage: { credits: { remaining: number } | null } }>(
        await operator("GET", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`),
      );
      remaining = key.usage.credits?.remaining ?? -1;
      if (remaining === 100 - 7 || Date.now() > deadline) break;
      await sleep(250);
    }
    console.info(`finding 2: 7 requests served (the token's and six reads), credits left ${remaining} of 100`);
    expect(remaining).toBe(93);
  });

  it("finding 3: a DPoP proof is accepted once across a limit change (500/s -> 3,000/s), and once at the token endpoint whatever the key", async () => {
    const t = await tenant({ per_second: 500, per_day: 1_000_000 });
    const pair = await generateKeyPair("ES256", { extractable: true });
    const bound = await token(t, await proof(pair, "POST", `${keyway.baseUrl}/v1/oauth`));
    expect(bound.token_type).toBe("DPoP");
    const used = await proof(pair, "GET", `${keyway.baseUrl}/v1/me`, { ath: await athOf(bound.access_token) });
    const headers = { Authorization: `DPoP ${bound.access_token}`, DPoP: used };
    expect((await me(t, headers)).status).toBe(200);
    await setLimits(t, 3_000);
    const replayed = await me(t, headers);
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as { error: string }).error).toBe("invalid_dpop_proof");
    // A fresh proof works; a token-endpoint proof used with one key is refused with another.
    const fresh = await proof(pair, "GET", `${keyway.baseUrl}/v1/me`, { ath: await athOf(bound.access_token) });
    expect((await me(t, { Authorization: `DPoP ${bound.access_token}`, DPoP: fresh })).status).toBe(200);
    const other = await data<{ api_key: string }>(
      await operator("POST", `/organizations/${t.orgId}/api-keys`, { limits: { per_second: 10, per_day: 1000 } }),
    );
    const tokenProof = await proof(pair, "POST", `${keyway.baseUrl}/v1/oauth`);
    await token(t, tokenProof);
    const again = await fetch(`${keyway.baseUrl}/v1/oauth`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": other.api_key, DPoP: tokenProof },
      body: JSON.stringify({ client_id: t.clientId, client_secret: t.clientSecret, grant_type: "client_credentials" }),
    });
    expect(again.status).toBe(400);
    expect(await calculateJwkThumbprint(await exportJWK(pair.publicKey))).toBeTruthy();
  });
});

describe("a DPoP-bound webhook's nonce round (issue 41, finding 4), against npm start", () => {
  it("sends nothing after the configuration's DELETE answered, while the receiver held the first POST and then asked for a nonce", async () => {
    const receiver = await startScriptedReceiver(
      (_arrival, index) =>
        index === 0
          ? { status: 401, delayMs: 1_200, headers: { "WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "nonce-1" } }
          : { status: 204 },
      { tokenType: "DPoP" },
    );
    receivers.push(receiver);
    const t = await tenant({ per_second: 100, per_day: 1_000_000 });
    const { access_token } = await token(t);
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${keyway.baseUrl}${path}`, {
        method,
        headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${access_token}`, "Content-Type": "application/json" },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    const config = await data<{ id: string }>(
      await api("POST", "/v1/webhook-configurations", {
        url: `${receiver.url}/hook`,
        oauth: { token_url: `${receiver.url}/token`, client_id: "c", client_secret: "receiver-secret-0123456789", dpop: true },
      }),
    );
    await data(await api("POST", "/v1/events", { type: "order.created", data: { n: 1 } }));
    const deadline = Date.now() + 20_000;
    while (!receiver.arrivals.some((a) => a.kind === "webhook") && Date.now() < deadline) await sleep(20);
    expect(receiver.arrivals.some((a) => a.kind === "webhook")).toBe(true);
    // The receiver holds that first POST for 1.2 s; the configuration is deleted meanwhile.
    const deleted = await api("DELETE", `/v1/webhook-configurations/${config.id}`);
    expect(deleted.status).toBe(200);
    const answeredAt = performance.now();
    await sleep(4_000);
    const after = receiver.arrivals.filter((a) => a.at > answeredAt);
    console.info(
      `finding 4: DELETE answered with the first POST held; requests after it in 4 s: ${after.length} (${receiver.arrivals.map((a) => a.kind).join(", ")})`,
    );
    expect(after).toEqual([]);
  });
});
