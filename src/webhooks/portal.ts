/**
 * The portal for each webhook endpoint (issue 30 item 2; product brief, "Webhook receivers' way
 * in"): an organization makes a single-use link for one configuration and hands it to the
 * receiver; opening it starts a session that reaches that configuration alone. This module makes
 * and reads the two secrets and asks the organization's WebhookObject (objects/webhooks/portal.ts)
 * to record, open, check, list and end them. No Hono here: the REST routes (http/routes/portal.ts)
 * and the portal's pages (http/portal) are adapters over these functions.
 *
 * The secrets' format (docs/receivers.md, "The portal"): a link token is
 * `kw_portal_<43 base64url>.<organization id>` and a session cookie's value
 * `kw_portal_session_<43 base64url>.<organization id>`. The 43 characters are 256 random bits
 * (lib/crypto.ts `randomToken(32)`); the organization id after the dot says which organization's
 * WebhookObject to ask, as a rotated API key names its object (lib/ids.ts). The id is no secret
 * and grants nothing: the object finds the link or session by the SHA-256 of the whole value, so a
 * token edited to name another organization finds nothing there. The prefixes make both
 * recognisable to secret scanners and keep one from passing as the other.
 */
import * as z from "zod";
import type { Deps } from "../deps";
import { ApiError, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { randomToken, sha256Hex } from "../lib/crypto";
import { base64UrlEncode, encodeUtf8 } from "../lib/encoding";
import { ID_PATTERN } from "../lib/ids";
import { open, sign } from "../lib/signed";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import type { MeterRefusal, PortalAction } from "../objects/endpoints/meter";
import type { Page, PageRequest } from "../objects/sql";
import { endpointObject, reach, unwrap, webhookObject } from "../objects/stubs";
import type { PortalBranding } from "../objects/webhooks/event-types";
import type { OpenRefusal } from "../objects/webhooks/portal";
import {
  type CreatePortalLinkInput,
  PORTAL_LINK_DEFAULT_SECONDS,
  PORTAL_SESSION_SECONDS,
  type PortalLinkView,
  type PortalSessionView,
} from "../schemas/receivers";

const LINK_PREFIX = "kw_portal_";
const SESSION_PREFIX = "kw_portal_session_";
/** Where a link opens; the query's token is consumed by the POST of that page (http/portal). */
export const PORTAL_OPEN_PATH = "/portal/open";

const ORG_ID = /^org_[0-9a-hjkmnp-tv-z]{26}$/;
/**
 * What a link token and a session cookie carry under keyway's MAC (lib/signed.ts): the
 * organization, and 256 random bits. The organization's object is named by it, so a value keyway
 * did not sign is refused before any object is called and a made-up organization id creates
 * nothing (docs/architecture.md, "Routes without an API key").
 */
const PortalValue = z.object({ o: z.string().regex(ORG_ID), r: z.string() });
/** Longer than any link or cookie keyway signs (about 150 characters). */
const PORTAL_VALUE_MAX = 300;
/** Portal session ids: public (listed, in audit entries), 130 random bits like every keyway id. */
const SESSION_ID_PATTERN = /^pts_[0-9a-hjkmnp-tv-z]{26}$/;
const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

function newPortalSessionId(): string {
  let out = "pts_";
  for (const byte of crypto.getRandomValues(new Uint8Array(26))) out += ID_ALPHABET[byte % 32];
  return out;
}

/** The organization a link token or session cookie names, or null when keyway did not sign it. */
async function orgOf(deps: Deps, value: string, prefix: string): Promise<string | null> {
  const opened = await open(deps.config.signingKeys, prefix, value, PortalValue, PORTAL_VALUE_MAX);
  return opened.ok ? opened.value.o : null;
}

const portalValue = (deps: Deps, prefix: string, orgId: string): Promise<string> =>
  sign(deps.config.signingKeys, prefix, { o: orgId, r: randomToken(32) });

/** A live portal session, as each portal request sees it. */
export interface PortalSession {
  id: string;
  orgId: string;
  configurationId: string;
  /** Origins allowed to frame the portal (CSP frame-ancestors); empty means none. */
  frameOrigins: string[];
  /** Every POST form of the session echoes it (derived from the cookie: nothing more is stored). */
  csrf: string;
  /** The organization's name, accent colour and logo's hash, shown on every portal page. */
  branding: PortalBranding;
}

/** Who the session's changes are attributed to: the receiver, by its session, with its one configuration. */
export const receiverActor = (s: PortalSession): Actor => ({ type: "receiver", id: s.id, webhook_configuration_id: s.configurationId });

/**
 * The session's CSRF token: the SHA-256 of a fixed label and the cookie's secret. Only the holder
 * of the cookie (HttpOnly, so not even a script on the page) can compute it, it is stable for the
 * session's life (forms in several tabs keep working), and it reveals nothing of the secret.
 */
async function csrfOf(secret: string): Promise<string> {
  return base64UrlEncode(new Uint8Array(await crypto.subtle.digest("SHA-256", encodeUtf8(`keyway:portal-csrf:${secret}`))));
}

/** A single-use link for one configuration, on `origin` (the request's); the token is shown only here. */
export async function createPortalLink(
  deps: Deps,
  orgId: string,
  configId: string,
  input: CreatePortalLinkInput,
  actor: Actor,
  origin: string,
): Promise<PortalLinkView> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const now = deps.now();
  const token = await portalValue(deps, LINK_PREFIX, orgId);
  const hash = await sha256Hex(token);
  const expiresMs = now + (input.expires_in ?? PORTAL_LINK_DEFAULT_SECONDS) * 1000;
  const created = unwrap(await reach("webhooks", () => webhookObject(deps, orgId).createPortalLink(configId, hash, expiresMs, actor, now)));
  return { url: `${origin}${PORTAL_OPEN_PATH}?token=${token}`, webhook_configuration_id: configId, expires_at: created.expires_at };
}

