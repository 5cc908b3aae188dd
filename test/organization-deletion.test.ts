/**
 * Deleting an organization (issue 22): `DELETE /admin/v1/organizations/{org}` revokes everything
 * the organization holds on the very next request (API keys, client credentials, access tokens,
 * administrator tokens, manager sessions), deletes its webhook configurations so that pending
 * deliveries are concluded as failed with keyway's reason, leaves the operator's listing, keeps
 * the audit log (with the deletion in it), and erases the data once ERASE_AFTER_DAYS have passed:
 * the key objects and webhook objects forget everything, the organization keeps only its log.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/lib/crypto";
import { ERASE_AFTER_DAYS } from "../src/objects/org/schema";
import { DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { consume, fakeNetwork, json, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import {
  ADMIN_TOKEN,
  admin,
  adminCall,
  authed,
  body,
  call,
  createTenant,
  issueToken,
  type Tenant,
  tablesOf,
  tokenRequest,
  unreachable,
  withObjectEnv,
} from "./helpers";
import { Browser } from "./manager-helpers";
import {
  api,
  configOf,
  createConfig,
  deliveryRow,
  deliveryRowAt,
  endpointAlarm,
  endpointOf,
  endpointRow,
  lastAttempt,
  publishTo,
  ticketFor,
  webhooksOf,
} from "./webhook-helpers";

const orgStub = (t: Tenant) => env.ORGS.get(env.ORGS.idFromName(t.orgId));
const keyStub = async (t: Tenant) => env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
const tables = tablesOf;

async function deletedOrganization() {
  const t = await createTenant();
  const token = await issueToken(t);
  const config = await createConfig(t, token, "receiver-secret-0123456789");
  const delivery = await publishTo(t, token, config.id);
  const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, {});
  const manager = await Browser.signedIn(minted.token);
  return { t, token, config, delivery, minted, manager };
}

describe("DELETE /admin/v1/organizations/{org}", () => {
  it("stops every key, credential, token, administrator token and session on the very next request", async () => {
    const { t, token, minted, manager } = await deletedOrganization();
    expect((await call("/v1/me", authed(t, token))).status).toBe(200);
    expect((await manager.get(`/manager/organizations/${t.orgId}`)).status).toBe(200);

    const res = await adminCall("DELETE", `/organizations/${t.orgId}`);
    const json = await body<{ id: string; deleted_at: string; erase_after: string; webhook_configurations_deleted: number }>(res);
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.data.id).toBe(t.orgId);
    expect(json.data.webhook_configurations_deleted).toBe(1);
    expect(Date.parse(json.data.erase_after) - Date.parse(json.data.deleted_at)).toBe(ERASE_AFTER_DAYS * 86_400_000);

    // The very next request of each kind is refused.
    expect((await call("/v1/me", authed(t, token))).status).toBe(401);
    expect((await call("/v1/oauth", tokenRequest(t))).status).toBe(401);
    expect((await manager.get(`/manager/organizations/${t.orgId}`)).status).toBe(303);
    expect((await new Browser().signIn(minted.token)).status).not.toBe(303);
    // The organization is gone for the operator API and the listing, and a repeat changes nothing.
    expect((await adminCall("GET", `/organizations/${t.orgId}`)).status).toBe(404);
    expect((await adminCall("GET", `/organizations/${t.orgId}/users`)).status).toBe(404);
    const listed = await admin<{ id: string }[]>("GET", "/organizations?limit=100");
    expect(listed.map((o) => o.id)).not.toContain(t.orgId);
    expect((await adminCall("POST", `/organizations/${t.orgId}/api-keys`, {})).status).toBe(404);
    // Once everything has landed, the organization is gone: a repeated DELETE finds nothing.
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(404);
    // The operator's audit trail records the deletion.
    const log = await runInDurableObject(orgStub(t), (_i, state) =>
      state.storage.sql.exec<{ action: string; actor: string; detail: string }>("SELECT action, actor, detail FROM audit_log").toArray(),
    );
    const entry = log.find((e) => e.action === "organization.deleted");
    expect(entry).toBeDefined();
    expect(JSON.parse(entry!.actor)).toEqual({ type: "operator" });
    expect(JSON.parse(entry!.detail)).toMatchObject({
      revoked_credentials: 1,
      revoked_api_keys: 1,
      revoked_admin_tokens: 1,
      sessions_ended: 1,
    });
    expect(log.filter((e) => e.action === "organization.deleted")).toHaveLength(1);
  });

  it("concludes pending deliveries as failed, recorded with keyway's reason, and sends nothing", async () => {
    // A receiver that fails: the delivery is still pending (retrying, or its ticket queued) when the organization goes.
    const sent = fakeNetwork(receiver({ webhookStatus: 503 }));
    const { t, delivery } = await deletedOrganization();
    const configId = await configOf(t.orgId, delivery);
    expect((await deliveryRow(t.orgId, delivery)).status).not.toBe("failed");
    const ticket = await ticketFor(t.orgId, delivery);
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(200);
    const sentBefore = sent.length;
    // A ticket already in the Queue is consumed: the consumer sends nothing for a deleted configuration.
    await consume(DELIVERY_QUEUE, [{ id: "deleted-org", attempts: 1, body: ticket }]);
    // A waiting one (a retry due in an hour, say) is concluded by the endpoint's object now.
    await endpointAlarm(configId);
    const row = await deliveryRowAt(configId, delivery);
    expect(row.status).toBe("failed");
    expect(row.state).toBeNull();
    const attempts = await runInDurableObject(endpointOf(configId), (_i, state) =>
      state.storage.sql
        .exec<{ step: string; error: string | null }>("SELECT step, error FROM attempts WHERE delivery_id = ? ORDER BY number", delivery)
        .toArray(),
    );
    expect(attempts.at(-1)).toMatchObject({ step: "configuration", error: "webhook configuration was deleted" });
    expect(sent.slice(sentBefore)).toEqual([]);
  });

  it("erases the data after the retention: key and webhook objects forget everything, the audit log stays", async () => {
    const { t, config } = await deletedOrganization();
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(200);
    // Not before it is due.
    await runDurableObjectAlarm(orgStub(t));
    expect(await tables(await keyStub(t))).not.toEqual([]);
    // Past the retention.
    await runInDurableObject(
      orgStub(t),
      (_i, state) => void state.storage.sql.exec("UPDATE organization SET erase_after = ?", new Date(Date.now() - 1000).toISOString()),
    );
    await runDurableObjectAlarm(orgStub(t));
    expect(await tables(await keyStub(t))).toEqual([]);
    expect(await tables(webhooksOf(t.orgId))).toEqual([]);
    expect(await tables(endpointOf(config.id))).toEqual([]);
    const left = await runInDurableObject(orgStub(t), (_i, state) => ({
      users: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM users").one().n,
      credentials: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM client_credentials").one().n,
      keys: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys").one().n,
      tokens: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM admin_tokens").one().n,
      name: state.storage.sql.exec<{ name: string }>("SELECT name FROM organization").one().name,
      log: state.storage.sql
        .exec<{ action: string }>("SELECT action FROM audit_log")
        .toArray()
        .map((r) => r.action),
    }));
    expect(left).toMatchObject({ users: 0, credentials: 0, keys: 0, tokens: 0, name: "" });
    expect(left.log).toEqual(expect.arrayContaining(["organization.created", "organization.deleted", "organization.erased"]));
    // The erased key answers as a key never issued.
    const res = await call("/v1/oauth", tokenRequest(t));
    expect(res.status).toBe(401);
    expect((await body(res)).error).toBe("invalid_api_key");
  });
});

/** A token endpoint held open until the test lets it answer; `asked` resolves when the request has arrived. */
function heldTokenEndpoint() {
  let release: () => void = () => {};
  let asked: () => void = () => {};
  const answered = new Promise<void>((done) => {
    release = done;
  });
  const arrived = new Promise<void>((done) => {
    asked = done;
  });
  const routes = {
    ...receiver(),
    [TOKEN_URL]: async () => {
      asked();
      await answered;
      return json({ access_token: "receiver-token-late", token_type: "Bearer", expires_in: 300 });
    },
  };
  return { routes, arrived, release };
}

