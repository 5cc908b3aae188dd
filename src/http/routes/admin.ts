/**
 * The operator API (/admin/v1, product brief): organizations, users, API keys, client
 * credentials and organization administrator tokens. Secrets appear only in the response that
 * creates them; lists never carry them. Bodies are JSON; an empty body counts as `{}`. Also the
 * operator's single-use manager sign-in links (issue 43: what `npm start` prints).
 */
import type { Context } from "hono";
import * as z from "zod";
import { mintSignInTicket, SIGN_IN_LINK_PATH } from "../../auth/sessions";
import { adminTokenView, getOrgAdminToken, listOrgAdminTokens, mintOrgAdminToken, revokeOrgAdminToken } from "../../identity/admin-tokens";
import {
  apiKeyView,
  changeCredits,
  createApiKey,
  endRotationGrace,
  getApiKey,
  keyTraffic,
  keyUsage,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  updateApiKey,
} from "../../identity/api-keys";
import { auditLog } from "../../identity/audit";
import {
  clientCredentialView,
  createClientCredential,
  getClientCredential,
  listClientCredentials,
  revokeClientCredential,
  updateClientCredential,
} from "../../identity/credentials";
import {
  createOrganization,
  deleteOrganization,
  getOrganization,
  listOrganizations,
  updateOrganizationQuota,
} from "../../identity/organizations";
import {
  createTrustedIssuer,
  getTrustedIssuer,
  listTrustedIssuers,
  refreshTrustedIssuer,
  removeTrustedIssuer,
  trustedIssuerView,
} from "../../identity/trusted-issuers";
import { createUser, getUser, listUsers, removeUser } from "../../identity/users";
import { MAX_ACTIVE_API_KEYS } from "../../objects/organization";
import { usageView } from "../../ratelimit/service";
import { emptyUsage } from "../../ratelimit/windows";
import {
  AdminTokenView,
  ApiKeyTrafficView,
  ApiKeyView,
  ApiKeyWithUsageView,
  ChangeCreditsInput,
  ClientCredentialView,
  CreateApiKeyInput,
  CreateClientCredentialInput,
  CreatedApiKeyView,
  CreatedClientCredentialView,
  CreateManagerSignInLinkInput,
  CreateOrganizationInput,
  CreateTrustedIssuerInput,
  CreateUserInput,
  DeletedOrganizationView,
  MAX_ROTATION_GRACE_SECONDS,
  ManagerSignInLinkView,
  MintOrgAdminTokenInput,
  OrgAdminTokenView,
  OrganizationView,
  RotateApiKeyInput,
  RotatedApiKeyView,
  SIGN_IN_TICKET_MAX_SECONDS,
  SIGN_IN_TICKET_SECONDS,
  TrustedIssuerView,
  UpdateApiKeyInput,
  UpdateClientCredentialInput,
  UpdateOrganizationInput,
  UserView,
} from "../../schemas/admin";
import { AUDIT_ACTOR_TYPES, AuditEntryView, AuditFilter } from "../../schemas/audit";
import { QUOTA_CEILING_PER_SECOND, QUOTA_EXACT_PER_SECOND } from "../../schemas/records";
import { parseInput } from "../../schemas/validate";
import { type AppEnv, keywayOrigin } from "../context";
import { ADMIN_TOKEN, ADMIN_TOKEN_SECRET, API_KEY, AUDIT_ENTRY, CREDENTIAL, ORG, T1, TOKEN_REQUEST, USER, usageWindow } from "../examples";
import { envelopeRoute, listRoute, param, type QueryParam, type Route } from "../route";

