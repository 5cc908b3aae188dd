/**
 * Request bodies and response shapes of the operator API (/admin/v1). Inputs are strict: an
 * unknown field is a 400, so a typo such as `per_sec` is never silently ignored.
 */
import * as z from "zod";
import { DisplayName, Email, publicNames, Timestamp } from "./common";
import { Jwks } from "./jose";
import { MeView } from "./oauth";
import {
  CreditsRefill,
  Limits,
  LocationHint,
  MAX_KEY_PER_SECOND,
  OrganizationRecord,
  OrgQuota,
  QUOTA_CEILING_PER_SECOND,
  QUOTA_EXACT_PER_SECOND,
  TrustedIssuerRecord,
  UserRecord,
} from "./records";
import { ALL_SCOPES } from "./scopes";

/**
 * A key's object notes a use of the key (and of each client credential) at most once per
 * USE_RESOLUTION_MS, and flushes what it noted to the organization as often: writing "last used"
 * on every request would add a row write to the hot path (docs/storage.md). So a `last_used_at`
 * trails the latest use by up to twice that, and the API and the manager say so.
 */
export const USE_RESOLUTION_MS = 60_000;

/** `last_used_at` of an API key or a client credential: how fresh it is, in its description. */
const LastUsedAt = Timestamp.nullable().describe(
  `The latest admitted request that used it, to the minute; it trails the latest use by up to ${(2 * USE_RESOLUTION_MS) / 60_000} minutes (uses are batched, not written per request). Null: never used.`,
);

const LimitValue = (max: number, why = "") =>
  z
    .number({ error: "must be a number" })
    .int({ error: "must be an integer" })
    .min(1, { error: "must be at least 1" })
    .max(max, { error: `must be at most ${max}${why}` });

/** A key's per-second limit: at most what its one object serves (MAX_KEY_PER_SECOND). */
const PerSecond = LimitValue(
  MAX_KEY_PER_SECOND,
  ` (a key is served by up to ${MAX_KEY_PER_SECOND / 1000} Durable Object shards of about 1000 requests per second each; spread more over several keys)`,
);

/** Credits on create or change: the balance to set, and the refill (absent: none). */
const CreditsInput = z.strictObject({
  remaining: z.number({ error: "must be a number" }).int({ error: "must be an integer" }).min(0, { error: "must be at least 0" }).max(1e12),
  refill: CreditsRefill.optional(),
});

export const CreateOrganizationInput = z.strictObject({ name: DisplayName });

export const CreateUserInput = z.strictObject({
  name: DisplayName,
  email: Email.optional(),
});

export const CreateApiKeyInput = z.strictObject({
  name: DisplayName.optional(),
  /** Where the key's clients are: its object, which every request calls, is created there. */
  location_hint: LocationHint.optional(),
  limits: z
    .strictObject({
      per_second: PerSecond.optional(),
      per_day: LimitValue(100_000_000).optional(),
    })
    .optional(),
  /** Credits each admitted request spends its cost from (issue 24); none: unlimited. */
  credits: CreditsInput.optional(),
});

/** PATCH: `null` resets a limit to the default; an absent field leaves it unchanged. */
export const UpdateApiKeyInput = z.strictObject({
  name: DisplayName.nullable().optional(),
  limits: z
    .strictObject({
      per_second: PerSecond.nullable().optional(),
      per_day: LimitValue(100_000_000).nullable().optional(),
    })
    .optional(),
  /** Sets the balance (a reset) and the refill; `null` removes credits (unlimited again). */
  credits: CreditsInput.nullable().optional(),
});
export type UpdateApiKeyInput = z.output<typeof UpdateApiKeyInput>;

/** The longest grace a rotation gives the replaced secret: 7 days. */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 86_400;
/**
 * POST .../api-keys/{key}/rotate (issue 29): a new secret for the same key; the one it replaces
 * keeps working for `grace_seconds` (0: it stops at once).
 */