describe("a deletion on a bad day (issue 29)", () => {
  it("answered 503 because a key object was unreachable, it still deletes every webhook configuration at once", async () => {
    const sent = fakeNetwork(receiver({ webhookStatus: 503 }));
    const { t, delivery } = await deletedOrganization();
    const configId = await configOf(t.orgId, delivery);
    const ticket = await ticketFor(t.orgId, delivery);
    const restore = await withObjectEnv(orgStub(t), (real) => unreachable(real, "KEYS", "sync"));
    const res = await adminCall("DELETE", `/organizations/${t.orgId}`);
    expect(res.status).toBe(503);
    expect((await body(res)).developer_message).toContain("still being applied to 1 API key");
    // The webhooks did not wait for the key: the configuration is deleted and its endpoint has it.
    expect((await endpointRowOf(configId)).deleted).toBe(1);
    const sentBefore = sent.length;
    await consume(DELIVERY_QUEUE, [{ id: "after-503", attempts: 1, body: ticket }]);
    expect(sent.slice(sentBefore)).toEqual([]);
    expect((await deliveryRowAt(configId, delivery)).status).toBe("failed");
    // A repeat while the key still lacks it answers the state: 503, still being applied.
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(503);
    await restore();
    await runDurableObjectAlarm(orgStub(t));
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(404);
  });

  it("answered 503 because the webhooks could not be reached, the alarm deletes them until it lands", async () => {
    const sent = fakeNetwork(receiver({ webhookStatus: 503 }));
    const { t, delivery } = await deletedOrganization();
    const configId = await configOf(t.orgId, delivery);
    const ticket = await ticketFor(t.orgId, delivery);
    const restore = await withObjectEnv(orgStub(t), (real) => unreachable(real, "WEBHOOKS", "deleteAll"));
    const res = await adminCall("DELETE", `/organizations/${t.orgId}`);
    expect(res.status).toBe(503);
    expect((await body(res)).developer_message).toContain("the webhook configurations");
    await runDurableObjectAlarm(orgStub(t)); // still unreachable: retried later
    expect((await endpointRowOf(configId)).deleted).toBe(0);
    await restore();
    await runDurableObjectAlarm(orgStub(t));
    expect((await endpointRowOf(configId)).deleted).toBe(1);
    const sentBefore = sent.length;
    await consume(DELIVERY_QUEUE, [{ id: "after-alarm", attempts: 1, body: ticket }]);
    expect(sent.slice(sentBefore)).toEqual([]);
    expect((await deliveryRowAt(configId, delivery)).status).toBe("failed");
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(404);
    // Recorded as the operator's, with the organization's deletion.
    const actions = await runInDurableObject(orgStub(t), (_i, state) =>
      state.storage.sql
        .exec<{ action: string; actor: string }>("SELECT action, actor FROM audit_log WHERE action = 'webhook_configuration.deleted'")
        .toArray(),
    );
    expect(actions.map((a) => JSON.parse(a.actor))).toEqual([{ type: "operator" }]);
  });

  it("is not answered 200 while an endpoint's object lacks the deletion (deleteAll's applied: false)", async () => {
    fakeNetwork(receiver());
    const { t, config } = await deletedOrganization();
    const restore = await withObjectEnv(webhooksOf(t.orgId), (real) => unreachable(real, "ENDPOINTS", "sync"));
    const res = await adminCall("DELETE", `/organizations/${t.orgId}`);
    expect(res.status).toBe(503);
    expect((await endpointRowOf(config.id)).deleted).toBe(0);
    await restore();
    await runDurableObjectAlarm(orgStub(t));
    expect((await endpointRowOf(config.id)).deleted).toBe(1);
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(404);
  });

  it("an attempt waiting on the receiver's token endpoint when the deletion is answered sends nothing, ever", async () => {
    const held = heldTokenEndpoint();
    const sent = fakeNetwork(held.routes);
    const { t, delivery } = await deletedOrganization();
    const configId = await configOf(t.orgId, delivery);
    const attempt = consume(DELIVERY_QUEUE, [{ id: "in-flight", attempts: 1, body: await ticketFor(t.orgId, delivery) }]);
    await held.arrived;
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(200);
    held.release();
    expect((await attempt).acked).toEqual(["in-flight"]);
    expect(sent.filter((r) => r.url === WEBHOOK_URL)).toEqual([]);
    const row = await deliveryRowAt(configId, delivery);
    expect(row.status).toBe("failed");
    const last = await lastAttempt(configId, delivery);
    expect(last).toMatchObject({ step: "configuration", error: "webhook configuration was deleted before the webhook was sent" });
    // Nothing later either: the endpoint's alarm has nothing to send.
    await endpointAlarm(configId);
    expect(sent.filter((r) => r.url === WEBHOOK_URL)).toEqual([]);
  });

  for (const change of ["disabled", "deleted"] as const) {
    it(`one configuration ${change} while its attempt waits on the token endpoint gets nothing after the answer`, async () => {
      const held = heldTokenEndpoint();
      const sent = fakeNetwork(held.routes);
      const t = await createTenant();
      const token = await issueToken(t);
      const config = await createConfig(t, token, "receiver-secret-0123456789");
      const delivery = await publishTo(t, token, config.id);
      const attempt = consume(DELIVERY_QUEUE, [{ id: `in-flight-${change}`, attempts: 1, body: await ticketFor(t.orgId, delivery) }]);
      await held.arrived;
      const res =
        change === "deleted"
          ? await api(t, token, `/v1/webhook-configurations/${config.id}`, "DELETE")
          : await api(t, token, `/v1/webhook-configurations/${config.id}`, "PATCH", { status: "disabled" });
      expect(res.status).toBe(200);
      held.release();
      await attempt;
      expect(sent.filter((r) => r.url === WEBHOOK_URL)).toEqual([]);
      expect(await lastAttempt(config.id, delivery)).toMatchObject({
        step: "configuration",
        error: `webhook configuration ${change === "deleted" ? "was deleted" : "is disabled"} before the webhook was sent`,
      });
    });
  }

  it("a 401 to the endpoint's cached token fetches no new token and sends nothing more once the configuration is deleted", async () => {
    const ctx: { t?: Tenant; token?: string; configId?: string } = {};
    const sent = fakeNetwork({
      ...receiver(),
      // The first webhook is taken; before answering the second 401, the receiver's owner deletes the configuration.
      [WEBHOOK_URL]: async (_request, index) => {
        if (index === 0) return new Response(null, { status: 204 });
        const deleted = await api(ctx.t as Tenant, ctx.token as string, `/v1/webhook-configurations/${ctx.configId}`, "DELETE");
        expect(deleted.status).toBe(200);
        return new Response(null, { status: 401 });
      },
    });
    const t = await createTenant();
    const token = await issueToken(t);
    const configId = (await createConfig(t, token, "receiver-secret-0123456789", { token_cache: true })).id;
    Object.assign(ctx, { t, token, configId });
    const first = await publishTo(t, token, configId);
    await consume(DELIVERY_QUEUE, [{ id: "cached-1", attempts: 1, body: await ticketFor(t.orgId, first) }]);
    const second = await publishTo(t, token, configId);
    await consume(DELIVERY_QUEUE, [{ id: "cached-2", attempts: 1, body: await ticketFor(t.orgId, second) }]);
    // One token (the first attempt's, shared by the second), two webhooks, and no refetch or re-send.
    expect(sent.filter((r) => r.url === TOKEN_URL)).toHaveLength(1);
    expect(sent.filter((r) => r.url === WEBHOOK_URL)).toHaveLength(2);
    expect(await lastAttempt(configId, second)).toMatchObject({
      step: "configuration",
      error: "webhook configuration was deleted before the webhook was sent again",
    });
  });
});

