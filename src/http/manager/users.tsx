/**
 * The manager's Users of an organization and their client credentials: add and remove users;
 * create (a secret, private_key_jwt with keys or a key set URL, federated_jwt naming one of the
 * organization's trusted issuers), edit (key set or its URL, scopes, DPoP, access tokens) and
 * revoke credentials. Mounted under
 * /manager/organizations by routes.tsx, behind its session and CSRF checks; the markup is in
 * pages/users.tsx.
 */
import { Hono } from "hono";
import type { InputIssue } from "../../errors";
import {
  clientCredentialView,
  createClientCredential,
  getClientCredential,
  listClientCredentials,
  revokeClientCredential,
  updateClientCredential,
} from "../../identity/credentials";
import { listTrustedIssuers } from "../../identity/trusted-issuers";
import { createUser, getUser, listUsers, removeUser } from "../../identity/users";
import { type ClientCredentialView, CreateClientCredentialInput, CreateUserInput, UpdateClientCredentialInput } from "../../schemas/admin";
import type { UserRecord } from "../../schemas/records";
import { ALL_SCOPES } from "../../schemas/scopes";
import { checkedInput, type FormErrors, formErrorsOf, jsonField, labelled, text, topLevelField } from "./form-check";
import { confirmations } from "./pages/confirm";
import {
  ClientCredentialCreated,
  ClientCredentialEdit,
  ClientCredentials,
  CREDENTIAL_FIELD_LABELS,
  type CredentialField,
  type CredentialFormValues,
  credentialFormValues,
  EMPTY_CREDENTIAL_FORM,
  EMPTY_USER_FORM,
  methodOf,
  USER_FIELD_LABELS,
  type UserField,
  type UserFormValues,
  Users,
} from "./pages/users";
import {
  actor,
  type C,
  confirmPage,
  csrf,
  form,
  listPage,
  type ManagerEnv,
  notices,
  optional,
  orgCrumbs,
  orgFor,
  PAGE_SIZE,
  page,
  pagerOf,
} from "./shared";
import type { Crumb } from "./views";

