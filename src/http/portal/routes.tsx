/**
 * The portal app at /portal (issue 30 item 2): a webhook receiver's way in to its one endpoint.
 * `GET /portal/open?token=` shows one button and `POST /portal/open` uses the single-use link up,
 * starts the session and sets its cookie; every other page needs that session and reaches only
 * its configuration: any other delivery, recovery or configuration id answers 404, whatever the
 * URL or form says. Besides the endpoint, its deliveries and settings, the session recovers a
 * window (recover.tsx), reads the organization's event catalog, subscribing from it (catalog.tsx),
 * and narrows what it receives with a filter and channels of its own (filter.tsx). Actions call the same domain functions as the REST API (webhooks/configurations.ts,
 * webhooks/deliveries.ts: the SSRF guard included), audited as the receiver. Security headers are
 * middleware/html.ts's, with a CSP whose `frame-ancestors` are the organization's
 * `portal_frame_origins` (none by default), computed per request since they depend on the session.
 */
import { type Context, Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Child } from "hono/jsx";
import { publicBaseUrl } from "../../config";
import { ApiError, type InputIssue } from "../../errors";
import { constantTimeEqual } from "../../lib/crypto";
import { describeError, log } from "../../log";
import { PAUSE_HOLD_MAX_DAYS, PAUSE_HOLD_MAX_DELIVERIES } from "../../objects/endpoints/policy";
import { MAX_EVENT_TYPES } from "../../objects/webhooks/event-types";
import { EVENT_RETENTION_DAYS } from "../../objects/webhooks/limits";
import { type EventTypeView, OPERATIONAL_EVENT_TYPES, PORTAL_SESSION_SECONDS, RecoverInput } from "../../schemas/receivers";
import { parseInput } from "../../schemas/validate";
import { DeliveryFilter, SignatureScheme, UpdateWebhookConfigurationInput, type WebhookConfigurationRecord } from "../../schemas/webhooks";
import {
  getWebhookConfiguration,
  rotateSigningSecret,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../../webhooks/configurations";
import { testConnection } from "../../webhooks/connection-test";
import { maskedWebhookHeaders } from "../../webhooks/consumer";
import {
  canResend,
  getDelivery,
  getDeliveryWithBody,
  listDeliveries,
  retryDelivery,
  sendExampleEvent,
  sendTestEvent,
  webhookTraffic,
} from "../../webhooks/deliveries";
import { eventCatalog, getEventType, listEventTypes } from "../../webhooks/event-types";
import { rotatePollingToken } from "../../webhooks/polling";
import {
  frameOriginsForLink,
  meteredPortalAction,
  openPortal,
  type PortalSession,
  portalLogo,
  receiverActor,
  resolveSession,
  signOutPortal,
} from "../../webhooks/portal";
import { getRecovery, listRecoveries, recoverDeliveries } from "../../webhooks/recovery";
import { readFields } from "../body";
import { keywayOrigin } from "../context";
import { checkedInput, formErrorsOf, placedMessage, targetIssues } from "../manager/form-check";
import { checkLoginCsrf, issueLoginCsrf, LOGIN_CSRF_TTL_SECONDS } from "../manager/login-csrf";
import { Confirm, type Confirmation, confirmations } from "../manager/pages/confirm";
import type { FormErrors } from "../manager/pages/event-types";
import { ConnectionTestResult, postedReceiverOAuth, updateOAuthInput } from "../manager/pages/receiver-oauth";
import {
  exampleIndex,
  exampleValues,
  postedExampleData,
  type SendExampleField,
  type SendExampleValues,
  sendExampleErrors,
} from "../manager/pages/send-example";
import { configName, DELIVERIES_PAGE, DeliveryDetail, SigningSecretRotated } from "../manager/pages/webhooks";
import { sameOriginPosts } from "../manager/same-origin";
import { SecretOnce } from "../manager/views";
import { provideDeps } from "../middleware/deps";
import { type Csp, htmlSecurity, NONCE, pageNonce } from "../middleware/html";
import { CATALOG_PAGE, CatalogPage, EventTypeEntry, SendExamplePage, subscribed, typeHref } from "./catalog";
import type { PortalEnv } from "./env";
import { filterRoutes } from "./filter";
import { PortalPage, type PortalPageProps } from "./layout";
import {
  DeliveriesPage,
  type DeliveryQuery,
  HomePage,
  OpenPage,
  PORTAL_SETTINGS_LABELS,
  type PortalSettingsField,
  type PortalSettingsValues,
  portalSettingsValues,
  REFUSALS,
  Refused,
  SettingsPage,
} from "./pages";
import {
  RECOVER_LABELS,
  RECOVERIES_PAGE,
  type RecoverErrors,
  type RecoverField,
  RecoverPage,
  type RecoverValues,
  RecoveryDetail,
} from "./recover";

export type { PortalEnv } from "./env";

type C = Context<PortalEnv>;

/**
 * The session cookie. `__Host-` (RFC 6265bis section 4.1.3.2): stored only from a secure origin,
 * with Secure, Path=/ and no Domain, so a sibling subdomain cannot plant or overwrite it; HttpOnly
 * keeps it from scripts. SameSite=None because the portal may be shown in an iframe on the API
 * provider's dashboard: there the request is cross-site (the top-level site is the dashboard's),
 * and a Lax or Strict cookie would not be sent (RFC 6265bis section 5.6.7.1), so the session would
 * be lost on every click. Cross-site requests carrying the cookie are why every POST form checks
 * the session's CSRF token. Partitioned (CHIPS, draft-cutler-httpbis-partitioned-cookies): the
 * cookie is kept per top-level site, so browsers that block third-party cookies still keep it
 * inside the frame, and the copy set in one dashboard's frame is never sent under another
 * site's. Chromium treats http://127.0.0.1 as potentially trustworthy, so local runs keep working.
 */
export const PORTAL_COOKIE = "__Host-kw_portal";
/** The link page's double-submit cookie (manager/login-csrf.ts), set with the same attributes. */
export const PORTAL_OPEN_COOKIE = "__Host-kw_portal_open";
const COOKIE = { httpOnly: true, secure: true, sameSite: "None", partitioned: true, path: "/" } as const;

/**
 * Forms post to this origin only; the styles and the script carry the response's nonce; images
 * from this origin only (the organization's logo, which keyway serves: never a third party's URL);
 * framing as the organization lists.
 */
const cspFor = (frameOrigins: string[]): Csp => ({
  defaultSrc: ["'none'"],
  styleSrc: [NONCE],
  scriptSrc: [NONCE],
  imgSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: frameOrigins.length > 0 ? frameOrigins : ["'none'"],
  baseUri: ["'none'"],
});

const NOTICES: Record<string, string> = {
  saved: "Saved; the next delivery follows the new settings.",
  paused:
    "Deliveries paused: nothing is sent to this endpoint until you resume them. Events published meanwhile are held and delivered on resume, in publish order " +
    `(at most ${PAUSE_HOLD_MAX_DELIVERIES.toLocaleString("en-US")} published during the pause, each held at most ${PAUSE_HOLD_MAX_DAYS} days; past that a delivery is marked failed, and a recovery after resuming sends it).`,
  resumed: "Deliveries resumed: the events held during the pause are being delivered now, in publish order.",
  "test-sent": "Test event published; its delivery is listed below.",
  resent: "Re-sent; the new attempt appears here once it is made.",
  "recovery-started": "Recovery started: failed deliveries of the window are being re-sent. Reload this page to follow its progress.",
  subscribed: "Subscribed; the next events of this type are sent to this endpoint.",
  unsubscribed: "Unsubscribed; events of this type are no longer sent to this endpoint.",
  "example-sent": "Example sent to this endpoint; its delivery is listed below.",
  "filter-saved": "Saved; the next events are sent only if they match your filter and channels too.",
};

/** What pausing asks before it happens: what is held, how it is delivered on resume, and the bound. */
const pauseConfirmation = (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
  title: `Pause deliveries to ${w.description ? `“${w.description}” ` : ""}(${w.id}, ${w.url || "polling"})?`,
  consequence:
    "While paused nothing is sent to this endpoint. Events published meanwhile are held, not dropped: when you resume, they are " +
    "delivered, in publish order (one at a time for an ordered endpoint). The bound: a pause holds at most " +
    `${PAUSE_HOLD_MAX_DELIVERIES.toLocaleString("en-US")} deliveries published during it, and each for at most ${PAUSE_HOLD_MAX_DAYS} days. ` +
    "Past either, a delivery is marked failed with an error that says so (it is listed under Deliveries), and a recovery after " +
    "resuming sends it. A test event cannot be sent while paused, and neither can a re-send or a recovery: resume first.",
  button: "Pause deliveries",
  danger: false,
});

