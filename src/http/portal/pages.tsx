/**
 * The portal's pages (issue 30 item 2): the link's "Open the portal" page and its refusal, the
 * endpoint's page (its settings as the receiver knows them, health and traffic charts, test event,
 * pause and resume), the deliveries list (filters, search and paging as in the manager) and the
 * settings form (URLs, receiver credentials with the secret write-only, event types). Plain data in,
 * markup out; routes.tsx loads the data. The charts, fields, tables and badges are the manager's
 * own components (http/manager/charts.tsx, views.tsx), shown read-only where the manager offers
 * operator-only actions.
 */
import type { FC } from "hono/jsx";
import type {
  DeliveryFilter,
  DeliveryRecord,
  WebhookConfiguration,
  WebhookConfigurationView,
  WebhookTrafficView,
} from "../../schemas/webhooks";
import { AttemptTraffic, Last24Hours } from "../manager/charts";
import type { FormErrors } from "../manager/form-check";
import { FormRefused } from "../manager/pages/event-types";
import { ReceiverOAuthFacts, receiverOAuthValuesOf, TokenRequestFields } from "../manager/pages/receiver-oauth";
import { DeliveryFilters, DeliveryList, Health, PollingFacts, SCHEME_WORDS } from "../manager/pages/webhooks";
import { CopyId, Field, PostForm, Time, Url } from "../manager/views";

/** The link's page: one button, so that a link scanner's GET does not use the link up. */
export const OpenPage: FC<{ token: string; formCsrf: string }> = ({ token, formCsrf }) => (
  <PostForm action="/portal/open" csrf={formCsrf} label="Open the webhook portal">
    <input type="hidden" name="token" value={token} />
    <p>
      This link opens a portal for one webhook endpoint: its deliveries and their attempts, re-sends, test events, the signing secret, its
      URLs and credentials. It opens <strong>once</strong>; the session it starts lasts up to 8 hours in this browser.
    </p>
    <button type="submit">Open the portal</button>
  </PostForm>
);

/** Why a link did not open, and what to do. */
export const REFUSALS = {
  used: "This portal link has already been opened. A link opens once; ask the provider of the webhooks for a new one.",
  expired: "This portal link has expired. Links are valid for minutes; ask the provider of the webhooks for a new one.",
  unknown:
    "This portal link cannot be opened: it has already been used, has expired, or is not a portal link. Ask the provider of the webhooks for a new one.",
  form: "The page could not be verified (it may be too old). Open the link again from where you received it.",
  session: "Your portal session has ended or expired. Ask the provider of the webhooks for a new portal link.",
} as const;

export const Refused: FC<{ message: string }> = ({ message }) => (
  <p class="warning" role="alert">
    {message}
  </p>
);

const LANES = {
  fast: "fast lane (answers in time)",
  new: "new lane (no deliveries yet)",
  slow: "slow lane (did not answer within the fast lane's deadline)",
} as const;

type OAuthView = WebhookConfigurationView["oauth"];

