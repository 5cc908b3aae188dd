/**
 * The manager's audit log: who did what to which resource, and when, each change as a list of
 * its fields in words. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AuditEntryView } from "../../../schemas/audit";
import { TableRegion, Time, Url, when } from "../views";

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

export const AuditLog: FC<{ entries: AuditEntryView[] }> = ({ entries }) => (
  <>
    <TableRegion label="Audit log">
      <table class="wide audit">
        <caption class="hint">Changes, newest first, 100 a page</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">Changes</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr>
              <td data-label="When" class="nowrap">
                <Time at={e.at} />
              </td>
              <td data-label="Who">{actorText(e.actor)}</td>
              <td data-label="What">
                <code>{e.action}</code> <code class="hint id">{e.resource.id}</code>
              </td>
              <td data-label="Changes">
                <Changes detail={e.detail} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {entries.length === 0 && <p>No changes recorded yet.</p>}
  </>
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

/** An entry's detail as a definition list, one line per changed field; "—" when it has none. */
const Changes: FC<{ detail: AuditEntryView["detail"] }> = ({ detail }) => {
  const fields = detail === null ? [] : Object.entries(detail);
  if (fields.length === 0) return <>—</>;
  return (
    <dl class="changes">
      {fields.map(([k, v]) => (
        <div>
          <dt>{words(k)}</dt>
          <dd>{typeof v === "string" && /^https?:\/\//.test(v) ? <Url value={v} /> : valueText(v)}</dd>
        </div>
      ))}
    </dl>
  );
};
