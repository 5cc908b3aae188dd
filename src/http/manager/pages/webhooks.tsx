/**
 * The manager's Webhook configurations and deliveries: the list with health, the form that creates a configuration or edits one (the receiver's client secret write-only) and the new signing secret shown once, a configuration's page (health, charts, deliveries with filters, test events, signing-secret rotation), its deletion's confirmation, and a delivery's full story (payload, the request we sent, each attempt and the receiver's answer, re-send). Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { Child, FC } from "hono/jsx";
import type {
  Delivery,
  DeliveryFilter,
  DeliveryRecord,
  SignatureScheme,
  WebhookConfiguration,
  WebhookConfigurationView,
  WebhookTrafficView,
} from "../../../schemas/webhooks";
import { healthStatus } from "../../../webhooks/configurations";
import { AttemptTraffic, Last24Hours } from "../charts";
import type { FormErrors } from "../form-check";
import { List } from "../list";
import { Checkbox, CopyId, Field, PostForm, SecretOnce, ShownFor, Status, TableRegion, TextArea, Time, Url, when } from "../views";
import type { Confirmation } from "./common";
import {
  AuthMethodChoice,
  CLIENT_SECRET_NOT_FOR_JWT,
  EMPTY_RECEIVER_OAUTH,
  RECEIVER_OAUTH_LABELS,
  ReceiverOAuthFacts,
  type ReceiverOAuthField,
  type ReceiverOAuthValues,
  receiverOAuthValuesOf,
  TokenRequestFields,
} from "./receiver-oauth";

/**
 * A reason keyway wrote (a pause's, a disabling's) with each ISO instant in it shown as Time, so
 * the sentence has one time format, the app's, and no raw `2026-11-26T20:34:20.346Z`.
 */
export const Reason: FC<{ text: string }> = ({ text }) => (
  <>
    {/* "probe at <instant>" reads "probe in 2 minutes": a relative time takes no "at". */}
    {text
      .replace(/ at (?=\d{4}-\d{2}-\d{2}T)/g, " ")
      .split(/(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)/)
      .map((part, i) => (i % 2 === 1 ? <Time at={new Date(part).toISOString()} /> : part))}
  </>
);

/**
 * Health at a glance: one badge (healthStatus) and what it means in words, its times in the one
 * format of Time. The manager's list and page and the portal's home page all show it.
 */
export const Health: FC<{ config: WebhookConfiguration }> = ({ config: w }) => {
  const status = healthStatus(w);
  return (
    <>
      <Status value={status} />{" "}
      {status === "disabled" ? (
        w.disabled_reason ? (
          <Reason text={w.disabled_reason} />
        ) : (
          "nothing is sent to it until it is re-enabled"
        )
      ) : status === "paused" ? (
        <>
          <Reason text={w.state.pause_reason ?? ""} />
          {w.state.paused_until && (
            <>
              ; resumes <Time at={w.state.paused_until} />
            </>
          )}
        </>
      ) : status === "failing" ? (
        <>
          every attempt has failed since <Time at={w.state.failing_since} />
        </>
      ) : w.delivery === "polling" ? (
        <>
          polling; last poll <Time at={w.state.polling?.last_polled_at ?? null} never="never" />
        </>
      ) : w.state.last_delivered_at !== null ? (
        <>
          healthy; last delivered <Time at={w.state.last_delivered_at} />
        </>
      ) : (
        "no deliveries yet"
      )}
    </>
  );
};

/** The lane in words (docs/webhooks.md, "Lanes"). */
const LANES = {
  fast: "fast lane (answers in time)",
  new: "new lane (no deliveries yet)",
  slow: "slow lane (did not answer within the fast lane's deadline)",
} as const;

/**
 * The latest attempt in one line: when, then what. An error is keyway's sentence and already
 * names its step and status ("token endpoint could not be reached"), so it stands alone; without
 * one, the step, the status and the outcome say what happened.
 */
export const LastAttempt: FC<{ delivery: Pick<DeliveryRecord, "attempts"> }> = ({ delivery }) => {
  const last = delivery.attempts.at(-1);
  if (!last) return <>-</>;
  const what = last.error ?? [last.step, last.http_status, last.outcome].filter((x) => x !== null).join(" ");
  return (
    <>
      <Time at={last.at} />: {what}
    </>
  );
};

type Last24h = WebhookTrafficView["last_24h"];

/** The last 24 hours in a few words: attempts, success rate and mean latency. */
const last24hText = (t: Last24h): string =>
  t.success_rate === null
    ? "no attempts in the last 24 hours"
    : `${Math.round(t.success_rate * 1000) / 10}% of ${t.succeeded + t.failed} attempts succeeded, ${t.latency_ms_avg} ms on average`;

/** A configuration of the list with its last 24 hours. */
type ConfigRow = { config: WebhookConfiguration; last24h: Last24h };