/** The whole catalog in one page: the organization's types (at most MAX_EVENT_TYPES) and keyway's operational ones. */
const WHOLE_CATALOG = MAX_EVENT_TYPES + OPERATIONAL_EVENT_TYPES.length;

export function portalApp(now: () => number): Hono<PortalEnv> {
  const app = new Hono<PortalEnv>();
  app.use("/portal/*", provideDeps(now) as never);

  // The organization's logo, to its portal sessions only: the cookie resolved as for every page
  // (one that fails its signature asks no object), the hash the stored one's, else 404. Served
  // before the pages' headers, with its own: exactly the type its magic bytes said, no sniffing,
  // nothing in it may run (a sandboxed, empty CSP), cacheable by this browser only (the URL
  // changes with the image), and not embeddable by another origin.
  app.get("/portal/logo/:sha256", async (c) => {
    const deps = c.get("deps");
    const session = await resolveSession(deps, getCookie(c, PORTAL_COOKIE));
    const logo = session === null ? null : await portalLogo(deps, session, c.req.param("sha256"));
    const headers = { "X-Content-Type-Options": "nosniff", "Cross-Origin-Resource-Policy": "same-origin" };
    if (logo === null) {
      return c.body("There is no such page.\n", 404, {
        ...headers,
        "Content-Type": "text/plain; charset=utf-8",
        "Cache-Control": "no-store",
      });
    }
    return c.body(logo.bytes, 200, {
      ...headers,
      "Content-Type": logo.content_type,
      "Content-Security-Policy": "default-src 'none'; sandbox",
      "Cache-Control": "private, max-age=86400, immutable",
    });
  });

  // The session (or, on the link's pages, the link's organization) decides which origins may
  // frame the answer, so the CSP is built per request. X-Frame-Options has no allow-list (RFC
  // 7034 allows DENY or SAMEORIGIN only), and a browser that sees DENY refuses the frame whatever
  // the CSP says in some versions: it is dropped when origins are listed (frame-ancestors
  // supersedes it, CSP Level 3 section 6.4.2).
  app.use("/portal/*", async (c, next) => {
    const deps = c.get("deps");
    let origins: string[];
    if (c.req.path === "/portal/open") {
      const token = c.req.method === "POST" ? String((await form(c)).token ?? "") : (c.req.query("token") ?? "");
      origins = await frameOriginsForLink(deps, token);
    } else {
      const session = await resolveSession(deps, getCookie(c, PORTAL_COOKIE));
      if (session !== null) c.set("portal", session);
      origins = session?.frameOrigins ?? [];
    }
    await htmlSecurity<PortalEnv>(cspFor(origins))(c, next);
    if (origins.length > 0) {
      c.res = new Response(c.res.body, c.res);
      c.res.headers.delete("X-Frame-Options");
    }
  });

  // A form another site posts (hono/csrf, manager/same-origin.ts) is refused before any token is
  // read: a second layer beside the session's CSRF token. A dashboard that frames the portal does
  // not make its forms cross-site: they are the portal's own page's, posted to its own origin.
  app.use("/portal/*", sameOriginPosts);

  app.onError(async (err, c) => {
    const e = err instanceof ApiError ? err : null;
    if (!e || e.detail !== undefined) log.error("portal error", { path: c.req.path, detail: describeError(err) });
    const status = e?.status ?? 500;
    // One sentence for every id this session does not reach: which kind it was is not said.
    const message =
      status === 404 ? "There is no such page." : e ? e.developerMessage : "Something went wrong on our side. It has been logged.";
    // A portal limit (webhooks/portal.ts meteredPortalAction): the page says what was limited and
    // when to try again; Retry-After and the RateLimit fields say it to clients.
    if (status === 429 && e) {
      const res = await html(c, "Too many requests", <Refused message={message} />, 429);
      for (const [name, value] of Object.entries(e.headers)) res.headers.set(name, value);
      return res;
    }
    return html(c, status === 404 ? "Not found" : "That did not work", <Refused message={message} />, status as 400);
  });

  // The link's page: one button. Link scanners and previews GET links; only the POST uses it up.
  app.get("/portal/open", async (c) => {
    const deps = c.get("deps");
    const { nonce, token } = await issueLoginCsrf(deps.config.signingKeys, deps.now());
    setCookie(c, PORTAL_OPEN_COOKIE, nonce, { ...COOKIE, maxAge: LOGIN_CSRF_TTL_SECONDS });
    return html(c, "Open the webhook portal", <OpenPage token={c.req.query("token") ?? ""} formCsrf={token} />);
  });

  // The open: a double-submit pair against login CSRF (someone else's link opened in this browser
  // by a forged form), then the link, once. A second open is 410 Gone (RFC 9110 section 15.5.11:
  // the link existed and will never work again; nothing the visitor can do would make it work,
  // unlike the 403 of a refused form, which opening the link again fixes).
  app.post("/portal/open", async (c) => {
    const deps = c.get("deps");
    const fields = await form(c);
    const check = await checkLoginCsrf(deps.config.signingKeys, deps.now(), getCookie(c, PORTAL_OPEN_COOKIE), fields.csrf);
    if (check !== "ok") return html(c, "The portal could not be opened", <Refused message={REFUSALS.form} />, 403);
    const opened = await openPortal(deps, String(fields.token ?? ""));
    if (!opened.ok) return html(c, "The portal could not be opened", <Refused message={REFUSALS[opened.reason]} />, 410);
    deleteCookie(c, PORTAL_OPEN_COOKIE, COOKIE);
    setCookie(c, PORTAL_COOKIE, opened.cookie, { ...COOKIE, maxAge: PORTAL_SESSION_SECONDS });
    return c.redirect("/portal", 303);
  });

  // Everything below needs a live session; every POST its CSRF token.
  app.use("/portal/*", async (c, next) => {
    const session = c.get("portal");
    if (session === undefined) return html(c, "Session ended", <Refused message={REFUSALS.session} />, 403);
    if (c.req.method === "POST") {
      const fields = await form(c);
      if (!(await constantTimeEqual(String(fields.csrf ?? ""), session.csrf))) {
        throw new ApiError("forbidden", "The form could not be verified (missing or stale CSRF token). Reload the page and try again.");
      }
    }
    await next();
  });

  app.post("/portal/sign-out", async (c) => {
    await signOutPortal(c.get("deps"), portal(c));
    deleteCookie(c, PORTAL_COOKIE, COOKIE);
    c.set("portal", undefined);
    return html(
      c,
      "Signed out",
      <p>The portal session has ended. To come back, ask the provider of the webhooks for a new portal link.</p>,
    );
  });

  app.get("/portal", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const [config, traffic] = await Promise.all([
      getWebhookConfiguration(deps, s.orgId, s.configurationId),
      webhookTraffic(deps, s.orgId, s.configurationId),
    ]);
    const origin = publicBaseUrl(c.env).url ?? new URL(c.req.url).origin;
    return page(
      c,
      "Endpoint",
      "home",
      <HomePage config={config} traffic={traffic} csrf={s.csrf} view={webhookConfigurationView(config, keywayOrigin(c))} origin={origin} />,
      endpointName(config),
    );
  });

  app.get("/portal/deliveries", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const query = deliveryQuery(c);
    // A search for a webhook-id (what the receiver saw) opens that delivery, if it is this endpoint's.
    if (query.search?.kind === "delivery") {
      const found = await deliveryOrNull(c, query.search.id);
      if (found !== null) return c.redirect(`/portal/deliveries/${found.id}`, 303);
    }
    const [config, deliveries] = await Promise.all([
      getWebhookConfiguration(deps, s.orgId, s.configurationId),
      query.search?.kind === "delivery"
        ? { items: [], next_cursor: null }
        : listDeliveries(deps, s.orgId, s.configurationId, { limit: DELIVERIES_PAGE, cursor: query.cursor }, query.filter),
    ]);
    return page(
      c,
      "Deliveries",
      "deliveries",
      <DeliveriesPage deliveries={deliveries.items} query={query} next={deliveries.next_cursor} />,
      endpointName(config),
    );
  });

  app.get("/portal/deliveries/:delivery", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const { delivery, body } = await getDeliveryWithBody(deps, s.orgId, c.req.param("delivery"));
    if (delivery.webhook_configuration_id !== s.configurationId) throw notHere();
    const config = await getWebhookConfiguration(deps, s.orgId, s.configurationId);
    return page(
      c,
      `Delivery of ${delivery.event_type}`,
      "deliveries",
      <DeliveryDetail
        base={`/portal/deliveries/${delivery.id}`}
        config={config}
        delivery={delivery}
        body={body}
        sentHeaders={maskedWebhookHeaders(delivery.id, config)}
        resendable={config.delivery !== "polling" && canResend(deps, config, delivery)}
      />,
      endpointName(config),
    );
  });

  app.get("/portal/deliveries/:delivery/resend", async (c) => {
    const { config, delivery } = await deliveryFor(c);
    const base = `/portal/deliveries/${delivery.id}`;
    const confirmation = confirmations.resendDelivery(delivery, config);
    return page(
      c,
      confirmation.title,
      "deliveries",
      <Confirm {...confirmation} action={`${base}/resend`} cancel={base} csrf={portal(c).csrf} />,
      endpointName(config),
    );
  });

  app.post("/portal/deliveries/:delivery/resend", async (c) => {
    const { delivery } = await deliveryFor(c);
    const s = portal(c);
    const deps = c.get("deps");
    await meteredPortalAction(deps, s, "resend", () => retryDelivery(deps, s.orgId, delivery.id, receiverActor(s)));
    return c.redirect(`/portal/deliveries/${delivery.id}?notice=resent`, 303);
  });

  // A token request only, answered on this page in words (nothing of the token is shown).
  app.post("/portal/test-connection", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const [config, result] = await Promise.all([
      getWebhookConfiguration(deps, s.orgId, s.configurationId),
      meteredPortalAction(deps, s, "connection_test", () => testConnection(deps, s.orgId, s.configurationId, receiverActor(s))),
    ]);
    return page(
      c,
      "Connection test",
      "home",
      <>
        <ConnectionTestResult result={result} />
        <p>
          <a href="/portal">Back to the endpoint</a> · <a href="/portal/settings">Change the token endpoint's settings</a>
        </p>
      </>,
      endpointName(config),
    );
  });

  app.post("/portal/test", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    await meteredPortalAction(deps, s, "test_event", () => sendTestEvent(deps, s.orgId, s.configurationId, receiverActor(s)));
    return c.redirect("/portal/deliveries?notice=test-sent", 303);
  });

  app.get("/portal/rotate-signing-secret", async (c) => {
    const s = portal(c);
    const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
    const confirmation = confirmations.rotateSigningSecret(config, SignatureScheme.safeParse(c.req.query("scheme")).data);
    return page(
      c,
      confirmation.title,
      "home",
      <Confirm {...confirmation} action="/portal/rotate-signing-secret" cancel="/portal" csrf={s.csrf} />,
      endpointName(config),
    );
  });

  // The new secret is shown once, on this answer to the POST (never behind a GET that could be replayed).
  app.post("/portal/rotate-signing-secret", async (c) => {
    const s = portal(c);
    const scheme = SignatureScheme.safeParse((await form(c)).signature_scheme).data;
    const deps = c.get("deps");
    // Metered like the portal's other actions, and its graces take only the receiver's slots (planRotation).
    const rotated = await meteredPortalAction(deps, s, "rotate_signing_secret", () =>
      rotateSigningSecret(deps, s.orgId, s.configurationId, receiverActor(s), scheme, "receiver"),
    );
    return page(
      c,
      "New signing secret",
      "home",
      <SigningSecretRotated
        base="/portal"
        secret={rotated.signingSecret}
        publicKey={rotated.config.signing_secrets[0]?.public_key ?? null}
        previousExpiresAt={rotated.previousExpiresAt}
      />,
      endpointName(rotated.config),
    );
  });

  // Issue 45: a polling configuration's read token, as the signing secret: rotated here, shown once on the POST's answer.
  app.get("/portal/rotate-polling-token", async (c) => {
    const s = portal(c);
    const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
    const confirmation = confirmations.rotatePollingToken(config);
    return page(
      c,
      confirmation.title,
      "home",
      <Confirm {...confirmation} action="/portal/rotate-polling-token" cancel="/portal" csrf={s.csrf} />,
      endpointName(config),
    );
  });

  app.post("/portal/rotate-polling-token", async (c) => {
    const s = portal(c);
    const { config, token } = await rotatePollingToken(c.get("deps"), s.orgId, s.configurationId, receiverActor(s), "receiver");
    return page(
      c,
      "New polling token",
      "home",
      <>
        <SecretOnce id="polling-token" label="polling token" value={token} stored="hash" />
        <p>
          The previous token no longer reads. <a href="/portal">Back to the endpoint</a>
        </p>
      </>,
      endpointName(config),
    );
  });

  app.get("/portal/settings", async (c) => {
    const s = portal(c);
    const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
    const oauth = webhookConfigurationView(config, keywayOrigin(c)).oauth;
    return page(
      c,
      "Settings",
      "settings",
      <SettingsPage oauth={oauth} values={portalSettingsValues(config, oauth)} csrf={s.csrf} />,
      endpointName(config),
    );
  });

  // URLs go through the API's SSRF guard (webhooks/configurations.ts): a private address is a 400
  // naming the field. A refusal answers with the form again: every value as typed (the client
  // secret typed in this submit too) and every field's message at once (manager/form-check.ts).
  app.post("/portal/settings", async (c) => {
    const s = portal(c);
    const fields = await form(c);
    const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string).trim() : "");
    const events = text("events")
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== "");
    const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
    const current = webhookConfigurationView(config, keywayOrigin(c)).oauth;
    /** Saves the change `build` makes, as the receiver's; a refused one is the form again, with why beside each field. */
    const save = async (build: () => UpdateWebhookConfigurationInput, values: PortalSettingsValues) => {
      try {
        await updateWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId, build(), receiverActor(s), "receiver");
      } catch (err) {
        const errors = formErrorsOf(err, settingsField, settingsMessage);
        if (errors === null) throw err;
        return page(
          c,
          "Settings",
          "settings",
          <SettingsPage oauth={current} values={values} errors={errors} csrf={s.csrf} />,
          endpointName(config),
          errors.status,
        );
      }
      return c.redirect("/portal/settings?notice=saved", 303);
    };
    if (current === null) {
      // A polling configuration (issue 45): its event types are all the receiver sets.
      return save(() => parseInput(UpdateWebhookConfigurationInput, { events: events.length === 0 ? null : events }), {
        ...portalSettingsValues(config, null),
        events: text("events"),
      });
    }
    // Issue 42: the client id, the method and the assertion's audience are not the receiver's to
    // change, and the page has no field for them. A form that posts them anyway (crafted) has them
    // passed on, so the domain refuses a change with a 400 naming the field rather than dropping it.
    const posted = postedReceiverOAuth(fields);
    const {
      auth_method: _method,
      assertion_audience: _audience,
      ...settings
    } = updateOAuthInput({ ...posted, auth_method: current.auth_method }, current);
    const crafted = {
      ...(text("client_id") !== "" ? { client_id: text("client_id") } : {}),
      ...(fields.auth_method !== undefined ? { auth_method: posted.auth_method } : {}),
      ...(text("assertion_audience") !== "" ? { assertion_audience: text("assertion_audience") } : {}),
    };
    const values: PortalSettingsValues = {
      url: text("url"),
      token_url: text("token_url"),
      client_secret: text("client_secret"),
      events: text("events"),
      scope: posted.scope,
      resource: posted.resource,
      audience: posted.audience,
      dpop: posted.dpop,
    };
    const raw = {
      url: values.url,
      oauth: {
        token_url: values.token_url,
        ...(values.client_secret !== "" ? { client_secret: values.client_secret } : {}),
        ...settings,
        ...crafted,
      },
      events: events.length === 0 ? null : events,
    };
    return save(() => checkedInput(UpdateWebhookConfigurationInput, raw, targetIssues(c.get("deps"), values)), values);
  });

  // Pause and resume are the configuration's status (PATCH `status` in the API): `paused` holds
  // what is published meanwhile (objects/endpoints, policy.ts's bound). Pausing asks first.
  app.get("/portal/pause", async (c) => {
    const s = portal(c);
    const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
    const confirmation = pauseConfirmation(config);
    return page(
      c,
      confirmation.title,
      "home",
      <Confirm {...confirmation} action="/portal/pause" cancel="/portal" csrf={s.csrf} />,
      endpointName(config),
    );
  });

  for (const [path, status, notice] of [
    ["/portal/pause", "paused", "paused"],
    ["/portal/resume", "active", "resumed"],
  ] as const) {
    app.post(path, async (c) => {
      const s = portal(c);
      await updateWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId, { status }, receiverActor(s), "receiver");
      return c.redirect(`/portal?notice=${notice}`, 303);
    });
  }

  app.get("/portal/recover", (c) => recoverPage(c, { since: "", until: "" }));

  // A refusal the receiver can correct (a bad window: 400; deliveries paused: 409) comes back on
  // the form with the values as entered; anything else is the error page's.
  app.post("/portal/recover", async (c) => {
    const s = portal(c);
    const fields = await form(c);
    const values: RecoverValues = { since: field(fields, "since"), until: field(fields, "until") };
    try {
      const input = parseInput(RecoverInput, windowInput(values));
      const deps = c.get("deps");
      const started = await meteredPortalAction(deps, s, "recover", () =>
        recoverDeliveries(deps, s.orgId, s.configurationId, input, receiverActor(s)),
      );
      return c.redirect(`/portal/recoveries/${started.id}?notice=recovery-started`, 303);
    } catch (err) {
      // A 409 says why in the configuration's words: paused (the receiver's) or disabled.
      const conflict = err instanceof ApiError && err.code === "conflict";
      const status = conflict ? (await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId)).status : undefined;
      const errors = recoverErrors(err, status);
      if (errors === null) throw err;
      return recoverPage(c, values, errors);
    }
  });

  // Recoveries are kept by the endpoint's own object, found through the session's configuration:
  // another configuration's recovery id is not there, so it is a 404 like any unknown id.
  app.get("/portal/recoveries/:recovery", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const [config, recovery] = await Promise.all([
      getWebhookConfiguration(deps, s.orgId, s.configurationId),
      getRecovery(deps, s.orgId, s.configurationId, c.req.param("recovery")),
    ]);
    return page(c, "Recovery", "recover", <RecoveryDetail recovery={recovery} />, endpointName(config));
  });

  app.get("/portal/catalog", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const cursor = (c.req.query("cursor") ?? "").trim();
    const [config, types, whole] = await Promise.all([
      getWebhookConfiguration(deps, s.orgId, s.configurationId),
      listEventTypes(deps, s.orgId, { limit: CATALOG_PAGE, ...(cursor !== "" ? { cursor } : {}) }),
      listEventTypes(deps, s.orgId, { limit: WHOLE_CATALOG }),
    ]);
    const names = new Set(whole.items.map((t) => t.name));
    return page(
      c,
      "Event catalog",
      "catalog",
      <CatalogPage
        types={types.items}
        events={config.events}
        csrf={s.csrf}
        cursor={cursor !== "" ? cursor : undefined}
        next={types.next_cursor}
        uncatalogued={(config.events ?? []).filter((e) => !names.has(e))}
      />,
      endpointName(config),
    );
  });

  // The catalog as the REST API serves it (GET /v1/event-catalog), on the same origin.
  app.get("/portal/catalog/openapi.json", async (c) => {
    const s = portal(c);
    return c.json(await eventCatalog(c.get("deps"), s.orgId, publicBaseUrl(c.env).url ?? new URL(c.req.url).origin));
  });

  app.get("/portal/event-types/:name", async (c) => {
    const s = portal(c);
    const deps = c.get("deps");
    const [config, type] = await Promise.all([
      getWebhookConfiguration(deps, s.orgId, s.configurationId),
      getEventType(deps, s.orgId, c.req.param("name")),
    ]);
    return page(
      c,
      `Event type ${type.name}`,
      "catalog",
      <>
        <p>
          <a href="/portal/catalog">All event types</a>
        </p>
        <EventTypeEntry type={type} events={config.events} csrf={s.csrf} open={true} heading={null} />
      </>,
      endpointName(config),
    );
  });

  // Subscribing changes the configuration's `events` through the settings page's domain function
  // (so the same rules and audit hold). `events` null is every event but keyway's operational
  // ones, which are received only when named: a change from "every event" names the catalog's
  // other types (the page says so before the button is pressed). Unsubscribing from the only
  // named type would leave an empty list, which the API refuses (it would not mean "none").
  for (const [action, on] of [
    ["subscribe", true],
    ["unsubscribe", false],
  ] as const) {
    app.post(`/portal/event-types/:name/${action}`, async (c) => {
      const s = portal(c);
      const deps = c.get("deps");
      const [config, type] = await Promise.all([
        getWebhookConfiguration(deps, s.orgId, s.configurationId),
        getEventType(deps, s.orgId, c.req.param("name")),
      ]);
      const back = `${typeHref(type.name)}?notice=${action}d`;
      if (subscribed(config.events, type) === on) return c.redirect(back, 303);
      // Issue 42: operational events describe the organization's other endpoints; they are its own.
      if (on && type.operational) {
        throw new ApiError(
          "forbidden",
          `${type.name} is one of keyway's operational event types: they describe the organization's other endpoints, so only the organization's own operations configurations receive them.`,
        );
      }
      let events: string[];
      if (config.events === null) {
        const whole = await listEventTypes(deps, s.orgId, { limit: WHOLE_CATALOG });
        const every = whole.items.filter((t) => !t.operational).map((t) => t.name);
        events = on ? [...every, type.name] : every.filter((name) => name !== type.name);
      } else {
        events = on ? [...config.events, type.name] : config.events.filter((name) => name !== type.name);
      }
      if (events.length === 0) {
        throw new ApiError(
          "invalid_request",
          `Unsubscribing from ${type.name} would leave this endpoint subscribed to no event type, which is not a setting: pause deliveries on the Endpoint page to receive nothing, or empty the event types on the Settings page to receive every event.`,
        );
      }
      const input = parseInput(UpdateWebhookConfigurationInput, { events });
      await updateWebhookConfiguration(deps, s.orgId, s.configurationId, input, receiverActor(s), "receiver");
      return c.redirect(back, 303);
    });
  }

  // "Send an example" (issue 42): one event of a catalog type, its data as entered (an example to
  // start from), checked against the type's schema and sent to this endpoint only, like the test
  // event; never an operational type, which is the organization's (403). A refusal the receiver
  // can correct comes back on the form with the text as entered.
  app.get("/portal/event-types/:name/send-example", async (c) => {
    const type = await sendableType(c);
    return sendExamplePage(c, type, exampleValues(type, exampleIndex(c.req.query("example"), type)));
  });

  app.post("/portal/event-types/:name/send-example", async (c) => {
    const s = portal(c);
    const type = await sendableType(c);
    const fields = await form(c);
    const values: SendExampleValues = { data: typeof fields.data === "string" ? fields.data : "", webhook_configuration_id: "" };
    try {
      const data = postedExampleData(values.data);
      const input = { event_type: type.name, data };
      const deps = c.get("deps");
      // Metered as a test event: it is one, of another type.
      await meteredPortalAction(deps, s, "test_event", () =>
        sendExampleEvent(deps, s.orgId, s.configurationId, input, receiverActor(s), { operational: false }),
      );
      return c.redirect(`/portal/deliveries?event_type=${type.name}&notice=example-sent`, 303);
    } catch (err) {
      const errors = sendExampleErrors(err);
      if (errors === null) throw err;
      return sendExamplePage(c, type, values, errors);
    }
  });

  filterRoutes(app, { portal, form, page });

  app.all("/portal/*", () => {
    throw notHere();
  });
  return app;
}

