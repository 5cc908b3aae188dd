/**
 * The manager app's routes, in workerd: sign-in and sessions (`__Host-` cookies and their flags,
 * tampering, expiry), the sign-in form's server-signed CSRF token (a planted cookie with the same
 * value in the form, a forged, edited, mismatched or expired token: all refused, nobody signed in),
 * a failed sign-in answered with the form again and the reason on the field (never the token),
 * CSRF on every form, the nonce CSP, confirmations that name what they act on, the Organization Settings -> Users -> Client credentials
 * flow with the secret shown once, API keys, webhook configurations (health, edits under the
 * origin rule, test events, a delivery's attempts and re-send), and isolation of an organization
 * administrator by URL and by form tampering.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LastAttempt } from "../src/http/manager/pages/webhooks";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "../src/lib/encoding";
import { sign } from "../src/lib/signed";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, adminCall, authed, body, call, createTenant, issueToken } from "./helpers";
import { Browser, LOGIN_CSRF, SESSION, setCookies, timeTag } from "./manager-helpers";
import { attemptNow, createConfig, deliveryRow, inEndpoint } from "./webhook-helpers";

async function operator(): Promise<Browser> {
  const b = new Browser();
  const res = await b.signIn(ADMIN_TOKEN);
  expect(res.status).toBe(303);
  return b;
}

describe("sign-in and sessions", () => {
  it("sends visitors without a session to the sign-in page", async () => {
    for (const path of ["/manager", "/manager/organizations", "/manager/organizations/org_00000000000000000000000000/users"]) {
      const res = await new Browser().get(path);
      expect(res.status, path).toBe(303);
      expect(res.headers.get("location")).toBe("/manager/sign-in");
    }
  });

  it("serves pages with a nonce-based CSP whose nonce is on the inline style and script", async () => {
    const res = await new Browser().get("/manager/sign-in");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy")!;
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    expect(csp).toMatch(
      /^default-src 'none'; style-src 'nonce-[^']+'; script-src 'nonce-[^']+'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
    );
    const html = await res.text();
    expect(html).toContain(`<style nonce="${nonce}">`);
    expect(html).toContain(`<script nonce="${nonce}">`);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(html).toMatch(/<label for="token">/);
  });

  it("signs the operator in with ADMIN_TOKEN into a __Host- session cookie: Secure, HttpOnly, SameSite=Strict, Path=/, no Domain", async () => {
    const b = new Browser();
    const res = await b.signIn(ADMIN_TOKEN);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/manager/organizations");
    const cookie = setCookies(res).find((c) => c.startsWith(`${SESSION}=`))!;
    expectHostCookie(cookie, 28800);
    expect(cookie).not.toContain(ADMIN_TOKEN);
    // The sign-in form's cookie has done its job: it is deleted under the same name and path.
    const spent = setCookies(res).find((c) => c.startsWith(`${LOGIN_CSRF}=`))!;
    expectHostCookie(spent, 0);
    expect(b.cookies.has(LOGIN_CSRF)).toBe(false);
    // No manager cookie without the prefix is set any more.
    expect(setCookies(res).every((c) => c.startsWith("__Host-"))).toBe(true);
    expect((await b.get("/manager/organizations")).status).toBe(200);
  });

  it("refuses a sign-in without the sign-in form's CSRF token", async () => {
    const res = await new Browser().post("/manager/sign-in", { token: ADMIN_TOKEN });
    expect(res.status).toBe(403);
  });

  it("ignores a tampered session cookie and an expired one", async () => {
    const b = await operator();
    const original = b.cookies.get(SESSION)!;
    b.cookies.set(
      SESSION,
      original.replace(/\.([^.]+)\.([^.]+)$/, (_m, payload: string, mac: string) => `.${payload}x.${mac}`),
    );
    expect((await b.get("/manager/organizations")).status).toBe(303);
    b.cookies.set(SESSION, original);
    expect((await b.get("/manager/organizations", Date.now() + 8 * 3600_000 - 5000)).status).toBe(200);
    expect((await b.get("/manager/organizations", Date.now() + 8 * 3600_000 + 1000)).status).toBe(303);
  });

  it("signs out", async () => {
    const b = await operator();
    const csrf = await b.csrfOf("/manager/organizations");
    const res = await b.post("/manager/sign-out", { csrf });
    expect(res.headers.get("location")).toBe("/manager/sign-in");
    // Deleted with the attributes it was set with (a __Host- cookie is only replaced by one).
    expectHostCookie(setCookies(res).find((c) => c.startsWith(`${SESSION}=`))!, 0);
    expect(b.cookies.has(SESSION)).toBe(false);
    expect((await b.get("/manager/organizations")).status).toBe(303);
  });

  it("ends the session on the server when signing out: a copied cookie stops working", async () => {
    const b = await operator();
    const copy = new Browser();
    copy.cookies.set(SESSION, b.cookies.get(SESSION)!);
    expect((await copy.get("/manager/organizations")).status).toBe(200);
    await b.post("/manager/sign-out", { csrf: await b.csrfOf("/manager/organizations") });
    expect((await copy.get("/manager/organizations")).status).toBe(303);
  });

  it("ends every operator session when ADMIN_TOKEN changes", async () => {
    const b = await operator();
    expect((await b.get("/manager/organizations")).status).toBe(200);
    b.bindings = { ...env, ADMIN_TOKEN: `${ADMIN_TOKEN}-rotated` };
    expect((await b.get("/manager/organizations")).status).toBe(303);
    // The rotated token signs in as usual.
    expect((await b.signIn(`${ADMIN_TOKEN}-rotated`)).status).toBe(303);
    expect((await b.get("/manager/organizations")).status).toBe(200);
  });
});

const EXPIRED = "The sign-in form expired. Enter the administrator token again.";
const UNVERIFIED =
  "The sign-in form could not be verified. Enter the administrator token again; if this keeps happening, allow cookies for this site.";

/**
 * A Set-Cookie line of a `__Host-` cookie as RFC 6265bis 4.1.3.2 requires it (Secure, Path=/, no
 * Domain), and as the manager sets every cookie: HttpOnly, SameSite=Strict, with `maxAge`.
 */
