/**
 * A receiver can never lock the organization out of rotation (docs/receivers.md, "Rotating the
 * signing secret"): the portal's rotations are metered (429) and their graces take at most
 * RECEIVER_GRACE_SLOTS of the slots; the organization's own rotation never fails for lack of a
 * slot (it ends the oldest grace); and the organization can end every grace at once.
 */

import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { MAX_LIVE_SIGNING_SECRETS, RECEIVER_GRACE_SLOTS } from "../src/objects/webhooks/configurations";
import { fakeNetwork, receiver, type Sent } from "./fake-network";
import { BASE, body, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, attemptNow, createConfig } from "./webhook-helpers";

async function portal(t: Tenant, bearer: string, configId: string): Promise<{ b: Browser; csrf: string }> {
  const res = await api(t, bearer, `/v1/webhook-configurations/${configId}/portal-links`, "POST", {});
  const url = (await body<{ url: string }>(res)).data.url;
  const b = new Browser();
  const page = await (await b.get(url.slice(BASE.length))).text();
  const opened = await b.post("/portal/open", { csrf: Browser.csrf(page), token: new URL(url).searchParams.get("token") ?? "" });
  expect(opened.status).toBe(303);
  return { b, csrf: await b.csrfOf("/portal") };
}

const HOUR = 3_600_000;
const nextHour = () => Math.ceil(Date.now() / HOUR) * HOUR + HOUR + 100;

async function signatures(t: Tenant, bearer: string, configId: string): Promise<Sent> {
  const sent = fakeNetwork(receiver());
  const res = await api(t, bearer, `/v1/webhook-configurations/${configId}/test`, "POST");
  const id = (await body<{ deliveries: { id: string }[] }>(res)).data.deliveries[0]!.id;
  expect((await attemptNow(t, bearer, id)).record.status).toBe("delivered");
  return sent.find((s: Sent) => s.headers["webhook-id"] === id)!;
}

describe("signing-secret slots: the organization keeps its control", () => {
  it("the portal's rotations are metered and take at most their share of graces; the organization still rotates, and ends every grace", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    const config = await createConfig(t, bearer, "receiver-client-secret-signing-slots-01");
    const { b, csrf } = await portal(t, bearer, config.id);
    const t0 = nextHour();
    // Two at once from one session: the second is 429 (one every 10 s a session).
    expect((await b.post("/portal/rotate-signing-secret", { csrf }, t0)).status).toBe(200);
    const limited = await b.post("/portal/rotate-signing-secret", { csrf }, t0 + 1000);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).not.toBeNull();
    // Spaced out, the receiver keeps at most RECEIVER_GRACE_SLOTS earlier secrets signing: the next is 409.
    const statuses = [];
    for (let i = 1; i <= RECEIVER_GRACE_SLOTS + 1; i++)
      statuses.push((await b.post("/portal/rotate-signing-secret", { csrf }, t0 + i * 11_000)).status);
    expect(statuses).toEqual([...Array(RECEIVER_GRACE_SLOTS - 1).fill(200), 409, 409]);
    // The organization's rotations always succeed: past the ten slots they end the oldest grace.
    let secret = "";
    for (let i = 0; i < MAX_LIVE_SIGNING_SECRETS + 2; i++) {
      const res = await api(t, bearer, `/v1/webhook-configurations/${config.id}/rotate-signing-secret`, "POST");
      expect(res.status).toBe(200);
      secret = (await body<{ signing_secret: string }>(res)).data.signing_secret;
    }
    const full = await signatures(t, bearer, config.id);
    expect(full.headers["webhook-signature"]!.split(" ")).toHaveLength(MAX_LIVE_SIGNING_SECRETS);
    // After a leak: every grace ends now, and only the current secret signs.
    const ended = await api(t, bearer, `/v1/webhook-configurations/${config.id}/end-signing-graces`, "POST");
    expect(ended.status).toBe(200);
    expect((await body<{ graces_ended: number }>(ended)).data.graces_ended).toBe(MAX_LIVE_SIGNING_SECRETS - 1);
    const only = await signatures(t, bearer, config.id);
    expect(only.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
    expect(() => new Webhook(secret).verify(only.body, only.headers)).not.toThrow();
  });
});
