/**
 * The audit log on the Worker side: reading an organization's log, and recording changes made
 * outside the organization's object (webhook configurations, events, deliveries), by actor.
 * Identity changes record themselves inside the object's own transactions.
 */
import type { Deps } from "../deps";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { AuditEntryView } from "../schemas/audit";
import type { Actor } from "./changes";
import { organization } from "./organizations";

export async function auditLog(deps: Deps, orgId: string, page: PageRequest): Promise<Page<AuditEntryView>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).auditLog(page)));
}

export async function recordChange(
  deps: Deps,
  orgId: string,
  actor: Actor,
  change: { action: string; resource: { type: string; id: string }; detail?: Record<string, unknown> },
): Promise<void> {
  await reach("organization", () =>
    organization(deps, orgId).record(actor, change.action, change.resource.type, change.resource.id, change.detail ?? null),
  );
}
