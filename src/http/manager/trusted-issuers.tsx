/**
 * The manager's Trusted issuers (issue 44): the list, the form that trusts one (keyway fetches its
 * key set at once, so an issuer whose keys cannot be fetched is refused beside its field), and
 * removing one behind a confirmation (it revokes the federated credentials that name it). Mounted
 * under /manager/organizations by routes.tsx; the markup is in pages/trusted-issuers.tsx. Actions
 * call the domain functions of `/admin/v1/organizations/{org}/trusted-issuers`.
 */
import { Hono } from "hono";
import { ApiError } from "../../errors";
import {
  createTrustedIssuer,
  getTrustedIssuer,
  listTrustedIssuers,
  refreshTrustedIssuer,
  removeTrustedIssuer,
} from "../../identity/trusted-issuers";
import { CreateTrustedIssuerInput } from "../../schemas/admin";
import { checkedInput, type FormErrors, formErrorsOf, labelled, text, topLevelField } from "./form-check";
import { confirmations } from "./pages/confirm";
import { EMPTY_ISSUER_FORM, ISSUER_FIELD_LABELS, type IssuerField, type IssuerFormValues, TrustedIssuers } from "./pages/trusted-issuers";
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
  optional,
  orgCrumbs,
  orgFor,
  page,
  pagerOf,
} from "./shared";

const FIELDS = Object.keys(ISSUER_FIELD_LABELS) as IssuerField[];

export function trustedIssuerRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();

  app.get("/:org/trusted-issuers", async (c) => issuersPage(c, await orgFor(c), EMPTY_ISSUER_FORM));

  // A refusal (the schema's, or the issuer's metadata or keys that could not be fetched) answers
  // with the list and the form again: the values as typed, each field's message beside it.
  app.post("/:org/trusted-issuers", async (c) => {
    const org = await orgFor(c);
    const fields = await form(c);
    const values = Object.fromEntries(FIELDS.map((f) => [f, text(fields, f)])) as IssuerFormValues;
    try {
      const input = checkedInput(CreateTrustedIssuerInput, {
        ...optional(fields, ["issuer", "jwks_uri", "name", "assertion_reuse"]),
        ...limitsFrom(fields, ["max_assertion_lifetime_seconds"], false),
      });
      await createTrustedIssuer(c.get("deps"), org.id, input, actor(c));
    } catch (err) {
      const errors = formErrorsOf(err, topLevelField(ISSUER_FIELD_LABELS), labelled(ISSUER_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return issuersPage(c, org, values, errors);
    }
    return c.redirect(`/manager/organizations/${org.id}/trusted-issuers?notice=issuer-added`, 303);
  });

  // The issuer's key set fetched now (after it withdrew a key): a refusal (unreachable) is a notice, the held set unchanged.
  app.post("/:org/trusted-issuers/:issuer/refresh", async (c) => {
    const org = await orgFor(c);
    let notice = "issuer-keys-refreshed";
    try {
      await refreshTrustedIssuer(c.get("deps"), org.id, c.req.param("issuer"), actor(c));
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "invalid_request") throw err;
      notice = "issuer-keys-unreachable";
    }
    return c.redirect(`/manager/organizations/${org.id}/trusted-issuers?notice=${notice}`, 303);
  });

  app.get("/:org/trusted-issuers/:issuer/remove", async (c) => {
    const org = await orgFor(c);
    const issuer = await getTrustedIssuer(c.get("deps"), org.id, c.req.param("issuer"));
    const base = `/manager/organizations/${org.id}/trusted-issuers`;
    return confirmPage(c, crumbs(c, org, true), confirmations.removeTrustedIssuer(issuer), {
      action: `${base}/${issuer.id}/remove`,
      cancel: base,
    });
  });

  app.post("/:org/trusted-issuers/:issuer/remove", async (c) => {
    const org = await orgFor(c);
    await removeTrustedIssuer(c.get("deps"), org.id, c.req.param("issuer"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}/trusted-issuers?notice=issuer-removed`, 303);
  });

  return app;
}

type OrgRef = { id: string; name: string };

const crumbs = (c: C, org: OrgRef, link = false) => [
  ...orgCrumbs(c, org, true),
  { label: "Trusted issuers", ...(link ? { href: `/manager/organizations/${org.id}/trusted-issuers` } : {}) },
];

/** The trusted issuers (this request's page of them) and the form that adds one. */
async function issuersPage(c: C, org: OrgRef, values: IssuerFormValues, errors?: FormErrors<IssuerField>) {
  const issuers = await listTrustedIssuers(c.get("deps"), org.id, listPage(c));
  return page(
    c,
    "Trusted issuers",
    crumbs(c, org),
    <TrustedIssuers
      org={org}
      issuers={issuers.items}
      csrf={csrf(c)}
      pager={pagerOf(c, issuers.next_cursor)}
      values={values}
      errors={errors}
    />,
    errors ? undefined : notices[c.req.query("notice") ?? ""],
  );
}
