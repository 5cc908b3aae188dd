/**
 * Audit entries of webhook changes, committed in the webhook objects' own transactions and pushed
 * to the organization's log (OrganizationObject `appendAudit`) with a unique key, so a push
 * repeated after a failure adds nothing twice. Publishing is summarised rather than logged event
 * by event (issue 20: at one publish per second, an entry per event would outgrow the events it
 * describes): one entry per UTC hour, actor and action, updated in place as the count grows; the
 * event itself keeps who published it for as long as it is kept.
 */
import type { Actor } from "../../schemas/audit";

/** An audit entry waiting to reach the organization's log. */
export interface AuditOutboxEntry {
  at: string;
  actor: Actor;
  action: string;
  resource_type: string;
  resource_id: string;
  detail: Record<string, unknown> | null;
}

/** A pushed entry: its key makes a repeated push harmless; `replace` updates a summary's detail in place. */
export type KeyedAuditEntry = AuditOutboxEntry & { key: string; replace?: boolean };

/** URLs in audit entries: without their query and fragment, which may carry a receiver's token. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? "?..." : ""}`;
  } catch {
    return "(unparseable URL)";
  }
}
