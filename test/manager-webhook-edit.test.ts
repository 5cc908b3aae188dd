/**
 * Creating, editing and deleting webhook configurations in the manager app (issue 30, item 5):
 * the new form and its signing secret shown once, a refused form answered with the form again
 * (keyway's message, each field's message beside it, the values as entered, the secret typed in that submit too),
 * the edit form with its write-only client secret (empty keeps the stored one; a URL moving to
 * another origin needs it again, and says so on the field), deletion through its confirmation
 * page, CSRF on every form, and an organization administrator kept to their own organization.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, adminCall, authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { createConfig, webhooksOf } from "./webhook-helpers";

const RECEIVER_SECRET = "manager-made-receiver-secret-4711";

const orgBase = (t: Tenant) => `/manager/organizations/${t.orgId}`;
const listPath = (t: Tenant) => `${orgBase(t)}/webhooks`;

interface ConfigView {
  id: string;
  url: string;
  description: string | null;
  events: string[] | null;
  oauth: { token_url: string; client_id: string };
  rate_limit: number | null;
  ordered: boolean;
  token_cache: boolean;
  operations?: boolean;
}

/** The organization's configurations, as the operator API lists them. */
const configsOf = async (t: Tenant) => admin<ConfigView[]>("GET", `/organizations/${t.orgId}/webhook-configurations`);

/** The receiver's client secret as stored (sealed): it changes only when a new secret is given. */
const sealedSecret = (orgId: string, id: string) =>
  runInDurableObject(webhooksOf(orgId), (_i, state) =>
    String(
      state.storage.sql.exec<{ client_secret: string }>("SELECT client_secret FROM configurations WHERE id = ?", id).one().client_secret,
    ),
  );

