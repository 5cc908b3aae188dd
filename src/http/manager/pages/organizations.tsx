/**
 * The manager's Organizations (the operator's list and the form to create one) and Organization Settings (administrator tokens, the links to each resource, deletion for operators). Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AdminTokenView } from "../../../schemas/admin";
import { type OrganizationRecord, type OrgQuota, QUOTA_CEILING_PER_SECOND } from "../../../schemas/records";
import type { FormErrors } from "../form-check";
import { List, type ListPager } from "../list";
import { CopyId, Field, PostForm, SecretOnce, Status, Time } from "../views";
import type { Org } from "./common";
import { FormRefused } from "./event-types";

/** A one-field form (an organization's name, an administrator token's name): its value and, after a refusal, its message. */
export interface NameForm {
  value: string;
  errors?: FormErrors<"name"> | undefined;
}

/** The shared quota form's fields, named as posted (the input's `limits.<name>`). */
export type QuotaField = "per_second" | "per_day" | "per_month";
export const QUOTA_FIELD_LABELS: Record<QuotaField, string> = {
  per_second: "Requests per second",
  per_day: "Requests per UTC day",
  per_month: "Requests per UTC month",
};

/** The quota form after a refusal: the values as typed and each field's message. */
export interface QuotaForm {
  values: Record<QuotaField, string>;
  errors: FormErrors<QuotaField>;
}

export const Organizations: FC<{ orgs: OrganizationRecord[]; csrf: string; pager: ListPager; create: NameForm }> = ({
  orgs,
  csrf,
  pager,
  create,
}) => (
  <>
    <List<OrganizationRecord>
      label="Organizations"
      caption="Organizations, 100 a page"
      rows={orgs}
      empty="No organizations yet."
      pager={pager}
      columns={[
        { header: "Name", cell: (o) => <a href={`/manager/organizations/${o.id}/overview`}>{o.name}</a> },
        { header: "Id", cell: (o) => <CopyId value={o.id} label={`id of ${o.name}`} /> },
        { header: "Created", cell: (o) => <Time at={o.created_at} /> },
      ]}
    />
    <h2>Create an organization</h2>
    <FormRefused errors={create.errors} what="Nothing was created." />
    <PostForm action="/manager/organizations" csrf={csrf} label="Create an organization">
      <Field id="name" label="Name" required value={create.value} error={create.errors?.fields.name} />
      <button type="submit">Create organization</button>
    </PostForm>
  </>
);

export const OrganizationSettings: FC<{
  org: Org;
  operator: boolean;
  tokens: AdminTokenView[];
  limits: OrgQuota | null;
  csrf: string;
  /** A refused quota form, shown with what was typed. */
  quota?: QuotaForm | undefined;
  /** A refused "mint an administrator token" form. */
  mint?: NameForm | undefined;
}> = ({ org, operator, tokens, limits, csrf, quota, mint }) => {
  const base = `/manager/organizations/${org.id}`;
  const stored = (field: QuotaField) => limits?.[field]?.toString() ?? "";
  const quotaValue = (field: QuotaField) => (quota ? quota.values[field] : stored(field));
  const quotaError = (field: QuotaField) => quota?.errors.fields[field];
  return (
    <>
      <p>
        <strong>{org.name}</strong> <code>{org.id}</code>
      </p>
      <ul class="links">
        <li>
          <a href={`${base}/users`}>Users</a> and their client credentials
        </li>
        <li>
          <a href={`${base}/trusted-issuers`}>Trusted issuers</a>: workload identity issuers for federated credentials
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
        <>
          <FormRefused errors={quota?.errors} what="The quota was not changed." />
          <PostForm action={`${base}/quota`} csrf={csrf} label="Shared quota">
            <Field
              id="per_second"
              label={QUOTA_FIELD_LABELS.per_second}
              type="number"
              min={1}
              value={quotaValue("per_second")}
              hint={`at most ${QUOTA_CEILING_PER_SECOND}; empty for none`}
              error={quotaError("per_second")}
            />
            <Field
              id="per_day"
              label={QUOTA_FIELD_LABELS.per_day}
              type="number"
              min={1}
              value={quotaValue("per_day")}
              hint="empty for none"
              error={quotaError("per_day")}
            />
            <Field
              id="per_month"
              label={QUOTA_FIELD_LABELS.per_month}
              type="number"
              min={1}
              value={quotaValue("per_month")}
              hint="empty for none"
              error={quotaError("per_month")}
            />
            <button type="submit">Save quota</button>
          </PostForm>
        </>
      )}
      <h2>Administrator tokens</h2>
      <List<AdminTokenView>
        label="Administrator tokens"
        caption="Tokens that sign this organization's administrators in (never shown again after minting)"
        rows={tokens}
        empty="No administrator tokens yet."
        columns={[
          { header: "Id", cell: (t) => <code>{t.id}</code> },
          { header: "Name", cell: (t) => t.name ?? "-" },
          { header: "Expires", cell: (t) => <Time at={t.expires_at} /> },
          { header: "Last sign-in", cell: (t) => <Time at={t.last_used_at} /> },
          { header: "Status", class: "lead", cell: (t) => <Status value={t.status} /> },
          {
            header: "Actions",
            cell: (t) =>
              t.status === "active" ? (
                <a href={`${base}/admin-tokens/${t.id}/revoke`}>
                  Revoke<span class="skip"> administrator token {t.id}</span>
                </a>
              ) : (
                "-"
              ),
          },
        ]}
      />
      {operator && (
        <>
          <h2>Administrator access</h2>
          <p>Mint a token that signs this organization's administrator into this app, for this organization only.</p>
          <FormRefused errors={mint?.errors} what="No token was minted." />
          <PostForm action={`${base}/admin-tokens`} csrf={csrf} label="Mint an administrator token">
            <Field id="name" label="Token name" hint="optional" value={mint?.value ?? ""} error={mint?.errors?.fields.name} />
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
