/**
 * The manager's Trusted issuers (issue 44): the workload identity issuers whose JWTs authenticate
 * the organization's federated_jwt credentials, listed with their key set, reuse policy, lifetime
 * bound and the keys keyway holds, and the form that trusts one. Plain data in, markup out (no
 * request, no storage); routes load the data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { TrustedIssuerView } from "../../../schemas/admin";
import type { FormErrors } from "../form-check";
import { List, type ListPager } from "../list";
import { Field, PostForm, Time } from "../views";
import type { Org } from "./common";
import { FormRefused } from "./event-types";

/** The form's fields, named as posted (the API's own names). */
export type IssuerField = "issuer" | "jwks_uri" | "name" | "assertion_reuse" | "max_assertion_lifetime_seconds";
export const ISSUER_FIELD_LABELS: Record<IssuerField, string> = {
  issuer: "Issuer",
  jwks_uri: "Key set URL (jwks_uri)",
  name: "Name",
  assertion_reuse: "Reuse of one JWT",
  max_assertion_lifetime_seconds: "Longest JWT lifetime (seconds)",
};
export type IssuerFormValues = Record<IssuerField, string>;
export const EMPTY_ISSUER_FORM: IssuerFormValues = {
  issuer: "",
  jwks_uri: "",
  name: "",
  assertion_reuse: "once",
  max_assertion_lifetime_seconds: "",
};

const REUSE: [string, string][] = [
  ["once", "once: each JWT carries a jti and authenticates one token request"],
  ["until_expiry", "until it expires: for tokens read from a file or the environment (Kubernetes, CI jobs)"],
];

export const TrustedIssuers: FC<{
  org: Org;
  issuers: TrustedIssuerView[];
  csrf: string;
  pager: ListPager;
  values: IssuerFormValues;
  errors?: FormErrors<IssuerField> | undefined;
}> = ({ org, issuers, csrf, pager, values, errors }) => {
  const base = `/manager/organizations/${org.id}/trusted-issuers`;
  const reuseError = errors?.fields.assertion_reuse;
  return (
    <>
      <p>
        Workload identity issuers (a CI system, a Kubernetes cluster, a SPIFFE trust domain) whose signed JWTs authenticate this
        organization's <code>federated_jwt</code> client credentials: no secret is shared.
      </p>
      <List<TrustedIssuerView>
        label="Trusted issuers"
        wide
        rows={issuers}
        empty="No trusted issuers yet."
        pager={pager}
        columns={[
          {
            header: "Issuer",
            class: "lead",
            cell: (i) => (
              <>
                {i.name && <strong>{i.name} </strong>}
                <code>{i.issuer}</code>
              </>
            ),
          },
          {
            header: "Key set",
            cell: (i) => (
              <>
                <code>{i.jwks_uri}</code> ({i.jwks_uri_source})
              </>
            ),
          },
          { header: "Reuse", cell: (i) => (i.assertion_reuse === "once" ? "once" : "until expiry") },
          { header: "Max lifetime", cell: (i) => `${i.max_assertion_lifetime_seconds} s` },
          {
            header: "Keys held",
            cell: (i) =>
              i.key_set === null ? (
                "not fetched yet"
              ) : (
                <>
                  {i.key_set.key_ids.map((k) => k ?? "(no kid)").join(", ") || "none"}; fetched <Time at={i.key_set.fetched_at} />
                </>
              ),
          },
          { header: "Created", cell: (i) => <Time at={i.created_at} /> },
          {
            header: "Actions",
            cell: (i) => (
              <>
                <PostForm action={`${base}/${i.id}/refresh`} csrf={csrf} class="inline" label={`Fetch the keys of ${i.issuer} now`}>
                  <button type="submit">
                    Fetch keys now<span class="skip"> of {i.issuer}</span>
                  </button>
                </PostForm>{" "}
                <a href={`${base}/${i.id}/remove`}>
                  Remove<span class="skip"> {i.issuer}</span>
                </a>
              </>
            ),
          },
        ]}
      />
      <h2>Trust an issuer</h2>
      <FormRefused errors={errors} what="Nothing was added." />
      <PostForm action={base} csrf={csrf} label="Trust an issuer">
        <Field
          id="issuer"
          label={ISSUER_FIELD_LABELS.issuer}
          hint="exactly as its JWTs' iss, e.g. https://token.actions.githubusercontent.com"
          required
          value={values.issuer}
          error={errors?.fields.issuer}
        />
        <Field
          id="jwks_uri"
          label={ISSUER_FIELD_LABELS.jwks_uri}
          hint="optional: empty, keyway finds it in the issuer's OpenID or RFC 8414 metadata"
          value={values.jwks_uri}
          error={errors?.fields.jwks_uri}
        />
        <Field id="name" label={ISSUER_FIELD_LABELS.name} hint="optional" value={values.name} error={errors?.fields.name} />
        <fieldset id="assertion_reuse" aria-describedby={reuseError ? "assertion_reuse-error" : undefined}>
          <legend>{ISSUER_FIELD_LABELS.assertion_reuse}</legend>
          {reuseError && (
            <p id="assertion_reuse-error" class="field-error" role="alert">
              {reuseError}
            </p>
          )}
          {REUSE.map(([value, label]) => (
            <p class="check">
              <input id={`reuse-${value}`} name="assertion_reuse" type="radio" value={value} checked={values.assertion_reuse === value} />
              <label for={`reuse-${value}`}>{label}</label>
            </p>
          ))}
        </fieldset>
        <Field
          id="max_assertion_lifetime_seconds"
          label={ISSUER_FIELD_LABELS.max_assertion_lifetime_seconds}
          type="number"
          min={60}
          hint="60..86400; empty for 3600"
          value={values.max_assertion_lifetime_seconds}
          error={errors?.fields.max_assertion_lifetime_seconds}
        />
        <button type="submit">Trust issuer</button>
      </PostForm>
    </>
  );
};
