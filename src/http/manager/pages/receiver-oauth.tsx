/**
 * The receiver's token endpoint settings of issue 31 as the manager's configuration forms and the
 * receivers' portal settings page show and post them: how keyway authenticates there (the method),
 * what it asks for (scope, resource, audience, the assertion's audience) and DPoP; the facts a
 * receiver needs to set its OAuth server up (the method, the DPoP key's thumbprint, the JWKS URL
 * to register as the client's jwks_uri); and a connection test's answer in words. Plain data in,
 * markup out; the input objects built here are checked by REST's schemas where they are used.
 */
import type { FC } from "hono/jsx";
import type { AssertionKeyRotationView, ConnectionTestView, ReceiverAuthMethod, WebhookConfigurationView } from "../../../schemas/webhooks";
import { Checkbox, Field, ShownFor, TextArea, Time, Url } from "../views";
import type { Confirmation } from "./common";

type AssertionKeyRotation = import("zod").output<typeof AssertionKeyRotationView>;

/** A push configuration's view of the receiver's OAuth settings (a polling configuration has none: issue 45). */
export type ReceiverOAuthView = NonNullable<WebhookConfigurationView["oauth"]>;

/** The fields as posted, each named as the input's `oauth.<name>`. */
export type ReceiverOAuthField = "auth_method" | "scope" | "resource" | "audience" | "assertion_audience";

export interface ReceiverOAuthValues {
  auth_method: ReceiverAuthMethod;
  scope: string;
  /** As typed: one absolute URI a line. */
  resource: string;
  audience: string;
  assertion_audience: string;
  dpop: boolean;
}

export const EMPTY_RECEIVER_OAUTH: ReceiverOAuthValues = {
  auth_method: "client_secret_post",
  scope: "",
  resource: "",
  audience: "",
  assertion_audience: "",
  dpop: false,
};

/** The form's values of stored settings; a polling configuration's (none) are the empty form's. */
export const receiverOAuthValuesOf = (o: WebhookConfigurationView["oauth"]): ReceiverOAuthValues =>
  o === null
    ? EMPTY_RECEIVER_OAUTH
    : {
        auth_method: o.auth_method,
        scope: o.scope ?? "",
        resource: (o.resource ?? []).join("\n"),
        audience: o.audience ?? "",
        assertion_audience: o.assertion_audience ?? "",
        dpop: o.dpop,
      };

export const RECEIVER_OAUTH_LABELS: Record<ReceiverOAuthField, string> = {
  auth_method: "Client authentication at the token URL",
  scope: "Scope",
  resource: "Resource indicators",
  audience: "Audience",
  assertion_audience: "Assertion audience",
};

const METHODS: { value: ReceiverAuthMethod; label: string; hint: string }[] = [
  {
    value: "client_secret_post",
    label: "Client secret in the request body (client_secret_post)",
    hint: "the specification's default",
  },
  {
    value: "client_secret_basic",
    label: "Client secret with HTTP Basic (client_secret_basic)",
    hint: "the default of many OAuth servers",
  },
  {
    value: "private_key_jwt",
    label: "An assertion keyway signs (private_key_jwt)",
    hint: "no client secret: the receiver's server checks it with keyway's public keys",
  },
];

const isMethod = (v: unknown): v is ReceiverAuthMethod => METHODS.some((m) => m.value === v);

/** The form's fields as posted: text trimmed; an unknown method is kept as the default's. */
export function postedReceiverOAuth(fields: Record<string, unknown>): ReceiverOAuthValues {
  const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string).trim() : "");
  return {
    auth_method: isMethod(fields.auth_method) ? fields.auth_method : "client_secret_post",
    scope: text("scope"),
    resource: text("resource"),
    audience: text("audience"),
    assertion_audience: text("assertion_audience"),
    dpop: fields.dpop === "on",
  };
}

const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "");

/** The `oauth` additions of a create input: empty fields left out. */
export function createOAuthInput(v: ReceiverOAuthValues): Record<string, unknown> {
  const resource = lines(v.resource);
  return {
    auth_method: v.auth_method,
    ...(v.scope !== "" ? { scope: v.scope } : {}),
    ...(resource.length > 0 ? { resource } : {}),
    ...(v.audience !== "" ? { audience: v.audience } : {}),
    // Shown for private_key_jwt only (ShownFor): what it holds under another method is not sent.
    ...(v.assertion_audience !== "" && v.auth_method === "private_key_jwt" ? { assertion_audience: v.assertion_audience } : {}),
    dpop: v.dpop,
  };
}

/**
 * The `oauth` additions of an update: an empty field removes its setting (null). The method and
 * DPoP are sent only when they change, since turning DPoP on makes a new key every time.
 */