export const WebhookConfigurations: FC<{ base: string; create: string; configs: ConfigRow[] }> = ({ base, create, configs }) => (
  <>
    {configs.length === 0 ? (
      <p>
        No webhook configurations yet. A configuration says where this organization's events go and how keyway signs in to the receiver.{" "}
        <a href={create}>Create the first webhook configuration</a> (or create one through the API).
      </p>
    ) : (
      <p>
        <a href={create}>New webhook configuration</a>
      </p>
    )}
    <List<ConfigRow>
      label="Webhook configurations"
      wide
      caption="Every configuration of the organization (at most 20)"
      rows={configs}
      // The paragraph above says it, with the link to the form.
      empty={null}
      columns={[
        {
          header: "Configuration",
          cell: ({ config: w }) => (
            <>
              <a href={`${base}/${w.id}`}>{configName(w)}</a>
              {w.description !== null && (
                <>
                  <br />
                  {w.url === "" ? "polling" : <Url value={w.url} />}
                </>
              )}
            </>
          ),
        },
        { header: "Health", class: "lead", cell: ({ config: w }) => <Health config={w} /> },
        { header: "Last 24 hours", cell: ({ last24h }) => last24hText(last24h) },
        { header: "Events", cell: ({ config: w }) => (w.events ? w.events.join(", ") : "all") },
      ]}
    />
  </>
);

/** What the deliveries list is narrowed to (routes parse it: webhooks.tsx `deliveryQuery`). */
export interface DeliveryQuery {
  filter: DeliveryFilter;
  /** The search box as typed. */
  q: string;
  search?: { kind: "delivery" | "event"; id: string } | undefined;
  cursor?: string;
}

const STATUSES = ["pending", "retrying", "delivered", "failed"] as const;

/** Deliveries per page, in the manager's list and the portal's (their routes ask for as many). */
export const DELIVERIES_PAGE = 25;

/**
 * A page of deliveries, newest first, with their last attempt, and the pager: the manager's list
 * on a configuration's page and the portal's (`owner` names what a searched id was not found in).
 */
export const DeliveryList: FC<{
  deliveries: DeliveryRecord[];
  query: DeliveryQuery;
  next: string | null;
  filtered: boolean;
  deliveryHref: (id: string) => string;
  pageHref: (cursor?: string) => string;
  owner: string;
}> = ({ deliveries, query, next, filtered, deliveryHref, pageHref, owner }) => (
  <>
    {query.search?.kind === "delivery" && (
      <p class="warning">
        No delivery {query.search.id} of this {owner}.
      </p>
    )}
    {deliveries.length > 0 && (
      <TableRegion label="Deliveries">
        <table class="wide">
          <caption class="hint">
            Newest first, {DELIVERIES_PAGE} a page{filtered ? ", filtered" : ""}
          </caption>
          <thead>
            <tr>
              <th scope="col">Delivery (webhook-id)</th>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Last attempt</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr>
                <td data-label="Delivery (webhook-id)">
                  <a href={deliveryHref(d.id)}>
                    <code>{d.id}</code>
                  </a>
                </td>
                <td data-label="Event">
                  {d.event_type}
                  <br />
                  <code class="hint">{d.event_id}</code>
                </td>
                <td data-label="Status" class="lead">
                  <Status value={d.status} />
                </td>
                <td data-label="Last attempt" class="lead">
                  <LastAttempt delivery={d} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    )}
    {deliveries.length === 0 && query.search?.kind !== "delivery" && <p>{filtered ? "No delivery matches." : "No deliveries yet."}</p>}
    {(next !== null || query.cursor !== undefined) && (
      <nav class="pager" aria-label="Deliveries pages">
        {query.cursor !== undefined && <a href={pageHref()}>First page</a>}
        {next !== null && <a href={pageHref(next)}>Next page</a>}
      </nav>
    )}
  </>
);

/** The deliveries' filters (status, event type, an event id or webhook-id): the manager's and the portal's list. */
export const DeliveryFilters: FC<{ action: string; clearHref: string; query: DeliveryQuery; filtered: boolean }> = ({
  action,
  clearHref,
  query,
  filtered,
}) => (
  <form class="filters" method="get" action={action} aria-label="Filter deliveries">
    <div>
      <label for="status">Status</label>
      <select id="status" name="status">
        <option value="" selected={query.filter.status === undefined}>
          any
        </option>
        {STATUSES.map((st) => (
          <option value={st} selected={query.filter.status === st}>
            {st}
          </option>
        ))}
      </select>
    </div>
    <div>
      <label for="event_type">Event type</label>
      <input id="event_type" name="event_type" type="text" value={query.filter.event_type ?? ""} placeholder="order.created" />
    </div>
    <div>
      <label for="q">Event id or webhook-id</label>
      <input id="q" name="q" type="search" value={query.q} placeholder="evt_... or msg_..." />
    </div>
    <button type="submit">Filter</button>
    {filtered && (
      <a class="button secondary" href={clearHref}>
        Clear
      </a>
    )}
  </form>
);