function expectHostCookie(line: string, maxAge: number): void {
  expect(line).toMatch(/^__Host-/);
  expect(line).toMatch(/; Secure(;|$)/);
  expect(line).toMatch(/; Path=\/(;|$)/);
  expect(line).not.toMatch(/; Domain=/i);
  expect(line).toMatch(/; HttpOnly(;|$)/);
  expect(line).toMatch(/; SameSite=Strict(;|$)/);
  expect(line).toMatch(new RegExp(`; Max-Age=${maxAge}(;|$)`));
}

/** The payload of a signed value (`<prefix><kid>.<base64url JSON>.<mac>`), read without checking it. */
function payloadOf(value: string): Record<string, unknown> {
  const bytes = base64UrlDecode(value.split(".")[1] ?? "");
  return JSON.parse((bytes && decodeUtf8(bytes)) ?? "{}") as Record<string, unknown>;
}

/** The same value with its payload replaced, the MAC kept (what a tamperer can do without the key). */
function withPayload(value: string, payload: Record<string, unknown>): string {
  const [head = "", , mac = ""] = value.split(".");
  return `${head}.${base64UrlEncode(encodeUtf8(JSON.stringify(payload)))}.${mac}`;
}

/** The parts of a sign-in page a failed attempt must get right. */
function signInForm(html: string) {
  const input = /<input [^>]*id="token"[^>]*>/.exec(html)?.[0] ?? "";
  return {
    form: /<form method="post" action="\/manager\/sign-in"/.test(html),
    input,
    /** The message the token field is described by (aria-describedby), if any. */
    error: /<p id="token-error" class="field-error" role="alert">([^<]*)<\/p>/.exec(html)?.[1] ?? null,
    describedBy: /aria-describedby="([^"]+)"/.exec(input)?.[1] ?? null,
    invalid: /aria-invalid="true"/.test(input),
  };
}

/**
 * A tenant with a webhook configuration (its receiver's client secret is `receiverSecret`), and an
 * operator signed in to the manager, with the configuration's page path.
 */
async function onWebhookPage(receiverSecret: string) {
  const t = await createTenant();
  const bearer = await issueToken(t);
  const config = await createConfig(t, bearer, receiverSecret);
  const b = await operator();
  return { t, bearer, config, b, base: `/manager/organizations/${t.orgId}/webhooks/${config.id}` };
}

/** A refused token: 401, the form again with the reason on the field, and the token nowhere in the page. */
async function expectNotAccepted(res: Response, token: string): Promise<void> {
  expect(res.status).toBe(401);
  const html = await res.text();
  expect(signInForm(html).error).toMatch(/not accepted/);
  expect(html).not.toContain(token);
}

describe("a failed sign-in", () => {
  const WRONG = "kw_live_oa_not-a-real-token-but-it-looks-like-one";

  it("answers a wrong token with 401 and the form again, the reason on the field and the field empty", async () => {
    const b = new Browser();
    const res = await b.signIn(WRONG);
    expect(res.status).toBe(401);
    const html = await res.text();
    const page = signInForm(html);
    expect(page.form).toBe(true);
    expect(page.error).toBe(
      "That administrator token was not accepted: it is wrong, or it was revoked or has expired. Check it and try again.",
    );
    expect(page.describedBy).toBe("token-error");
    expect(page.invalid).toBe(true);
    expect(page.input).not.toMatch(/value=/);
    expect(html).not.toContain(WRONG);
    expect(b.cookies.has(SESSION)).toBe(false);
  });

  it("shows no error on the sign-in page before an attempt", async () => {
    const page = signInForm(await (await new Browser().get("/manager/sign-in")).text());
    expect(page.form).toBe(true);
    expect(page.error).toBeNull();
    expect(page.describedBy).toBeNull();
    expect(page.invalid).toBe(false);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
  ])("answers an %s token field with 400 and asks for a token", async (_name, token) => {
    const res = await new Browser().signIn(token);
    expect(res.status).toBe(400);
    const page = signInForm(await res.text());
    expect(page.form).toBe(true);
    expect(page.error).toBe("Enter an administrator token.");
    expect(page.describedBy).toBe("token-error");
  });

  it("answers a revoked administrator token with 401 and the form, without echoing the token", async () => {
    const t = await createTenant();
    const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, {});
    await admin("DELETE", `/organizations/${t.orgId}/admin-tokens/${minted.id}`);
    const res = await new Browser().signIn(minted.token);
    await expectNotAccepted(res, minted.token);
  });

  it("answers an expired administrator token with 401 and the form", async () => {
    const t = await createTenant();
    const minted = await admin<{ token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, { expires_in_days: 1 });
    const later = Date.now() + 86_400_000 + 1000;
    const b = new Browser();
    const form = await (await b.get("/manager/sign-in", later)).text();
    const res = await b.post("/manager/sign-in", { csrf: Browser.csrf(form), token: minted.token }, later);
    await expectNotAccepted(res, minted.token);
  });

  it("hands out a fresh sign-in form that works, after a wrong token", async () => {
    const b = new Browser();
    const failed = await (await b.signIn(WRONG)).text();
    const res = await b.post("/manager/sign-in", { csrf: Browser.csrf(failed), token: ADMIN_TOKEN });
    expect(res.status).toBe(303);
    expect(b.cookies.has(SESSION)).toBe(true);
  });

  it("answers a stale sign-in form with 403 and a fresh form, saying the form expired", async () => {
    const b = new Browser();
    const served = Date.now();
    const form = await (await b.get("/manager/sign-in", served)).text();
    const later = served + 10 * 60_000 + 1000;
    const res = await b.post("/manager/sign-in", { csrf: Browser.csrf(form), token: ADMIN_TOKEN }, later);
    expect(res.status).toBe(403);
    const html = await res.text();
    expect(signInForm(html).error).toBe(EXPIRED);
    expect(html).not.toContain(ADMIN_TOKEN);
    expect(b.cookies.has(SESSION)).toBe(false);
    // The fresh form, dated `later`, works at once.
    const retried = await b.post("/manager/sign-in", { csrf: Browser.csrf(html), token: ADMIN_TOKEN }, later);
    expect(retried.status).toBe(303);
  });
});

/**
 * Login CSRF (issue 22; OWASP CSRF Prevention Cheat Sheet, "Login CSRF"): the sign-in form's token
 * is signed by the server over the nonce in the `__Host-kw_login_csrf` cookie, so a pair an
 * attacker makes up, forges or edits is refused with 403 and the form again, and no session
 * cookie is set.
 */
