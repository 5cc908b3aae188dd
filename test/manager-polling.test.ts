/**
 * Issue 45 in the manager app and the receivers' portal: the new-configuration form's choices of
 * delivery (push, polling) and signature scheme (v1, v1a); a v1a configuration's public key shown
 * on creation, on its page and in the portal, never a secret; a polling configuration's URL and
 * token shown once on creation, its backlog and last poll on its page and in the portal; its token
 * rotated (shown once, the old one refused) and revoked through confirmations with the session's
 * CSRF token; and the rotation of the signing key to another scheme.
 */
import { describe, expect, it } from "vitest";
import { fakeNetwork, RECEIVER, receiver } from "./fake-network";
import { ADMIN_TOKEN, admin, BASE, body, call, createTenant, type Tenant } from "./helpers";
import { Browser, urlMarkup } from "./manager-helpers";

const orgBase = (t: Tenant) => `/manager/organizations/${t.orgId}`;
const listPath = (t: Tenant) => `${orgBase(t)}/webhooks`;
/** The one-time value of a SecretOnce field on a page. */
const onceValue = (html: string, id: string) =>
  new RegExp(`id="${id}" class="secret" type="text" readonly="" value="([^"]+)"`).exec(html)?.[1];

interface View {
  id: string;
  delivery: string;
  signature_scheme: string | null;
  signing_public_key: string | null;
  polling: { url: string; token_active: boolean; backlog: number; last_polled_at: string | null } | null;
}

const configsOf = (t: Tenant) => admin<View[]>("GET", `/organizations/${t.orgId}/webhook-configurations`);

/** A polling read with this token (the REST route the receiver calls). */
const read = (id: string, token: string, query = "") =>
  call(`/v1/polling-endpoints/${id}/events${query}`, { headers: { Authorization: `Bearer ${token}` } });

/** Publishes a test event to the configuration (the operator's mirror of POST .../test). */
const publish = (t: Tenant, id: string) => admin("POST", `/organizations/${t.orgId}/webhook-configurations/${id}/test`);

/** A confirmation page's form: its action, hidden fields and CSRF token. */
async function confirmation(b: Browser, path: string) {
  const res = await b.get(path);
  expect(res.status, path).toBe(200);
  const html = await res.text();
  return {
    html,
    action: /<form method="post" action="([^"]+)" class="card"/.exec(html)?.[1] ?? "",
    csrf: Browser.csrf(html),
  };
}

/** Opens a portal session on a configuration, as the receiver's browser does. */
async function portalSession(t: Tenant, id: string): Promise<Browser> {
  const link = await admin<{ url: string }>("POST", `/organizations/${t.orgId}/webhook-configurations/${id}/portal-links`, {});
  const b = new Browser();
  const page = await (await b.get(link.url.slice(BASE.length))).text();
  const token = new URL(link.url).searchParams.get("token") ?? "";
  expect((await b.post("/portal/open", { csrf: Browser.csrf(page), token })).status).toBe(303);
  return b;
}

const pushFields = {
  url: `${RECEIVER}/webhooks`,
  token_url: `${RECEIVER}/oauth/token`,
  client_id: "keyway-at-receiver",
  client_secret: "polling-test-receiver-secret",
};

describe("the new-configuration form's delivery and signature scheme", () => {
  it("offers push or polling and v1 or v1a, push and v1 chosen", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const html = await (await b.get(`${orgBase(t)}/new-webhook`)).text();
    for (const [id, checked] of [
      ["delivery-push", true],
      ["delivery-polling", false],
      ["signature_scheme-v1", true],
      ["signature_scheme-v1a", false],
    ] as const) {
      const tag = new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
      expect(tag, id).toContain('type="radio"');
      expect(tag.includes("checked"), id).toBe(checked);
    }
  });

  it("creates a v1a configuration: its public key shown (no secret), on its page and in the portal too", async () => {
    fakeNetwork(receiver());
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const csrf = await b.csrfOf(`${orgBase(t)}/new-webhook`);
    const created = await b.post(listPath(t), { csrf, ...pushFields, description: "Ed receiver", signature_scheme: "v1a" });
    expect(created.status).toBe(200);
    const html = await created.text();
    const [config] = await configsOf(t);
    expect(config).toMatchObject({ signature_scheme: "v1a" });
    const key = config?.signing_public_key ?? "";
    expect(key).toMatch(/^whpk_/);
    expect(html).toContain(key);
    expect(onceValue(html, "signing-secret")).toBeUndefined();
    expect(html).not.toMatch(/whsec_/);

    const detail = await (await b.get(`${listPath(t)}/${config?.id}`)).text();
    expect(detail).toContain(key);
    expect(detail).toMatch(/Signature scheme: v1a, Ed25519/);
    expect(detail).toContain(`<a href="${listPath(t)}/${config?.id}/rotate-signing-secret?scheme=v1">Rotate to v1</a>`);

    const portal = await portalSession(t, config?.id ?? "");
    const home = await (await portal.get("/portal")).text();
    expect(home).toContain(key);
    expect(home).toMatch(/v1a, Ed25519/);
  });

  it("rotates the signing key to another scheme: to v1 the new secret once, back to v1a a new public key", async () => {
    fakeNetwork(receiver());
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const created = await b.post(listPath(t), { csrf: await b.csrfOf(`${orgBase(t)}/new-webhook`), ...pushFields });
    expect(onceValue(await created.text(), "signing-secret")).toMatch(/^whsec_/);
    const [config] = await configsOf(t);
    const page = `${listPath(t)}/${config?.id}`;

    const toV1a = await confirmation(b, `${page}/rotate-signing-secret?scheme=v1a`);
    expect(toV1a.html).toContain('<input type="hidden" name="signature_scheme" value="v1a"/>');
    const rotated = await (await b.post(toV1a.action, { csrf: toV1a.csrf, signature_scheme: "v1a" })).text();
    const view = (await configsOf(t))[0];
    expect(view).toMatchObject({ signature_scheme: "v1a" });
    expect(rotated).toContain(view?.signing_public_key ?? "missing");
    expect(onceValue(rotated, "signing-secret")).toBeUndefined();

    const toV1 = await confirmation(b, `${page}/rotate-signing-secret?scheme=v1`);
    const back = await (await b.post(toV1.action, { csrf: toV1.csrf, signature_scheme: "v1" })).text();
    expect(onceValue(back, "signing-secret")).toMatch(/^whsec_/);
    expect((await configsOf(t))[0]).toMatchObject({ signature_scheme: "v1", signing_public_key: null });
  });
});

