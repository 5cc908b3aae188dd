/**
 * The manager's API keys (operators only): the list with today's use, the form to issue one, the one-time display of its secret, and a key's page with its limits, traffic and secret rotation (the new secret shown once, the old one's grace). Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import { QUOTA_UNITS, type QuotaUsage } from "../../../ratelimit/quota";
import type { CreditsUsage } from "../../../ratelimit/windows";
import type { ApiKeyTrafficView, ApiKeyView } from "../../../schemas/admin";
import type { Limits } from "../../../schemas/records";
import { TrafficCharts } from "../charts";
import type { FormErrors } from "../form-check";
import { List } from "../list";
import { CopyId, Field, PostForm, SecretOnce, Status, Time, when } from "../views";
import type { Org } from "./common";
import { FormRefused } from "./event-types";

const LOCATION_HINTS: [string, string][] = [
  ["wnam", "Western North America"],
  ["enam", "Eastern North America"],
  ["sam", "South America"],
  ["weur", "Western Europe"],
  ["eeur", "Eastern Europe"],
  ["apac", "Asia-Pacific"],
  ["oc", "Oceania"],
  ["afr", "Africa"],
  ["me", "Middle East"],
];
/** The rotation form's grace choices (seconds); any other number of seconds up to 7 days goes in the field beside them. */
export const GRACE_CHOICES: [string, string][] = [
  ["0", "None: it stops at once"],
  ["3600", "1 hour"],
  ["86400", "24 hours"],
  ["604800", "7 days"],
  ["seconds", "A number of seconds (below)"],
];

