/**
 * Reading an organization's audit log. Identity changes record themselves inside the
 * organization's object's own transactions; webhook changes inside the WebhookObject's, which
 * pushes them here (objects/webhooks.ts, its audit outbox).
 */
import type { Deps } from "../deps";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { AuditEntryView } from "../schemas/audit";
import { organization } from "./organizations";

export async function auditLog(deps: Deps, orgId: string, page: PageRequest): Promise<Page<AuditEntryView>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).auditLog(page)));
}
