/**
 * The audit log (product brief, "Consistency"): who changed what, in which organization, when.
 * Every change through the operator API, the manager app and /v1 appends one entry in the same
 * transaction as the change (objects/organization.ts). Entries name resources by id and carry
 * only non-secret detail (names, limits, URLs); no secret, hash or token appears in any encoding.
 */
import * as z from "zod";
import { publicNames, Timestamp } from "./common";

/**
 * Who made a change: the operator, an organization administrator's token, an API client, a
 * webhook receiver in its portal session, or
 * keyway itself (a webhook configuration disabled because its receiver answered 410 Gone, or
 * failed every attempt for the whole period).
 */
export const Actor = z.discriminatedUnion("type", [
  z.object({ type: z.literal("operator") }),
  z.object({ type: z.literal("system") }),
  z.object({ type: z.literal("admin_token"), id: z.string() }),
  /** An API client: its client_id, and the API key it called with. */
  z.object({ type: z.literal("api_client"), id: z.string(), api_key_id: z.string() }),
  /** A webhook receiver in its portal session (issue 30): the session's id and the one configuration it reaches. */
  z.object({ type: z.literal("receiver"), id: z.string(), webhook_configuration_id: z.string() }),
]);
export type Actor = z.output<typeof Actor>;

export const AuditEntryView = z.object({
  /** Increasing within the organization: later entries have larger ids. */
  id: z.string(),
  at: Timestamp,
  actor: Actor,
  /** `<resource>.<verb>`, e.g. `client_credential.revoked`. */
  action: z.string(),
  resource: z.object({ type: z.string(), id: z.string() }),
  detail: z.record(z.string(), z.unknown()).nullable(),
});
export type AuditEntryView = z.output<typeof AuditEntryView>;

publicNames.add(AuditEntryView, { name: "AuditEntryView" });
