/** Organizations: the tenant boundary. Each lives in its own object; the directory lists them. */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { ID_PATTERN, newOrganizationId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { directoryObject, organizationObject, reach, unwrap } from "../objects/stubs";
import type { OrganizationRecord } from "../schemas/records";
import type { Actor } from "./changes";

export async function createOrganization(deps: Deps, input: { name: string }, actor: Actor): Promise<OrganizationRecord> {
  const org: OrganizationRecord = { id: newOrganizationId(), name: input.name, created_at: isoTime(deps.now()) };
  return unwrap(await reach("organization", () => organizationObject(deps, org.id).create(org, actor)));
}

/** The organization, or 404; ids that cannot be ours are refused without reaching an object. */
export async function getOrganization(deps: Deps, orgId: string): Promise<OrganizationRecord> {
  if (!ID_PATTERN.test(orgId) || !orgId.startsWith("org_")) throw notFound("Organization");
  return unwrap(await reach("organization", () => organizationObject(deps, orgId).organization()));
}

export async function listOrganizations(deps: Deps, page: PageRequest): Promise<Page<OrganizationRecord>> {
  return unwrap(await reach("directory", () => directoryObject(deps).list(page)));
}

/** The organization's object, after checking the id is one of ours. */
export function organization(deps: Deps, orgId: string) {
  if (!ID_PATTERN.test(orgId) || !orgId.startsWith("org_")) throw notFound("Organization");
  return organizationObject(deps, orgId);
}
