/**
 * Reading an organization's audit log. Identity changes record themselves inside the
 * organization's object's own transactions; webhook changes inside the WebhookObject's, which
 * pushes them here (objects/webhooks.ts, its audit outbox).
 */
import type { Deps } from "../deps";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { AuditEntryView, AuditFilter } from "../schemas/audit";
import { organization } from "./organizations";

/**
 * A page of the log, newest first, narrowed by `filter` in the organization's object (SQL, through
 * the log's indexes). The page is checked again here with `auditMatches`: an object of the release
 * before filters ignores the argument (docs/deploy.md, "The companions' contract", rule 2), and a
 * filtered list must never show an entry the filter excludes; such a page is only shorter.
 */
export async function auditLog(deps: Deps, orgId: string, page: PageRequest, filter: AuditFilter = {}): Promise<Page<AuditEntryView>> {
  const found: Page<AuditEntryView> = unwrap(await reach("organization", () => organization(deps, orgId).auditLog(page, filter)));
  return { ...found, items: found.items.filter((e) => auditMatches(e, filter)) };
}

/** Whether an entry is one the filter keeps: the same rule as the object's SQL (objects/org/audit.ts auditWhere). */
export function auditMatches(e: AuditEntryView, f: AuditFilter): boolean {
  const actorId = "id" in e.actor ? e.actor.id : undefined;
  const at = Date.parse(e.at);
  return (
    (f.actor === undefined || e.actor.type === f.actor) &&
    (f.actor_id === undefined || actorId === f.actor_id) &&
    (f.action === undefined || e.action === f.action) &&
    (f.resource_type === undefined || e.resource.type === f.resource_type) &&
    (f.resource_id === undefined || e.resource.id === f.resource_id) &&
    (f.since === undefined || at >= Date.parse(f.since)) &&
    (f.until === undefined || at < Date.parse(f.until))
  );
}
