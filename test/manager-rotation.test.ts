/**
 * Rotating an API key's secret in the manager app (issue 29, item 6; the operator API's
 * POST .../rotate and DELETE .../previous-secret): the key's page chooses a grace, a confirmation
 * names the key and the grace, the new secret is shown once and works at the token endpoint, the
 * old one works until "End grace now" (confirmed too) and is refused with 401 after it. Every POST
 * needs the session's CSRF token; only the operator reaches any of it.
 */
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, admin, call, createTenant, type Tenant, tokenRequest } from "./helpers";
import { Browser, timeTag } from "./manager-helpers";

interface KeyView {
  hint: string;
  status: string;
  previous_secret_expires_at: string | null;
}

const keysPage = (t: Tenant) => `/manager/organizations/${t.orgId}/api-keys`;
const keyPage = (t: Tenant) => `${keysPage(t)}/${t.apiKeyId}`;
const keyApi = (t: Tenant) => `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`;
/** The token endpoint's answer (spec 4.1) to this secret as x-api-key. */
const tokenStatus = async (t: Tenant, apiKey: string) => (await call("/v1/oauth", tokenRequest({ ...t, apiKey }))).status;
/** The one-time secret on a page (views.tsx SecretOnce). */
const secretOn = (html: string) => /id="api-key" class="secret" type="text" readonly="" value="([^"]+)"/.exec(html)?.[1];
/** As the manager writes an instant (views.tsx when). */
const shown = (iso: string) => iso.replace("T", " ").replace(/\.\d{3}Z$/, " UTC");

/** A confirmation page's question, form action, hidden fields and button. */
async function confirmation(b: Browser, path: string) {
  const res = await b.get(path);
  expect(res.status, path).toBe(200);
  const html = await res.text();
  const main = html.slice(html.indexOf("<main"));
  return {
    html,
    question: /<h1>([^<]*)<\/h1>/.exec(html)?.[1] ?? "",
    action: /<form method="post" action="([^"]+)" class="card"/.exec(html)?.[1] ?? "",
    grace: /<input type="hidden" name="grace_seconds" value="([^"]*)"/.exec(html)?.[1],
    button: /<button type="submit"([^>]*)>([^<]*)<\/button>/.exec(main)?.slice(1) ?? [],
    warning: /<p class="warning">([^<]*)<\/p>/.exec(main)?.[1] ?? "",
  };
}

