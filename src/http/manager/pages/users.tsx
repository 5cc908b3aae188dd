/**
 * The manager's Users and their client credentials: the lists, the create and edit forms (a secret, private_key_jwt with a key set or its URL, or federated_jwt naming a trusted issuer and a subject; scopes, DPoP, opaque or JWT access tokens), and the one-time display of a new client secret. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import { type ClientCredentialView, type TrustedIssuerView, USE_RESOLUTION_MS } from "../../../schemas/admin";
import type { UserRecord } from "../../../schemas/records";
import { ALL_SCOPES, SCOPES } from "../../../schemas/scopes";
import type { FormErrors } from "../form-check";
import { List, type ListPager } from "../list";
import { Checkbox, CopyId, count, Field, PostForm, SecretOnce, ShownFor, Status, Time, Url } from "../views";
import type { Org } from "./common";
import { FormRefused } from "./event-types";

/** The "Add a user" form's fields, named as posted. */
export type UserField = "name" | "email";
export const USER_FIELD_LABELS: Record<UserField, string> = { name: "Name", email: "E-mail" };
export type UserFormValues = Record<UserField, string>;
export const EMPTY_USER_FORM: UserFormValues = { name: "", email: "" };

/** The users, and the form that adds one: after a refusal with the values as typed and each field's message beside it. */
export const Users: FC<{
  org: Org;
  users: UserRecord[];
  csrf: string;
  pager: ListPager;
  values: UserFormValues;
  errors?: FormErrors<UserField> | undefined;
}> = ({ org, users, csrf, pager, values, errors }) => {
  const base = `/manager/organizations/${org.id}/users`;
  return (
    <>
      <List<UserRecord>
        label="Users"
        rows={users}
        empty="No users yet."
        pager={pager}
        columns={[
          { header: "Name", cell: (u) => u.name },
          { header: "E-mail", cell: (u) => u.email ?? "-" },
          { header: "Created", cell: (u) => <Time at={u.created_at} /> },
          {
            header: "Actions",
            cell: (u) => (
              <>
                <a href={`${base}/${u.id}/client-credentials`}>
                  Client credentials<span class="skip"> of {u.name}</span>
                </a>
                {" | "}
                <a href={`${base}/${u.id}/remove`}>
                  Remove<span class="skip"> {u.name}</span>
                </a>
              </>
            ),
          },
        ]}
      />
      <h2>Add a user</h2>
      <FormRefused errors={errors} what="Nobody was added." />
      <PostForm action={base} csrf={csrf} label="Add a user">
        <Field id="name" label={USER_FIELD_LABELS.name} required value={values.name} error={errors?.fields.name} />
        <Field id="email" label={USER_FIELD_LABELS.email} type="email" hint="optional" value={values.email} error={errors?.fields.email} />
        <button type="submit">Add user</button>
      </PostForm>
    </>
  );
};

/** The credential forms' fields, named as posted (the scope boxes are `scopes`' together). */
export type CredentialField =
  | "name"
  | "token_endpoint_auth_method"
  | "jwks"
  | "jwks_uri"
  | "federated_issuer"
  | "federated_subject"
  | "access_token_strategy"
  | "scopes"
  | "dpop_bound_access_tokens";
export const CREDENTIAL_FIELD_LABELS: Record<CredentialField, string> = {
  name: "Name",
  token_endpoint_auth_method: "How the client authenticates",
  jwks: "Public keys (JWK Set)",
  jwks_uri: "Key set URL (jwks_uri)",
  federated_issuer: "Trusted issuer",
  federated_subject: "Subject (the JWT's sub)",
  access_token_strategy: "Access tokens",
  scopes: "Scopes its tokens may have",
  dpop_bound_access_tokens: "Require DPoP",
};

export type CredentialMethod = "client_secret_basic" | "private_key_jwt" | "federated_jwt";

/** The create and edit forms' values: stored, or after a refusal as typed. */
export interface CredentialFormValues {
  name: string;
  method: CredentialMethod;
  /** The JWK Set as typed (JSON text). */
  jwks: string;
  jwks_uri: string;
  /** federated_jwt: the trusted issuer (its identifier) and the subject. */
  federated_issuer: string;
  federated_subject: string;
  access_token_strategy: "opaque" | "jwt";
  scopes: string[];
  dpop: boolean;
}

export const EMPTY_CREDENTIAL_FORM: CredentialFormValues = {
  name: "",
  method: "client_secret_basic",
  jwks: "",
  jwks_uri: "",
  federated_issuer: "",
  federated_subject: "",
  access_token_strategy: "opaque",
  scopes: [...ALL_SCOPES],
  dpop: false,
};