/** An input's opening tag on a page, by id. */
const input = (html: string, id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";

/** The form fields of a valid new configuration (without the CSRF token). */
const newFields = (overrides: Record<string, string> = {}): Record<string, string> => ({
  url: WEBHOOK_URL,
  description: "Billing receiver",
  events: "invoice.paid, invoice.voided  refund.issued",
  token_url: TOKEN_URL,
  client_id: "keyway-at-billing",
  client_secret: RECEIVER_SECRET,
  rate_limit: "7",
  ordered: "on",
  ...overrides,
});

describe("creating a webhook configuration in the manager", () => {
  it("links the new form from the empty list, creates it and shows its signing secret once", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const empty = await (await b.get(listPath(t))).text();
    expect(empty).toMatch(/No webhook configurations yet/);
    expect(empty).toContain(`<a href="${orgBase(t)}/new-webhook">Create the first webhook configuration</a>`);
    expect(empty).not.toMatch(/They are created through the API/);

    const form = await b.get(`${orgBase(t)}/new-webhook`);
    expect(form.status).toBe(200);
    const html = await form.text();
    expect(html).toContain("<h1>New webhook configuration</h1>");
    expect(html).toContain(`<form method="post" action="${listPath(t)}" class="card" aria-label="New webhook configuration">`);
    for (const legend of ["Where webhooks go", "How keyway signs in to the receiver", "Pacing"])
      expect(html).toContain(`<legend>${legend}`);
    for (const id of ["url", "description", "events", "token_url", "client_id", "client_secret", "rate_limit", "ordered", "token_cache"]) {
      expect(html).toContain(`for="${id}"`);
      expect(input(html, id)).not.toBe("");
    }
    expect(input(html, "client_secret")).toMatch(/type="password"/);

    const created = await b.post(listPath(t), { csrf: Browser.csrf(html), ...newFields() });
    expect(created.status).toBe(200);
    const shown = await created.text();
    const secret = /id="signing-secret" class="secret" type="text" readonly="" value="(whsec_[^"]+)"/.exec(shown)?.[1];
    expect(secret).toMatch(/^whsec_/);
    expect(shown).toMatch(/shown only this once/);
    expect(shown).not.toContain(RECEIVER_SECRET);

    const [config, ...others] = await configsOf(t);
    expect(others).toEqual([]);
    expect(config).toMatchObject({
      url: WEBHOOK_URL,
      description: "Billing receiver",
      events: ["invoice.paid", "invoice.voided", "refund.issued"],
      oauth: { token_url: TOKEN_URL, client_id: "keyway-at-billing" },
      rate_limit: 7,
      ordered: true,
      token_cache: false,
    });
    expect(shown).toContain(`<a href="${listPath(t)}/${config?.id}">Go to the webhook configuration</a>`);
    // The secret is not on the configuration's page, nor on the list, which now offers a new one.
    const detail = await (await b.get(`${listPath(t)}/${config?.id}`)).text();
    const list = await (await b.get(listPath(t))).text();
    for (const page of [detail, list]) {
      expect(page).not.toContain(String(secret));
      expect(page).not.toContain(RECEIVER_SECRET);
    }
    expect(list).toContain(`<a href="${orgBase(t)}/new-webhook">New webhook configuration</a>`);
    // Every event, no description, no limit: the empty fields say so.
    const plain = await b.post(listPath(t), {
      csrf: Browser.csrf(html),
      ...newFields({ events: "", description: "", rate_limit: "", ordered: "", token_cache: "on" }),
    });
    expect(plain.status).toBe(200);
    const second = (await configsOf(t)).find((c) => c.id !== config?.id);
    expect(second).toMatchObject({ events: null, description: null, rate_limit: null, ordered: false, token_cache: true });
  });

  it("answers a refused form with the form again: the messages beside their fields, the values kept, the typed secret too", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const csrf = await b.csrfOf(`${orgBase(t)}/new-webhook`);
    const refused = await b.post(listPath(t), {
      csrf,
      ...newFields({ events: "invoice.paid Not-An-Event", rate_limit: "0", client_id: "" }),
    });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain("<h1>New webhook configuration</h1>");
    expect(html).toMatch(/<strong>Nothing was created\.<\/strong> Invalid request body: /);
    for (const [id, message] of [
      ["events", "Event types: number 2 must be dot-separated lower-case words, e.g. order.created"],
      ["rate_limit", "Rate limit (deliveries per second) must be at least 1"],
      ["client_id", "Client id at the receiver must not be empty"],
    ] as const) {
      expect(html).toContain(`<p id="${id}-error" class="field-error" role="alert">${message}</p>`);
      expect(input(html, id)).toContain(`aria-describedby="${id}-error"`);
      expect(input(html, id)).toContain('aria-invalid="true"');
      expect(html).toContain(`<li><a href="#${id}">${message}</a></li>`);
    }
    // What was entered stays, the secret typed in this submit too (in its password field).
    expect(input(html, "url")).toContain(`value="${WEBHOOK_URL}"`);
    expect(input(html, "events")).toContain('value="invoice.paid Not-An-Event"');
    expect(input(html, "description")).toContain('value="Billing receiver"');
    expect(input(html, "ordered")).toMatch(/checked/);
    expect(input(html, "client_secret")).toContain(`value="${RECEIVER_SECRET}"`);
    expect(await configsOf(t)).toEqual([]);

    // A URL keyway may not call is the domain's refusal, named on its field.
    const local = await b.post(listPath(t), { csrf, ...newFields({ token_url: "https://127.0.0.1/token" }) });
    expect(local.status).toBe(400);
    const localHtml = await local.text();
    expect(input(localHtml, "token_url")).toContain('aria-describedby="token_url-error"');
    expect(localHtml).toMatch(/<p id="token_url-error" class="field-error" role="alert">Token URL: [^<]+<\/p>/);
    expect(input(localHtml, "client_secret")).toContain(`value="${RECEIVER_SECRET}"`);
    expect(await configsOf(t)).toEqual([]);
  });
});

