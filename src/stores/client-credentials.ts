/**
 * Client credentials (spec 2.1): client_id plus a secret stored only as its SHA-256, owned by a
 * user of an organization. Revocation also writes a tombstone that bearer authentication reads,
 * so outstanding access tokens stop working (see README, "Revocation").
 */
import { MAX_TOKEN_TTL_SECONDS } from "../config";
import type { Deps } from "../deps";
import { isoTime } from "../deps";
import { notFound } from "../errors";
import { sha256Hex } from "../lib/crypto";
import { CLIENT_ID_PATTERN, newClientId, newClientSecret } from "../lib/ids";
import type { ClientCredentialView } from "../schemas/admin";
import type { ListQuery } from "../schemas/common";
import { ClientCredentialRecord, RevokedClientRecord } from "../schemas/records";
import { getRecord, listPage, putRecord, type Page } from "./kv";
import { kvKeys, lastSegment } from "./kv-keys";
import { getUser } from "./users";

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

export async function getClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  clientId: string,
): Promise<ClientCredentialRecord> {
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
  return listPage(deps.kv, kvKeys.clientCredentialIndexPrefix(orgId, userId), query, (key) =>
    findClientCredential(deps, lastSegment(key)),
  );
}

/** Idempotent. The tombstone outlives every token the credential could have issued. */
export async function revokeClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  clientId: string,
): Promise<ClientCredentialRecord> {
  const current = await getClientCredential(deps, orgId, userId, clientId);
  if (current.revoked_at !== null) return current;
  const revokedAt = isoTime(deps.now());
  const revoked: ClientCredentialRecord = { ...current, revoked_at: revokedAt };
  await Promise.all([
    putRecord(deps.kv, kvKeys.clientCredential(clientId), ClientCredentialRecord, revoked),
    putRecord(
      deps.kv,
      kvKeys.revokedClient(clientId),
      RevokedClientRecord,
      { client_id: clientId, revoked_at: revokedAt },
      { expirationTtl: MAX_TOKEN_TTL_SECONDS + 3600 },
    ),
  ]);
  return revoked;
}

/** Records a use for the manager app's "last used", at most once a minute per credential. */
export async function touchClientCredential(deps: Deps, record: ClientCredentialRecord): Promise<void> {
  const now = deps.now();
  if (record.last_used_at !== null && now - Date.parse(record.last_used_at) < 60_000) return;
  await putRecord(deps.kv, kvKeys.clientCredential(record.client_id), ClientCredentialRecord, { ...record, last_used_at: isoTime(now) });
}

export async function isClientRevoked(deps: Deps, clientId: string): Promise<boolean> {
  return (await deps.kv.get(kvKeys.revokedClient(clientId))) !== null;
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
