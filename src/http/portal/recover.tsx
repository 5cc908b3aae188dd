/**
 * The portal's "Recover" pages (issue 30 items 2 and 3): the form that starts a recovery of the
 * session's endpoint over a time window, the list of its recoveries and one recovery's progress.
 * The window is entered with `datetime-local` inputs, which carry no time zone: the page says
 * they are read as UTC (the zone of every time the portal shows), and routes.tsx appends the `Z`.
 * No script: the progress page is followed by reloading it, which a link offers too. Plain data
 * in, markup out; routes.tsx starts the job (webhooks/recovery.ts) and loads the views.
 */
import type { FC } from "hono/jsx";
import type { RecoveryView } from "../../schemas/receivers";
import { Recoveries } from "../manager/pages/receivers";
import { Field, Pager, PostForm, Status, Time } from "../manager/views";

export type RecoverField = "since" | "until";

/** The form as entered, shown again with a refusal so nothing is typed twice. */
export interface RecoverValues {
  since: string;
  until: string;
}

/** A refusal in words: the whole (a 400 or a 409) and each field's part of it. */
export interface RecoverErrors {
  message: string;
  fields: Partial<Record<RecoverField, string>>;
}

export const RECOVER_LABELS: Record<RecoverField, string> = { since: "Since", until: "Until" };
export const RECOVERIES_PAGE = 20;

/** "12 of 40 handled": re-sent plus skipped out of found, the part of the window already gone through. */
const progress = (r: RecoveryView): string =>
  r.status === "running" ? `${r.resent + r.skipped} of ${r.found} handled so far` : `${r.resent + r.skipped} of ${r.found} handled`;

const STATUS_WORDS: Record<RecoveryView["status"], string> = {
  // After the status badge, which says the word itself.
  running: "Deliveries are being re-sent at the endpoint's pace",
  done: "Every failed delivery of the window was handled",
  stopped: "The endpoint was paused or deleted before the end; start another recovery once it is resumed",
};

export const RecoverPage: FC<{
  csrf: string;
  values: RecoverValues;
  errors?: RecoverErrors | undefined;
  paused: boolean;
  retentionDays: number;
  recoveries: RecoveryView[];
  cursor?: string | undefined;
  next: string | null;
}> = ({ csrf, values, errors, paused, retentionDays, recoveries, cursor, next }) => {
  const listed = Object.entries(errors?.fields ?? {}) as [RecoverField, string][];
  return (
    <>
      <p>
        After an outage, re-send every delivery to this endpoint that <strong>failed</strong> in a time window, each once: a second recovery
        over an overlapping window re-sends nothing already re-sent. The re-sends go out in the background at this endpoint's pace (its rate
        limit, and in order if it is ordered). Deliveries are kept {retentionDays} days.
      </p>
      {paused && !errors && (
        <p class="warning">
          Deliveries to this endpoint are paused: a recovery cannot start until they are resumed on the <a href="/portal">Endpoint</a> page.
        </p>
      )}
      {errors && (
        <div class="warning" id="form-errors">
          <p>
            <strong>No recovery was started.</strong> {errors.message}
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
      <PostForm action="/portal/recover" csrf={csrf} label="Recover failed deliveries">
        <fieldset>
          <legend>Time window, in UTC</legend>
          <p class="hint">
            Both times are read as UTC (Coordinated Universal Time), not your computer's time zone. Deliveries created at or after "Since"
            and before "Until" are recovered; an empty "Until" means now. Typed as text, a time reads like 2025-03-01 14:30.
          </p>
          <Field
            id="since"
            type="datetime-local"
            label={RECOVER_LABELS.since}
            hint="UTC"
            value={values.since}
            required
            error={errors?.fields.since}
          />
          <Field
            id="until"
            type="datetime-local"
            label={RECOVER_LABELS.until}
            hint="UTC; optional, empty for now"
            value={values.until}
            error={errors?.fields.until}
          />
        </fieldset>
        <button type="submit">Recover failed deliveries</button>
      </PostForm>
      <h2 id="recoveries">Recoveries of this endpoint</h2>
      <Recoveries
        base="/portal"
        recoveries={recoveries}
        caption="Newest first; times in UTC. Open one to follow its progress."
        empty="No recovery yet."
      />
      <Pager label="Recoveries" path="/portal/recover" current={cursor} next={next} />
    </>
  );
};

/** One recovery's progress; reloading the page (or following its link) shows where it is now. */
export const RecoveryDetail: FC<{ recovery: RecoveryView }> = ({ recovery: r }) => (
  <>
    <p>
      <Status value={r.status} /> {STATUS_WORDS[r.status]}.
    </p>
    <dl class="facts">
      <dt>Window (UTC)</dt>
      <dd>
        <Time at={r.since} /> to <Time at={r.until} />
      </dd>
      <dt>Failed deliveries found</dt>
      <dd>{r.found}</dd>
      <dt>Re-sent</dt>
      <dd>{r.resent}</dd>
      <dt>Skipped</dt>
      <dd>
        {r.skipped} <span class="hint">(no longer failed when their turn came: re-sent by hand or by another recovery)</span>
      </dd>
      <dt>Progress</dt>
      <dd>{progress(r)}</dd>
      <dt>Started</dt>
      <dd>
        <Time at={r.created_at} />
      </dd>
      <dt>Finished</dt>
      <dd>
        <Time at={r.finished_at} never="not yet" />
      </dd>
      <dt>Recovery id</dt>
      <dd>
        <code>{r.id}</code>
      </dd>
    </dl>
    {r.status === "running" && (
      <p>
        Each re-sent delivery gets a new series of attempts, listed under its delivery.{" "}
        <a href={`/portal/recoveries/${r.id}`}>Reload to see the progress</a>
      </p>
    )}
    <p>
      <a href="/portal/recover">All recoveries</a> · <a href="/portal/deliveries?status=failed">Deliveries still failed</a>
    </p>
  </>
);