export function updateOAuthInput(v: ReceiverOAuthValues, current: ReceiverOAuthView): Record<string, unknown> {
  const resource = lines(v.resource);
  return {
    ...(v.auth_method !== current.auth_method ? { auth_method: v.auth_method } : {}),
    scope: v.scope === "" ? null : v.scope,
    resource: resource.length === 0 ? null : resource,
    audience: v.audience === "" ? null : v.audience,
    // Only private_key_jwt has one (the field is hidden otherwise), and null means "the token URL".
    ...(v.auth_method === "private_key_jwt" ? { assertion_audience: v.assertion_audience === "" ? null : v.assertion_audience } : {}),
    ...(v.dpop !== current.dpop ? { dpop: v.dpop } : {}),
  };
}

/** Beside the client secret field: why it may stay empty. */
export const CLIENT_SECRET_NOT_FOR_JWT =
  "not used with private_key_jwt, which sends an assertion keyway signs instead of a secret: leave it empty then";

/** The method, as radio buttons in a group of their own (its id is where an error's link points). */
export const AuthMethodChoice: FC<{ value: ReceiverAuthMethod; error?: string | undefined }> = ({ value, error }) => (
  <fieldset id="auth_method" aria-describedby={error ? "auth_method-error" : undefined}>
    <legend>{RECEIVER_OAUTH_LABELS.auth_method}</legend>
    {error && (
      <p id="auth_method-error" class="field-error" role="alert">
        {error}
      </p>
    )}
    {METHODS.map((m) => (
      <p class="check">
        <input id={`auth_method-${m.value}`} name="auth_method" type="radio" value={m.value} checked={m.value === value} />
        <label for={`auth_method-${m.value}`}>
          {m.label} <span class="hint">({m.hint})</span>
        </label>
      </p>
    ))}
  </fieldset>
);

/** What keyway asks the receiver's token endpoint for, and DPoP. */
export const TokenRequestFields: FC<{
  values: ReceiverOAuthValues;
  err: (field: ReceiverOAuthField) => string | undefined;
  /** The receivers' portal: the assertion's audience is the organization's to set (issue 42), not a field here. */
  receiver?: boolean;
}> = ({ values, err, receiver = false }) => (
  <>
    <Field
      id="scope"
      label={RECEIVER_OAUTH_LABELS.scope}
      hint="optional; sent as scope, e.g. webhooks:receive; several separated by single spaces"
      value={values.scope}
      error={err("scope")}
    />
    <TextArea
      id="resource"
      label={RECEIVER_OAUTH_LABELS.resource}
      hint="optional; one absolute URI a line, each sent as a resource parameter (RFC 8707)"
      value={values.resource}
      rows={3}
      error={err("resource")}
    />
    <Field
      id="audience"
      label={RECEIVER_OAUTH_LABELS.audience}
      hint="optional; sent as audience, for servers that take it (Auth0 and the like)"
      value={values.audience}
      error={err("audience")}
    />
    {!receiver && (
      <ShownFor choice="auth_method" values={["private_key_jwt"]}>
        <Field
          id="assertion_audience"
          label={RECEIVER_OAUTH_LABELS.assertion_audience}
          hint="private_key_jwt only; the assertion's aud when the receiver's server wants its issuer URL; empty for the token URL"
          value={values.assertion_audience}
          error={err("assertion_audience")}
        />
      </ShownFor>
    )}
    <Checkbox
      id="dpop"
      label="DPoP-bound tokens"
      checked={values.dpop}
      hint="keyway proves a key of its own with each token request and each webhook (RFC 9449); only for receivers whose server issues DPoP tokens"
    />
  </>
);

const METHOD_WORDS: Record<ReceiverAuthMethod, string> = {
  client_secret_post: "client secret in the request body (client_secret_post, the default)",
  client_secret_basic: "client secret with HTTP Basic (client_secret_basic)",
  private_key_jwt: "an assertion keyway signs (private_key_jwt)",
};

