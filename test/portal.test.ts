/**
 * The portal for each webhook endpoint (issue 30 item 2), in workerd: a link opens once (a GET of
 * the link's page does not use it up; a second open is 410), within its expiry; the session's
 * cookie and its flags; every portal route with an id of another configuration or organization
 * answers 404 (the routes are read from the portal app's own route table, so a new route is
 * covered the moment it is added); an ended or expired session is refused; POSTs without the
 * session's CSRF token are refused; actions are audited as the receiver; frame-ancestors follows
 * the organization's portal_frame_origins; no secret appears on any page but the one-time ones;
 * the SSRF guard refuses a private URL entered in the portal; the organization lists and ends
 * sessions over REST; a recovery started from the portal (its window's refusals said on the form)
 * and followed there; the event catalog with schemas, its OpenAPI document, and subscribing from it.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { portalApp } from "../src/http/portal/routes";
import { fakeNetwork, RECEIVER, receiver } from "./fake-network";
import { ADMIN_TOKEN, BASE, body, call } from "./helpers";
import { Browser, setCookies, urlMarkup } from "./manager-helpers";
import { brand, link, type Org, open, org, PORTAL_COOKIE, RECEIVER_SECRET, session, TINY_PNG } from "./portal-helpers";
import { api, attemptNow, endpointAlarm, inEndpoint, webhooksOf } from "./webhook-helpers";

/** Starts a recovery of the last hour over REST; returns its id. */
async function recover(o: Org, config = 0): Promise<string> {
  const since = new Date(Date.now() - 3600_000).toISOString();
  const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[config]?.id}/recover`, "POST", { since });
  const json = await body<{ id: string }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data.id;
}

async function eventType(o: Org, payload: Record<string, unknown>): Promise<void> {
  const res = await api(o.t, o.bearer, "/v1/event-types", "POST", payload);
  expect(res.status, await res.clone().text()).toBe(201);
}

async function configView(o: Org, config = 0) {
  return (
    await body<{ events: string[] | null; status: string }>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[config]?.id}`))
  ).data;
}

