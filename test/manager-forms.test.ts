/**
 * The manager's forms keep what was typed and say every mistake at once (issue 43 items 2 and 5):
 * a new webhook configuration refused for three reasons, one of them the SSRF guard's, which the
 * domain alone would only reach once the schema passed, answers with all three messages beside
 * their fields and every value as typed, the client secret included. And hono/csrf, the second
 * layer beside the session's CSRF token: a form posted by another site's page (its Origin, or
 * `Sec-Fetch-Site: cross-site`) is refused with 403 even with a valid token, on the manager and
 * on its sign-in form. And the sections' navigation marks the section a new form belongs to.
 */
import { describe, expect, it } from "vitest";
import { TOKEN_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, BASE, createTenant, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";

const orgBase = (t: Tenant) => `/manager/organizations/${t.orgId}`;
const input = (html: string, id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
const fieldError = (html: string, id: string) =>
  new RegExp(`<p id="${id}-error" class="field-error" role="alert">([^<]+)</p>`).exec(html)?.[1] ?? "";

const TYPED_SECRET = "typed-secret-kept-across-a-refusal-0042";

describe("a refused manager form", () => {
  it("shows every error beside its field at once and keeps every value typed, the client secret included", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const csrf = await b.csrfOf(`${orgBase(t)}/new-webhook`);
    const typed = {
      url: "https://127.0.0.1/hook", // the SSRF guard's refusal (the domain's, made beside the schema's)
      description: "Three mistakes",
      events: "order.created",
      token_url: TOKEN_URL,
      client_id: "", // the schema's: must not be empty
      client_secret: TYPED_SECRET,
      scope: "hooks:receive",
      rate_limit: "0", // the schema's: at least 1
      ordered: "on",
    };
    const refused = await b.post(`${orgBase(t)}/webhooks`, { csrf, ...typed });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(fieldError(html, "url")).toMatch(/^Webhook URL: /);
    expect(fieldError(html, "client_id")).toBe("Client id at the receiver must not be empty");
    expect(fieldError(html, "rate_limit")).toBe("Rate limit (deliveries per second) must be at least 1");
    for (const id of ["url", "client_id", "rate_limit"]) {
      expect(input(html, id)).toContain(`aria-describedby="${id}-error"`);
      expect(input(html, id)).toContain('aria-invalid="true"');
      // Each message sits right above its own input, and the summary links to the field.
      expect(html).toMatch(new RegExp(`<p id="${id}-error"[^>]*>[^<]+</p><input id="${id}"`));
      expect(html).toContain(`<li><a href="#${id}">`);
    }
    // Nothing else is marked.
    expect(html.match(/class="field-error"/g)?.length).toBe(3);
    // Every value as typed.
    expect(input(html, "url")).toContain('value="https://127.0.0.1/hook"');
    expect(input(html, "description")).toContain('value="Three mistakes"');
    expect(input(html, "events")).toContain('value="order.created"');
    expect(input(html, "token_url")).toContain(`value="${TOKEN_URL}"`);
    expect(input(html, "scope")).toContain('value="hooks:receive"');
    expect(input(html, "rate_limit")).toContain('value="0"');
    expect(input(html, "ordered")).toMatch(/checked/);
    expect(input(html, "client_secret")).toMatch(/type="password"/);
    expect(input(html, "client_secret")).toContain(`value="${TYPED_SECRET}"`);
    expect(await admin("GET", `/organizations/${t.orgId}/webhook-configurations`)).toEqual([]);

    // Fixing the three in one go creates it.
    const fixed = await b.post(`${orgBase(t)}/webhooks`, {
      csrf,
      ...typed,
      url: "https://receiver.example/hook",
      client_id: "keyway",
      rate_limit: "5",
    });
    expect(fixed.status).toBe(200);
    expect(await fixed.text()).toMatch(/shown only this once/);
  });
});

describe("the other manager forms that create or edit", () => {
  it("keep what was typed and say every field's problem at once: users, API keys, client credentials, event types, organizations", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const textarea = (html: string, id: string) => new RegExp(`<textarea id="${id}"[^>]*>([^<]*)</textarea>`).exec(html)?.[1] ?? "";

    // A user: no name, an e-mail that is not one.
    let csrf = await b.csrfOf(`${orgBase(t)}/users`);
    let res = await b.post(`${orgBase(t)}/users`, { csrf, name: "", email: "not-an-email" });
    expect(res.status).toBe(400);
    let html = await res.text();
    expect(fieldError(html, "name")).toBe("Name is required");
    expect(fieldError(html, "email")).toBe("E-mail must be an e-mail address");
    expect(input(html, "email")).toContain('value="not-an-email"');
    expect(html).toContain("<strong>Nobody was added.</strong>");

    // An API key: both limits wrong, the name and location kept.
    csrf = await b.csrfOf(`${orgBase(t)}/api-keys`);
    res = await b.post(`${orgBase(t)}/api-keys`, { csrf, name: "kept name", per_second: "0", per_day: "lots", location_hint: "weur" });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "per_second")).toMatch(/^Requests per second /);
    expect(fieldError(html, "per_day")).toMatch(/^Requests per day /);
    expect(input(html, "name")).toContain('value="kept name"');
    expect(input(html, "per_second")).toContain('value="0"');
    expect(input(html, "per_day")).toContain('value="lots"');
    expect(html).toMatch(/<option value="weur" selected="">/);

    // Client credentials: a name too long and a key set that is not JSON, both said, the text kept.
    const users = await admin<{ id: string }[]>("GET", `/organizations/${t.orgId}/users`);
    const creds = `${orgBase(t)}/users/${users[0]?.id}/client-credentials`;
    csrf = await b.csrfOf(creds);
    res = await b.post(creds, { csrf, name: "n".repeat(201), token_endpoint_auth_method: "private_key_jwt", jwks: '{"keys": [' });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "name")).toBe("Name must be at most 200 characters");
    expect(fieldError(html, "jwks")).toBe("Public keys (JWK Set) is not valid JSON");
    expect(textarea(html, "jwks")).toBe("{&quot;keys&quot;: [");
    expect(html).toMatch(/<input id="method-jwt"[^>]*checked/);

    // An event type: a bad name, and both JSON fields unreadable, all three at once.
    csrf = await b.csrfOf(`${orgBase(t)}/new-event-type`);
    res = await b.post(`${orgBase(t)}/event-types`, { csrf, name: "Not A Name", schema: "{", examples: "[1," });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "name")).not.toBe("");
    expect(fieldError(html, "schema")).toMatch(/is not valid JSON/);
    expect(fieldError(html, "examples")).toMatch(/is not valid JSON/);
    expect(textarea(html, "schema")).toBe("{");

    // An organization with no name; the quota with a limit that is not one.
    csrf = await b.csrfOf("/manager/organizations");
    res = await b.post("/manager/organizations", { csrf, name: "   " });
    expect(res.status).toBe(400);
    expect(fieldError(await res.text(), "name")).toMatch(/^Name /);
    csrf = await b.csrfOf(orgBase(t));
    res = await b.post(`${orgBase(t)}/quota`, { csrf, per_second: "-1", per_day: "", per_month: "12x" });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "per_second")).toMatch(/^Requests per second /);
    expect(fieldError(html, "per_month")).toMatch(/^Requests per UTC month /);
    expect(input(html, "per_month")).toContain('value="12x"');

    // A key's page: its limits and its credits, each refusal said on its own form.
    const key = `${orgBase(t)}/api-keys/${t.apiKeyId}`;
    csrf = await b.csrfOf(key);
    res = await b.post(`${key}/limits`, { csrf, per_second: "0", per_day: "0" });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "per_second")).toMatch(/^Requests per second /);
    expect(fieldError(html, "per_day")).toMatch(/^Requests per day /);
    expect(html).toContain("<strong>The limits were not changed.</strong>");
    res = await b.post(`${key}/credits`, { csrf, action: "set", amount: "many" });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "amount")).toMatch(/^Credits /);
    expect(input(html, "amount")).toContain('value="many"');
    expect(html).toMatch(/<option value="set" selected="">/);
  });
});