export function userRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Users.
  app.get("/:org/users", async (c) => {
    const org = await orgFor(c);
    return usersPage(c, org, EMPTY_USER_FORM);
  });

  // A refusal answers with the list and the form again: the values as typed, each field's message beside it.
  app.post("/:org/users", async (c) => {
    const org = await orgFor(c);
    const fields = await form(c);
    const values = { name: text(fields, "name"), email: text(fields, "email") };
    try {
      const input = checkedInput(CreateUserInput, optional(fields, ["name", "email"]));
      await createUser(c.get("deps"), org.id, input, actor(c));
    } catch (err) {
      const errors = formErrorsOf(err, topLevelField(USER_FIELD_LABELS), labelled(USER_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return usersPage(c, org, values, errors);
    }
    return c.redirect(`/manager/organizations/${org.id}/users?notice=user-added`, 303);
  });

  app.get("/:org/users/:user/remove", async (c) => {
    const { org, user } = await userFor(c);
    return confirmPage(c, orgCrumbs(c, org, true), confirmations.removeUser(user), {
      action: `/manager/organizations/${org.id}/users/${user.id}/remove`,
      cancel: `/manager/organizations/${org.id}/users`,
    });
  });

  app.post("/:org/users/:user/remove", async (c) => {
    const org = await orgFor(c);
    await removeUser(c.get("deps"), org.id, c.req.param("user"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}/users?notice=user-removed`, 303);
  });

  // Client credentials of a user.
  app.get("/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    return credentialsPage(c, org, user, EMPTY_CREDENTIAL_FORM);
  });

  // A refusal answers with the list and the form again: the values as typed (the key set's text
  // too), every field's message at once (the key set's JSON and the schema's checks together).
  app.post("/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    const fields = await form(c);
    const values = postedCredential(fields);
    try {
      const jwt = values.method === "private_key_jwt";
      const federated = values.method === "federated_jwt";
      // The form shows only the chosen method's fields (ShownFor), so what the other methods'
      // fields still hold (typed before the choice changed) is not the person's answer: only the
      // chosen method's fields are sent.
      const jwks = jwt ? jsonField(values.jwks, ["jwks"]) : { value: undefined, issues: [] };
      const input = checkedInput(
        CreateClientCredentialInput,
        {
          ...optional(fields, jwt ? ["name", "jwks_uri"] : ["name"]),
          ...(values.method !== "client_secret_basic" ? { token_endpoint_auth_method: values.method } : {}),
          ...(jwks.value !== undefined || (jwt && jwks.issues.length === 0 && values.jwks_uri === "") ? { jwks: jwks.value } : {}),
          ...(federated ? { federated: { issuer: values.federated_issuer, subject: values.federated_subject } } : {}),
          access_token_strategy: values.access_token_strategy,
          ...policyFrom(fields),
        },
        jwks.issues,
      );
      const { record, secret } = await createClientCredential(c.get("deps"), org.id, user.id, input, actor(c));
      return page(
        c,
        "New client credentials",
        [...credentialCrumbs(c, org, user, true), { label: "New" }],
        <ClientCredentialCreated base={credentialsPath(org.id, user.id)} clientId={record.client_id} secret={secret} />,
      );
    } catch (err) {
      const errors = formErrorsOf(err, credentialField, labelled(CREDENTIAL_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return credentialsPage(c, org, user, values, errors);
    }
  });

  app.get("/:org/users/:user/client-credentials/:client/edit", async (c) => {
    const { org, user } = await userFor(c);
    const cred = clientCredentialView(await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client")));
    return editCredentialPage(c, org, user, cred, credentialFormValues(cred));
  });

  app.post("/:org/users/:user/client-credentials/:client", async (c) => {
    const { org, user } = await userFor(c);
    const cred = await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    const fields = await form(c);
    const view = clientCredentialView(cred);
    const values: CredentialFormValues = {
      ...postedCredential(fields),
      method: methodOf(view.token_endpoint_auth_method),
      federated_issuer: view.federated?.issuer ?? "",
      federated_subject: view.federated?.subject ?? "",
    };
    try {
      const jwt = cred.auth_method === "private_key_jwt";
      const jwks = jwt ? jsonField(values.jwks, ["jwks"]) : { value: undefined, issues: [] };
      // A new key set URL is sent (and fetched) only when it changed; keys typed with it are the schema's to refuse.
      const uriChanged = jwt && values.jwks_uri !== "" && values.jwks_uri !== (cred.jwks_uri ?? "");
      const issues: InputIssue[] = [...jwks.issues];
      if (jwt && values.jwks === "" && values.jwks_uri === "") issues.push({ path: ["jwks"], text: ": give the keys or a key set URL" });
      const input = checkedInput(
        UpdateClientCredentialInput,
        {
          name: values.name === "" ? null : values.name,
          ...(jwks.value !== undefined && (!uriChanged || values.jwks !== credentialFormValues(view).jwks) ? { jwks: jwks.value } : {}),
          ...(uriChanged ? { jwks_uri: values.jwks_uri } : {}),
          ...(values.access_token_strategy !== cred.access_token_strategy ? { access_token_strategy: values.access_token_strategy } : {}),
          ...policyFrom(fields, true),
        },
        issues,
      );
      await updateClientCredential(c.get("deps"), org.id, user.id, cred.client_id, input, actor(c));
    } catch (err) {
      const errors = formErrorsOf(err, credentialField, labelled(CREDENTIAL_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return editCredentialPage(c, org, user, view, values, errors);
    }
    return c.redirect(`${credentialsPath(org.id, user.id)}?notice=credential-saved`, 303);
  });

  app.get("/:org/users/:user/client-credentials/:client/revoke", async (c) => {
    const { org, user } = await userFor(c);
    const cred = await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    const base = credentialsPath(org.id, user.id);
    return confirmPage(c, credentialCrumbs(c, org, user, true), confirmations.revokeClientCredential(cred, user), {
      action: `${base}/${cred.client_id}/revoke`,
      cancel: base,
    });
  });

  app.post("/:org/users/:user/client-credentials/:client/revoke", async (c) => {
    const { org, user } = await userFor(c);
    await revokeClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"), actor(c));
    return c.redirect(`${credentialsPath(org.id, user.id)}?notice=credential-revoked`, 303);
  });

  return app;
}

/** A user's client credentials and the form that creates one. */
async function credentialsPage(
  c: C,
  org: OrgRef,
  user: UserRecord,
  values: CredentialFormValues,
  errors?: FormErrors<CredentialField>,
): Promise<Response> {
  const [creds, issuers] = await Promise.all([
    listClientCredentials(c.get("deps"), org.id, user.id, PAGE_SIZE),
    listTrustedIssuers(c.get("deps"), org.id, PAGE_SIZE),
  ]);
  return page(
    c,
    "Client credentials",
    credentialCrumbs(c, org, user),
    <ClientCredentials
      base={credentialsPath(org.id, user.id)}
      issuers={issuers.items}
      issuersPath={`/manager/organizations/${org.id}/trusted-issuers`}
      user={user}
      credentials={creds.items.map(clientCredentialView)}
      csrf={csrf(c)}
      values={values}
      errors={errors}
    />,
    errors ? undefined : notices[c.req.query("notice") ?? ""],
  );
}

/** A credential's edit form. */
function editCredentialPage(
  c: C,
  org: OrgRef,
  user: UserRecord,
  cred: ClientCredentialView,
  values: CredentialFormValues,
  errors?: FormErrors<CredentialField>,
) {
  const base = credentialsPath(org.id, user.id);
  return page(
    c,
    `Client credentials: ${cred.name ?? cred.client_id}`,
    [...credentialCrumbs(c, org, user, true), { label: cred.name ?? cred.client_id }],
    <ClientCredentialEdit
      action={`${base}/${cred.client_id}`}
      cancel={base}
      credential={cred}
      csrf={csrf(c)}
      values={values}
      errors={errors}
    />,
  );
}

/** The users (this request's page of them) and the form that adds one. */
async function usersPage(c: C, org: OrgRef, values: UserFormValues, errors?: FormErrors<UserField>) {
  const users = await listUsers(c.get("deps"), org.id, listPage(c));
  return page(
    c,
    "Users",
    [...orgCrumbs(c, org, true), { label: "Users" }],
    <Users org={org} users={users.items} csrf={csrf(c)} pager={pagerOf(c, users.next_cursor)} values={values} errors={errors} />,
    errors ? undefined : notices[c.req.query("notice") ?? ""],
  );
}

type OrgRef = { id: string; name: string };

const credentialsPath = (orgId: string, userId: string) => `/manager/organizations/${orgId}/users/${userId}/client-credentials`;

/** The form field an issue names: `federated.issuer` and `federated.subject` are fields of their own. */
function credentialField(path: string[]): CredentialField | null {
  if (path[0] === "federated") return path[1] === "subject" ? "federated_subject" : "federated_issuer";
  return topLevelField(CREDENTIAL_FIELD_LABELS)(path);
}

/** The credential form as posted: the name trimmed, the key set's text as typed, the boxes ticked. */
function postedCredential(fields: Record<string, unknown>): CredentialFormValues {
  const policy = policyFrom(fields);
  return {
    name: text(fields, "name"),
    method: methodOf(text(fields, "token_endpoint_auth_method")),
    jwks: text(fields, "jwks"),
    jwks_uri: text(fields, "jwks_uri"),
    federated_issuer: text(fields, "federated_issuer"),
    federated_subject: text(fields, "federated_subject"),
    access_token_strategy: fields.access_token_strategy === "jwt" ? "jwt" : "opaque",
    scopes: policy.scopes ?? [...ALL_SCOPES],
    dpop: policy.dpop_bound_access_tokens,
  };
}

/**
 * The scope checkboxes and the DPoP checkbox; every scope checked means no restriction. A post
 * without the scopes fieldset (`scopes-shown`) leaves the scopes as they are (all, on create).
 */
function policyFrom(fields: Record<string, unknown>, update = false): { scopes?: string[] | null; dpop_bound_access_tokens: boolean } {
  const scopes = ALL_SCOPES.filter((s) => fields[`scope-${s}`] === "on");
  const all = fields["scopes-shown"] !== "1" || scopes.length === ALL_SCOPES.length;
  return { ...(all ? (update ? { scopes: null } : {}) : { scopes }), dpop_bound_access_tokens: fields.dpop === "on" };
}

async function userFor(c: C) {
  const org = await orgFor(c);
  return { org, user: await getUser(c.get("deps"), org.id, c.req.param("user") ?? "") };
}

function credentialCrumbs(c: C, org: { id: string; name: string }, user: { id: string; name: string }, link = false): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Users", href: `/manager/organizations/${org.id}/users` },
    { label: `${user.name}: Client credentials`, ...(link ? { href: credentialsPath(org.id, user.id) } : {}) },
  ];
}