async function auditOf(orgId: string) {
  const res = await call(`/admin/v1/organizations/${orgId}/audit-log`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  return (await body<{ action: string; actor: Record<string, string>; resource: { type: string; id: string } }[]>(res)).data;
}

describe("portal links", () => {
  it("are made over REST on the request's origin, open once from a POST (a GET does not use them), and refuse a second open with 410", async () => {
    const o = await org(1);
    const l = await link(o);
    expect(l.url).toMatch(new RegExp(`^${BASE}/portal/open\\?token=kw_portal_[A-Za-z0-9-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$`));
    expect(Date.parse(l.expires_at) - Date.now()).toBeGreaterThan(590_000);
    // A link scanner fetches the page: the link still opens afterwards.
    const scanner = await call(l.url.slice(BASE.length));
    expect(scanner.status).toBe(200);
    expect(await scanner.text()).toMatch(/Open the portal/);
    const b = new Browser();
    const res = await open(b, l.url);
    expect(res.status).toBe(303);
    const cookie = setCookies(res).find((c) => c.startsWith(`${PORTAL_COOKIE}=`)) ?? "";
    expect(cookie).toMatch(new RegExp(`^${PORTAL_COOKIE}=kw_portal_session_[A-Za-z0-9-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43};`));
    for (const flag of [/; Max-Age=28800/, /; Path=\//, /; HttpOnly/, /; Secure/, /; SameSite=None/, /; Partitioned/])
      expect(cookie).toMatch(flag);
    expect(cookie).not.toMatch(/Domain=/i);
    expect((await b.get("/portal")).status).toBe(200);
    // Opened again, in this browser or another: refused for good.
    for (const again of [b, new Browser()]) {
      const second = await open(again, l.url);
      expect(second.status).toBe(410);
      expect(await second.text()).toMatch(/already been opened/);
    }
  });

  it("expire: past expires_in the link does not open, and a session ends after 8 hours", async () => {
    const o = await org(1);
    const l = await link(o, 0, { expires_in: 60 });
    const late = await open(new Browser(), l.url, Date.now() + 61_000);
    expect(late.status).toBe(410);
    expect(await late.text()).toMatch(/expired/);
    const { b } = await session(o);
    expect((await b.get("/portal", Date.now() + 7 * 3600_000)).status).toBe(200);
    expect((await b.get("/portal", Date.now() + 8 * 3600_000 + 1000)).status).toBe(403);
  });

  it("refuse an open without the link page's form token, a malformed token, and a token naming another organization", async () => {
    const o = await org(1);
    const other = await org(1);
    const l = await link(o);
    const b = new Browser();
    await b.get(l.url.slice(BASE.length));
    expect((await b.post("/portal/open", { token: l.token })).status).toBe(403);
    expect((await b.post("/portal/open", { token: l.token, csrf: "forged" })).status).toBe(403);
    // The token's organization swapped for another's: its MAC no longer holds.
    const [head, payload, mac] = (new URL(l.url).searchParams.get("token") ?? "").split(".");
    const claims = JSON.parse(atob((payload ?? "").replaceAll("-", "+").replaceAll("_", "/"))) as { o: string };
    const forged = btoa(JSON.stringify({ ...claims, o: other.t.orgId }))
      .replaceAll("+", "-")
      .replaceAll("/", "_")
      .replaceAll("=", "");
    const swapped = `${BASE}/portal/open?token=${head}.${forged}.${mac}`;
    expect((await open(new Browser(), swapped)).status).toBe(410);
    expect((await open(new Browser(), `${BASE}/portal/open?token=kw_portal_nope`)).status).toBe(410);
    // The refusals did not use it up.
    expect((await open(new Browser(), l.url)).status).toBe(303);
  });

  it("answer 404 for another organization's configuration, and are validated", async () => {
    const o = await org(1);
    const other = await org(1);
    const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${other.configs[0]?.id}/portal-links`, "POST", {});
    expect(res.status).toBe(404);
    const bad = await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}/portal-links`, "POST", { expires_in: 7200 });
    expect(bad.status).toBe(400);
  });
});

describe("a portal session", () => {
  it("reaches its one configuration: every portal route with another endpoint's or organization's id answers 404", async () => {
    const o = await org(2);
    const other = await org(1);
    const { b, csrf } = await session(o, 0);
    const routes = portalApp(() => Date.now()).routes.filter((r) => r.method !== "ALL" && r.path.includes("/:"));
    expect(routes.length).toBeGreaterThanOrEqual(6);
    // An event type only the other organization has; recoveries of the other configuration (kept
    // by its own endpoint object) and of the other organization.
    await eventType(o, { name: "order.created" });
    await eventType(other, { name: "other.only" });
    const foreign = [
      o.deliveries[1],
      other.deliveries[0],
      o.configs[1]?.id,
      other.configs[0]?.id,
      "msg_00000000000000000000000000",
      await recover(o, 1),
      await recover(other, 0),
      "rcv_00000000000000000000000000",
      "other.only",
    ];
    // Each parameter's id of the session's own configuration: a new parameter must be named here.
    const logo = await brand(o, {}, TINY_PNG);
    expect(logo.status).toBe(200);
    const own: Record<string, string> = {
      delivery: o.deliveries[0] ?? "",
      recovery: await recover(o, 0),
      name: "order.created",
      sha256: String((logo.data.portal_logo as { sha256: string }).sha256),
    };
    for (const route of routes) {
      for (const id of foreign) {
        const path = route.path.replace(/:\w+/g, id ?? "");
        const res = route.method === "GET" ? await b.get(path) : await b.post(path, { csrf });
        expect(res.status, `${route.method} ${path}`).toBe(404);
        const text = await res.text();
        expect(text).toMatch(/There is no such page/);
        expect(text).not.toContain("endpoint 1");
      }
      // The same route with the session's own ids is served (so the 404s above are about the id).
      const path = route.path.replace(/:(\w+)/g, (_, param: string) => {
        expect(own[param], `an own id for :${param}`).toBeDefined();
        return own[param] ?? "";
      });
      if (route.method === "GET") expect((await b.get(path)).status, path).toBe(200);
    }
    // Searching another endpoint's webhook-id finds nothing; the list shows this endpoint's only.
    const search = await (await b.get(`/portal/deliveries?q=${o.deliveries[1]}`)).text();
    expect(search).toMatch(/No delivery/);
    const list = await (await b.get("/portal/deliveries")).text();
    expect(list).toContain(o.deliveries[0]);
    expect(list).not.toContain(o.deliveries[1]);
    expect((await b.get(`/portal/deliveries?q=${o.deliveries[0]}`)).headers.get("location")).toBe(`/portal/deliveries/${o.deliveries[0]}`);
  });

  it("shows the endpoint, its deliveries with attempts and masked headers, and can resend, send a test event and rotate the secret, audited as the receiver", async () => {
    const o = await org(1);
    fakeNetwork(receiver());
    await attemptNow(o.t, o.bearer, o.deliveries[0] ?? "");
    const { b, csrf, link: l } = await session(o);
    const home = await (await b.get("/portal")).text();
    expect(home).toContain(urlMarkup(`${RECEIVER}/webhooks`));
    expect(home).toContain(urlMarkup(`${RECEIVER}/oauth/token`));
    expect(home).toMatch(/Attempts, last 24 hours/);
    const detail = await (await b.get(`/portal/deliveries/${o.deliveries[0]}`)).text();
    expect(detail).toMatch(/v1,•••• \(HMAC-SHA256/);
    expect(detail).toMatch(/webhook-id/);
    const resent = await b.post(`/portal/deliveries/${o.deliveries[0]}/resend`, { csrf });
    expect(resent.status).toBe(303);
    expect((await b.post("/portal/test", { csrf })).status).toBe(303);
    const rotated = await b.post("/portal/rotate-signing-secret", { csrf });
    expect(rotated.status).toBe(200);
    const secretPage = await rotated.text();
    const secret = /id="signing-secret" class="secret" type="text" readonly="" value="([^"]+)"/.exec(secretPage)?.[1] ?? "";
    expect(secret).toMatch(/^whsec_/);
    // Shown once: no later page has it.
    for (const path of ["/portal", "/portal/deliveries", "/portal/settings"])
      expect(await (await b.get(path)).text()).not.toContain(secret);
    const entries = await auditOf(o.t.orgId);
    const opened = entries.find((e) => e.action === "portal_session.opened");
    expect(opened?.actor).toMatchObject({ type: "receiver", webhook_configuration_id: o.configs[0]?.id });
    const sessionId = opened?.actor.id ?? "";
    expect(sessionId).toMatch(/^pts_/);
    const created = entries.find((e) => e.action === "webhook_configuration.portal_link_created");
    expect(created?.actor).toMatchObject({ type: "api_client" });
    const byReceiver = entries.filter((e) => e.actor.type === "receiver" && e.actor.id === sessionId).map((e) => e.action);
    expect(byReceiver).toEqual(expect.arrayContaining(["portal_session.opened", "webhook_configuration.signing_secret_rotated"]));
    expect(JSON.stringify(entries)).not.toContain(l.token);
  });

  it("never shows a secret: the receiver's client secret, the signing secret, the link or the session cookie", async () => {
    const o = await org(1);
    const { b, link: l } = await session(o);
    const cookie = b.cookies.get(PORTAL_COOKIE) ?? "";
    expect(cookie).not.toBe("");
    for (const path of [
      "/portal",
      "/portal/deliveries",
      `/portal/deliveries/${o.deliveries[0]}`,
      `/portal/deliveries/${o.deliveries[0]}/resend`,
      "/portal/settings",
      "/portal/rotate-signing-secret",
      "/portal/recover",
      "/portal/catalog",
      "/portal/event-types/webhook.endpoint.disabled",
    ]) {
      const res = await b.get(path);
      expect(res.status, path).toBe(200);
      const html = await res.text();
      for (const secret of [RECEIVER_SECRET, o.configs[0]?.signing_secret ?? "", l.token, cookie]) expect(html, path).not.toContain(secret);
    }
  });

  it("refuses POSTs without the session's CSRF token, and changes nothing", async () => {
    const o = await org(1);
    const { b } = await session(o);
    for (const fields of [{}, { csrf: "forged" }] as Record<string, string>[]) {
      for (const path of [
        "/portal/test",
        "/portal/pause",
        "/portal/rotate-signing-secret",
        `/portal/deliveries/${o.deliveries[0]}/resend`,
      ]) {
        expect((await b.post(path, fields)).status, path).toBe(403);
      }
    }
    const config = await body<{ status: string }>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`));
    expect(config.data.status).toBe("active");
  });

  it("answers a refused settings form with every error beside its field and every value typed, the secret included", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const typed = {
      csrf,
      url: "https://10.0.0.1/hook", // the SSRF guard's, said with the schema's
      token_url: `${RECEIVER}/oauth/token`,
      client_secret: "typed-in-the-portal-kept",
      scope: "two  spaces", // the schema's: single spaces only
      events: "order.created, Not-An-Event", // the schema's, by its number
    };
    const refused = await b.post("/portal/settings", typed);
    expect(refused.status).toBe(400);
    const html = await refused.text();
    const error = (id: string) => new RegExp(`<p id="${id}-error" class="field-error" role="alert">([^<]+)</p>`).exec(html)?.[1] ?? "";
    expect(error("url")).toMatch(/^Webhook URL: /);
    expect(error("scope")).toMatch(/^Scope must be scope tokens separated by single spaces/);
    expect(error("events")).toBe("Event types: number 2 must be dot-separated lower-case words, e.g. order.created");
    expect(html).toContain("<strong>Nothing was changed.</strong>");
    const input = (id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
    expect(input("url")).toContain('value="https://10.0.0.1/hook"');
    expect(input("scope")).toContain('value="two  spaces"');
    expect(input("events")).toContain('value="order.created, Not-An-Event"');
    expect(input("client_secret")).toContain('value="typed-in-the-portal-kept"');
    expect(html).not.toContain(RECEIVER_SECRET);
  });

  it("refuses a form another site posts (hono/csrf) with 403, even with the session's token", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const res = await b.post("/portal/pause", { csrf }, undefined, { Origin: "https://attacker.example", "Sec-Fetch-Site": "cross-site" });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("The form was sent from another site");
    const config = await body<{ status: string }>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`));
    expect(config.data.status).toBe("active");
    // The link's own form too, whose body the portal reads before this check: a 403, not a failure.
    const open = await b.post("/portal/open", { link: "x" }, undefined, {
      Origin: "https://attacker.example",
      "Sec-Fetch-Site": "cross-site",
    });
    expect(open.status).toBe(403);
  });

  it("edits the URLs and events through the SSRF guard, pauses and resumes", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const fields = { csrf, url: `${RECEIVER}/webhooks`, token_url: `${RECEIVER}/oauth/token`, client_id: "keyway-at-receiver", events: "" };
    const refused = await b.post("/portal/settings", { ...fields, url: "https://10.0.0.1/hook" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/url/);
    const saved = await b.post("/portal/settings", { ...fields, url: `${RECEIVER}/v2/webhooks`, events: "order.created, order.paid" });
    expect(saved.status).toBe(303);
    const view = await body<{ url: string; events: string[]; status: string }>(
      await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`),
    );
    expect(view.data.url).toBe(`${RECEIVER}/v2/webhooks`);
    expect(view.data.events).toEqual(["order.created", "order.paid"]);
    expect((await b.post("/portal/pause", { csrf })).status).toBe(303);
    const status = async () =>
      (await body<{ status: string }>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`))).data.status;
    expect(await status()).toBe("paused");
    expect((await b.post("/portal/resume", { csrf })).status).toBe(303);
    expect(await status()).toBe("active");
    const updates = (await auditOf(o.t.orgId)).filter((e) => e.action === "webhook_configuration.updated");
    expect(updates.every((e) => e.actor.type === "receiver")).toBe(true);
  });

  it("is listed and ended by the organization over REST, and by signing out; an ended session is refused", async () => {
    const o = await org(1);
    const first = await session(o);
    const second = await session(o);
    const path = `/v1/webhook-configurations/${o.configs[0]?.id}/portal-sessions`;
    const listed = await body<{ id: string; status: string }[]>(await api(o.t, o.bearer, path));
    expect(listed.data.map((s) => s.status)).toEqual(["active", "active"]);
    const [a] = listed.data;
    const ended = await api(o.t, o.bearer, `${path}/${a?.id}`, "DELETE");
    expect(ended.status).toBe(200);
    expect((await body<{ status: string; ended_at: string }>(ended)).data.status).toBe("ended");
    const refused = await first.b.get("/portal");
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/session has ended/);
    expect((await second.b.get("/portal")).status).toBe(200);
    expect((await second.b.post("/portal/sign-out", { csrf: second.csrf })).status).toBe(200);
    expect((await second.b.get("/portal")).status).toBe(403);
    const after = await body<{ status: string }[]>(await api(o.t, o.bearer, path));
    expect(after.data.map((s) => s.status)).toEqual(["ended", "ended"]);
    const actions = (await auditOf(o.t.orgId)).filter((e) => e.action === "portal_session.ended");
    expect(actions.map((e) => e.actor.type).sort()).toEqual(["api_client", "receiver"]);
    // Another organization's session id, or one of another configuration: 404.
    const other = await org(1);
    const foreign = await api(
      other.t,
      other.bearer,
      `/v1/webhook-configurations/${other.configs[0]?.id}/portal-sessions/${a?.id}`,
      "DELETE",
    );
    expect(foreign.status).toBe(404);
  });

  it("ends with its configuration's deletion", async () => {
    const o = await org(1);
    const { b } = await session(o);
    expect((await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`, "DELETE")).status).toBe(200);
    expect((await b.get("/portal")).status).toBe(403);
  });
});

describe("the receiver's token endpoint in the portal (issue 31)", () => {
  const input = (html: string, id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
  const viewOf = async (o: Org) =>
    (await body<{ oauth: Record<string, unknown> }>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`))).data.oauth;

  it("edits scope, resource, audience and DPoP on the settings page; whose identity keyway asserts is shown, never editable (issue 42)", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const settings = await (await b.get("/portal/settings")).text();
    for (const id of ["scope", "audience", "dpop", "client_secret"]) expect(input(settings, id), id).not.toBe("");
    // The client id, the method and the assertion's audience are the organization's: shown, no field.
    for (const id of ["client_id", "auth_method-client_secret_post", "auth_method-private_key_jwt", "assertion_audience"]) {
      expect(input(settings, id), id).toBe("");
    }
    expect(settings).toContain("<code>keyway-at-receiver</code>");
    expect(settings).toMatch(/<textarea id="resource" name="resource"/);
    const fields = { csrf, url: `${RECEIVER}/webhooks`, token_url: `${RECEIVER}/oauth/token`, events: "" };
    const saved = await b.post("/portal/settings", { ...fields, scope: "hooks:receive", resource: `${RECEIVER}/hooks`, dpop: "on" });
    expect(saved.status).toBe(303);
    expect(await viewOf(o)).toMatchObject({
      auth_method: "client_secret_post",
      client_id: "keyway-at-receiver",
      scope: "hooks:receive",
      resource: [`${RECEIVER}/hooks`],
      dpop: true,
    });
    // A crafted form that changes them (the finding: private_key_jwt as another receiver's client) is refused, naming the field.
    for (const [name, extra] of [
      ["oauth.client_id", { client_id: "another-receivers-client" }],
      ["oauth.auth_method", { auth_method: "private_key_jwt" }],
      ["oauth.assertion_audience", { auth_method: "client_secret_post", assertion_audience: "https://another-receiver.example" }],
    ] as const) {
      const refused = await b.post("/portal/settings", { ...fields, ...extra });
      expect(refused.status, name).toBe(400);
      expect(await refused.text(), name).toContain(name);
    }
    expect(await viewOf(o)).toMatchObject({ auth_method: "client_secret_post", client_id: "keyway-at-receiver", assertion_audience: null });
  });

  it("tests the connection with a CSRF-checked POST and says what happened in words", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    expect(await (await b.get("/portal")).text()).toContain('action="/portal/test-connection"');
    expect((await b.post("/portal/test-connection", {})).status).toBe(403);
    fakeNetwork(receiver());
    const ok = await (await b.post("/portal/test-connection", { csrf })).text();
    expect(ok).toContain("Connection test: a token was issued");
    expect(ok).toMatch(/<dt>expires_in<\/dt>\s*<dd>300 s<\/dd>/);
    expect(ok).not.toContain("receiver-token-1");
    fakeNetwork({});
    // 5 s later: a session may test once every 5 s (the portal's limits, test/portal-limits.test.ts).
    const down = await (await b.post("/portal/test-connection", { csrf }, Date.now() + 5_000)).text();
    expect(down).toContain("Connection test: no token");
    expect(down).toMatch(/<dt>HTTP status<\/dt>\s*<dd>none: the token URL did not answer<\/dd>/);
  });
});

