/**
 * The manager app's pages for what receivers are offered (issue 30 items 1, 2, 3 and 5): the
 * event catalog (create, edit and delete a type, the domain's refusal naming a path inside the
 * schema or the examples shown beside that field with the text kept; keyway's own types
 * read-only), the webhook settings, a recovery started from a configuration's page (then listed
 * there and followed on its own page), a portal link shown once and the session it opened ended
 * through its confirmation; and an organization administrator, who finds another organization's
 * event types, settings, recoveries and portal sessions not found (404), by any URL.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { fakeNetwork, receiver } from "./fake-network";
import { ADMIN_TOKEN, admin, adminCall, BASE, body, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, createConfig } from "./webhook-helpers";

const RECEIVER_SECRET = "manager-receivers-client-secret-0042";

const ORDER_SCHEMA = {
  type: "object",
  required: ["order_id", "total"],
  properties: { order_id: { type: "string" }, total: { type: "number", minimum: 0 } },
};

interface Org {
  t: Tenant;
  bearer: string;
  config: string;
}

async function organization(description = "orders"): Promise<Org> {
  const t = await createTenant();
  const bearer = await issueToken(t);
  const config = await createConfig(t, bearer, RECEIVER_SECRET, { description });
  return { t, bearer, config: config.id };
}

const orgPath = (o: Org) => `/manager/organizations/${o.t.orgId}`;
const typesPath = (o: Org) => `${orgPath(o)}/event-types`;
const webhookPath = (o: Org) => `${orgPath(o)}/webhooks/${o.config}`;

/** A textarea's content on a page, by id (as HTML: entities not decoded). */
const textarea = (html: string, id: string) => new RegExp(`<textarea id="${id}"[^>]*>([\\s\\S]*?)</textarea>`).exec(html)?.[1];
const escaped = (text: string) => text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

beforeAll(() => {
  fakeNetwork(receiver());
});

