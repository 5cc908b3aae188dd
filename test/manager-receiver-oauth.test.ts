/**
 * The receiver's token endpoint settings of issue 31 in the manager: the new and edit forms take
 * the method (radio buttons), scope, resource indicators (one a line), audience, assertion
 * audience and DPoP, with the client secret not required for private_key_jwt and saying why; a
 * refused form has each field's message beside it; the configuration's page shows the method, the
 * DPoP thumbprint and the absolute JWKS URL to give the receiver, and tests the connection (a
 * POST with CSRF answered in words); the webhook settings page rotates the organization's
 * assertion key through a confirmation page.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, authed, BASE, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser, urlMarkup } from "./manager-helpers";

interface OAuthView {
  token_url: string;
  client_id: string;
  auth_method: string;
  scope: string | null;
  resource: string[] | null;
  audience: string | null;
  assertion_audience: string | null;
  dpop: boolean;
  dpop_jkt: string | null;
  jwks_uri: string | null;
}
interface ConfigView {
  id: string;
  description: string | null;
  oauth: OAuthView;
}

const orgBase = (t: Tenant) => `/manager/organizations/${t.orgId}`;
const listPath = (t: Tenant) => `${orgBase(t)}/webhooks`;
const configsOf = async (t: Tenant) => admin<ConfigView[]>("GET", `/organizations/${t.orgId}/webhook-configurations`);
const input = (html: string, id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
const fieldError = (html: string, id: string) =>
  new RegExp(`<p id="${id}-error" class="field-error" role="alert">([^<]+)</p>`).exec(html)?.[1];

const fields = (overrides: Record<string, string> = {}): Record<string, string> => ({
  url: WEBHOOK_URL,
  description: "OAuth receiver",
  events: "",
  token_url: TOKEN_URL,
  client_id: "keyway-at-receiver",
  rate_limit: "",
  ...overrides,
});

async function newForm(b: Browser, t: Tenant) {
  const html = await (await b.get(`${orgBase(t)}/new-webhook`)).text();
  return { html, csrf: Browser.csrf(html) };
}

/** Creates through the manager's form; answers the configuration the API then lists under that description. */
async function createThroughForm(b: Browser, t: Tenant, overrides: Record<string, string>) {
  const { csrf } = await newForm(b, t);
  const res = await b.post(listPath(t), { csrf, ...fields(overrides) });
  expect(res.status).toBe(200);
  expect(await res.text()).toContain("signing secret");
  const config = (await configsOf(t)).find((c) => c.description === overrides.description);
  expect(config).toBeDefined();
  return config as ConfigView;
}

let t: Tenant;
let b: Browser;
beforeEach(async () => {
  fakeNetwork(receiver());
  t = await createTenant();
  b = await Browser.signedIn(ADMIN_TOKEN);
});