/** The query string of the list with these filters (and a cursor), for links that keep them. */
function listHref(base: string, query: DeliveryQuery, cursor?: string): string {
  const params = new URLSearchParams();
  if (query.filter.status) params.set("status", query.filter.status);
  if (query.filter.event_type) params.set("event_type", query.filter.event_type);
  if (query.q) params.set("q", query.q);
  if (cursor) params.set("cursor", cursor);
  const text = params.toString();
  return `${base}${text ? `?${text}` : ""}#deliveries`;
}

export const WebhookConfigurationDetail: FC<{
  base: string;
  config: WebhookConfiguration;
  traffic: WebhookTrafficView;
  deliveries: DeliveryRecord[];
  query: DeliveryQuery;
  /** The cursor of the next page of deliveries, or null on the last. */
  next: string | null;
  csrf: string;
  /** The configuration's view (its OAuth settings, signing key, polling), and keyway's origin (where its JWKS URL is). */
  view: WebhookConfigurationView;
  origin: string;
  /** Recovery and the receiver's portal (webhooks.tsx `receiverSections`), before the signing secret. */
  children?: Child;
}> = ({ base, config, traffic, deliveries, query, next, csrf, view, origin, children }) => {
  const filtered = query.filter.status !== undefined || query.filter.event_type !== undefined || query.q !== "";
  const oauth = view.oauth;
  return (
    <>
      <p>
        <CopyId value={config.id} label="configuration id" /> {view.url === null ? "polling" : <Url value={view.url} />}
      </p>
      <section class="card" aria-labelledby="health">
        <h2 id="health">Health</h2>
        <p>
          <Health config={config} />.
        </p>
        {view.polling !== null ? <PollingFacts polling={view.polling} /> : <Last24Hours last={traffic.last_24h} />}
        <p>
          {view.polling !== null ? (
            "Delivery: polling (the receiver reads its events, in publish order, with its polling token)"
          ) : (
            <>
              Delivery: {LANES[config.state.lane]};{" "}
              {config.ordered ? "ordered (one at a time, in publish order)" : "unordered (several at a time)"};{" "}
              {config.rate_limit === null ? "no rate limit" : `at most ${config.rate_limit} per second`};{" "}
              {config.token_cache ? "one shared receiver token" : "a token request before each webhook"}
            </>
          )}
          {config.operations === true && "; the organization's operations configuration (operational events)"}.
        </p>
        <Routing view={view} />
        {config.status === "active" ? (
          <>
            <PostForm action={`${base}/test`} csrf={csrf} class="inline" label="Send a test event">
              <button type="submit" class="secondary">
                Send test event
              </button>
            </PostForm>
            <p>
              <a href={`${base}/disable`}>Disable this webhook configuration</a> (nothing is sent to it until it is re-enabled)
            </p>
          </>
        ) : (
          <PostForm action={`${base}/enable`} csrf={csrf} class="inline" label="Re-enable the webhook configuration">
            <p>Re-enabling resumes deliveries to it and resets its health count.</p>
            <button type="submit">Re-enable</button>
          </PostForm>
        )}
      </section>
      {oauth !== null && (
        <section class="card" aria-labelledby="receiver-oauth">
          <h2 id="receiver-oauth">The receiver's token endpoint</h2>
          <ReceiverOAuthFacts oauth={oauth} origin={origin} />
          <PostForm action={`${base}/test-connection`} csrf={csrf} class="inline" label="Test the connection to the token endpoint">
            <p>Fetches a token from the token URL (only that, as before a webhook) and says what happened; nothing is delivered.</p>
            <button type="submit" class="secondary">
              Test connection
            </button>
          </PostForm>
        </section>
      )}
      {view.polling !== null && (
        <section class="card" aria-labelledby="polling-token">
          <h2 id="polling-token">Polling token</h2>
          <p>
            {view.polling.token_active
              ? "Active: the receiver reads with it. Rotating makes a new one, shown once, and stops this one at once."
              : "Revoked: no read succeeds until a new token is rotated in (the events are kept meanwhile)."}
          </p>
          <ul class="links">
            <li>
              <a href={`${base}/rotate-polling-token`}>Rotate the polling token</a>
            </li>
            {view.polling.token_active && (
              <li>
                <a href={`${base}/revoke-polling-token`}>Revoke the polling token</a>
              </li>
            )}
          </ul>
        </section>
      )}
      {view.polling === null && <AttemptTraffic hours={traffic.hours} days={traffic.days} />}
      <h2 id="deliveries">Deliveries</h2>
      <DeliveryFilters action={base} clearHref={`${base}#deliveries`} query={query} filtered={filtered} />
      <DeliveryList
        deliveries={deliveries}
        query={query}
        next={next}
        filtered={filtered}
        deliveryHref={(id) => `${base}/deliveries/${id}`}
        pageHref={(cursor) => listHref(base, query, cursor)}
        owner="configuration"
      />
      {children}
      {view.signature_scheme !== null && <SigningKey base={base} view={view} />}
      {config.oauth.auth_method === "private_key_jwt" && (
        <>
          <h2>Assertion key</h2>
          <p>
            This configuration signs its private_key_jwt assertions with a key of its own, published at its JWKS URL above, so only the
            server that registered that URL accepts them.
            {config.oauth.organization_key === true &&
              " It still signs with the organization's key (it was made before keys per configuration): once its receiver has registered this configuration's JWKS URL, which already lists that key, rotate to move it to its own."}
          </p>
          <p>
            <a href={`${base}/rotate-assertion-key`}>Rotate this configuration's assertion key</a>
          </p>
        </>
      )}
      <h2>Change or delete</h2>
      <ul class="links">
        <li>
          <a href={`${base}/edit`}>Edit the webhook configuration</a>{" "}
          {view.polling !== null ? "(its description and event types)" : "(its URL, the receiver's OAuth client, event types and pacing)"}
        </li>
        <li>
          <a href={`${base}/delete`}>Delete this webhook configuration</a> (nothing more is sent to it; this cannot be undone)
        </li>
      </ul>
    </>
  );
};

