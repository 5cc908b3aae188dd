/**
 * Storage of API keys (spec 2.2): the record is addressed by the SHA-256 of the key, so
 * authentication is one KV read and the key itself is never stored; an id index serves the
 * operator API. Records read for authentication are cached in the isolate for
 * API_KEY_CACHE_TTL_MS. The rules (issuing, limits, revocation) live in auth/api-keys.ts.
 */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { IsolateCache } from "../lib/cache";
import { sha256Hex } from "../lib/crypto";
import { ID_PATTERN } from "../lib/ids";
import type { ApiKeyView } from "../schemas/admin";
import type { ListQuery } from "../schemas/common";
import { ApiKeyIndexRecord, ApiKeyRecord, type Limits } from "../schemas/records";
import { getRecord, listPage, type Page, putRecord } from "./kv";
import { kvKeys } from "./kv-keys";
import { getOrganization } from "./organizations";

/**
 * How long an isolate may serve a key record without re-reading KV. Revocation reaches other
 * isolates within this plus KV propagation (about 60 s); limits are not affected (they live in
 * the rate limiter). Revoking or updating through this isolate drops its entry at once.
 */
export const API_KEY_CACHE_TTL_MS = 10_000;
const recordsByHash = new IsolateCache<ApiKeyRecord>({ ttlMs: API_KEY_CACHE_TTL_MS, maxEntries: 10_000 });

/** Stores a new key's record and the id index that the operator API finds it by. */
export async function insertApiKey(deps: Deps, record: ApiKeyRecord): Promise<void> {
  await Promise.all([
    putRecord(deps.kv, kvKeys.apiKeyByHash(record.key_hash), ApiKeyRecord, record),
    putRecord(deps.kv, kvKeys.apiKeyIndex(record.organization_id, record.id), ApiKeyIndexRecord, { key_hash: record.key_hash }),
  ]);
}

/** The record for a presented key, or null. Callers check `revoked_at`. */
export async function findApiKeyBySecret(deps: Deps, secret: string): Promise<ApiKeyRecord | null> {
  const hash = await sha256Hex(secret);
  const cached = recordsByHash.get(hash, deps.now());
  if (cached !== undefined) return cached;
  const record = await getRecord(deps.kv, kvKeys.apiKeyByHash(hash), ApiKeyRecord);
  // Unknown keys are not cached: a key created a moment ago must work as soon as KV has it.
  if (record !== null) recordsByHash.set(hash, record, deps.now());
  return record;
}

export async function saveApiKey(deps: Deps, record: ApiKeyRecord): Promise<void> {
  recordsByHash.delete(record.key_hash);
  await putRecord(deps.kv, kvKeys.apiKeyByHash(record.key_hash), ApiKeyRecord, record);
}

export async function getApiKey(deps: Deps, orgId: string, keyId: string): Promise<ApiKeyRecord> {
  const index =
    ID_PATTERN.test(orgId) && ID_PATTERN.test(keyId) ? await getRecord(deps.kv, kvKeys.apiKeyIndex(orgId, keyId), ApiKeyIndexRecord) : null;
  const record = index && (await getRecord(deps.kv, kvKeys.apiKeyByHash(index.key_hash), ApiKeyRecord));
  if (!record) throw notFound("API key");
  return record;
}

export async function listApiKeys(deps: Deps, orgId: string, query: ListQuery): Promise<Page<ApiKeyRecord>> {
  await getOrganization(deps, orgId);
  return listPage(deps.kv, kvKeys.apiKeyIndexPrefix(orgId), query, async (key) => {
    const index = await getRecord(deps.kv, key, ApiKeyIndexRecord);
    return index && getRecord(deps.kv, kvKeys.apiKeyByHash(index.key_hash), ApiKeyRecord);
  });
}

export function effectiveLimits(record: ApiKeyRecord, defaults: Limits): Limits {
  return {
    per_second: record.limits.per_second ?? defaults.per_second,
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
    status: record.revoked_at === null ? "active" : "revoked",
    created_at: record.created_at,
    revoked_at: record.revoked_at,
  };
}
