/**
 * The receiver token an endpoint shares (`token_cache: true`, product brief "Webhook endpoints at
 * scale"). The Queue consumer makes every token request (the design card); the endpoint's object
 * only decides who makes one and keeps the result, sealed with AES-GCM like the client secret:
 * - one attempt at a time holds the fetch lease (until its deadline), so a burst makes one token
 *   request however many attempts begin at once; the others wait in the object, not in the Queue;
 * - the token is reused until TOKEN_REUSE_MARGIN_MS before its expires_in runs out (a token
 *   without expires_in is taken to live TOKEN_DEFAULT_LIFETIME_MS, RFC 6749 section 5.1), and only
 *   for the credentials it was issued for (a change of token_url, client_id or client_secret drops it)
 *   and the webhook url's origin it is sent to (a move to another origin drops it);
 * - a receiver whose tokens live no longer than that margin has nothing to share: each attempt
 *   fetches its own, as without token_cache, and the window is not held to one fetcher;
 * - a 401 to it drops it (once per generation) and hands the lease to the attempt that saw it; a
 *   401 to a token an attempt has just fetched and kept drops that one too (never used again).
 * Without token_cache every attempt fetches its own token first (spec section 6).
 */
import type { SealedValue as Sealed } from "../../lib/aead";
import { receiverOAuth, type WebhookConfigurationRecord } from "../../schemas/webhooks";
import { TOKEN_REUSE_MARGIN_MS } from "./policy";
import type { EndpointRow } from "./schema";

/**
 * Which credentials a token was issued for, and where it may be sent: the token URL, the client id
 * and the sealed secret, then the webhook URL's origin.
 */
export const tokenKey = (config: WebhookConfigurationRecord): string => {
  const o = receiverOAuth(config);
  const base = [o.token_url, o.client_id, o.client_secret?.kid ?? null, o.client_secret?.ct ?? null];
  // A bearer token is for the resource server it was issued for (RFC 6750 5.2, RFC 8707 2): one
  // kept while `url` was at one origin is never sent to another, whatever the method (with
  // private_key_jwt nothing else changes when a receiver moves `url` in the portal). Another path
  // at the same origin keeps it. A token being fetched for the old origin when `url` moves is
  // offered under the old key, and refused (object.ts `keepToken`). A token kept before the
  // origin was part of the key no longer matches: each endpoint fetches one anew, once.
  const at = webhookOrigin(config.url);
  // Issue 31: a token asked for with other parameters, another method, or for another DPoP key is
  // another token.
  const extra = [
    o.auth_method,
    o.scope,
    o.resource,
    o.audience,
    o.assertion_audience,
    o.assertion_key?.kid ?? null,
    o.dpop_key?.jkt ?? null,
  ];
  const plain = o.auth_method === "client_secret_post" && extra.slice(1).every((v) => v === null);
  return JSON.stringify([...(plain ? base : [...base, ...extra]), at]);
};

/** A webhook URL's origin (RFC 6454 4); the text itself if it is not a URL (a polling configuration has none). */
function webhookOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** How an attempt gets its token. */
export type TokenPlan =
  /**
   * Request one before the webhook; `keep`: offer it to the endpoint's cache; `lease`: this attempt
   * holds the fetch lease (the others wait for its token).
   */
  | { mode: "fetch"; keep: boolean; lease: boolean }
  /** Use the endpoint's token; `generation` names it if the receiver refuses it. */
  | { mode: "cached"; sealed: Sealed; generation: number }
  /** Another attempt is fetching the endpoint's token: this one waits for it. */
  | { mode: "wait" };

/** The endpoint's token, if it is for these credentials and not too close to expiring. */
export function usableToken(
  ep: EndpointRow,
  config: WebhookConfigurationRecord,
  now: number,
): { sealed: Sealed; generation: number } | null {
  if (ep.token === null || ep.token_key !== tokenKey(config) || ep.token_expires_ms === null) return null;
  if (now >= ep.token_expires_ms - TOKEN_REUSE_MARGIN_MS) return null;
  return { sealed: JSON.parse(ep.token) as Sealed, generation: ep.token_generation };
}

/** Whether some attempt holds the fetch lease right now. */
export const fetching = (ep: EndpointRow, now: number): boolean =>
  ep.token_lease !== null && ep.token_lease_until_ms !== null && ep.token_lease_until_ms > now;

/** Whether the receiver's tokens for these credentials live too briefly to share (see above). */
export const shortLived = (ep: EndpointRow, config: WebhookConfigurationRecord): boolean =>
  ep.token_short_key !== null && ep.token_short_key === tokenKey(config);

export function planToken(ep: EndpointRow, config: WebhookConfigurationRecord, now: number): TokenPlan {
  if (!config.token_cache) return { mode: "fetch", keep: false, lease: false };
  const token = usableToken(ep, config, now);
  if (token !== null) return { mode: "cached", ...token };
  // A short-lived receiver: every attempt fetches (and offers what it got, in case it now lives longer).
  if (shortLived(ep, config)) return { mode: "fetch", keep: true, lease: false };
  return fetching(ep, now) ? { mode: "wait" } : { mode: "fetch", keep: true, lease: true };
}

/**
 * Whether the endpoint's next attempt has to fetch the shared token: then at most one attempt may
 * be out (the one that fetches), and none while another fetch is under way.
 */
export const needsToken = (ep: EndpointRow, config: WebhookConfigurationRecord, now: number): boolean =>
  config.token_cache && usableToken(ep, config, now) === null && !shortLived(ep, config);

export const leaseOwner = (deliveryId: string, attempt: number): string => `${deliveryId}:${attempt}`;