describe("the sign-in form's CSRF token", () => {
  /** A refused sign-in form: 403, the form again with `message`, no session cookie, the token not echoed. */
  async function expectRefused(b: Browser, res: Response, message: string): Promise<void> {
    expect(res.status).toBe(403);
    expect(setCookies(res).some((line) => line.includes("kw_session="))).toBe(false);
    expect(b.cookies.has(SESSION)).toBe(false);
    const html = await res.text();
    expect(signInForm(html).error).toBe(message);
    expect(html).not.toContain(ADMIN_TOKEN);
    // Nobody was signed in: the browser still has no way into the manager.
    expect((await b.get("/manager/organizations")).status).toBe(303);
  }

  it("hands out a __Host- cookie holding a nonce and a form token signed over it, which signs in", async () => {
    const b = new Browser();
    const res = await b.get("/manager/sign-in");
    const line = setCookies(res).find((c) => c.startsWith(`${LOGIN_CSRF}=`))!;
    expectHostCookie(line, 600);
    const nonce = b.cookies.get(LOGIN_CSRF)!;
    const token = Browser.csrf(await res.text());
    // The form does not just echo the cookie: it is a signed value naming the nonce and when.
    expect(token).not.toBe(nonce);
    expect(token).toMatch(/^kw_login_t1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(payloadOf(token)).toMatchObject({ v: 1, n: nonce });
    expect((await b.post("/manager/sign-in", { csrf: token, token: ADMIN_TOKEN })).status).toBe(303);
    expect(b.cookies.has(SESSION)).toBe(true);
  });

  it("refuses a planted cookie with the same value in the form, and signs nobody in", async () => {
    // What a red team did: a cookie set in the victim's browser and a form posting the same
    // made-up value. Planted under both the old and the new name, so the old code signed in.
    const b = new Browser();
    const planted = "attacker-chosen-value-0123456789";
    b.cookies.set("kw_login_csrf", planted);
    b.cookies.set(LOGIN_CSRF, planted);
    const res = await b.post("/manager/sign-in", { csrf: planted, token: ADMIN_TOKEN });
    await expectRefused(b, res, UNVERIFIED);
  });

  it("refuses a planted cookie whose value looks like a signed token, with that token in the form", async () => {
    const b = new Browser();
    const real = Browser.csrf(await (await new Browser().get("/manager/sign-in")).text());
    b.cookies.set(LOGIN_CSRF, real);
    await expectRefused(b, await b.post("/manager/sign-in", { csrf: real, token: ADMIN_TOKEN }), UNVERIFIED);
  });

  it("refuses a token forged with a key the server does not have", async () => {
    const b = new Browser();
    await b.get("/manager/sign-in");
    const nonce = b.cookies.get(LOGIN_CSRF)!;
    // The current kid, the right prefix and payload; only the key is the attacker's.
    const forged = await sign([{ kid: "t1", raw: new Uint8Array(32).fill(9) }], "kw_login_", {
      v: 1,
      n: nonce,
      iat: Math.floor(Date.now() / 1000),
    });
    await expectRefused(b, await b.post("/manager/sign-in", { csrf: forged, token: ADMIN_TOKEN }), UNVERIFIED);
  });

  it("refuses a genuine token whose payload was edited to name the attacker's nonce", async () => {
    const b = new Browser();
    const token = Browser.csrf(await (await b.get("/manager/sign-in")).text());
    const planted = "attacker-chosen-value-0123456789";
    b.cookies.set(LOGIN_CSRF, planted);
    const tampered = withPayload(token, { ...payloadOf(token), n: planted });
    await expectRefused(b, await b.post("/manager/sign-in", { csrf: tampered, token: ADMIN_TOKEN }), UNVERIFIED);
  });

  it("refuses a genuine token posted with another form's cookie", async () => {
    const b = new Browser();
    await b.get("/manager/sign-in");
    const other = Browser.csrf(await (await new Browser().get("/manager/sign-in")).text());
    await expectRefused(b, await b.post("/manager/sign-in", { csrf: other, token: ADMIN_TOKEN }), UNVERIFIED);
  });

  it("refuses another signed value of the service (a session cookie) as the form token", async () => {
    const session = (await Browser.signedIn(ADMIN_TOKEN)).cookies.get(SESSION)!;
    const b = new Browser();
    await b.get("/manager/sign-in");
    await expectRefused(b, await b.post("/manager/sign-in", { csrf: session, token: ADMIN_TOKEN }), UNVERIFIED);
  });

  it("refuses a form without its cookie, and a cookie without the form's token", async () => {
    const noCookie = new Browser();
    const token = Browser.csrf(await (await noCookie.get("/manager/sign-in")).text());
    noCookie.cookies.delete(LOGIN_CSRF);
    await expectRefused(noCookie, await noCookie.post("/manager/sign-in", { csrf: token, token: ADMIN_TOKEN }), UNVERIFIED);
    const noToken = new Browser();
    await noToken.get("/manager/sign-in");
    await expectRefused(noToken, await noToken.post("/manager/sign-in", { token: ADMIN_TOKEN }), UNVERIFIED);
  });

  it("accepts a form for 10 minutes by the app's clock, and refuses it as expired after that", async () => {
    const served = Date.now();
    const within = new Browser();
    const early = Browser.csrf(await (await within.get("/manager/sign-in", served)).text());
    expect((await within.post("/manager/sign-in", { csrf: early, token: ADMIN_TOKEN }, served + 9 * 60_000 + 50_000)).status).toBe(303);

    const late = new Browser();
    const stale = Browser.csrf(await (await late.get("/manager/sign-in", served)).text());
    const res = await late.post("/manager/sign-in", { csrf: stale, token: ADMIN_TOKEN }, served + 10 * 60_000 + 1000);
    expect(res.status).toBe(403);
    expect(setCookies(res).some((line) => line.includes("kw_session="))).toBe(false);
    expect(signInForm(await res.text()).error).toBe(EXPIRED);
    expect(late.cookies.has(SESSION)).toBe(false);
  });

  it("refuses a genuine token dated in the future (beyond clock skew) as expired", async () => {
    const b = new Browser();
    const served = Date.now();
    const token = Browser.csrf(await (await b.get("/manager/sign-in", served + 5 * 60_000)).text());
    const res = await b.post("/manager/sign-in", { csrf: token, token: ADMIN_TOKEN }, served);
    expect(res.status).toBe(403);
    expect(signInForm(await res.text()).error).toBe(EXPIRED);
    expect(b.cookies.has(SESSION)).toBe(false);
  });
});

describe("CSRF", () => {
  it.each([
    ["missing", undefined],
    ["wrong", "forged-token"],
  ])("refuses a form with a %s CSRF token (403)", async (_name, csrf) => {
    const b = await operator();
    const res = await b.post("/manager/organizations", { name: "Evil", ...(csrf ? { csrf } : {}) });
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/CSRF/);
  });
});