export const RotateApiKeyInput = z.strictObject({
  grace_seconds: z
    .number({ error: "must be a number of seconds" })
    .int({ error: "must be a whole number of seconds" })
    .min(0, { error: "must be at least 0" })
    .max(MAX_ROTATION_GRACE_SECONDS, { error: `must be at most ${MAX_ROTATION_GRACE_SECONDS} (7 days)` }),
});
export type RotateApiKeyInput = z.output<typeof RotateApiKeyInput>;

/** Administrator tokens expire: 30 days unless `expires_in_days` says otherwise (1 to 365). */
export const DEFAULT_ADMIN_TOKEN_DAYS = 30;
export const MintOrgAdminTokenInput = z.strictObject({
  name: DisplayName.optional(),
  expires_in_days: z
    .number({ error: "must be a number" })
    .int({ error: "must be an integer" })
    .min(1, { error: "must be at least 1" })
    .max(365, { error: "must be at most 365" })
    .optional(),
});

export const AdminTokenView = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string().nullable(),
  status: z.enum(["active", "expired", "revoked"]),
  created_at: Timestamp,
  expires_at: Timestamp,
  /** Last sign-in to the manager app with it. */
  last_used_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
});
export type AdminTokenView = z.output<typeof AdminTokenView>;

/** Only the mint response carries the token. */
export const OrgAdminTokenView = AdminTokenView.extend({ token: z.string() });

/** How long an operator's manager sign-in link stays usable by default: 5 minutes (issue 43). */
export const SIGN_IN_TICKET_SECONDS = 300;
/** The longest one may be asked for: 15 minutes (a link to open now, not to keep). */
export const SIGN_IN_TICKET_MAX_SECONDS = 900;

export const CreateManagerSignInLinkInput = z.strictObject({
  expires_in: z
    .number()
    .int({ error: "must be a whole number of seconds" })
    .min(60, { error: "must be at least 60" })
    .max(SIGN_IN_TICKET_MAX_SECONDS, { error: `must be at most ${SIGN_IN_TICKET_MAX_SECONDS}` })
    .optional()
    .describe(`Seconds the link may be used in (default ${SIGN_IN_TICKET_SECONDS}); it signs in once.`),
});
export type CreateManagerSignInLinkInput = z.output<typeof CreateManagerSignInLinkInput>;

export const ManagerSignInLinkView = z.object({
  url: z
    .string()
    .describe(
      "Open it in a browser within `expires_at` and press Sign in: it opens an operator session in the manager, once. Shown only here (keyway keeps its SHA-256).",
    ),
  expires_at: Timestamp,
});
export type ManagerSignInLinkView = z.output<typeof ManagerSignInLinkView>;

const ScopeList = z
  .array(z.enum(ALL_SCOPES, { error: `must be one of ${ALL_SCOPES.join(", ")}` }))
  .max(ALL_SCOPES.length)
  .describe(
    "The scopes this credential's tokens may have (auth/scopes.ts). Omitted (on update: `null`): no restriction, every scope, including any scope keyway adds later; the answer then says `scopes_unrestricted: true`. `[]`: its tokens carry no scope (they reach only what needs none, such as `GET /v1/me`).",
  );

/**
 * How a client authenticates at the token endpoint: the RFC 7591 names, and `federated_jwt`
 * (issue 44): a JWT that a trusted issuer signed for the workload (Keycloak's `federated-jwt`).
 */
export const TokenEndpointAuthMethod = z.enum(["client_secret_basic", "client_secret_post", "private_key_jwt", "federated_jwt"]);

/** What the credential's access tokens are (issue 44): keyway's opaque tokens, or RFC 9068 JWTs others can verify. */
export const AccessTokenStrategy = z
  .enum(["opaque", "jwt"])
  .describe(
    "`opaque` (the default): keyway's own tokens, checked by keyway (and its introspection endpoint). `jwt`: RFC 9068 JWT access tokens (`typ` at+jwt, ES256) signed by the key set at `/.well-known/jwks.json`, which any resource server can verify; keyway's own routes still refuse one on the request after its revocation.",
  );
