/**
 * Users' lifecycle rules. Removing a user revokes every client credential they own first, so
 * their access tokens stop working, then deletes the user; the credentials stay listed as
 * revoked under the user's id.
 */
import type { Deps } from "../deps";
import type { UserRecord } from "../schemas/records";
import { listClientCredentials, revokeClientCredential } from "../stores/client-credentials";
import { deleteUser, getUser } from "../stores/users";

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
  await deleteUser(deps, orgId, userId);
  return user;
}