export type OpenedPortal = { ok: true; cookie: string; session: PortalSessionView } | { ok: false; reason: OpenRefusal };

/** Opens a link (once): a new session and the cookie value that carries it. */
export async function openPortal(deps: Deps, token: string): Promise<OpenedPortal> {
  const orgId = await orgOf(deps, token, LINK_PREFIX);
  if (orgId === null) return { ok: false, reason: "unknown" };
  const now = deps.now();
  const cookie = await portalValue(deps, SESSION_PREFIX, orgId);
  const [linkHash, sessionHash] = await Promise.all([sha256Hex(token), sha256Hex(cookie)]);
  const id = newPortalSessionId();
  const expiresMs = now + PORTAL_SESSION_SECONDS * 1000;
  const opened = await reach("webhooks", () => webhookObject(deps, orgId).openPortalLink(linkHash, id, sessionHash, expiresMs, now));
  return opened.ok ? { ok: true, cookie, session: opened.session } : opened;
}

/** The live session a cookie carries, or null when absent, malformed, unknown, ended or expired. */
export async function resolveSession(deps: Deps, cookie: string | undefined): Promise<PortalSession | null> {
  if (cookie === undefined) return null;
  const orgId = await orgOf(deps, cookie, SESSION_PREFIX);
  if (orgId === null) return null;
  const hash = await sha256Hex(cookie);
  const live = await reach("webhooks", () => webhookObject(deps, orgId).portalSession(hash, deps.now()));
  if (live === null) return null;
  return {
    id: live.id,
    orgId,
    configurationId: live.configuration_id,
    frameOrigins: live.frame_origins,
    csrf: await csrfOf(cookie),
    branding: live.branding,
  };
}

/** A logo's hash as the portal's URL carries it: 64 lower-case hex digits (anything else asks no object). */
const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * The session's organization's logo, when `sha256` is its hash; null otherwise (another hash, an
 * old one, none set). Only the session's own organization's object is asked: a session reaches
 * its organization's logo and no other.
 */
export async function portalLogo(
  deps: Deps,
  session: PortalSession,
  sha256: string,
): Promise<{ content_type: string; bytes: ArrayBuffer } | null> {
  if (!SHA256_HEX.test(sha256) || session.branding.logo_sha256 !== sha256) return null;
  return reach("webhooks", () => webhookObject(deps, session.orgId).portalLogo(sha256));
}

/** The frame origins of the organization a link token names (the open page is framed as the portal is). */
export async function frameOriginsForLink(deps: Deps, token: string): Promise<string[]> {
  const orgId = await orgOf(deps, token, LINK_PREFIX);
  return orgId === null ? [] : reach("webhooks", () => webhookObject(deps, orgId).portalFrameOrigins());
}

export async function listPortalSessions(deps: Deps, orgId: string, configId: string, page: PageRequest): Promise<Page<PortalSessionView>> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  return unwrap(await reach("webhooks", () => webhookObject(deps, orgId).listPortalSessions(configId, page, deps.now())));
}

/** Ends a session of the configuration: every copy of its cookie stops working at once. */
export async function endPortalSession(
  deps: Deps,
  orgId: string,
  configId: string,
  sessionId: string,
  actor: Actor,
): Promise<PortalSessionView> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  if (!SESSION_ID_PATTERN.test(sessionId)) throw notFound("Portal session");
  const now = deps.now();
  return unwrap(await reach("webhooks", () => webhookObject(deps, orgId).endPortalSession(configId, sessionId, actor, now)));
}