const notHere = () => new ApiError("not_found", "There is no such page.");

/** The catalog type named in the path, if the portal may send it: not one of keyway's operational types (403). */
async function sendableType(c: C): Promise<EventTypeView> {
  const type = await getEventType(c.get("deps"), portal(c).orgId, c.req.param("name") ?? "");
  if (type.operational) {
    throw new ApiError("forbidden", `${type.name} is one of keyway's operational event types; only the organization can send it.`);
  }
  return type;
}

async function sendExamplePage(
  c: C,
  type: EventTypeView,
  values: SendExampleValues,
  errors?: FormErrors<SendExampleField> & { status: 400 | 409 | 413 },
) {
  const s = portal(c);
  const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
  // 413 cannot come from here: the portal reads forms of at most 16 KiB, far below an event's bound.
  const status = errors === undefined ? 200 : errors.status === 413 ? 400 : errors.status;
  return page(
    c,
    `Send an example of ${type.name}`,
    "catalog",
    <SendExamplePage type={type} csrf={s.csrf} values={values} errors={errors} />,
    endpointName(config),
    status,
  );
}

/** The session of a request past the session check. */
function portal(c: C): PortalSession {
  const s = c.get("portal");
  if (s === undefined) throw new ApiError("forbidden", REFUSALS.session);
  return s;
}

