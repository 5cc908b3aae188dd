/**
 * What expires is forgotten (issue 29, item 3; product brief "Organizations end cleanly"): every
 * table that holds something with an expiry is pruned by time, by its object's alarm or by an
 * index-ordered delete on write, a bounded number of rows per call, and returns to its
 * steady-state size (docs/storage.md, "What expires"). Clocks are injected: each object's pruning
 * takes `now`, and rows are written with the times a long history would have left. A key object's
 * constructor loads nothing proportional to that history.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import type { KeyObject } from "../src/objects/key";
import { HOUSEKEEPING_BATCH, WRITE_PRUNE } from "../src/objects/org/audit";
import type { OrganizationObject } from "../src/objects/organization";
import { federatedAssertionId } from "../src/objects/proof-place";
import { PROOF_PRUNE_BATCH, type ProofObject } from "../src/objects/proofs";
import { fakeNetwork, receiver } from "./fake-network";
import { admin, authed, BASE, call, createTenant, issueToken, type Tenant, unreachable, withObjectEnv } from "./helpers";
import { createConfig, endpointOf, inWebhooks, webhooksOf } from "./webhook-helpers";

const HOUR = 3_600_000;
const keyStub = async (t: Tenant) => env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
const orgStub = (t: Tenant) => env.ORGS.get(env.ORGS.idFromName(t.orgId));
const count = (state: DurableObjectState, table: string) =>
  state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;

/** What a key object holds in memory (private members, read for the test). */
const memoryOf = (instance: KeyObject) => {
  // What the object's shell (objects/shells/key.ts) holds in memory.
  const m = (instance as unknown as { shell: { facts: Map<string, number>; noted: Map<string, number> } }).shell;
  return { facts: m.facts.size, noted: m.noted.size };
};

const revoke = (t: Tenant, token: string) =>
  call("/v1/oauth/revoke", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey },
    body: new URLSearchParams({ token, client_id: t.clientId, client_secret: t.clientSecret }).toString(),
  });

describe("a key's object", () => {
  it("forgets tokens revoked one by one once they expire, whether or not it ever sees a DPoP proof", async () => {
    const t = await createTenant();
    const tokens = [await issueToken(t), await issueToken(t), await issueToken(t)];
    for (const token of tokens) expect((await revoke(t, token)).status).toBe(200);
    const key = await keyStub(t);
    const before = await runInDurableObject(key, async (_i: KeyObject, state) => ({
      rows: count(state, "revoked_tokens"),
      alarm: await state.storage.getAlarm(),
      expiry: state.storage.sql.exec<{ t: number }>("SELECT min(expires_ms) AS t FROM revoked_tokens").one().t,
    }));
    expect(before.rows).toBe(3);
    // Its alarm is set for when the first of them has expired (or the flush of uses, if sooner).
    expect(before.alarm).not.toBeNull();
    expect(before.alarm).toBeLessThanOrEqual(before.expiry);
    // Still revoked before that; gone after it, with an injected clock an hour and a minute on.
    for (const token of tokens) expect((await call("/v1/me", authed(t, token))).status).toBe(401);
    const after = await runInDurableObject(key, (instance: KeyObject, state) => {
      instance.prune(Date.now() + HOUR + 60_000);
      return count(state, "revoked_tokens");
    });
    expect(after).toBe(0);
  });

  it("loads nothing proportional to history when it starts, and still refuses what is revoked", async () => {
    const t = await createTenant();
    const revokedToken = await issueToken(t);
    const live = await issueToken(t);
    expect((await revoke(t, revokedToken)).status).toBe(200);
    const key = await keyStub(t);
    // A history: 5,000 revoked credentials and 5,000 revoked tokens still unexpired.
    await runInDurableObject(key, (_i: KeyObject, state) => {
      state.storage.transactionSync(() => {
        for (let i = 0; i < 5_000; i++) {
          state.storage.sql.exec("INSERT INTO revoked_clients (client_id, revision) VALUES (?, ?)", `kw_client_old${i}`, 1);
          state.storage.sql.exec("INSERT INTO revoked_tokens (token_id, expires_ms) VALUES (?, ?)", `old${i}`, Date.now() + HOUR);
        }
      });
    });
    // A new lifetime: the constructor read none of it into memory.
    await evictDurableObject(key);
    const started = await runInDurableObject(key, (instance: KeyObject) => memoryOf(instance));
    expect(started.facts).toBe(0);
    // What it needs it reads on first use: the revoked token is refused, the live one served.
    expect((await call("/v1/me", authed(t, revokedToken))).status).toBe(401);
    expect((await call("/v1/me", authed(t, live))).status).toBe(200);
    const used = await runInDurableObject(key, (instance: KeyObject) => memoryOf(instance));
    expect(used.facts).toBeLessThanOrEqual(4); // the credential, its version and the two tokens
  });

  it("drops noted uses once they are flushed and a minute old", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    expect((await call("/v1/me", authed(t, bearer))).status).toBe(200);
    const key = await keyStub(t);
    await runDurableObjectAlarm(key); // flushes the uses to the organization
    const left = await runInDurableObject(key, (instance: KeyObject, state) => {
      instance.prune(Date.now() + 2 * 60_000);
      return { rows: count(state, "uses"), memory: memoryOf(instance).noted };
    });
    expect(left).toEqual({ rows: 0, memory: 0 });
  });
});

