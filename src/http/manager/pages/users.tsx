/**
 * The manager's Users and their client credentials: the lists, the create and edit forms (secret or private_key_jwt key set, scopes, DPoP), and the one-time display of a new client secret. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import { type ClientCredentialView, USE_RESOLUTION_MS } from "../../../schemas/admin";
import type { UserRecord } from "../../../schemas/records";
import { ALL_SCOPES, SCOPES } from "../../../schemas/scopes";
import { Checkbox, CopyId, Field, PostForm, SecretOnce, Status, TableRegion, Time } from "../views";
import type { Org } from "./common";

export const Users: FC<{ org: Org; users: UserRecord[]; csrf: string }> = ({ org, users, csrf }) => {
  const base = `/manager/organizations/${org.id}/users`;
  return (
    <>
      <TableRegion label="Users">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr>
                <td data-label="Name">{u.name}</td>
                <td data-label="E-mail">{u.email ?? "-"}</td>
                <td data-label="Created">
                  <Time at={u.created_at} />
                </td>
                <td data-label="Actions">
                  <a href={`${base}/${u.id}/client-credentials`}>
                    Client credentials<span class="skip"> of {u.name}</span>
                  </a>
                  {" | "}
                  <a href={`${base}/${u.id}/remove`}>
                    Remove<span class="skip"> {u.name}</span>
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
      {users.length === 0 && <p>No users yet.</p>}
      <h2>Add a user</h2>
      <PostForm action={base} csrf={csrf} label="Add a user">
        <Field id="name" label="Name" required />
        <Field id="email" label="E-mail" type="email" hint="optional" />
        <button type="submit">Add user</button>
      </PostForm>
    </>
  );
};

export const ClientCredentials: FC<{ base: string; user: UserRecord; credentials: ClientCredentialView[]; csrf: string }> = ({
  base,
  user,
  credentials,
  csrf,
}) => (
  <>
    <p>
      Client credentials of <strong>{user.name}</strong>. API clients exchange them for access tokens at <code>POST /v1/oauth</code>.
    </p>
    <TableRegion label="Client credentials">
      <table class="wide">
        <thead>
          <tr>
            <th scope="col">client_id</th>
            <th scope="col">Name</th>
            <th scope="col">Authentication</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {credentials.map((cr) => (
            <tr>
              <td data-label="client_id">
                <CopyId value={cr.client_id} label={`client_id ${cr.client_id}`} />
              </td>
              <td data-label="Name">{cr.name ?? "-"}</td>
              <td data-label="Authentication">
                {cr.token_endpoint_auth_method === "private_key_jwt"
                  ? `private_key_jwt (${cr.jwks?.keys.length ?? 0} keys)`
                  : "client secret"}
                {cr.dpop_bound_access_tokens ? "; DPoP required" : ""}
              </td>
              <td data-label="Scopes">{cr.scopes.length === ALL_SCOPES.length ? "all" : cr.scopes.join(" ") || "none"}</td>
              <td data-label="Created">
                <Time at={cr.created_at} />
              </td>
              <td data-label="Last used">
                <Time at={cr.last_used_at} />
              </td>
              <td data-label="Status" class="lead">
                <Status value={cr.status} />
              </td>
              <td data-label="Actions">
                {cr.status === "active" ? (
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
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {credentials.length === 0 ? (
      <p>No client credentials yet.</p>
    ) : (
      <p class="hint">
        "Last used" is to the minute, and trails the latest use by up to {(2 * USE_RESOLUTION_MS) / 60_000} minutes: uses are batched rather
        than written on every request.
      </p>
    )}
    <h2>Create client credentials</h2>
    <PostForm action={base} csrf={csrf} label="Create client credentials">
      <Field id="name" label="Name" hint="optional, e.g. the application using it" />
      <fieldset>
        <legend>How the client authenticates</legend>
        <p class="check">
          <input id="method-secret" name="token_endpoint_auth_method" type="radio" value="client_secret_basic" checked />
          <label for="method-secret">A client secret (shown once)</label>
        </p>
        <p class="check">
          <input id="method-jwt" name="token_endpoint_auth_method" type="radio" value="private_key_jwt" />
          <label for="method-jwt">private_key_jwt: a JWT signed with the client's private key (no secret is created)</label>
        </p>
      </fieldset>
      <JwksField value="" />
      <CredentialPolicy scopes={[...ALL_SCOPES]} dpop={false} />
      <button type="submit">Create client credentials</button>
    </PostForm>
  </>
);

/** The key set of a private_key_jwt credential, as JSON (public keys only). */
const JwksField: FC<{ value: string; required?: boolean }> = ({ value, required }) => (
  <>
    <label for="jwks">
      Public keys (JWK Set){" "}
      <span class="hint">
        ({required ? "during a rotation list the old and the new key, then the new one alone" : "for private_key_jwt only"}; public keys
        only, as <code>{'{"keys": [...]}'}</code>)
      </span>
    </label>
    <textarea id="jwks" name="jwks" rows={6} spellcheck={false} required={required}>
      {value}
    </textarea>
  </>
);

/** What a credential's tokens may be: its scopes and whether they must be DPoP-bound. */
const CredentialPolicy: FC<{ scopes: string[]; dpop: boolean }> = ({ scopes, dpop }) => (
  <>
    <fieldset>
      <legend>Scopes its tokens may have</legend>
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

export const ClientCredentialEdit: FC<{ action: string; cancel: string; credential: ClientCredentialView; csrf: string }> = ({
  action,
  cancel,
  credential,
  csrf,
}) => (
  <PostForm action={action} csrf={csrf} label="Edit client credentials">
    <Field id="name" label="Name" hint="optional" value={credential.name ?? ""} />
    {credential.token_endpoint_auth_method === "private_key_jwt" && <JwksField value={JSON.stringify(credential.jwks, null, 2)} required />}
    <CredentialPolicy scopes={credential.scopes} dpop={credential.dpop_bound_access_tokens} />
    <button type="submit">Save</button> <a href={cancel}>Cancel</a>
  </PostForm>
);

export const ClientCredentialCreated: FC<{ base: string; clientId: string; secret: string | null }> = ({ base, clientId, secret }) => (
  <>
    <div class="card">
      <label for="client-id">client_id</label>
      <input id="client-id" class="secret" type="text" readonly value={clientId} />
    </div>
    {secret === null ? (
      <p>No secret: this client authenticates with a JWT signed by one of its registered keys (private_key_jwt).</p>
    ) : (
      <SecretOnce id="client-secret" label="client_secret" value={secret} />
    )}
    <p>
      <a href={base}>Back to the client credentials</a>
    </p>
  </>
);