describe("event types in the manager", () => {
  it("creates a type with a schema, shows a failing example beside its field with the text kept, edits and deletes it", async () => {
    const o = await organization();
    const b = await Browser.signedIn(ADMIN_TOKEN);

    // The organization's page links the catalog next to the webhooks.
    const home = await (await b.get(orgPath(o))).text();
    expect(home).toContain(`<a href="${typesPath(o)}">Event types</a>`);
    const empty = await (await b.get(typesPath(o))).text();
    expect(empty).toMatch(/No event types of this organization yet/);
    // keyway's operational types are listed, and read-only.
    expect(empty).toContain(`<a href="${typesPath(o)}/webhook.endpoint.disabled">`);
    const operational = await b.get(`${typesPath(o)}/webhook.endpoint.disabled`);
    expect(operational.status).toBe(200);
    const operationalHtml = await operational.text();
    expect(operationalHtml).toMatch(/cannot be changed or deleted/);
    // No edit form (its "Send an example" form is no edit: issue 42).
    expect(operationalHtml).not.toMatch(/<textarea id="(schema|examples)"/);

    const form = await (await b.get(`${orgPath(o)}/new-event-type`)).text();
    expect(form).toContain("<h1>New event type</h1>");
    for (const id of ["name", "description", "schema", "examples", "deprecated"]) expect(form).toContain(`for="${id}"`);
    const csrf = Browser.csrf(form);

    // Without the CSRF token nothing is created.
    const forged = await b.post(typesPath(o), { name: "order.created" });
    expect(forged.status).toBe(403);

    // An example that breaks the schema: 400, the path named beside the examples field, the text kept.
    const schemaText = JSON.stringify(ORDER_SCHEMA, null, 2);
    const badExamples = '[{"order_id": "o_1", "total": -5}]';
    const refused = await b.post(typesPath(o), {
      csrf,
      name: "order.created",
      description: "An order was placed.",
      schema: schemaText,
      examples: badExamples,
    });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toMatch(/Nothing was created\./);
    expect(refusedHtml).toMatch(
      /<p id="examples-error" class="field-error" role="alert">Examples: examples\.0\.total [^<]*<\/p>\s*<textarea id="examples"[^>]*aria-invalid="true"/,
    );
    expect(textarea(refusedHtml, "examples")).toBe(escaped(badExamples));
    expect(textarea(refusedHtml, "schema")).toBe(escaped(schemaText));
    expect(refusedHtml).toContain('value="order.created"');
    expect(refusedHtml).toContain('value="An order was placed."');
    expect((await adminCall("GET", `/organizations/${o.t.orgId}/event-types/order.created`)).status).toBe(404);

    // A schema that is not JSON is named on its own field.
    const notJson = await b.post(typesPath(o), { csrf, name: "order.created", schema: "{type: object" });
    expect(notJson.status).toBe(400);
    expect(await notJson.text()).toMatch(/<p id="schema-error" class="field-error" role="alert">Schema is not valid JSON/);

    const created = await b.post(typesPath(o), {
      csrf,
      name: "order.created",
      description: "An order was placed.",
      schema: schemaText,
      examples: '[{"order_id": "o_1", "total": 5}]',
    });
    expect(created.status).toBe(303);
    expect(created.headers.get("location")).toBe(`${typesPath(o)}/order.created?notice=event-type-saved`);
    expect(await admin("GET", `/organizations/${o.t.orgId}/event-types/order.created`)).toMatchObject({
      name: "order.created",
      description: "An order was placed.",
      schema: ORDER_SCHEMA,
      examples: [{ order_id: "o_1", total: 5 }],
      deprecated: false,
    });
    // Publishing is now checked against it.
    const publish = await api(o.t, o.bearer, "/v1/events", "POST", { type: "order.created", data: { order_id: "o_2", total: -1 } });
    expect(publish.status).toBe(400);

    const list = await (await b.get(typesPath(o))).text();
    expect(list).toMatch(/<a href="[^"]+\/event-types\/order\.created"><code>order\.created<\/code><\/a>/);
    expect(list).not.toMatch(/No event types of this organization yet/);

    // Editing: deprecated, a new description, the examples emptied.
    const editPage = await (await b.get(`${typesPath(o)}/order.created?notice=event-type-saved`)).text();
    expect(editPage).toMatch(/Event type saved/);
    expect(textarea(editPage, "schema")).toBe(escaped(schemaText));
    const edited = await b.post(`${typesPath(o)}/order.created`, {
      csrf,
      description: "An order was placed (v2).",
      schema: schemaText,
      examples: "",
      deprecated: "on",
    });
    expect(edited.status).toBe(303);
    expect(await admin("GET", `/organizations/${o.t.orgId}/event-types/order.created`)).toMatchObject({
      description: "An order was placed (v2).",
      examples: [],
      deprecated: true,
    });
    // An edit the schema refuses keeps the form's text.
    const badEdit = await b.post(`${typesPath(o)}/order.created`, { csrf, description: "x", schema: schemaText, examples: "[{}]" });
    expect(badEdit.status).toBe(400);
    const badEditHtml = await badEdit.text();
    expect(badEditHtml).toMatch(/id="examples-error"[^>]*>Examples: examples\.0\b/);
    expect(textarea(badEditHtml, "examples")).toBe("[{}]");

    // Deleting: a confirmation naming it, then only its form deletes.
    const confirm = await b.get(`${typesPath(o)}/order.created/delete`);
    expect(confirm.status).toBe(200);
    const confirmHtml = await confirm.text();
    expect(confirmHtml).toContain("<h1>Delete event type order.created (“An order was placed (v2).”)?</h1>");
    expect(confirmHtml).toContain(`action="${typesPath(o)}/order.created/delete"`);
    expect((await adminCall("GET", `/organizations/${o.t.orgId}/event-types/order.created`)).status).toBe(200);
    const deleted = await b.post(`${typesPath(o)}/order.created/delete`, { csrf });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get("location")).toBe(`${typesPath(o)}?notice=event-type-deleted`);
    expect((await adminCall("GET", `/organizations/${o.t.orgId}/event-types/order.created`)).status).toBe(404);
    expect((await b.get(`${typesPath(o)}/order.created`)).status).toBe(404);
  });

  it("saves the webhook settings, naming a bad frame origin by its line with the text kept", async () => {
    const o = await organization();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const settings = `${orgPath(o)}/webhook-settings`;
    const pageHtml = await (await b.get(settings)).text();
    expect(pageHtml).toContain("<h1>Webhook settings</h1>");
    expect(pageHtml).toMatch(/<input id="refuse_unknown_event_types" name="refuse_unknown_event_types" type="checkbox"\/?>/);
    const csrf = Browser.csrf(pageHtml);

    const origins = "https://dashboard.example.com\nhttp://insecure.example.com";
    const refused = await b.post(settings, { csrf, refuse_unknown_event_types: "on", portal_frame_origins: origins });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toMatch(/id="portal_frame_origins-error"[^>]*>Portal frame origins: line 2 \(http:\/\/insecure\.example\.com\)/);
    expect(textarea(refusedHtml, "portal_frame_origins")).toBe(origins);
    expect(await admin("GET", `/organizations/${o.t.orgId}/webhook-settings`)).toEqual({
      refuse_unknown_event_types: false,
      portal_frame_origins: [],
      portal_display_name: null,
      portal_accent_color: null,
      portal_logo: null,
    });

    const saved = await b.post(settings, {
      csrf,
      refuse_unknown_event_types: "on",
      portal_frame_origins: " https://dashboard.example.com \r\n\r\nhttps://admin.example.com:8443",
    });
    expect(saved.status).toBe(303);
    expect(await admin("GET", `/organizations/${o.t.orgId}/webhook-settings`)).toEqual({
      refuse_unknown_event_types: true,
      portal_frame_origins: ["https://dashboard.example.com", "https://admin.example.com:8443"],
      portal_display_name: null,
      portal_accent_color: null,
      portal_logo: null,
    });
    const again = await (await b.get(`${settings}?notice=settings-saved`)).text();
    expect(again).toMatch(/Webhook settings saved/);
    expect(again).toMatch(/<input id="refuse_unknown_event_types" name="refuse_unknown_event_types" type="checkbox" checked/);
    // Unknown types are now refused.
    const publish = await api(o.t, o.bearer, "/v1/events", "POST", { type: "nobody.knows", data: {} });
    expect(publish.status).toBe(400);
  });
});