export type AccessTokenStrategy = z.output<typeof AccessTokenStrategy>;

/** An http(s) URL keyway fetches (checked by the SSRF guard where it is used). */
const FetchedUrl = z.string().min(1, { error: "must not be empty" }).max(2048, { error: "must be at most 2048 characters" });

/** Who a federated credential is: the workload's issuer and its exact subject. */
export const FederatedIdentity = z.strictObject({
  issuer: FetchedUrl.describe(
    "One of the organization's trusted issuers (`POST /admin/v1/organizations/{org}/trusted-issuers`), exactly as registered.",
  ),
  subject: z
    .string()
    .min(1, { error: "must not be empty" })
    .max(512, { error: "must be at most 512 characters" })
    .describe(
      'The `sub` the issuer puts in the workload\'s JWT, matched exactly (no patterns: see docs/clients.md, "Why exact subjects"), such as `repo:octo-org/app:ref:refs/heads/main` or `system:serviceaccount:prod:billing`.',
    ),
});
export type FederatedIdentity = z.output<typeof FederatedIdentity>;

const METHOD_FIELDS = {
  jwks: "private_key_jwt",
  jwks_uri: "private_key_jwt",
  federated: "federated_jwt",
} as const;

export const CreateClientCredentialInput = z
  .strictObject({
    name: DisplayName.optional(),
    token_endpoint_auth_method: TokenEndpointAuthMethod.optional().describe(
      "`private_key_jwt` (RFC 7523): the client signs a JWT with its private key; `jwks` (or `jwks_uri`) holds the public keys and no secret is created. `federated_jwt`: the client presents a JWT its workload issuer signed (a CI job's or a Kubernetes service account's token); `federated` names the issuer and subject and no secret is created. Otherwise (the default) a client secret is created, used with HTTP Basic or in the body.",
    ),
    jwks: Jwks.optional().describe("The client's public keys (JWK Set), for private_key_jwt only. Private key material is refused."),
    jwks_uri: FetchedUrl.optional().describe(
      "Instead of `jwks`: where the client publishes its public keys (RFC 7591 2). keyway fetches it (https; through the SSRF guard), keeps it for its `Cache-Control` max-age (5 min to 1 h, 1 h without one), and fetches it again, at most once a minute, when an assertion names a key it does not hold: the client rotates keys without calling keyway.",
    ),
    federated: FederatedIdentity.optional().describe("For federated_jwt only: the trusted issuer and the workload's subject."),
    scopes: ScopeList.optional(),
    dpop_bound_access_tokens: z
      .boolean()
      .optional()
      .describe("Every token of this credential must be DPoP-bound (RFC 9449): a token request without a DPoP proof is refused."),
    access_token_strategy: AccessTokenStrategy.optional(),
  })
  .superRefine((input, ctx) => {
    const method = input.token_endpoint_auth_method;
    for (const [field, needs] of Object.entries(METHOD_FIELDS)) {
      if (input[field as keyof typeof METHOD_FIELDS] !== undefined && method !== needs) {
        ctx.addIssue({ code: "custom", path: [field], message: `is only for a ${needs} credential` });
      }
    }
    if (method === "private_key_jwt" && (input.jwks === undefined) === (input.jwks_uri === undefined)) {
      ctx.addIssue({ code: "custom", path: ["jwks"], message: "must be given (or jwks_uri instead, not both) with private_key_jwt" });
    }
    if (method === "federated_jwt" && input.federated === undefined) {
      ctx.addIssue({ code: "custom", path: ["federated"], message: "is required with federated_jwt" });
    }
  });
export type CreateClientCredentialInput = z.output<typeof CreateClientCredentialInput>;