/** A stored credential as the edit form shows it. */
export const credentialFormValues = (cr: ClientCredentialView): CredentialFormValues => ({
  name: cr.name ?? "",
  method: methodOf(cr.token_endpoint_auth_method),
  jwks: cr.jwks ? JSON.stringify(cr.jwks, null, 2) : "",
  jwks_uri: cr.jwks_uri ?? "",
  federated_issuer: cr.federated?.issuer ?? "",
  federated_subject: cr.federated?.subject ?? "",
  access_token_strategy: cr.access_token_strategy,
  scopes: cr.scopes,
  dpop: cr.dpop_bound_access_tokens,
});

/** The form's method for an API method name (client_secret_post is a secret too). */
export const methodOf = (m: string): CredentialMethod => (m === "private_key_jwt" || m === "federated_jwt" ? m : "client_secret_basic");

/** How a credential authenticates, in a few words: the method and what it names. */
const Authentication: FC<{ cr: ClientCredentialView }> = ({ cr }) => (
  <>
    {cr.token_endpoint_auth_method === "private_key_jwt" ? (
      cr.jwks_uri !== null ? (
        <>
          private_key_jwt (keys at <Url value={cr.jwks_uri} />)
        </>
      ) : (
        `private_key_jwt (${count(cr.jwks?.keys.length ?? 0, "key")})`
      )
    ) : cr.federated !== null ? (
      <>
        federated_jwt: <Url value={cr.federated.issuer} />, subject <code class="wrap">{cr.federated.subject}</code>
      </>
    ) : (
      "client secret"
    )}
    {cr.dpop_bound_access_tokens ? "; DPoP required" : ""}
  </>
);