/** What the receiver's OAuth server is told to expect: the method, what is asked for, the keys. */
export const ReceiverOAuthFacts: FC<{ oauth: ReceiverOAuthView; origin: string }> = ({ oauth, origin }) => (
  <dl class="facts">
    <dt>Token URL</dt>
    <dd>
      <Url value={oauth.token_url} />
    </dd>
    <dt>Client id at the receiver</dt>
    <dd>
      <code class="wrap">{oauth.client_id}</code>
    </dd>
    <dt>Client authentication</dt>
    <dd>{METHOD_WORDS[oauth.auth_method]}</dd>
    {oauth.jwks_uri !== null && (
      <>
        <dt>JWKS URL (the client's jwks_uri)</dt>
        <dd>
          <Url value={new URL(oauth.jwks_uri, origin).href} />{" "}
          <span class="hint">(register it at the receiver's OAuth server: keyway's public keys, which check its assertions)</span>
        </dd>
      </>
    )}
    {oauth.assertion_audience !== null && (
      <>
        <dt>Assertion audience</dt>
        <dd>
          <code class="wrap">{oauth.assertion_audience}</code>
        </dd>
      </>
    )}
    <dt>Asks for</dt>
    <dd>
      {oauth.scope === null && oauth.resource === null && oauth.audience === null ? (
        "no scope, resource or audience"
      ) : (
        <>
          {oauth.scope !== null && (
            <>
              scope <code class="wrap">{oauth.scope}</code>{" "}
            </>
          )}
          {oauth.resource?.map((r) => (
            <>
              resource <Url value={r} />{" "}
            </>
          ))}
          {oauth.audience !== null && (
            <>
              audience <code class="wrap">{oauth.audience}</code>
            </>
          )}
        </>
      )}
    </dd>
    <dt>DPoP</dt>
    <dd>
      {oauth.dpop_jkt === null ? (
        "off: Bearer tokens"
      ) : (
        <>
          on: tokens bound to keyway's key, thumbprint (cnf.jkt) <code class="wrap">{oauth.dpop_jkt}</code>
        </>
      )}
    </dd>
  </dl>
);

const OUTCOME_WORDS: Record<ConnectionTestView["outcome"], string> = {
  token_issued: "a token was issued",
  refused_by_ssrf_guard: "not sent: the token URL's address is not a public one (keyway's SSRF guard)",
  dns_failure: "the token URL's host name did not resolve",
  connection_refused: "the token URL's server refused the connection",
  tls_failure: "the TLS handshake with the token URL failed",
  timeout: "the token URL did not answer in time",
  network_error: "the token URL could not be reached",
  redirect_refused: "the token URL answered with a redirect, which keyway does not follow",
  http_error: "the token URL refused the request",
  not_json: "the token URL's answer was not JSON",
  no_access_token: "the token URL answered without an access_token",
};

/** A connection test's answer in words: outcome, status, error code, token_type, expires_in. */
export const ConnectionTestResult: FC<{ result: ConnectionTestView }> = ({ result: r }) => (
  <section class={r.ok ? "card" : "warning"} aria-labelledby="connection-test">
    <h2 id="connection-test">{r.ok ? "Connection test: a token was issued" : "Connection test: no token"}</h2>
    <p>In keyway's words: {r.message}</p>
    <dl class="facts">
      <dt>Outcome</dt>
      <dd>
        {OUTCOME_WORDS[r.outcome]} (<code>{r.outcome}</code>)
      </dd>
      <dt>HTTP status</dt>
      <dd>{r.http_status === null ? "none: the token URL did not answer" : r.http_status}</dd>
      <dt>Error code</dt>
      <dd>{r.error === null ? "none" : <code>{r.error}</code>}</dd>
      <dt>token_type</dt>
      <dd>{r.token_type === null ? "none" : <code>{r.token_type}</code>}</dd>
      <dt>expires_in</dt>
      <dd>{r.expires_in === null ? "none" : `${r.expires_in} s`}</dd>
      <dt>Sent with</dt>
      <dd>
        {METHOD_WORDS[r.auth_method]}
        {r.dpop ? ", with a DPoP proof" : ""}; answered in {r.latency_ms} ms
      </dd>
    </dl>
    <p class="hint">Nothing of the token is kept or shown, and no text of the receiver's.</p>
  </section>
);

/** The webhook settings page's part on the organization's assertion key, with its JWKS URL. */
export const AssertionKeySection: FC<{ rotate: string; jwksUrl: string }> = ({ rotate, jwksUrl }) => (
  <section class="card" aria-labelledby="assertion-key">
    <h2 id="assertion-key">Assertion key (private_key_jwt)</h2>
    <p>
      Each private_key_jwt configuration signs with a key of its own (rotated on its page). This organization's key signs only for
      configurations made before keys per configuration that have not moved to their own yet; their receivers' OAuth servers check it with
      the public keys at <Url value={jwksUrl} />. The private key is never shown.
    </p>
    <p>
      <a href={rotate}>Rotate the assertion key</a> (when it may have leaked, or on a schedule; nothing stops working)
    </p>
  </section>
);

export const rotateAssertionKeyConfirmation: Confirmation = {
  title: "Rotate the organization's assertion key?",
  consequence:
    "A new key is made and published at the JWKS URL at once; it starts signing private_key_jwt assertions 10 minutes later, by " +
    "when receivers' OAuth servers have fetched the keys again. The current key keeps signing until then and stays published for " +
    "24 hours after it, so no token request is refused on the way.",
  button: "Rotate assertion key",
  danger: false,
};

/** After a rotation: the new key's id, when it signs, and until when the previous one is published. */
export const AssertionKeyRotated: FC<{ result: AssertionKeyRotation; back: string }> = ({ result, back }) => (
  <>
    <dl class="facts">
      <dt>New key (kid)</dt>
      <dd>
        <code class="wrap">{result.kid}</code>
      </dd>
      <dt>Signs from</dt>
      <dd>
        <Time at={result.activates_at} />
      </dd>
      <dt>Previous key</dt>
      <dd>
        {result.previous_kid === null ? (
          "none"
        ) : (
          <>
            <code class="wrap">{result.previous_kid}</code> stays published; it is removed <Time at={result.previous_expires_at} />
          </>
        )}
      </dd>
    </dl>
    <p>
      <a href={back}>Back to the webhook settings</a>
    </p>
  </>
);