/** A credential's changes: its name, a new key set (a rotation: list old and new keys together), its scopes, DPoP. */
export const UpdateClientCredentialInput = z
  .strictObject({
    name: DisplayName.nullable().optional(),
    jwks: Jwks.optional().describe(
      "Replaces the key set of a private_key_jwt credential (list old and new keys during a rotation); replaces a `jwks_uri` too.",
    ),
    jwks_uri: FetchedUrl.optional().describe("Moves a private_key_jwt credential to a key set URL (replacing `jwks`)."),
    scopes: ScopeList.nullable().optional(),
    dpop_bound_access_tokens: z.boolean().optional(),
    access_token_strategy: AccessTokenStrategy.optional(),
  })
  .refine((input) => input.jwks === undefined || input.jwks_uri === undefined, {
    path: ["jwks_uri"],
    message: "must not be given with jwks: a credential has one source of keys",
  });
export type UpdateClientCredentialInput = z.output<typeof UpdateClientCredentialInput>;

/** Organizations and users hold no secrets: their views are the stored records. */
/** An organization; one read on its own (GET, PATCH) also shows its shared quota (`limits`, null without one). */
export const OrganizationView = OrganizationRecord.extend({ limits: OrgQuota.nullable().optional() });

/** PATCH of an organization: its shared quota (`null` removes it; a field `null` removes that limit). */
export const UpdateOrganizationInput = z.strictObject({
  limits: z
    .strictObject({
      per_second: LimitValue(
        QUOTA_CEILING_PER_SECOND,
        ` (an organization's quota is counted by one Durable Object, with its keys' objects holding slices of it above ${QUOTA_EXACT_PER_SECOND} per second)`,
      )
        .nullable()
        .optional(),
      per_day: LimitValue(10_000_000_000).nullable().optional(),
      per_month: LimitValue(100_000_000_000).nullable().optional(),
    })
    .nullable(),
});
export type UpdateOrganizationInput = z.output<typeof UpdateOrganizationInput>;

/** POST .../api-keys/{key}/credits: a top-up (`add`) or a reset (`set`), one of them. */
export const ChangeCreditsInput = z.union(
  [
    z.strictObject({
      add: z.number({ error: "must be a number" }).int({ error: "must be an integer" }).min(1, { error: "must be at least 1" }).max(1e12),
    }),
    z.strictObject({
      set: z.number({ error: "must be a number" }).int({ error: "must be an integer" }).min(0, { error: "must be at least 0" }).max(1e12),
    }),
  ],
  { error: "must be {add: n} or {set: n}" },
);
export type ChangeCreditsInput = z.output<typeof ChangeCreditsInput>;
/** What DELETE /admin/v1/organizations/{org} answers: when it was deleted, and when its data is erased. */
export const DeletedOrganizationView = OrganizationRecord.extend({
  deleted_at: z.string(),
  erase_after: z.string().nullable(),
  webhook_configurations_deleted: z.number().int(),
});
export type DeletedOrganizationView = z.infer<typeof DeletedOrganizationView>;
export const UserView = UserRecord;

export const ApiKeyView = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string().nullable(),
  /** e.g. "kw_live_ak_...x9Qz": enough to recognise a key, useless to an attacker. */
  hint: z.string(),
  /** Effective limits (overrides merged over the defaults). */
  limits: Limits,
  /** Which limits are per-key overrides rather than defaults. */
  limit_overrides: z.object({ per_second: z.boolean(), per_day: z.boolean() }),
  /** The location hint its object was created with; null: near the organization's object. */
  location_hint: LocationHint.nullable(),
  status: z.enum(["active", "revoked"]),
  created_at: Timestamp,
  last_used_at: LastUsedAt,
  revoked_at: Timestamp.nullable(),
  /** Credits: the refill; the balance is in `usage.credits` (it lives in the key's object). Null: unlimited. */
  credits: z.object({ refill: CreditsRefill.nullable() }).nullable(),
  /**
   * After a rotation with a grace period: until when the replaced secret still works (both count
   * against this one key's limits); null when there is none, or its grace has ended.
   */
  previous_secret_expires_at: Timestamp.nullable(),
});
export type ApiKeyView = z.output<typeof ApiKeyView>;