describe("the sections' navigation", () => {
  it("marks Webhooks current on the new webhook form and Event types on the new event type form, not Settings", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const current = (html: string) => [...html.matchAll(/<a href="([^"]+)" aria-current="page">([^<]+)<\/a>/g)].map((m) => [m[1], m[2]]);
    for (const [path, href, label] of [
      ["new-webhook", "webhooks", "Webhooks"],
      ["new-event-type", "event-types", "Event types"],
      ["webhooks", "webhooks", "Webhooks"],
      ["", "", "Settings and quota"],
    ] as const) {
      const html = await (await b.get(`${orgBase(t)}${path === "" ? "" : `/${path}`}`)).text();
      expect(current(html), path).toEqual([[`${orgBase(t)}${href === "" ? "" : `/${href}`}`, label]]);
    }
  });
});

describe("hono/csrf beside the session's CSRF token", () => {
  it("refuses a form another site posts with 403, even with a valid token", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const csrf = await b.csrfOf(`${orgBase(t)}/users`);
    const fields = { csrf, name: "Cross Site", email: "cross@example.com" };
    const crossSite: Record<string, string>[] = [
      { Origin: "https://attacker.example" },
      { Origin: "https://attacker.example", "Sec-Fetch-Site": "cross-site" },
      { "Sec-Fetch-Site": "cross-site" },
      // A sibling subdomain is another origin: same-site is not enough.
      { Origin: "https://evil.keyway.test", "Sec-Fetch-Site": "same-site" },
      // An attacker's page with Referrer-Policy no-referrer sends Origin: null; Sec-Fetch-Site still tells.
      { Origin: "null", "Sec-Fetch-Site": "cross-site" },
    ];
    for (const headers of crossSite) {
      const res = await b.post(`${orgBase(t)}/users`, fields, undefined, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await res.text()).toContain("The form was sent from another site, so it was not accepted.");
    }
    expect(await admin<unknown[]>("GET", `/organizations/${t.orgId}/users`)).toHaveLength(1);
    // The same form from the manager's own page is accepted: as a browser sends it from a page
    // whose Referrer-Policy is no-referrer (Origin: null, with Sec-Fetch-Site), as one without
    // Sec-Fetch-Site sends it (Origin: null alone: the session token decides), and with the origin.
    const own: Record<string, string>[] = [{ Origin: "null", "Sec-Fetch-Site": "same-origin" }, { Origin: "null" }, { Origin: BASE }];
    for (const [i, headers] of own.entries()) {
      const res = await b.post(`${orgBase(t)}/users`, { ...fields, email: `own${i}@example.com` }, undefined, headers);
      expect(res.status, JSON.stringify(headers)).toBe(303);
    }
    expect(await admin<unknown[]>("GET", `/organizations/${t.orgId}/users`)).toHaveLength(4);
    // Origin: null without Sec-Fetch-Site and without the session's token: the token check refuses it.
    const tokenless = await b.post(`${orgBase(t)}/users`, { ...fields, csrf: "forged" }, undefined, { Origin: "null" });
    expect(tokenless.status).toBe(403);
    expect(await admin<unknown[]>("GET", `/organizations/${t.orgId}/users`)).toHaveLength(4);
  });

  it("refuses a cross-site sign-in too, before the token is looked at", async () => {
    const b = new Browser();
    const page = await (await b.get("/manager/sign-in")).text();
    const res = await b.post("/manager/sign-in", { csrf: Browser.csrf(page), token: ADMIN_TOKEN }, undefined, {
      Origin: "https://attacker.example",
      "Sec-Fetch-Site": "cross-site",
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("set-cookie") ?? "").not.toContain("__Host-kw_session");
  });
});
