/**
 * The manager's Re-send of a delivery is offered exactly when the API (POST
 * /v1/deliveries/{id}/retry) accepts one: not while an attempt is in flight under its lease, and
 * again from the moment that lease runs out with no outcome reported (the re-send then concludes
 * the attempt, as the alarm would, and makes a new one). Pages are served with an injected clock
 * at either side of the lease the object recorded, so the two sides are compared at the same
 * instant.
 */
import { describe, expect, it } from "vitest";
import { fakeNetwork, receiver } from "./fake-network";
import { ADMIN_TOKEN, authed, callAt, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, attemptNow, createConfig, deliveryRow, endpointOf, getDelivery, publishTo, ticketFor } from "./webhook-helpers";

const RESEND_LINK = "Re-send this delivery";

interface Setup {
  t: Tenant;
  bearer: string;
  b: Browser;
  /** The delivery's page in the manager. */
  page: string;
  id: string;
  configId: string;
}

/** A delivery of a `webhook.test` event, and an operator signed in to the manager. */
async function aDelivery(): Promise<Setup> {
  const t = await createTenant();
  const bearer = await issueToken(t);
  const configId = (await createConfig(t, bearer, "resend-receiver-secret")).id;
  const id = await publishTo(t, bearer, configId);
  const b = await Browser.signedIn(ADMIN_TOKEN, Date.now());
  return { t, bearer, b, id, configId, page: `/manager/organizations/${t.orgId}/webhooks/${configId}/deliveries/${id}` };
}

/** Its first attempt begun by a consumer that then reports nothing; the end of the lease the object recorded. */
async function beginUnreported(s: Setup): Promise<number> {
  expect((await endpointOf(s.configId).begin(await ticketFor(s.t.orgId, s.id), Date.now())).go).toBe(true);
  const leaseUntil = (await deliveryRow(s.t.orgId, s.id)).lease_until_ms;
  expect(leaseUntil).not.toBeNull();
  return leaseUntil!;
}

async function offersResend(s: Setup, now: number): Promise<boolean> {
  const res = await s.b.get(s.page, now);
  expect(res.status).toBe(200);
  return (await res.text()).includes(`<a href="${s.page}/resend">${RESEND_LINK}</a>`);
}

/** What the API answers a re-send at `now`. */
async function apiResend(s: Setup, now: number): Promise<number> {
  return (await callAt(now, `/v1/deliveries/${s.id}/retry`, authed(s.t, s.bearer, { method: "POST" }))).status;
}

describe("the manager's Re-send of a delivery", () => {
  it("is not offered while an attempt is in flight under its lease, up to its last millisecond, when the API refuses one too", async () => {
    const s = await aDelivery();
    expect(await offersResend(s, Date.now())).toBe(true);
    const leaseUntil = await beginUnreported(s);
    expect(await offersResend(s, Date.now())).toBe(false);
    expect(await offersResend(s, leaseUntil - 1)).toBe(false);
    expect(await apiResend(s, leaseUntil - 1)).toBe(409);
    expect(await deliveryRow(s.t.orgId, s.id)).toMatchObject({ attempts: 1, lease_until_ms: leaseUntil });
    // The API shows the same lease, so a client can tell a live attempt from an abandoned one.
    expect((await getDelivery(s.t, s.bearer, s.id)).in_flight_until).toBe(new Date(leaseUntil).toISOString());
  });

  it("is offered from the moment the attempt's lease has lapsed, and re-sends: the attempt is concluded and the next one delivers", async () => {
    const s = await aDelivery();
    const leaseUntil = await beginUnreported(s);
    expect(await offersResend(s, leaseUntil)).toBe(true);
    const html = await (await s.b.get(s.page, leaseUntil)).text();
    expect(html).toContain("Its attempt in flight reported no outcome before its deadline");

    const confirm = await s.b.get(`${s.page}/resend`, leaseUntil);
    expect(confirm.status).toBe(200);
    const resent = await s.b.post(`${s.page}/resend`, { csrf: Browser.csrf(await confirm.text()) }, leaseUntil);
    expect(resent.status).toBe(303);
    expect(resent.headers.get("location")).toBe(`${s.page}?notice=resent`);
    expect(await deliveryRow(s.t.orgId, s.id)).toMatchObject({
      status: "retrying",
      attempts: 1,
      lease_until_ms: null,
      due_ms: leaseUntil,
    });
    expect((await getDelivery(s.t, s.bearer, s.id)).in_flight_until).toBeNull();
    expect((await getDelivery(s.t, s.bearer, s.id)).attempts).toEqual([
      expect.objectContaining({
        number: 1,
        step: "configuration",
        outcome: "retry",
        error: expect.stringMatching(/no outcome was reported/),
      }),
    ]);

    fakeNetwork(receiver());
    const { record } = await attemptNow(s.t, s.bearer, s.id);
    expect(record.status).toBe("delivered");
    expect(record.attempts.map((a) => [a.number, a.outcome])).toEqual([
      [1, "retry"],
      [2, "delivered"],
    ]);
  });

  it("is not offered while the configuration is disabled, when the API refuses one too", async () => {
    const s = await aDelivery();
    expect((await api(s.t, s.bearer, `/v1/webhook-configurations/${s.configId}`, "PATCH", { status: "disabled" })).status).toBe(200);
    expect(await offersResend(s, Date.now())).toBe(false);
    expect(await apiResend(s, Date.now())).toBe(409);
  });
});
