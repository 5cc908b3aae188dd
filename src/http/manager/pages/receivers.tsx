/**
 * The manager's view of what a webhook configuration's receiver is offered (issue 30 items 2, 3
 * and 5): recovery after an outage (the form that starts one, with its times in UTC; the list of
 * recoveries and one recovery's progress, a page to reload), and the receiver's portal (the form
 * that makes a single-use link, the link shown once, the portal sessions and ending one, asked
 * first). Plain data in, markup out; routes load the data (receivers.tsx). Hono JSX escapes
 * every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { PortalSessionView, RecoveryView } from "../../../schemas/receivers";
import { List, type ListPager } from "../list";
import { CopyId, Field, PostForm, Status, Time, when } from "../views";
import type { Confirmation } from "./common";
import { type FormErrors, FormRefused } from "./event-types";

/** The recover form's fields, as typed: UTC date and time, `YYYY-MM-DDTHH:MM` (seconds optional). */
export interface RecoverFormValues {
  since: string;
  until: string;
}
export type RecoverField = keyof RecoverFormValues;

/**
 * Starts a recovery of [since, until). The inputs are datetime-local, which browsers show as a
 * picker without a zone: the labels say the times are UTC, and the server reads them so.
 */
export const RecoverForm: FC<{
  action: string;
  csrf: string;
  values: RecoverFormValues;
  errors?: FormErrors<RecoverField> | undefined;
}> = ({ action, csrf, values, errors }) => (
  <>
    <FormRefused errors={errors} what="No recovery was started." />
    <PostForm action={action} csrf={csrf} label="Recover failed deliveries">
      <p>
        Every delivery of this configuration created in the window that ended <strong>failed</strong> is sent again (a new series of
        attempts, the same webhook-id), in the background, paced by this endpoint; other endpoints are not delayed. A delivery is re-sent
        once, however many recoveries cover it.
      </p>
      <Field
        id="since"
        type="datetime-local"
        label="Since (UTC)"
        hint="date and time in UTC, e.g. 2026-06-01T09:00"
        value={values.since}
        required
        error={errors?.fields.since}
      />
      <Field
        id="until"
        type="datetime-local"
        label="Until (UTC)"
        hint="optional; empty means now"
        value={values.until}
        error={errors?.fields.until}
      />
      <button type="submit">Recover failed deliveries</button>
    </PostForm>
  </>
);

/** A recovery's window in words (UTC). */
const windowOf = (r: Pick<RecoveryView, "since" | "until">) => `${when(r.since)} to ${when(r.until)}`;

/** A configuration's recoveries: the manager's list and the portal's (`base` is where each recovery's page is under). */
export const Recoveries: FC<{ base: string; recoveries: RecoveryView[]; caption: string; empty?: string; pager?: ListPager }> = ({
  base,
  recoveries,
  caption,
  empty = "No recoveries yet.",
  pager,
}) => (
  <List<RecoveryView>
    label="Recoveries"
    wide
    caption={caption}
    rows={recoveries}
    empty={empty}
    {...(pager ? { pager } : {})}
    columns={[
      {
        header: "Recovery",
        cell: (r) => (
          <a href={`${base}/recoveries/${r.id}`}>
            <code>{r.id}</code>
          </a>
        ),
      },
      { header: "Window (UTC)", cell: windowOf },
      { header: "Status", class: "lead", cell: (r) => <Status value={r.status} /> },
      { header: "Found", cell: (r) => r.found },
      { header: "Re-sent", cell: (r) => r.resent },
      { header: "Skipped", cell: (r) => r.skipped },
      { header: "Created", class: "nowrap", cell: (r) => <Time at={r.created_at} /> },
      { header: "Finished", class: "nowrap", cell: (r) => <Time at={r.finished_at} never="-" /> },
    ]}
  />
);

/** What a recovery's status means, in a sentence. */
/** After the status badge, which says the word itself. */
const RECOVERY_STATUS = {
  running: "Failed deliveries are being re-sent, paced by the endpoint. Reload this page to follow it.",
  done: "Every failed delivery of the window was re-sent, or skipped because it no longer failed.",
  stopped: "The configuration was disabled or deleted before the end.",
} as const;

