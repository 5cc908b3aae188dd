/**
 * Client credentials (spec 2.1): client_id plus a secret stored only as its SHA-256, owned by a
 * user of an organization. Revocation also writes a tombstone that bearer authentication reads,
 * so outstanding access tokens stop working (see README, "Revocation").
 */
import { MAX_TOKEN_TTL_SECONDS } from "../config";
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { IsolateCache } from "../lib/cache";
import { sha256Hex } from "../lib/crypto";
import { CLIENT_ID_PATTERN, newClientId, newClientSecret } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { ClientCredentialView } from "../schemas/admin";
import type { ListQuery } from "../schemas/common";
import { ClientCredentialRecord, RevokedClientRecord } from "../schemas/records";
import { getRecord, listPage, type Page, putRecord } from "./kv";
import { kvKeys, lastSegment } from "./kv-keys";
import { getUser } from "./users";

/**
 * Per-isolate caches for the hot paths (token issuance, bearer checks), like the API key cache:
 * an entry may be up to AUTH_CACHE_TTL_MS old; writes made through this isolate update it at
 * once. Revocation therefore reaches other isolates within this plus KV propagation (~60 s).
 */
export const AUTH_CACHE_TTL_MS = 10_000;
const credentials = new IsolateCache<ClientCredentialRecord>({ ttlMs: AUTH_CACHE_TTL_MS, maxEntries: 10_000 });
const revoked = new IsolateCache<boolean>({ ttlMs: AUTH_CACHE_TTL_MS, maxEntries: 50_000 });

export async function createClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  input: { name?: string | undefined },
): Promise<{ record: ClientCredentialRecord; secret: string }> {
  await getUser(deps, orgId, userId);
  const secret = newClientSecret();
  const record: ClientCredentialRecord = {
    client_id: newClientId(),
    organization_id: orgId,
    user_id: userId,
    name: input.name ?? null,
    secret_hash: await sha256Hex(secret),
    created_at: isoTime(deps.now()),
    last_used_at: null,
    revoked_at: null,
  };
  await Promise.all([
    putRecord(deps.kv, kvKeys.clientCredential(record.client_id), ClientCredentialRecord, record),
    deps.kv.put(kvKeys.clientCredentialIndex(orgId, userId, record.client_id), ""),
  ]);
  return { record, secret };
}

/** The credential for a client_id, or null (also for ids that cannot be ours). */
export async function findClientCredential(deps: Deps, clientId: string): Promise<ClientCredentialRecord | null> {
  if (!CLIENT_ID_PATTERN.test(clientId)) return null;
  return getRecord(deps.kv, kvKeys.clientCredential(clientId), ClientCredentialRecord);
}

export async function getClientCredential(deps: Deps, orgId: string, userId: string, clientId: string): Promise<ClientCredentialRecord> {
  const record = await findClientCredential(deps, clientId);
  if (record === null || record.organization_id !== orgId || record.user_id !== userId) {
    throw notFound("Client credential");
  }
  return record;
}

export async function listClientCredentials(
  deps: Deps,
  orgId: string,
  userId: string,
  query: ListQuery,
): Promise<Page<ClientCredentialRecord>> {
  await getUser(deps, orgId, userId);
  return listPage(deps.kv, kvKeys.clientCredentialIndexPrefix(orgId, userId), query, (key) => findClientCredential(deps, lastSegment(key)));
}

/** Idempotent. The tombstone outlives every token the credential could have issued. */
export async function revokeClientCredential(deps: Deps, orgId: string, userId: string, clientId: string): Promise<ClientCredentialRecord> {
  const current = await getClientCredential(deps, orgId, userId, clientId);
  if (current.revoked_at !== null) return current;
  const revokedAt = isoTime(deps.now());
  const updated: ClientCredentialRecord = { ...current, revoked_at: revokedAt };
  credentials.set(clientId, updated, deps.now());
  revoked.set(clientId, true, deps.now());
  await Promise.all([
    putRecord(deps.kv, kvKeys.clientCredential(clientId), ClientCredentialRecord, updated),
    putRecord(
      deps.kv,
      kvKeys.revokedClient(clientId),
      RevokedClientRecord,
      { client_id: clientId, revoked_at: revokedAt },
      { expirationTtl: MAX_TOKEN_TTL_SECONDS + 3600 },
    ),
  ]);
  return updated;
}

/** The credential for client authentication at the token endpoint, from the isolate cache. */
export async function findClientCredentialForAuth(deps: Deps, clientId: string): Promise<ClientCredentialRecord | null> {
  const cached = credentials.get(clientId, deps.now());
  if (cached !== undefined) return cached;
  const record = await findClientCredential(deps, clientId);
  // Unknown ids are not cached: a credential created a moment ago must work as soon as KV has it.
  if (record !== null) credentials.set(clientId, record, deps.now());
  return record;
}

/**
 * Records a use for the manager app's "last used", at most once a minute per credential. The
 * write runs after the response (deps.defer); nothing is scheduled when there is nothing to write.
 */
export function touchClientCredential(deps: Deps, record: ClientCredentialRecord): void {
  const now = deps.now();
  if (record.last_used_at !== null && now - Date.parse(record.last_used_at) < 60_000) return;
  const touched = { ...record, last_used_at: isoTime(now) };
  credentials.set(record.client_id, touched, now);
  deps.defer(putRecord(deps.kv, kvKeys.clientCredential(record.client_id), ClientCredentialRecord, touched));
}

export async function isClientRevoked(deps: Deps, clientId: string): Promise<boolean> {
  const cached = revoked.get(clientId, deps.now());
  if (cached !== undefined) return cached;
  const isRevoked = (await deps.kv.get(kvKeys.revokedClient(clientId))) !== null;
  revoked.set(clientId, isRevoked, deps.now());
  return isRevoked;
}

export function clientCredentialView(record: ClientCredentialRecord): ClientCredentialView {
  return {
    client_id: record.client_id,
    organization_id: record.organization_id,
    user_id: record.user_id,
    name: record.name,
    status: record.revoked_at === null ? "active" : "revoked",
    created_at: record.created_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at,
  };
}