const WindowUsage = z.object({
  limit: z.number().int(),
  used: z.number().int(),
  remaining: z.number().int(),
  resets_at: Timestamp,
});

/** Usage in the current windows, from the key's rate limiter (GET of one key). */
const QuotaWindowUsage = WindowUsage.extend({ window: z.enum(["second", "day", "month"]) });
/** Credits as the key's object holds them now. */
export const CreditsUsage = z.object({
  remaining: z.number().int(),
  refill: CreditsRefill.nullable(),
  next_refill_at: Timestamp.nullable(),
});
export const ApiKeyUsage = z.object({
  second: WindowUsage,
  day: WindowUsage,
  /** The organization's shared quota (its windows that have a limit), or null without one. */
  quota: z.array(QuotaWindowUsage).nullable().optional(),
  credits: CreditsUsage.nullable().optional(),
});
export type ApiKeyUsage = z.output<typeof ApiKeyUsage>;

/**
 * GET /v1/me: who the token speaks for, and what the request's own admission saw (issue 24): the
 * key's limits, its usage after this request, its organization's quota and its credits. No extra
 * call: the key's object answered all of it in the request's one call.
 */
export const MeWithUsageView = MeView.extend({ limits: Limits, usage: ApiKeyUsage });
publicNames.add(MeWithUsageView, { name: "MeWithUsageView" });

export const ApiKeyWithUsageView = ApiKeyView.extend({ usage: ApiKeyUsage });

const TrafficBucket = z.object({
  start: Timestamp.describe("Start of the hour or UTC day."),
  admitted: z.number().int().describe("Requests the limits admitted."),
  refused: z.number().int().describe("Requests refused with 429."),
});
/** An API key's requests over time (lib/series.ts): the last 24 hours by hour, the last 30 days by UTC day, oldest first. */
export const ApiKeyTrafficView = z.object({ hours: z.array(TrafficBucket), days: z.array(TrafficBucket) });
export type ApiKeyTrafficView = z.output<typeof ApiKeyTrafficView>;

/** Only the create response carries the secret. */
export const CreatedApiKeyView = ApiKeyView.extend({ api_key: z.string() });
/** A rotation's answer: the new secret (shown only here), and whether the key's object already takes it. */
export const RotatedApiKeyView = CreatedApiKeyView.extend({
  /** False while the key's object has still to learn the rotation (retried within seconds): until then the old secret works and the new one is refused. */
  applied: z.boolean(),
});

export const ClientCredentialView = z.object({
  client_id: z.string(),
  organization_id: z.string(),
  user_id: z.string(),
  name: z.string().nullable(),
  /** `client_secret_basic` for a secret (client_secret_post works too), `private_key_jwt` or `federated_jwt`. */
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  /** The registered public keys (private_key_jwt), else null. */
  jwks: Jwks.nullable(),
  /** Where a private_key_jwt client publishes its keys, when it registered a URL instead of `jwks`; else null. */
  jwks_uri: z.string().nullable(),
  /** A federated_jwt credential's trusted issuer and subject; else null. */
  federated: FederatedIdentity.nullable(),
  access_token_strategy: AccessTokenStrategy,
  scopes: z
    .array(z.string())
    .describe(
      "The scopes its tokens may have now. With `scopes_unrestricted` this is every scope keyway has today; a scope added later is granted too.",
    ),
  scopes_unrestricted: z
    .boolean()
    .describe(
      "True when no scope was given at creation (or `scopes: null` was set since): the credential may have every scope, today's and any added later. False: exactly `scopes`.",
    ),
  dpop_bound_access_tokens: z.boolean(),
  status: z.enum(["active", "revoked"]),
  created_at: Timestamp,
  last_used_at: LastUsedAt,
  revoked_at: Timestamp.nullable(),
});
export type ClientCredentialView = z.output<typeof ClientCredentialView>;

/** `client_secret` is shown only here, and only for a secret credential (none exists for private_key_jwt or federated_jwt). */
export const CreatedClientCredentialView = ClientCredentialView.extend({ client_secret: z.string().optional() });

