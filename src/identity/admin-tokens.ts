/**
 * Organization administrator tokens: minted by an operator (operator API or manager app), they
 * sign one organization's administrator into the manager app, for that organization only. Like
 * every secret here: 256 random bits behind a prefix, returned once, stored as SHA-256. The token
 * names its organization (`kw_live_oa_<organization>_<secret>`), so signing in needs no lookup;
 * it expires (DEFAULT_ADMIN_TOKEN_DAYS unless asked otherwise), can be listed and revoked, and
 * revoking it ends every session opened with it.
 */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { randomToken, sha256Hex } from "../lib/crypto";
import { ID_PATTERN, newAdminTokenId } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import { type AdminTokenView, DEFAULT_ADMIN_TOKEN_DAYS } from "../schemas/admin";
import type { OrgAdminTokenRecord } from "../schemas/records";
import type { Actor } from "./changes";
import { organization } from "./organizations";

const PREFIX = "kw_live_oa_";
export const ORG_ADMIN_TOKEN_PATTERN = /^kw_live_oa_([0-9a-hjkmnp-tv-z]{26})_[A-Za-z0-9_-]{43}$/;

/** The organization an administrator token belongs to, or null when it is not one of ours. */
export function organizationOfAdminToken(token: string): string | null {
  const match = ORG_ADMIN_TOKEN_PATTERN.exec(token);
  return match ? `org_${match[1]}` : null;
}

export async function mintOrgAdminToken(
  deps: Deps,
  orgId: string,
  input: { name?: string | undefined; expires_in_days?: number | undefined },
  actor: Actor,
): Promise<{ record: OrgAdminTokenRecord; token: string }> {
  if (!ID_PATTERN.test(orgId)) throw notFound("Organization");
  const token = `${PREFIX}${orgId.slice("org_".length)}_${randomToken(32)}`;
  const now = deps.now();
  const minted = {
    id: newAdminTokenId(),
    token_hash: await sha256Hex(token),
    name: input.name ?? null,
    created_at: isoTime(now),
    expires_at: isoTime(now + (input.expires_in_days ?? DEFAULT_ADMIN_TOKEN_DAYS) * 86_400_000),
  };
  const record = unwrap(await reach("organization", () => organization(deps, orgId).mintAdminToken(minted, actor)));
  return { record, token };
}

export async function listOrgAdminTokens(deps: Deps, orgId: string, page: PageRequest): Promise<Page<OrgAdminTokenRecord>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).listAdminTokens(page)));
}

export async function getOrgAdminToken(deps: Deps, orgId: string, tokenId: string): Promise<OrgAdminTokenRecord> {
  if (!ID_PATTERN.test(tokenId)) throw notFound("Administrator token");
  return unwrap(await reach("organization", () => organization(deps, orgId).getAdminToken(tokenId)));
}

/** Idempotent; every manager session opened with the token ends with it. */
export async function revokeOrgAdminToken(deps: Deps, orgId: string, tokenId: string, actor: Actor): Promise<OrgAdminTokenRecord> {
  if (!ID_PATTERN.test(tokenId)) throw notFound("Administrator token");
  return unwrap(await reach("organization", () => organization(deps, orgId).revokeAdminToken(tokenId, actor, deps.now())));
}

export function adminTokenView(record: OrgAdminTokenRecord, now: number): AdminTokenView {
  return {
    id: record.id,
    organization_id: record.organization_id,
    name: record.name,
    status: record.revoked_at !== null ? "revoked" : Date.parse(record.expires_at) <= now ? "expired" : "active",
    created_at: record.created_at,
    expires_at: record.expires_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at,
  };
}
