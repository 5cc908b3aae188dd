/**
 * The manager's audit log: who did what to which resource, and when, each change as a list of
 * its fields in words. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import { AUDIT_ACTOR_TYPES, type AuditEntryView } from "../../../schemas/audit";
import type { FormErrors } from "../form-check";
import { List, type ListPager } from "../list";
import { Time, Url, when } from "../views";

export const actorText = (a: AuditEntryView["actor"]): string =>
  a.type === "operator"
    ? "operator"
    : a.type === "system"
      ? "keyway (automatic)"
      : a.type === "admin_token"
        ? `administrator (${a.id})`
        : a.type === "api_client"
          ? `API client ${a.id}, key ${a.api_key_id}`
          : `webhook receiver in portal session ${a.id} (configuration ${a.webhook_configuration_id})`;

export type AuditFilterField = "actor" | "actor_id" | "action" | "resource_type" | "resource_id" | "since" | "until";
/** The filters as typed in the form (strings, "" for none). */
export type AuditQuery = Record<AuditFilterField, string>;

export const AUDIT_FILTER_LABELS: Record<AuditFilterField, string> = {
  actor: "Who",
  actor_id: "Actor id",
  action: "Action",
  resource_type: "Resource type",
  resource_id: "Resource id",
  since: "From (UTC)",
  until: "Until (UTC)",
};

const ACTOR_WORDS: Record<(typeof AUDIT_ACTOR_TYPES)[number], string> = {
  operator: "the operator",
  system: "keyway (automatic)",
  admin_token: "an administrator",
  api_client: "an API client",
  receiver: "a receiver (portal)",
};

/** The filters' query string, for links that keep them (the pager, a shared link). */
export function auditQueryString(q: AuditQuery): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== "") params.set(k, v);
  return params.toString();
}

/** One text filter: its label, the value as typed, its message after a refusal. */
const FilterText: FC<{
  id: AuditFilterField;
  typed: AuditQuery;
  errors?: FormErrors<AuditFilterField> | undefined;
  type?: string;
  placeholder?: string;
}> = (p) => {
  const error = p.errors?.fields[p.id];
  return (
    <div>
      <label for={p.id}>{AUDIT_FILTER_LABELS[p.id]}</label>
      {error && (
        <p id={`${p.id}-error`} class="field-error" role="alert">
          {error}
        </p>
      )}
      <input
        id={p.id}
        name={p.id}
        type={p.type ?? "text"}
        value={p.typed[p.id]}
        placeholder={p.placeholder}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? `${p.id}-error` : undefined}
      />
    </div>
  );
};

/** The filters: a GET form, so a filtered list is a link; "Clear" when any is set. */
const AuditFilters: FC<{ path: string; typed: AuditQuery; errors?: FormErrors<AuditFilterField> | undefined }> = ({
  path,
  typed,
  errors,
}) => (
  <form class="filters" method="get" action={path} aria-label="Filter the audit log">
    <div>
      <label for="actor">{AUDIT_FILTER_LABELS.actor}</label>
      <select id="actor" name="actor">
        <option value="" selected={typed.actor === ""}>
          anyone
        </option>
        {AUDIT_ACTOR_TYPES.map((a) => (
          <option value={a} selected={typed.actor === a}>
            {ACTOR_WORDS[a]}
          </option>
        ))}
      </select>
    </div>
    <FilterText id="actor_id" typed={typed} errors={errors} placeholder="kw_client_... or tok_..." />
    <FilterText id="action" typed={typed} errors={errors} placeholder="api_key.revoked" />
    <FilterText id="resource_type" typed={typed} errors={errors} placeholder="client_credential" />
    <FilterText id="resource_id" typed={typed} errors={errors} placeholder="usr_..., key_..., whk_..." />
    <FilterText id="since" type="datetime-local" typed={typed} errors={errors} />
    <FilterText id="until" type="datetime-local" typed={typed} errors={errors} />
    <button type="submit">Filter</button>
    {auditQueryString(typed) !== "" && (
      <a class="button secondary" href={path}>
        Clear
      </a>
    )}
  </form>
);

export const AuditLog: FC<{
  path: string;
  typed: AuditQuery;
  errors?: FormErrors<AuditFilterField> | undefined;
  entries: AuditEntryView[];
  pager: ListPager;
}> = ({ path, typed, errors, entries, pager }) => {
  const filtered = auditQueryString(typed) !== "";
  return (
    <>
      {errors && (
        <p class="warning" role="alert">
          The filters were not applied: {errors.message}
        </p>
      )}
      <List<AuditEntryView>
        label="Audit log"
        wide
        class="audit"
        caption={filtered ? "Changes matching the filters, newest first, 100 a page" : "Changes, newest first, 100 a page"}
        rows={entries}
        empty={errors ? null : filtered ? "No change matches these filters." : "No changes recorded yet."}
        filter={<AuditFilters path={path} typed={typed} errors={errors} />}
        pager={pager}
        columns={[
          { header: "When", class: "nowrap", cell: (e) => <Time at={e.at} /> },
          { header: "Who", cell: (e) => actorText(e.actor) },
          {
            header: "What",
            cell: (e) => (
              <>
                <code>{e.action}</code> <code class="hint id">{e.resource.id}</code>
              </>
            ),
          },
          { header: "Changes", cell: (e) => <Changes detail={e.detail} /> },
        ]}
      />
    </>
  );
};

/** A time as the API writes it; shown in the app's one exact format (views.tsx `when`). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** A field's name as words: `rate_limit` -> "rate limit". */
const words = (key: string): string => key.replaceAll("_", " ");

/**
 * One value of a change in words: null (a limit removed, nothing set) is "none", a list is its
 * items, an object its fields as `name: value`; text as it is, so no raw JSON `null` is shown.
 */
function valueText(v: unknown): string {
  if (v === null || v === undefined) return "none";
  if (typeof v === "string") return v === "" ? "none" : ISO_INSTANT.test(v) ? when(new Date(v).toISOString()) : v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.length === 0 ? "none" : v.map(valueText).join(", ");
  if (typeof v === "object") {
    const parts = Object.entries(v as Record<string, unknown>).map(([k, x]) => `${words(k)}: ${valueText(x)}`);
    return parts.length === 0 ? "none" : parts.join("; ");
  }
  return String(v);
}

/**
 * Values longer than this are folded: their size shows, one click opens them. An event type's JSON
 * Schema or a long list written out in full would make its entry a tall band of text.
 */
const FOLD_AFTER = 120;

/** One changed field's value: a URL as Url breaks it, long text folded under its size, else as it is. */
const ChangeValue: FC<{ value: unknown }> = ({ value }) => {
  if (typeof value === "string" && /^https?:\/\//.test(value) && value.length <= FOLD_AFTER) return <Url value={value} />;
  const text = valueText(value);
  if (text.length <= FOLD_AFTER) return <>{text}</>;
  return (
    <details>
      <summary>
        {text.slice(0, 60)}… ({text.length} characters)
      </summary>
      <span class="long">{text}</span>
    </details>
  );
};

/** An entry's detail as a definition list of "name: value" pairs that run on; "—" when it has none. */
const Changes: FC<{ detail: AuditEntryView["detail"] }> = ({ detail }) => {
  const fields = detail === null ? [] : Object.entries(detail);
  if (fields.length === 0) return <>—</>;
  return (
    <dl class="changes">
      {fields.map(([k, v]) => (
        <div>
          <dt>{words(k)}</dt>
          <dd>
            <ChangeValue value={v} />
          </dd>
        </div>
      ))}
    </dl>
  );
};
