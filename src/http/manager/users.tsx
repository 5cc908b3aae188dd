/**
 * The manager's Users of an organization and their client credentials: add and remove users;
 * create, edit (key set, scopes, DPoP) and revoke credentials. Mounted under
 * /manager/organizations by routes.tsx, behind its session and CSRF checks; the markup is in
 * pages/users.tsx.
 */
import { Hono } from "hono";
import { invalidInput } from "../../errors";
import {
  clientCredentialView,
  createClientCredential,
  getClientCredential,
  listClientCredentials,
  revokeClientCredential,
  updateClientCredential,
} from "../../identity/credentials";
import { createUser, getUser, listUsers, removeUser } from "../../identity/users";
import { CreateClientCredentialInput, CreateUserInput, UpdateClientCredentialInput } from "../../schemas/admin";
import { ALL_SCOPES } from "../../schemas/scopes";
import { parseInput } from "../../schemas/validate";
import { confirmations } from "./pages/confirm";
import { ClientCredentialCreated, ClientCredentialEdit, ClientCredentials, Users } from "./pages/users";
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
  paged,
} from "./shared";
import type { Crumb } from "./views";

export function userRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Users.
  app.get("/:org/users", async (c) => {
    const org = await orgFor(c);
    const users = await listUsers(c.get("deps"), org.id, listPage(c));
    return page(
      c,
      "Users",
      [...orgCrumbs(c, org, true), { label: "Users" }],
      paged(c, "Users", <Users org={org} users={users.items} csrf={csrf(c)} />, users.next_cursor),
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/:org/users", async (c) => {
    const org = await orgFor(c);
    const input = parseInput(CreateUserInput, optional(await form(c), ["name", "email"]));
    await createUser(c.get("deps"), org.id, input, actor(c));
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
    const creds = await listClientCredentials(c.get("deps"), org.id, user.id, PAGE_SIZE);
    return page(
      c,
      "Client credentials",
      credentialCrumbs(c, org, user),
      <ClientCredentials
        base={credentialsPath(org.id, user.id)}
        user={user}
        credentials={creds.items.map(clientCredentialView)}
        csrf={csrf(c)}
      />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    const fields = await form(c);
    const jwt = fields.token_endpoint_auth_method === "private_key_jwt";
    const input = parseInput(CreateClientCredentialInput, {
      ...optional(fields, ["name"]),
      ...(jwt ? { token_endpoint_auth_method: "private_key_jwt", jwks: jwksFrom(fields) } : {}),
      ...policyFrom(fields),
    });
    const { record, secret } = await createClientCredential(c.get("deps"), org.id, user.id, input, actor(c));
    return page(
      c,
      "New client credentials",
      [...credentialCrumbs(c, org, user, true), { label: "New" }],
      <ClientCredentialCreated base={credentialsPath(org.id, user.id)} clientId={record.client_id} secret={secret} />,
    );
  });

  app.get("/:org/users/:user/client-credentials/:client/edit", async (c) => {
    const { org, user } = await userFor(c);
    const cred = clientCredentialView(await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client")));
    const base = credentialsPath(org.id, user.id);
    return page(
      c,
      `Client credentials: ${cred.name ?? cred.client_id}`,
      [...credentialCrumbs(c, org, user, true), { label: cred.name ?? cred.client_id }],
      <ClientCredentialEdit action={`${base}/${cred.client_id}`} cancel={base} credential={cred} csrf={csrf(c)} />,
    );
  });

  app.post("/:org/users/:user/client-credentials/:client", async (c) => {
    const { org, user } = await userFor(c);
    const cred = await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    const fields = await form(c);
    const name = typeof fields.name === "string" && fields.name.trim() !== "" ? fields.name : null;
    const input = parseInput(UpdateClientCredentialInput, {
      name,
      ...(cred.auth_method === "private_key_jwt" ? { jwks: jwksFrom(fields) } : {}),
      ...policyFrom(fields, true),
    });
    await updateClientCredential(c.get("deps"), org.id, user.id, cred.client_id, input, actor(c));
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

const credentialsPath = (orgId: string, userId: string) => `/manager/organizations/${orgId}/users/${userId}/client-credentials`;

/** The JWK Set textarea, parsed as JSON (its shape is then checked by the input schema). */
function jwksFrom(fields: Record<string, unknown>): unknown {
  const text = typeof fields.jwks === "string" ? fields.jwks.trim() : "";
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidInput({ label: "form", issues: [{ path: ["jwks"], text: " is not valid JSON" }] });
  }
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