async function endpointRowOf(configId: string): Promise<{ deleted: number }> {
  return (await endpointRow(configId)) as { deleted: number };
}

describe("the manager on a deleted organization (issue 29)", () => {
  it("answers 404 to the operator for every page and form of it", async () => {
    fakeNetwork(receiver());
    const { t, config, delivery, minted } = await deletedOrganization();
    const operator = await Browser.signedIn(ADMIN_TOKEN);
    const csrf = await operator.csrfOf("/manager/organizations");
    expect(csrf).not.toBe("");
    expect((await adminCall("DELETE", `/organizations/${t.orgId}`)).status).toBe(200);
    const ids: Record<string, string> = {
      org: t.orgId,
      user: t.userId,
      key: t.apiKeyId,
      client: t.clientId,
      token: minted.id,
      id: config.id,
      delivery,
    };
    const path = (template: string) => `/manager/organizations${template.replace(/:(\w+)/g, (_, p: string) => ids[p] ?? p)}`;
    const pages = [
      "/:org",
      "/:org/users",
      "/:org/api-keys",
      "/:org/api-keys/:key",
      "/:org/audit-log",
      "/:org/webhooks",
      "/:org/webhooks/:id",
      "/:org/webhooks/:id/deliveries/:delivery",
      "/:org/users/:user/client-credentials",
      "/:org/users/:user/client-credentials/:client/edit",
    ];
    for (const page of pages) expect((await operator.get(path(page))).status, page).toBe(404);
    const forms: [string, Record<string, string>][] = [
      ["/:org/users", { name: "Late" }],
      ["/:org/api-keys", { name: "late" }],
      ["/:org/admin-tokens", { name: "late" }],
      ["/:org/users/:user/client-credentials", { name: "late" }],
      ["/:org/api-keys/:key/limits", { per_second: "5" }],
      ["/:org/quota", { per_day: "5" }],
      ["/:org/webhooks/:id/test", {}],
      ["/:org/webhooks/:id/enable", {}],
      ["/:org/webhooks/:id/rotate-signing-secret", {}],
    ];
    for (const [form, fields] of forms) expect((await operator.post(path(form), { csrf, ...fields })).status, form).toBe(404);
    // Nothing was created by any of them.
    const counts = await runInDurableObject(orgStub(t), (_i, state) => ({
      users: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM users").one().n,
      keys: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys").one().n,
      credentials: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM client_credentials").one().n,
    }));
    expect(counts).toEqual({ users: 1, keys: 1, credentials: 1 });
  });
});