describe("a ProofObject (DPoP proof ids, issue 41)", () => {
  it("returns its proof ids to their steady-state size over object lifetimes, PROOF_PRUNE_BATCH rows per alarm", async () => {
    // An object of this test's own: every shard of the service records the proofs of other files'
    // tests too, and this test counts every row its object holds.
    const proofs = env.PROOFS.get(env.PROOFS.newUniqueId());
    // The history of three object lifetimes: 12,000 proofs long expired, 10 still in their window.
    await runInDurableObject(proofs, (instance: ProofObject, state) => {
      const past = Date.now() - 10 * 60_000;
      state.storage.transactionSync(() => {
        for (let i = 0; i < 12_000; i++) state.storage.sql.exec("INSERT INTO proofs (id, expires_ms) VALUES (?, ?)", `old-${i}`, past + i);
      });
      for (let i = 0; i < 10; i++) expect(instance.record(`live-${i}`, Date.now() + 60_000)).toBe(true);
      expect(instance.record("live-0", Date.now() + 60_000)).toBe(false);
    });
    // Each run deletes at most one batch, and says when more are due (then the alarm runs again at once).
    const runs = await runInDurableObject(proofs, (instance: ProofObject, state) => {
      const out: { more: boolean; rows: number }[] = [];
      for (let run = 0; run < 2; run++) out.push({ more: instance.prune(Date.now()), rows: count(state, "proofs") });
      return out;
    });
    expect(runs).toEqual([
      { more: true, rows: 12_010 - PROOF_PRUNE_BATCH },
      { more: true, rows: 12_010 - 2 * PROOF_PRUNE_BATCH },
    ]);
    for (let run = 0; run < 3; run++) await runDurableObjectAlarm(proofs);
    const settled = await runInDurableObject(proofs, async (_i: ProofObject, state) => ({
      rows: count(state, "proofs"),
      alarm: await state.storage.getAlarm(),
    }));
    // The steady state: the proofs still in their window; the next run no sooner than they expire.
    expect(settled.rows).toBe(10);
    expect(settled.alarm).toBeGreaterThan(Date.now() + 30_000);
  });

  it("prunes its DPoP proofs within their window even when a federated JWT of a day's life set its alarm first", async () => {
    const proofs = env.PROOFS.get(env.PROOFS.newUniqueId());
    const DAY = 24 * HOUR;
    const alarms = await runInDurableObject(proofs, async (instance: ProofObject, state) => {
      expect(instance.record(federatedAssertionId("f".repeat(64)), Date.now() + DAY)).toBe(true);
      const afterFederated = await state.storage.getAlarm();
      expect(instance.record("jkt0123456789abc.proof-1", Date.now() + 70_000)).toBe(true);
      return { afterFederated, afterProof: await state.storage.getAlarm() };
    });
    expect(alarms.afterFederated).toBeGreaterThan(Date.now() + DAY - 60_000);
    // The proof's expiry, no sooner than a minute after now: not a day on.
    expect(alarms.afterProof).toBeLessThanOrEqual(Date.now() + 70_000);
    // Once the proof has expired, the alarm deletes it and sets itself for the federated row.
    await runInDurableObject(proofs, (instance: ProofObject) => expect(instance.prune(Date.now() + 71_000)).toBe(false));
    const left = await runInDurableObject(proofs, (_i: ProofObject, state) => count(state, "proofs"));
    expect(left).toBe(1);
  });
});

