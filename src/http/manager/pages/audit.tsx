/**
 * The manager's audit log: who did what to which resource, and when, each change as a list of
 * its fields in words. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AuditEntryView } from "../../../schemas/audit";
import { List, type ListPager } from "../list";
import { Time, Url, when } from "../views";

const actorText = (a: AuditEntryView["actor"]): string =>
  a.type === "operator"
    ? "operator"
    : a.type === "system"
      ? "keyway (automatic)"
      : a.type === "admin_token"
        ? `administrator (${a.id})`
        : a.type === "api_client"
          ? `API client ${a.id}, key ${a.api_key_id}`
          : `webhook receiver in portal session ${a.id} (configuration ${a.webhook_configuration_id})`;

export const AuditLog: FC<{ entries: AuditEntryView[]; pager: ListPager }> = ({ entries, pager }) => (
  <List<AuditEntryView>
    label="Audit log"
    wide
    class="audit"
    caption="Changes, newest first, 100 a page"
    rows={entries}
    empty="No changes recorded yet."
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
);

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