describe("the new form", () => {
  it("offers the three methods, the token request's settings and DPoP; the secret not required, saying why", async () => {
    const { html } = await newForm(b, t);
    expect(html).toContain('<fieldset id="auth_method">');
    for (const method of ["client_secret_post", "client_secret_basic", "private_key_jwt"]) {
      expect(input(html, `auth_method-${method}`)).toContain(`value="${method}"`);
      expect(html).toContain(`for="auth_method-${method}"`);
    }
    expect(input(html, "auth_method-client_secret_post")).toContain("checked");
    for (const id of ["scope", "audience", "assertion_audience", "dpop"]) expect(input(html, id)).not.toBe("");
    expect(html).toMatch(/<textarea id="resource" name="resource"/);
    expect(input(html, "client_secret")).not.toMatch(/required/);
    expect(html).toMatch(/not used with private_key_jwt, which sends an assertion keyway signs instead of a secret/);
  });

  it.each([
    ["client_secret_post", { client_secret: "post-secret" }],
    ["client_secret_basic", { client_secret: "basic-secret", scope: "webhooks:receive audit", audience: "https://api.receiver.example" }],
    [
      "private_key_jwt",
      {
        resource: "https://receiver.example/hooks\r\n\r\nhttps://receiver.example/other\r\n",
        assertion_audience: "https://receiver.example",
        dpop: "on",
      },
    ],
  ] as const)("creates a configuration with %s and shows its settings on its page", async (method, extra) => {
    const config = await createThroughForm(b, t, { description: `with ${method}`, auth_method: method, ...extra });
    expect(config.oauth.auth_method).toBe(method);
    const page = await (await b.get(`${listPath(t)}/${config.id}`)).text();
    expect(page).toContain("The receiver&#39;s token endpoint");
    if (method === "private_key_jwt") {
      expect(config.oauth).toMatchObject({
        resource: ["https://receiver.example/hooks", "https://receiver.example/other"],
        assertion_audience: "https://receiver.example",
        dpop: true,
        jwks_uri: `${BASE}/v1/receiver-jwks/${t.orgId}/${config.id}`,
      });
      expect(page).toContain("an assertion keyway signs (private_key_jwt)");
      // The JWKS URL to hand the receiver, absolute on keyway's origin, and the DPoP key's thumbprint.
      expect(page).toContain(urlMarkup(`${BASE}/v1/receiver-jwks/${t.orgId}/${config.id}`));
      expect(page).toContain(`<code class="wrap">${config.oauth.dpop_jkt}</code>`);
    } else {
      expect(config.oauth.dpop).toBe(false);
      expect(page).not.toContain("/v1/receiver-jwks/");
      expect(page).toContain("off: Bearer tokens");
    }
    if (method === "client_secret_basic") {
      expect(config.oauth).toMatchObject({ scope: "webhooks:receive audit", audience: "https://api.receiver.example" });
      expect(page).toContain("client secret with HTTP Basic (client_secret_basic)");
      expect(page).toContain('<code class="wrap">webhooks:receive audit</code>');
    }
  });

  it("refuses no secret with client_secret_basic beside the field, and sends none typed into the field private_key_jwt hides", async () => {
    const { csrf } = await newForm(b, t);
    const basic = await b.post(listPath(t), { csrf, ...fields({ auth_method: "client_secret_basic" }) });
    expect(basic.status).toBe(400);
    let html = await basic.text();
    expect(fieldError(html, "client_secret")).toMatch(/^Client secret at the receiver is required/);
    expect(html).toContain('<a href="#client_secret">');

    const badScope = await b.post(listPath(t), {
      csrf,
      ...fields({
        client_secret: "s",
        scope: "two  spaces",
        resource: "https://ok.example/\nnot a uri",
        assertion_audience: "https://x.example",
      }),
    });
    expect(badScope.status).toBe(400);
    html = await badScope.text();
    expect(fieldError(html, "scope")).toMatch(/^Scope must be scope tokens separated by single spaces/);
    expect(fieldError(html, "resource")).toMatch(/^Resource indicators: number 2 must be an absolute URI/);
    expect(await configsOf(t)).toEqual([]);

    // The secret field is hidden while private_key_jwt is chosen (ShownFor), so what it still
    // holds, typed before the choice changed, is not the person's answer: the configuration is
    // created with the assertion and no secret; the assertion's audience, shown for
    // private_key_jwt only, is sent then.
    const jwt = await b.post(listPath(t), {
      csrf,
      ...fields({
        description: "jwt",
        auth_method: "private_key_jwt",
        client_secret: "not-for-jwt",
        assertion_audience: "https://x.example",
      }),
    });
    expect(jwt.status).toBe(200);
    const [created] = await configsOf(t);
    expect(created?.oauth).toMatchObject({ auth_method: "private_key_jwt", assertion_audience: "https://x.example" });
    expect(JSON.stringify(created)).not.toContain("not-for-jwt");
  });
});

describe("the edit form", () => {
  it("shows the stored settings, switches the method, and removes a setting left empty", async () => {
    const config = await createThroughForm(b, t, { description: "to edit", client_secret: "s", scope: "one", audience: "aud" });
    const edit = await (await b.get(`${listPath(t)}/${config.id}/edit`)).text();
    expect(input(edit, "auth_method-client_secret_post")).toContain("checked");
    expect(input(edit, "scope")).toContain('value="one"');
    expect(input(edit, "audience")).toContain('value="aud"');
    const saved = await b.post(`${listPath(t)}/${config.id}`, {
      csrf: Browser.csrf(edit),
      ...fields({ description: "to edit", auth_method: "private_key_jwt", scope: "", audience: "aud", dpop: "on" }),
    });
    expect(saved.status).toBe(303);
    const [after] = await configsOf(t);
    expect(after?.oauth).toMatchObject({ auth_method: "private_key_jwt", scope: null, audience: "aud", dpop: true });

    // Saving again without a change keeps the DPoP key (turning it on makes a new one).
    const again = await (await b.get(`${listPath(t)}/${config.id}/edit`)).text();
    expect(input(again, "dpop")).toContain("checked");
    await b.post(`${listPath(t)}/${config.id}`, {
      csrf: Browser.csrf(again),
      ...fields({ description: "to edit", auth_method: "private_key_jwt", audience: "aud", dpop: "on" }),
    });
    expect((await configsOf(t))[0]?.oauth.dpop_jkt).toBe(after?.oauth.dpop_jkt);

    // Back to a secret method without one: refused beside the secret field.
    const back = await b.post(`${listPath(t)}/${config.id}`, {
      csrf: Browser.csrf(again),
      ...fields({ description: "to edit", auth_method: "client_secret_basic" }),
    });
    expect(back.status).toBe(400);
    expect(fieldError(await back.text(), "client_secret")).toMatch(/^Client secret at the receiver is required/);
  });
});

describe("a DPoP-bound configuration's deliveries", () => {
  it("show the request as sent: Authorization: DPoP and a DPoP proof, both masked", async () => {
    const config = await createThroughForm(b, t, { description: "bound", client_secret: "s", dpop: "on" });
    const bearer = await issueToken(t);
    const published = await call(
      "/v1/events",
      authed(t, bearer, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ type: "order.created", data: { n: 1 } }),
      }),
    );
    const delivery = (await body<{ deliveries: { id: string }[] }>(published)).data.deliveries[0]?.id ?? "";
    const html = await (await b.get(`${listPath(t)}/${config.id}/deliveries/${delivery}`)).text();
    expect(html).toMatch(/<code>Authorization<\/code>\s*<\/td>\s*<td data-label="Value">\s*<code class="wrap">DPoP ••••/);
    expect(html).toMatch(/<code>DPoP<\/code>\s*<\/td>\s*<td data-label="Value">\s*<code class="wrap">•••• \(a DPoP proof/);
  });
});