async function form(c: C): Promise<Record<string, unknown>> {
  const cached = c.get("form");
  if (cached) return cached;
  const fields = await readFields(c.req.raw, ["form"], 16 * 1024);
  c.set("form", fields);
  return fields;
}

const endpointName = (config: { id: string; description: string | null; url: string }) => configName(config);

/** A page of the layout; in a session with its navigation and sign-out form. */
function html(c: C, title: string, body: Child, status: 200 | 400 | 403 | 409 | 410 | 429 = 200, extra: Partial<PortalPageProps> = {}) {
  const s = c.get("portal");
  return c.html(
    <PortalPage
      title={title}
      nonce={pageNonce(c)}
      now={c.get("deps").now()}
      {...(s ? { csrf: s.csrf, branding: s.branding, ...NAV } : {})}
      {...extra}
    >
      {body}
    </PortalPage>,
    status,
  );
}

/** Every session page has the whole navigation, "Recover" and "Event catalog" included. */
const NAV = { recoverHref: "/portal/recover", catalogHref: "/portal/catalog" } as const;

function page(c: C, title: string, section: PortalPageProps["section"], body: Child, endpoint: string, status: 200 | 400 | 409 = 200) {
  const notice = status === 200 ? NOTICES[c.req.query("notice") ?? ""] : undefined;
  return html(c, title, body, status, { section, endpoint, ...(notice ? { notice } : {}) });
}

