/** Users of an organization: the owners of client credentials (spec 2.1, manager app). */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { ID_PATTERN, newUserId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { ListQuery } from "../schemas/common";
import { UserRecord } from "../schemas/records";
import { listClientCredentials, revokeClientCredential } from "./client-credentials";
import { getRecord, listPage, type Page, putRecord } from "./kv";
import { kvKeys } from "./kv-keys";
import { getOrganization } from "./organizations";

export async function createUser(deps: Deps, orgId: string, input: { name: string; email?: string | undefined }): Promise<UserRecord> {
  await getOrganization(deps, orgId);
  const record: UserRecord = {
    id: newUserId(),
    organization_id: orgId,
    name: input.name,
    email: input.email ?? null,
    created_at: isoTime(deps.now()),
  };
  await putRecord(deps.kv, kvKeys.user(orgId, record.id), UserRecord, record);
  return record;
}

export async function getUser(deps: Deps, orgId: string, userId: string): Promise<UserRecord> {
  const user = ID_PATTERN.test(orgId) && ID_PATTERN.test(userId) ? await getRecord(deps.kv, kvKeys.user(orgId, userId), UserRecord) : null;
  if (user === null) throw notFound("User");
  return user;
}

export async function listUsers(deps: Deps, orgId: string, query: ListQuery): Promise<Page<UserRecord>> {
  await getOrganization(deps, orgId);
  return listPage(deps.kv, kvKeys.usersPrefix(orgId), query, (key) => getRecord(deps.kv, key, UserRecord));
}

/**
 * Removes a user: every client credential they own is revoked first (so their tokens stop
 * working), then the user record goes. Credentials stay listed as revoked under the user's id.
 */
export async function removeUser(deps: Deps, orgId: string, userId: string): Promise<UserRecord> {
  const user = await getUser(deps, orgId, userId);
  let cursor: string | undefined;
  do {
    const page = await listClientCredentials(deps, orgId, userId, { limit: 100, ...(cursor ? { cursor } : {}) });
    await Promise.all(page.items.map((c) => revokeClientCredential(deps, orgId, userId, c.client_id)));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  await deps.kv.delete(kvKeys.user(orgId, userId));
  return user;
}