describe("Organization Settings -> Users -> Client credentials", () => {
  it("creates an organization, a user and a credential whose secret is shown once, then revokes it", async () => {
    const b = await operator();
    const csrf = await b.csrfOf("/manager/organizations");
    const created = await b.post("/manager/organizations", { csrf, name: "Initrode <script>alert(1)</script>" });
    expect(created.status).toBe(303);
    const orgPath = created.headers.get("location")!.split("?")[0]!;
    const settings = await (await b.get(orgPath)).text();
    expect(settings).toContain("Organization Settings");
    expect(settings).toContain("Initrode &lt;script&gt;alert(1)&lt;/script&gt;");
    expect(settings).not.toContain("<script>alert(1)");

    expect((await b.post(`${orgPath}/users`, { csrf, name: "Ada", email: "" })).status).toBe(303);
    const users = await (await b.get(`${orgPath}/users`)).text();
    const credentialsPath = /href="([^"]+\/client-credentials)"/.exec(users)![1]!;

    const page = await b.post(credentialsPath, { csrf, name: "ci" });
    expect(page.status).toBe(200);
    const html = await page.text();
    const clientId = /id="client-id" class="secret" type="text" readonly="" value="([^"]+)"/.exec(html)?.[1];
    const secret = /id="client-secret" class="secret" type="text" readonly="" value="([^"]+)"/.exec(html)?.[1];
    expect(clientId).toMatch(/^kw_client_/);
    expect(secret).toMatch(/^kw_live_cs_/);
    expect(html).toMatch(/shown only this once/);

    const list = await (await b.get(credentialsPath)).text();
    expect(list).toContain(clientId);
    expect(list).not.toContain(secret);
    expect(list).toMatch(/never/); // last used

    const confirm = await b.get(`${credentialsPath}/${clientId}/revoke`);
    expect(await confirm.text()).toMatch(/access tokens it already has stop working/);
    const revoked = await b.post(`${credentialsPath}/${clientId}/revoke`, { csrf });
    expect(revoked.status).toBe(303);
    expect(await (await b.get(credentialsPath)).text()).toMatch(/status-revoked/);
  });

  it("shows a validation error page for bad input instead of a 500", async () => {
    const b = await operator();
    const csrf = await b.csrfOf("/manager/organizations");
    const res = await b.post("/manager/organizations", { csrf, name: "   " });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/name must not be empty/);
  });

  it("removes a user, revoking their credentials", async () => {
    const t = await createTenant();
    const b = await operator();
    const csrf = await b.csrfOf("/manager/organizations");
    const res = await b.post(`/manager/organizations/${t.orgId}/users/${t.userId}/remove`, { csrf });
    expect(res.status).toBe(303);
    const cred = await adminCall("GET", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${t.clientId}`);
    expect((await body<{ status: string }>(cred)).data.status).toBe("revoked");
  });

  it("deletes an organization only when the operator types its name, and offers it to operators only", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const orgName = (await admin<{ name: string }>("GET", `/organizations/${t.orgId}`)).name;
    const b = await operator();
    const settings = await (await b.get(`/manager/organizations/${t.orgId}`)).text();
    expect(settings).toContain(`/manager/organizations/${t.orgId}/delete`);
    const page = await (await b.get(`/manager/organizations/${t.orgId}/delete`)).text();
    expect(page.replaceAll("&#39;", "'")).toContain(`Type the organization's name, ${orgName}, to confirm`);
    const csrf = Browser.csrf(page);
    // A wrong or missing name deletes nothing.
    for (const typed of ["", "Another org"]) {
      const refused = await b.post(`/manager/organizations/${t.orgId}/delete`, { csrf, confirm: typed });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("nothing was deleted");
      expect((await call("/v1/me", authed(t, token))).status).toBe(200);
    }
    const done = await b.post(`/manager/organizations/${t.orgId}/delete`, { csrf, confirm: orgName });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/manager/organizations?notice=org-deleted");
    expect(await (await b.get("/manager/organizations?notice=org-deleted")).text()).toContain("Organization deleted");
    expect((await call("/v1/me", authed(t, token))).status).toBe(401);
    expect((await b.get(`/manager/organizations/${t.orgId}`)).status).toBe(404);

    // An organization's own administrator is not offered deletion, and cannot post it.
    const other = await createTenant();
    const minted = await admin<{ token: string }>("POST", `/organizations/${other.orgId}/admin-tokens`, {});
    const orgAdmin = await Browser.signedIn(minted.token);
    expect(await (await orgAdmin.get(`/manager/organizations/${other.orgId}`)).text()).not.toContain("/delete");
    const ownCsrf = await orgAdmin.csrfOf(`/manager/organizations/${other.orgId}`);
    const name = (await admin<{ name: string }>("GET", `/organizations/${other.orgId}`)).name;
    expect((await orgAdmin.post(`/manager/organizations/${other.orgId}/delete`, { csrf: ownCsrf, confirm: name })).status).toBe(404);
    expect((await adminCall("GET", `/organizations/${other.orgId}`)).status).toBe(200);
  });
});