/** The audit log's filters, as query parameters (schemas/audit.ts AuditFilter). */
const AUDIT_QUERY: QueryParam[] = [
  {
    name: "actor",
    description: `Only entries of this kind of actor: ${AUDIT_ACTOR_TYPES.join(", ")}.`,
    schema: z.enum(AUDIT_ACTOR_TYPES),
    example: "admin_token",
  },
  {
    name: "actor_id",
    description: "Only entries of this actor: an administrator token's id, a client_id or a portal session's id.",
    schema: z.string(),
    example: "tok_0123456789abcdefghjkmnpqrs",
  },
  { name: "action", description: "Only entries of this action.", schema: z.string(), example: "client_credential.revoked" },
  { name: "resource_type", description: "Only entries about this kind of resource.", schema: z.string(), example: "client_credential" },
  {
    name: "resource_id",
    description: "Only entries about this resource.",
    schema: z.string(),
    example: "kw_client_0123456789abcdefghijkl",
  },
  { name: "since", description: "Only entries at or after this time (RFC 3339).", schema: z.string(), example: "2026-12-01T00:00:00Z" },
  { name: "until", description: "Only entries before this time (RFC 3339).", schema: z.string(), example: "2026-12-02T00:00:00Z" },
];

const ORGS = "/admin/v1/organizations";
/** The sign-in link's example: the ticket is 256 random bits, base64url. */
const MANAGER_SIGN_IN_LINK = {
  url: `https://keyway.example${SIGN_IN_LINK_PATH}?ticket=kw_signin_Qm9vdHN0cmFwLXRpY2tldC1leGFtcGxlLTAxMjM0NTY`,
  expires_at: "2026-06-01T12:05:00.000Z",
};
const ORG_PATH = `${ORGS}/{org}`;
const KEYS = `${ORG_PATH}/api-keys`;
const USERS = `${ORG_PATH}/users`;
const CREDENTIALS = `${USERS}/{user}/client-credentials`;
const ISSUERS = `${ORG_PATH}/trusted-issuers`;

const orgsTag = "Operator: organizations and users";
const keysTag = "Operator: API keys";
const credentialsTag = "Operator: client credentials";
const issuersTag = "Operator: trusted issuers";
const TRUSTED_ISSUER = {
  id: "iss_01jz8q3v0c4x2m9t6n5r7w1y3a",
  organization_id: ORG.id,
  name: "GitHub Actions",
  issuer: "https://token.actions.githubusercontent.com",
  jwks_uri: "https://token.actions.githubusercontent.com/.well-known/jwks",
  jwks_uri_source: "discovered" as const,
  assertion_reuse: "once" as const,
  max_assertion_lifetime_seconds: 3600,
  key_set: { fetched_at: T1, key_ids: ["cc413527-173f-5a05-976e-9c52b1d7b431"] },
  created_at: T1,
};

/** Two buckets of each series, for the description (a real answer has 24 and 30). */
const TRAFFIC_EXAMPLE = {
  hours: [
    { start: "2026-06-01T11:00:00.000Z", admitted: 340, refused: 2 },
    { start: "2026-06-01T12:00:00.000Z", admitted: 118, refused: 0 },
  ],
  days: [
    { start: "2026-05-31T00:00:00.000Z", admitted: 912, refused: 40 },
    { start: "2026-06-01T00:00:00.000Z", admitted: 458, refused: 2 },
  ],
};

type C = Context<AppEnv>;
const deps = (c: C) => c.get("deps");
const actor = (c: C) => c.get("actor");
const defaults = (c: C) => deps(c).config.defaultLimits;
/** The concrete path of a collection, parameters filled in from this request. */
const under = (c: C, path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => param(c, name));