export const RecoveryDetail: FC<{ self: string; back: string; recovery: RecoveryView }> = ({ self, back, recovery: r }) => (
  <>
    <dl class="facts">
      <dt>Recovery</dt>
      <dd>
        <CopyId value={r.id} label="recovery id" />
      </dd>
      <dt>Window (UTC)</dt>
      <dd>{windowOf(r)}</dd>
      <dt>Status</dt>
      <dd>
        <Status value={r.status} /> {RECOVERY_STATUS[r.status]}
      </dd>
      <dt>Found</dt>
      <dd>{r.found} failed deliveries when it started</dd>
      <dt>Re-sent</dt>
      <dd>{r.resent}</dd>
      <dt>Skipped</dt>
      <dd>{r.skipped} (no longer failed when their turn came: re-sent by another recovery or by hand)</dd>
      <dt>Created</dt>
      <dd>
        <Time at={r.created_at} />
      </dd>
      <dt>Finished</dt>
      <dd>
        <Time at={r.finished_at} never="not yet" />
      </dd>
    </dl>
    <ul class="links">
      <li>
        <a href={self}>Reload this recovery</a>
      </li>
      <li>
        <a href={back}>Back to the webhook configuration</a>
      </li>
    </ul>
  </>
);

/** How long a new portal link may be opened in, the choices offered (seconds). */
const LINK_LIFETIMES: [number, string][] = [
  [300, "5 minutes"],
  [600, "10 minutes"],
  [1800, "30 minutes"],
  [3600, "1 hour"],
];

export const PortalLinkForm: FC<{ action: string; csrf: string }> = ({ action, csrf }) => (
  <PostForm action={action} csrf={csrf} label="Create a portal link">
    <p>
      A portal link lets this configuration's receiver see its deliveries and their attempts, re-send them, recover a window, rotate the
      signing secret and edit its own URLs and credentials, for this configuration alone. It opens once; the session it starts lasts 8
      hours, unless it is ended below.
    </p>
    <label for="expires_in">Opens within</label>
    <select id="expires_in" name="expires_in">
      {LINK_LIFETIMES.map(([seconds, label]) => (
        <option value={String(seconds)} selected={seconds === 600}>
          {label}
        </option>
      ))}
    </select>
    <button type="submit">Create portal link</button>
  </PostForm>
);

/** A new portal link, shown this once: keyway keeps only its hash. */
export const PortalLinkCreated: FC<{ back: string; url: string; expiresAt: string }> = ({ back, url, expiresAt }) => (
  <>
    <div class="card">
      <p class="warning" role="alert">
        <strong>Copy the portal link now.</strong> It is shown only this once and cannot be retrieved later: keyway keeps only a hash of it.
        It is single-use: the first opening starts the receiver's session and any later one is refused. It expires <Time at={expiresAt} />{" "}
        if it has not been opened. If it is lost, create another.
      </p>
      <label for="portal-link">Portal link</label>
      <input id="portal-link" class="secret" type="text" readonly value={url} />
      <button type="button" class="secondary" data-copy="portal-link" hidden>
        Copy portal link
      </button>
      <p id="copy-status" role="status" aria-live="polite"></p>
    </div>
    <p>Give it to the receiver over a channel you trust: whoever opens it first gets the session.</p>
    <p>
      <a href={back}>Back to the webhook configuration</a>
    </p>
  </>
);

export const PortalSessions: FC<{ base: string; sessions: PortalSessionView[] }> = ({ base, sessions }) => (
  <List<PortalSessionView>
    label="Portal sessions"
    wide
    caption="Oldest first; ended and expired sessions stay listed for a day"
    rows={sessions}
    empty="No portal sessions in the last day."
    columns={[
      { header: "Session", cell: (s) => <code>{s.id}</code> },
      { header: "Status", class: "lead", cell: (s) => <Status value={s.status} /> },
      { header: "Opened", class: "nowrap", cell: (s) => <Time at={s.created_at} /> },
      { header: "Last seen", class: "nowrap", cell: (s) => <Time at={s.last_seen_at} /> },
      { header: "Expires", class: "nowrap", cell: (s) => <Time at={s.expires_at} /> },
      { header: "Ended", class: "nowrap", cell: (s) => <Time at={s.ended_at} never="-" /> },
      {
        header: "Action",
        cell: (s) =>
          s.status === "active" ? (
            <a href={`${base}/portal-sessions/${s.id}/end`} aria-label={`End session ${s.id}`}>
              End session
            </a>
          ) : (
            "-"
          ),
      },
    ]}
  />
);

export const endPortalSessionConfirmation = (
  s: Pick<PortalSessionView, "id" | "created_at" | "last_seen_at">,
  w: { id: string; url: string },
): Confirmation => ({
  title: `End portal session ${s.id} of webhook configuration ${w.id} (${w.url})?`,
  consequence:
    `The session opened ${when(s.created_at)} and last seen ${when(s.last_seen_at)} stops working at once, wherever it is open: ` +
    "the receiver sees nothing more and changes nothing more until it is given a new portal link. This cannot be undone.",
  button: "End portal session",
  danger: true,
});
