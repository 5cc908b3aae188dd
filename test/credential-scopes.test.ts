/**
 * What a client credential created without scopes gets, said where it is created (issue 43 item
 * 3): such a credential is unrestricted (every scope, today's and any added later), and the
 * operator API's answer says so (`scopes_unrestricted`), as the route's description does; one
 * created with scopes gets exactly those, `[]` none. The manager's credential form says what its
 * checkboxes mean beside them.
 */
import { describe, expect, it } from "vitest";
import { adminRoutes } from "../src/http/routes/admin";
import { ALL_SCOPES } from "../src/schemas/scopes";
import { ADMIN_TOKEN, admin, authed, call, createTenant, issueToken } from "./helpers";
import { Browser } from "./manager-helpers";

interface CredentialAnswer {
  client_id: string;
  scopes: string[];
  scopes_unrestricted: boolean;
}

describe("client credentials and their scopes", () => {
  it("answers scopes_unrestricted: true, with today's scopes, for a credential created without scopes; false with them", async () => {
    const t = await createTenant();
    const path = `/organizations/${t.orgId}/users/${t.userId}/client-credentials`;
    const open = await admin<CredentialAnswer>("POST", path, { name: "no scopes" });
    expect(open).toMatchObject({ scopes: [...ALL_SCOPES], scopes_unrestricted: true });

    const some = await admin<CredentialAnswer>("POST", path, { name: "read only", scopes: ["webhooks:read"] });
    expect(some).toMatchObject({ scopes: ["webhooks:read"], scopes_unrestricted: false });
    // Every scope listed explicitly is a restriction to those: a scope added later would not be among them.
    const listed = await admin<CredentialAnswer>("POST", path, { scopes: [...ALL_SCOPES] });
    expect(listed).toMatchObject({ scopes: [...ALL_SCOPES], scopes_unrestricted: false });
    const none = await admin<CredentialAnswer>("POST", path, { scopes: [] });
    expect(none).toMatchObject({ scopes: [], scopes_unrestricted: false });

    // `scopes: null` lifts a restriction; the list and the one credential say the same.
    const lifted = await admin<CredentialAnswer>("PATCH", `${path}/${some.client_id}`, { scopes: null });
    expect(lifted).toMatchObject({ scopes: [...ALL_SCOPES], scopes_unrestricted: true });
    expect(await admin<CredentialAnswer>("GET", `${path}/${open.client_id}`)).toMatchObject({ scopes_unrestricted: true });
  });

  it("gives the tokens of a credential created without scopes every scope", async () => {
    const t = await createTenant();
    const token = await issueToken(t);
    const me = await call("/v1/me", authed(t, token));
    expect(me.status).toBe(200);
    const claims = JSON.parse(atob((token.split(".")[1] ?? "").replace(/-/g, "+").replace(/_/g, "/"))) as { scope?: string };
    expect(claims.scope?.split(" ").sort()).toEqual([...ALL_SCOPES].sort());
  });

  it("says so in the creation route's description", () => {
    const route = adminRoutes.find((r) => r.operationId === "createClientCredential");
    expect(route?.description).toContain("without `scopes` the credential is unrestricted");
    expect(route?.description).toContain("any scope keyway adds later");
    expect(route?.description).toContain("`scopes: []` gives its tokens no scope");
  });

  it("says beside the manager form's scope checkboxes what ticking all, some or none means", async () => {
    const t = await createTenant();
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const res = await b.get(`/manager/organizations/${t.orgId}/users/${t.userId}/client-credentials`);
    expect(res.status).toBe(200);
    const html = (await res.text()).replace(/\s+/g, " ");
    expect(html).toMatch(/<fieldset [^>]*aria-describedby="[^"]*scopes-meaning[^"]*"[^>]*><legend>Scopes its tokens may have<\/legend>/);
    expect(html).toContain('<p class="hint" id="scopes-meaning">');
    expect(html).toContain(
      "Every box ticked (the default): no restriction, so its tokens may have every scope, including any scope keyway adds later.",
    );
    expect(html).toContain("None ticked: its tokens carry no scope");
    // The list says which credentials are unrestricted.
    expect(html).toContain("all, unrestricted");
  });
});
