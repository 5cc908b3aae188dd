/**
 * The operator API (/admin/v1, product brief): organizations, users, API keys, client
 * credentials and organization administrator tokens. Secrets appear only in the response that
 * creates them; lists never carry them. Bodies are JSON; an empty body counts as `{}`.
 */
import type { Context } from "hono";
import { createApiKey, revokeApiKey, updateApiKey } from "../../auth/api-keys";
import { removeUser } from "../../auth/users";
import { keyUsage, usageView } from "../../ratelimit/service";
import {
  ApiKeyView,
  ApiKeyWithUsageView,
  ClientCredentialView,
  CreateApiKeyInput,
  CreateClientCredentialInput,
  CreatedApiKeyView,
  CreatedClientCredentialView,
  CreateOrganizationInput,
  CreateUserInput,
  MintOrgAdminTokenInput,
  OrgAdminTokenView,
  OrganizationView,
  UpdateApiKeyInput,
  UserView,
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
import { API_KEY, CREDENTIAL, ORG, ORG_ID, T0, T1, TOKEN_REQUEST, USER, usageWindow } from "../examples";
import { envelopeRoute, listRoute, param, type Route } from "../route";

const ORGS = "/admin/v1/organizations";
const ORG_PATH = `${ORGS}/{org}`;
const KEYS = `${ORG_PATH}/api-keys`;
const USERS = `${ORG_PATH}/users`;
const CREDENTIALS = `${USERS}/{user}/client-credentials`;

const orgsTag = "Operator: organizations and users";
const keysTag = "Operator: API keys";
const credentialsTag = "Operator: client credentials";

type C = Context<AppEnv>;
const deps = (c: C) => c.get("deps");
const defaults = (c: C) => deps(c).config.defaultLimits;
/** The concrete path of a collection, parameters filled in from this request. */
const under = (c: C, path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => param(c, name));

export const adminRoutes: Route[] = [
  // Organizations and users
  envelopeRoute({
    method: "POST",
    path: ORGS,
    operationId: "createOrganization",
    summary: "Create an organization",
    tag: orgsTag,
    auth: "admin",
    status: 201,
    body: { schema: CreateOrganizationInput, example: { name: "Acme" } },
    response: { schema: OrganizationView, example: ORG },
    handle: (c, input) => createOrganization(deps(c), input),
    location: (org) => `${ORGS}/${org.id}`,
  }),
  listRoute({
    method: "GET",
    path: ORGS,
    operationId: "listOrganizations",
    summary: "List organizations",
    tag: orgsTag,
    auth: "admin",
    response: { schema: OrganizationView, example: [ORG] },
    handle: (c, query) => listOrganizations(deps(c), query),
  }),
  envelopeRoute({
    method: "GET",
    path: ORG_PATH,
    operationId: "getOrganization",
    summary: "Get an organization",
    tag: orgsTag,
    auth: "admin",
    response: { schema: OrganizationView, example: ORG },
    handle: (c) => getOrganization(deps(c), param(c, "org")),
  }),
  envelopeRoute({
    method: "POST",
    path: USERS,
    operationId: "createUser",
    summary: "Create a user in an organization",
    tag: orgsTag,
    auth: "admin",
    status: 201,
    body: { schema: CreateUserInput, example: { name: "Ada", email: "ada@acme.example" } },
    response: { schema: UserView, example: USER },
    handle: (c, input) => createUser(deps(c), param(c, "org"), input),
    location: (user, c) => `${under(c, USERS)}/${user.id}`,
  }),
  listRoute({
    method: "GET",
    path: USERS,
    operationId: "listUsers",
    summary: "List an organization's users",
    tag: orgsTag,
    auth: "admin",
    response: { schema: UserView, example: [USER] },
    handle: (c, query) => listUsers(deps(c), param(c, "org"), query),
  }),
  envelopeRoute({
    method: "GET",
    path: `${USERS}/{user}`,
    operationId: "getUser",
    summary: "Get a user",
    tag: orgsTag,
    auth: "admin",
    response: { schema: UserView, example: USER },
    handle: (c) => getUser(deps(c), param(c, "org"), param(c, "user")),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${USERS}/{user}`,
    operationId: "removeUser",
    summary: "Remove a user, revoking every client credential they own first",
    tag: orgsTag,
    auth: "admin",
    response: { schema: UserView, example: USER },
    handle: (c) => removeUser(deps(c), param(c, "org"), param(c, "user")),
  }),
  envelopeRoute({
    method: "POST",
    path: `${ORG_PATH}/admin-tokens`,
    operationId: "mintOrgAdminToken",
    summary: "Mint a token that signs this organization's administrator into the manager app (shown once)",
    tag: orgsTag,
    auth: "admin",
    status: 201,
    body: { schema: MintOrgAdminTokenInput, example: { name: "Acme admin" } },
    response: {
      schema: OrgAdminTokenView,
      example: {
        id: "oat_3f2a9c1d0e8b7a6f5e4d3c2b1a",
        organization_id: ORG_ID,
        name: "Acme admin",
        token: "kw_live_oa_Yk3vJ0pQz8rT1uWx5bN7mC2dF6gH9jK4lP0sR3tV8wZ",
        created_at: T0,
      },
    },
    handle: async (c, input) => {
      const { record, token } = await mintOrgAdminToken(deps(c), param(c, "org"), input);
      return { ...record, token };
    },
    location: (minted, c) => `${under(c, ORG_PATH)}/admin-tokens/${minted.id}`,
  }),

  // API keys
  envelopeRoute({
    method: "POST",
    path: KEYS,
    operationId: "createApiKey",
    summary: "Issue an API key",
    description: "Limits default to the service's vars; `api_key` is shown only here.",
    tag: keysTag,
    auth: "admin",
    status: 201,
    body: { schema: CreateApiKeyInput, example: { name: "laptop" }, optional: true },
    response: { schema: CreatedApiKeyView, example: { ...API_KEY, api_key: "kw_live_ak_pZkKcQUSu60Tweq49nkDp36iTCUBlS7tiNksNt3WQEE" } },
    handle: async (c, input) => {
      const { record, secret } = await createApiKey(deps(c), param(c, "org"), input);
      return { ...apiKeyView(record, defaults(c)), api_key: secret };
    },
    location: (key, c) => `${under(c, KEYS)}/${key.id}`,
  }),
  listRoute({
    method: "GET",
    path: KEYS,
    operationId: "listApiKeys",
    summary: "List an organization's API keys",
    tag: keysTag,
    auth: "admin",
    response: { schema: ApiKeyView, example: [API_KEY] },
    handle: async (c, query) => {
      const page = await listApiKeys(deps(c), param(c, "org"), query);
      return { ...page, items: page.items.map((k) => apiKeyView(k, defaults(c))) };
    },
  }),
  envelopeRoute({
    method: "GET",
    path: `${KEYS}/{key}`,
    operationId: "getApiKey",
    summary: "Get an API key with its current rate-limit usage",
    tag: keysTag,
    auth: "admin",
    response: {
      schema: ApiKeyWithUsageView,
      example: {
        ...API_KEY,
        usage: { second: usageWindow(1, 0, "2026-06-01T12:00:01.000Z"), day: usageWindow(1000, 3, "2026-06-02T00:00:00.000Z") },
      },
    },
    handle: async (c) => {
      const record = await getApiKey(deps(c), param(c, "org"), param(c, "key"));
      // The limiter's view of the limits is authoritative; the record's is for display.
      const usage = usageView(await keyUsage(deps(c), record.id));
      return { ...apiKeyView(record, defaults(c)), limits: { per_second: usage.second.limit, per_day: usage.day.limit }, usage };
    },
  }),
  envelopeRoute({
    method: "PATCH",
    path: `${KEYS}/{key}`,
    operationId: "updateApiKey",
    summary: "Rename an API key or change its limits",
    description: "A limit set to `null` returns to the default; absent fields are unchanged. Takes effect on the key's next request.",
    tag: keysTag,
    auth: "admin",
    body: { schema: UpdateApiKeyInput, example: { limits: { per_second: 5, per_day: null } } },
    response: {
      schema: ApiKeyView,
      example: { ...API_KEY, limits: { per_second: 5, per_day: 1000 }, limit_overrides: { per_second: true, per_day: false } },
    },
    handle: async (c, input) => apiKeyView(await updateApiKey(deps(c), param(c, "org"), param(c, "key"), input), defaults(c)),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${KEYS}/{key}`,
    operationId: "revokeApiKey",
    summary: "Revoke an API key (idempotent)",
    tag: keysTag,
    auth: "admin",
    response: { schema: ApiKeyView, example: { ...API_KEY, status: "revoked", revoked_at: T1 } },
    handle: async (c) => apiKeyView(await revokeApiKey(deps(c), param(c, "org"), param(c, "key")), defaults(c)),
  }),

  // Client credentials
  envelopeRoute({
    method: "POST",
    path: CREDENTIALS,
    operationId: "createClientCredential",
    summary: "Issue a client credential to a user",
    description: "`client_secret` is shown only here.",
    tag: credentialsTag,
    auth: "admin",
    status: 201,
    body: { schema: CreateClientCredentialInput, example: { name: "laptop" }, optional: true },
    response: { schema: CreatedClientCredentialView, example: { ...CREDENTIAL, client_secret: TOKEN_REQUEST.client_secret } },
    handle: async (c, input) => {
      const { record, secret } = await createClientCredential(deps(c), param(c, "org"), param(c, "user"), input);
      return { ...clientCredentialView(record), client_secret: secret };
    },
    location: (credential, c) => `${under(c, CREDENTIALS)}/${credential.client_id}`,
  }),
  listRoute({
    method: "GET",
    path: CREDENTIALS,
    operationId: "listClientCredentials",
    summary: "List a user's client credentials",
    tag: credentialsTag,
    auth: "admin",
    response: { schema: ClientCredentialView, example: [CREDENTIAL] },
    handle: async (c, query) => {
      const page = await listClientCredentials(deps(c), param(c, "org"), param(c, "user"), query);
      return { ...page, items: page.items.map(clientCredentialView) };
    },
  }),
  envelopeRoute({
    method: "GET",
    path: `${CREDENTIALS}/{client}`,
    operationId: "getClientCredential",
    summary: "Get a client credential",
    tag: credentialsTag,
    auth: "admin",
    response: { schema: ClientCredentialView, example: CREDENTIAL },
    handle: async (c) => clientCredentialView(await getClientCredential(deps(c), param(c, "org"), param(c, "user"), param(c, "client"))),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${CREDENTIALS}/{client}`,
    operationId: "revokeClientCredential",
    summary: "Revoke a client credential (idempotent)",
    description: "Its access tokens stop working at once here and within about 60 s everywhere.",
    tag: credentialsTag,
    auth: "admin",
    response: { schema: ClientCredentialView, example: { ...CREDENTIAL, status: "revoked", revoked_at: T1 } },
    handle: async (c) => clientCredentialView(await revokeClientCredential(deps(c), param(c, "org"), param(c, "user"), param(c, "client"))),
  }),
];