describe("API keys and webhooks pages", () => {
  it("issues a key shown once, changes its limits and revokes it", async () => {
    const t = await createTenant();
    const b = await operator();
    const base = `/manager/organizations/${t.orgId}/api-keys`;
    const csrf = await b.csrfOf(base);
    const issued = await (await b.post(base, { csrf, name: "web", per_second: "3", per_day: "" })).text();
    const key = /id="api-key" class="secret" type="text" readonly="" value="([^"]+)"/.exec(issued)?.[1];
    expect(key).toMatch(/^kw_live_ak_/);
    const keys = await admin<{ id: string; hint: string; limits: { per_second: number; per_day: number } }[]>(
      "GET",
      `/organizations/${t.orgId}/api-keys`,
    );
    const mine = keys.find((k) => k.hint.endsWith(key!.slice(-4)))!;
    expect(mine.limits).toEqual({ per_second: 3, per_day: 1000 });
    expect(await (await b.get(base)).text()).not.toContain(key);

    expect((await b.post(`${base}/${mine.id}/limits`, { csrf, per_second: "7", per_day: "500" })).status).toBe(303);
    expect(await admin("GET", `/organizations/${t.orgId}/api-keys/${mine.id}`)).toMatchObject({ limits: { per_second: 7, per_day: 500 } });
    expect((await b.post(`${base}/${mine.id}/revoke`, { csrf })).status).toBe(303);
    expect(await admin("GET", `/organizations/${t.orgId}/api-keys/${mine.id}`)).toMatchObject({ status: "revoked" });
  });

  it("says when an organization has no webhook configurations", async () => {
    const t = await createTenant();
    const html = await (await (await operator()).get(`/manager/organizations/${t.orgId}/webhooks`)).text();
    expect(html).toMatch(/No webhook configurations/);
  });

  it("shows a configuration's health and deliveries, sends a test event, shows a delivery's attempts and re-sends it", async () => {
    const { t, bearer, b, base } = await onWebhookPage("manager-receiver-secret");
    expect(await (await b.get(`/manager/organizations/${t.orgId}/webhooks`)).text()).toContain(base);
    let html = await (await b.get(base)).text();
    expect(html).toMatch(/no deliveries yet/);
    const csrf = Browser.csrf(html);

    const sent = await b.post(`${base}/test`, { csrf });
    expect(sent.status).toBe(303);
    html = await (await b.get(sent.headers.get("location")!)).text();
    expect(html).toMatch(/Test event published/);
    const deliveryId = /deliveries\/(msg_[0-9a-z]{26})/.exec(html)?.[1];
    expect(deliveryId).toBeDefined();

    fakeNetwork({
      ...receiver(),
      [WEBHOOK_URL]: () =>
        new Response("<b>upstream down</b>", { status: 500, headers: { "Content-Type": "text/html", "Retry-After": "30" } }),
    });
    await attemptNow(t, bearer, deliveryId!);
    const deliveryPage = `${base}/deliveries/${deliveryId}`;
    html = await (await b.get(deliveryPage)).text();
    expect(html).toMatch(/webhook URL answered 500/);
    // The receiver's answer as stored: its two headers and the excerpt, as text (escaped).
    expect(html).toContain("Content-Type: text/html; Retry-After: 30");
    expect(html).toContain("&lt;b&gt;upstream down&lt;/b&gt;");
    expect(html).not.toContain("<b>upstream down</b>");
    expect(html).toMatch(/status-retry/);
    expect((await b.post(`${deliveryPage}/resend`, { csrf })).status).toBe(303);
    expect((await deliveryRow(t.orgId, deliveryId!)).queued_ms).toBeGreaterThan(Date.now() - 5_000);
    html = await (await b.get(base)).text();
    expect(html).toMatch(/every attempt has failed since/);
    expect(html).not.toContain("manager-receiver-secret");
  });

  it("edits a configuration, and refuses to move it to another origin without the client secret", async () => {
    const { t, bearer, config, b, base } = await onWebhookPage("manager-receiver-secret");
    const csrf = await b.csrfOf(base);
    const fields = {
      csrf,
      url: WEBHOOK_URL,
      token_url: TOKEN_URL,
      client_id: "kw",
      client_secret: "",
      events: "",
      description: "",
      status: "active",
    };
    const moved = await b.post(base, { ...fields, url: "https://collector.example/hook" });
    expect(moved.status).toBe(400);
    expect(await moved.text()).toMatch(/oauth\.client_secret is required when url moves to another origin/);
    const saved = await b.post(base, { ...fields, events: "order.created, order.paid", description: "orders" });
    expect(saved.status).toBe(303);
    const view = await body<{ events: string[]; description: string; oauth: { client_id: string } }>(
      await call(`/v1/webhook-configurations/${config.id}`, authed(t, bearer)),
    );
    expect(view.data).toMatchObject({ events: ["order.created", "order.paid"], description: "orders", oauth: { client_id: "kw" } });
    const withSecret = await b.post(base, { ...fields, url: "https://collector.example/hook", client_secret: "new-secret" });
    expect(withSecret.status).toBe(303);
  });

  it("edits the pacing (rate limit, order, shared token), and shows an endpoint's lane, and when it is paused and why", async () => {
    const { t, bearer, config, b, base } = await onWebhookPage("manager-receiver-secret");
    let html = await (await b.get(base)).text();
    expect(html).toMatch(/new lane \(no deliveries yet\)/);
    expect(html).toMatch(/unordered \(several at a time\); no rate limit; a token request before each webhook/);
    const fields = {
      csrf: Browser.csrf(html),
      url: WEBHOOK_URL,
      token_url: TOKEN_URL,
      client_id: "kw",
      client_secret: "",
      events: "",
      description: "",
    };
    expect((await b.post(base, { ...fields, rate_limit: "5", ordered: "on", token_cache: "on" })).status).toBe(303);
    const view = await body<Record<string, unknown>>(await call(`/v1/webhook-configurations/${config.id}`, authed(t, bearer)));
    expect(view.data).toMatchObject({ rate_limit: 5, ordered: true, token_cache: true });
    // A bad limit is refused with the field named, and nothing changes.
    const bad = await b.post(base, { ...fields, rate_limit: "0" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/rate_limit must be at least 1/);
    // The receiver asked for a pause.
    const until = Date.now() + 600_000;
    await inEndpoint(
      config.id,
      "UPDATE endpoint SET pause_kind = 'retry_after', paused_until_ms = ?, pause_reason = 'the receiver answered 429 with Retry-After'",
      until,
    );
    html = await (await b.get(base)).text();
    // One status: "paused" with its reason and when it resumes (one time format), no "active" beside it.
    const resumes = new Date(until).toISOString();
    expect(html).toContain(
      `<span class="badge status-paused">paused</span> the receiver answered 429 with Retry-After; resumes ${timeTag(resumes)}in 10 minutes`,
    );
    expect(html).not.toContain('<span class="badge status-active">');
    expect(html).toMatch(/ordered \(one at a time, in publish order\); at most 5 per second; one shared receiver token/);
    const list = await (await b.get(`/manager/organizations/${t.orgId}/webhooks`)).text();
    expect(list).toContain(
      `<span class="badge status-paused">paused</span> the receiver answered 429 with Retry-After; resumes ${timeTag(resumes)}`,
    );
    expect(list).not.toContain('<span class="badge status-active">');
    // Unchecked boxes turn the settings off again; an empty limit removes it.
    expect((await b.post(base, { ...fields, rate_limit: "" })).status).toBe(303);
    const cleared = await body<Record<string, unknown>>(await call(`/v1/webhook-configurations/${config.id}`, authed(t, bearer)));
    expect(cleared.data).toMatchObject({ rate_limit: null, ordered: false, token_cache: false });
  });
});

