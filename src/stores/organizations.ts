/** Organizations: the tenant boundary. Every user, key and credential belongs to one. */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { ID_PATTERN, newOrganizationId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { ListQuery } from "../schemas/common";
import { OrganizationRecord } from "../schemas/records";
import { getRecord, listPage, type Page, putRecord } from "./kv";
import { kvKeys } from "./kv-keys";

export async function createOrganization(deps: Deps, input: { name: string }): Promise<OrganizationRecord> {
  const record: OrganizationRecord = { id: newOrganizationId(), name: input.name, created_at: isoTime(deps.now()) };
  await putRecord(deps.kv, kvKeys.organization(record.id), OrganizationRecord, record);
  return record;
}

export async function findOrganization(deps: Deps, orgId: string): Promise<OrganizationRecord | null> {
  if (!ID_PATTERN.test(orgId)) return null;
  return getRecord(deps.kv, kvKeys.organization(orgId), OrganizationRecord);
}

export async function getOrganization(deps: Deps, orgId: string): Promise<OrganizationRecord> {
  const org = await findOrganization(deps, orgId);
  if (org === null) throw notFound("Organization");
  return org;
}

export function listOrganizations(deps: Deps, query: ListQuery): Promise<Page<OrganizationRecord>> {
  return listPage(deps.kv, kvKeys.organizationsPrefix(), query, (key) => getRecord(deps.kv, key, OrganizationRecord));
}
