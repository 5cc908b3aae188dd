/**
 * Routes anyone can call without an API key (docs/architecture.md, "Routes without an API key"),
 * the polling read first: what a caller without the configuration's token can make keyway do is
 * decided at the edge (a signed token, the configuration's verifier in KV), so made-up tokens and
 * made-up ids reach no object and create none; every id that is not a live polling configuration
 * answers alike; refusals are rate-limited per client and per id; a verifier KV has not updated
 * yet costs an object call, never a read a revocation should have stopped; and a disabled
 * configuration hands nothing over.
 */
import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { randomToken, sha256Hex } from "../src/lib/crypto";
import { newOrganizationId, newWebhookConfigurationId } from "../src/lib/ids";
import { PollingVerifier, writePollingVerifier } from "../src/objects/lookup";
import { kvKeys } from "../src/stores/kv-keys";
import { decidePollingRead, type PresentedToken } from "../src/webhooks/polling";
import { body, callAt, counting, createTenant, issueToken, type Tenant } from "./helpers";
import { api, endpointOf, webhooksOf } from "./webhook-helpers";

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant({ per_second: 1000, per_day: 1_000_000 });
  token = await issueToken(t);
});

interface Created {
  id: string;
  polling: { token: string; backlog: number };
}

const newClient = () => `10.53.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

async function createPolling(): Promise<Created> {
  const res = await api(t, token, "/v1/webhook-configurations", "POST", { delivery: "polling", description: "pull" });
  expect(res.status).toBe(201);
  return (await body<Created>(res)).data;
}

async function publish(): Promise<void> {
  expect((await api(t, token, "/v1/events", "POST", { type: "order.created", data: { n: 1 } })).status).toBe(202);
}

function read(id: string, pollToken: string, client: string, bindings?: Env): Promise<Response> {
  return callAt(
    Date.now(),
    `/v1/polling-endpoints/${id}/events`,
    { headers: { Authorization: `Bearer ${pollToken}`, "cf-connecting-ip": client } },
    bindings,
  );
}

/** Tokens nobody was given: keyway's shape with a forged MAC, the first release's shape, another configuration's. */
function madeUp(i: number, other: string): string {
  const kinds = [
    () => `kw_poll_t1.${btoa(JSON.stringify({ c: "x", t: Date.now() + 1e9, r: randomToken(32) })).replaceAll("=", "")}.${randomToken(32)}`,
    () => `kw_poll_${randomToken(32)}`,
    () => other,
    () => `kw_poll_${randomToken(8)}`,
  ];
  return (kinds[i % kinds.length] as () => string)();
}

describe("the polling read decides at the edge", () => {
  it("1,000 reads with made-up tokens against one configuration make no object call; refusals turn to 429 per client", async () => {
    const c = await createPolling();
    const other = await createPolling();
    await publish();
    const { bindings, calls } = counting();
    const client = newClient();
    const statuses: Record<number, number> = {};
    const started = Date.now();
    for (let i = 0; i < 1000; i++) {
      const res = await read(c.id, madeUp(i, other.polling.token), client, bindings);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 429) expect(res.headers.get("retry-after")).toBe("60");
    }
    expect(calls).toEqual([]);
    // The limiter (60 a minute per client and per id) refuses the rest with 429; never anything else.
    expect(Object.keys(statuses).sort()).toEqual(["401", "429"]);
    // The limiter's windows are a minute long, aligned to the clock: the run may span more than one.
    const windows = Math.floor(Date.now() / 60_000) - Math.floor(started / 60_000) + 1;
    expect(statuses[401]).toBeLessThanOrEqual(60 * windows);
    // The configuration's own token still reads (it matches the verifier: not a refusal, not limited).
    const own = await read(c.id, c.polling.token, client, bindings);
    expect(own.status).toBe(200);
    expect(calls).toEqual(["ENDPOINTS.poll"]);
    // A thousand requests through the Worker: about 10 s alone, more beside the browser tier.
  }, 90_000);

  it("answers alike for a push configuration's id, a made-up id and a polling id with a wrong token, and calls no object", async () => {
    const polling = await createPolling();
    const push = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: "https://receiver.example/hook",
      oauth: { token_url: "https://receiver.example/token", client_id: "c", client_secret: "s" },
    });
    expect(push.status).toBe(201);
    const pushId = (await body<{ id: string }>(push)).data.id;
    const { bindings, calls } = counting();
    const answers = [];
    for (const id of [pushId, newWebhookConfigurationId(), polling.id]) {
      const res = await read(id, `kw_poll_${randomToken(32)}`, newClient(), bindings);
      const json = (await res.json()) as Record<string, unknown>;
      answers.push({
        status: res.status,
        error: json.error,
        message: json.developer_message,
        challenge: res.headers.get("www-authenticate"),
      });
    }
    expect(answers[0]).toMatchObject({ status: 401, error: "invalid_token" });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    expect(calls).toEqual([]);
  });

  it("made-up ids create no object: 20 reads leave the endpoint objects as they were", async () => {
    const known = async () => new Set((await listDurableObjectIds(env.ENDPOINTS)).map((id) => id.toString()));
    const ids = Array.from({ length: 20 }, () => newWebhookConfigurationId());
    const signedElsewhere = (await createPolling()).polling.token;
    for (const [i, id] of ids.entries()) {
      expect((await read(id, i % 2 === 0 ? signedElsewhere : `kw_poll_${randomToken(32)}`, newClient())).status).toBe(401);
    }
    const after = await known();
    for (const id of ids) expect(after.has(env.ENDPOINTS.idFromName(id).toString())).toBe(false);
  });

  it("a disabled configuration hands nothing over (409) and keeps its backlog; enabled again, it reads", async () => {
    const c = await createPolling();
    await publish();
    expect((await api(t, token, `/v1/webhook-configurations/${c.id}`, "PATCH", { status: "disabled" })).status).toBe(200);
    const client = newClient();
    const refused = await read(c.id, c.polling.token, client);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: string }).error).toBe("conflict");
    // Nothing was marked delivered: the object's own rule too, when the edge's verifier still says live.
    await writePollingVerifier(env.KV, c.id, { token_hash: await sha256Hex(c.polling.token), since_ms: 0, live: true });
    const { bindings, calls } = counting();
    expect((await read(c.id, c.polling.token, client, bindings)).status).toBe(409);
    expect(calls).toEqual(["ENDPOINTS.poll"]);
    const pending = await runInDurableObject(endpointOf(c.id), (_o, state) =>
      state.storage.sql.exec("SELECT count(*) AS n FROM deliveries WHERE status = 'pending'").one(),
    );
    expect(pending.n).toBe(1);
    expect((await api(t, token, `/v1/webhook-configurations/${c.id}`, "PATCH", { status: "active" })).status).toBe(200);
    const again = await read(c.id, c.polling.token, client);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { data: { events: unknown[] } }).data.events).toHaveLength(1);
  });

  it("a verifier KV has not updated yet: the new token reads (one object call), the rotated-out one is refused by the object", async () => {
    const c = await createPolling();
    const stale = await env.KV.get(kvKeys.pollingVerifier(c.id));
    expect(stale).not.toBeNull();
    const rotated = await api(t, token, `/v1/webhook-configurations/${c.id}/rotate-polling-token`, "POST");
    expect(rotated.status).toBe(200);
    const fresh = (await body<{ polling: { token: string } }>(rotated)).data.polling.token;
    // As at a location whose KV still has the verifier before the rotation.
    await writePollingVerifier(env.KV, c.id, PollingVerifier.parse(JSON.parse(stale as string)));
    const { bindings, calls } = counting();
    const client = newClient();
    expect((await read(c.id, fresh, client, bindings)).status).toBe(200);
    expect((await read(c.id, c.polling.token, client, bindings)).status).toBe(401);
    expect(calls).toEqual(["ENDPOINTS.poll", "ENDPOINTS.poll"]);
    // Once KV has the rotation, the old token is refused at the edge.
    await writePollingVerifier(env.KV, c.id, { token_hash: await sha256Hex(fresh), since_ms: Date.now(), live: true });
    calls.length = 0;
    expect((await read(c.id, c.polling.token, client, bindings)).status).toBe(401);
    expect(calls).toEqual([]);
  });
});

describe("entries owed for what was stored before them", () => {
  it("a polling configuration without a verifier gets one at the object's next start (derived_owed), and its token reads at the edge", async () => {
    const c = await createPolling();
    await env.KV.delete(kvKeys.pollingVerifier(c.id));
    await writePollingVerifier(env.KV, c.id, { token_hash: null, since_ms: Date.now() + 60_000, live: true });
    await env.KV.delete(kvKeys.pollingVerifier(c.id));
    // As before signed tokens: no entry, so a token of the first shape would be refused at the edge.
    await runInDurableObject(webhooksOf(t.orgId), async (instance, state) => {
      state.storage.sql.exec("INSERT OR IGNORE INTO derived_owed (id) VALUES (?)", c.id);
      await (instance as unknown as { publishOwed(): Promise<void> }).publishOwed();
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM derived_owed").one().n).toBe(0);
    });
    const entry = PollingVerifier.parse(await env.KV.get(kvKeys.pollingVerifier(c.id), "json"));
    expect(entry).toMatchObject({ token_hash: await sha256Hex(c.polling.token), live: true });
  });
});

describe("the key sets at /v1/receiver-jwks are answered from KV", () => {
  it("a made-up organization or id is 404 with no object call and no object created; a configuration's set needs no call either", async () => {
    const { bindings, calls } = counting();
    const orgs = Array.from({ length: 10 }, () => newOrganizationId());
    for (const org of orgs) {
      expect((await callAt(Date.now(), `/v1/receiver-jwks/${org}`, {}, bindings)).status).toBe(404);
      expect((await callAt(Date.now(), `/v1/receiver-jwks/${org}/${newWebhookConfigurationId()}`, {}, bindings)).status).toBe(404);
    }
    expect(calls).toEqual([]);
    const known = new Set((await listDurableObjectIds(env.WEBHOOKS)).map((id) => id.toString()));
    for (const org of orgs) expect(known.has(env.WEBHOOKS.idFromName(org).toString())).toBe(false);

    const res = await api(t, token, "/v1/webhook-configurations", "POST", {
      url: "https://receiver.example/hook",
      oauth: { token_url: "https://receiver.example/token", client_id: "keyway-jwt", auth_method: "private_key_jwt" },
    });
    expect(res.status).toBe(201);
    const config = (await body<{ id: string }>(res)).data;
    const set = await callAt(Date.now(), `/v1/receiver-jwks/${t.orgId}/${config.id}`, {}, bindings);
    expect(set.status).toBe(200);
    const keys = ((await set.json()) as { keys: { kid: string; d?: string }[] }).keys;
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.d).toBeUndefined();
    expect(calls).toEqual([]);
    // Deleted, its set is gone from the edge too.
    expect((await api(t, token, `/v1/webhook-configurations/${config.id}`, "DELETE")).status).toBe(200);
    expect((await callAt(Date.now(), `/v1/receiver-jwks/${t.orgId}/${config.id}`, {}, bindings)).status).toBe(404);
  });
});

describe("decidePollingRead, the edge's rule", () => {
  const hash = "a".repeat(64);
  const live = { token_hash: hash, since_ms: 1000, live: true };
  const cases: [string, PresentedToken, Parameters<typeof decidePollingRead>[1], ReturnType<typeof decidePollingRead>][] = [
    ["forged", { kind: "forged" }, live, "refused"],
    ["the verifier's token", { kind: "signed", hash, issued_ms: 1000 }, live, "object"],
    ["the verifier's token, disabled", { kind: "signed", hash, issued_ms: 1000 }, { ...live, live: false }, "disabled"],
    ["a first-release token matching", { kind: "unsigned", hash }, live, "object"],
    ["a first-release token not matching", { kind: "unsigned", hash: "b".repeat(64) }, live, "refused"],
    ["a first-release token, no verifier", { kind: "unsigned", hash }, null, "refused"],
    ["rotated out (issued before the verifier)", { kind: "signed", hash: "b".repeat(64), issued_ms: 999 }, live, "refused"],
    ["newer than the verifier", { kind: "signed", hash: "b".repeat(64), issued_ms: 1001 }, live, "object_unconfirmed"],
    ["no verifier yet", { kind: "signed", hash: "b".repeat(64), issued_ms: 1 }, null, "object_unconfirmed"],
    ["revoked", { kind: "signed", hash, issued_ms: 1000 }, { token_hash: null, since_ms: 2000, live: true }, "refused"],
  ];
  for (const [name, presented, verifier, expected] of cases) {
    it(name, () => expect(decidePollingRead(presented, verifier)).toBe(expected));
  }
});

describe("the portal's sign-in decides before any object", () => {
  it("a made-up link or session naming an organization (real or not) calls no object and creates none", async () => {
    const { bindings, calls } = counting();
    const made = [newOrganizationId(), t.orgId].flatMap((org) => [
      `/portal/open?token=kw_portal_${randomToken(32)}.${org}`,
      `/portal/open?token=kw_portal_t1.${btoa(JSON.stringify({ o: org, r: "x" })).replaceAll("=", "")}.${randomToken(32)}`,
    ]);
    for (const path of made) {
      const res = await callAt(Date.now(), path, {}, bindings);
      expect(res.status, path).toBeLessThan(500);
      await res.text();
      const session = await callAt(
        Date.now(),
        "/portal",
        { headers: { Cookie: `__Host-kw_portal=kw_portal_session_${randomToken(32)}.${t.orgId}` } },
        bindings,
      );
      expect(session.status).toBeLessThan(500);
    }
    expect(calls).toEqual([]);
  });
});
