/**
 * Polling configurations (issue 45; docs/receivers.md, "Polling"): a receiver that cannot take
 * inbound HTTP reads its configuration's events at `GET /v1/polling-endpoints/{id}/events` with a
 * read credential of that configuration alone (`kw_poll_` + 256 random bits, RFC 6750 Bearer),
 * never the organization's API key. The organization's WebhookObject keeps the credential's
 * SHA-256 in the configuration's record (shown once, at creation or rotation; revocable) and
 * pushes it to the endpoint's object before a change is answered, so a read is decided, and
 * answered, in that one object: one Durable Object call per read, wherever the others read.
 */
import type { Deps } from "../deps";
import { ApiError, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { randomToken, sha256Hex } from "../lib/crypto";
import { ID_PATTERN } from "../lib/ids";
import { POLL_PAGE_MAX, POLL_WAIT_MAX_MS, type ReadPage } from "../objects/endpoints/polling";
import { endpointObject, reach, unwrap, webhookObject } from "../objects/stubs";
import type { ChangedBy } from "../objects/webhooks/configurations";
import type { WebhookConfiguration } from "../schemas/webhooks";

export const POLLING_TOKEN_PREFIX = "kw_poll_";
/** RFC 6750 3: the realm a refused read's challenge names. */
const CHALLENGE = 'Bearer realm="keyway-polling"';

export const newPollingToken = (): string => `${POLLING_TOKEN_PREFIX}${randomToken(32)}`;

/** Where a polling configuration's receiver reads (on keyway's origin). */
export const pollingPath = (configurationId: string): string => `/v1/polling-endpoints/${configurationId}/events`;

/** A read's query as the route parsed it. */
export interface ReadQuery {
  after?: string | undefined;
  limit?: number | undefined;
  wait?: number | undefined;
}

const refused = (message: string, error = "invalid_token") =>
  new ApiError("invalid_token", message, { headers: { "WWW-Authenticate": `${CHALLENGE}, error="${error}"` } });

/**
 * One read: the token from `Authorization: Bearer`, checked (by its hash, in constant time) by the
 * configuration's endpoint object with the cursor, then up to `limit` events after it, waiting up
 * to `wait` seconds for one when none is there. A malformed or missing token is refused before
 * any object is called.
 */
export async function readPolledEvents(
  deps: Deps,
  configurationId: string,
  authorization: string | undefined,
  query: ReadQuery,
): Promise<ReadPage> {
  const match = /^Bearer +(\S+)$/i.exec(authorization ?? "");
  const token = match?.[1];
  if (token === undefined) {
    throw new ApiError("invalid_token", "Send the polling token as Authorization: Bearer <token>.", {
      headers: { "WWW-Authenticate": CHALLENGE },
    });
  }
  if (!token.startsWith(POLLING_TOKEN_PREFIX)) throw refused("This is not a polling token (they start with kw_poll_).");
  if (!ID_PATTERN.test(configurationId)) throw notFound("Polling endpoint");
  const request = {
    token_hash: await sha256Hex(token),
    cursor: query.after ?? null,
    limit: query.limit ?? POLL_PAGE_MAX,
    wait_ms: Math.min((query.wait ?? 0) * 1000, POLL_WAIT_MAX_MS),
  };
  const result = await reach("webhook endpoint", () => endpointObject(deps, configurationId).poll(request, deps.now()));
  if (!result.ok && result.code === "invalid_token") throw refused(result.message);
  return unwrap(result);
}

/** A new read credential for a polling configuration, shown once; the previous one stops at once. */
/** `by: "receiver"` (the portal): refused while the organization has the token revoked. */
export async function rotatePollingToken(
  deps: Deps,
  orgId: string,
  id: string,
  actor: Actor,
  by: ChangedBy = "organization",
): Promise<{ config: WebhookConfiguration; token: string }> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  const token = newPollingToken();
  const config = await setToken(deps, orgId, id, await sha256Hex(token), actor, by);
  return { config, token };
}

/** Revokes a polling configuration's read credential: no read succeeds until a new one is rotated in. */
export async function revokePollingToken(deps: Deps, orgId: string, id: string, actor: Actor): Promise<WebhookConfiguration> {
  if (!ID_PATTERN.test(id)) throw notFound("Webhook configuration");
  return setToken(deps, orgId, id, null, actor);
}

async function setToken(
  deps: Deps,
  orgId: string,
  id: string,
  hash: string | null,
  actor: Actor,
  by: ChangedBy = "organization",
): Promise<WebhookConfiguration> {
  const now = deps.now();
  const changed = unwrap(await reach("webhooks", () => webhookObject(deps, orgId).setPollingToken(id, hash, actor, now, by)));
  if (!changed.applied) {
    // The old credential may still read at the endpoint until the push lands: say so rather than claim it is done.
    throw new ApiError(
      "service_unavailable",
      "The change is recorded but the configuration's endpoint object has not taken it yet (the previous token may read until it does, within seconds). Repeat the request to see it applied.",
      { headers: { "Retry-After": "1" } },
    );
  }
  const state = await reach("webhook endpoint", () => endpointObject(deps, id).state(deps.now()));
  return { ...changed.record, state };
}