describe("a polling configuration in the manager", () => {
  it("is created without URL or OAuth: its URL and token shown once; its page shows the backlog, last poll and token state", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const csrf = await b.csrfOf(`${orgBase(t)}/new-webhook`);
    // The push fields left empty (or filled: they are ignored for polling).
    const created = await b.post(listPath(t), {
      csrf,
      delivery: "polling",
      description: "Pull receiver",
      events: "order.created",
      url: "",
      token_url: "",
      client_id: "",
    });
    expect(created.status).toBe(200);
    const html = await created.text();
    const token = onceValue(html, "polling-token") ?? "";
    expect(token).toMatch(/^kw_poll_/);
    expect(onceValue(html, "signing-secret")).toBeUndefined();
    const [config] = await configsOf(t);
    expect(config).toMatchObject({ delivery: "polling", signature_scheme: null, polling: { token_active: true, backlog: 0 } });
    const pollingUrl = config?.polling?.url ?? "";
    expect(pollingUrl).toBe(`${BASE}/v1/polling-endpoints/${config?.id}/events`);
    expect(html).toContain(urlMarkup(pollingUrl));

    // Two events wait; the page says so, and that nothing has read yet.
    await publish(t, config?.id ?? "");
    await publish(t, config?.id ?? "");
    const page = `${listPath(t)}/${config?.id}`;
    const before = await (await b.get(page)).text();
    expect(before).toContain(urlMarkup(pollingUrl));
    expect(before).toContain("<dd>2 events not read yet</dd>");
    expect(before).toMatch(/<dt>Last poll<\/dt>\s*<dd>never<\/dd>/);
    expect(before).toMatch(/Active: the receiver reads with it/);
    expect(before).not.toContain("Test connection");
    expect(before).not.toContain('id="recovery"');
    expect(before).not.toContain("receiver-oauth");
    // The token is never on a later page.
    expect(before).not.toContain(token);
    expect(await (await b.get(listPath(t))).text()).not.toContain(token);

    // The receiver reads both and moves past them: the backlog is empty and the last poll is shown.
    const first = await read(config?.id ?? "", token);
    expect(first.status).toBe(200);
    const cursor = (await body<{ next_cursor: string }>(first)).data.next_cursor;
    expect((await read(config?.id ?? "", token, `?after=${cursor}`)).status).toBe(200);
    const after = await (await b.get(page)).text();
    expect(after).toContain("<dd>0 events not read yet</dd>");
    expect(after).toMatch(/<dt>Last poll<\/dt>\s*<dd><time datetime="/);

    // Its edit form has its description and event types only.
    const edit = await (await b.get(`${page}/edit`)).text();
    for (const id of ["description", "events", "operations"]) expect(edit).toContain(`id="${id}"`);
    for (const id of ["url", "token_url", "client_id", "rate_limit"]) expect(edit).not.toContain(`id="${id}"`);
    const saved = await b.post(page, { csrf: Browser.csrf(edit), description: "Pull receiver, renamed", events: "order.created" });
    expect(saved.status).toBe(303);
  });

  it("rotates its token (shown once, the old one refused) and revokes it, each confirmed, with the session's CSRF token", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const created = await b.post(listPath(t), { csrf: await b.csrfOf(`${orgBase(t)}/new-webhook`), delivery: "polling" });
    const first = onceValue(await created.text(), "polling-token") ?? "";
    const [config] = await configsOf(t);
    const id = config?.id ?? "";
    const page = `${listPath(t)}/${id}`;
    const detail = await (await b.get(page)).text();
    expect(detail).toContain(`<a href="${page}/rotate-polling-token">Rotate the polling token</a>`);
    expect(detail).toContain(`<a href="${page}/revoke-polling-token">Revoke the polling token</a>`);

    // Rotating: asked first (nothing changes), refused without the CSRF token, then the new token once.
    const asked = await confirmation(b, `${page}/rotate-polling-token`);
    expect(asked.html).toMatch(/<h1>Rotate the polling token of webhook configuration \(whk_[0-9a-z]+, polling\)\?<\/h1>/);
    expect(asked.action).toBe(`${page}/rotate-polling-token`);
    expect((await read(id, first)).status).toBe(200);
    expect((await b.post(asked.action, { csrf: "forged" })).status).toBe(403);
    expect((await read(id, first)).status).toBe(200);
    const rotated = await b.post(asked.action, { csrf: asked.csrf });
    expect(rotated.status).toBe(200);
    const second = onceValue(await rotated.text(), "polling-token") ?? "";
    expect(second).toMatch(/^kw_poll_/);
    expect(second).not.toBe(first);
    expect((await read(id, first)).status).toBe(401);
    expect((await read(id, second)).status).toBe(200);
    expect(await (await b.get(page)).text()).not.toContain(second);

    // Revoking: asked, then no token reads and the page says so (offering a rotation, not a revocation).
    const revoke = await confirmation(b, `${page}/revoke-polling-token`);
    expect(revoke.html).toMatch(/<h1>Revoke the polling token of webhook configuration/);
    const revoked = await b.post(revoke.action, { csrf: revoke.csrf });
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get("location")).toBe(`${page}?notice=polling-token-revoked`);
    expect((await read(id, second)).status).toBe(401);
    const after = await (await b.get(revoked.headers.get("location") ?? "")).text();
    expect(after).toMatch(/Polling token revoked/);
    expect(after).toMatch(/Revoked: no read succeeds/);
    expect(after).not.toContain("revoke-polling-token");
    expect((await configsOf(t))[0]?.polling?.token_active).toBe(false);

    // A push configuration has no polling token: its confirmation pages are refused.
    fakeNetwork(receiver());
    await b.post(listPath(t), { csrf: await b.csrfOf(`${orgBase(t)}/new-webhook`), ...pushFields });
    const push = (await configsOf(t)).find((c) => c.delivery === "push");
    expect((await b.get(`${listPath(t)}/${push?.id}/rotate-polling-token`)).status).toBe(409);
  });

  it("is shown in the portal with its URL, backlog and last poll, and no URL, OAuth or signing key", async () => {
    const t = await createTenant();
    const created = await admin<{ id: string; polling: { url: string; token: string } }>(
      "POST",
      `/organizations/${t.orgId}/webhook-configurations`,
      { delivery: "polling", description: "Portal pull" },
    );
    for (let i = 0; i < 3; i++) await publish(t, created.id);
    const portal = await portalSession(t, created.id);
    const home = await (await portal.get("/portal")).text();
    expect(home).toContain(urlMarkup(created.polling.url));
    expect(home).toContain("<dd>3 events not read yet</dd>");
    expect(home).toMatch(/<dt>Last poll<\/dt>\s*<dd>never<\/dd>/);
    for (const absent of ["Webhook URL", "Token URL", "Test connection", "Pause deliveries", "Signature scheme", created.polling.token])
      expect(home, absent).not.toContain(absent);
    expect(home).toContain('<a href="/portal/rotate-polling-token">Rotate the polling token</a>');
    const settings = await (await portal.get("/portal/settings")).text();
    expect(settings).toContain('id="events"');
    expect(settings).not.toContain('id="url"');
    expect(settings).not.toContain('id="token_url"');

    // A read moves the last poll; the portal shows it.
    expect((await read(created.id, created.polling.token, "?limit=1")).status).toBe(200);
    expect(await (await portal.get("/portal")).text()).toMatch(/<dt>Last poll<\/dt>\s*<dd><time datetime="/);

    // The receiver rotates its token as it rotates a signing secret: confirmed, shown once.
    const asked = await confirmation(portal, "/portal/rotate-polling-token");
    const rotated = await (await portal.post("/portal/rotate-polling-token", { csrf: asked.csrf })).text();
    const token = onceValue(rotated, "polling-token") ?? "";
    expect(token).toMatch(/^kw_poll_/);
    expect((await read(created.id, created.polling.token)).status).toBe(401);
    expect((await read(created.id, token)).status).toBe(200);
    expect(await (await portal.get("/portal")).text()).not.toContain(token);

    // Once the organization revokes it, the receiver cannot issue itself a new one.
    await admin("DELETE", `/organizations/${t.orgId}/webhook-configurations/${created.id}/polling-token`);
    const revokedHome = await (await portal.get("/portal")).text();
    expect(revokedHome).not.toContain("/portal/rotate-polling-token");
    expect(revokedHome).toContain("The organization has revoked this endpoint");
    const refused = await portal.post("/portal/rotate-polling-token", { csrf: asked.csrf });
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toMatch(/kw_poll_/);
    expect((await read(created.id, token)).status).toBe(401);
  });
});
