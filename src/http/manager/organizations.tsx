/**
 * The manager's Organizations (operators only: the list and creating one) and Organization
 * Settings: administrator tokens (mint, revoke) and deleting an organization behind a typed
 * confirmation. Mounted under /manager/organizations by routes.tsx, behind its session and CSRF
 * checks; the markup is in pages/organizations.tsx.
 */
import { Hono } from "hono";
import { adminTokenView, getOrgAdminToken, listOrgAdminTokens, mintOrgAdminToken, revokeOrgAdminToken } from "../../identity/admin-tokens";
import { createOrganization, deleteOrganization, listOrganizations, updateOrganizationQuota } from "../../identity/organizations";
import { organizationOverview } from "../../identity/overview";
import { CreateOrganizationInput, MintOrgAdminTokenInput, UpdateOrganizationInput } from "../../schemas/admin";
import { checkedInput, formErrorsOf, labelled, text, topLevelField } from "./form-check";
import { confirmations } from "./pages/confirm";
import {
  AdminTokenMinted,
  type NameForm,
  OrganizationSettings,
  Organizations,
  QUOTA_FIELD_LABELS,
  type QuotaField,
  type QuotaForm,
} from "./pages/organizations";
import { Overview } from "./pages/overview";
import {
  actor,
  type C,
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
  pagerOf,
} from "./shared";

const NAME_LABEL = { name: "Name" } as const;
const TOKEN_NAME_LABEL = { name: "Token name" } as const;

/** The form field a quota issue names: `limits.<field>`. */
function quotaField(path: string[]): QuotaField | null {
  const name = path[0] === "limits" ? path[1] : undefined;
  return name !== undefined && Object.hasOwn(QUOTA_FIELD_LABELS, name) ? (name as QuotaField) : null;
}

/** The organizations (this request's page of them) and the form that creates one. */
async function organizationsPage(c: C, create: NameForm) {
  const orgs = await listOrganizations(c.get("deps"), listPage(c));
  return page(
    c,
    "Organizations",
    [{ label: "Organizations" }],
    <Organizations orgs={orgs.items} csrf={csrf(c)} pager={pagerOf(c, orgs.next_cursor)} create={create} />,
    create.errors ? undefined : notices[c.req.query("notice") ?? ""],
  );
}

/** Organization Settings; after a refused quota or mint form, with that form as typed and its messages. */
async function settingsPage(c: C, org: Awaited<ReturnType<typeof orgFor>>, refused: { quota?: QuotaForm; mint?: NameForm } = {}) {
  const deps = c.get("deps");
  const operator = c.get("session").role === "operator";
  const tokens = (await listOrgAdminTokens(deps, org.id, PAGE_SIZE)).items.map((t) => adminTokenView(t, deps.now()));
  const failed = refused.quota !== undefined || refused.mint !== undefined;
  return page(
    c,
    "Organization Settings",
    orgCrumbs(c, org),
    <OrganizationSettings
      org={org}
      operator={operator}
      tokens={tokens}
      limits={org.limits ?? null}
      csrf={csrf(c)}
      quota={refused.quota}
      mint={refused.mint}
    />,
    failed ? undefined : c.req.query("notice") === "created" ? "Organization created." : notices[c.req.query("notice") ?? ""],
  );
}

export function organizationRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Organizations (operator only).
  app.get("/", async (c) => {
    operatorOnly(c);
    return organizationsPage(c, { value: "" });
  });

  // A refusal answers with the list and the form again, the name as typed and its message beside it.
  app.post("/", async (c) => {
    operatorOnly(c);
    const name = text(await form(c), "name");
    try {
      const org = await createOrganization(c.get("deps"), checkedInput(CreateOrganizationInput, { name }), actor(c));
      return c.redirect(`/manager/organizations/${org.id}?notice=created`, 303);
    } catch (err) {
      const errors = formErrorsOf(err, topLevelField(NAME_LABEL), labelled(NAME_LABEL));
      if (errors === null) throw err;
      c.status(errors.status);
      return organizationsPage(c, { value: name, errors });
    }
  });

  // The shared quota (operators only): empty fields remove a limit. A refusal answers with the
  // Settings page, the quota form as typed and each field's message beside it.
  app.post("/:org/quota", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const fields = await form(c);
    const values = { per_second: text(fields, "per_second"), per_day: text(fields, "per_day"), per_month: text(fields, "per_month") };
    try {
      const limits = limitsFrom(fields, ["per_second", "per_day", "per_month"], true);
      const input = checkedInput(UpdateOrganizationInput, { limits });
      await updateOrganizationQuota(c.get("deps"), org.id, input.limits, actor(c));
    } catch (err) {
      const errors = formErrorsOf(err, quotaField, labelled(QUOTA_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return settingsPage(c, org, { quota: { values, errors } });
    }
    return c.redirect(`/manager/organizations/${org.id}?notice=quota-saved`, 303);
  });

  // Organization Settings.
  app.get("/:org", async (c) => settingsPage(c, await orgFor(c)));

  // The organization's home: its last 24 hours, what needs a person, and its latest changes.
  app.get("/:org/overview", async (c) => {
    const org = await orgFor(c);
    const overview = await organizationOverview(c.get("deps"), org.id, c.get("session").role === "operator");
    return page(
      c,
      "Overview",
      [...orgCrumbs(c, org, true), { label: "Overview" }],
      <Overview base={`/manager/organizations/${org.id}`} overview={overview} />,
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
    const fields = await form(c);
    try {
      const input = checkedInput(MintOrgAdminTokenInput, optional(fields, ["name"]));
      const { token } = await mintOrgAdminToken(c.get("deps"), org.id, input, actor(c));
      return page(
        c,
        "Administrator token",
        [...orgCrumbs(c, org, true), { label: "Administrator token" }],
        <AdminTokenMinted org={org} token={token} />,
      );
    } catch (err) {
      const errors = formErrorsOf(err, topLevelField(TOKEN_NAME_LABEL), labelled(TOKEN_NAME_LABEL));
      if (errors === null) throw err;
      c.status(errors.status);
      return settingsPage(c, org, { mint: { value: text(fields, "name"), errors } });
    }
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
