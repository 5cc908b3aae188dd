/**
 * Recovery after an outage (issue 30; product brief, "Recovery"): every delivery of one
 * configuration that failed in a window is re-sent, each once, as a background job of the
 * endpoint's own object (objects/endpoints/recovery.ts), paced by the endpoint and never delaying
 * another. One call to that object starts it (the object checks the configuration is this
 * organization's); its progress is read there too.
 */
import type { Deps } from "../deps";
import { invalidInput, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { ID_PATTERN } from "../lib/ids";
import type { Page, PageRequest } from "../objects/sql";
import { endpointObject, reach, unwrap } from "../objects/stubs";
import { EVENT_RETENTION_DAYS } from "../objects/webhooks/limits";
import type { RecoverInput, RecoveryView } from "../schemas/receivers";

const WHAT = "webhook endpoint";

function checkedConfig(configId: string): string {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  return configId;
}

/** Starts a recovery of [since, until) (until defaults to now); 409 while the configuration is disabled. */
export async function recoverDeliveries(
  deps: Deps,
  orgId: string,
  configId: string,
  input: RecoverInput,
  actor: Actor,
): Promise<RecoveryView> {
  const id = checkedConfig(configId);
  const now = deps.now();
  const since = Date.parse(input.since);
  const until = input.until === undefined ? now : Date.parse(input.until);
  // Older deliveries are gone (retention): a window before it would find nothing, say so.
  if (until <= now - EVENT_RETENTION_DAYS * 86_400_000) {
    throw invalidInput({
      label: "request body",
      issues: [{ path: ["until"], text: ` is before the oldest delivery kept (deliveries are kept ${EVENT_RETENTION_DAYS} days)` }],
    });
  }
  if (since >= until) throw invalidInput({ label: "request body", issues: [{ path: ["since"], text: " must be before until (or now)" }] });
  return unwrap(await reach(WHAT, () => endpointObject(deps, id).recover(orgId, since, until, actor, now)));
}

export async function getRecovery(deps: Deps, orgId: string, configId: string, recoveryId: string): Promise<RecoveryView> {
  const id = checkedConfig(configId);
  if (!ID_PATTERN.test(recoveryId)) throw notFound("Recovery");
  return unwrap(await reach(WHAT, () => endpointObject(deps, id).recovery(orgId, recoveryId)));
}

export async function listRecoveries(deps: Deps, orgId: string, configId: string, page: PageRequest): Promise<Page<RecoveryView>> {
  const id = checkedConfig(configId);
  return unwrap(await reach(WHAT, () => endpointObject(deps, id).recoveries(orgId, page)));
}
