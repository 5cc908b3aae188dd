/** Organizations: the tenant boundary. Each lives in its own object; the directory lists them. */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { ID_PATTERN, newOrganizationId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { directoryObject, organizationObject, reach, unwrap } from "../objects/stubs";
import type { DeletedOrganizationView, UpdateOrganizationInput } from "../schemas/admin";
import type { OrganizationRecord, OrgQuota } from "../schemas/records";
import { type Actor, applied } from "./changes";

export async function createOrganization(deps: Deps, input: { name: string }, actor: Actor): Promise<OrganizationRecord> {
  const org: OrganizationRecord = { id: newOrganizationId(), name: input.name, created_at: isoTime(deps.now()) };
  return unwrap(await reach("organization", () => organizationObject(deps, org.id).create(org, actor)));
}

/** The organization, or 404; ids that cannot be ours are refused without reaching an object. */
export async function getOrganization(deps: Deps, orgId: string): Promise<OrganizationRecord & { limits: OrgQuota | null }> {
  if (!ID_PATTERN.test(orgId) || !orgId.startsWith("org_")) throw notFound("Organization");
  return unwrap(await reach("organization", () => organizationObject(deps, orgId).organization()));
}

/** Sets, changes or removes the organization's shared quota; in effect on its keys' next requests once answered. */
export async function updateOrganizationQuota(
  deps: Deps,
  orgId: string,
  limits: UpdateOrganizationInput["limits"],
  actor: Actor,
): Promise<OrganizationRecord & { limits: OrgQuota | null }> {
  const change = unwrap(
    await reach("organization", () =>
      organization(deps, orgId).updateQuota(
        limits === null ? null : { per_second: limits.per_second, per_day: limits.per_day, per_month: limits.per_month },
        actor,
      ),
    ),
  );
  return applied(change, "The organization's quota");
}

export async function listOrganizations(deps: Deps, page: PageRequest): Promise<Page<OrganizationRecord>> {
  return unwrap(await reach("directory", () => directoryObject(deps).list(page)));
}

/** The organization's object, after checking the id is one of ours. */
export function organization(deps: Deps, orgId: string) {
  if (!ID_PATTERN.test(orgId) || !orgId.startsWith("org_")) throw notFound("Organization");
  return organizationObject(deps, orgId);
}

/**
 * Deletes an organization (operator only): every API key, client credential, access token,
 * administrator token and manager session stops working on the very next request everywhere, and
 * every webhook configuration is deleted, so that each endpoint concludes its pending deliveries
 * without a request and sends nothing more, even for an attempt already under way. The deletion is
 * recorded first; the organization's object then drives each part to its end (retried by its
 * alarm), and the answer is 200 once all have landed, else 503 "recorded, still being applied".
 * Repeating it answers the same while anything is pending, and 404 once the organization is gone.
 * Its data is erased ERASE_AFTER_DAYS later; its audit log is kept for its retention.
 */
export async function deleteOrganization(deps: Deps, orgId: string, actor: Actor): Promise<DeletedOrganizationView> {
  const org = organization(deps, orgId);
  return applied(unwrap(await reach("organization", () => org.deleteOrganization(actor, deps.now()))), "The deletion");
}
