/**
 * Polling configurations (issue 45; docs/receivers.md, "Polling"): a receiver that cannot take
 * inbound HTTP reads its configuration's events at `GET /v1/polling-endpoints/{id}/events` with a
 * read credential of that configuration alone (`kw_poll_`, RFC 6750 Bearer), never the
 * organization's API key. The organization's WebhookObject keeps the credential's SHA-256 in the
 * configuration's record (shown once, at creation or rotation; revocable) and pushes it to the
 * endpoint's object before a change is answered, so a read is decided, and answered, in that one
 * object.
 *
 * The route needs no API key, so what anyone can send it is decided before any object is called
 * (docs/architecture.md, "Routes without an API key"): a token is signed by keyway (lib/signed.ts,
 * naming its configuration and when it was issued) and checked against the configuration's
 * verifier in KV (objects/lookup.ts). A made-up, another configuration's, rotated-out or revoked
 * token, and any token at an id that is not a live polling configuration, is refused at the edge
 * with the same 401, and refusals are rate-limited per client and per id; only a token that matches
 * the verifier, or a genuine one newer than it (a rotation KV has not carried here yet), reaches the
 * endpoint's object, which decides with the record.
 */
import * as z from "zod";
import type { Deps } from "../deps";
import { ApiError, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { digestsEqual, randomToken, sha256Hex } from "../lib/crypto";
import { ID_PATTERN } from "../lib/ids";
import { open, sign } from "../lib/signed";
import { POLL_PAGE_MAX, POLL_WAIT_MAX_MS, POLLING_DISABLED_MESSAGE, type ReadPage } from "../objects/endpoints/polling";
import { type PollingVerifier, readPollingVerifier } from "../objects/lookup";
import { endpointObject, reach, unwrap, webhookObject } from "../objects/stubs";
import type { ChangedBy } from "../objects/webhooks/configurations";
import type { WebhookConfiguration } from "../schemas/webhooks";

export const POLLING_TOKEN_PREFIX = "kw_poll_";
/** RFC 6750 3: the realm a refused read's challenge names. */
const CHALLENGE = 'Bearer realm="keyway-polling"';

/** What a polling token carries under keyway's MAC: its configuration, its issue time (ms), 256 random bits. */
const PollingTokenClaims = z.object({ c: z.string(), t: z.number().int(), r: z.string() });
/** Longer than any token keyway signs (about 170 characters); a longer one is not parsed. */
const POLLING_TOKEN_MAX = 400;

/** A new read credential for `configurationId`, issued at `issuedMs` (the time its record keeps as token_created_at). */
export const newPollingToken = (deps: Pick<Deps, "config">, configurationId: string, issuedMs: number): Promise<string> =>
  sign(deps.config.signingKeys, POLLING_TOKEN_PREFIX, { c: configurationId, t: issuedMs, r: randomToken(32) });

/** A presented token as the edge reads it: signed by keyway (for this id, issued at `issued_ms`), of the first release's shape (random only), or forged. */
export type PresentedToken = { kind: "signed"; hash: string; issued_ms: number } | { kind: "unsigned"; hash: string } | { kind: "forged" };

/** How the edge answers a read (decidePollingRead). */
export type EdgeDecision = "object" | "object_unconfirmed" | "refused" | "disabled";

/**
 * Whether a read goes to the configuration's object: a pure function of the token as presented
 * and the verifier KV has here. `object`: the token is the verifier's (the object decides, as a
 * stale verifier may miss a revocation); `object_unconfirmed`: a genuine token issued after the
 * verifier's last change, or at an id without one, so newer than what KV has carried here
 * (rate-limited per id); `disabled`: the verifier's token, of a configuration that hands nothing
 * over; `refused`: everything else, one answer for every id that is not a live polling
 * configuration.
 */
export function decidePollingRead(token: PresentedToken, verifier: PollingVerifier | null): EdgeDecision {
  if (token.kind === "forged") return "refused";
  if (verifier?.token_hash != null && digestsEqual(verifier.token_hash, token.hash)) return verifier.live ? "object" : "disabled";
  if (token.kind === "signed" && (verifier === null || token.issued_ms > verifier.since_ms)) return "object_unconfirmed";
  return "refused";
}

/** Reads a presented token: a signed one must name this configuration; an unsigned one is only a hash to compare. */
async function presented(deps: Deps, configurationId: string, token: string): Promise<PresentedToken> {
  const opened = await open(deps.config.signingKeys, POLLING_TOKEN_PREFIX, token, PollingTokenClaims, POLLING_TOKEN_MAX);
  if (opened.ok) {
    return opened.value.c === configurationId
      ? { kind: "signed", hash: await sha256Hex(token), issued_ms: opened.value.t }
      : { kind: "forged" };
  }
  // The first release's tokens: kw_poll_ and 43 random characters, checked by hash alone.
  if (opened.reason === "malformed" && /^kw_poll_[A-Za-z0-9_-]{43}$/.test(token)) return { kind: "unsigned", hash: await sha256Hex(token) };
  return { kind: "forged" };
}

/** The one refusal for every read that does not reach an object, and every token the object refuses. */
const NOT_A_READER =
  "The polling token is not this configuration's (or it was revoked or rotated out), or this is not a live polling endpoint.";

/**
 * Counts one call the route could not serve (a refused token, or a token the edge cannot confirm
 * yet) against the client's address and the id; over either limit, the answer is 429.
 */
async function throttled(deps: Deps, client: string, key: string): Promise<boolean> {
  const [byClient, byId] = await Promise.all([
    deps.publicLimiter.limit({ key: `polling:client:${client}` }),
    deps.publicLimiter.limit({ key: `polling:${key}` }),
  ]);
  return !byClient.success || !byId.success;
}

const tooMany = () =>
  new ApiError("rate_limited", "Too many refused reads from this client or for this polling endpoint; wait a minute.", {
    headers: { "Retry-After": "60" },
  });

/** Where a polling configuration's receiver reads (on keyway's origin). */
export const pollingPath = (configurationId: string): string => `/v1/polling-endpoints/${configurationId}/events`;

/** A read's query as the route parsed it. */
export interface ReadQuery {
  after?: string | undefined;
  limit?: number | undefined;
  wait?: number | undefined;
}

/** The user message of a refused read: a polling token is a machine's credential, nobody's sign-in. */
const NOT_ACCEPTED = "The polling token was not accepted: it is missing, mistyped, rotated or revoked.";

const refused = (message: string, error = "invalid_token") =>
  new ApiError("invalid_token", message, {
    headers: { "WWW-Authenticate": `${CHALLENGE}, error="${error}"` },
    userMessage: NOT_ACCEPTED,
  });

/**
 * One read: the token from `Authorization: Bearer`, decided at the edge first (decidePollingRead),
 * then, if it may be the configuration's, checked (by its hash, in constant time) by the
 * configuration's endpoint object with the cursor, then up to `limit` events after it, waiting up
 * to `wait` seconds for one when none is there. `client`: the caller's address, for the refusals'
 * rate limit.
 */
export async function readPolledEvents(
  deps: Deps,
  configurationId: string,
  authorization: string | undefined,
  query: ReadQuery,
  client = "unknown",
): Promise<ReadPage> {
  const match = /^Bearer +(\S+)$/i.exec(authorization ?? "");
  const token = match?.[1];
  if (token === undefined) {
    throw new ApiError("invalid_token", "Send the polling token as Authorization: Bearer <token>.", {
      headers: { "WWW-Authenticate": CHALLENGE },
      userMessage: NOT_ACCEPTED,
    });
  }
  const refuse = async (message = NOT_A_READER): Promise<never> => {
    throw (await throttled(deps, client, `refused:${configurationId}`)) ? tooMany() : refused(message);
  };
  if (!token.startsWith(POLLING_TOKEN_PREFIX)) return refuse("This is not a polling token (they start with kw_poll_).");
  if (!ID_PATTERN.test(configurationId)) return refuse();
  const shown = await presented(deps, configurationId, token);
  const verifier = shown.kind === "forged" ? null : await readPollingVerifier(deps.kv, configurationId, deps.now());
  const decision = decidePollingRead(shown, verifier);
  if (decision === "refused" || shown.kind === "forged") return refuse();
  if (decision === "disabled") throw disabled();
  if (decision === "object_unconfirmed" && (await throttled(deps, client, `unconfirmed:${configurationId}`))) throw tooMany();
  const request = {
    token_hash: shown.hash,
    cursor: query.after ?? null,
    limit: query.limit ?? POLL_PAGE_MAX,
    wait_ms: Math.min((query.wait ?? 0) * 1000, POLL_WAIT_MAX_MS),
  };
  const result = await reach("webhook endpoint", () => endpointObject(deps, configurationId).poll(request, deps.now()));
  // The object refused it (a revocation or rotation KV has not carried here yet): counted as the edge's refusals are.
  if (!result.ok && result.code === "invalid_token") return refuse();
  return unwrap(result);
}

/** The status contract: a disabled configuration hands nothing over (its events are kept). */
const disabled = () => new ApiError("conflict", POLLING_DISABLED_MESSAGE);

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
  const now = deps.now();
  const token = await newPollingToken(deps, id, now);
  const config = await setToken(deps, orgId, id, await sha256Hex(token), actor, by, now);
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
  now = deps.now(),
): Promise<WebhookConfiguration> {
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
