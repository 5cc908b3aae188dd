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

/** An id as the log names actors and resources: letters, digits and `_ . : -`. */
const LogId = z
  .string()
  .max(128, { error: "must be at most 128 characters" })
  .regex(/^[A-Za-z0-9_.:-]+$/, { error: "must be an id such as usr_... or kw_client_..." });

export const AUDIT_ACTOR_TYPES = ["operator", "system", "admin_token", "api_client", "receiver"] as const;

/**
 * What the audit log may be narrowed to (REST query, manager filters): who (the actor's type, and
 * its id: an administrator token's, a client_id, a portal session's), the exact action, the
 * resource's type or id, and a time range (`since` inclusive, `until` exclusive). Absent means
 * any. A narrowing by who, what or which resource is served by an index of the log ending in its
 * order (objects/org/schema.ts, version 10); a time range alone walks the log newest first.
 */
export const AuditFilter = z
  .object({
    actor: z.enum(AUDIT_ACTOR_TYPES).optional().describe("Only entries of this kind of actor."),
    actor_id: LogId.optional().describe("Only entries of this actor: an administrator token's id, a client_id or a portal session's id."),
    action: z
      .string()
      .max(64, { error: "must be at most 64 characters" })
      .regex(/^[a-z_]+(\.[a-z_]+)+$/, { error: "must be an action such as client_credential.revoked" })
      .optional()
      .describe("Only entries of this action, such as `client_credential.revoked`."),
    resource_type: z
      .string()
      .max(64, { error: "must be at most 64 characters" })
      .regex(/^[a-z_]+$/, { error: "must be a resource type such as client_credential" })
      .optional()
      .describe("Only entries about this kind of resource, such as `api_key`."),
    resource_id: LogId.optional().describe("Only entries about this resource."),
    since: Timestamp.optional().describe("Only entries at or after this time."),
    until: Timestamp.optional().describe("Only entries before this time."),
  })
  .refine((f) => f.since === undefined || f.until === undefined || Date.parse(f.since) < Date.parse(f.until), {
    path: ["until"],
    error: "must be after since",
  });
export type AuditFilter = z.output<typeof AuditFilter>;

publicNames.add(AuditEntryView, { name: "AuditEntryView" });
