/**
 * Organization administrator tokens: minted by an operator (operator API or manager app), they
 * sign one organization's administrator into the manager app for that organization only. Like
 * every secret here: 256 random bits behind a prefix, returned once, stored as SHA-256.
 */
import type { Deps } from "../deps";
import { randomToken, sha256Hex } from "../lib/crypto";
import { isoTime } from "../lib/time";
import { OrgAdminTokenRecord } from "../schemas/records";
import { getRecord, putRecord } from "./kv";
import { kvKeys } from "./kv-keys";
import { getOrganization } from "./organizations";

export const ORG_ADMIN_TOKEN_PATTERN = /^kw_live_oa_[A-Za-z0-9_-]{43}$/;

export async function mintOrgAdminToken(
  deps: Deps,
  orgId: string,
  input: { name?: string | undefined },
): Promise<{ record: OrgAdminTokenRecord; token: string }> {
  await getOrganization(deps, orgId);
  const token = `kw_live_oa_${randomToken(32)}`;
  const hash = await sha256Hex(token);
  const record: OrgAdminTokenRecord = {
    id: `oat_${hash.slice(0, 26)}`,
    organization_id: orgId,
    name: input.name ?? null,
    token_hash: hash,
    created_at: isoTime(deps.now()),
    revoked_at: null,
  };
  await putRecord(deps.kv, kvKeys.orgAdminToken(hash), OrgAdminTokenRecord, record);
  return { record, token };
}

/** The active record for a presented token, or null. */
export async function findOrgAdminToken(deps: Deps, token: string): Promise<OrgAdminTokenRecord | null> {
  if (!ORG_ADMIN_TOKEN_PATTERN.test(token)) return null;
  const record = await getRecord(deps.kv, kvKeys.orgAdminToken(await sha256Hex(token)), OrgAdminTokenRecord);
  return record && record.revoked_at === null ? record : null;
}
