import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { AttemptCall, Begun } from "../src/objects/endpoints/attempts";
import { DELIVERY_QUEUE } from "../src/webhooks/consumer";
import { consume, fakeNetwork, type Handler, json, RECEIVER, type Sent, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { createTenant, issueToken, type Tenant } from "./helpers";
import { api, createConfig, deliveryRowAt, endpointAlarm, lastAttempt, publishTo, ticketFor } from "./webhook-helpers";

let t: Tenant;
let token: string;

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  t = await createTenant();
  token = await issueToken(t);
});

type Change = "deleted" | "disabled";

/** A 307 target on the token endpoint's own origin (so the credentials would follow it). */
const MOVED_TOKEN_URL = `${RECEIVER}/oauth/token-moved`;
const DPOP = { token_url: TOKEN_URL, client_id: "keyway", client_secret: "dpop-secret-0123456789", dpop: true };

/**
 * What happened, in order: each request reaching the receiver (its URL) and, once, "answered"
 * when the configuration's DELETE or PATCH was answered 200. Nothing may follow "answered".
 */
function timeline() {
  const events: string[] = [];
  return {
    events,
    /** The handler, with each request it gets put on the timeline as it arrives. */
    watch:
      (handler: Handler): Handler =>
      (s, index) => {
        events.push(s.url);
        return handler(s, index);
      },
    afterAnswer: () => (events.includes("answered") ? events.slice(events.indexOf("answered") + 1) : ["(never answered)"]),
    /** Deletes or disables the configuration through the API, as its owner would. */
    end: async (configId: string, change: Change = "deleted") => {
      const res =
        change === "deleted"
          ? await api(t, token, `/v1/webhook-configurations/${configId}`, "DELETE")
          : await api(t, token, `/v1/webhook-configurations/${configId}`, "PATCH", { status: "disabled" });
      expect(res.status).toBe(200);
      events.push("answered");
    },
  };
}