describe("editing a webhook configuration in the manager", () => {
  /** A tenant with one configuration made through the API, and the operator signed in. */
  async function withConfig() {
    const t = await createTenant();
    const bearer = await issueToken(t);
    const config = await createConfig(t, bearer, RECEIVER_SECRET, { events: ["order.created"], rate_limit: 3 });
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const base = `${listPath(t)}/${config.id}`;
    return { t, config, b, base };
  }

  it("shows the stored values but never the client secret, and an empty secret field keeps it", async () => {
    const { t, config, b, base } = await withConfig();
    const detail = await (await b.get(base)).text();
    expect(detail).toContain(`<a href="${base}/edit">Edit the webhook configuration</a>`);
    const res = await b.get(`${base}/edit`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("<h1>Edit Webhook: orders</h1>");
    expect(html).toContain(`<form method="post" action="${base}" class="card" aria-label="Edit the webhook configuration">`);
    expect(input(html, "url")).toContain(`value="${WEBHOOK_URL}"`);
    expect(input(html, "token_url")).toContain(`value="${TOKEN_URL}"`);
    expect(input(html, "events")).toContain('value="order.created"');
    expect(input(html, "rate_limit")).toContain('value="3"');
    expect(input(html, "client_secret")).not.toMatch(/value=/);
    expect(input(html, "client_secret")).not.toMatch(/required/);
    expect(html).toMatch(/write-only: empty keeps the stored one/);
    expect(html).not.toContain(RECEIVER_SECRET);

    const before = await sealedSecret(t.orgId, config.id);
    const saved = await b.post(base, {
      csrf: Browser.csrf(html),
      url: `${WEBHOOK_URL}/v2`,
      token_url: TOKEN_URL,
      client_id: "keyway-renamed",
      client_secret: "",
      events: "",
      description: "orders, v2",
      rate_limit: "",
      token_cache: "on",
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.get("location")).toBe(`${base}?notice=webhook-saved`);
    const [view] = await configsOf(t);
    expect(view).toMatchObject({
      url: `${WEBHOOK_URL}/v2`,
      description: "orders, v2",
      events: null,
      rate_limit: null,
      ordered: false,
      token_cache: true,
      oauth: { client_id: "keyway-renamed" },
    });
    expect(await sealedSecret(t.orgId, config.id)).toBe(before);
  });

  it("edits the payload filter and channels: shown as stored, refused on their fields, the receiver's own layer kept", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    const schema = { type: "object", properties: { amount: { type: "integer" } } };
    expect(
      (
        await call(
          "/v1/event-types",
          authed(t, bearer, {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ name: "order.created", schema }),
          }),
        )
      ).status,
    ).toBe(201);
    const config = await createConfig(t, bearer, RECEIVER_SECRET, {
      events: ["order.created"],
      filter: { data: { amount: { $gte: 100 } } },
      channels: ["eu"],
    });
    // The receiver narrowed it from its portal; the organization's edit keeps that.
    const patched = await call(
      `/v1/webhook-configurations/${config.id}`,
      authed(t, bearer, {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ receiver_channels: ["eu"] }),
      }),
    );
    expect(patched.status).toBe(200);
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const base = `${listPath(t)}/${config.id}`;
    // The configuration's page shows both layers, the receiver's said to be its own.
    const detail = await (await b.get(base)).text();
    expect(detail).toMatch(
      /<dt>Filter<\/dt><dd>channels eu; <code>\{&quot;data&quot;:\{&quot;amount&quot;:\{&quot;\$gte&quot;:100\}\}\}<\/code><\/dd>/,
    );
    expect(detail).toMatch(/<dt>The receiver&#39;s own filter \(set in its portal\)<\/dt><dd>channels eu<\/dd>/);
    const html = await (await b.get(`${base}/edit`)).text();
    expect(html).toMatch(/<textarea id="filter"[^>]*>\{\n {2}&quot;data&quot;: \{\n {4}&quot;amount&quot;/);
    expect(input(html, "channels")).toContain('value="eu"');
    const fields = {
      csrf: Browser.csrf(html),
      url: WEBHOOK_URL,
      token_url: TOKEN_URL,
      client_id: "keyway-at-receiver",
      client_secret: "",
      events: "order.created",
    };
    const badChannel = await b.post(base, { ...fields, filter: "", channels: "eu, channel!" });
    expect(badChannel.status).toBe(400);
    expect(await badChannel.text()).toMatch(/id="channels-error"[^>]*>Channels: number 2 must be 1 to 128 letters/);
    const refused = await b.post(base, { ...fields, filter: '{"data": {"amont": 1}}', channels: "eu" });
    expect(refused.status).toBe(400);
    const page = await refused.text();
    expect(page).toMatch(
      /<p id="filter-error" class="field-error" role="alert">Payload filter: data\.amont is not in the event type&#39;s schema.*did you mean &quot;amount&quot;/,
    );
    expect(page).toContain("&quot;amont&quot;");
    const notJson = await b.post(base, { ...fields, filter: "{", channels: "" });
    expect(await notJson.text()).toMatch(/id="filter-error"[^>]*>Payload filter is not valid JSON/);
    const saved = await b.post(base, { ...fields, filter: '{"data": {"amount": {"$lt": 10}}}', channels: "us eu" });
    expect(saved.status).toBe(303);
    const view = (
      await body<{ filter: unknown; channels: unknown; receiver_channels: unknown }>(
        await call(`/v1/webhook-configurations/${config.id}`, authed(t, bearer)),
      )
    ).data;
    expect(view).toMatchObject({ filter: { data: { amount: { $lt: 10 } } }, channels: ["us", "eu"], receiver_channels: ["eu"] });
    expect((await b.post(base, { ...fields, filter: "", channels: "" })).status).toBe(303);
    const cleared = (
      await body<{ filter: unknown; channels: unknown }>(await call(`/v1/webhook-configurations/${config.id}`, authed(t, bearer)))
    ).data;
    expect(cleared).toMatchObject({ filter: null, channels: null });
  });

  it("asks for the client secret again when a URL moves to another origin, on the secret's field", async () => {
    const { t, config, b, base } = await withConfig();
    const csrf = await b.csrfOf(`${base}/edit`);
    const before = await sealedSecret(t.orgId, config.id);
    const fields = {
      csrf,
      url: "https://collector.example/hook",
      token_url: TOKEN_URL,
      client_id: "keyway-at-receiver",
      events: "order.created",
    };
    const refused = await b.post(base, { ...fields, client_secret: "" });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain("<h1>Edit Webhook: orders</h1>");
    // keyway's own message, and the field's, which says what to do.
    expect(html).toMatch(/Invalid request body: oauth\.client_secret is required when url moves to another origin\./);
    const error = /<p id="client_secret-error" class="field-error" role="alert">([^<]+)<\/p>/.exec(html)?.[1] ?? "";
    expect(error).toMatch(/^Client secret at the receiver is needed again: the webhook URL moves to another origin/);
    expect(input(html, "client_secret")).toContain('aria-describedby="client_secret-error"');
    expect(input(html, "url")).toContain('value="https://collector.example/hook"');
    expect(html).not.toContain(RECEIVER_SECRET);
    expect((await configsOf(t))[0]?.url).toBe(WEBHOOK_URL);

    // The token URL's move is named as such.
    const tokenMove = await b.post(base, {
      ...fields,
      url: WEBHOOK_URL,
      token_url: "https://auth.collector.example/token",
      client_secret: "",
    });
    expect(tokenMove.status).toBe(400);
    expect(await tokenMove.text()).toMatch(/needed again: the token URL moves to another origin/);

    // With the secret it moves, and the stored secret is the new one.
    const moved = await b.post(base, { ...fields, client_secret: "the-collector-secret" });
    expect(moved.status).toBe(303);
    expect((await configsOf(t))[0]?.url).toBe("https://collector.example/hook");
    expect(await sealedSecret(t.orgId, config.id)).not.toBe(before);
  });

  it("deletes only through its confirmation page, which names it", async () => {
    const { t, config, b, base } = await withConfig();
    const detail = await (await b.get(base)).text();
    expect(detail).toContain(`<a href="${base}/delete">Delete this webhook configuration</a>`);
    const asked = await b.get(`${base}/delete`);
    expect(asked.status).toBe(200);
    const html = await asked.text();
    const question = `Delete webhook configuration “orders” (${config.id}, ${WEBHOOK_URL})?`;
    expect(html).toContain(`<h1>${question}</h1>`);
    expect(html).toContain(`<title>${question} - keyway manager</title>`);
    expect(html).toContain(`<form method="post" action="${base}/delete" class="card"`);
    expect(html).toMatch(/<button type="submit" class="danger">Delete webhook configuration<\/button>/);
    expect(html).toContain(`<a href="${base}" class="button secondary">Cancel</a>`);
    // Asking changed nothing.
    expect(await configsOf(t)).toHaveLength(1);

    const deleted = await b.post(`${base}/delete`, { csrf: Browser.csrf(html) });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get("location")).toBe(`${listPath(t)}?notice=webhook-deleted`);
    expect(await configsOf(t)).toEqual([]);
    expect((await adminCall("GET", `/organizations/${t.orgId}/webhook-configurations/${config.id}`)).status).toBe(404);
    const list = await (await b.get(deleted.headers.get("location") ?? "")).text();
    expect(list).toMatch(/Webhook configuration deleted; nothing more is sent to it\./);
    expect(list).toMatch(/No webhook configurations yet/);
    expect((await b.get(`${base}/edit`)).status).toBe(404);
  });

  it("refuses every form without the session's CSRF token, changing nothing", async () => {
    const { t, config, b, base } = await withConfig();
    for (const csrf of [undefined, "not-the-token"]) {
      const token: Record<string, string> = csrf === undefined ? {} : { csrf };
      const create = await b.post(listPath(t), { ...token, ...newFields() });
      expect(create.status).toBe(403);
      expect(await create.text()).toMatch(/CSRF token/);
      const edit = await b.post(base, { ...token, ...newFields({ description: "hijacked" }) });
      expect(edit.status).toBe(403);
      const remove = await b.post(`${base}/delete`, token);
      expect(remove.status).toBe(403);
    }
    const configs = await configsOf(t);
    expect(configs.map((c) => [c.id, c.description])).toEqual([[config.id, "orders"]]);
  });
});