const field = (fields: Record<string, unknown>, name: string): string =>
  typeof fields[name] === "string" ? (fields[name] as string).trim() : "";

/**
 * The window as the API takes it. A `datetime-local` input sends `2025-03-01T14:30` (seconds
 * when given), with no zone: it is read as UTC, as the page says, so `Z` is appended (a space
 * for the `T`, as a person types it where the input is plain text, is accepted too). Anything
 * else is passed as typed, for RecoverInput to refuse or accept (a full ISO time with `Z`).
 */
function windowInput(values: RecoverValues): Record<string, string> {
  const utc = (value: string) => {
    const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2}(\.\d{1,3})?)?Z?$/.exec(value);
    return m ? `${m[1]}T${m[2]}${m[3] ?? ":00"}Z` : value;
  };
  return { ...(values.since !== "" ? { since: utc(values.since) } : {}), ...(values.until !== "" ? { until: utc(values.until) } : {}) };
}

/** A refusal of the recover form in words, each field's message naming the field; null for any other error. */
function recoverErrors(err: unknown, status?: WebhookConfigurationRecord["status"]): (RecoverErrors & { status: 400 | 409 }) | null {
  if (!(err instanceof ApiError)) return null;
  if (err.code === "conflict") {
    return {
      message:
        status === "disabled"
          ? "Deliveries to this endpoint are disabled, so nothing can be re-sent: the Endpoint page says why, and whether you can enable them again."
          : "Deliveries to this endpoint are paused, so nothing can be re-sent. Resume them on the Endpoint page, then start the recovery.",
      fields: {},
      status: 409,
    };
  }
  if (err.code !== "invalid_request") return null;
  const fields: RecoverErrors["fields"] = {};
  for (const issue of err.input?.issues ?? []) {
    const name = issue.path[0];
    if (name !== "since" && name !== "until") continue;
    fields[name] ??= recoverMessage(name, "text" in issue ? issue.text : "");
  }
  const named = Object.values(fields);
  return { message: named.length > 0 ? "The time window needs correcting." : err.developerMessage, fields, status: 400 };
}