/** The receiver signs out: its own session ends, audited as the receiver. */
export async function signOutPortal(deps: Deps, session: PortalSession): Promise<void> {
  await endPortalSession(deps, session.orgId, session.configurationId, session.id, receiverActor(session));
}

/** What the 429 page says of each metered action: what it is, and what did not happen. */
const METERED: Record<PortalAction, { what: string; nothing: string }> = {
  connection_test: { what: "connection tests", nothing: "No request was made to the token endpoint." },
  test_event: { what: "test events", nothing: "No test event was sent." },
  resend: { what: "re-sends", nothing: "The delivery was not re-sent." },
  recover: { what: "recoveries", nothing: "No recovery was started." },
  rotate_signing_secret: { what: "signing secret rotations", nothing: "The signing secret was not rotated." },
};

/** "1 every 5 s", "20 a minute", "6 an hour", "5 a second". */
function rateInWords(limit: number, windowSeconds: number): string {
  if (windowSeconds === 1) return `${limit} a second`;
  if (windowSeconds === 60) return `${limit} a minute`;
  if (windowSeconds === 3600) return `${limit} an hour`;
  return `${limit} every ${windowSeconds} s`;
}

/** The 429 of a refused portal action, in words, with Retry-After and the RateLimit fields (ratelimit/service.ts's layout). */
export function portalLimited(refusal: MeterRefusal): ApiError {
  const words = METERED[refusal.action];
  const rate = rateInWords(refusal.limit, refusal.windowSeconds);
  const limited =
    refusal.scope === "session"
      ? `Too many ${words.what}: a portal session may make ${rate}.`
      : `Too many ${words.what} for this endpoint: its portal sessions together may make ${rate}.`;
  const at = isoTime(refusal.resetAt)
    .replace("T", " ")
    .replace(/\.\d{3}Z$/, " UTC");
  const closest = refusal.windows.find((w) => w.scope === refusal.scope) ?? refusal.windows[0];
  return new ApiError("rate_limited", `${limited} ${words.nothing} Try again in ${refusal.retryAfterSeconds} s (at ${at}).`, {
    headers: {
      "Retry-After": String(refusal.retryAfterSeconds),
      "RateLimit-Policy": refusal.windows.map((w) => `"${w.scope}";q=${w.limit};w=${w.windowSeconds}`).join(", "),
      ...(closest ? { RateLimit: `"${closest.scope}";r=${closest.remaining};t=${refusal.retryAfterSeconds}` } : {}),
    },
  });
}

/**
 * Runs a portal action that costs something beyond a page (a connection test, a test event, a
 * re-send, a recovery: docs/receivers.md, "The portal's limits") under the portal's limits, per
 * session and per configuration (objects/endpoints/meter.ts). The configuration's endpoint object
 * admits it first, in one call; a refusal is thrown as a 429 (`portalLimited`) before `effect`
 * starts, so nothing is sent, and is not counted. An admitted action that the domain then refuses
 * with a 4xx (a window the recovery refuses, a paused endpoint, an unknown delivery) started
 * nothing either: it is given back, so correcting a form does not wait out the limit.
 */
export async function meteredPortalAction<T>(
  deps: Deps,
  session: PortalSession,
  action: PortalAction,
  effect: () => Promise<T>,
): Promise<T> {
  const endpoint = () => endpointObject(deps, session.configurationId);
  const now = deps.now();
  const decision = await reach("webhook endpoint", () => endpoint().meterPortal({ charge: { action, session: session.id } }, now));
  if (decision === null) throw new Error("the endpoint's meter answered a charge with nothing");
  if (!decision.admitted) {
    const r = decision.refusal;
    log.info("portal action refused", {
      action,
      scope: r.scope,
      limit: r.limit,
      window_s: r.windowSeconds,
      retry_after_s: r.retryAfterSeconds,
      portal_session: session.id,
      webhook_configuration_id: session.configurationId,
    });
    throw portalLimited(r);
  }
  try {
    return await effect();
  } catch (err) {
    if (err instanceof ApiError && err.status >= 400 && err.status < 500) {
      const charge = decision.charge;
      await reach("webhook endpoint", () => endpoint().meterPortal({ refund: charge }, deps.now())).catch((e: unknown) => {
        // The action stays counted: a refund lost errs on the side of the limit.
        log.warn("portal action not given back", { action, detail: describeError(e) });
      });
    }
    throw err;
  }
}
