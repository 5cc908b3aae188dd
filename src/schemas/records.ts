/**
 * Shapes of the records the service keeps (identity records as the objects return them, webhook
 * records as KV holds them) and of the access-token claims. Every read from KV is parsed with
 * these, so a corrupt or outdated value surfaces as a logged server error rather than as
 * undefined behaviour. docs/storage.md lists where each lives.
 */
import * as z from "zod";
import { Timestamp } from "./common";
import { Jwks } from "./jose";

/**
 * What one Durable Object serves: Cloudflare documents a soft limit of about 1,000 requests/s per
 * object, and keyway's bench pushes every scenario through key objects and measures 736 to 1,184
 * requests/s for the whole local stack (docs/performance.md). A key allowed more is served by
 * shards (objects/key.ts), and the default every key gets (RATE_LIMIT_PER_SECOND) stays within it.
 */
export const SINGLE_OBJECT_PER_SECOND = 1000;

/**
 * The most requests per second one API key may be allowed: ten shards of SINGLE_OBJECT_PER_SECOND
 * (issue 33; docs/storage.md, "Limits past one object"). The API refuses more, so it never accepts
 * a limit it would answer with 503.
 */
export const MAX_KEY_PER_SECOND = 10_000;

/** Stored limits: at most MAX_KEY_PER_SECOND per second. */
export const Limits = z.object({
  per_second: z.number().int().min(1).max(MAX_KEY_PER_SECOND),
  per_day: z.number().int().min(1).max(100_000_000),
});
export type Limits = z.output<typeof Limits>;

/** Per-key overrides; an absent field means "use the default from the vars". */
export const LimitOverrides = Limits.partial();
export type LimitOverrides = z.output<typeof LimitOverrides>;

export const OrganizationRecord = z.object({
  id: z.string(),
  name: z.string(),
  created_at: Timestamp,
});
export type OrganizationRecord = z.output<typeof OrganizationRecord>;

export const UserRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  email: z.string().nullable(),
  created_at: Timestamp,
});
export type UserRecord = z.output<typeof UserRecord>;

/**
 * Cloudflare's Durable Object location hints: where an object is created when it is first used
 * (docs/latency.md). Western and eastern North America, South America, western and eastern
 * Europe, Asia-Pacific, Oceania, Africa, the Middle East.
 */
export const LocationHint = z.enum(["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"], {
  error: "must be one of wnam, enam, sam, weur, eeur, apac, oc, afr, me",
});
export type LocationHint = z.output<typeof LocationHint>;

/** A refill of credits: the balance is set back to `amount` at each UTC day or month boundary. */
export const CreditsRefill = z.strictObject({
  amount: z.number({ error: "must be a number" }).int({ error: "must be an integer" }).min(1, { error: "must be at least 1" }).max(1e12),
  interval: z.enum(["day", "month"], { error: 'must be "day" or "month"' }),
});
export type CreditsRefill = z.output<typeof CreditsRefill>;

/**
 * A key's credits as its organization keeps them (the live balance is the key's object's): the
 * balance last set (`base`, by creation or a reset; `epoch` counts the sets), what was added by
 * top-ups since (`added`), and the refill. The key's object applies a newer epoch as a reset and
 * a larger `added` as the difference, so pushes that arrive late or twice change nothing twice.
 */
export const KeyCredits = z.object({
  base: z.number().int().min(0),
  epoch: z.number().int().min(0),
  added: z.number().int().min(0),
  refill: CreditsRefill.nullable(),
});
export type KeyCredits = z.output<typeof KeyCredits>;

/**
 * An organization's shared quota (product brief, "Quotas and credits"): limits counted over all its
 * keys together. Up to QUOTA_EXACT_PER_SECOND (what its one QuotaObject serves, and the figure that
 * applies when no `per_second` is set) every request is counted there; above, up to
 * QUOTA_CEILING_PER_SECOND, its keys' objects hold slices of the budget (objects/quota.ts).
 */
export const QUOTA_EXACT_PER_SECOND = SINGLE_OBJECT_PER_SECOND;
export const QUOTA_CEILING_PER_SECOND = 10_000;
export const OrgQuota = z.object({
  per_second: z.number().int().min(1).max(QUOTA_CEILING_PER_SECOND).optional(),
  per_day: z.number().int().min(1).max(1e10).optional(),
  per_month: z.number().int().min(1).max(1e11).optional(),
});
export type OrgQuota = z.output<typeof OrgQuota>;