/** The endpoint's page; a polling configuration (issue 45) shows its reading instead of its URLs, OAuth and traffic. */
export const HomePage: FC<{
  config: WebhookConfiguration;
  traffic: WebhookTrafficView;
  csrf: string;
  view: WebhookConfigurationView;
  origin: string;
}> = ({ config, traffic, csrf, view, origin }) => {
  const oauth = view.oauth;
  const other = view.signature_scheme === "v1a" ? "v1" : "v1a";
  return (
    <>
      {view.polling !== null && <PollingFacts polling={view.polling} />}
      <dl class="facts">
        {oauth !== null && (
          <>
            <dt>Webhook URL</dt>
            <dd>
              <Url value={config.url} />
            </dd>
            <dt>Token URL</dt>
            <dd>
              <Url value={oauth.token_url} />
            </dd>
            <dt>Client id at the receiver</dt>
            <dd>
              <code class="wrap">{oauth.client_id}</code>
            </dd>
          </>
        )}
        <dt>Event types</dt>
        <dd>{config.events ? config.events.join(", ") : "all"}</dd>
        <dt>Configuration</dt>
        <dd>
          <CopyId value={config.id} label="configuration id" />
        </dd>
        {view.signature_scheme !== null && (
          <>
            <dt>Signature scheme</dt>
            <dd>{SCHEME_WORDS[view.signature_scheme]}</dd>
            {view.signing_public_key !== null && (
              <>
                <dt>Public key</dt>
                <dd>
                  <CopyId value={view.signing_public_key} label="public key" />
                </dd>
              </>
            )}
            <dt>Signing key rotated</dt>
            <dd>
              <Time at={view.signing_secret_rotated_at} />
            </dd>
          </>
        )}
      </dl>
      <section class="card" aria-labelledby="health">
        <h2 id="health">Health</h2>
        <p>
          <Health config={config} />.
        </p>
        {oauth !== null && (
          <>
            <Last24Hours last={traffic.last_24h} />
            <p>
              Delivery: {LANES[config.state.lane]};{" "}
              {config.ordered ? "ordered (one at a time, in publish order)" : "unordered (several at a time)"};{" "}
              {config.rate_limit === null ? "no rate limit" : `at most ${config.rate_limit} per second`}.
            </p>
          </>
        )}
        {config.status === "active" ? (
          <>
            <PostForm action="/portal/test" csrf={csrf} class="inline" label="Send a test event">
              <button type="submit" class="secondary">
                Send test event
              </button>
            </PostForm>{" "}
            {oauth !== null && (
              <>
                <a href="/portal/pause">Pause deliveries</a>
                <p class="hint">
                  While paused nothing is sent to this endpoint; events published meanwhile are held and delivered, in publish order, when
                  you resume (within a bound the next page states).
                </p>
              </>
            )}
          </>
        ) : config.status === "paused" ? (
          <PostForm action="/portal/resume" csrf={csrf} class="inline" label="Resume deliveries">
            <p>Deliveries are paused: events published meanwhile are held. Resuming delivers them now, in publish order.</p>
            <button type="submit">Resume deliveries</button>
          </PostForm>
        ) : (
          <PostForm action="/portal/resume" csrf={csrf} class="inline" label="Resume deliveries">
            <p>
              Deliveries are disabled{config.disabled_reason ? ` (${config.disabled_reason})` : ""}: nothing is sent, and events published
              meanwhile are not delivered to this endpoint. Resuming sends new events again and resets the health count.
            </p>
            <button type="submit">Resume deliveries</button>
          </PostForm>
        )}
      </section>
      {oauth !== null && (
        <>
          <section class="card" aria-labelledby="receiver-oauth">
            <h2 id="receiver-oauth">Your token endpoint</h2>
            <p>How keyway gets a token from your OAuth server before each webhook; change it on the Settings page.</p>
            <ReceiverOAuthFacts oauth={oauth} origin={origin} />
            <PostForm action="/portal/test-connection" csrf={csrf} class="inline" label="Test the connection to your token endpoint">
              <p>Fetches a token from your token URL (only that, as before a webhook) and says what happened; nothing is delivered.</p>
              <button type="submit" class="secondary">
                Test connection
              </button>
            </PostForm>
          </section>
          <AttemptTraffic hours={traffic.hours} days={traffic.days} />
          <h2>Signing secret</h2>
          <p>
            Rotate it when it may have leaked, or on a schedule. The current key keeps signing beside the new one for 24 hours.{" "}
            <a href="/portal/rotate-signing-secret">Rotate the signing secret</a> or{" "}
            <a href={`/portal/rotate-signing-secret?scheme=${other}`}>rotate to {other}</a> ({SCHEME_WORDS[other]}).
          </p>
        </>
      )}
      {view.polling !== null && (
        <>
          <h2>Polling token</h2>
          {view.polling.token_active ? (
            <p>
              Read your events at the polling URL above with <code>Authorization: Bearer</code> your polling token. Rotate it when it may
              have leaked: the new one is shown once and the current one stops reading at once.{" "}
              <a href="/portal/rotate-polling-token">Rotate the polling token</a>
            </p>
          ) : (
            <p>The organization has revoked this endpoint's polling token: reads are refused until it issues a new one.</p>
          )}
        </>
      )}
    </>
  );
};

/** What the deliveries list is narrowed to (routes.tsx `deliveryQuery`). */
export interface DeliveryQuery {
  filter: DeliveryFilter;
  q: string;
  search?: { kind: "delivery" | "event"; id: string } | undefined;
  cursor?: string;
}

function listHref(query: DeliveryQuery, cursor?: string): string {
  const params = new URLSearchParams();
  if (query.filter.status) params.set("status", query.filter.status);
  if (query.filter.event_type) params.set("event_type", query.filter.event_type);
  if (query.q) params.set("q", query.q);
  if (cursor) params.set("cursor", cursor);
  const text = params.toString();
  return `/portal/deliveries${text ? `?${text}` : ""}`;
}

export const DeliveriesPage: FC<{ deliveries: DeliveryRecord[]; query: DeliveryQuery; next: string | null }> = ({
  deliveries,
  query,
  next,
}) => {
  const filtered = query.filter.status !== undefined || query.filter.event_type !== undefined || query.q !== "";
  return (
    <>
      <DeliveryFilters action="/portal/deliveries" clearHref="/portal/deliveries" query={query} filtered={filtered} />
      <DeliveryList
        deliveries={deliveries}
        query={query}
        next={next}
        filtered={filtered}
        deliveryHref={(id) => `/portal/deliveries/${id}`}
        pageHref={(cursor) => listHref(query, cursor)}
        owner="endpoint"
      />
    </>
  );
};

