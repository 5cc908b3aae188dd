/**
 * The manager's The audit log: who did what to which resource, and when. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AuditEntryView } from "../../../schemas/audit";
import { TableRegion, when } from "../views";

const actorText = (a: AuditEntryView["actor"]): string =>
  a.type === "operator"
    ? "operator"
    : a.type === "system"
      ? "keyway (automatic)"
      : a.type === "admin_token"
        ? `administrator (${a.id})`
        : a.type === "api_client"
          ? `API client ${a.id} (key ${a.api_key_id})`
          : `webhook receiver in portal session ${a.id} (configuration ${a.webhook_configuration_id})`;

export const AuditLog: FC<{ entries: AuditEntryView[] }> = ({ entries }) => (
  <>
    <TableRegion label="Audit log">
      <table class="wide">
        <caption class="hint">Changes, newest first, 100 a page</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr>
              <td class="nowrap">{when(e.at)}</td>
              <td>{actorText(e.actor)}</td>
              <td>
                <code>{e.action}</code>
                <br />
                <code class="hint">{e.resource.id}</code>
              </td>
              <td class="detail">{detailText(e.detail)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {entries.length === 0 && <p>No changes recorded yet.</p>}
  </>
);

/** An entry's detail as `key: value` pairs (values as JSON when they are not text); "-" without one. */
function detailText(detail: AuditEntryView["detail"]): string {
  if (detail === null) return "-";
  const parts = Object.entries(detail).map(([k, v]) => `${k.replaceAll("_", " ")}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  return parts.length === 0 ? "-" : parts.join("; ");
}