describe("rotating an API key's secret in the manager", () => {
  it("confirms, shows the new secret once, and keeps the old one working until the grace is ended", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const before = await admin<KeyView>("GET", keyApi(t));

    // The key's page: a GET form choosing the grace; no grace running yet.
    const page = await (await b.get(keyPage(t))).text();
    expect(page).toContain(`<form method="get" action="${keyPage(t)}/rotate" class="card" aria-label="Rotate secret">`);
    for (const value of ["0", "3600", "86400", "604800", "seconds"]) expect(page).toContain(`<option value="${value}">`);
    expect(page).not.toContain("Previous secret stops working");

    // The confirmation names the key and the grace, and changes nothing.
    const asked = await confirmation(b, `${keyPage(t)}/rotate?grace=3600&grace_seconds=`);
    expect(asked.question).toBe(`Rotate the secret of API key “main” (${t.apiKeyId}, ${before.hint})?`);
    expect(asked.action).toBe(`${keyPage(t)}/rotate`);
    expect(asked.grace).toBe("3600");
    expect(asked.button).toEqual(["", "Rotate secret"]);
    expect(asked.warning).toContain("keeps working for 1 hour more");
    expect(asked.html).toContain(`<title>${asked.question} - keyway manager</title>`);
    expect(asked.html).not.toContain(t.apiKey);
    expect((await admin<KeyView>("GET", keyApi(t))).previous_secret_expires_at).toBeNull();

    // Confirmed: the new secret, once, and until when the old one works.
    const rotated = await b.post(asked.action, { csrf: Browser.csrf(asked.html), grace_seconds: asked.grace ?? "" });
    expect(rotated.status).toBe(200);
    const html = await rotated.text();
    const secret = secretOn(html);
    expect(secret).toMatch(/^kw_live_ak_/);
    expect(secret).not.toBe(t.apiKey);
    expect(html).toContain("<h1>New API key secret</h1>");
    expect(html).toContain('data-copy="api-key"');
    const key = await admin<KeyView>("GET", keyApi(t));
    const until = key.previous_secret_expires_at ?? "";
    expect(Date.parse(until) - Date.now()).toBeGreaterThan(3500_000);
    expect(html).toContain(
      `Previous secret stops working <strong>${timeTag(until)}in 1 hour<span class="sr-only"> (${shown(until)})</span></time></strong>`,
    );
    expect(key.hint).not.toBe(before.hint);

    // Both secrets get a token now.
    expect(await tokenStatus(t, secret!)).toBe(200);
    expect(await tokenStatus(t, t.apiKey)).toBe(200);

    // The key's page says until when, offers to end it, and never shows a secret again.
    const during = await (await b.get(keyPage(t))).text();
    expect(during).toContain(
      `Previous secret stops working <strong>${timeTag(until)}in 1 hour<span class="sr-only"> (${shown(until)})</span></time></strong>`,
    );
    expect(during).toContain(`<a href="${keyPage(t)}/end-grace">End grace now</a>`);
    expect(during).not.toContain(secret!);
    expect(during).not.toContain(t.apiKey);
    expect(await (await b.get(keysPage(t))).text()).not.toContain(secret!);

    // Ending the grace is confirmed too; then the old secret is refused, the new one works on.
    const end = await confirmation(b, `${keyPage(t)}/end-grace`);
    expect(end.question).toBe(`End the grace of the previous secret of API key “main” (${t.apiKeyId}, ${key.hint})?`);
    expect(end.action).toBe(`${keyPage(t)}/end-grace`);
    expect(end.button).toEqual([' class="danger"', "End grace now"]);
    expect(end.warning).toContain(shown(until));
    expect(await tokenStatus(t, t.apiKey)).toBe(200);
    const ended = await b.post(end.action, { csrf: Browser.csrf(end.html) });
    expect(ended.status).toBe(303);
    expect(ended.headers.get("location")).toBe(`${keyPage(t)}?notice=grace-ended`);
    const after = await (await b.get(ended.headers.get("location")!)).text();
    expect(after).toContain("Grace ended: the previous secret is refused from its next request on");
    expect(after).not.toContain("Previous secret works until");
    expect(after).not.toContain("End grace now");
    expect(await tokenStatus(t, t.apiKey)).toBe(401);
    expect(await tokenStatus(t, secret!)).toBe(200);

    // The audit log has both, by the operator, and neither secret.
    const audit = await admin<{ action: string; actor: { type: string } }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    for (const action of ["api_key.rotated", "api_key.grace_ended"]) {
      expect(audit.find((e) => e.action === action)?.actor, action).toEqual({ type: "operator" });
    }
    expect(JSON.stringify(audit)).not.toContain(secret!.slice(11, 54));
  });

  it("without a grace, warns that the old secret stops at once, and it does", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const asked = await confirmation(b, `${keyPage(t)}/rotate?grace=0`);
    expect(asked.grace).toBe("0");
    expect(asked.button).toEqual([' class="danger"', "Rotate secret"]);
    expect(asked.warning).toContain("stops working at once");
    const html = await (await b.post(asked.action, { csrf: Browser.csrf(asked.html), grace_seconds: "0" })).text();
    const secret = secretOn(html);
    expect(html).toContain("The previous secret no longer works.");
    expect(html).not.toContain("Not applied yet");
    expect(await tokenStatus(t, t.apiKey)).toBe(401);
    expect(await tokenStatus(t, secret!)).toBe(200);
    expect(await (await b.get(keyPage(t))).text()).not.toContain("End grace now");
  });

  it("takes a grace from its choices or a number of seconds up to 7 days, and refuses anything else before rotating", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    for (const [query, grace, words] of [
      ["grace=86400", "86400", "24 hours"],
      ["grace=604800", "604800", "7 days"],
      ["grace=seconds&grace_seconds=90", "90", "90 seconds"],
      ["grace=seconds&grace_seconds=120", "120", "2 minutes"],
      ["grace=3600&grace_seconds=3600", "3600", "1 hour"],
    ] as const) {
      const asked = await confirmation(b, `${keyPage(t)}/rotate?${query}`);
      expect(asked.grace, query).toBe(grace);
      expect(asked.warning, query).toContain(`for ${words} more`);
    }
    for (const [query, message] of [
      ["grace=seconds&grace_seconds=604801", "grace_seconds must be at most 604800"],
      ["grace=seconds&grace_seconds=1.5", "grace_seconds"],
      ["grace=seconds&grace_seconds=", "grace_seconds"],
      ["grace=weeks", "grace_seconds"],
      ["", "grace_seconds"],
      ["grace=3600&grace_seconds=5", "Choose “A number of seconds”"],
    ] as const) {
      const res = await b.get(`${keyPage(t)}/rotate?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.text(), query).toContain(message);
    }
    const csrf = await b.csrfOf(keyPage(t));
    for (const grace_seconds of ["abc", "-1", "604801", ""]) {
      expect((await b.post(`${keyPage(t)}/rotate`, { csrf, grace_seconds })).status, grace_seconds).toBe(400);
    }
    // Nothing was rotated: the first secret still works, and no rotation is in the audit log.
    expect(await tokenStatus(t, t.apiKey)).toBe(200);
    const audit = await admin<{ action: string }[]>("GET", `/organizations/${t.orgId}/audit-log`);
    expect(audit.map((e) => e.action)).not.toContain("api_key.rotated");
  });

  it("needs the session's CSRF token to rotate or to end a grace", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const before = await admin<KeyView>("GET", keyApi(t));
    const forged: Record<string, string>[] = [{ grace_seconds: "3600" }, { csrf: "not-the-token", grace_seconds: "3600" }];
    for (const fields of forged) {
      const res = await b.post(`${keyPage(t)}/rotate`, fields);
      expect(res.status).toBe(403);
      const html = await res.text();
      expect(html).toMatch(/CSRF token/);
      expect(secretOn(html)).toBeUndefined();
    }
    expect((await admin<KeyView>("GET", keyApi(t))).hint).toBe(before.hint);

    // A grace started through the API is not ended by a forged form.
    await admin("POST", `${keyApi(t)}/rotate`, { grace_seconds: 3600 });
    for (const fields of [{}, { csrf: "not-the-token" }] as Record<string, string>[])
      expect((await b.post(`${keyPage(t)}/end-grace`, fields)).status).toBe(403);
    expect((await admin<KeyView>("GET", keyApi(t))).previous_secret_expires_at).not.toBeNull();
    expect(await tokenStatus(t, t.apiKey)).toBe(200);
  });

  it("is the operator's only, and not offered for a revoked key", async () => {
    const t = await createTenant();
    const minted = await admin<{ token: string }>("POST", `/organizations/${t.orgId}/admin-tokens`, {});
    const orgAdmin = await Browser.signedIn(minted.token);
    const csrf = await orgAdmin.csrfOf(`/manager/organizations/${t.orgId}`);
    for (const path of [`${keyPage(t)}/rotate?grace=0`, `${keyPage(t)}/end-grace`])
      expect((await orgAdmin.get(path)).status, path).toBe(404);
    for (const path of [`${keyPage(t)}/rotate`, `${keyPage(t)}/end-grace`]) {
      expect((await orgAdmin.post(path, { csrf, grace_seconds: "0" })).status, path).toBe(404);
    }
    expect(await tokenStatus(t, t.apiKey)).toBe(200);

    const b = await Browser.signedIn(ADMIN_TOKEN);
    await admin("DELETE", keyApi(t));
    expect(await (await b.get(keyPage(t))).text()).not.toContain("Rotate secret");
    expect((await b.get(`${keyPage(t)}/rotate?grace=0`)).status).toBe(409);
    expect((await b.post(`${keyPage(t)}/rotate`, { csrf: await b.csrfOf(keyPage(t)), grace_seconds: "0" })).status).toBe(409);
  });
});