describe("recovery from the portal", () => {
  it("starts a recovery of a window, shows its progress and lists it, audited as the receiver", async () => {
    const o = await org(1);
    const configId = o.configs[0]?.id ?? "";
    // The delivery failed for good (as after its last retry): what a recovery re-sends.
    await inEndpoint(configId, "UPDATE deliveries SET status = 'failed', state = NULL, due_ms = NULL WHERE id = ?", o.deliveries[0] ?? "");
    const { b, csrf } = await session(o);
    const form = await (await b.get("/portal/recover")).text();
    expect(form).toMatch(/<a href="\/portal\/recover" aria-current="page">Recover<\/a>/);
    expect(form).toMatch(/<a href="\/portal\/catalog">Event catalog<\/a>/);
    expect(form).toMatch(/read as UTC/);
    expect(form).toMatch(/type="datetime-local"/);
    expect(form).toMatch(/No recovery yet/);
    // As a datetime-local input sends it: no zone (read as UTC), no seconds.
    const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
    const res = await b.post("/portal/recover", { csrf, since, until: "" });
    expect(res.status).toBe(303);
    const location = res.headers.get("location") ?? "";
    const id = /^\/portal\/recoveries\/(rcv_[0-9a-z]+)\?notice=recovery-started$/.exec(location)?.[1] ?? "";
    expect(id, location).not.toBe("");
    const rest = async () =>
      (
        await body<{ since: string; found: number; resent: number; skipped: number; status: string }>(
          await api(o.t, o.bearer, `/v1/webhook-configurations/${configId}/recoveries/${id}`),
        )
      ).data;
    const started = await rest();
    expect(started).toMatchObject({ since: `${since}:00.000Z`, found: 1 });
    const detail = await (await b.get(location)).text();
    expect(detail).toMatch(/Recovery started/);
    expect(detail).toMatch(/<dt>Failed deliveries found<\/dt>\s*<dd>1<\/dd>/);
    expect(detail).toContain(`${since.replace("T", " ")}:00 UTC`);
    // Reloading follows the job as the endpoint's object runs it.
    await endpointAlarm(configId);
    const now = await rest();
    const reloaded = await (await b.get(`/portal/recoveries/${id}`)).text();
    expect(reloaded).toContain(`<span class="badge status-${now.status}">${now.status}</span>`);
    // The badge says the status; the words after it do not say it again ("done done").
    expect(reloaded).not.toMatch(new RegExp(`${now.status}</span> ${now.status}`, "i"));
    expect(reloaded).toMatch(new RegExp(`<dt>Re-sent</dt>\\s*<dd>${now.resent}</dd>`));
    const list = await (await b.get("/portal/recover")).text();
    expect(list).toContain(`href="/portal/recoveries/${id}"`);
    expect(list).toMatch(/<th scope="col">Found<\/th>/);
    const started_ = (await auditOf(o.t.orgId)).find((e) => e.action === "webhook_configuration.recovery_started");
    expect(started_?.actor).toMatchObject({ type: "receiver", webhook_configuration_id: configId });
    expect(started_?.actor.id).toMatch(/^pts_/);
  });

  it("says what is wrong with a window on the form, the values kept; a paused endpoint is a 409 in words", async () => {
    const o = await org(1);
    const { b, csrf } = await session(o);
    const cases: [Record<string, string>, RegExp, string][] = [
      [{ since: "" }, /Since is required/, "since"],
      [{ since: "yesterday" }, /Since must be a date and time in UTC/, "since"],
      [{ since: "2030-01-01T00:00", until: "2029-01-01T00:00" }, /Until must be after since/, "until"],
      [{ since: "2001-01-01T00:00", until: "2001-01-02T00:00" }, /Until is before the oldest delivery kept/, "until"],
      [{ since: "2099-01-01T00:00" }, /Since must be before until \(or now\)/, "since"],
    ];
    for (const [fields, message, field] of cases) {
      const res = await b.post("/portal/recover", { csrf, until: "", ...fields });
      expect(res.status, JSON.stringify(fields)).toBe(400);
      const html = await res.text();
      expect(html, JSON.stringify(fields)).toMatch(/No recovery was started/);
      expect(html).toMatch(message);
      expect(html).toContain(`aria-describedby="${field}-error"`);
      expect(html).toContain(`aria-invalid="true"`);
      for (const value of Object.values(fields)) if (value !== "") expect(html).toContain(`value="${value}"`);
    }
    expect((await b.post("/portal/pause", { csrf })).status).toBe(303);
    const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
    const paused = await b.post("/portal/recover", { csrf, since, until: "" });
    expect(paused.status).toBe(409);
    const html = await paused.text();
    expect(html).toMatch(/Deliveries to this endpoint are paused/);
    expect(html).toContain(`value="${since}"`);
    // Disabled by the organization: said as such, not as a pause (issue 42's review).
    expect((await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}`, "PATCH", { status: "disabled" })).status).toBe(200);
    const disabled = await b.post("/portal/recover", { csrf, since, until: "" });
    expect(disabled.status).toBe(409);
    expect(await disabled.text()).toMatch(/Deliveries to this endpoint are disabled/);
    const list = await body<unknown[]>(await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[0]?.id}/recoveries`));
    expect(list.data).toEqual([]);
    // Without the session's CSRF token nothing starts.
    expect((await b.post("/portal/recover", { since })).status).toBe(403);
  });
});