export const ClientCredentials: FC<{
  base: string;
  /** The organization's trusted issuers, the federated method's choices; and where they are managed. */
  issuers: TrustedIssuerView[];
  issuersPath: string;
  user: UserRecord;
  credentials: ClientCredentialView[];
  csrf: string;
  values: CredentialFormValues;
  errors?: FormErrors<CredentialField> | undefined;
}> = ({ base, issuers, issuersPath, user, credentials, csrf, values, errors }) => (
  <>
    <p>
      Client credentials of <strong>{user.name}</strong>. API clients exchange them for access tokens at <code>POST /v1/oauth</code>.
    </p>
    <List<ClientCredentialView>
      label="Client credentials"
      wide
      rows={credentials}
      // The paragraph below says it when there are none.
      empty={null}
      columns={[
        { header: "client_id", cell: (cr) => <CopyId value={cr.client_id} label={`client_id ${cr.client_id}`} /> },
        // The name leads a phone's card with the status, on one line.
        { header: "Name", class: "lead", cell: (cr) => cr.name ?? "-" },
        { header: "Authentication", cell: (cr) => <Authentication cr={cr} /> },
        // Seven columns, so the list fits beside the sections at 1280 px with a key set URL or a
        // federated subject in it: the tokens' kind and scopes share one, the two times another.
        {
          header: "Tokens",
          cell: (cr) => (
            <>
              {cr.access_token_strategy === "jwt" ? "JWT (RFC 9068)" : "opaque"};{" "}
              {cr.scopes_unrestricted ? (
                "scopes: all, unrestricted"
              ) : cr.scopes.length === 0 ? (
                "no scope"
              ) : (
                <code class="wrap">{cr.scopes.join(" ")}</code>
              )}
            </>
          ),
        },
        {
          header: "Created, last used",
          label: "Created",
          cell: (cr) => (
            <>
              <Time at={cr.created_at} />; used <Time at={cr.last_used_at} />
            </>
          ),
        },
        { header: "Status", class: "lead", cell: (cr) => <Status value={cr.status} /> },
        {
          header: "Actions",
          label: "",
          cell: (cr) =>
            cr.status === "active" ? (
              <>
                <a href={`${base}/${cr.client_id}/edit`}>
                  Edit<span class="skip"> {cr.client_id}</span>
                </a>{" "}
                <a href={`${base}/${cr.client_id}/revoke`}>
                  Revoke<span class="skip"> {cr.client_id}</span>
                </a>
              </>
            ) : (
              <>
                revoked <Time at={cr.revoked_at} />
              </>
            ),
        },
      ]}
    />
    {credentials.length === 0 ? (
      <p>No client credentials yet.</p>
    ) : (
      <p class="hint">
        The last use is to the minute, and trails the latest use by up to {(2 * USE_RESOLUTION_MS) / 60_000} minutes: uses are batched
        rather than written on every request.
      </p>
    )}
    <h2>Create client credentials</h2>
    <FormRefused errors={errors} what="Nothing was created." />
    <PostForm action={base} csrf={csrf} label="Create client credentials">
      <Field
        id="name"
        label={CREDENTIAL_FIELD_LABELS.name}
        hint="optional, e.g. the application using it"
        value={values.name}
        error={errors?.fields.name}
      />
      <fieldset id="token_endpoint_auth_method">
        <legend>{CREDENTIAL_FIELD_LABELS.token_endpoint_auth_method}</legend>
        <p class="check">
          <input
            id="method-secret"
            name="token_endpoint_auth_method"
            type="radio"
            value="client_secret_basic"
            checked={values.method === "client_secret_basic"}
          />
          <label for="method-secret">A client secret (shown once)</label>
        </p>
        <p class="check">
          <input
            id="method-jwt"
            name="token_endpoint_auth_method"
            type="radio"
            value="private_key_jwt"
            checked={values.method === "private_key_jwt"}
          />
          <label for="method-jwt">private_key_jwt: a JWT signed with the client's private key (no secret is created)</label>
        </p>
        <p class="check">
          <input
            id="method-federated"
            name="token_endpoint_auth_method"
            type="radio"
            value="federated_jwt"
            checked={values.method === "federated_jwt"}
          />
          <label for="method-federated">federated_jwt: a JWT a trusted issuer signed for the workload (no secret, no keys)</label>
        </p>
      </fieldset>
      <ShownFor choice="token_endpoint_auth_method" values={["private_key_jwt"]}>
        <JwksField value={values.jwks} error={errors?.fields.jwks} />
        <JwksUriField value={values.jwks_uri} error={errors?.fields.jwks_uri} />
      </ShownFor>
      <ShownFor choice="token_endpoint_auth_method" values={["federated_jwt"]}>
        <fieldset>
          <legend>federated_jwt only</legend>
          <label for="federated_issuer">
            {CREDENTIAL_FIELD_LABELS.federated_issuer}{" "}
            <span class="hint">
              (the organization's <a href={issuersPath}>trusted issuers</a>)
            </span>
          </label>
          {errors?.fields.federated_issuer && (
            <p id="federated_issuer-error" class="field-error" role="alert">
              {errors.fields.federated_issuer}
            </p>
          )}
          <select
            id="federated_issuer"
            name="federated_issuer"
            aria-invalid={errors?.fields.federated_issuer ? "true" : undefined}
            aria-describedby={errors?.fields.federated_issuer ? "federated_issuer-error" : undefined}
          >
            <option value="">{issuers.length === 0 ? "(none trusted yet)" : "(choose one)"}</option>
            {issuers.map((i) => (
              <option value={i.issuer} selected={values.federated_issuer === i.issuer}>
                {i.name ? `${i.name}: ${i.issuer}` : i.issuer}
              </option>
            ))}
          </select>
          <Field
            id="federated_subject"
            label={CREDENTIAL_FIELD_LABELS.federated_subject}
            hint="matched exactly, e.g. repo:octo-org/app:ref:refs/heads/main or system:serviceaccount:prod:billing"
            value={values.federated_subject}
            error={errors?.fields.federated_subject}
          />
        </fieldset>
      </ShownFor>
      <TokenStrategy value={values.access_token_strategy} error={errors?.fields.access_token_strategy} />
      <CredentialPolicy scopes={values.scopes} dpop={values.dpop} error={errors?.fields.scopes} />
      <button type="submit">Create client credentials</button>
    </PostForm>
  </>
);

/** The key set of a private_key_jwt credential, as JSON (public keys only), with its message after a refusal. */
const JwksField: FC<{ value: string; rotation?: boolean; error?: string | undefined }> = ({ value, rotation, error }) => (
  <>
    <label for="jwks">
      {CREDENTIAL_FIELD_LABELS.jwks}{" "}
      <span class="hint">
        (
        {rotation
          ? "during a rotation list the old and the new key, then the new one alone; empty it to use a key set URL"
          : "for private_key_jwt only"}
        ; public keys only, as <code>{'{"keys": [...]}'}</code>)
      </span>
    </label>
    {error && (
      <p id="jwks-error" class="field-error" role="alert">
        {error}
      </p>
    )}
    <textarea
      id="jwks"
      name="jwks"
      rows={6}
      spellcheck={false}
      aria-invalid={error ? "true" : undefined}
      aria-describedby={error ? "jwks-error" : undefined}
    >
      {value}
    </textarea>
  </>
);

/** A private_key_jwt credential's key set URL, instead of pasting the keys. */
const JwksUriField: FC<{ value: string; error?: string | undefined }> = ({ value, error }) => (
  <Field
    id="jwks_uri"
    label={CREDENTIAL_FIELD_LABELS.jwks_uri}
    hint="private_key_jwt, instead of the keys above: keyway fetches it now, and again when a JWT carries a key it does not hold"
    value={value}
    error={error}
  />
);

/** Opaque tokens (keyway's) or RFC 9068 JWTs any resource server can verify. */
const TokenStrategy: FC<{ value: "opaque" | "jwt"; error?: string | undefined }> = ({ value, error }) => (
  <fieldset id="access_token_strategy" aria-describedby={error ? "access_token_strategy-error" : undefined}>
    <legend>{CREDENTIAL_FIELD_LABELS.access_token_strategy}</legend>
    {error && (
      <p id="access_token_strategy-error" class="field-error" role="alert">
        {error}
      </p>
    )}
    <p class="check">
      <input id="strategy-opaque" name="access_token_strategy" type="radio" value="opaque" checked={value === "opaque"} />
      <label for="strategy-opaque">opaque: keyway's own tokens (the default)</label>
    </p>
    <p class="check">
      <input id="strategy-jwt" name="access_token_strategy" type="radio" value="jwt" checked={value === "jwt"} />
      <label for="strategy-jwt">JWT (RFC 9068): signed with keyway's published key set, verifiable by any resource server</label>
    </p>
  </fieldset>
);

/** What a credential's tokens may be: its scopes and whether they must be DPoP-bound. */
const CredentialPolicy: FC<{ scopes: string[]; dpop: boolean; error?: string | undefined }> = ({ scopes, dpop, error }) => (
  <>
    <fieldset id="scopes" aria-describedby={error ? "scopes-error scopes-meaning" : "scopes-meaning"}>
      <legend>{CREDENTIAL_FIELD_LABELS.scopes}</legend>
      {error && (
        <p id="scopes-error" class="field-error" role="alert">
          {error}
        </p>
      )}
      <p class="hint" id="scopes-meaning">
        Every box ticked (the default): no restriction, so its tokens may have every scope, including any scope keyway adds later. Some
        ticked: only those. None ticked: its tokens carry no scope and reach only what needs none, such as <code>GET /v1/me</code>.
      </p>
      {/* Says the checkboxes were on the form: unchecked boxes are not sent at all. */}
      <input type="hidden" name="scopes-shown" value="1" />
      {ALL_SCOPES.map((s) => (
        <Checkbox id={`scope-${s}`} label={s} hint={SCOPES[s]} checked={scopes.includes(s)} />
      ))}
    </fieldset>
    <Checkbox
      id="dpop"
      label="Require DPoP"
      hint="tokens are bound to the client's key (RFC 9449); a token request without a proof is refused"
      checked={dpop}
    />
  </>
);

export const ClientCredentialEdit: FC<{
  action: string;
  cancel: string;
  credential: ClientCredentialView;
  csrf: string;
  values: CredentialFormValues;
  errors?: FormErrors<CredentialField> | undefined;
}> = ({ action, cancel, credential, csrf, values, errors }) => (
  <>
    <FormRefused errors={errors} what="Nothing was changed." />
    <PostForm action={action} csrf={csrf} label="Edit client credentials">
      <Field id="name" label={CREDENTIAL_FIELD_LABELS.name} hint="optional" value={values.name} error={errors?.fields.name} />
      {credential.token_endpoint_auth_method === "private_key_jwt" && (
        <>
          <JwksField value={values.jwks} rotation error={errors?.fields.jwks} />
          <JwksUriField value={values.jwks_uri} error={errors?.fields.jwks_uri} />
        </>
      )}
      {credential.federated !== null && (
        <p>
          Authenticates with JWTs of <code>{credential.federated.issuer}</code> for the subject <code>{credential.federated.subject}</code>{" "}
          (fixed: create another credential to change them).
        </p>
      )}
      <TokenStrategy value={values.access_token_strategy} error={errors?.fields.access_token_strategy} />
      <CredentialPolicy scopes={values.scopes} dpop={values.dpop} error={errors?.fields.scopes} />
      <button type="submit">Save</button> <a href={cancel}>Cancel</a>
    </PostForm>
  </>
);

export const ClientCredentialCreated: FC<{ base: string; clientId: string; secret: string | null }> = ({ base, clientId, secret }) => (
  <>
    <div class="card">
      <label for="client-id">client_id</label>
      <input id="client-id" class="secret" type="text" readonly value={clientId} />
    </div>
    {secret === null ? (
      <p>
        No secret: this client authenticates with a JWT (private_key_jwt: signed by one of its keys; federated_jwt: by its trusted issuer).
      </p>
    ) : (
      <SecretOnce id="client-secret" label="client_secret" value={secret} />
    )}
    <p>
      <a href={base}>Back to the client credentials</a>
    </p>
  </>
);