describe("an organization administrator", () => {
  it("creates in their own organization, and finds another organization's configuration not found, by any URL", async () => {
    const mine = await createTenant();
    const other = await createTenant();
    const theirs = await createConfig(other, await issueToken(other), RECEIVER_SECRET);
    const minted = await admin<{ token: string }>("POST", `/organizations/${mine.orgId}/admin-tokens`, { name: "Own org" });
    const b = await Browser.signedIn(minted.token);
    const csrf = await b.csrfOf(`${orgBase(mine)}/new-webhook`);

    const created = await b.post(listPath(mine), { csrf, ...newFields() });
    expect(created.status).toBe(200);
    expect(await configsOf(mine)).toHaveLength(1);

    // The other organization's pages, and its configuration under this organization's URL.
    for (const base of [`${listPath(other)}/${theirs.id}`, `${listPath(mine)}/${theirs.id}`]) {
      expect((await b.get(`${base}/edit`)).status, `${base}/edit`).toBe(404);
      expect((await b.get(`${base}/delete`)).status, `${base}/delete`).toBe(404);
      expect((await b.post(base, { csrf, ...newFields({ description: "taken over" }) })).status, base).toBe(404);
      expect((await b.post(`${base}/delete`, { csrf })).status, `${base}/delete`).toBe(404);
    }
    expect((await b.get(`${orgBase(other)}/new-webhook`)).status).toBe(404);
    expect((await b.post(listPath(other), { csrf, ...newFields() })).status).toBe(404);
    const left = await configsOf(other);
    expect(left.map((c) => [c.id, c.description])).toEqual([[theirs.id, "orders"]]);
    expect((await body(await adminCall("GET", `/organizations/${other.orgId}/webhook-configurations/${theirs.id}`))).data).toMatchObject({
      url: WEBHOOK_URL,
    });
  });
});

describe("operations configurations in the manager (issue 42)", () => {
  it("creates one with the checkbox, naming an operational type, and turns it back into an ordinary one", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const html = await (await b.get(`${orgBase(t)}/new-webhook`)).text();
    expect(input(html, "operations")).not.toBe("");
    // Without the checkbox an operational type is refused, the form kept.
    const refused = await b.post(listPath(t), { csrf: Browser.csrf(html), ...newFields({ events: "webhook.endpoint.disabled" }) });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("operational event type");
    const created = await b.post(listPath(t), {
      csrf: Browser.csrf(html),
      ...newFields({ events: "webhook.endpoint.disabled", operations: "on" }),
    });
    expect(created.status).toBe(200);
    const [config] = await configsOf(t);
    expect(config).toMatchObject({ events: ["webhook.endpoint.disabled"], operations: true });
    const page = await (await b.get(`${listPath(t)}/${config?.id}`)).text();
    expect(page).toContain("the organization&#39;s operations configuration (operational events)");
  });
});
