/**
 * What every identity change needs on the Worker side: who makes it (the audit log's actor) and
 * whether it has reached every place that must apply it. A revocation or a new limit is only
 * acknowledged once every key object of the organization has applied it (objects/organization.ts);
 * until then the caller is told it is recorded and still being applied, and is asked to retry.
 */
import { ApiError } from "../errors";
import type { Propagated } from "../objects/organization";

export type { Actor } from "../schemas/audit";

/** The record of a change that every key object has applied, or a 503 saying it is on its way. */
export function applied<T>(change: Propagated<T>, what: string): T {
  if (change.pending === 0 && !change.webhooksPending) return change.record;
  const places = [
    ...(change.pending > 0 ? [`${change.pending} API key${change.pending === 1 ? "" : "s"}`] : []),
    ...(change.webhooksPending ? ["the webhook configurations"] : []),
  ];
  throw new ApiError(
    "service_unavailable",
    `${what} is recorded and is still being applied to ${places.join(" and ")}; it is retried until it is. Repeat the request to confirm it is in effect.`,
    { headers: { "Retry-After": "1" } },
  );
}