/** The text of an input issue (" is required", " is invalid", the domain's " must be before until (or now)") as a sentence. */
function recoverMessage(name: RecoverField, text: string): string {
  const label = RECOVER_LABELS[name];
  if (text === " is required") return `${label} is required: the start of the window, in UTC.`;
  // RecoverInput's refinement (until after since) has a message zod's phrase does not keep.
  if (text === " is invalid" && name === "until") return `${label} must be after since.`;
  if (text === " is invalid" || text === "") return `${label} must be a date and time in UTC, such as 2025-03-01 14:30.`;
  return `${label}${text}.`;
}

async function recoverPage(c: C, values: RecoverValues, errors?: RecoverErrors & { status: 400 | 409 }) {
  const s = portal(c);
  const deps = c.get("deps");
  const cursor = (c.req.query("cursor") ?? "").trim();
  const [config, recoveries] = await Promise.all([
    getWebhookConfiguration(deps, s.orgId, s.configurationId),
    listRecoveries(deps, s.orgId, s.configurationId, { limit: RECOVERIES_PAGE, ...(cursor !== "" ? { cursor } : {}) }),
  ]);
  return page(
    c,
    "Recover failed deliveries",
    "recover",
    <RecoverPage
      csrf={s.csrf}
      values={values}
      errors={errors}
      paused={config.status !== "active"}
      retentionDays={EVENT_RETENTION_DAYS}
      recoveries={recoveries.items}
      cursor={cursor !== "" ? cursor : undefined}
      next={recoveries.next_cursor}
    />,
    endpointName(config),
    errors?.status ?? 200,
  );
}

