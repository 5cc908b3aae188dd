/**
 * The manager's Organizations (operators only: the list and creating one) and Organization
 * Settings: administrator tokens (mint, revoke) and deleting an organization behind a typed
 * confirmation. Mounted under /manager/organizations by routes.tsx, behind its session and CSRF
 * checks; the markup is in pages/organizations.tsx.
 */
import { Hono } from "hono";
import { adminTokenView, getOrgAdminToken, listOrgAdminTokens, mintOrgAdminToken, revokeOrgAdminToken } from "../../identity/admin-tokens";
import { createOrganization, deleteOrganization, listOrganizations, updateOrganizationQuota } from "../../identity/organizations";
import { CreateOrganizationInput, MintOrgAdminTokenInput, UpdateOrganizationInput } from "../../schemas/admin";
import { parseInput } from "../../schemas/validate";
import { confirmations } from "./pages/confirm";
import { AdminTokenMinted, OrganizationSettings, Organizations } from "./pages/organizations";
import {
  actor,
  confirmPage,
  csrf,
  form,
  limitsFrom,
  listPage,
  type ManagerEnv,
  notices,
  operatorOnly,
  optional,
  orgCrumbs,
  orgFor,
  PAGE_SIZE,
  page,
  paged,
} from "./shared";

export function organizationRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Organizations (operator only).
  app.get("/", async (c) => {
    operatorOnly(c);
    const orgs = await listOrganizations(c.get("deps"), listPage(c));
    return page(
      c,
      "Organizations",
      [{ label: "Organizations" }],
      paged(c, "Organizations", <Organizations orgs={orgs.items} csrf={csrf(c)} />, orgs.next_cursor),
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/", async (c) => {
    operatorOnly(c);
    const org = await createOrganization(c.get("deps"), parseInput(CreateOrganizationInput, { name: (await form(c)).name }), actor(c));
    return c.redirect(`/manager/organizations/${org.id}?notice=created`, 303);
  });

  // The shared quota (operators only): empty fields remove a limit.
  app.post("/:org/quota", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const limits = limitsFrom(await form(c), ["per_second", "per_day", "per_month"], true);
    const input = parseInput(UpdateOrganizationInput, { limits }, "form");
    await updateOrganizationQuota(c.get("deps"), org.id, input.limits, actor(c));
    return c.redirect(`/manager/organizations/${org.id}?notice=quota-saved`, 303);
  });

  // Organization Settings.
  app.get("/:org", async (c) => {
    const org = await orgFor(c);
    const deps = c.get("deps");
    const operator = c.get("session").role === "operator";
    const tokens = (await listOrgAdminTokens(deps, org.id, PAGE_SIZE)).items.map((t) => adminTokenView(t, deps.now()));
    return page(
      c,
      "Organization Settings",
      orgCrumbs(c, org),
      <OrganizationSettings org={org} operator={operator} tokens={tokens} limits={org.limits ?? null} csrf={csrf(c)} />,
      c.req.query("notice") === "created" ? "Organization created." : notices[c.req.query("notice") ?? ""],
    );
  });

  app.get("/:org/delete", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    return confirmPage(c, orgCrumbs(c, org, true), confirmations.deleteOrganization(org), {
      action: `/manager/organizations/${org.id}/delete`,
      cancel: `/manager/organizations/${org.id}`,
    });
  });

  app.post("/:org/delete", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    // The name typed must be the organization's: a slip of the mouse deletes nothing.
    if (String((await form(c)).confirm ?? "").trim() !== org.name) {
      const retry = { ...confirmations.deleteOrganization(org), error: `The name typed is not ${org.name}; nothing was deleted.` };
      c.status(400);
      return confirmPage(c, orgCrumbs(c, org, true), retry, {
        action: `/manager/organizations/${org.id}/delete`,
        cancel: `/manager/organizations/${org.id}`,
      });
    }
    await deleteOrganization(c.get("deps"), org.id, actor(c));
    return c.redirect("/manager/organizations?notice=org-deleted", 303);
  });

  app.post("/:org/admin-tokens", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const input = parseInput(MintOrgAdminTokenInput, optional(await form(c), ["name"]));
    const { token } = await mintOrgAdminToken(c.get("deps"), org.id, input, actor(c));
    return page(
      c,
      "Administrator token",
      [...orgCrumbs(c, org, true), { label: "Administrator token" }],
      <AdminTokenMinted org={org} token={token} />,
    );
  });

  app.get("/:org/admin-tokens/:token/revoke", async (c) => {
    const org = await orgFor(c);
    const token = await getOrgAdminToken(c.get("deps"), org.id, c.req.param("token"));
    return confirmPage(c, orgCrumbs(c, org, true), confirmations.revokeAdminToken(token, org), {
      action: `/manager/organizations/${org.id}/admin-tokens/${token.id}/revoke`,
      cancel: `/manager/organizations/${org.id}`,
    });
  });

  app.post("/:org/admin-tokens/:token/revoke", async (c) => {
    const org = await orgFor(c);
    await revokeOrgAdminToken(c.get("deps"), org.id, c.req.param("token"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}?notice=token-revoked`, 303);
  });

  return app;
}
