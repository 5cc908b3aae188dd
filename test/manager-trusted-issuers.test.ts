/**
 * The manager's Trusted issuers and the credential form's new options (issue 44): an issuer trusted
 * through the form (its metadata and key set fetched through test/fake-network.ts) is listed with
 * its key set URL and source, reuse policy, lifetime bound and the key ids keyway holds; a refused
 * issuer form (the schema's, and an issuer whose metadata cannot be fetched) keeps the values with
 * each message beside its field; a federated_jwt credential with JWT access tokens is created
 * through the credential form (the issuer chosen from the organization's), and a refused one keeps
 * what was typed; a private_key_jwt credential takes a key set URL, and its edit form changes the
 * token strategy; removing the issuer goes through a confirmation that says it revokes the
 * federated credentials, and does.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { fakeNetwork, json } from "./fake-network";
import { ADMIN_TOKEN, admin, createTenant, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";

const ISSUER = "https://ci.example";
const CLIENT_JWKS = "https://client.example/jwks.json";
const KEY = { kty: "EC", crv: "P-256", x: "dtBKBy1gSPqMotFf3jANxNoeYdeYhp3NaqQJWFsZv4g", y: "W4594XVzYFr0xlQhzJBLE44kGljOzPhZNv9wqdOFktw" };
const SUBJECT = "repo:octo-org/app:ref:refs/heads/main";

const orgBase = (t: Tenant) => `/manager/organizations/${t.orgId}`;
const input = (html: string, id: string) => new RegExp(`<input id="${id}"[^>]*>`).exec(html)?.[0] ?? "";
const fieldError = (html: string, id: string) =>
  new RegExp(`<p id="${id}-error" class="field-error" role="alert">([^<]+)</p>`).exec(html)?.[1] ?? "";

beforeEach(() => {
  fakeNetwork({
    [`${ISSUER}/.well-known/openid-configuration`]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/keys` }),
    [`${ISSUER}/keys`]: () => json({ keys: [{ ...KEY, kid: "ci-key-1" }] }),
    [CLIENT_JWKS]: () => json({ keys: [{ ...KEY, kid: "client-key-1" }] }),
  });
});

describe("trusted issuers in the manager", () => {
  it("trusts an issuer through the form, lists what keyway holds of it, and says a refused form's mistakes beside the fields", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const page = `${orgBase(t)}/trusted-issuers`;

    // Linked from the organization's page and its sections.
    const settings = await (await b.get(orgBase(t))).text();
    expect(settings).toContain(`href="${page}"`);

    let csrf = await b.csrfOf(page);
    // The schema's refusal: no issuer, a lifetime under a minute; every value kept.
    let res = await b.post(page, {
      csrf,
      issuer: "",
      name: "CI runners",
      assertion_reuse: "until_expiry",
      max_assertion_lifetime_seconds: "10",
    });
    expect(res.status).toBe(400);
    let html = await res.text();
    expect(fieldError(html, "issuer")).toBe("Issuer is required");
    expect(fieldError(html, "max_assertion_lifetime_seconds")).toMatch(/^Longest JWT lifetime \(seconds\) /);
    expect(input(html, "name")).toContain('value="CI runners"');
    expect(input(html, "max_assertion_lifetime_seconds")).toContain('value="10"');
    expect(input(html, "reuse-until_expiry")).toMatch(/checked/);
    expect(html).toContain("<strong>Nothing was added.</strong>");

    // The domain's: an issuer whose metadata cannot be fetched, said on the issuer field.
    res = await b.post(page, { csrf, issuer: "https://unreachable.example", name: "Nowhere", assertion_reuse: "once" });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "issuer")).toMatch(/^Issuer .*jwks_uri/);
    expect(input(html, "issuer")).toContain('value="https://unreachable.example"');
    expect(await admin("GET", `/organizations/${t.orgId}/trusted-issuers`)).toEqual([]);

    res = await b.post(page, {
      csrf,
      issuer: ISSUER,
      name: "CI runners",
      assertion_reuse: "until_expiry",
      max_assertion_lifetime_seconds: "600",
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${page}?notice=issuer-added`);
    html = await (await b.get(`${page}?notice=issuer-added`)).text();
    expect(html).toContain("Trusted issuer added");
    expect(html).toContain(`<code>${ISSUER}</code>`);
    expect(html).toContain(`<code>${ISSUER}/keys</code> (discovered)`);
    expect(html).toContain("until expiry");
    expect(html).toContain("600 s");
    expect(html).toContain("ci-key-1");
    expect(html).toMatch(/aria-current="page"[^>]*>Trusted issuers|>Trusted issuers<\/a>/);

    // A key set URL given: registered, not discovered.
    csrf = await b.csrfOf(page);
    res = await b.post(page, { csrf, issuer: "https://other.example", jwks_uri: CLIENT_JWKS, assertion_reuse: "once" });
    expect(res.status).toBe(303);
    const issuers = await admin<
      { issuer: string; jwks_uri_source: string; assertion_reuse: string; max_assertion_lifetime_seconds: number }[]
    >("GET", `/organizations/${t.orgId}/trusted-issuers`);
    expect(issuers.map((i) => [i.issuer, i.jwks_uri_source, i.assertion_reuse, i.max_assertion_lifetime_seconds]).sort()).toEqual([
      [ISSUER, "discovered", "until_expiry", 600],
      ["https://other.example", "registered", "once", 3600],
    ]);
  });

  it("creates a federated credential with JWT access tokens through the form, keeps a refused one's values, and removes the issuer through a confirmation that revokes it", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const issuer = await admin<{ id: string }>("POST", `/organizations/${t.orgId}/trusted-issuers`, { issuer: ISSUER, name: "CI" });
    const creds = `${orgBase(t)}/users/${t.userId}/client-credentials`;
    let html = await (await b.get(creds)).text();
    expect(html).toContain(`<option value="${ISSUER}">CI: ${ISSUER}</option>`);
    const csrf = Browser.csrf(html);

    // No issuer chosen: said beside the select; the method, subject and strategy kept.
    let res = await b.post(creds, {
      csrf,
      name: "deployer",
      token_endpoint_auth_method: "federated_jwt",
      federated_issuer: "",
      federated_subject: SUBJECT,
      access_token_strategy: "jwt",
    });
    expect(res.status).toBe(400);
    html = await res.text();
    expect(fieldError(html, "federated_issuer")).toMatch(/^Trusted issuer /);
    expect(html).toContain('aria-describedby="federated_issuer-error"');
    expect(input(html, "federated_subject")).toContain(`value="${SUBJECT}"`);
    expect(input(html, "method-federated")).toMatch(/checked/);
    expect(input(html, "strategy-jwt")).toMatch(/checked/);
    expect(input(html, "name")).toContain('value="deployer"');

    res = await b.post(creds, {
      csrf,
      name: "deployer",
      token_endpoint_auth_method: "federated_jwt",
      federated_issuer: ISSUER,
      federated_subject: SUBJECT,
      access_token_strategy: "jwt",
    });
    expect(res.status).toBe(200);
    html = await res.text();
    expect(html).toMatch(/No secret/);
    expect(html).not.toContain('id="client-secret"');
    const [cred] = await admin<
      { client_id: string; token_endpoint_auth_method: string; federated: unknown; access_token_strategy: string }[]
    >("GET", `/organizations/${t.orgId}/users/${t.userId}/client-credentials?limit=100`).then((all) =>
      all.filter((c) => c.token_endpoint_auth_method === "federated_jwt"),
    );
    expect(cred?.federated).toEqual({ issuer: ISSUER, subject: SUBJECT });
    expect(cred?.access_token_strategy).toBe("jwt");
    html = await (await b.get(creds)).text();
    expect(html.replaceAll("<wbr>", "")).toContain(
      `federated_jwt: <code class="url">${ISSUER}</code>, subject <code class="wrap">${SUBJECT}</code>`,
    );
    expect(html).toContain("JWT (RFC 9068)");

    // The removal's confirmation names the issuer and says what it revokes; only its POST removes.
    const confirm = `${orgBase(t)}/trusted-issuers/${issuer.id}/remove`;
    html = await (await b.get(confirm)).text();
    expect(html).toContain(`Stop trusting issuer “CI” (${ISSUER}, ${issuer.id})?`);
    expect(html).toMatch(/Every federated_jwt client credential that names this issuer is revoked/);
    expect(html).toMatch(/<button type="submit" class="danger">Remove trusted issuer<\/button>/);
    res = await b.post(confirm, { csrf: Browser.csrf(html) });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${orgBase(t)}/trusted-issuers?notice=issuer-removed`);
    expect(await admin("GET", `/organizations/${t.orgId}/trusted-issuers`)).toEqual([]);
    const after = await admin<{ status: string }>(
      "GET",
      `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${cred?.client_id}`,
    );
    expect(after.status).toBe("revoked");
  });

  it("takes a key set URL for private_key_jwt and changes a credential's access tokens on its edit form", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const creds = `${orgBase(t)}/users/${t.userId}/client-credentials`;
    const csrf = await b.csrfOf(creds);
    const res = await b.post(creds, { csrf, name: "by-url", token_endpoint_auth_method: "private_key_jwt", jwks_uri: CLIENT_JWKS });
    expect(res.status).toBe(200);
    let html = await (await b.get(creds)).text();
    expect(html.replaceAll("<wbr>", "")).toContain(`private_key_jwt (keys at <code class="url">${CLIENT_JWKS}</code>)`);
    const all = await admin<{ client_id: string; jwks_uri: string | null }[]>(
      "GET",
      `/organizations/${t.orgId}/users/${t.userId}/client-credentials`,
    );
    const cred = all.find((c) => c.jwks_uri === CLIENT_JWKS);
    expect(cred).toBeDefined();

    const edit = `${creds}/${cred?.client_id}/edit`;
    html = await (await b.get(edit)).text();
    expect(input(html, "jwks_uri")).toContain(`value="${CLIENT_JWKS}"`);
    expect(input(html, "strategy-opaque")).toMatch(/checked/);
    const saved = await b.post(`${creds}/${cred?.client_id}`, {
      csrf: Browser.csrf(html),
      name: "by-url",
      jwks: "",
      jwks_uri: CLIENT_JWKS,
      access_token_strategy: "jwt",
    });
    expect(saved.status).toBe(303);
    const view = await admin<{ access_token_strategy: string; jwks_uri: string | null }>(
      "GET",
      `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${cred?.client_id}`,
    );
    expect(view).toMatchObject({ access_token_strategy: "jwt", jwks_uri: CLIENT_JWKS });

    // Emptying both the keys and the URL is refused beside the keys, the choice kept.
    const refused = await b.post(`${creds}/${cred?.client_id}`, {
      csrf: Browser.csrf(html),
      name: "by-url",
      jwks: "",
      jwks_uri: "",
      access_token_strategy: "opaque",
    });
    expect(refused.status).toBe(400);
    html = await refused.text();
    expect(fieldError(html, "jwks")).toBe("Public keys (JWK Set): give the keys or a key set URL");
    expect(input(html, "strategy-opaque")).toMatch(/checked/);
  });

  it("fetches an issuer's keys now from its row: a key it withdrew is gone from what keyway holds; an unreachable set leaves them", async () => {
    let published = [{ ...KEY, kid: "ci-key-1" }];
    let up = true;
    fakeNetwork({
      [`${ISSUER}/.well-known/openid-configuration`]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/keys` }),
      [`${ISSUER}/keys`]: () => (up ? json({ keys: published }) : new Response("down", { status: 503 })),
    });
    const t = await createTenant();
    const issuer = await admin<{ id: string }>("POST", `/organizations/${t.orgId}/trusted-issuers`, { issuer: ISSUER });
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const page = `${orgBase(t)}/trusted-issuers`;
    let html = await (await b.get(page)).text();
    expect(html).toContain(`Fetch keys now<span class="skip"> of ${ISSUER}</span>`);
    published = [{ ...KEY, kid: "ci-key-2" }];
    let res = await b.post(`${page}/${issuer.id}/refresh`, { csrf: Browser.csrf(html) });
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(`${page}?notice=issuer-keys-refreshed`);
    html = await (await b.get(`${page}?notice=issuer-keys-refreshed`)).text();
    expect(html).toContain("ci-key-2");
    expect(html).not.toContain("ci-key-1");
    up = false;
    res = await b.post(`${page}/${issuer.id}/refresh`, { csrf: Browser.csrf(html) });
    expect(res.headers.get("Location")).toBe(`${page}?notice=issuer-keys-unreachable`);
    html = await (await b.get(`${page}?notice=issuer-keys-unreachable`)).text();
    expect(html).toContain("could not be fetched");
    expect(html).toContain("ci-key-2");
  });
});