const dpopToken = () => json({ access_token: "bound-token", token_type: "DPoP", expires_in: 3600 });
const bearerToken = () => json({ access_token: "plain-token", token_type: "Bearer", expires_in: 3600 });
const nonceAtWebhook = () =>
  new Response(null, { status: 401, headers: { "WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "hook-nonce" } });
const nonceAtToken = () => json({ error: "use_dpop_nonce" }, 400, { "DPoP-Nonce": "token-nonce" });
const of = (sent: Sent[], url: string) => sent.filter((s) => s.url === url);

/** The reason the endpoint's object records when it stops an attempt (objects/endpoints/object.ts `proceed`). */
const stoppedBecause = (change: Change, again: boolean) =>
  `webhook configuration ${change === "deleted" ? "was deleted" : "is disabled"} before the webhook was sent${again ? " again" : ""}`;

/** Hands the delivery's ticket to the consumer as the Queue would; asserts it was acked (a stop is no fault of ours). */
async function attempt(delivery: string, name: string, overrides: Partial<Env> = {}): Promise<void> {
  const outcome = await consume(DELIVERY_QUEUE, [{ id: name, attempts: 1, body: await ticketFor(t.orgId, delivery) }], overrides);
  expect(outcome).toEqual({ acked: [name], retried: [] });
}

/** After the attempt: stopped by keyway, and the endpoint's alarm has nothing left to send either. */
async function expectStopped(configId: string, delivery: string, reason: string, sent: Sent[]): Promise<void> {
  expect(await lastAttempt(configId, delivery)).toEqual({ step: "configuration", outcome: "failed", error: reason });
  expect((await deliveryRowAt(configId, delivery)).status).toBe("failed");
  const before = sent.length;
  await endpointAlarm(configId);
  expect(sent.slice(before)).toEqual([]);
}

/**
 * The endpoints' namespace as the consumer sees it, counting each call an attempt makes to the
 * endpoint's object; `onBegin` may change what `begin` answered (to give the attempt a slot to wait
 * for) and learns the attempt has begun.
 */
/**
 * The endpoint objects as the consumer reaches them, each call counted by its kind at the one
 * entry (`step`); a call to any other method of the object is counted in `others`, which the
 * budget holds empty.
 */
function watchedEndpoints(onBegin: (begun: Begun) => void = () => {}) {
  const calls = { begin: 0, proceed: 0, store_token: 0, token_rejected: 0, finish: 0 };
  const others: string[] = [];
  const namespace = {
    idFromName: env.ENDPOINTS.idFromName.bind(env.ENDPOINTS),
    get: (id: DurableObjectId) => {
      const real = env.ENDPOINTS.get(id);
      const step = async (call: AttemptCall, now: number) => {
        if (call.kind !== "dead_lettered") calls[call.kind]++;
        const answer = await real.step(call, now);
        if (call.kind === "begin") onBegin(answer as Begun);
        return answer;
      };
      return new Proxy(real, {
        get: (target, name) => {
          if (name === "step") return step;
          if (typeof name === "string") others.push(name);
          return Reflect.get(target, name);
        },
      });
    },
  } as unknown as Env["ENDPOINTS"];
  return { namespace, calls, others };
}

describe("the webhook's DPoP nonce round (RFC 9449 9)", () => {
  for (const change of ["deleted", "disabled"] as const) {
    it(`sends no second POST once the configuration is ${change} while the receiver holds the first`, async () => {
      const line = timeline();
      const ctx = { configId: "" };
      const sent = fakeNetwork({
        [TOKEN_URL]: line.watch(() => dpopToken()),
        [WEBHOOK_URL]: line.watch(async (_s, index) => {
          if (index > 0) return new Response(null, { status: 204 });
          // The receiver holds the first POST while the owner ends the configuration, then asks for a nonce.
          await line.end(ctx.configId, change);
          return nonceAtWebhook();
        }),
      });
      ctx.configId = (await createConfig(t, token, DPOP.client_secret, { oauth: DPOP })).id;
      const delivery = await publishTo(t, token, ctx.configId);
      await attempt(delivery, `nonce-${change}`);
      expect(line.afterAnswer()).toEqual([]);
      expect(of(sent, WEBHOOK_URL)).toHaveLength(1);
      await expectStopped(ctx.configId, delivery, stoppedBecause(change, true), sent);
    });
  }
});

describe("the token request", () => {
  it("makes no second request after a DPoP nonce challenge once the configuration is deleted, and sends no webhook", async () => {
    const line = timeline();
    const ctx = { configId: "" };
    const sent = fakeNetwork({
      [TOKEN_URL]: line.watch(async (_s, index) => {
        if (index > 0) return dpopToken();
        await line.end(ctx.configId);
        return nonceAtToken();
      }),
      [WEBHOOK_URL]: line.watch(() => new Response(null, { status: 204 })),
    });
    ctx.configId = (await createConfig(t, token, DPOP.client_secret, { oauth: DPOP })).id;
    const delivery = await publishTo(t, token, ctx.configId);
    await attempt(delivery, "token-nonce");
    expect(line.afterAnswer()).toEqual([]);
    expect(of(sent, TOKEN_URL)).toHaveLength(1);
    expect(of(sent, WEBHOOK_URL)).toEqual([]);
    await expectStopped(ctx.configId, delivery, stoppedBecause("deleted", false), sent);
  });

  it("does not follow a redirect once the configuration is deleted while the token endpoint held the request", async () => {
    const line = timeline();
    const ctx = { configId: "" };
    const sent = fakeNetwork({
      [TOKEN_URL]: line.watch(async () => {
        await line.end(ctx.configId);
        return new Response(null, { status: 307, headers: { Location: MOVED_TOKEN_URL } });
      }),
      [MOVED_TOKEN_URL]: line.watch(() => bearerToken()),
      [WEBHOOK_URL]: line.watch(() => new Response(null, { status: 204 })),
    });
    ctx.configId = (await createConfig(t, token, "receiver-secret-0123456789")).id;
    const delivery = await publishTo(t, token, ctx.configId);
    await attempt(delivery, "token-redirect");
    expect(line.afterAnswer()).toEqual([]);
    expect(of(sent, MOVED_TOKEN_URL)).toEqual([]);
    expect(of(sent, WEBHOOK_URL)).toEqual([]);
    await expectStopped(ctx.configId, delivery, stoppedBecause("deleted", false), sent);
  });
});

describe("the refetch after a 401 to the endpoint's cached token", () => {
  /**
   * A configuration with token_cache whose first delivery caches a token; the second delivery's
   * webhook is refused 401, and the refetch's token request is held while the configuration is
   * deleted, then answered by `tokenAnswer`.
   */
  async function refetchHeld(dpop: boolean, tokenAnswer: () => Response) {
    const line = timeline();
    const ctx = { configId: "" };
    const sent = fakeNetwork({
      [TOKEN_URL]: line.watch(async (_s, index) => {
        if (index === 0) return dpop ? dpopToken() : bearerToken();
        if (index === 1) await line.end(ctx.configId);
        return tokenAnswer();
      }),
      [WEBHOOK_URL]: line.watch((_s, index) => new Response(null, { status: index === 0 ? 204 : 401 })),
    });
    const oauth = dpop ? DPOP : { token_url: TOKEN_URL, client_id: "keyway", client_secret: "receiver-secret-0123456789" };
    ctx.configId = (await createConfig(t, token, oauth.client_secret, { oauth, token_cache: true })).id;
    await attempt(await publishTo(t, token, ctx.configId), "warm");
    const delivery = await publishTo(t, token, ctx.configId);
    await attempt(delivery, "refused");
    return { line, sent, configId: ctx.configId, delivery };
  }

  it("makes no second token request after its DPoP nonce challenge once the configuration is deleted", async () => {
    const { line, sent, configId, delivery } = await refetchHeld(true, nonceAtToken);
    expect(line.afterAnswer()).toEqual([]);
    // The warm-up's token and the refetch's first request; the warm-up's webhook and the refused one.
    expect(of(sent, TOKEN_URL)).toHaveLength(2);
    expect(of(sent, WEBHOOK_URL)).toHaveLength(2);
    await expectStopped(configId, delivery, stoppedBecause("deleted", true), sent);
  });

  it("does not send the webhook again with the new token once the configuration is deleted", async () => {
    const { line, sent, configId, delivery } = await refetchHeld(false, bearerToken);
    expect(line.afterAnswer()).toEqual([]);
    expect(of(sent, TOKEN_URL)).toHaveLength(2);
    expect(of(sent, WEBHOOK_URL)).toHaveLength(2);
    await expectStopped(configId, delivery, stoppedBecause("deleted", true), sent);
  });
});

describe("the rate limit's slot", () => {
  it("sends nothing once the configuration is disabled while the attempt waits for its slot", async () => {
    const line = timeline();
    const sent = fakeNetwork({
      [TOKEN_URL]: line.watch(() => bearerToken()),
      [WEBHOOK_URL]: line.watch(() => new Response(null, { status: 204 })),
    });
    const configId = (await createConfig(t, token, "receiver-secret-0123456789", { token_cache: true })).id;
    await attempt(await publishTo(t, token, configId), "warm-slot");
    const delivery = await publishTo(t, token, configId);
    // The object's slot, moved later than any real one would be, so the owner has time to act in
    // it: 3 s, since the disabling is a request through the API and both objects, which on a
    // loaded two-core machine (the whole suite at once) took longer than the 0.8 s this once had.
    let parked: () => void = () => {};
    const begun = new Promise<void>((done) => {
      parked = done;
    });
    const { namespace } = watchedEndpoints((answer) => {
      if (!answer.go) return;
      answer.slot = { not_before: Date.now() + 3_000, by: Date.now() + 3_800 };
      parked();
    });
    const running = attempt(delivery, "slot", { ENDPOINTS: namespace });
    await begun;
    await line.end(configId, "disabled");
    await running;
    expect(line.afterAnswer()).toEqual([]);
    expect(of(sent, WEBHOOK_URL)).toHaveLength(1); // the warm-up's only
    await expectStopped(configId, delivery, stoppedBecause("disabled", false), sent);
  });
});

describe("the budget: no extra call to the endpoint's object when nothing was awaited", () => {
  it("the first attempt of a token_cache endpoint: begin, the token kept, one check, the report", async () => {
    fakeNetwork({ [TOKEN_URL]: bearerToken, [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const configId = (await createConfig(t, token, "receiver-secret-0123456789", { token_cache: true })).id;
    const { namespace, calls, others } = watchedEndpoints();
    const delivery = await publishTo(t, token, configId);
    await attempt(delivery, "first-cached-budget", { ENDPOINTS: namespace });
    expect(calls).toEqual({ begin: 1, proceed: 1, store_token: 1, token_rejected: 0, finish: 1 });
    expect(others).toEqual([]);
    expect((await deliveryRowAt(configId, delivery)).status).toBe("delivered");
  });

  it("a 401 to the endpoint's token: the rejection grants the refetch (no check before the token request), one check before the webhook again", async () => {
    let refused = false;
    fakeNetwork({
      [TOKEN_URL]: bearerToken,
      [WEBHOOK_URL]: () => {
        if (!refused) {
          refused = true;
          return new Response(null, { status: 401 });
        }
        return new Response(null, { status: 204 });
      },
    });
    const configId = (await createConfig(t, token, "receiver-secret-0123456789", { token_cache: true })).id;
    refused = true; // the warm-up is delivered and leaves a cached token
    await attempt(await publishTo(t, token, configId), "warm-401-budget");
    refused = false;
    const { namespace, calls, others } = watchedEndpoints();
    const delivery = await publishTo(t, token, configId);
    await attempt(delivery, "401-budget", { ENDPOINTS: namespace });
    expect(calls).toEqual({ begin: 1, proceed: 1, store_token: 1, token_rejected: 1, finish: 1 });
    expect(others).toEqual([]);
    expect((await deliveryRowAt(configId, delivery)).status).toBe("delivered");
  });

  it("a cached token and no wait: straight from begin to the POST", async () => {
    const sent = fakeNetwork({ [TOKEN_URL]: bearerToken, [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const configId = (await createConfig(t, token, "receiver-secret-0123456789", { token_cache: true })).id;
    await attempt(await publishTo(t, token, configId), "warm-budget");
    const { namespace, calls, others } = watchedEndpoints();
    const delivery = await publishTo(t, token, configId);
    await attempt(delivery, "cached-budget", { ENDPOINTS: namespace });
    // The whole attempt: begin and the report, nothing between.
    expect(calls).toEqual({ begin: 1, proceed: 0, store_token: 0, token_rejected: 0, finish: 1 });
    expect(others).toEqual([]);
    expect(of(sent, TOKEN_URL)).toHaveLength(1);
    expect(of(sent, WEBHOOK_URL)).toHaveLength(2);
    expect((await deliveryRowAt(configId, delivery)).status).toBe("delivered");
  });

  it("a token request, then the webhook: one check between them; a nonce round adds one before its POST", async () => {
    fakeNetwork({ [TOKEN_URL]: bearerToken, [WEBHOOK_URL]: () => new Response(null, { status: 204 }) });
    const plain = (await createConfig(t, token, "receiver-secret-0123456789")).id;
    const first = watchedEndpoints();
    const delivery = await publishTo(t, token, plain);
    await attempt(delivery, "fetch-budget", { ENDPOINTS: first.namespace });
    expect(first.calls).toEqual({ begin: 1, proceed: 1, store_token: 0, token_rejected: 0, finish: 1 });
    expect(first.others).toEqual([]);
    expect((await deliveryRowAt(plain, delivery)).status).toBe("delivered");

    const sent = fakeNetwork({
      [TOKEN_URL]: dpopToken,
      [WEBHOOK_URL]: (_s, index) => (index === 0 ? nonceAtWebhook() : new Response(null, { status: 204 })),
    });
    const bound = (await createConfig(t, token, DPOP.client_secret, { oauth: DPOP })).id;
    const second = watchedEndpoints();
    const nonced = await publishTo(t, token, bound);
    await attempt(nonced, "nonce-budget", { ENDPOINTS: second.namespace });
    expect(second.calls).toEqual({ begin: 1, proceed: 2, store_token: 0, token_rejected: 0, finish: 1 });
    expect(second.others).toEqual([]);
    expect(of(sent, WEBHOOK_URL)).toHaveLength(2);
    expect((await deliveryRowAt(bound, nonced)).status).toBe("delivered");
  });
});
