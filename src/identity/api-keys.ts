/**
 * API keys (spec 2.2, 8): issued by operators with optional limit overrides, changed and revoked
 * by them, and presented by clients as `x-api-key`. The key itself is shown once and never
 * stored; the organization's object keeps its SHA-256, and the key's own object (named by that
 * hash) holds what every request needs: status, limits, counts. Changes are made in the
 * organization's object and pushed to the key's object before they are acknowledged.
 */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { sha256Hex } from "../lib/crypto";
import { ID_PATTERN, newApiKeyId, newApiKeySecret } from "../lib/ids";
import { seriesOf } from "../lib/series";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { keyObject, reach, unwrap } from "../objects/stubs";
import type { Decision } from "../ratelimit/windows";
import type { ApiKeyTrafficView, ApiKeyView, ChangeCreditsInput, UpdateApiKeyInput } from "../schemas/admin";
import {
  type ApiKeyRecord,
  type CreditsRefill,
  type LimitOverrides,
  type Limits,
  type LocationHint,
  MAX_KEY_PER_SECOND,
} from "../schemas/records";
import { type Actor, applied } from "./changes";
import { organization } from "./organizations";

export async function createApiKey(
  deps: Deps,
  orgId: string,
  input: {
    name?: string | undefined;
    limits?: LimitOverrides | undefined;
    location_hint?: LocationHint | undefined;
    credits?: { remaining: number; refill?: CreditsRefill | undefined } | undefined;
  },
  actor: Actor,
): Promise<{ record: ApiKeyRecord; secret: string }> {
  const secret = newApiKeySecret();
  const key = {
    id: newApiKeyId(),
    name: input.name ?? null,
    key_hash: await sha256Hex(secret),
    key_hint: secret.slice(-4),
    limits: definedLimits(input.limits ?? {}),
    location_hint: input.location_hint ?? null,
    created_at: isoTime(deps.now()),
    credits: input.credits ? { base: input.credits.remaining, epoch: 1, added: 0, refill: input.credits.refill ?? null } : null,
  };
  const change = unwrap(await reach("organization", () => organization(deps, orgId).createKey(key, actor)));
  // A key object that has not received the key yet refuses it (fails closed) until the
  // organization's retry lands; the key is returned either way, since it is shown only now.
  return { record: change.record, secret };
}

export async function getApiKey(deps: Deps, orgId: string, keyId: string): Promise<ApiKeyRecord> {
  if (!ID_PATTERN.test(keyId)) throw notFound("API key");
  return unwrap(await reach("organization", () => organization(deps, orgId).getKey(keyId)));
}

export async function listApiKeys(deps: Deps, orgId: string, page: PageRequest): Promise<Page<ApiKeyRecord>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).listKeys(page)));
}

/** Renames the key and/or changes its overrides (`null` restores a default): in effect on its next request. */
export async function updateApiKey(
  deps: Deps,
  orgId: string,
  keyId: string,
  input: UpdateApiKeyInput,
  actor: Actor,
): Promise<ApiKeyRecord> {
  if (!ID_PATTERN.test(keyId)) throw notFound("API key");
  // The patch is merged inside the organization's transaction: two concurrent PATCHes of
  // different limits both hold, whatever their order.
  const change = unwrap(
    await reach("organization", () =>
      organization(deps, orgId).updateKey(keyId, { name: input.name, limits: input.limits, credits: input.credits }, actor),
    ),
  );
  return applied(change, "The change to the API key");
}

/** Idempotent; refused from the next request on once this answers. */
export async function revokeApiKey(deps: Deps, orgId: string, keyId: string, actor: Actor): Promise<ApiKeyRecord> {
  if (!ID_PATTERN.test(keyId)) throw notFound("API key");
  const change = unwrap(await reach("organization", () => organization(deps, orgId).revokeKey(keyId, actor, deps.now())));
  return applied(change, "The revocation of the API key");
}

/** The key's requests over time (admitted and refused, by hour and by day), from its own object. */
export async function keyTraffic(deps: Deps, key: Pick<ApiKeyRecord, "key_hash">): Promise<ApiKeyTrafficView> {
  const now = deps.now();
  const rows = await reach("API key object", () => keyObject(deps, key.key_hash).traffic());
  return seriesOf(rows, ["admitted", "refused"] as const, now);
}

/** The key's current usage, from its own object. */
export async function keyUsage(deps: Deps, key: Pick<ApiKeyRecord, "key_hash">): Promise<Decision | null> {
  const now = deps.now();
  return reach("API key object", () => keyObject(deps, key.key_hash).usage(deps.config.defaultLimits, now));
}

/** The limits a key is served at (a per-second limit stored before the ceiling counts as MAX_KEY_PER_SECOND). */
export function effectiveLimits(record: ApiKeyRecord, defaults: Limits): Limits {
  return {
    per_second: Math.min(record.limits.per_second ?? defaults.per_second, MAX_KEY_PER_SECOND),
    per_day: record.limits.per_day ?? defaults.per_day,
  };
}

export function apiKeyView(record: ApiKeyRecord, defaults: Limits): ApiKeyView {
  return {
    id: record.id,
    organization_id: record.organization_id,
    name: record.name,
    hint: `kw_live_ak_...${record.key_hint}`,
    limits: effectiveLimits(record, defaults),
    limit_overrides: {
      per_second: record.limits.per_second !== undefined,
      per_day: record.limits.per_day !== undefined,
    },
    location_hint: record.location_hint,
    status: record.revoked_at === null ? "active" : "revoked",
    created_at: record.created_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at,
    credits: record.credits === null ? null : { refill: record.credits.refill },
  };
}

/**
 * A top-up (`add`) or a reset (`set`) of a key's credits, recorded (and audited) by the
 * organization and answered once the key's object has it, like every change of a key.
 */
export async function changeCredits(
  deps: Deps,
  orgId: string,
  keyId: string,
  input: ChangeCreditsInput,
  actor: Actor,
): Promise<ApiKeyRecord> {
  if (!ID_PATTERN.test(keyId)) throw notFound("API key");
  const change = unwrap(await reach("organization", () => organization(deps, orgId).changeCredits(keyId, input, actor)));
  return applied(change, "The change to the API key's credits");
}

function definedLimits(limits: LimitOverrides): LimitOverrides {
  return {
    ...(limits.per_second !== undefined ? { per_second: limits.per_second } : {}),
    ...(limits.per_day !== undefined ? { per_day: limits.per_day } : {}),
  };
}