describe("an organization's object", () => {
  it("returns used assertion ids, DPoP proof ids, token revocations, sessions and old audit entries to their steady state, HOUSEKEEPING_BATCH rows a run", async () => {
    const t = await createTenant();
    const org = orgStub(t);
    const past = Date.now() - HOUR;
    await runInDurableObject(org, (_i: OrganizationObject, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        for (let i = 0; i < 1_500; i++) {
          sql.exec("INSERT INTO assertion_jtis (jti_hash, expires_ms) VALUES (?, ?)", `a${i}`, past);
          sql.exec("INSERT INTO token_proofs (jti, expires_ms) VALUES (?, ?)", `p${i}`, past);
          sql.exec(
            "INSERT INTO sessions (id_hash, admin_token_id, csrf, created_at, expires_at) VALUES (?, 'tok', 'c', ?, ?)",
            `s${i}`,
            new Date(past - HOUR).toISOString(),
            new Date(past).toISOString(),
          );
          sql.exec(
            "INSERT INTO audit_log (at, actor, action, resource_type, resource_id) VALUES (?, '{}', 'old', 'x', 'y')",
            new Date(Date.now() - 401 * 86_400_000).toISOString(),
          );
        }
        sql.exec("UPDATE organization SET revision = revision + 1500");
        for (let i = 0; i < 1_500; i++) {
          sql.exec(
            "INSERT INTO revocations (revision, client_id, revoked_at, kind, token_id, expires_ms) VALUES (?, 'c', 'x', 'token', ?, ?)",
            100_000 + i,
            `t${i}`,
            past,
          );
        }
      });
    });
    const tables = ["assertion_jtis", "token_proofs", "sessions", "revocations", "audit_log"];
    const sizes = (state: DurableObjectState): Record<string, number> =>
      Object.fromEntries(tables.map((table) => [table, count(state, table)]));
    const first = await runInDurableObject(org, (instance: OrganizationObject, state) => ({
      more: instance.housekeep(Date.now()),
      sizes: sizes(state),
    }));
    expect(first).toMatchObject({ more: true, sizes: { assertion_jtis: 500, token_proofs: 500, sessions: 500, revocations: 500 } });
    const second = await runInDurableObject(org, (instance: OrganizationObject, state) => ({
      more: instance.housekeep(Date.now()),
      sizes: sizes(state),
    }));
    expect(second).toMatchObject({ more: false, sizes: { assertion_jtis: 0, token_proofs: 0, sessions: 0, revocations: 0 } });
    expect(second.sizes.audit_log).toBeLessThan(20); // the organization's own entries
    expect(first.sizes.assertion_jtis).toBe(1_500 - HOUSEKEEPING_BATCH);
  });

  it("deletes a few expired rows of a table each time it adds one (WRITE_PRUNE): assertions, token revocations", async () => {
    const t = await createTenant();
    const org = orgStub(t);
    // 40 expired rows in each table, as a busy hour would leave them.
    await runInDurableObject(org, (_i: OrganizationObject, state) => {
      const sql = state.storage.sql;
      const past = Date.now() - HOUR;
      for (let i = 0; i < 40; i++) {
        sql.exec(
          "INSERT INTO revocations (revision, client_id, revoked_at, kind, token_id, expires_ms) VALUES (?, 'c', 'x', 'token', ?, ?)",
          200_000 + i,
          `t${i}`,
          past,
        );
        sql.exec("INSERT INTO assertion_jtis (jti_hash, expires_ms) VALUES (?, ?)", `a${i}`, past);
      }
    });
    // One of each write: a token revoked, a private_key_jwt assertion used (with a DPoP proof,
    // which since issue 41 goes to a ProofObject, not here: objects/proofs.ts).
    expect((await revoke(t, await issueToken(t))).status).toBe(200);
    const pair = await generateKeyPair("ES256", { extractable: true });
    const client = await admin<{ client_id: string }>("POST", `/organizations/${t.orgId}/users/${t.userId}/client-credentials`, {
      token_endpoint_auth_method: "private_key_jwt",
      jwks: { keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256" }] },
    });
    const assertion = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer(client.client_id)
      .setSubject(client.client_id)
      .setAudience(BASE)
      .setIssuedAt()
      .setExpirationTime("1m")
      .sign(pair.privateKey);
    const proof = await new SignJWT({
      htm: "POST",
      htu: `${BASE}/v1/oauth/token`,
      jti: crypto.randomUUID(),
      iat: Math.floor(Date.now() / 1000),
    })
      .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: await exportJWK(pair.publicKey) })
      .sign(pair.privateKey);
    const issued = await call("/v1/oauth/token", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "x-api-key": t.apiKey, DPoP: proof },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: client.client_id,
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: assertion,
      }).toString(),
    });
    expect(issued.status).toBe(200);
    const left = await runInDurableObject(org, (_i: OrganizationObject, state) => {
      const expired = (table: string, filter = "1") =>
        state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE ${filter} AND expires_ms < ?`, Date.now()).one().n;
      return {
        revocations: expired("revocations", "kind = 'token'"),
        assertion_jtis: expired("assertion_jtis"),
        token_proofs: count(state, "token_proofs"),
      };
    });
    expect(left).toEqual({ revocations: 40 - WRITE_PRUNE, assertion_jtis: 40 - WRITE_PRUNE, token_proofs: 0 });
  });
});

describe("an organization's webhook object", () => {
  it("drops a fan-out row whose event was pruned (its endpoint unreachable for the whole retention) instead of waking every second for it", async () => {
    fakeNetwork(receiver());
    const t = await createTenant();
    const bearer = await issueToken(t);
    const config = await createConfig(t, bearer, "receiver-secret-0123456789");
    const restore = await withObjectEnv(webhooksOf(t.orgId), (real) => unreachable(real, "ENDPOINTS", "accept"));
    const res = await call(
      "/v1/events",
      authed(t, bearer, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ type: "order.created", data: {} }),
      }),
    );
    expect(res.status).toBe(202);
    // Thirty-one days later, with the endpoint still unreachable.
    const longAgo = Date.now() - 31 * 86_400_000;
    await inWebhooks(t.orgId, "UPDATE events SET created_ms = ?", longAgo);
    await inWebhooks(t.orgId, "UPDATE fanout SET created_ms = ?", longAgo);
    await runDurableObjectAlarm(webhooksOf(t.orgId));
    const after = await runInDurableObject(webhooksOf(t.orgId), async (_i, state) => ({
      events: count(state, "events"),
      owed: count(state, "fanout"),
      alarm: await state.storage.getAlarm(),
    }));
    expect(after.events).toBe(0);
    expect(after.owed).toBe(0);
    // Nothing left to hand over: no alarm a second away.
    expect(after.alarm === null || after.alarm > Date.now() + 60_000).toBe(true);
    await restore();
    // The endpoint never got it; nothing will be sent.
    const deliveries = await runInDurableObject(endpointOf(config.id), (_i, state) => count(state, "deliveries"));
    expect(deliveries).toBe(0);
  });
});
