/**
 * The manager app's pages: the markup and wording of each screen, from plain data (no request, no
 * storage), including what each confirmation says, so every one names the thing it acts on.
 * routes.tsx decides who may see what, loads the data and wraps these in the layout of
 * views.tsx with a title and breadcrumbs. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AdminTokenView, ApiKeyView, ClientCredentialView } from "../../schemas/admin";
import type { AuditEntryView } from "../../schemas/audit";
import type { Limits, OrganizationRecord, UserRecord } from "../../schemas/records";
import { ALL_SCOPES, SCOPES } from "../../schemas/scopes";
import type { DeliveryRecord, WebhookConfiguration, WebhookConfigurationRecord } from "../../schemas/webhooks";
import { Checkbox, Field, PostForm, SecretOnce, Status, TableRegion, when } from "./views";

type Org = Pick<OrganizationRecord, "id" | "name">;

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
type Usage = { second: { limit: number; used: number; remaining: number }; day: { limit: number; used: number; remaining: number } };

/**
 * The sign-in form, also after a failed attempt: then with `error` attached to the token field.
 * The field is always empty: a token, right or wrong, is never written back into the page.
 * `loginCsrf` is the form's half of the anti-CSRF pair: a token the server signed over the nonce
 * in the form's cookie (login-csrf.ts).
 */
export const SignInForm: FC<{ loginCsrf: string; error?: string }> = ({ loginCsrf, error }) => (
  <form method="post" action="/manager/sign-in" class="card" aria-label="Sign in">
    <input type="hidden" name="csrf" value={loginCsrf} />
    <Field
      id="token"
      type="password"
      label="Administrator token"
      hint="the operator's ADMIN_TOKEN, or an organization's administrator token (kw_live_oa_...)"
      required
      error={error}
    />
    <button type="submit">Sign in</button>
  </form>
);

/** Why a sign-in failed, in words that do not tell a guesser which kind of token came close. */
export const SIGN_IN_ERRORS = {
  empty: "Enter an administrator token.",
  rejected: "That administrator token was not accepted: it is wrong, or it was revoked or has expired. Check it and try again.",
  expired: "The sign-in form expired. Enter the administrator token again.",
  /** A form token we did not sign for this browser's cookie (login-csrf.ts), or no cookie at all. */
  unverified:
    "The sign-in form could not be verified. Enter the administrator token again; if this keeps happening, allow cookies for this site.",
} as const;

export const ErrorMessage: FC<{ message: string }> = ({ message }) => (
  <>
    <p role="alert">{message}</p>
    <p>
      <a href="/manager">Back to the start</a>
    </p>
  </>
);