/** A delivery of the session's configuration; any other (another endpoint's, another organization's) is a 404. */
async function deliveryFor(c: C) {
  const s = portal(c);
  const deps = c.get("deps");
  const delivery = await getDelivery(deps, s.orgId, c.req.param("delivery") ?? "");
  if (delivery.webhook_configuration_id !== s.configurationId) throw notHere();
  return { config: await getWebhookConfiguration(deps, s.orgId, s.configurationId), delivery };
}

async function deliveryOrNull(c: C, id: string) {
  const s = portal(c);
  try {
    const d = await getDelivery(c.get("deps"), s.orgId, id);
    return d.webhook_configuration_id === s.configurationId ? d : null;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

/** The filters, as the manager reads them (manager/webhooks.tsx): status, event type, an event id or webhook-id, the cursor. */
function deliveryQuery(c: C): DeliveryQuery {
  const raw = (name: string) => (c.req.query(name) ?? "").trim();
  const q = raw("q");
  let search: DeliveryQuery["search"];
  if (q !== "") {
    if (/^msg_[0-9a-z]{26}$/.test(q)) search = { kind: "delivery", id: q };
    else if (/^evt_[0-9a-z]{26}$/.test(q)) search = { kind: "event", id: q };
    else throw new ApiError("invalid_request", "The search must be an event id (evt_...) or a webhook-id (msg_...).");
  }
  const filter = parseInput(
    DeliveryFilter,
    {
      ...(raw("status") !== "" ? { status: raw("status") } : {}),
      ...(raw("event_type") !== "" ? { event_type: raw("event_type") } : {}),
      ...(search?.kind === "event" ? { event_id: search.id } : {}),
    },
    "filters",
  );
  const cursor = raw("cursor");
  return { filter, q, search, ...(cursor !== "" ? { cursor } : {}) };
}

/** The settings form's field an input path names (`oauth.token_url` is token_url), or null (said above the form). */
function settingsField(path: string[]): PortalSettingsField | null {
  const name = path[0] === "oauth" ? path[1] : path[0];
  return name !== undefined && Object.hasOwn(PORTAL_SETTINGS_LABELS, name) ? (name as PortalSettingsField) : null;
}

/** A field's message: its label, then the issue (an event type's or a resource's by its number in the list). */
function settingsMessage(field: PortalSettingsField, issue: InputIssue): string {
  const inside = field === "events" ? { list: 1 } : field === "resource" ? { list: 2 } : undefined;
  return placedMessage(PORTAL_SETTINGS_LABELS[field], issue, inside);
}
