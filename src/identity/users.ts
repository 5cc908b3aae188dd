/**
 * Users of an organization: the owners of client credentials (spec 2.1, manager app). Removing a
 * user revokes every credential they own in the same transaction, so their access tokens stop
 * working on the next request; the credentials stay listed, revoked, under the user's id.
 */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { ID_PATTERN, newUserId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { UserRecord } from "../schemas/records";
import { type Actor, applied } from "./changes";
import { organization } from "./organizations";

export async function createUser(
  deps: Deps,
  orgId: string,
  input: { name: string; email?: string | undefined },
  actor: Actor,
): Promise<UserRecord> {
  const user = { id: newUserId(), name: input.name, email: input.email ?? null, created_at: isoTime(deps.now()) };
  return unwrap(await reach("organization", () => organization(deps, orgId).createUser(user, actor)));
}

export async function getUser(deps: Deps, orgId: string, userId: string): Promise<UserRecord> {
  if (!ID_PATTERN.test(userId)) throw notFound("User");
  return unwrap(await reach("organization", () => organization(deps, orgId).getUser(userId)));
}

export async function listUsers(deps: Deps, orgId: string, page: PageRequest): Promise<Page<UserRecord>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).listUsers(page)));
}

export async function removeUser(deps: Deps, orgId: string, userId: string, actor: Actor): Promise<UserRecord> {
  if (!ID_PATTERN.test(userId)) throw notFound("User");
  const change = unwrap(await reach("organization", () => organization(deps, orgId).removeUser(userId, actor, deps.now())));
  return applied(change, "The removal of the user (and the revocation of their credentials)");
}
