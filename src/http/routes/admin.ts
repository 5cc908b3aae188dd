/**
 * The operator API (/admin/v1, product brief): organizations, users, API keys and client
 * credentials. Secrets appear only in the response that creates them; lists never carry them.
 * Bodies are JSON; an empty body counts as `{}`.
 */
import { Hono } from "hono";
import { createApiKey, revokeApiKey, updateApiKey } from "../../auth/api-keys";
import { removeUser } from "../../auth/users";
import { keyUsage, usageView } from "../../ratelimit/service";
import {
  CreateApiKeyInput,
  CreateClientCredentialInput,
  CreateOrganizationInput,
  CreateUserInput,
  MintOrgAdminTokenInput,
  UpdateApiKeyInput,
} from "../../schemas/admin";
import { apiKeyView, getApiKey, listApiKeys } from "../../stores/api-keys";
import {
  clientCredentialView,
  createClientCredential,
  getClientCredential,
  listClientCredentials,
  revokeClientCredential,
} from "../../stores/client-credentials";
import { mintOrgAdminToken } from "../../stores/org-admin-tokens";
import { createOrganization, getOrganization, listOrganizations } from "../../stores/organizations";
import { createUser, getUser, listUsers } from "../../stores/users";
import type { AppEnv } from "../context";
import { created, respond, respondPage } from "../envelope";
import { jsonBody, listQuery, param } from "../input";
import { methods } from "../route";

export const admin = new Hono<AppEnv>();

const ORGS = "/admin/v1/organizations";
const ORG = `${ORGS}/:org`;
const KEYS = `${ORG}/api-keys`;
const USERS = `${ORG}/users`;
const CREDENTIALS = `${USERS}/:user/client-credentials`;

methods(admin, ORGS, {
  POST: async (c) => {
    const org = await createOrganization(c.get("deps"), await jsonBody(c, CreateOrganizationInput));
    return created(c, org, `${ORGS}/${org.id}`);
  },
  GET: async (c) => respondPage(c, await listOrganizations(c.get("deps"), listQuery(c))),
});

methods(admin, ORG, {
  GET: async (c) => respond(c, await getOrganization(c.get("deps"), param(c, "org"))),
});

methods(admin, KEYS, {
  POST: async (c) => {
    const deps = c.get("deps");
    const orgId = param(c, "org");
    const { record, secret } = await createApiKey(deps, orgId, await jsonBody(c, CreateApiKeyInput));
    const view = { ...apiKeyView(record, deps.config.defaultLimits), api_key: secret };
    return created(c, view, `${ORGS}/${orgId}/api-keys/${record.id}`);
  },
  GET: async (c) => {
    const deps = c.get("deps");
    const page = await listApiKeys(deps, param(c, "org"), listQuery(c));
    return respondPage(c, { ...page, items: page.items.map((k) => apiKeyView(k, deps.config.defaultLimits)) });
  },
});

methods(admin, `${KEYS}/:key`, {
  GET: async (c) => {
    const deps = c.get("deps");
    const record = await getApiKey(deps, param(c, "org"), param(c, "key"));
    // The limiter's view of the limits is authoritative; the record's is for display.
    const usage = usageView(await keyUsage(deps, record.id));
    const view = apiKeyView(record, deps.config.defaultLimits);
    return respond(c, { ...view, limits: { per_second: usage.second.limit, per_day: usage.day.limit }, usage });
  },
  PATCH: async (c) => {
    const deps = c.get("deps");
    const input = await jsonBody(c, UpdateApiKeyInput);
    const record = await updateApiKey(deps, param(c, "org"), param(c, "key"), input);
    return respond(c, apiKeyView(record, deps.config.defaultLimits));
  },
  DELETE: async (c) => {
    const deps = c.get("deps");
    const record = await revokeApiKey(deps, param(c, "org"), param(c, "key"));
    return respond(c, apiKeyView(record, deps.config.defaultLimits));
  },
});

methods(admin, USERS, {
  POST: async (c) => {
    const orgId = param(c, "org");
    const user = await createUser(c.get("deps"), orgId, await jsonBody(c, CreateUserInput));
    return created(c, user, `${ORGS}/${orgId}/users/${user.id}`);
  },
  GET: async (c) => respondPage(c, await listUsers(c.get("deps"), param(c, "org"), listQuery(c))),
});

methods(admin, `${USERS}/:user`, {
  GET: async (c) => respond(c, await getUser(c.get("deps"), param(c, "org"), param(c, "user"))),
  /** Revokes the user's credentials, then removes the user. */
  DELETE: async (c) => respond(c, await removeUser(c.get("deps"), param(c, "org"), param(c, "user"))),
});

methods(admin, `${ORG}/admin-tokens`, {
  /** A token that signs this organization's administrator into the manager app (shown once). */
  POST: async (c) => {
    const orgId = param(c, "org");
    const { record, token } = await mintOrgAdminToken(c.get("deps"), orgId, await jsonBody(c, MintOrgAdminTokenInput));
    const view = { id: record.id, organization_id: record.organization_id, name: record.name, token, created_at: record.created_at };
    return created(c, view, `${ORGS}/${orgId}/admin-tokens/${record.id}`);
  },
});

methods(admin, CREDENTIALS, {
  POST: async (c) => {
    const [orgId, userId] = [param(c, "org"), param(c, "user")];
    const input = await jsonBody(c, CreateClientCredentialInput);
    const { record, secret } = await createClientCredential(c.get("deps"), orgId, userId, input);
    const view = { ...clientCredentialView(record), client_secret: secret };
    return created(c, view, `${ORGS}/${orgId}/users/${userId}/client-credentials/${record.client_id}`);
  },
  GET: async (c) => {
    const page = await listClientCredentials(c.get("deps"), param(c, "org"), param(c, "user"), listQuery(c));
    return respondPage(c, { ...page, items: page.items.map(clientCredentialView) });
  },
});

methods(admin, `${CREDENTIALS}/:client`, {
  GET: async (c) => {
    const record = await getClientCredential(c.get("deps"), param(c, "org"), param(c, "user"), param(c, "client"));
    return respond(c, clientCredentialView(record));
  },
  DELETE: async (c) => {
    const record = await revokeClientCredential(c.get("deps"), param(c, "org"), param(c, "user"), param(c, "client"));
    return respond(c, clientCredentialView(record));
  },
});
