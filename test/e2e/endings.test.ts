/**
 * How things end (issue 29), against a real `npm start` with receivers on loopback: an
 * organization deleted, and one configuration disabled, while an attempt is waiting on the
 * receiver's token endpoint (held open by the receiver) get their answer, and afterwards no
 * webhook ever arrives; an API key rotated with a grace of a few seconds is served under both
 * secrets within one set of limits during the grace, and its old secret is refused after it.
 * Figures (how long each answer took, how long we watched) are printed for the record.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envelopeData, type Keyway, operatorCall, type ScriptedReceiver, sharedKeyway, sleep, startScriptedReceiver } from "./server";

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

interface Tenant {
  orgId: string;
  apiKey: string;
  apiKeyId: string;
  clientId: string;
  clientSecret: string;
  api(path: string, init?: RequestInit): Promise<Response>;
}

/** An organization with a user, a credential, an API key (`limits`) and an access token. */
async function tenant(limits: Record<string, number> = { per_second: 1000, per_day: 1_000_000 }): Promise<Tenant> {
  const org = await data<{ id: string }>(await operator("POST", "/organizations", { name: "Endings" }));
  const user = await data<{ id: string }>(await operator("POST", `/organizations/${org.id}/users`, { name: "Ada" }));
  const cred = await data<{ client_id: string; client_secret: string }>(
    await operator("POST", `/organizations/${org.id}/users/${user.id}/client-credentials`, {}),
  );
  const key = await data<{ id: string; api_key: string }>(await operator("POST", `/organizations/${org.id}/api-keys`, { limits }));
  const issued = await fetch(`${keyway.baseUrl}/v1/oauth`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": key.api_key },
    body: JSON.stringify({ client_id: cred.client_id, client_secret: cred.client_secret, grant_type: "client_credentials" }),
  });
  const token = (await data<{ access_token: string }>(issued)).access_token;
  return {
    orgId: org.id,
    apiKey: key.api_key,
    apiKeyId: key.id,
    clientId: cred.client_id,
    clientSecret: cred.client_secret,
    api: (path, init = {}) =>
      fetch(`${keyway.baseUrl}${path}`, {
        ...init,
        headers: { "x-api-key": key.api_key, Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
      }),
  };
}

/** A receiver whose token endpoint is held open until `release()`; `asked` resolves at the first token request. */
async function heldReceiver() {
  let release: () => void = () => {};
  let asked: () => void = () => {};
  const released = new Promise<void>((done) => {
    release = done;
  });
  const arrived = new Promise<void>((done) => {
    asked = done;
  });
  const r = await startScriptedReceiver(() => ({ status: 204 }), {
    holdToken: () => {
      asked();
      return released;
    },
  });
  receivers.push(r);
  return { r, arrived, release };
}

async function configure(t: Tenant, r: ScriptedReceiver): Promise<string> {
  const res = await t.api("/v1/webhook-configurations", {
    method: "POST",
    body: JSON.stringify({ url: `${r.url}/hook`, oauth: { token_url: `${r.url}/token`, client_id: "keyway", client_secret: "loopback" } }),
  });
  return (await data<{ id: string }>(res)).id;
}

/** How long after the answer we watch for a webhook that must never come: past the fast lane's deadline and a retry. */
const WATCH_MS = 6_000;

describe("nothing is sent after the answer", () => {
  it("an organization deleted while its attempt waits on the receiver's token endpoint: DELETE answers 200, and no webhook arrives afterwards", async () => {
    const t = await tenant();
    const held = await heldReceiver();
    await configure(t, held.r);
    expect((await t.api("/v1/events", { method: "POST", body: JSON.stringify({ type: "order.created", data: {} }) })).status).toBe(202);
    await held.arrived;
    const started = performance.now();
    const deleted = await operator("DELETE", `/organizations/${t.orgId}`);
    const answeredMs = Math.round(performance.now() - started);
    expect(deleted.status).toBe(200);
    held.release();
    await sleep(WATCH_MS);
    const webhooks = held.r.arrivals.filter((a) => a.kind === "webhook");
    console.log(
      `[endings] DELETE answered 200 in ${answeredMs} ms with the attempt in flight; webhooks in the ${WATCH_MS} ms after: ${webhooks.length}`,
    );
    expect(webhooks).toEqual([]);
    // Afterwards the organization is gone: a repeat answers 404.
    expect((await operator("DELETE", `/organizations/${t.orgId}`)).status).toBe(404);
  });

  it("a configuration disabled while its attempt waits on the receiver's token endpoint gets no webhook after the answer", async () => {
    const t = await tenant();
    const held = await heldReceiver();
    const id = await configure(t, held.r);
    expect((await t.api("/v1/events", { method: "POST", body: JSON.stringify({ type: "order.created", data: {} }) })).status).toBe(202);
    await held.arrived;
    const res = await t.api(`/v1/webhook-configurations/${id}`, { method: "PATCH", body: JSON.stringify({ status: "disabled" }) });
    expect(res.status).toBe(200);
    held.release();
    await sleep(WATCH_MS);
    expect(held.r.arrivals.filter((a) => a.kind === "webhook")).toEqual([]);
  });
});

describe("an API key rotated with a grace of a few seconds", () => {
  it("admits both secrets within one set of limits during the grace, and refuses the old one with 401 after it", async () => {
    const t = await tenant({ per_second: 1000, per_day: 6 });
    const token = (apiKey: string) =>
      fetch(`${keyway.baseUrl}/v1/oauth`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-api-key": apiKey },
        body: JSON.stringify({ client_id: t.clientId, client_secret: t.clientSecret, grant_type: "client_credentials" }),
      });
    // The tenant's own token request counted one of the key's six a day.
    const graceSeconds = 3;
    const rotatedAt = Date.now();
    const rotated = await data<{ id: string; api_key: string; previous_secret_expires_at: string; applied: boolean }>(
      await operator("POST", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}/rotate`, { grace_seconds: graceSeconds }),
    );
    expect(rotated).toMatchObject({ id: t.apiKeyId, applied: true });
    const during = [];
    for (let i = 0; i < 3; i++) during.push((await token(t.apiKey)).status, (await token(rotated.api_key)).status);
    const duringMs = Date.now() - rotatedAt;
    // Six a day in all: the one before, then five of these six; the sixth is refused by the same limit.
    expect(duringMs).toBeLessThan(graceSeconds * 1000);
    expect(during).toEqual([200, 200, 200, 200, 200, 429]);
    const key = await data<{ usage: { day: { used: number } } }>(await operator("GET", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`));
    expect(key.usage.day.used).toBe(6);
    await operator("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { limits: { per_day: 100 } });
    await sleep(Math.max(0, Date.parse(rotated.previous_secret_expires_at) - Date.now()) + 100);
    const old = await token(t.apiKey);
    const oldBody = (await old.json()) as { error?: string };
    const fresh = await token(rotated.api_key);
    console.log(
      `[endings] rotation with a ${graceSeconds} s grace: during it (${duringMs} ms) ${JSON.stringify(during)}; after it old ${old.status} ${oldBody.error}, new ${fresh.status}`,
    );
    expect(old.status).toBe(401);
    expect(oldBody.error).toBe("invalid_api_key");
    expect(fresh.status).toBe(200);
  });
});