describe("the connection test", () => {
  it("is a POST with CSRF, answered in words: outcome, status, error code, token_type and expires_in", async () => {
    const config = await createThroughForm(b, t, { description: "tested", client_secret: "s" });
    const page = await (await b.get(`${listPath(t)}/${config.id}`)).text();
    expect(page).toContain(`action="${listPath(t)}/${config.id}/test-connection"`);
    expect((await b.post(`${listPath(t)}/${config.id}/test-connection`, {})).status).toBe(403);

    const ok = await (await b.post(`${listPath(t)}/${config.id}/test-connection`, { csrf: Browser.csrf(page) })).text();
    expect(ok).toContain("Connection test: a token was issued");
    expect(ok).toMatch(/a token was issued \(<code>token_issued<\/code>\)/);
    expect(ok).toMatch(/<dt>HTTP status<\/dt>\s*<dd>200<\/dd>/);
    expect(ok).toMatch(/<dt>token_type<\/dt>\s*<dd><code>Bearer<\/code><\/dd>/);
    expect(ok).toMatch(/<dt>expires_in<\/dt>\s*<dd>300 s<\/dd>/);
    expect(ok).not.toContain("receiver-token-1");

    fakeNetwork({ [TOKEN_URL]: () => Response.json({ error: "invalid_client", error_description: "secret text" }, { status: 401 }) });
    const refused = await (await b.post(`${listPath(t)}/${config.id}/test-connection`, { csrf: Browser.csrf(page) })).text();
    expect(refused).toContain("Connection test: no token");
    expect(refused).toMatch(/<dt>HTTP status<\/dt>\s*<dd>401<\/dd>/);
    expect(refused).toContain("<code>invalid_client</code>");
    expect(refused).not.toContain("secret text");
  });
});

describe("the webhook settings' assertion key", () => {
  it("rotates through a confirmation page and shows the new key's timeline; the JWKS URL is on the settings page", async () => {
    const settings = `/manager/organizations/${t.orgId}/webhook-settings`;
    const html = await (await b.get(settings)).text();
    expect(html).toContain(`<a href="${settings}/rotate-assertion-key">Rotate the assertion key</a>`);
    expect(html).toContain(urlMarkup(`${BASE}/v1/receiver-jwks/${t.orgId}`));
    const confirm = await b.get(`${settings}/rotate-assertion-key`);
    expect(confirm.status).toBe(200);
    const confirmHtml = await confirm.text();
    expect(confirmHtml).toContain("Rotate the organization&#39;s assertion key?");
    expect((await b.post(`${settings}/rotate-assertion-key`, {})).status).toBe(403);
    const done = await b.post(`${settings}/rotate-assertion-key`, { csrf: Browser.csrf(confirmHtml) });
    expect(done.status).toBe(200);
    const doneHtml = await done.text();
    const kid = /<dt>New key \(kid\)<\/dt>\s*<dd>\s*<code class="wrap">([^<]+)<\/code>/.exec(doneHtml)?.[1];
    expect(kid).toBeDefined();
    const jwks = (await (await call(`/v1/receiver-jwks/${t.orgId}`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toContain(kid);
  });
});

describe("a configuration's own assertion key (issue 42)", () => {
  it("rotates it from the configuration's page through a confirmation, published at its own JWKS URL only", async () => {
    const config = await createThroughForm(b, t, { description: "own key", auth_method: "private_key_jwt" });
    const base = `${listPath(t)}/${config.id}`;
    const page = await (await b.get(base)).text();
    expect(page).toContain(`<a href="${base}/rotate-assertion-key">Rotate this configuration&#39;s assertion key</a>`);
    const confirm = await (await b.get(`${base}/rotate-assertion-key`)).text();
    expect(confirm).toContain("Rotate the assertion key of webhook configuration");
    expect((await b.post(`${base}/rotate-assertion-key`, {})).status).toBe(403);
    const done = await b.post(`${base}/rotate-assertion-key`, { csrf: Browser.csrf(confirm) });
    expect(done.status).toBe(200);
    const kid = /<dt>New key \(kid\)<\/dt>\s*<dd>\s*<code class="wrap">([^<]+)<\/code>/.exec(await done.text())?.[1];
    expect(kid).toBeDefined();
    const own = (await (await call(`/v1/receiver-jwks/${t.orgId}/${config.id}`)).json()) as { keys: { kid: string }[] };
    expect(own.keys.map((k) => k.kid)).toContain(kid);
    const org = await call(`/v1/receiver-jwks/${t.orgId}`);
    const orgKids = org.status === 200 ? ((await org.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid) : [];
    expect(orgKids).not.toContain(kid);
  });
});
