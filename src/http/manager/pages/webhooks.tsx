/**
 * The manager's Webhook configurations and deliveries: the list with health, a configuration's page (health, charts, deliveries with filters, edits, test events, signing-secret rotation) and a delivery's full story (payload, the request we sent, each attempt and the receiver's answer, re-send). Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { DeliveryRecord, WebhookConfiguration } from "../../../schemas/webhooks";
import { Checkbox, Field, PostForm, Status, TableRegion, when } from "../views";

/** Health in words: paused and why, failing since when, or when the last delivery succeeded. */
const health = (w: WebhookConfiguration): string =>
  w.state.pause_reason !== null
    ? `paused${w.state.paused_until ? ` until ${when(w.state.paused_until)}` : ""}: ${w.state.pause_reason}`
    : w.state.failing_since !== null
      ? `every attempt has failed since ${when(w.state.failing_since)}`
      : w.state.last_delivered_at !== null
        ? `healthy; last delivered ${when(w.state.last_delivered_at)}`
        : "no deliveries yet";

/** The lane in words (docs/webhooks.md, "Lanes"). */
const LANES = {
  fast: "fast lane (answers in time)",
  new: "new lane (no deliveries yet)",
  slow: "slow lane (did not answer within the fast lane's deadline)",
} as const;

/**
 * The latest attempt in one line. An error is keyway's sentence and already names its step and
 * status ("token endpoint could not be reached"), so it stands alone; without one, the step, the
 * status and the outcome say what happened.
 */
export const lastAttempt = (d: Pick<DeliveryRecord, "attempts">): string => {
  const last = d.attempts.at(-1);
  if (!last) return "-";
  const what = last.error ?? [last.step, last.http_status, last.outcome].filter((x) => x !== null).join(" ");
  return `${when(last.at)}: ${what}`;
};

export const WebhookConfigurations: FC<{ base: string; configs: WebhookConfiguration[] }> = ({ base, configs }) => (
  <>
    {configs.length === 0 && <p>No webhook configurations. They are created through the API.</p>}
    {configs.length > 0 && (
      <TableRegion label="Webhook configurations">
        <table>
          <caption class="hint">Every configuration of the organization (at most 20)</caption>
          <thead>
            <tr>
              <th scope="col">Webhook URL</th>
              <th scope="col">Status</th>
              <th scope="col">Health</th>
              <th scope="col">Events</th>
            </tr>
          </thead>
          <tbody>
            {configs.map((w) => (
              <tr>
                <td>
                  <a href={`${base}/${w.id}`}>
                    <code class="wrap">{w.url}</code>
                  </a>
                </td>
                <td>
                  <Status value={w.status} /> {w.disabled_reason ? `(${w.disabled_reason})` : ""}
                </td>
                <td>{health(w)}</td>
                <td>{w.events ? w.events.join(", ") : "all"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    )}
  </>
);

export const WebhookConfigurationDetail: FC<{
  base: string;
  config: WebhookConfiguration;
  deliveries: DeliveryRecord[];
  csrf: string;
}> = ({ base, config, deliveries, csrf }) => (
  <>
    <section class="card" aria-labelledby="health">
      <h2 id="health">Health</h2>
      <p>
        Status: <Status value={config.status} />
        {config.disabled_reason ? ` (${config.disabled_reason})` : ""}. Health: {health(config)}.
      </p>
      <p>
        Delivery: {LANES[config.state.lane]};{" "}
        {config.ordered ? "ordered (one at a time, in publish order)" : "unordered (several at a time)"};{" "}
        {config.rate_limit === null ? "no rate limit" : `at most ${config.rate_limit} per second`};{" "}
        {config.token_cache ? "one shared receiver token" : "a token request before each webhook"}.
      </p>
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
    <h2>Recent deliveries</h2>
    <TableRegion label="Recent deliveries">
      <table>
        <caption class="hint">The 25 most recent, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Delivery</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Last attempt</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr>
              <td>
                <a href={`${base}/deliveries/${d.id}`}>
                  <code>{d.id}</code>
                </a>
              </td>
              <td>{d.event_type}</td>
              <td>
                <Status value={d.status} />
              </td>
              <td>{lastAttempt(d)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {deliveries.length === 0 && <p>No deliveries yet.</p>}
    <h2>Edit</h2>
    <PostForm action={base} csrf={csrf} label="Edit the webhook configuration">
      <Field id="url" label="Webhook URL" value={config.url} required />
      <Field id="token_url" label="Token URL" value={config.oauth.token_url} required />
      <Field id="client_id" label="Client id at the receiver" value={config.oauth.client_id} required />
      <Field
        id="client_secret"
        type="password"
        label="Client secret at the receiver"
        hint="empty keeps the stored one; required when either URL moves to another origin"
      />
      <Field id="events" label="Event types" value={config.events ? config.events.join(", ") : ""} hint="comma-separated; empty for all" />
      <Field id="description" label="Description" value={config.description ?? ""} hint="optional" />
      <Field
        id="rate_limit"
        type="number"
        min={1}
        label="Rate limit (deliveries per second)"
        value={config.rate_limit === null ? "" : String(config.rate_limit)}
        hint="empty for none; excess deliveries wait"
      />
      <Checkbox id="ordered" label="Ordered" checked={config.ordered} hint="one at a time, in publish order" />
      <Checkbox id="token_cache" label="Share one receiver token" checked={config.token_cache} hint="reused until 60 s before it expires" />
      <button type="submit">Save</button>
    </PostForm>
  </>
);

export const DeliveryDetail: FC<{ base: string; delivery: DeliveryRecord; resendable: boolean }> = ({ base, delivery, resendable }) => (
  <>
    <p>
      Event <code>{delivery.event_type}</code> (<code>{delivery.event_id}</code>), status <Status value={delivery.status} />
      {delivery.next_attempt_at ? `, next attempt ${when(delivery.next_attempt_at)}` : ""}. The <code>webhook-id</code> is the delivery id;
      it stays the same on every attempt and re-send.
    </p>
    <TableRegion label="Attempts">
      <table>
        <caption class="hint">Attempts, oldest first (the most recent 50)</caption>
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
              <td>{a.number}</td>
              <td>{a.series}</td>
              <td>{when(a.at)}</td>
              <td>{a.step}</td>
              <td>{a.http_status ?? "-"}</td>
              <td>
                <Status value={a.outcome} />
              </td>
              <td>
                {a.error ?? "-"}
                {a.note ? ` (${a.note})` : ""}
              </td>
              <td>
                <AnswerCell response={a.response} />
              </td>
              <td>{a.latency_ms} ms</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {delivery.attempts.length === 0 && <p>No attempt yet.</p>}
    {resendable && (
      <>
        <h2>Re-send</h2>
        <p>{resendEffect(delivery)}</p>
        <p>
          <a href={`${base}/resend`}>Re-send this delivery</a>
        </p>
      </>
    )}
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
        <pre class="excerpt">{response.body_excerpt}</pre>
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