describe("recovery from the manager", () => {
  it("starts a recovery from the configuration's page, which lists it, and shows its progress on a page to reload", async () => {
    const o = await organization();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const before = await (await b.get(webhookPath(o))).text();
    expect(before).toContain('<h2 id="recovery">Recovery after an outage</h2>');
    expect(before).toContain(`<form method="post" action="${webhookPath(o)}/recover"`);
    expect(before).toMatch(/Since \(UTC\)/);
    expect(before).toMatch(/No recoveries yet/);
    const csrf = Browser.csrf(before);

    // A time that is not one: the form again, the message beside the field, the text kept.
    const refused = await b.post(`${webhookPath(o)}/recover`, { csrf, since: "yesterday", until: "" });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toMatch(/id="since-error"[^>]*>Since \(UTC\) must be a date and time in UTC/);
    expect(refusedHtml).toContain('value="yesterday"');
    // A window that ends before it starts.
    const backwards = await b.post(`${webhookPath(o)}/recover`, { csrf, since: "2030-01-02T00:00", until: "2030-01-01T00:00" });
    expect(backwards.status).toBe(400);

    const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
    const started = await b.post(`${webhookPath(o)}/recover`, { csrf, since, until: "" });
    expect(started.status).toBe(303);
    const location = started.headers.get("location") ?? "";
    const id = /\/recoveries\/(rcv_[0-9a-z]+)\?notice=recovery-started$/.exec(location)?.[1] ?? "";
    expect(id, location).not.toBe("");

    const detail = await b.get(location);
    expect(detail.status).toBe(200);
    const detailHtml = await detail.text();
    expect(detailHtml).toContain(`<h1>Recovery ${id}</h1>`);
    expect(detailHtml).toMatch(/Recovery started/);
    expect(detailHtml).toContain(`${since.replace("T", " ")}:00 UTC to `);
    expect(detailHtml).toMatch(/<dt>Found<\/dt>\s*<dd>\d+ failed deliveries/);
    // The badge says the status; the words after it do not say it again ("running Running").
    expect(detailHtml).not.toMatch(/status-(running|done|stopped)">\1<\/span> \1/i);
    expect(detailHtml).toContain(`<a href="${webhookPath(o)}/recoveries/${id}">Reload this recovery</a>`);
    // The operator API sees the same recovery, started by the operator.
    const viewed = await admin<{ id: string; since: string }>(
      "GET",
      `/organizations/${o.t.orgId}/webhook-configurations/${o.config}/recoveries/${id}`,
    );
    expect(viewed.since).toBe(new Date(`${since}Z`).toISOString());

    const after = await (await b.get(webhookPath(o))).text();
    expect(after).toContain(`<a href="${webhookPath(o)}/recoveries/${id}"><code>${id}</code></a>`);
    const all = await b.get(`${webhookPath(o)}/recoveries`);
    expect(all.status).toBe(200);
    expect(await all.text()).toContain(id);
  });
});

describe("portal links and sessions from the manager", () => {
  it("shows a portal link once with its expiry, lists the session it opened, and ends it through a confirmation", async () => {
    const o = await organization();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const configPage = await (await b.get(webhookPath(o))).text();
    expect(configPage).toMatch(/<h2 id="portal">Receiver(&#39;|')s portal<\/h2>/);
    expect(configPage).toMatch(/No portal sessions in the last day/);
    const csrf = Browser.csrf(configPage);

    const created = await b.post(`${webhookPath(o)}/portal-links`, { csrf, expires_in: "300" });
    expect(created.status).toBe(200);
    const shown = await created.text();
    const url = /id="portal-link" class="secret" type="text" readonly="" value="([^"]+)"/.exec(shown)?.[1] ?? "";
    expect(url).toMatch(/\/portal\/open\?token=kw_portal_[A-Za-z0-9-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(shown).toMatch(/shown only this once/);
    expect(shown).toMatch(/single-use/);
    // Relative to the request ("in 5 minutes"), the exact UTC time on hover and for screen readers.
    expect(shown).toMatch(
      /It expires <time datetime="[^"]+" title="(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC)">in 5 minutes<span class="sr-only"> \(\1\)<\/span><\/time>/,
    );
    const token = new URL(url).searchParams.get("token") ?? "";
    // A lifetime the API refuses is refused here too.
    expect((await b.post(`${webhookPath(o)}/portal-links`, { csrf, expires_in: "5" })).status).toBe(400);

    // The receiver opens it.
    const receiverBrowser = new Browser();
    const openPage = await (await receiverBrowser.get(url.slice(BASE.length))).text();
    const opened = await receiverBrowser.post("/portal/open", { csrf: Browser.csrf(openPage), token });
    expect(opened.status).toBe(303);
    expect((await receiverBrowser.get("/portal")).status).toBe(200);

    const withSession = await (await b.get(webhookPath(o))).text();
    expect(withSession).not.toContain(token);
    const session = /\/portal-sessions\/(pts_[0-9a-z]+)\/end/.exec(withSession)?.[1] ?? "";
    expect(session).not.toBe("");
    expect(withSession).toMatch(/<span class="badge status-active">active<\/span>/);

    const confirm = await b.get(`${webhookPath(o)}/portal-sessions/${session}/end`);
    expect(confirm.status).toBe(200);
    const confirmHtml = await confirm.text();
    expect(confirmHtml).toContain(`<h1>End portal session ${session} of webhook configuration ${o.config}`);
    // The GET changed nothing: the receiver still reaches its portal.
    expect((await receiverBrowser.get("/portal")).status).toBe(200);
    const ended = await b.post(`${webhookPath(o)}/portal-sessions/${session}/end`, { csrf: Browser.csrf(confirmHtml) });
    expect(ended.status).toBe(303);
    expect(ended.headers.get("location")).toBe(`${webhookPath(o)}?notice=portal-session-ended#portal`);
    expect((await receiverBrowser.get("/portal")).status).not.toBe(200);
    const sessions = await admin<{ id: string; status: string }[]>(
      "GET",
      `/organizations/${o.t.orgId}/webhook-configurations/${o.config}/portal-sessions`,
    );
    expect(sessions).toEqual([expect.objectContaining({ id: session, status: "ended" })]);
    const listed = await (await b.get(`${webhookPath(o)}?notice=portal-session-ended`)).text();
    expect(listed).toMatch(/Portal session ended/);
    expect(listed).not.toContain(`/portal-sessions/${session}/end`);
  });
});

describe("an organization administrator and another organization's", () => {
  let mine: Org;
  let other: Org;
  let b: Browser;
  let recovery: string;
  let session: string;

  beforeAll(async () => {
    mine = await organization("mine");
    other = await organization("theirs");
    await api(other.t, other.bearer, "/v1/event-types", "POST", { name: "their.secret", description: "theirs" });
    const rec = await api(other.t, other.bearer, `/v1/webhook-configurations/${other.config}/recover`, "POST", {
      since: new Date(Date.now() - 60_000).toISOString(),
    });
    recovery = (await body<{ id: string }>(rec)).data.id;
    const link = (
      await body<{ url: string }>(await api(other.t, other.bearer, `/v1/webhook-configurations/${other.config}/portal-links`, "POST", {}))
    ).data.url;
    const receiverBrowser = new Browser();
    const openPage = await (await receiverBrowser.get(link.slice(BASE.length))).text();
    await receiverBrowser.post("/portal/open", { csrf: Browser.csrf(openPage), token: new URL(link).searchParams.get("token") ?? "" });
    session =
      (await admin<{ id: string }[]>("GET", `/organizations/${other.t.orgId}/webhook-configurations/${other.config}/portal-sessions`))[0]
        ?.id ?? "";
    expect(session).toMatch(/^pts_/);
    const minted = await admin<{ token: string }>("POST", `/organizations/${mine.t.orgId}/admin-tokens`, { name: "own" });
    b = await Browser.signedIn(minted.token);
  });

  it("event types and settings: not found (404), and nothing changes", async () => {
    const csrf = await b.csrfOf(`${orgPath(mine)}/new-event-type`);
    for (const path of [
      typesPath(other),
      `${orgPath(other)}/new-event-type`,
      `${typesPath(other)}/their.secret`,
      `${typesPath(other)}/their.secret/delete`,
      `${orgPath(other)}/webhook-settings`,
    ]) {
      const res = await b.get(path);
      expect(res.status, path).toBe(404);
      expect(await res.text(), path).not.toContain("theirs");
    }
    // Their type under this administrator's own organization is not there either.
    expect((await b.get(`${typesPath(mine)}/their.secret`)).status).toBe(404);
    const posts: [string, Record<string, string>][] = [
      [typesPath(other), { csrf, name: "planted.type" }],
      [`${typesPath(other)}/their.secret`, { csrf, description: "taken over", schema: "", examples: "" }],
      [`${typesPath(other)}/their.secret/delete`, { csrf }],
      [`${orgPath(other)}/webhook-settings`, { csrf, refuse_unknown_event_types: "on", portal_frame_origins: "https://evil.example" }],
    ];
    for (const [path, fields] of posts) expect((await b.post(path, fields)).status, `POST ${path}`).toBe(404);
    expect(await admin("GET", `/organizations/${other.t.orgId}/event-types/their.secret`)).toMatchObject({ description: "theirs" });
    expect((await adminCall("GET", `/organizations/${other.t.orgId}/event-types/planted.type`)).status).toBe(404);
    expect(await admin("GET", `/organizations/${other.t.orgId}/webhook-settings`)).toEqual({
      refuse_unknown_event_types: false,
      portal_frame_origins: [],
      portal_display_name: null,
      portal_accent_color: null,
      portal_logo: null,
    });
  });

  it("recoveries and portal sessions: not found (404) under either organization's URL, and nothing starts or ends", async () => {
    const csrf = await b.csrfOf(webhookPath(mine));
    for (const base of [webhookPath(other), `${orgPath(mine)}/webhooks/${other.config}`]) {
      for (const path of [`${base}/recoveries`, `${base}/recoveries/${recovery}`, `${base}/portal-sessions/${session}/end`]) {
        expect((await b.get(path)).status, path).toBe(404);
      }
      for (const path of [`${base}/recover`, `${base}/portal-links`, `${base}/portal-sessions/${session}/end`]) {
        const res = await b.post(path, { csrf, since: "2026-01-01T00:00", expires_in: "600" });
        expect(res.status, `POST ${path}`).toBe(404);
        expect(await res.text()).not.toMatch(/kw_portal_/);
      }
    }
    // Their recovery and session under this administrator's own configuration are not found either.
    expect((await b.get(`${webhookPath(mine)}/recoveries/${recovery}`)).status).toBe(404);
    expect((await b.get(`${webhookPath(mine)}/portal-sessions/${session}/end`)).status).toBe(404);
    expect((await b.post(`${webhookPath(mine)}/portal-sessions/${session}/end`, { csrf })).status).toBe(404);
    const recoveries = await admin<unknown[]>("GET", `/organizations/${other.t.orgId}/webhook-configurations/${other.config}/recoveries`);
    expect(recoveries).toHaveLength(1);
    const sessions = await admin<{ status: string }[]>(
      "GET",
      `/organizations/${other.t.orgId}/webhook-configurations/${other.config}/portal-sessions`,
    );
    expect(sessions.map((s) => s.status)).toEqual(["active"]);
  });
});