export const adminRoutes: Route[] = [
  // The manager, without pasting ADMIN_TOKEN (issue 43)
  envelopeRoute({
    method: "POST",
    path: "/admin/v1/manager-sign-in-links",
    operationId: "createManagerSignInLink",
    summary: "Create a single-use link that signs the operator in to the manager",
    description: `A link to the manager app, on this service's origin: opened in a browser within \`expires_in\` seconds (${SIGN_IN_TICKET_SECONDS} by default, at most ${SIGN_IN_TICKET_MAX_SECONDS}), its page's **Sign in** button starts an operator session, exactly as signing in with \`ADMIN_TOKEN\` does. It signs in once: a second use, an expired link, or one minted before \`ADMIN_TOKEN\` changed is refused with 410 and signs nobody in. The link carries a 256-bit ticket shown only in this answer (keyway keeps its SHA-256). \`npm start\` prints one.`,
    tag: orgsTag,
    auth: "admin",
    // 200, not 201: a link is not a resource with an address of its own (nothing can GET it again).
    body: { schema: CreateManagerSignInLinkInput, example: { expires_in: 300 }, optional: true },
    response: { schema: ManagerSignInLinkView, example: MANAGER_SIGN_IN_LINK },
    handle: async (c, input) => {
      const { ticket, expires_at } = await mintSignInTicket(deps(c), input.expires_in);
      return { url: `${keywayOrigin(c)}${SIGN_IN_LINK_PATH}?ticket=${ticket}`, expires_at };
    },
  }),

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
    handle: (c, input) => createOrganization(deps(c), input, actor(c)),
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
    method: "PATCH",
    path: ORG_PATH,
    operationId: "updateOrganization",
    summary: "Set an organization's shared quota",
    description: `\`limits\` (\`per_second\`, \`per_day\`, \`per_month\`, UTC windows) are shared by all the organization's API keys and counted exactly, in addition to each key's own limits: a request is admitted only if every limit that applies admits it, and counts against all of them; over any -> 429 \`rate_limited\`. A field \`null\` removes that limit, \`limits: null\` the quota. Up to ${QUOTA_EXACT_PER_SECOND} per second every request is counted by the organization's one quota object (that figure applies when \`per_second\` is not set); above, up to ${QUOTA_CEILING_PER_SECOND}, each key's object holds slices of the second's budget: never more admitted than the quota, at most the keys' unspent slices fewer (docs/storage.md). In effect on every key's next request once answered (503 with Retry-After if a key's object could not be told yet; repeating is safe).`,
    tag: orgsTag,
    auth: "admin",
    body: { schema: UpdateOrganizationInput, example: { limits: { per_day: 100_000, per_month: 2_000_000 } } },
    response: { schema: OrganizationView, example: { ...ORG, limits: { per_day: 100_000, per_month: 2_000_000 } } },
    handle: (c, input) => updateOrganizationQuota(deps(c), param(c, "org"), input.limits, actor(c)),
  }),
  envelopeRoute({
    method: "DELETE",
    path: ORG_PATH,
    operationId: "deleteOrganization",
    summary: "Delete an organization: revoke everything it holds now, erase its data after 30 days",
    tag: orgsTag,
    auth: "admin",
    response: {
      schema: DeletedOrganizationView,
      example: {
        ...ORG,
        deleted_at: "2026-11-24T12:00:00.000Z",
        erase_after: "2026-12-24T12:00:00.000Z",
        webhook_configurations_deleted: 2,
      },
    },
    handle: (c) => deleteOrganization(deps(c), param(c, "org"), actor(c)),
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
    handle: (c, input) => createUser(deps(c), param(c, "org"), input, actor(c)),
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
    handle: (c) => removeUser(deps(c), param(c, "org"), param(c, "user"), actor(c)),
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
    response: { schema: OrgAdminTokenView, example: { ...ADMIN_TOKEN, token: ADMIN_TOKEN_SECRET } },
    handle: async (c, input) => {
      const { record, token } = await mintOrgAdminToken(deps(c), param(c, "org"), input, actor(c));
      return { ...adminTokenView(record, deps(c).now()), token };
    },
    location: (minted, c) => `${under(c, ORG_PATH)}/admin-tokens/${minted.id}`,
  }),
  listRoute({
    method: "GET",
    path: `${ORG_PATH}/admin-tokens`,
    operationId: "listOrgAdminTokens",
    summary: "List an organization's administrator tokens (never the tokens themselves)",
    tag: orgsTag,
    auth: "admin",
    response: { schema: AdminTokenView, example: [ADMIN_TOKEN] },
    handle: async (c, query) => {
      const page = await listOrgAdminTokens(deps(c), param(c, "org"), query);
      return { ...page, items: page.items.map((t) => adminTokenView(t, deps(c).now())) };
    },
  }),
  envelopeRoute({
    method: "GET",
    path: `${ORG_PATH}/admin-tokens/{token}`,
    operationId: "getOrgAdminToken",
    summary: "Get an administrator token",
    tag: orgsTag,
    auth: "admin",
    response: { schema: AdminTokenView, example: ADMIN_TOKEN },
    handle: async (c) => adminTokenView(await getOrgAdminToken(deps(c), param(c, "org"), param(c, "token")), deps(c).now()),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${ORG_PATH}/admin-tokens/{token}`,
    operationId: "revokeOrgAdminToken",
    summary: "Revoke an administrator token (idempotent), ending every manager session opened with it",
    tag: orgsTag,
    auth: "admin",
    response: { schema: AdminTokenView, example: { ...ADMIN_TOKEN, status: "revoked", revoked_at: T1 } },
    handle: async (c) => adminTokenView(await revokeOrgAdminToken(deps(c), param(c, "org"), param(c, "token"), actor(c)), deps(c).now()),
  }),
  listRoute({
    method: "GET",
    path: `${ORG_PATH}/audit-log`,
    operationId: "getAuditLog",
    summary: "The organization's audit log, newest first",
    description:
      "Every change made by the operator, an administrator (manager app), an API client, a receiver in its portal session or keyway itself: who, what, which resource, when. Entries never carry a secret. Narrowed by actor, action, resource and time range (each an index of the log); the cursor pages through the narrowed list.",
    tag: orgsTag,
    auth: "admin",
    query: AUDIT_QUERY,
    response: { schema: AuditEntryView, example: [AUDIT_ENTRY] },
    handle: (c, query) => auditLog(deps(c), param(c, "org"), query, parseInput(AuditFilter, c.req.query(), "query string")),
  }),

  // API keys
  envelopeRoute({
    method: "POST",
    path: KEYS,
    operationId: "createApiKey",
    summary: "Issue an API key",
    description: `Limits default to the service's vars; \`api_key\` is shown only here. \`location_hint\` (wnam, enam, sam, weur, eeur, apac, oc, afr, me) says where the key's clients are: the key's Durable Object, which every request with the key calls, is created in that region (otherwise near the organization's object; docs/latency.md). An organization may have at most ${MAX_ACTIVE_API_KEYS} active API keys (409 beyond).`,
    tag: keysTag,
    auth: "admin",
    status: 201,
    body: { schema: CreateApiKeyInput, example: { name: "laptop", location_hint: "weur" }, optional: true },
    // The organization's cap on active API keys (objects/organization.ts).
    errors: [409],
    response: { schema: CreatedApiKeyView, example: { ...API_KEY, api_key: "kw_live_ak_pZkKcQUSu60Tweq49nkDp36iTCUBlS7tiNksNt3WQEE" } },
    handle: async (c, input) => {
      const { record, secret } = await createApiKey(deps(c), param(c, "org"), input, actor(c));
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
      // The key's object applies the limits; what it says is what holds.
      const decision = await keyUsage(deps(c), record);
      const view = apiKeyView(record, defaults(c));
      if (decision === null) return { ...view, usage: usageView(emptyUsage(view.limits, deps(c).now())) };
      const usage = usageView(decision);
      return { ...view, limits: { per_second: usage.second.limit, per_day: usage.day.limit }, usage };
    },
  }),
  envelopeRoute({
    method: "GET",
    path: `${KEYS}/{key}/traffic`,
    operationId: "getApiKeyTraffic",
    summary: "An API key's requests over time",
    description:
      "Requests admitted and refused (429) by the key's limits: the last 24 hours by hour and the last 30 days by UTC day, oldest first, every bucket present. Counted by the key's own object in the same call that decides each request, so these are the numbers the limits saw. The manager draws its charts from the same counts.",
    tag: keysTag,
    auth: "admin",
    response: { schema: ApiKeyTrafficView, example: TRAFFIC_EXAMPLE },
    handle: async (c) => keyTraffic(deps(c), await getApiKey(deps(c), param(c, "org"), param(c, "key"))),
  }),
  envelopeRoute({
    method: "POST",
    path: `${KEYS}/{key}/credits`,
    operationId: "changeApiKeyCredits",
    summary: "Top up or reset an API key's credits",
    description:
      "`{add: n}` adds n to what the key has left (a key without credits gets n, unrefilled); `{set: n}` makes the balance exactly n. Each admitted request spends its cost (`x-keyway-cost`); at zero the key's requests are refused with 429 `credits_exhausted`. Set the refill with `PATCH .../api-keys/{key}` (`credits: {remaining, refill: {amount, interval}}`). In the audit log as `api_key.credits_added` or `api_key.credits_set`; the live balance is in the key's `usage.credits`.",
    tag: keysTag,
    auth: "admin",
    body: { schema: ChangeCreditsInput, example: { add: 5000 } },
    response: { schema: ApiKeyView, example: { ...API_KEY, credits: { refill: null } } },
    handle: async (c, input) => apiKeyView(await changeCredits(deps(c), param(c, "org"), param(c, "key"), input, actor(c)), defaults(c)),
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
    handle: async (c, input) => apiKeyView(await updateApiKey(deps(c), param(c, "org"), param(c, "key"), input, actor(c)), defaults(c)),
  }),
  envelopeRoute({
    method: "POST",
    path: `${KEYS}/{key}/rotate`,
    operationId: "rotateApiKey",
    summary: "Rotate an API key's secret, with a grace period for the old one",
    description: `The same key (id, limits, counters, credits, quota, traffic) gets a new secret, \`api_key\`, shown only here. The secret it replaces keeps working for \`grace_seconds\` (0 to ${MAX_ROTATION_GRACE_SECONDS}, 7 days; 0: it stops at once), then is refused with 401 at every location on its next request; both count against the key's one set of limits meanwhile. A secret replaced by an earlier rotation stops now. \`previous_secret_expires_at\` says when the grace ends; \`DELETE .../previous-secret\` ends it early. \`applied\` is false while the key's object has still to learn the rotation (retried within seconds; the old secret works until then). Audited as \`api_key.rotated\`.`,
    tag: keysTag,
    auth: "admin",
    body: { schema: RotateApiKeyInput, example: { grace_seconds: 3600 } },
    // A revoked key is not rotated.
    errors: [409],
    response: {
      schema: RotatedApiKeyView,
      example: {
        ...API_KEY,
        hint: "kw_live_ak_...Q2xv",
        api_key: "kw_live_ak_fYkL0n3r8Xq7TgM1a2b3c4d5e6f7g8h9i0j1k2l3Q2xv.zJUiHJUF5fAWwEKYTz9ol3Zg3Sg1wgIoQ8Y6lRKPqbM",
        previous_secret_expires_at: "2026-06-01T13:00:00.000Z",
        applied: true,
      },
    },
    handle: async (c, input) => {
      const { record, secret, applied } = await rotateApiKey(deps(c), param(c, "org"), param(c, "key"), input.grace_seconds, actor(c));
      return { ...apiKeyView(record, defaults(c), deps(c).now()), api_key: secret, applied };
    },
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${KEYS}/{key}/previous-secret`,
    operationId: "endApiKeyRotationGrace",
    summary: "End a rotation's grace now",
    description:
      "The secret the last rotation replaced is refused from its next request on, at every location (answered once the key's object has it; 503 to repeat otherwise). Idempotent: a key without a previous secret answers as it is. Audited as `api_key.grace_ended`.",
    tag: keysTag,
    auth: "admin",
    response: { schema: ApiKeyView, example: API_KEY },
    handle: async (c) =>
      apiKeyView(await endRotationGrace(deps(c), param(c, "org"), param(c, "key"), actor(c)), defaults(c), deps(c).now()),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${KEYS}/{key}`,
    operationId: "revokeApiKey",
    summary: "Revoke an API key (idempotent)",
    tag: keysTag,
    auth: "admin",
    response: { schema: ApiKeyView, example: { ...API_KEY, status: "revoked", revoked_at: T1 } },
    handle: async (c) => apiKeyView(await revokeApiKey(deps(c), param(c, "org"), param(c, "key"), actor(c)), defaults(c)),
  }),

  // Client credentials
  envelopeRoute({
    method: "POST",
    path: CREDENTIALS,
    operationId: "createClientCredential",
    summary: "Issue a client credential to a user",
    description:
      'With a secret (the default; `client_secret` is shown only here), or with `token_endpoint_auth_method: "private_key_jwt"` and the client\'s public keys in `jwks` or the URL that publishes them in `jwks_uri` (no secret is created; private key material is refused), or with `token_endpoint_auth_method: "federated_jwt"` and `federated: {issuer, subject}` (a trusted issuer\'s workload, no secret: docs/clients.md). `access_token_strategy: "jwt"` makes its tokens RFC 9068 JWTs. `scopes` restricts its tokens; **without `scopes` the credential is unrestricted**: its tokens may have every scope, including any scope keyway adds later (the answer says `scopes_unrestricted: true`, `scopes` listing today\'s); `scopes: []` gives its tokens no scope. `dpop_bound_access_tokens` requires DPoP.',
    tag: credentialsTag,
    auth: "admin",
    status: 201,
    body: { schema: CreateClientCredentialInput, example: { name: "laptop" }, optional: true },
    response: { schema: CreatedClientCredentialView, example: { ...CREDENTIAL, client_secret: TOKEN_REQUEST.client_secret } },
    handle: async (c, input) => {
      const { record, secret } = await createClientCredential(deps(c), param(c, "org"), param(c, "user"), input, actor(c));
      return { ...clientCredentialView(record), ...(secret !== null ? { client_secret: secret } : {}) };
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
    method: "PATCH",
    path: `${CREDENTIALS}/{client}`,
    operationId: "updateClientCredential",
    summary: "Change a client credential: its key set (rotation), scopes, DPoP, name",
    description:
      "`jwks` replaces a private_key_jwt credential's public keys: during a rotation list the old and the new together, then the new alone (or set `jwks_uri` once and rotate at that URL without calling keyway). `access_token_strategy` chooses opaque or JWT tokens from now on. `scopes` (`null`: no restriction, every scope including any added later; `[]`: none) and `dpop_bound_access_tokens` apply to tokens issued from now on. In effect at the next token request everywhere once answered (503 while still being applied; repeat to confirm).",
    tag: credentialsTag,
    auth: "admin",
    body: { schema: UpdateClientCredentialInput, example: { scopes: ["webhooks:read"] } },
    response: { schema: ClientCredentialView, example: { ...CREDENTIAL, scopes: ["webhooks:read"], scopes_unrestricted: false } },
    errors: [409],
    handle: async (c, input) =>
      clientCredentialView(await updateClientCredential(deps(c), param(c, "org"), param(c, "user"), param(c, "client"), input, actor(c))),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${CREDENTIALS}/{client}`,
    operationId: "revokeClientCredential",
    summary: "Revoke a client credential (idempotent)",
    description:
      "Its access tokens stop working on the very next request everywhere. Answered once every API key's object has applied the revocation (503 while it is still being applied; repeat to confirm).",
    tag: credentialsTag,
    auth: "admin",
    response: { schema: ClientCredentialView, example: { ...CREDENTIAL, status: "revoked", revoked_at: T1 } },
    handle: async (c) =>
      clientCredentialView(await revokeClientCredential(deps(c), param(c, "org"), param(c, "user"), param(c, "client"), actor(c))),
  }),

  // Trusted issuers (issue 44)
  envelopeRoute({
    method: "POST",
    path: ISSUERS,
    operationId: "createTrustedIssuer",
    summary: "Trust a workload identity issuer",
    description:
      "Its JWTs then authenticate the organization's `federated_jwt` credentials that name it. Without `jwks_uri`, keyway finds the key set through the issuer's OpenID Connect Discovery document or RFC 8414 metadata (whose `issuer` must match exactly); either way it fetches the set now and refuses (400) an issuer whose keys it cannot fetch. `assertion_reuse` and `max_assertion_lifetime_seconds` bound what its JWTs may do (docs/clients.md).",
    tag: issuersTag,
    auth: "admin",
    status: 201,
    body: {
      schema: CreateTrustedIssuerInput,
      example: { issuer: "https://token.actions.githubusercontent.com", name: "GitHub Actions" },
    },
    response: { schema: TrustedIssuerView, example: TRUSTED_ISSUER },
    errors: [409],
    handle: async (c, input) => trustedIssuerView(await createTrustedIssuer(deps(c), param(c, "org"), input, actor(c))),
    location: (issuer, c) => `${under(c, ISSUERS)}/${issuer.id}`,
  }),
  listRoute({
    method: "GET",
    path: ISSUERS,
    operationId: "listTrustedIssuers",
    summary: "List the organization's trusted issuers",
    tag: issuersTag,
    auth: "admin",
    response: { schema: TrustedIssuerView, example: [TRUSTED_ISSUER] },
    handle: async (c, query) => {
      const page = await listTrustedIssuers(deps(c), param(c, "org"), query);
      return { ...page, items: page.items.map(trustedIssuerView) };
    },
  }),
  envelopeRoute({
    method: "GET",
    path: `${ISSUERS}/{issuer}`,
    operationId: "getTrustedIssuer",
    summary: "Get a trusted issuer",
    tag: issuersTag,
    auth: "admin",
    response: { schema: TrustedIssuerView, example: TRUSTED_ISSUER },
    handle: async (c) => trustedIssuerView(await getTrustedIssuer(deps(c), param(c, "org"), param(c, "issuer"))),
  }),
  envelopeRoute({
    method: "POST",
    path: `${ISSUERS}/{issuer}/refresh-keys`,
    operationId: "refreshTrustedIssuerKeys",
    summary: "Fetch a trusted issuer's key set now",
    description:
      "Replaces the key set keyway holds for the issuer with the one its `jwks_uri` publishes now: a key the issuer withdrew (say, after a compromise) stops authenticating at once instead of when the held set goes stale (at most an hour). 400 when the set cannot be fetched; the held set is then unchanged.",
    tag: issuersTag,
    auth: "admin",
    response: { schema: TrustedIssuerView, example: TRUSTED_ISSUER },
    handle: async (c) => trustedIssuerView(await refreshTrustedIssuer(deps(c), param(c, "org"), param(c, "issuer"), actor(c))),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${ISSUERS}/{issuer}`,
    operationId: "removeTrustedIssuer",
    summary: "Stop trusting an issuer",
    description:
      "Revokes every `federated_jwt` credential that names it, in the same change: their tokens stop working on the very next request everywhere (503 while still being applied; repeat to confirm).",
    tag: issuersTag,
    auth: "admin",
    response: { schema: TrustedIssuerView, example: TRUSTED_ISSUER },
    handle: async (c) => trustedIssuerView(await removeTrustedIssuer(deps(c), param(c, "org"), param(c, "issuer"), actor(c))),
  }),
];