export const Organizations: FC<{ orgs: OrganizationRecord[]; csrf: string }> = ({ orgs, csrf }) => (
  <>
    <TableRegion label="Organizations">
      <table>
        <caption class="hint">Every organization (first 100)</caption>
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
              <td>
                <a href={`/manager/organizations/${o.id}`}>{o.name}</a>
              </td>
              <td>
                <code>{o.id}</code>
              </td>
              <td>{when(o.created_at)}</td>
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

export const OrganizationSettings: FC<{ org: Org; operator: boolean; tokens: AdminTokenView[]; csrf: string }> = ({
  org,
  operator,
  tokens,
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
          <a href={`${base}/audit-log`}>Audit log</a>: every change, who made it and when
        </li>
      </ul>
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
                <td>
                  <code>{t.id}</code>
                </td>
                <td>{t.name ?? "-"}</td>
                <td>{when(t.expires_at)}</td>
                <td>{when(t.last_used_at)}</td>
                <td>
                  <Status value={t.status} />
                </td>
                <td>
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
                <td>{u.name}</td>
                <td>{u.email ?? "-"}</td>
                <td>{when(u.created_at)}</td>
                <td>
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
      <table>
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
              <td>
                <code>{cr.client_id}</code>
              </td>
              <td>{cr.name ?? "-"}</td>
              <td>
                {cr.token_endpoint_auth_method === "private_key_jwt"
                  ? `private_key_jwt (${cr.jwks?.keys.length ?? 0} keys)`
                  : "client secret"}
                {cr.dpop_bound_access_tokens ? "; DPoP required" : ""}
              </td>
              <td>{cr.scopes.length === ALL_SCOPES.length ? "all" : cr.scopes.join(" ") || "none"}</td>
              <td>{when(cr.created_at)}</td>
              <td>{when(cr.last_used_at)}</td>
              <td>
                <Status value={cr.status} />
              </td>
              <td>
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
                  when(cr.revoked_at)
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {credentials.length === 0 && <p>No client credentials yet.</p>}
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

export const ApiKeys: FC<{ org: Org; keys: { view: ApiKeyView; usage: Usage | null }[]; defaults: Limits; csrf: string }> = ({
  org,
  keys,
  defaults,
  csrf,
}) => {
  const base = `/manager/organizations/${org.id}/api-keys`;
  return (
    <>
      <TableRegion label="API keys">
        <table>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Name</th>
              <th scope="col">Limits</th>
              <th scope="col">Used today</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {keys.map(({ view: v, usage: u }) => (
              <tr>
                <td>
                  <code>{v.hint}</code>
                </td>
                <td>{v.name ?? "-"}</td>
                <td>{u ? `${u.second.limit}/s, ${u.day.limit}/day` : `${v.limits.per_second}/s, ${v.limits.per_day}/day`}</td>
                <td>{u ? `${u.day.used} (${u.day.remaining} left)` : "-"}</td>
                <td>
                  <Status value={v.status} />
                </td>
                <td>
                  {v.status === "active" ? (
                    <a href={`${base}/${v.id}`}>
                      Limits and revocation<span class="skip"> for {v.hint}</span>
                    </a>
                  ) : (
                    when(v.revoked_at)
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
      <h2>Issue an API key</h2>
      <PostForm action={base} csrf={csrf} label="Issue an API key">
        <Field id="name" label="Name" hint="optional" />
        <Field id="per_second" label="Requests per second" type="number" min={1} hint={`empty for the default, ${defaults.per_second}`} />
        <label for="location_hint">
          Where its clients are <span class="hint">(its Durable Object is created there; empty: near the organization)</span>
        </label>
        <select id="location_hint" name="location_hint">
          <option value="">(not given)</option>
          {LOCATION_HINTS.map(([value, label]) => (
            <option value={value}>{label}</option>
          ))}
        </select>
        <Field id="per_day" label="Requests per day" type="number" min={1} hint={`empty for the default, ${defaults.per_day}`} />
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

export const ApiKeyDetail: FC<{ base: string; apiKey: ApiKeyView; usage: Usage; resetsAt: string; csrf: string }> = ({
  base,
  apiKey,
  usage,
  resetsAt,
  csrf,
}) => (
  <>
    <p>
      Used today: <strong>{usage.day.used}</strong> of {usage.day.limit} (resets {when(resetsAt)}).
    </p>
    <h2>Change limits</h2>
    <PostForm action={`${base}/limits`} csrf={csrf} label="Change limits">
      <Field
        id="per_second"
        label="Requests per second"
        type="number"
        min={1}
        value={String(usage.second.limit)}
        hint="empty restores the default"
      />
      <Field
        id="per_day"
        label="Requests per day"
        type="number"
        min={1}
        value={String(usage.day.limit)}
        hint="empty restores the default"
      />
      <button type="submit">Save limits</button>
    </PostForm>
    {apiKey.status === "active" && (
      <>
        <h2>Revoke</h2>
        <p>Every request with this key is refused from then on. This cannot be undone.</p>
        <p>
          <a href={`${base}/revoke`}>Revoke this API key</a>
        </p>
      </>
    )}
  </>
);

/** Health in words: paused and why, failing since when, or when the last delivery succeeded. */
const health = (w: WebhookConfiguration): string =>
  w.state.pause_reason !== null
    ? `paused${w.state.paused_until ? ` until ${when(w.state.paused_until)}` : ""}: ${w.state.pause_reason}`
    : w.state.failing_since !== null
      ? `every attempt has failed since ${when(w.state.failing_since)}`
      : w.state.last_delivered_at !== null
        ? `healthy; last delivered ${when(w.state.last_delivered_at)}`
        : "no deliveries yet";

/** The lane in words (docs/webhooks.md, "Lanes"). */
const LANES = {
  fast: "fast lane (answers in time)",
  new: "new lane (no deliveries yet)",
  slow: "slow lane (did not answer within the fast lane's deadline)",
} as const;

/**
 * The latest attempt in one line. An error is keyway's sentence and already names its step and
 * status ("token endpoint could not be reached"), so it stands alone; without one, the step, the
 * status and the outcome say what happened.
 */
export const lastAttempt = (d: Pick<DeliveryRecord, "attempts">): string => {
  const last = d.attempts.at(-1);
  if (!last) return "-";
  const what = last.error ?? [last.step, last.http_status, last.outcome].filter((x) => x !== null).join(" ");
  return `${when(last.at)}: ${what}`;
};

export const WebhookConfigurations: FC<{ base: string; configs: WebhookConfiguration[] }> = ({ base, configs }) => (
  <>
    {configs.length === 0 && <p>No webhook configurations. They are created through the API.</p>}
    {configs.length > 0 && (
      <TableRegion label="Webhook configurations">
        <table>
          <caption class="hint">Every configuration of the organization (at most 20)</caption>
          <thead>
            <tr>
              <th scope="col">Webhook URL</th>
              <th scope="col">Status</th>
              <th scope="col">Health</th>
              <th scope="col">Events</th>
            </tr>
          </thead>
          <tbody>
            {configs.map((w) => (
              <tr>
                <td>
                  <a href={`${base}/${w.id}`}>
                    <code class="wrap">{w.url}</code>
                  </a>
                </td>
                <td>
                  <Status value={w.status} /> {w.disabled_reason ? `(${w.disabled_reason})` : ""}
                </td>
                <td>{health(w)}</td>
                <td>{w.events ? w.events.join(", ") : "all"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    )}
  </>
);

export const WebhookConfigurationDetail: FC<{
  base: string;
  config: WebhookConfiguration;
  deliveries: DeliveryRecord[];
  csrf: string;
}> = ({ base, config, deliveries, csrf }) => (
  <>
    <section class="card" aria-labelledby="health">
      <h2 id="health">Health</h2>
      <p>
        Status: <Status value={config.status} />
        {config.disabled_reason ? ` (${config.disabled_reason})` : ""}. Health: {health(config)}.
      </p>
      <p>
        Delivery: {LANES[config.state.lane]};{" "}
        {config.ordered ? "ordered (one at a time, in publish order)" : "unordered (several at a time)"};{" "}
        {config.rate_limit === null ? "no rate limit" : `at most ${config.rate_limit} per second`};{" "}
        {config.token_cache ? "one shared receiver token" : "a token request before each webhook"}.
      </p>
      {config.status === "active" ? (
        <>
          <PostForm action={`${base}/test`} csrf={csrf} class="inline" label="Send a test event">
            <button type="submit" class="secondary">
              Send test event
            </button>
          </PostForm>
          <p>
            <a href={`${base}/disable`}>Disable this webhook configuration</a> (nothing is sent to it until it is re-enabled)
          </p>
        </>
      ) : (
        <PostForm action={`${base}/enable`} csrf={csrf} class="inline" label="Re-enable the webhook configuration">
          <p>Re-enabling resumes deliveries to it and resets its health count.</p>
          <button type="submit">Re-enable</button>
        </PostForm>
      )}
    </section>
    <h2>Recent deliveries</h2>
    <TableRegion label="Recent deliveries">
      <table>
        <caption class="hint">The 25 most recent, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Delivery</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Last attempt</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr>
              <td>
                <a href={`${base}/deliveries/${d.id}`}>
                  <code>{d.id}</code>
                </a>
              </td>
              <td>{d.event_type}</td>
              <td>
                <Status value={d.status} />
              </td>
              <td>{lastAttempt(d)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {deliveries.length === 0 && <p>No deliveries yet.</p>}
    <h2>Edit</h2>
    <PostForm action={base} csrf={csrf} label="Edit the webhook configuration">
      <Field id="url" label="Webhook URL" value={config.url} required />
      <Field id="token_url" label="Token URL" value={config.oauth.token_url} required />
      <Field id="client_id" label="Client id at the receiver" value={config.oauth.client_id} required />
      <Field
        id="client_secret"
        type="password"
        label="Client secret at the receiver"
        hint="empty keeps the stored one; required when either URL moves to another origin"
      />
      <Field id="events" label="Event types" value={config.events ? config.events.join(", ") : ""} hint="comma-separated; empty for all" />
      <Field id="description" label="Description" value={config.description ?? ""} hint="optional" />
      <Field
        id="rate_limit"
        type="number"
        min={1}
        label="Rate limit (deliveries per second)"
        value={config.rate_limit === null ? "" : String(config.rate_limit)}
        hint="empty for none; excess deliveries wait"
      />
      <Checkbox id="ordered" label="Ordered" checked={config.ordered} hint="one at a time, in publish order" />
      <Checkbox id="token_cache" label="Share one receiver token" checked={config.token_cache} hint="reused until 60 s before it expires" />
      <button type="submit">Save</button>
    </PostForm>
  </>
);

export const DeliveryDetail: FC<{ base: string; delivery: DeliveryRecord; resendable: boolean }> = ({ base, delivery, resendable }) => (
  <>
    <p>
      Event <code>{delivery.event_type}</code> (<code>{delivery.event_id}</code>), status <Status value={delivery.status} />
      {delivery.next_attempt_at ? `, next attempt ${when(delivery.next_attempt_at)}` : ""}. The <code>webhook-id</code> is the delivery id;
      it stays the same on every attempt and re-send.
    </p>
    <TableRegion label="Attempts">
      <table>
        <caption class="hint">Attempts, oldest first (the most recent 50)</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Series</th>
            <th scope="col">When</th>
            <th scope="col">Step</th>
            <th scope="col">HTTP status</th>
            <th scope="col">Outcome</th>
            <th scope="col">Error</th>
            <th scope="col">Receiver's answer</th>
            <th scope="col">Latency</th>
          </tr>
        </thead>
        <tbody>
          {delivery.attempts.map((a) => (
            <tr>
              <td>{a.number}</td>
              <td>{a.series}</td>
              <td>{when(a.at)}</td>
              <td>{a.step}</td>
              <td>{a.http_status ?? "-"}</td>
              <td>
                <Status value={a.outcome} />
              </td>
              <td>
                {a.error ?? "-"}
                {a.note ? ` (${a.note})` : ""}
              </td>
              <td>
                <AnswerCell response={a.response} />
              </td>
              <td>{a.latency_ms} ms</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {delivery.attempts.length === 0 && <p>No attempt yet.</p>}
    {resendable && (
      <>
        <h2>Re-send</h2>
        <p>{resendEffect(delivery)}</p>
        <p>
          <a href={`${base}/resend`}>Re-send this delivery</a>
        </p>
      </>
    )}
  </>
);

/**
 * What the delivery log kept of a failed webhook answer (docs/webhooks.md): its two headers and
 * the excerpt, or why the excerpt is not shown. Rendered as text: JSX escapes it.
 */
const AnswerCell: FC<{ response: DeliveryRecord["attempts"][number]["response"] }> = ({ response }) => {
  if (response === null) return <>-</>;
  const headers = [
    response.content_type ? `Content-Type: ${response.content_type}` : null,
    response.retry_after ? `Retry-After: ${response.retry_after}` : null,
  ].filter((h) => h !== null);
  return (
    <>
      {headers.length > 0 && <span class="hint">{headers.join("; ")}</span>}
      {response.body_withheld ? (
        <p>Body withheld: it held a secret of this attempt.</p>
      ) : response.body_excerpt ? (
        <pre class="excerpt">{response.body_excerpt}</pre>
      ) : (
        <p>Empty body.</p>
      )}
    </>
  );
};

/** What a re-send does; offered only when the API accepts one, so an attempt still in flight has outlived its lease. */
const resendEffect = (d: Pick<DeliveryRecord, "status" | "in_flight_until">): string =>
  d.status === "delivered" || d.status === "failed"
    ? "Re-sending starts a new series of attempts with the same webhook-id."
    : d.in_flight_until !== null
      ? "Its attempt in flight reported no outcome before its deadline; re-sending records that attempt as a failed try on our side and makes a new one now, with the same webhook-id."
      : "The delivery is waiting for its next attempt; re-sending makes it now, with the same webhook-id.";

/** What a confirmation says: the question naming the thing (the page's title) and what follows. */
export interface Confirmation {
  title: string;
  consequence: string;
  button: string;
  /** A red button, for what removes or stops something. */
  danger: boolean;
  /** For what cannot be undone at scale: the person types this (a name) to confirm. */
  typeToConfirm?: { label: string; expected: string };
  /** After a failed confirmation, why. */
  error?: string;
}

/** A name in curly quotes when there is one, for a confirmation's question. */
const quoted = (name: string | null | undefined): string => (name ? `“${name}” ` : "");

/**
 * Every confirmation names what it acts on the way its list shows it (name, id, the end of a
 * key), so an administrator with two similar rows open in two tabs cannot confirm the wrong one.
 */
export const confirmations = {
  deleteOrganization: (org: Org): Confirmation => ({
    title: `Delete organization “${org.name}” (${org.id})?`,
    consequence:
      `Every API key, client credential, access token, administrator token and session of ${org.name} stops working at once, ` +
      "its webhook configurations are deleted and their pending deliveries fail, and its data is erased after 30 days " +
      "(its audit log is kept). This cannot be undone.",
    button: "Delete organization",
    danger: true,
    typeToConfirm: { label: `Type the organization's name, ${org.name}, to confirm`, expected: org.name },
  }),
  revokeAdminToken: (t: Pick<AdminTokenView, "id" | "name">, org: Org): Confirmation => ({
    title: `Revoke administrator token ${quoted(t.name)}(${t.id})?`,
    consequence: `Every session opened with it ends at once, and it can no longer sign anyone in to ${org.name}. This cannot be undone.`,
    button: "Revoke administrator token",
    danger: true,
  }),
  removeUser: (u: Pick<UserRecord, "id" | "name" | "email">): Confirmation => ({
    title: `Remove user “${u.name}” (${u.email ? `${u.email}, ` : ""}${u.id})?`,
    consequence: `Removing ${u.name} revokes all of their client credentials: access tokens issued with them stop working at once. This cannot be undone.`,
    button: "Remove user",
    danger: true,
  }),
  revokeClientCredential: (cr: Pick<ClientCredentialView, "client_id" | "name">, user: Pick<UserRecord, "name">): Confirmation => ({
    title: `Revoke client credentials ${quoted(cr.name)}(${cr.client_id}) of ${user.name}?`,
    consequence:
      "Revoking stops this client from obtaining tokens, and access tokens it already has stop working at once. This cannot be undone.",
    button: "Revoke client credentials",
    danger: true,
  }),
  revokeApiKey: (k: Pick<ApiKeyView, "id" | "name" | "hint">): Confirmation => ({
    title: `Revoke API key ${quoted(k.name)}(${k.id}, ends …${k.hint.slice(-4)})?`,
    consequence: "Requests with it fail at once, at every location. This cannot be undone.",
    button: "Revoke API key",
    danger: true,
  }),
  disableWebhook: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
    title: `Disable webhook configuration ${quoted(w.description)}(${w.id}, ${w.url})?`,
    consequence:
      "While it is disabled no new events are sent to it, and deliveries waiting for a retry fail at their next attempt. " +
      "Re-enabling it resumes deliveries and resets its health count.",
    button: "Disable webhook configuration",
    danger: true,
  }),
  resendDelivery: (
    d: Pick<DeliveryRecord, "id" | "event_type" | "status" | "in_flight_until">,
    w: Pick<WebhookConfigurationRecord, "url">,
  ): Confirmation => ({
    title: `Re-send delivery ${d.id} (${d.event_type}) to ${w.url}?`,
    consequence: `The receiver gets the event again. ${resendEffect(d)}`,
    button: "Re-send delivery",
    danger: false,
  }),
};

export const Confirm: FC<Confirmation & { action: string; csrf: string; cancel: string }> = (p) => (
  <PostForm action={p.action} csrf={p.csrf} label={p.title}>
    <p class="warning">{p.consequence}</p>
    {p.typeToConfirm && <Field id="confirm" label={p.typeToConfirm.label} required error={p.error} />}
    <button type="submit" class={p.danger ? "danger" : undefined}>
      {p.button}
    </button>{" "}
    <a href={p.cancel} class="button secondary">
      Cancel
    </a>
  </PostForm>
);

const actorText = (a: AuditEntryView["actor"]): string =>
  a.type === "operator"
    ? "operator"
    : a.type === "system"
      ? "keyway (automatic)"
      : a.type === "admin_token"
        ? `administrator (${a.id})`
        : `API client ${a.id} (key ${a.api_key_id})`;

export const AuditLog: FC<{ entries: AuditEntryView[] }> = ({ entries }) => (
  <>
    <TableRegion label="Audit log">
      <table>
        <caption class="hint">The 100 most recent changes, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">Resource</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr>
              <td>{when(e.at)}</td>
              <td>{actorText(e.actor)}</td>
              <td>
                <code>{e.action}</code>
              </td>
              <td>
                <code>{e.resource.id}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
    {entries.length === 0 && <p>No changes recorded yet.</p>}
  </>
);