/** A grace in words, as the choices say it: "1 hour", "24 hours", "7 days", "90 seconds". */
export function duration(seconds: number): string {
  // Days from two on: a day is "24 hours", as in the choices.
  const units: [number, string, number][] = [
    [86_400, "day", 2 * 86_400],
    [3600, "hour", 3600],
    [60, "minute", 60],
  ];
  for (const [size, unit, from] of units) {
    if (seconds >= from && seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? "" : "s"}`;
  }
  return `${seconds} second${seconds === 1 ? "" : "s"}`;
}

type Usage = { second: { limit: number; used: number; remaining: number }; day: { limit: number; used: number; remaining: number } };

/** A key of the list with today's usage (null when its object could not say). */
type KeyRow = { view: ApiKeyView; usage: Usage | null };

/** The "Issue an API key" form's fields, named as posted (the limits are the input's `limits.<name>`). */
export type KeyField = "name" | "per_second" | "location_hint" | "per_day";
export const KEY_FIELD_LABELS: Record<KeyField, string> = {
  name: "Name",
  per_second: "Requests per second",
  location_hint: "Where its clients are",
  per_day: "Requests per day",
};
export type KeyFormValues = Record<KeyField, string>;
export const EMPTY_KEY_FORM: KeyFormValues = { name: "", per_second: "", location_hint: "", per_day: "" };

export const ApiKeys: FC<{
  org: Org;
  keys: KeyRow[];
  defaults: Limits;
  csrf: string;
  values: KeyFormValues;
  errors?: FormErrors<KeyField> | undefined;
}> = ({ org, keys, defaults, csrf, values, errors }) => {
  const err = (field: KeyField) => errors?.fields[field];
  const base = `/manager/organizations/${org.id}/api-keys`;
  return (
    <>
      <List<KeyRow>
        label="API keys"
        wide
        rows={keys}
        empty="No API keys yet."
        columns={[
          { header: "Key", cell: ({ view: v }) => <code>{v.hint}</code> },
          { header: "Name", cell: ({ view: v }) => v.name ?? "-" },
          {
            header: "Limits",
            cell: ({ view: v, usage: u }) =>
              u ? `${u.second.limit}/s, ${u.day.limit}/day` : `${v.limits.per_second}/s, ${v.limits.per_day}/day`,
          },
          { header: "Used today", cell: ({ usage: u }) => (u ? `${u.day.used} (${u.day.remaining} left)` : "-") },
          { header: "Status", class: "lead", cell: ({ view: v }) => <Status value={v.status} /> },
          {
            header: "Actions",
            cell: ({ view: v }) =>
              v.status === "active" ? (
                <a href={`${base}/${v.id}`}>
                  Limits and revocation<span class="skip"> for {v.hint}</span>
                </a>
              ) : (
                <>
                  revoked <Time at={v.revoked_at} />
                </>
              ),
          },
        ]}
      />
      <h2>Issue an API key</h2>
      <FormRefused errors={errors} what="No key was issued." />
      <PostForm action={base} csrf={csrf} label="Issue an API key">
        <Field id="name" label={KEY_FIELD_LABELS.name} hint="optional" value={values.name} error={err("name")} />
        <Field
          id="per_second"
          label={KEY_FIELD_LABELS.per_second}
          type="number"
          min={1}
          hint={`empty for the default, ${defaults.per_second}`}
          value={values.per_second}
          error={err("per_second")}
        />
        <label for="location_hint">
          {KEY_FIELD_LABELS.location_hint} <span class="hint">(its Durable Object is created there; empty: near the organization)</span>
        </label>
        {err("location_hint") && (
          <p id="location_hint-error" class="field-error" role="alert">
            {err("location_hint")}
          </p>
        )}
        <select
          id="location_hint"
          name="location_hint"
          aria-invalid={err("location_hint") ? "true" : undefined}
          aria-describedby={err("location_hint") ? "location_hint-error" : undefined}
        >
          <option value="">(not given)</option>
          {LOCATION_HINTS.map(([value, label]) => (
            <option value={value} selected={values.location_hint === value}>
              {label}
            </option>
          ))}
        </select>
        <Field
          id="per_day"
          label={KEY_FIELD_LABELS.per_day}
          type="number"
          min={1}
          hint={`empty for the default, ${defaults.per_day}`}
          value={values.per_day}
          error={err("per_day")}
        />
        <button type="submit">Issue API key</button>
      </PostForm>
    </>
  );
};

export const ApiKeyIssued: FC<{ org: Org; secret: string }> = ({ org, secret }) => (
  <>
    <SecretOnce id="api-key" label="API key" value={secret} />
    <p>
      <a href={`/manager/organizations/${org.id}/api-keys`}>Back to the API keys</a>
    </p>
  </>
);

/** A rotation's new secret, shown once, and what happens to the one it replaced. */
export const ApiKeyRotated: FC<{ base: string; apiKey: ApiKeyView; secret: string; applied: boolean }> = ({
  base,
  apiKey,
  secret,
  applied,
}) => (
  <>
    <SecretOnce id="api-key" label="API key" value={secret} />
    <p>
      This is the new secret of {apiKey.name ? `“${apiKey.name}” ` : ""}
      <code>{apiKey.id}</code>: same id, limits, counts and credits. If it is lost, rotate again.
    </p>
    {apiKey.previous_secret_expires_at === null ? (
      <p>The previous secret no longer works.</p>
    ) : (
      <p>
        Previous secret stops working{" "}
        <strong>
          <Time at={apiKey.previous_secret_expires_at} />
        </strong>
        ; both count against this key's limits. Once every client has the new secret, <a href={`${base}/end-grace`}>end the grace now</a>.
      </p>
    )}
    {!applied && (
      <p class="warning" role="status">
        Not applied yet: the key's object has still to learn the new secret (keyway retries within seconds). Until it does, the previous
        secret works and the new one is refused.
      </p>
    )}
    <p>
      <a href={base}>Back to the API key</a>
    </p>
  </>
);

/** The limits form's fields on a key's page. */
export type KeyLimitField = "per_second" | "per_day";

/** A refused form of a key's page: the values as typed and each field's message. */
export interface RefusedKeyForms {
  limits?: { values: Record<KeyLimitField, string>; errors: FormErrors<KeyLimitField> };
  credits?: { values: { action: "add" | "set"; amount: string }; errors: FormErrors<"amount"> };
}

export const ApiKeyDetail: FC<{
  base: string;
  apiKey: ApiKeyView;
  usage: Usage;
  traffic: ApiKeyTrafficView;
  resetsAt: string;
  credits: CreditsUsage | null;
  quota: QuotaUsage[] | null;
  csrf: string;
  refused?: RefusedKeyForms;
}> = ({ base, apiKey, usage, traffic, resetsAt, credits, quota, csrf, refused = {} }) => (
  <>
    <p>
      <CopyId value={apiKey.id} label="API key id" /> <code>{apiKey.hint}</code> <Status value={apiKey.status} />
    </p>
    {apiKey.previous_secret_expires_at !== null && (
      <p>
        Previous secret stops working{" "}
        <strong>
          <Time at={apiKey.previous_secret_expires_at} />
        </strong>{" "}
        (replaced by a rotation; both count against this key's limits).
      </p>
    )}
    <p>
      Used today: <strong>{usage.day.used}</strong> of {usage.day.limit} (resets <Time at={resetsAt} />
      ).
    </p>
    {quota !== null && (
      <p>
        Its organization's shared quota:{" "}
        {quota
          .map(
            (q) =>
              `${q.used} of ${q.limit} this ${q.name === "org_second" ? "second" : `UTC ${QUOTA_UNITS[q.name]}`} (${q.remaining} left)`,
          )
          .join("; ")}
        .
      </p>
    )}
    <h2>Credits</h2>
    {credits === null ? (
      <p>No credits: the key is limited by its rate limits only. Adding credits makes it prepaid.</p>
    ) : (
      <p>
        <strong>{credits.remaining}</strong> credits left
        {credits.refill
          ? `; refilled to ${credits.refill.amount} at each UTC ${credits.refill.interval} boundary (next ${when(credits.nextRefillAt === null ? null : new Date(credits.nextRefillAt).toISOString())})`
          : "; never refilled"}
        . Each admitted request spends its cost; at zero the key's requests are refused with 429 credits_exhausted.
      </p>
    )}
    <FormRefused errors={refused.credits?.errors} what="The credits were not changed." />
    <PostForm action={`${base}/credits`} csrf={csrf} label="Change credits">
      <label for="credits-action">Change</label>
      <select id="credits-action" name="action">
        <option value="add">Top up by</option>
        <option value="set" selected={refused.credits?.values.action === "set"}>
          Set the balance to
        </option>
      </select>
      <Field
        id="amount"
        label="Credits"
        type="number"
        min={0}
        required
        value={refused.credits?.values.amount}
        error={refused.credits?.errors.fields.amount}
      />
      <button type="submit">Save credits</button>
    </PostForm>
    <h2>Traffic</h2>
    <TrafficCharts
      id="requests"
      what="Requests"
      hours={traffic.hours}
      days={traffic.days}
      series={[
        { key: "admitted", label: "Admitted", tone: "good" },
        { key: "refused", label: "Refused (429)", tone: "bad" },
      ]}
    />
    <h2>Change limits</h2>
    <FormRefused errors={refused.limits?.errors} what="The limits were not changed." />
    <PostForm action={`${base}/limits`} csrf={csrf} label="Change limits">
      <Field
        id="per_second"
        label={KEY_FIELD_LABELS.per_second}
        type="number"
        min={1}
        value={refused.limits?.values.per_second ?? String(usage.second.limit)}
        hint="empty restores the default"
        error={refused.limits?.errors.fields.per_second}
      />
      <Field
        id="per_day"
        label={KEY_FIELD_LABELS.per_day}
        type="number"
        min={1}
        value={refused.limits?.values.per_day ?? String(usage.day.limit)}
        hint="empty restores the default"
        error={refused.limits?.errors.fields.per_day}
      />
      <button type="submit">Save limits</button>
    </PostForm>
    {apiKey.status === "active" && (
      <>
        <h2>Rotate secret</h2>
        <p>
          A new secret for this key, shown once; its id, limits, counts and credits stay. The current secret can keep working for a grace
          period while its clients switch. You confirm on the next page.
        </p>
        {apiKey.previous_secret_expires_at !== null && (
          <p>
            The previous secret stops working <Time at={apiKey.previous_secret_expires_at} />.{" "}
            <a href={`${base}/end-grace`}>End grace now</a>
          </p>
        )}
        <form method="get" action={`${base}/rotate`} class="card" aria-label="Rotate secret">
          <label for="grace">Grace period for the current secret</label>
          <select id="grace" name="grace">
            {GRACE_CHOICES.map(([value, label]) => (
              <option value={value}>{label}</option>
            ))}
          </select>
          <Field id="grace_seconds" label="Seconds" type="number" min={0} hint="0 to 604800 (7 days), when chosen above" />
          <button type="submit">Rotate secret</button>
        </form>
        <h2>Revoke</h2>
        <p>Every request with this key is refused from then on. This cannot be undone.</p>
        <p>
          <a href={`${base}/revoke`}>Revoke this API key</a>
        </p>
      </>
    )}
  </>
);