describe("the event catalog in the portal", () => {
  const SCHEMA = {
    type: "object",
    required: ["order_id"],
    properties: { order_id: { type: "string", pattern: "^ord_" }, total: { type: "integer" } },
  };

  async function catalogOrg(): Promise<Org> {
    const o = await org(1);
    await eventType(o, {
      name: "order.created",
      description: "An order was placed.",
      schema: SCHEMA,
      examples: [{ order_id: "ord_1", total: 42 }],
    });
    await eventType(o, { name: "order.legacy", description: "The old shape.", deprecated: true });
    return o;
  }

  it("with no type of the organization's, says what the endpoint receives instead of listing only operational types", async () => {
    const o = await org(1);
    const { b } = await session(o);
    const empty = await (await b.get("/portal/catalog")).text();
    expect(empty).toContain('<h2 id="no-types">No event types described yet</h2>');
    expect(empty).toMatch(/this endpoint receives every event the provider publishes, unless a filter narrows them/);
    // What narrows it and how it arrives, with the way to each page.
    const notice = /<section class="card" aria-labelledby="no-types">([\s\S]*?)<\/section>/.exec(empty)?.[1] ?? "";
    for (const page of ["/portal/filter", "/portal/settings", "/portal/deliveries"]) expect(notice).toContain(`<a href="${page}">`);
    expect(notice).toMatch(/sent as a signed POST to this endpoint&#39;s URL/);
    expect(empty).toMatch(/keyway&#39;s own operational events: they describe the provider&#39;s other endpoints/);
    // Once the organization describes one, the notice is gone.
    await eventType(o, { name: "order.created", description: "An order was placed." });
    expect(await (await b.get("/portal/catalog")).text()).not.toContain("No event types described yet");
  });

  it("lists each type with its description, deprecation, subscription, schema and examples, and serves the OpenAPI document", async () => {
    const o = await catalogOrg();
    const { b } = await session(o);
    const res = await b.get("/portal/catalog");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toMatch(/<a href="\/portal\/catalog" aria-current="page">Event catalog<\/a>/);
    for (const name of ["order.created", "order.legacy", "webhook.endpoint.disabled", "webhook.delivery.exhausted"])
      expect(html).toContain(`href="/portal/event-types/${name}"`);
    expect(html).toContain("An order was placed.");
    expect(html).toMatch(/<span class="badge status-deprecated">deprecated<\/span>/);
    // The schema and the example, pretty-printed (Hono escapes the quotes).
    expect(html).toContain("&quot;required&quot;: [\n    &quot;order_id&quot;\n  ]");
    expect(html).toContain("&quot;order_id&quot;: &quot;ord_1&quot;");
    // Every event: the organization's types are received, keyway's operational ones are not.
    const section = (name: string) => html.slice(html.indexOf(`id="type-${name.replaceAll(".", "-")}"`)).split("</section>")[0] ?? "";
    expect(section("order.created")).toMatch(/<strong>Subscribed<\/strong>/);
    expect(section("webhook.endpoint.disabled")).toMatch(/<strong>Not subscribed<\/strong>/);
    expect(html).toContain('href="/portal/catalog/openapi.json"');
    const one = await (await b.get("/portal/event-types/order.created")).text();
    expect(one).toContain("&quot;pattern&quot;: &quot;^ord_&quot;");
    expect((await b.get("/portal/event-types/order.unknown")).status).toBe(404);

    const doc = await b.get("/portal/catalog/openapi.json");
    expect(doc.status).toBe(200);
    expect(doc.headers.get("content-type")).toMatch(/^application\/json/);
    const json = (await doc.json()) as { openapi: string; webhooks: Record<string, unknown> };
    expect(json.openapi).toMatch(/^3\.1\./);
    expect(Object.keys(json.webhooks)).toEqual(expect.arrayContaining(["order.created", "order.legacy", "webhook.endpoint.disabled"]));
    // The same document as the API's.
    const rest = await api(o.t, o.bearer, "/v1/event-catalog");
    expect(json).toEqual(await rest.json());
  });

  it("subscribes and unsubscribes a type with a button, through the configuration's events, audited as the receiver", async () => {
    const o = await catalogOrg();
    const { b, csrf } = await session(o);
    expect((await configView(o)).events).toBeNull();
    // An operational type is the organization's (issue 42, finding 2): refused, and nothing changes.
    const ops = await b.post("/portal/event-types/webhook.endpoint.disabled/subscribe", { csrf });
    expect(ops.status).toBe(403);
    expect(await ops.text()).toContain("only the organization&#39;s own operations configurations receive them");
    expect((await configView(o)).events).toBeNull();
    // From every event, unsubscribing a type names the catalog's others.
    const off = await b.post("/portal/event-types/order.legacy/unsubscribe", { csrf });
    expect(off.status).toBe(303);
    expect(off.headers.get("location")).toBe("/portal/event-types/order.legacy?notice=unsubscribed");
    expect((await configView(o)).events).toEqual(["order.created"]);
    const on = await b.post("/portal/event-types/order.legacy/subscribe", { csrf });
    expect(on.status).toBe(303);
    expect(await (await b.get(on.headers.get("location") ?? "")).text()).toMatch(/Subscribed; the next events/);
    expect((await configView(o)).events).toEqual(["order.created", "order.legacy"]);
    // Subscribing again what is subscribed changes nothing.
    expect((await b.post("/portal/event-types/order.created/subscribe", { csrf })).status).toBe(303);
    expect((await configView(o)).events).toEqual(["order.created", "order.legacy"]);
    expect((await b.post("/portal/event-types/order.legacy/unsubscribe", { csrf })).status).toBe(303);
    // The last named type cannot be unsubscribed (an empty list is not "none"): said, and nothing changes.
    const page = await (await b.get("/portal/catalog")).text();
    expect(page).toMatch(/The only type this endpoint is subscribed to/);
    const last = await b.post("/portal/event-types/order.created/unsubscribe", { csrf });
    expect(last.status).toBe(400);
    expect(await last.text()).toMatch(/would leave this endpoint subscribed to no event type/);
    expect((await configView(o)).events).toEqual(["order.created"]);
    // Without the CSRF token: refused.
    expect((await b.post("/portal/event-types/order.legacy/subscribe", {})).status).toBe(403);
    const updates = (await auditOf(o.t.orgId)).filter((e) => e.action === "webhook_configuration.updated");
    expect(updates).toHaveLength(3);
    expect(updates.every((e) => e.actor.type === "receiver")).toBe(true);
  });
});

describe("framing", () => {
  const csp = (res: Response) => res.headers.get("content-security-policy") ?? "";

  it("is refused by default (frame-ancestors 'none', X-Frame-Options DENY)", async () => {
    const o = await org(1);
    const l = await link(o);
    const { b } = await session(o);
    for (const res of [await call(l.url.slice(BASE.length)), await b.get("/portal"), await new Browser().get("/portal")]) {
      expect(csp(res)).toMatch(/frame-ancestors 'none'/);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
  });

  it("is allowed from the organization's portal_frame_origins only, on the link's page and in the session", async () => {
    const o = await org(1);
    await runInDurableObject(webhooksOf(o.t.orgId), (_i, state) => {
      state.storage.sql.exec(
        "UPDATE meta SET portal_frame_origins = ?",
        JSON.stringify(["https://dashboard.example", "https://admin.example:8443"]),
      );
    });
    const l = await link(o);
    const { b } = await session(o);
    for (const res of [await call(l.url.slice(BASE.length)), await b.get("/portal"), await b.get("/portal/deliveries")]) {
      expect(csp(res)).toMatch(/frame-ancestors https:\/\/dashboard\.example https:\/\/admin\.example:8443;/);
      expect(res.headers.get("x-frame-options")).toBeNull();
    }
    // Another organization's session is not framed by them.
    const other = await org(1);
    const theirs = await session(other);
    expect(csp(await theirs.b.get("/portal"))).toMatch(/frame-ancestors 'none'/);
  });
});

describe("a receiver holds its own endpoint and nothing else (issue 42)", () => {
  it("a private_key_jwt token URL stays on its origin from the portal; the organization may move it", async () => {
    const o = await org(1);
    const id = o.configs[0]?.id;
    const jwt = await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`, "PATCH", {
      oauth: { auth_method: "private_key_jwt", token_url: `${RECEIVER}/oauth/token` },
    });
    expect(jwt.status).toBe(200);
    const { b, csrf } = await session(o);
    const fields = { csrf, url: `${RECEIVER}/webhooks`, events: "" };
    const away = await b.post("/portal/settings", { ...fields, token_url: "https://another-receiver.example/oauth/token" });
    expect(away.status).toBe(400);
    expect(await away.text()).toContain("oauth.token_url");
    // Within its origin: the receiver's to change.
    expect((await b.post("/portal/settings", { ...fields, token_url: `${RECEIVER}/oauth/token2` })).status).toBe(303);
    const moved = await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`, "PATCH", {
      oauth: { token_url: "https://another-receiver.example/oauth/token" },
    });
    expect(moved.status).toBe(200);
  });

  it("no portal link opens an operations configuration, and a session ends when its configuration becomes one", async () => {
    const o = await org(1);
    const id = o.configs[0]?.id;
    const { b } = await session(o);
    expect((await b.get("/portal")).status).toBe(200);
    const ops = await api(o.t, o.bearer, `/v1/webhook-configurations/${id}`, "PATCH", { operations: true });
    expect(ops.status).toBe(200);
    expect((await b.get("/portal")).status).toBe(403);
    const refused = await api(o.t, o.bearer, `/v1/webhook-configurations/${id}/portal-links`, "POST");
    expect(refused.status).toBe(409);
    expect((await body(refused)).developer_message).toContain("operations configurations");
  });
});
