/**
 * The manager's Organizations (the operator's list and the form to create one) and Organization Settings (administrator tokens, the links to each resource, deletion for operators). Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AdminTokenView } from "../../../schemas/admin";
import { type OrganizationRecord, type OrgQuota, QUOTA_CEILING_PER_SECOND } from "../../../schemas/records";
import { CopyId, Field, PostForm, SecretOnce, Status, TableRegion, Time } from "../views";
import type { Org } from "./common";

export const Organizations: FC<{ orgs: OrganizationRecord[]; csrf: string }> = ({ orgs, csrf }) => (
  <>
    <TableRegion label="Organizations">
      <table>
        <caption class="hint">Organizations, 100 a page</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Id</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {orgs.map((o) => (
            <tr>
              <td data-label="Name">
                <a href={`/manager/organizations/${o.id}`}>{o.name}</a>
              </td>
              <td data-label="Id">
                <CopyId value={o.id} label={`id of ${o.name}`} />
              </td>
              <td data-label="Created">
                <Time at={o.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    <h2>Create an organization</h2>
    <PostForm action="/manager/organizations" csrf={csrf} label="Create an organization">
      <Field id="name" label="Name" required />
      <button type="submit">Create organization</button>
    </PostForm>
  </>
);

export const OrganizationSettings: FC<{ org: Org; operator: boolean; tokens: AdminTokenView[]; limits: OrgQuota | null; csrf: string }> = ({
  org,
  operator,
  tokens,
  limits,
  csrf,
}) => {
  const base = `/manager/organizations/${org.id}`;
  return (
    <>
      <p>
        <strong>{org.name}</strong> <code>{org.id}</code>
      </p>
      <ul class="links">
        <li>
          <a href={`${base}/users`}>Users</a> and their client credentials
        </li>
        {operator && (
          <li>
            <a href={`${base}/api-keys`}>API keys</a> (operators only)
          </li>
        )}
        <li>
          <a href={`${base}/webhooks`}>Webhook configurations</a> and recent deliveries
        </li>
        <li>
          <a href={`${base}/event-types`}>Event types</a>: the event catalog with schemas, and the{" "}
          <a href={`${base}/webhook-settings`}>webhook settings</a>
        </li>
        <li>
          <a href={`${base}/audit-log`}>Audit log</a>: every change, who made it and when
        </li>
      </ul>
      <h2>Shared quota</h2>
      <p>
        {limits === null
          ? "No shared quota: each API key is limited by its own limits only."
          : `All the organization's API keys together: ${[
              limits.per_second !== undefined ? `${limits.per_second} per second` : null,
              limits.per_day !== undefined ? `${limits.per_day} per UTC day` : null,
              limits.per_month !== undefined ? `${limits.per_month} per UTC month` : null,
            ]
              .filter((x) => x !== null)
              .join(", ")}, counted exactly with each key's own limits.`}
      </p>
      {operator && (
        <PostForm action={`${base}/quota`} csrf={csrf} label="Shared quota">
          <Field
            id="per_second"
            label="Requests per second"
            type="number"
            min={1}
            value={limits?.per_second?.toString() ?? ""}
            hint={`at most ${QUOTA_CEILING_PER_SECOND}; empty for none`}
          />
          <Field
            id="per_day"
            label="Requests per UTC day"
            type="number"
            min={1}
            value={limits?.per_day?.toString() ?? ""}
            hint="empty for none"
          />
          <Field
            id="per_month"
            label="Requests per UTC month"
            type="number"
            min={1}
            value={limits?.per_month?.toString() ?? ""}
            hint="empty for none"
          />
          <button type="submit">Save quota</button>
        </PostForm>
      )}
      <h2>Administrator tokens</h2>
      <TableRegion label="Administrator tokens">
        <table>
          <caption class="hint">Tokens that sign this organization's administrators in (never shown again after minting)</caption>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Name</th>
              <th scope="col">Expires</th>
              <th scope="col">Last sign-in</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {tokens.map((t) => (
              <tr>
                <td data-label="Id">
                  <code>{t.id}</code>
                </td>
                <td data-label="Name">{t.name ?? "-"}</td>
                <td data-label="Expires">
                  <Time at={t.expires_at} />
                </td>
                <td data-label="Last sign-in">
                  <Time at={t.last_used_at} />
                </td>
                <td data-label="Status" class="lead">
                  <Status value={t.status} />
                </td>
                <td data-label="Actions">
                  {t.status === "active" ? (
                    <a href={`${base}/admin-tokens/${t.id}/revoke`}>
                      Revoke<span class="skip"> administrator token {t.id}</span>
                    </a>
                  ) : (
                    "-"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
      {tokens.length === 0 && <p>No administrator tokens yet.</p>}
      {operator && (
        <>
          <h2>Administrator access</h2>
          <p>Mint a token that signs this organization's administrator into this app, for this organization only.</p>
          <PostForm action={`${base}/admin-tokens`} csrf={csrf} label="Mint an administrator token">
            <Field id="name" label="Token name" hint="optional" />
            <button type="submit">Mint administrator token</button>
          </PostForm>
          <h2>Delete organization</h2>
          <p>
            Offboard {org.name}: everything it holds stops at once, its data is erased after 30 days.{" "}
            <a href={`${base}/delete`} class="button danger">
              Delete organization…
            </a>
          </p>
        </>
      )}
    </>
  );
};

export const AdminTokenMinted: FC<{ org: Org; token: string }> = ({ org, token }) => (
  <>
    <SecretOnce id="admin-token" label="administrator token" value={token} />
    <p>Give it to the organization's administrator: signing in with it opens this organization only.</p>
    <p>
      <a href={`/manager/organizations/${org.id}`}>Back to Organization Settings</a>
    </p>
  </>
);