export const DeliveryDetail: FC<{
  base: string;
  config: WebhookConfiguration;
  delivery: DeliveryRecord;
  /** The event body as sent (JSON text). */
  body: string;
  /** The request's headers as webhookHeaders builds them, secrets masked. */
  sentHeaders: [string, string][];
  resendable: boolean;
}> = ({ base, config, delivery, body, sentHeaders, resendable }) => (
  <>
    <dl class="facts">
      <dt>Delivery (webhook-id)</dt>
      <dd>
        <CopyId value={delivery.id} label="webhook-id" />
      </dd>
      <dt>Event</dt>
      <dd>
        <code>{delivery.event_type}</code> <CopyId value={delivery.event_id} label="event id" />
      </dd>
      <dt>Status</dt>
      <dd>
        <Status value={delivery.status} />
        {delivery.next_attempt_at && (
          <>
            {" "}
            next attempt <Time at={delivery.next_attempt_at} />
          </>
        )}
      </dd>
      <dt>Published</dt>
      <dd>
        <Time at={delivery.created_at} />
      </dd>
    </dl>
    <p class="hint">The webhook-id stays the same on every attempt and re-send, so the receiver can tell a repeat from a new event.</p>
    {resendable && (
      <p>
        {resendEffect(delivery)} <a href={`${base}/resend`}>Re-send this delivery</a>
      </p>
    )}
    <h2>Attempts</h2>
    <TableRegion label="Attempts">
      <table class="wide">
        <caption class="hint">Every attempt, oldest first (the most recent 50): the token step, then the webhook step</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Series</th>
            <th scope="col">When</th>
            <th scope="col">Step</th>
            <th scope="col">HTTP status</th>
            <th scope="col">Outcome</th>
            <th scope="col">Error</th>
            <th scope="col">Receiver's answer</th>
            <th scope="col">Latency</th>
          </tr>
        </thead>
        <tbody>
          {delivery.attempts.map((a) => (
            <tr>
              <td data-label="Attempt">{a.number}</td>
              <td data-label="Series">{a.series}</td>
              <td data-label="When" class="nowrap">
                <Time at={a.at} />
              </td>
              <td data-label="Step">{a.step}</td>
              <td data-label="HTTP status">{a.http_status ?? "-"}</td>
              <td data-label="Outcome" class="lead">
                <Status value={a.outcome} />
              </td>
              <td data-label="Error" class="lead">
                {a.error ?? "-"}
                {a.note ? ` (${a.note})` : ""}
              </td>
              <td data-label="Receiver's answer">
                <AnswerCell response={a.response} />
              </td>
              <td data-label="Latency">{a.latency_ms} ms</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {delivery.attempts.length === 0 && <p>No attempt yet.</p>}
    <h2>Request</h2>
    {config.delivery === "polling" ? (
      <p>None: the receiver reads this event at its polling URL.</p>
    ) : (
      <>
        <p>
          <code>POST {config.url}</code>
        </p>
        <TableRegion label="Request headers">
          <table>
            <caption class="hint">The headers of each attempt; the access token and the signature are masked</caption>
            <thead>
              <tr>
                <th scope="col">Header</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {sentHeaders.map(([name, value]) => (
                <tr>
                  <td data-label="Header">
                    <code>{name}</code>
                  </td>
                  <td data-label="Value">
                    <code class="wrap">{value}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      </>
    )}
    <section aria-labelledby="payload-heading">
      <h2 id="payload-heading">Payload</h2>
      {/* Focusable, so a long payload can be scrolled by keyboard. */}
      <pre class="payload" tabindex={0}>
        {pretty(body)}
      </pre>
    </section>
  </>
);

/** The body indented for reading; a body that is not JSON (never expected) is shown as it is. */
function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** The new signing secret shown once (v1), or the new public key (v1a), and what the overlap means. */
export const SigningSecretRotated: FC<{ base: string; secret: string | null; publicKey: string | null; previousExpiresAt: string }> = ({
  base,
  secret,
  publicKey,
  previousExpiresAt,
}) => (
  <>
    {secret !== null ? (
      <SecretOnce id="signing-secret" label="signing secret" value={secret} stored="sealed" />
    ) : (
      <PublicKey value={publicKey} />
    )}
    <p>
      Each webhook carries one signature (<code>v1,...</code> or <code>v1a,...</code>) per key that still signs: the new one, the previous
      one for 24 hours more (until {when(previousExpiresAt)}), and any secret rotated out earlier until its own 24 hours end. The receiver
      can switch to the new secret at any point in that time; after it only the new secret signs.
    </p>
    <p>
      <a href={base}>Back to the webhook configuration</a>
    </p>
  </>
);

/**
 * What the delivery log kept of a failed webhook answer (docs/webhooks.md): its two headers and
 * the excerpt, or why the excerpt is not shown. Rendered as text: JSX escapes it.
 */
const AnswerCell: FC<{ response: DeliveryRecord["attempts"][number]["response"] }> = ({ response }) => {
  if (response === null) return <>-</>;
  const headers = [
    response.content_type ? `Content-Type: ${response.content_type}` : null,
    response.retry_after ? `Retry-After: ${response.retry_after}` : null,
  ].filter((h) => h !== null);
  return (
    <>
      {headers.length > 0 && <span class="hint">{headers.join("; ")}</span>}
      {response.body_withheld ? (
        <p>Body withheld: it held a secret of this attempt.</p>
      ) : response.body_excerpt ? (
        // Folded, so a long answer does not make the attempt's row a tall block; one click opens it.
        <details>
          <summary>Body ({response.body_excerpt.length} characters)</summary>
          <pre class="excerpt">{response.body_excerpt}</pre>
        </details>
      ) : (
        <p>Empty body.</p>
      )}
    </>
  );
};

/** What a re-send does; offered only when the API accepts one, so an attempt still in flight has outlived its lease. */
export const resendEffect = (d: Pick<DeliveryRecord, "status" | "in_flight_until">): string =>
  d.status === "delivered" || d.status === "failed"
    ? "Re-sending starts a new series of attempts with the same webhook-id."
    : d.in_flight_until !== null
      ? "Its attempt in flight reported no outcome before its deadline; re-sending records that attempt as a failed try on our side and makes a new one now, with the same webhook-id."
      : "The delivery is waiting for its next attempt; re-sending makes it now, with the same webhook-id.";

/**
 * What the configuration receives beyond its types: the organization's filter and channels (the
 * edit form's) and the receiver's own narrowing of them, set in its portal (receivers.md, "The
 * receiver's filter"). Nothing when neither layer is set.
 */
const Routing: FC<{ view: WebhookConfigurationView }> = ({ view }) => {
  const layers = [
    { who: "Filter", filter: view.filter, channels: view.channels },
    { who: "The receiver's own filter (set in its portal)", filter: view.receiver_filter, channels: view.receiver_channels },
  ].filter((l) => l.filter !== null || l.channels !== null);
  if (layers.length === 0) return null;
  return (
    <dl>
      {layers.map((l) => (
        <>
          <dt>{l.who}</dt>
          <dd>
            {l.channels !== null && <>channels {l.channels.join(", ")}</>}
            {l.channels !== null && l.filter !== null && "; "}
            {l.filter !== null && <code>{JSON.stringify(l.filter)}</code>}
          </dd>
        </>
      ))}
    </dl>
  );
};

/** The create and edit forms' fields, named as they are posted. */
export type WebhookField =
  | "url"
  | "description"
  | "events"
  | "filter"
  | "channels"
  | "token_url"
  | "client_id"
  | "client_secret"
  | "rate_limit"
  | "delivery"
  | "signature_scheme"
  | ReceiverOAuthField;

/**
 * What the create and edit forms show: the stored values, or after a refusal the values as
 * entered. The receiver's stored client secret is write-only and never put in a page (the edit
 * form starts with the field empty); a secret the person just typed comes back after a refusal,
 * into the same password field: the page is no-store and same-origin, it is their own input, and
 * making them retype it after every refusal is how a mistyped secret gets saved.
 */
export interface WebhookFormValues extends ReceiverOAuthValues {
  url: string;
  description: string;
  /** As typed: event types separated by commas or spaces; empty for every event. */
  events: string;
  /** As typed: the payload filter's JSON (empty for none), and channels separated by commas or spaces. */
  filter: string;
  channels: string;
  token_url: string;
  client_id: string;
  rate_limit: string;
  ordered: boolean;
  token_cache: boolean;
  /** Issue 42: one of the organization's operations configurations (operational events go only to these). */
  operations: boolean;
  /** As typed in this submit (never the stored one); empty on a fresh form. */
  client_secret: string;
  /** Issue 45: chosen on creation only (the scheme changes by rotation). */
  delivery: Delivery;
  signature_scheme: SignatureScheme;
}

export const EMPTY_WEBHOOK_FORM: WebhookFormValues = {
  url: "",
  description: "",
  events: "",
  filter: "",
  channels: "",
  token_url: "",
  client_id: "",
  rate_limit: "",
  ordered: false,
  token_cache: false,
  operations: false,
  client_secret: "",
  delivery: "push",
  signature_scheme: "v1",
  ...EMPTY_RECEIVER_OAUTH,
};

/** A stored configuration as the edit form shows it (its view's OAuth settings beside it). */
export const formValuesOf = (config: WebhookConfiguration, oauth: WebhookConfigurationView["oauth"]): WebhookFormValues => ({
  url: config.url,
  description: config.description ?? "",
  events: config.events ? config.events.join(", ") : "",
  filter: config.filter ? JSON.stringify(JSON.parse(config.filter), null, 2) : "",
  channels: (config.channels ?? []).join(", "),
  token_url: config.oauth.token_url,
  client_id: config.oauth.client_id,
  rate_limit: config.rate_limit === null ? "" : String(config.rate_limit),
  ordered: config.ordered,
  token_cache: config.token_cache,
  operations: config.operations === true,
  // Write-only: the stored secret never reaches a page; empty keeps it.
  client_secret: "",
  delivery: config.delivery === "polling" ? "polling" : "push",
  signature_scheme: "v1",
  ...receiverOAuthValuesOf(oauth),
});

/** The fields' labels, which the error messages beside them start with too. */
export const WEBHOOK_FIELD_LABELS: Record<WebhookField, string> = {
  url: "Webhook URL",
  description: "Description",
  events: "Event types",
  filter: "Payload filter",
  channels: "Channels",
  token_url: "Token URL",
  client_id: "Client id at the receiver",
  client_secret: "Client secret at the receiver",
  rate_limit: "Rate limit (deliveries per second)",
  delivery: "Delivery",
  signature_scheme: "Signature scheme",
  ...RECEIVER_OAUTH_LABELS,
};

/** Why the form was refused: keyway's message as the API words it, and each field's own message. */
export type WebhookFormErrors = FormErrors<WebhookField>;

/**
 * The form that creates a configuration or edits one: where webhooks go, how keyway signs in to
 * the receiver (its OAuth token URL and client credentials) and how deliveries are paced. After a
 * refusal it comes back with every value as entered (the client secret typed in that submit
 * included, never the stored one), keyway's message above it and every field's message beside
 * that field at once (the field described by it, the first one focused).
 */
export const WebhookConfigurationForm: FC<{
  mode: "create" | "edit";
  action: string;
  cancel: string;
  values: WebhookFormValues;
  errors?: WebhookFormErrors | undefined;
  csrf: string;
}> = ({ mode, action, cancel, values, errors, csrf }) => {
  const err = (field: WebhookField) => errors?.fields[field];
  const listed = Object.entries(errors?.fields ?? {}) as [WebhookField, string][];
  const create = mode === "create";
  // An edit of a polling configuration has no URL, OAuth or pacing (issue 45); creation offers both, push's fields ignored for polling.
  const push = create || values.delivery === "push";
  const forPush = create ? "push only; " : "";
  return (
    <>
      {errors && (
        <div class="warning" id="form-errors">
          <p>
            <strong>{mode === "create" ? "Nothing was created." : "Nothing was changed."}</strong> {errors.message}
          </p>
          {listed.length > 0 && (
            <ul>
              {listed.map(([field, message]) => (
                <li>
                  <a href={`#${field}`}>{message}</a>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <PostForm action={action} csrf={csrf} label={mode === "create" ? "New webhook configuration" : "Edit the webhook configuration"}>
        {create && (
          <>
            <Choice
              id="delivery"
              legend={WEBHOOK_FIELD_LABELS.delivery}
              value={values.delivery}
              options={DELIVERIES}
              error={err("delivery")}
            />
            <Choice
              id="signature_scheme"
              legend={`${WEBHOOK_FIELD_LABELS.signature_scheme} (push only)`}
              value={values.signature_scheme}
              options={SCHEMES}
              error={err("signature_scheme")}
            />
          </>
        )}
        <fieldset>
          <legend>{push ? "Where webhooks go" : "The configuration"}</legend>
          {push && (
            <Field
              id="url"
              label={WEBHOOK_FIELD_LABELS.url}
              hint={`${forPush}a public https: URL; keyway POSTs each event to it`}
              value={values.url}
              required={!create}
              error={err("url")}
            />
          )}
          <Field
            id="description"
            label={WEBHOOK_FIELD_LABELS.description}
            hint="optional; names it in lists"
            value={values.description}
            error={err("description")}
          />
          <Field
            id="events"
            label={WEBHOOK_FIELD_LABELS.events}
            hint="separated by commas or spaces, e.g. order.created, order.paid; empty for every event"
            value={values.events}
            error={err("events")}
          />
          <TextArea
            id="filter"
            label={WEBHOOK_FIELD_LABELS.filter}
            hint={
              'JSON over the event\'s type, channels and data, such as {"data": {"amount": {"$gte": 100}}}, checked against the types\' schemas; empty for none'
            }
            value={values.filter}
            rows={4}
            error={err("filter")}
          />
          <Field
            id="channels"
            label={WEBHOOK_FIELD_LABELS.channels}
            hint="separated by commas or spaces, e.g. acct_42, eu; empty for every channel"
            value={values.channels}
            error={err("channels")}
          />
        </fieldset>
        {push && (
          <fieldset>
            <legend>How keyway signs in to the receiver (OAuth client credentials{create ? "; push only" : ""})</legend>
            <Field
              id="token_url"
              label={WEBHOOK_FIELD_LABELS.token_url}
              hint="the receiver's OAuth token endpoint, a public https: URL"
              value={values.token_url}
              required={!create}
              error={err("token_url")}
            />
            <Field
              id="client_id"
              label={WEBHOOK_FIELD_LABELS.client_id}
              value={values.client_id}
              required={!create}
              error={err("client_id")}
            />
            <AuthMethodChoice value={values.auth_method} error={err("auth_method")} />
            {/* Not required in HTML: private_key_jwt takes none (hidden then); the schema asks for it otherwise. */}
            <ShownFor choice="auth_method" values={["client_secret_post", "client_secret_basic"]}>
              <Field
                id="client_secret"
                type="password"
                label={WEBHOOK_FIELD_LABELS.client_secret}
                hint={
                  mode === "create"
                    ? `stored encrypted; never shown again; ${CLIENT_SECRET_NOT_FOR_JWT}`
                    : `write-only: empty keeps the stored one; required again when the webhook URL or the token URL moves to another origin, or when switching from private_key_jwt; ${CLIENT_SECRET_NOT_FOR_JWT}`
                }
                value={values.client_secret === "" ? undefined : values.client_secret}
                error={err("client_secret")}
              />
            </ShownFor>
            <TokenRequestFields values={values} err={err} />
            <Checkbox
              id="token_cache"
              label="Share one receiver token"
              checked={values.token_cache}
              hint="reused until 60 s before it expires; otherwise a token request before each webhook"
            />
          </fieldset>
        )}
        <fieldset>
          <legend>{push ? "Pacing" : "Operations"}</legend>
          {push && <Checkbox id="ordered" label="Ordered" checked={values.ordered} hint={`${forPush}one at a time, in publish order`} />}
          <Checkbox
            id="operations"
            label="Operations configuration"
            checked={values.operations}
            hint="the organization's own: the only kind that may receive keyway's operational webhook.* events (they describe every endpoint); no portal link opens it"
          />
          {push && (
            <Field
              id="rate_limit"
              type="number"
              min={1}
              label={WEBHOOK_FIELD_LABELS.rate_limit}
              value={values.rate_limit}
              hint={`${forPush}1 to 1000; empty for none; excess deliveries wait`}
              error={err("rate_limit")}
            />
          )}
        </fieldset>
        <button type="submit">{mode === "create" ? "Create webhook configuration" : "Save"}</button>{" "}
        <a href={cancel} class="button secondary">
          Cancel
        </a>
      </PostForm>
    </>
  );
};

/** A new configuration: its v1 signing secret or polling token, shown this once, or its v1a public key, and what the receiver does with it. */
export const WebhookConfigurationCreated: FC<{
  base: string;
  config: WebhookConfiguration;
  view: WebhookConfigurationView;
  secret: string | null;
  pollingToken: string | null;
}> = ({ base, config, view, secret, pollingToken }) => (
  <>
    <p>
      <CopyId value={config.id} label="configuration id" /> {view.polling !== null ? "keeps" : "sends"}{" "}
      {config.events ? config.events.join(", ") : "every event"}{" "}
      {view.polling !== null ? (
        <>
          for its receiver to read at <Url value={view.polling.url} />
        </>
      ) : (
        <>
          to <Url value={config.url} />
        </>
      )}
      .
    </p>
    {pollingToken !== null && (
      <>
        <SecretOnce id="polling-token" label="polling token" value={pollingToken} stored="hash" />
        <p>
          Give the URL and the token to the receiver: it reads its events with <code>GET</code> and <code>Authorization: Bearer</code> the
          token (docs/receivers.md, "Polling").
        </p>
      </>
    )}
    {secret !== null && (
      <>
        <SecretOnce id="signing-secret" label="signing secret" value={secret} stored="sealed" />
        <p>
          Give it to the receiver: it checks each webhook's <code>webhook-signature</code> header (HMAC-SHA256 over the webhook-id, the
          timestamp and the body) with it, and refuses a webhook whose signature does not match.
        </p>
      </>
    )}
    {view.signing_public_key !== null && <PublicKey value={view.signing_public_key} />}
    <p>
      <a href={base}>Go to the webhook configuration</a>
    </p>
  </>
);

/** A v1a configuration's public key: not a secret, shown on its page too. */
const PublicKey: FC<{ value: string | null }> = ({ value }) => (
  <p>
    Public key (v1a, Ed25519): {value === null ? "-" : <CopyId value={value} label="public key" />}. Give it to the receiver: it verifies
    each webhook's <code>v1a,</code> signature with it (Standard Webhooks); it cannot sign, so it need not be kept secret.
  </p>
);

/** How webhooks are signed now, and the rotation, in the current scheme or the other (a change of scheme is a rotation). */
const SigningKey: FC<{ base: string; view: WebhookConfigurationView }> = ({ base, view }) => {
  const other = view.signature_scheme === "v1a" ? "v1" : "v1a";
  return (
    <>
      <h2>Signing key</h2>
      <p>Signature scheme: {SCHEME_WORDS[view.signature_scheme ?? "v1"]}.</p>
      {view.signing_public_key !== null && <PublicKey value={view.signing_public_key} />}
      <p>
        Rotate it when it may have leaked, or on a schedule. The current key keeps signing beside the new one for 24 hours, whatever their
        schemes.
      </p>
      <ul class="links">
        <li>
          <a href={`${base}/rotate-signing-secret`}>Rotate the signing secret</a>
        </li>
        <li>
          <a href={`${base}/rotate-signing-secret?scheme=${other}`}>Rotate to {other}</a> ({SCHEME_WORDS[other]})
        </li>
      </ul>
    </>
  );
};

/** A polling configuration's reading: its URL, backlog, last read and token state. */
export const PollingFacts: FC<{ polling: NonNullable<WebhookConfigurationView["polling"]> }> = ({ polling }) => (
  <dl class="facts">
    <dt>Polling URL</dt>
    <dd>
      <Url value={polling.url} />
    </dd>
    <dt>Backlog</dt>
    <dd>{polling.backlog} events not read yet</dd>
    <dt>Last poll</dt>
    <dd>
      <Time at={polling.last_polled_at} never="never" />
    </dd>
    <dt>Polling token</dt>
    <dd>{polling.token_active ? "active" : "revoked"}</dd>
  </dl>
);

export const SCHEME_WORDS: Record<SignatureScheme, string> = {
  v1: "v1, HMAC-SHA256 with a shared secret (whsec_)",
  v1a: "v1a, Ed25519: keyway keeps the private key, the receiver verifies with the public key (whpk_)",
};

const DELIVERIES: [Delivery, string][] = [
  ["push", "Push: keyway sends each event to the receiver's URL"],
  ["polling", "Polling: the receiver reads its events from keyway with a token of its own (no URL or OAuth)"],
];
const SCHEMES = Object.entries(SCHEME_WORDS) as [SignatureScheme, string][];

/** A choice as radio buttons in a group of their own (its id is where an error's link points). */
export const Choice: FC<{ id: string; legend: string; value: string; options: [string, string][]; error?: string | undefined }> = (p) => (
  <fieldset id={p.id} aria-describedby={p.error ? `${p.id}-error` : undefined}>
    <legend>{p.legend}</legend>
    {p.error && (
      <p id={`${p.id}-error`} class="field-error" role="alert">
        {p.error}
      </p>
    )}
    {p.options.map(([value, label]) => (
      <p class="check">
        <input id={`${p.id}-${value}`} name={p.id} type="radio" value={value} checked={value === p.value} />
        <label for={`${p.id}-${value}`}>{label}</label>
      </p>
    ))}
  </fieldset>
);

/** A configuration's name in lists and titles: its description, or its URL, or (polling) its id. */
export const configName = (w: Pick<WebhookConfiguration, "id" | "description" | "url">): string =>
  w.description ?? (w.url !== "" ? w.url : `polling ${w.id}`);

/**
 * Deleting a configuration, asked first (the confirmation page of confirm.tsx), naming it as the
 * list does: description, id and URL.
 */
export const deleteWebhookConfirmation = (w: Pick<WebhookConfiguration, "id" | "url" | "description">): Confirmation => ({
  title: `Delete webhook configuration ${w.description ? `“${w.description}” ` : ""}(${w.id}, ${w.url || "polling"})?`,
  consequence:
    "Nothing more is sent to it: its deliveries still pending or waiting for a retry end failed, without a request, and events " +
    "published from now on are not sent there. This cannot be undone; to send webhooks to that receiver again, create a new " +
    "configuration (it gets a new signing secret).",
  button: "Delete webhook configuration",
  danger: true,
});