describe("confirmations", () => {
  /** The confirmation page's question (its h1), the form's action and its submit button. */
  async function confirmation(b: Browser, path: string) {
    const res = await b.get(path);
    expect(res.status, path).toBe(200);
    const html = await res.text();
    return {
      html,
      question: /<h1>([^<]*)<\/h1>/.exec(html)?.[1] ?? "",
      action: /<form method="post" action="([^"]+)" class="card"/.exec(html)?.[1] ?? "",
      button: /<button type="submit"[^>]*>([^<]*)<\/button>/g.exec(html.slice(html.indexOf("<main")))?.[1] ?? "",
    };
  }
  /** The href of the first link on `path` whose text starts with `text`. */
  async function linkOn(b: Browser, path: string, text: string): Promise<string> {
    const html = await (await b.get(path)).text();
    const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const href = new RegExp(`<a href="([^"]+)">${escaped}`).exec(html)?.[1];
    expect(href, `a link "${text}" on ${path}`).toBeDefined();
    return href!;
  }

  it("name the administrator token, user, client credentials and API key they revoke or remove, reached from their pages", async () => {
    const t = await createTenant();
    const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, { name: "Ops laptop" });
    const keyEnd = t.apiKey.slice(-4);
    const org = `/manager/organizations/${t.orgId}`;
    const b = await operator();
    const cases = [
      {
        link: [org, "Revoke<span"],
        question: `Revoke administrator token “Ops laptop” (${minted.id})?`,
        action: `${org}/admin-tokens/${minted.id}/revoke`,
        button: "Revoke administrator token",
      },
      {
        link: [`${org}/users`, "Remove<span"],
        question: `Remove user “Ada” (${t.userId})?`,
        action: `${org}/users/${t.userId}/remove`,
        button: "Remove user",
      },
      {
        link: [`${org}/users/${t.userId}/client-credentials`, "Revoke<span"],
        question: `Revoke client credentials “ci” (${t.clientId}) of Ada?`,
        action: `${org}/users/${t.userId}/client-credentials/${t.clientId}/revoke`,
        button: "Revoke client credentials",
      },
      {
        link: [`${org}/api-keys/${t.apiKeyId}`, "Revoke this API key"],
        question: `Revoke API key “main” (${t.apiKeyId}, ends …${keyEnd})?`,
        action: `${org}/api-keys/${t.apiKeyId}/revoke`,
        button: "Revoke API key",
      },
    ];
    for (const { link, question, action, button } of cases) {
      const page = await confirmation(b, await linkOn(b, link[0]!, link[1]!));
      expect(page.question).toBe(question);
      expect(page.action).toBe(action);
      expect(page.button).toBe(button);
      expect(page.html).toContain(`<title>${question} - keyway manager</title>`);
      for (const secret of [minted.token, t.apiKey, t.clientSecret]) expect(page.html).not.toContain(secret);
    }
  });

  it("name the webhook configuration they disable and the delivery they re-send", async () => {
    const { config, b, base } = await onWebhookPage("confirm-receiver-secret");
    const csrf = await b.csrfOf(base);
    const sent = await b.post(`${base}/test`, { csrf });
    const deliveryId = /deliveries\/(msg_[0-9a-z]{26})/.exec(await (await b.get(sent.headers.get("location")!)).text())![1]!;

    const disable = await confirmation(b, await linkOn(b, base, "Disable this webhook configuration"));
    expect(disable.question).toBe(`Disable webhook configuration “orders” (${config.id}, ${WEBHOOK_URL})?`);
    expect(disable.action).toBe(`${base}/disable`);
    expect(disable.button).toBe("Disable webhook configuration");
    expect(disable.html).not.toContain("confirm-receiver-secret");

    const delivery = `${base}/deliveries/${deliveryId}`;
    const resend = await confirmation(b, await linkOn(b, delivery, "Re-send this delivery"));
    expect(resend.question).toBe(`Re-send delivery ${deliveryId} (webhook.test) to ${WEBHOOK_URL}?`);
    expect(resend.action).toBe(`${delivery}/resend`);
    expect(resend.button).toBe("Re-send delivery");
  });

  it("disable a webhook configuration only once confirmed; re-enabling is one button", async () => {
    const t = await createTenant();
    const bearer = await issueToken(t);
    const config = await createConfig(t, bearer, "confirm-receiver-secret");
    const status = async () =>
      (await body<{ status: string }>(await call(`/v1/webhook-configurations/${config.id}`, authed(t, bearer)))).data.status;
    const b = await operator();
    const base = `/manager/organizations/${t.orgId}/webhooks/${config.id}`;
    const csrf = await b.csrfOf(base);
    // The edit form has no status: a status field posted with it changes nothing.
    const edited = await b.post(base, {
      csrf,
      url: WEBHOOK_URL,
      token_url: TOKEN_URL,
      client_id: "kw",
      client_secret: "",
      events: "",
      description: "",
      status: "disabled",
    });
    expect(edited.status).toBe(303);
    expect(await status()).toBe("active");

    const disabled = await b.post(`${base}/disable`, { csrf });
    expect(disabled.headers.get("location")).toBe(`${base}?notice=webhook-disabled`);
    expect(await status()).toBe("disabled");
    const page = await (await b.get(disabled.headers.get("location")!)).text();
    expect(page).toMatch(/Webhook configuration disabled/);
    expect(page).toContain(`action="${base}/enable"`);
    expect(page).not.toContain(`${base}/disable`);

    expect((await b.post(`${base}/enable`, { csrf })).headers.get("location")).toBe(`${base}?notice=webhook-enabled`);
    expect(await status()).toBe("active");
  });
});

