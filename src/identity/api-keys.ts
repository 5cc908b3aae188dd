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
import { apiKeyHint, ID_PATTERN, newApiKeyId, newApiKeySecret, newRotatedApiKeySecret } from "../lib/ids";
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
    key_hint: apiKeyHint(secret),
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

/**
 * Rotates the key's secret (issue 29): the same key (id, limits, counters, credits, quota, traffic)
 * answers to a new secret, shown only here; the one it replaces works for `graceSeconds` more, both
 * counted against the key's one set of limits. The new secret carries the key's object's id, since
 * that object stays named by the first secret's hash (lib/ids.ts). It is returned even while the
 * key's object has still to learn it (the organization's alarm retries the push; until it lands the
 * old secret works and the new one is refused), since it is shown only now; `applied` says which.
 */
export async function rotateApiKey(
  deps: Deps,
  orgId: string,
  keyId: string,
  graceSeconds: number,
  actor: Actor,
): Promise<{ record: ApiKeyRecord; secret: string; applied: boolean }> {
  const current = await getApiKey(deps, orgId, keyId);
  const secret = newRotatedApiKeySecret(deps.keys.idFromName(current.object_hash).toString());
  const rotated = { hash: await sha256Hex(secret), hint: apiKeyHint(secret) };
  const change = unwrap(
    await reach("organization", () => organization(deps, orgId).rotateKey(keyId, rotated, graceSeconds * 1000, actor, deps.now())),
  );
  return { record: change.record, secret, applied: change.pending === 0 };
}

/** Ends a rotation's grace at once: the replaced secret is refused from its next request; answered once in effect. */
export async function endRotationGrace(deps: Deps, orgId: string, keyId: string, actor: Actor): Promise<ApiKeyRecord> {
  if (!ID_PATTERN.test(keyId)) throw notFound("API key");
  const change = unwrap(await reach("organization", () => organization(deps, orgId).endRotationGrace(keyId, actor, deps.now())));
  return applied(change, "The end of the previous secret's grace");
}

/** The key's requests over time (admitted and refused, by hour and by day), from its own object. */
export async function keyTraffic(deps: Deps, key: Pick<ApiKeyRecord, "object_hash">): Promise<ApiKeyTrafficView> {
  const now = deps.now();
  const rows = await reach("API key object", () => keyObject(deps, key.object_hash).traffic());
  return seriesOf(rows, ["admitted", "refused"] as const, now);
}

/** The key's current usage, from its own object. */
export async function keyUsage(deps: Deps, key: Pick<ApiKeyRecord, "object_hash">): Promise<Decision | null> {
  const now = deps.now();
  return reach("API key object", () => keyObject(deps, key.object_hash).usage(deps.config.defaultLimits, now));
}

/** The limits a key is served at (a per-second limit stored before the ceiling counts as MAX_KEY_PER_SECOND). */
export function effectiveLimits(record: ApiKeyRecord, defaults: Limits): Limits {
  return {
    per_second: Math.min(record.limits.per_second ?? defaults.per_second, MAX_KEY_PER_SECOND),
    per_day: record.limits.per_day ?? defaults.per_day,
  };
}

export function apiKeyView(record: ApiKeyRecord, defaults: Limits, now: number = Date.now()): ApiKeyView {
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
    // A grace that has ended is history (the audit log has it), not a state.
    previous_secret_expires_at:
      record.previous_secret_expires_at !== null && Date.parse(record.previous_secret_expires_at) > now
        ? record.previous_secret_expires_at
        : null,
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
