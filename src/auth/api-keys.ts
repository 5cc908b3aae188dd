/**
 * API keys (spec 2.2, 5.1, 8): issued by operators with optional limit overrides, changed and
 * revoked by them, and presented by clients as `x-api-key` on every /v1 request. Limit overrides
 * are written to the key's rate limiter first (authoritative: it applies them from the next
 * request) and then to the stored record (display). A missing, unknown or revoked key is refused
 * before any other work, rate limiting included.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { sha256Hex } from "../lib/crypto";
import { API_KEY_PATTERN, newApiKeyId, newApiKeySecret } from "../lib/ids";
import { isoTime } from "../lib/time";
import { setKeyLimits } from "../ratelimit/service";
import type { UpdateApiKeyInput } from "../schemas/admin";
import type { ApiKeyRecord, LimitOverrides } from "../schemas/records";
import { findApiKeyBySecret, getApiKey, insertApiKey, saveApiKey } from "../stores/api-keys";
import { getOrganization } from "../stores/organizations";

export const API_KEY_HEADER = "x-api-key";

export async function authenticateApiKey(deps: Deps, presented: string | undefined): Promise<ApiKeyRecord> {
  if (presented === undefined || presented === "") {
    throw new ApiError(
      "invalid_api_key",
      "The x-api-key header is missing. Every /v1 request needs the API key issued by the support team.",
    );
  }
  // Keys we issue have one shape; anything else is refused without a storage read.
  const record = API_KEY_PATTERN.test(presented) ? await findApiKeyBySecret(deps, presented) : null;
  if (record === null) throw new ApiError("invalid_api_key", "The x-api-key header does not hold a valid API key.");
  if (record.revoked_at !== null) throw new ApiError("invalid_api_key", "The API key has been revoked.");
  return record;
}

export async function createApiKey(
  deps: Deps,
  orgId: string,
  input: { name?: string | undefined; limits?: LimitOverrides | undefined },
): Promise<{ record: ApiKeyRecord; secret: string }> {
  await getOrganization(deps, orgId);
  const secret = newApiKeySecret();
  const record: ApiKeyRecord = {
    id: newApiKeyId(),
    organization_id: orgId,
    name: input.name ?? null,
    key_hash: await sha256Hex(secret),
    key_hint: secret.slice(-4),
    limits: stripUndefined(input.limits ?? {}),
    created_at: isoTime(deps.now()),
    revoked_at: null,
  };
  // Limiter first: if it is unreachable the key is never stored, let alone returned.
  if (Object.keys(record.limits).length > 0) await setKeyLimits(deps, record.id, record.limits);
  await insertApiKey(deps, record);
  return { record, secret };
}

export async function updateApiKey(deps: Deps, orgId: string, keyId: string, input: UpdateApiKeyInput): Promise<ApiKeyRecord> {
  const current = await getApiKey(deps, orgId, keyId);
  const limits: LimitOverrides = { ...current.limits };
  for (const field of ["per_second", "per_day"] as const) {
    const value = input.limits?.[field];
    if (value === null) delete limits[field];
    else if (value !== undefined) limits[field] = value;
  }
  const updated: ApiKeyRecord = {
    ...current,
    name: input.name === undefined ? current.name : input.name,
    limits,
  };
  if (input.limits !== undefined) await setKeyLimits(deps, keyId, limits);
  await saveApiKey(deps, updated);
  return updated;
}

/** Revocation is idempotent: revoking a revoked key returns it unchanged. */
export async function revokeApiKey(deps: Deps, orgId: string, keyId: string): Promise<ApiKeyRecord> {
  const current = await getApiKey(deps, orgId, keyId);
  if (current.revoked_at !== null) return current;
  const revoked: ApiKeyRecord = { ...current, revoked_at: isoTime(deps.now()) };
  await saveApiKey(deps, revoked);
  return revoked;
}

function stripUndefined(limits: LimitOverrides): LimitOverrides {
  const out: LimitOverrides = {};
  if (limits.per_second !== undefined) out.per_second = limits.per_second;
  if (limits.per_day !== undefined) out.per_day = limits.per_day;
  return out;
}