describe("organization administrators", () => {
  async function orgAdmin(orgId: string, mint: Record<string, unknown> = {}): Promise<Browser & { tokenId: string; token: string }> {
    const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${orgId}/admin-tokens`, mint);
    const b = new Browser();
    const res = await b.signIn(minted.token);
    expect(res.headers.get("location")).toBe(`/manager/organizations/${orgId}/overview`);
    return Object.assign(b, { tokenId: minted.id, token: minted.token });
  }

  it("lose their sessions the moment their token is revoked, and cannot sign in with it again", async () => {
    const t = await createTenant();
    const b = await orgAdmin(t.orgId);
    expect((await b.get(`/manager/organizations/${t.orgId}/users`)).status).toBe(200);
    const revoked = await admin<{ status: string }>("DELETE", `/organizations/${t.orgId}/admin-tokens/${b.tokenId}`);
    expect(revoked.status).toBe("revoked");
    expect((await b.get(`/manager/organizations/${t.orgId}/users`)).status).toBe(303);
    expect((await new Browser().signIn(b.token)).status).toBe(401);
    // Idempotent, and listed without the token.
    expect((await adminCall("DELETE", `/organizations/${t.orgId}/admin-tokens/${b.tokenId}`)).status).toBe(200);
    const listed = await admin<{ id: string; status: string }[]>("GET", `/organizations/${t.orgId}/admin-tokens`);
    expect(listed).toEqual([expect.objectContaining({ id: b.tokenId, status: "revoked" })]);
    expect(JSON.stringify(listed)).not.toContain(b.token);
  });

  it("end their session on the server when signing out: a copied cookie stops working, the token still signs in", async () => {
    const t = await createTenant();
    const b = await orgAdmin(t.orgId);
    const settings = `/manager/organizations/${t.orgId}`;
    const copy = new Browser();
    copy.cookies.set(SESSION, b.cookies.get(SESSION)!);
    expect((await copy.get(settings)).status).toBe(200);
    const out = await b.post("/manager/sign-out", { csrf: await b.csrfOf(settings) });
    expect(out.headers.get("location")).toBe("/manager/sign-in");
    const refused = await copy.get(settings);
    expect(refused.status).toBe(303);
    expect(refused.headers.get("location")).toBe("/manager/sign-in");
    // Signing out ends that session only: the token itself is still good for a new one.
    const again = new Browser();
    expect((await again.signIn(b.token)).status).toBe(303);
    expect((await again.get(settings)).status).toBe(200);
    const log = await admin<{ action: string; actor: { id?: string } }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    expect(log.filter((e) => e.action === "session.ended")).toEqual([
      expect.objectContaining({ actor: { type: "admin_token", id: b.tokenId } }),
    ]);
  });

  it("use tokens that expire: no sign-in after, and no session outlives the token", async () => {
    const t = await createTenant();
    const b = await orgAdmin(t.orgId, { expires_in_days: 1 });
    const expiry = Date.now() + 86_400_000;
    // Sessions last 8 hours at most anyway; sign in again shortly before the token expires.
    const late = new Browser();
    const page = await (await late.get("/manager/sign-in", expiry - 3600_000)).text();
    expect((await late.post("/manager/sign-in", { csrf: Browser.csrf(page), token: b.token }, expiry - 3600_000)).status).toBe(303);
    expect((await late.get(`/manager/organizations/${t.orgId}`, expiry - 60_000)).status).toBe(200);
    expect((await late.get(`/manager/organizations/${t.orgId}`, expiry + 1000)).status).toBe(303);
    const after = new Browser();
    const page2 = await (await after.get("/manager/sign-in", expiry + 1000)).text();
    expect((await after.post("/manager/sign-in", { csrf: Browser.csrf(page2), token: b.token }, expiry + 1000)).status).toBe(401);
  });

  it("see and revoke their organization's administrator tokens, and read its audit log", async () => {
    const t = await createTenant();
    const b = await orgAdmin(t.orgId);
    const settings = await (await b.get(`/manager/organizations/${t.orgId}`)).text();
    expect(settings).toContain(b.tokenId);
    expect(settings).not.toContain(b.token);
    const confirm = await (await b.get(`/manager/organizations/${t.orgId}/admin-tokens/${b.tokenId}/revoke`)).text();
    expect(confirm).toContain(`<h1>Revoke administrator token (${b.tokenId})?</h1>`);
    const audit = await (await b.get(`/manager/organizations/${t.orgId}/audit-log`)).text();
    expect(audit).toContain("admin_token.minted");
    expect(audit).toContain("session.started");
    const res = await b.post(`/manager/organizations/${t.orgId}/admin-tokens/${b.tokenId}/revoke`, { csrf: Browser.csrf(confirm) });
    expect(res.status).toBe(303);
    // That was this session's own token: it has ended.
    expect((await b.get(`/manager/organizations/${t.orgId}`)).status).toBe(303);
  });

  it("see their own organization only, whatever the URL", async () => {
    const [mine, other] = [await createTenant(), await createTenant()];
    const b = await orgAdmin(mine.orgId);
    expect((await b.get(`/manager/organizations/${mine.orgId}`)).status).toBe(200);
    const credentials = await b.get(`/manager/organizations/${mine.orgId}/users/${mine.userId}/client-credentials`);
    expect(credentials.status).toBe(200);
    // "Last used" says how fresh it is (uses are batched, schemas/admin.ts USE_RESOLUTION_MS).
    expect(await credentials.text()).toContain("trails the latest use by up to 2 minutes");
    for (const path of [
      "/manager/organizations",
      `/manager/organizations/${other.orgId}`,
      `/manager/organizations/${other.orgId}/users`,
      `/manager/organizations/${other.orgId}/users/${other.userId}/client-credentials`,
      `/manager/organizations/${mine.orgId}/api-keys`,
    ]) {
      const res = await b.get(path);
      expect(res.status, path).toBe(404);
      expect(await res.text()).not.toContain(other.orgId.slice(4));
    }
  });

  it("cannot change another organization by tampering with forms", async () => {
    const [mine, other] = [await createTenant(), await createTenant()];
    const b = await orgAdmin(mine.orgId);
    const csrf = await b.csrfOf(`/manager/organizations/${mine.orgId}/users`);
    const attempts: [string, Record<string, string>][] = [
      [`/manager/organizations/${other.orgId}/users`, { csrf, name: "Mallory" }],
      [`/manager/organizations/${other.orgId}/users/${other.userId}/remove`, { csrf }],
      [`/manager/organizations/${other.orgId}/users/${other.userId}/client-credentials`, { csrf }],
      // Own organization in the URL, another organization's user or credential in the path.
      [`/manager/organizations/${mine.orgId}/users/${other.userId}/client-credentials`, { csrf }],
      [`/manager/organizations/${mine.orgId}/users/${mine.userId}/client-credentials/${other.clientId}/revoke`, { csrf }],
      [`/manager/organizations/${mine.orgId}/api-keys`, { csrf, name: "x" }],
      [`/manager/organizations/${mine.orgId}/admin-tokens`, { csrf }],
      ["/manager/organizations", { csrf, name: "new" }],
    ];
    for (const [path, fields] of attempts) expect((await b.post(path, fields)).status, path).toBe(404);
    const cred = await adminCall("GET", `/organizations/${other.orgId}/users/${other.userId}/client-credentials/${other.clientId}`);
    expect((await body<{ status: string }>(cred)).data.status).toBe("active");
    expect(await admin<unknown[]>("GET", `/organizations/${other.orgId}/users`)).toHaveLength(1);
  });
});

describe("routing", () => {
  it("answers unknown manager pages with an HTML 404 and leaves the API untouched", async () => {
    const b = await operator();
    const res = await b.get("/manager/nowhere");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect((await call("/v1/me")).status).toBe(401);
    expect((await call("/healthz")).status).toBe(200);
  });
});

describe("page assets", () => {
  it("ships its stylesheet and copy script unescaped (entity-escaped quotes would break both)", async () => {
    const html = await (await new Browser().get("/manager/sign-in")).text();
    const style = /<style nonce="[^"]+">([\s\S]*?)<\/style>/.exec(html)?.[1] ?? "";
    const script = /<script nonce="[^"]+">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "";
    expect(style).toContain('content:"\\2192"');
    expect(script).toContain('document.querySelectorAll("[data-copy]")');
    expect(style + script).not.toContain("&quot;");
  });
});

describe("client credentials without a secret, restricted, and DPoP-bound", () => {
  it("registers a private_key_jwt client with its public keys, restricts its scopes, requires DPoP, and rotates its keys", async () => {
    const t = await createTenant();
    const b = await operator();
    const base = `/manager/organizations/${t.orgId}/users/${t.userId}/client-credentials`;
    const csrf = await b.csrfOf(base);
    const form = await (await b.get(base)).text();
    expect(form).toContain('name="token_endpoint_auth_method" type="radio" value="private_key_jwt"');
    expect(form).toContain('id="scope-webhooks:read"');
    const key = {
      kty: "EC",
      crv: "P-256",
      x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
      y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
      kid: "k1",
    };
    const created = await b.post(base, {
      csrf,
      name: "signer",
      token_endpoint_auth_method: "private_key_jwt",
      jwks: JSON.stringify({ keys: [key] }),
      "scopes-shown": "1",
      "scope-webhooks:read": "on",
      dpop: "on",
    });
    expect(created.status).toBe(200);
    const html = await created.text();
    expect(html).toMatch(/No secret: this client authenticates with a JWT/);
    expect(html).not.toMatch(/id="client-secret"/);
    const clientId = /id="client-id" class="secret" type="text" readonly="" value="([^"]+)"/.exec(html)?.[1] ?? "";
    const view = await admin<{
      token_endpoint_auth_method: string;
      jwks: { keys: unknown[] };
      scopes: string[];
      dpop_bound_access_tokens: boolean;
    }>("GET", `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${clientId}`);
    expect(view).toMatchObject({
      token_endpoint_auth_method: "private_key_jwt",
      scopes: ["webhooks:read"],
      dpop_bound_access_tokens: true,
    });
    expect(view.jwks.keys).toEqual([{ ...key }]);
    const list = await (await b.get(base)).text();
    expect(list).toContain("private_key_jwt (1 key); DPoP required");

    // Rotation: the edit page shows the key set; old and new together, every scope again, no DPoP.
    const editPage = await (await b.get(`${base}/${clientId}/edit`)).text();
    expect(editPage).toContain("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU");
    const next = { ...key, kid: "k2", x: "WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis", y: "y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE" };
    const all = Object.fromEntries(["webhooks:read", "webhooks:write", "events:write", "graphql:mutate"].map((s) => [`scope-${s}`, "on"]));
    const saved = await b.post(`${base}/${clientId}`, {
      csrf,
      name: "signer",
      jwks: JSON.stringify({ keys: [key, next] }),
      "scopes-shown": "1",
      ...all,
    });
    expect(saved.status).toBe(303);
    const after = await admin<{ jwks: { keys: { kid: string }[] }; scopes: string[]; dpop_bound_access_tokens: boolean }>(
      "GET",
      `/organizations/${t.orgId}/users/${t.userId}/client-credentials/${clientId}`,
    );
    expect(after.jwks.keys.map((k) => k.kid)).toEqual(["k1", "k2"]);
    expect(after.scopes).toHaveLength(4);
    expect(after.dpop_bound_access_tokens).toBe(false);

    // Private key material is refused with the field named, nothing saved.
    const refused = await b.post(`${base}/${clientId}`, { csrf, jwks: JSON.stringify({ keys: [{ ...key, d: "secret" }] }) });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml, refusedHtml.replace(/<style[\s\S]*?<\/style>/, "").slice(-1500)).toMatch(/private key material/);
    const bad = await b.post(`${base}/${clientId}`, { csrf, jwks: "{not json" });
    expect(bad.status).toBe(400);
  });
});

/** The text a person reads of LastAttempt (its markup without tags): outside a layout, its time is exact. */
const lastAttempt = (delivery: Parameters<typeof LastAttempt>[0]["delivery"]): string =>
  String(LastAttempt({ delivery })).replace(/<[^>]+>/g, "");

describe("a delivery's latest attempt in the lists", () => {
  const attempt = {
    number: 1,
    series: 1,
    at: "2026-11-24T12:00:00.000Z",
    latency_ms: 3,
    note: null,
    response: null,
  };

  it("says an error once, in keyway's words, without repeating its step", () => {
    const line = lastAttempt({
      attempts: [
        { ...attempt, step: "token", http_status: null, outcome: "retry", error: "token endpoint could not be reached (network error)" },
      ],
    });
    expect(line).toMatch(/: token endpoint could not be reached \(network error\)$/);
    expect(line).not.toMatch(/token token/);
  });

  it("names the step, status and outcome when there is no error", () => {
    expect(lastAttempt({ attempts: [{ ...attempt, step: "webhook", http_status: 204, outcome: "delivered", error: null }] })).toMatch(
      /: webhook 204 delivered$/,
    );
    expect(lastAttempt({ attempts: [] })).toBe("-");
  });
});