/**
 * The receiver's settings: URLs, how keyway gets a token from the receiver's OAuth server (the
 * method, the secret write-only, scope, resource, audience, DPoP: the receiver runs that server, so
 * it knows them), event types.
 */
/** The settings form's fields, named as posted. */
export type PortalSettingsField = "url" | "token_url" | "client_secret" | "events" | "scope" | "resource" | "audience";

/** The settings as the form shows them: stored, or after a refusal as typed (the client secret typed in that submit too). */
export interface PortalSettingsValues {
  url: string;
  token_url: string;
  client_secret: string;
  /** As typed: comma-separated; empty for every event. */
  events: string;
  scope: string;
  resource: string;
  audience: string;
  dpop: boolean;
}

export const PORTAL_SETTINGS_LABELS: Record<PortalSettingsField, string> = {
  url: "Webhook URL",
  token_url: "Token URL",
  client_secret: "Client secret at the receiver",
  events: "Event types",
  scope: "Scope",
  resource: "Resource indicators",
  audience: "Audience",
};

/** A stored configuration as the form starts: the client secret is write-only, never put in a page. */
export const portalSettingsValues = (config: WebhookConfiguration, oauth: OAuthView): PortalSettingsValues => {
  const o = receiverOAuthValuesOf(oauth);
  return {
    url: config.url,
    token_url: oauth?.token_url ?? "",
    client_secret: "",
    events: config.events ? config.events.join(", ") : "",
    scope: o.scope,
    resource: o.resource,
    audience: o.audience,
    dpop: o.dpop,
  };
};

/**
 * The endpoint's settings. A refused save comes back with every value as typed (the client secret
 * typed in that submit too: the page is no-store and same-origin) and every field's message
 * beside it at once, keyway's message above the form linking to each.
 */
export const SettingsPage: FC<{
  oauth: OAuthView;
  values: PortalSettingsValues;
  errors?: FormErrors<PortalSettingsField> | undefined;
  csrf: string;
}> = ({ oauth, values, errors, csrf }) => {
  const err = (field: PortalSettingsField) => errors?.fields[field];
  const events = (
    <Field
      id="events"
      label={PORTAL_SETTINGS_LABELS.events}
      value={values.events}
      hint="comma-separated; empty for all"
      error={err("events")}
    />
  );
  return (
    <>
      <FormRefused errors={errors} what="Nothing was changed." />
      {oauth === null ? (
        // A polling configuration (issue 45): no URL and no token endpoint; its event types only.
        <PostForm action="/portal/settings" csrf={csrf} label="Edit the endpoint">
          {events}
          <button type="submit">Save</button>
        </PostForm>
      ) : (
        <PostForm action="/portal/settings" csrf={csrf} label="Edit the endpoint">
          <Field id="url" label={PORTAL_SETTINGS_LABELS.url} value={values.url} required error={err("url")} />
          <Field
            id="token_url"
            label={PORTAL_SETTINGS_LABELS.token_url}
            value={values.token_url}
            required
            error={err("token_url")}
            hint={
              oauth.auth_method === "private_key_jwt"
                ? "may move within its origin only: with private_key_jwt a new token server is the provider's to set"
                : undefined
            }
          />
          {/* Issue 42: whose identity keyway asserts is the organization's to set, never the receiver's. */}
          <dl>
            <dt>Client id at the receiver</dt>
            <dd>
              <code>{oauth.client_id}</code>
            </dd>
            <dt>How keyway authenticates</dt>
            <dd>
              <code>{oauth.auth_method}</code>
              {oauth.assertion_audience !== null && (
                <>
                  {" "}
                  (assertion audience <code>{oauth.assertion_audience}</code>)
                </>
              )}
            </dd>
          </dl>
          <p class="hint">
            The client id, the authentication method and the assertion's audience are set by the provider of the webhooks: they decide whose
            identity keyway asserts, so a change goes through them.
          </p>
          {oauth.auth_method !== "private_key_jwt" && (
            <Field
              id="client_secret"
              type="password"
              label={PORTAL_SETTINGS_LABELS.client_secret}
              hint="the stored one is never shown; empty keeps it; required when either URL moves to another origin"
              value={values.client_secret === "" ? undefined : values.client_secret}
              error={err("client_secret")}
            />
          )}
          <TokenRequestFields
            values={{
              ...receiverOAuthValuesOf(oauth),
              scope: values.scope,
              resource: values.resource,
              audience: values.audience,
              dpop: values.dpop,
            }}
            err={(field) => (field === "scope" || field === "resource" || field === "audience" ? err(field) : undefined)}
            receiver
          />
          {events}
          <button type="submit">Save</button>
        </PostForm>
      )}
    </>
  );
};