export const ApiKeyRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string().nullable(),
  /** SHA-256 (hex) of the whole key; the key itself is never stored. */
  key_hash: z.string().regex(/^[0-9a-f]{64}$/),
  /** The name of the key's object: the hash of its first secret (a rotation keeps the object). */
  object_hash: z.string().regex(/^[0-9a-f]{64}$/),
  /** Until when the secret a rotation replaced still works (its grace); null: no such secret. */
  previous_secret_expires_at: Timestamp.nullable().default(null),
  /** Last four characters, so people can tell keys apart in lists. */
  key_hint: z.string(),
  limits: LimitOverrides,
  /** Where the key's object is created (near its clients); null: near the organization's object. */
  location_hint: LocationHint.nullable().default(null),
  created_at: Timestamp,
  /** Last admitted request, noted by the key's object at most once a minute. */
  last_used_at: Timestamp.nullable().default(null),
  revoked_at: Timestamp.nullable(),
  /** Credits, when the key carries them (issue 24). */
  credits: KeyCredits.nullable().default(null),
});
export type ApiKeyRecord = z.output<typeof ApiKeyRecord>;

export const ClientCredentialRecord = z.object({
  client_id: z.string(),
  organization_id: z.string(),
  user_id: z.string(),
  name: z.string().nullable(),
  /**
   * How the client authenticates: its secret (client_secret_basic or client_secret_post), or a
   * JWT signed with one of its `jwks` keys (private_key_jwt, RFC 7523).
   */
  auth_method: z.enum(["client_secret", "private_key_jwt", "federated_jwt"]),
  /** SHA-256 (hex) of the client secret; for private_key_jwt and federated_jwt, of a random value nobody knows. */
  secret_hash: z.string().regex(/^[0-9a-f]{64}$/),
  /** The public keys of a private_key_jwt client; null for a secret, a key set URL or a federated client. */
  jwks: Jwks.nullable(),
  /** Where a private_key_jwt client publishes its keys (issue 44); null otherwise. */
  jwks_uri: z.string().nullable().default(null),
  /** A federated_jwt client's trusted issuer and exact subject (issue 44); null otherwise. */
  federated: z.object({ issuer: z.string(), subject: z.string() }).nullable().default(null),
  /** What its access tokens are (issue 44): opaque (keyway's) or RFC 9068 JWTs. */
  access_token_strategy: z.enum(["opaque", "jwt"]).default("opaque"),
  /** The scopes its tokens may have; null: every scope. */
  scopes: z.array(z.string()).nullable(),
  /** Its tokens must be DPoP-bound (RFC 9449 `dpop_bound_access_tokens`). */
  dpop_bound: z.boolean(),
  /** +1 on each change of the above (a KV copy older than the key objects know is not trusted). */
  version: z.number().int(),
  created_at: Timestamp,
  /** Last successful token issuance, written at most once a minute. */
  last_used_at: Timestamp.nullable().default(null),
  revoked_at: Timestamp.nullable(),
});
export type ClientCredentialRecord = z.output<typeof ClientCredentialRecord>;

/** An issuer whose JWTs authenticate the organization's federated_jwt credentials (issue 44). */
export const TrustedIssuerRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string().nullable(),
  issuer: z.string(),
  jwks_uri: z.string(),
  /** `registered` when the request gave `jwks_uri`, `discovered` when keyway found it in the issuer's metadata. */
  jwks_uri_source: z.enum(["registered", "discovered"]),
  assertion_reuse: z.enum(["once", "until_expiry"]),
  max_assertion_lifetime_seconds: z.number().int(),
  /** The key set keyway holds for it: when it was fetched and its key ids; null until fetched. */
  key_set: z.object({ fetched_at: Timestamp, key_ids: z.array(z.string().nullable()) }).nullable(),
  created_at: Timestamp,
});
export type TrustedIssuerRecord = z.output<typeof TrustedIssuerRecord>;

export const OrgAdminTokenRecord = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string().nullable(),
  token_hash: z.string().regex(/^[0-9a-f]{64}$/),
  created_at: Timestamp,
  expires_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
});
export type OrgAdminTokenRecord = z.output<typeof OrgAdminTokenRecord>;

/** Claims inside an access token (auth/access-token.ts). Times are seconds since the epoch. */
export const AccessTokenClaims = z.object({
  v: z.literal(1),
  org: z.string(),
  sub: z.string(),
  cid: z.string(),
  iat: z.number().int(),
  exp: z.number().int(),
  jti: z.string(),
  /** Granted scopes, space-separated (auth/scopes.ts); absent on tokens issued before scopes: all. */
  scope: z.string().optional(),
  /** RFC 9449 6.1: the DPoP key's RFC 7638 thumbprint this token is bound to. */
  cnf: z.object({ jkt: z.string() }).optional(),
  /** A DPoP-bound token's API key id: its proofs' single use is checked by that key's object. */
  akid: z.string().optional(),
  /** Set (not signed) when the token was an RFC 9068 JWT (issue 44) rather than a `kw_at_` token. */
  fmt: z.literal("jwt").optional(),
});
export type AccessTokenClaims = z.output<typeof AccessTokenClaims>;