/** What a trusted issuer's JWTs may do (issue 44, docs/clients.md "Federated workload identity"). */
export const AssertionReuse = z
  .enum(["once", "until_expiry"])
  .describe(
    "`once` (the default): each JWT must carry a `jti` and authenticates one token request (RFC 7523 3, point 7). `until_expiry`: a JWT may authenticate any number of token requests until it expires, and needs no `jti`, for issuers whose workloads read one token from a file or the environment and reuse it (Kubernetes projected service-account tokens, CI job tokens), as cloud workload-identity federation accepts; the lifetime bound still holds.",
  );

export const CreateTrustedIssuerInput = z.strictObject({
  issuer: FetchedUrl.describe(
    "The issuer identifier, exactly as its JWTs' `iss` says (https, no query or fragment), such as `https://token.actions.githubusercontent.com`.",
  ),
  jwks_uri: FetchedUrl.optional().describe(
    "Where the issuer publishes its keys. Omitted: found through the issuer's OpenID Connect Discovery document (`/.well-known/openid-configuration`) or its RFC 8414 metadata, whose `issuer` must match exactly.",
  ),
  name: DisplayName.optional(),
  assertion_reuse: AssertionReuse.optional(),
  max_assertion_lifetime_seconds: z
    .number()
    .int()
    .min(60, { error: "must be at least 60" })
    .max(86_400, { error: "must be at most 86400" })
    .optional()
    .describe(
      "The longest a JWT from this issuer may live: its `exp` at most this far ahead of now (and of its `iat`). Default 3600 (Kubernetes' default projected token lives an hour); at most 86400.",
    ),
});
export type CreateTrustedIssuerInput = z.output<typeof CreateTrustedIssuerInput>;

/** A trusted issuer holds no secret: its view is the stored record. */
export const TrustedIssuerView = TrustedIssuerRecord;
export type TrustedIssuerView = z.output<typeof TrustedIssuerView>;

// Public names in the API description (http/openapi.ts).
publicNames.add(CreateOrganizationInput, { name: "CreateOrganizationInput" });
publicNames.add(CreateUserInput, { name: "CreateUserInput" });
publicNames.add(CreateApiKeyInput, { name: "CreateApiKeyInput" });
publicNames.add(UpdateApiKeyInput, { name: "UpdateApiKeyInput" });
publicNames.add(CreateClientCredentialInput, { name: "CreateClientCredentialInput" });
publicNames.add(UpdateClientCredentialInput, { name: "UpdateClientCredentialInput" });
publicNames.add(MintOrgAdminTokenInput, { name: "MintOrgAdminTokenInput" });
publicNames.add(OrganizationView, { name: "OrganizationView" });
publicNames.add(UserView, { name: "UserView" });
publicNames.add(ApiKeyView, { name: "ApiKeyView" });
publicNames.add(ApiKeyWithUsageView, { name: "ApiKeyWithUsageView" });
publicNames.add(ApiKeyTrafficView, { name: "ApiKeyTrafficView" });
publicNames.add(CreatedApiKeyView, { name: "CreatedApiKeyView" });
publicNames.add(RotatedApiKeyView, { name: "RotatedApiKeyView" });
publicNames.add(ClientCredentialView, { name: "ClientCredentialView" });
publicNames.add(CreateTrustedIssuerInput, { name: "CreateTrustedIssuerInput" });
publicNames.add(TrustedIssuerView, { name: "TrustedIssuerView" });
publicNames.add(CreatedClientCredentialView, { name: "CreatedClientCredentialView" });
publicNames.add(OrgAdminTokenView, { name: "OrgAdminTokenView" });
publicNames.add(AdminTokenView, { name: "AdminTokenView" });
publicNames.add(CreateManagerSignInLinkInput, { name: "CreateManagerSignInLinkInput" });
publicNames.add(ManagerSignInLinkView, { name: "ManagerSignInLinkView" });
