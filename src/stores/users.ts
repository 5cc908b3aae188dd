/** Storage of an organization's users: the owners of client credentials (spec 2.1, manager app). */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { ID_PATTERN, newUserId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { ListQuery } from "../schemas/common";
import { UserRecord } from "../schemas/records";
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

/** Deletes the user record; auth/users.ts revokes their credentials first. */
export async function deleteUser(deps: Deps, orgId: string, userId: string): Promise<void> {
  await deps.kv.delete(kvKeys.user(orgId, userId));
}

export async function listUsers(deps: Deps, orgId: string, query: ListQuery): Promise<Page<UserRecord>> {
  await getOrganization(deps, orgId);
  return listPage(deps.kv, kvKeys.usersPrefix(orgId), query, (key) => getRecord(deps.kv, key, UserRecord));
}
