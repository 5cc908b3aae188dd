/**
 * The manager's Webhook configurations and deliveries: the list with health, creating a
 * configuration (its signing secret shown once), a configuration's page (health, traffic charts,
 * deliveries filtered and paged, test events, signing-secret rotation, disable and re-enable, and
 * the forms and lists of its recoveries and portal sessions, whose routes are in receivers.tsx), its
 * edit form (the receiver's client secret write-only), its deletion (confirmed first) and a
 * delivery's full story with its re-send. A refused create or edit answers with the form again:
 * every value as entered (the client secret too: the page is no-store and same-origin, and
 * retyping a long secret after each refusal is how a wrong one gets stored), keyway's message and
 * every field's at once: the API's schema and the SSRF guard's URL checks run together
 * (form-check.ts), so no mistake waits for the next submit to be told. Actions call the
 * same domain functions as the REST routes (webhooks/configurations.ts), as the session's actor.
 * Mounted under /manager/organizations by routes.tsx, behind its session and CSRF checks; the
 * markup is in pages/webhooks.tsx.
 */
import { Hono } from "hono";
import type { Child } from "hono/jsx";
import { ApiError, type InputIssue, invalidInput } from "../../errors";
import { parseInput } from "../../schemas/validate";
import {
  CreateWebhookConfigurationInput,
  DeliveryFilter,
  type DeliveryRecord,
  SignatureScheme,
  UpdateWebhookConfigurationInput,
  type WebhookConfiguration,
  type WebhookTrafficView,
} from "../../schemas/webhooks";
import {
  createWebhookConfiguration,
  deleteWebhookConfiguration,
  getWebhookConfiguration,
  listWebhookConfigurations,
  rotateSigningSecret,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../../webhooks/configurations";
import { testConnection } from "../../webhooks/connection-test";
import { maskedWebhookHeaders } from "../../webhooks/consumer";
import {
  canResend,
  getDelivery,
  getDeliveryWithBody,
  listDeliveries,
  retryDelivery,
  sendTestEvent,
  webhookTraffic,
} from "../../webhooks/deliveries";
import { revokePollingToken, rotatePollingToken } from "../../webhooks/polling";
import { listPortalSessions } from "../../webhooks/portal";
import { rotateAssertionKey } from "../../webhooks/receiver-keys";
import { listRecoveries } from "../../webhooks/recovery";
import { checkedInput, formErrorsOf, type Inside, jsonField, placedMessage, targetIssues } from "./form-check";
import { confirmations } from "./pages/confirm";
import { AssertionKeyRotated, ConnectionTestResult, createOAuthInput, postedReceiverOAuth, updateOAuthInput } from "./pages/receiver-oauth";
import { PortalLinkForm, PortalSessions, RecoverForm, Recoveries } from "./pages/receivers";
import {
  configName,
  DELIVERIES_PAGE,
  DeliveryDetail,
  type DeliveryQuery,
  deleteWebhookConfirmation,
  EMPTY_WEBHOOK_FORM,
  formValuesOf,
  SigningSecretRotated,
  WEBHOOK_FIELD_LABELS,
  WebhookConfigurationCreated,
  WebhookConfigurationDetail,
  WebhookConfigurationForm,
  WebhookConfigurations,
  type WebhookField,
  type WebhookFormErrors,
  type WebhookFormValues,
} from "./pages/webhooks";
import {
  actor,
  type C,
  confirmPage,
  csrf,
  form,
  keywayOrigin,
  type ManagerEnv,
  notices,
  orgCrumbs,
  orgFor,
  PAGE_SIZE,
  page,
} from "./shared";
import { type Crumb, SecretOnce } from "./views";

export function webhookRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Webhook configurations: health, edits, test events, and each delivery's attempts with a re-send.
  app.get("/:org/webhooks", async (c) => {
    const org = await orgFor(c);
    const deps = c.get("deps");
    const configs = await listWebhookConfigurations(deps, org.id, PAGE_SIZE);
    // At most 20 configurations: one call to each endpoint's object for its last 24 hours.
    const traffic = await Promise.all(configs.items.map((w) => webhookTraffic(deps, org.id, w.id)));
    return page(
      c,
      "Webhook configurations",
      [...orgCrumbs(c, org, true), { label: "Webhook configurations" }],
      <WebhookConfigurations
        base={`/manager/organizations/${org.id}/webhooks`}
        create={newWebhookPath(org.id)}
        configs={configs.items.map((config, i) => ({ config, last24h: (traffic[i] as WebhookTrafficView).last_24h }))}
      />,
      WEBHOOK_NOTICES[c.req.query("notice") ?? ""],
    );
  });

  // A new configuration: the form, then the signing secret shown once (or the form again, with why).
  // Beside the collection, not under it: no path segment is both a literal and a parameter, which
  // lets the app use Hono's RegExpRouter (app.ts).
  app.get("/:org/new-webhook", async (c) => {
    const org = await orgFor(c);
    return newWebhookPage(c, org, EMPTY_WEBHOOK_FORM);
  });

  app.post("/:org/webhooks", async (c) => {
    const org = await orgFor(c);
    const { values, secret, events, filter, channels } = postedWebhookForm(await form(c));
    try {
      const common = {
        ...(events.length > 0 ? { events } : {}),
        ...(filter.value !== undefined ? { filter: filter.value } : {}),
        ...(channels.length > 0 ? { channels } : {}),
        ...(values.description !== "" ? { description: values.description } : {}),
        ...(values.operations ? { operations: true } : {}),
      };
      // Issue 45: a polling configuration takes none of push's fields (the form's are ignored).
      const polling = values.delivery === "polling";
      const raw = polling
        ? { delivery: "polling", ...common }
        : {
            signature_scheme: values.signature_scheme,
            url: values.url,
            oauth: {
              token_url: values.token_url,
              client_id: values.client_id,
              // Left out when empty: private_key_jwt takes none, and for the others the schema says it is required.
              ...(secret !== "" ? { client_secret: secret } : {}),
              ...createOAuthInput(values),
            },
            ...common,
            ...(values.rate_limit !== "" ? { rate_limit: Number(values.rate_limit) } : {}),
            ordered: values.ordered,
            token_cache: values.token_cache,
          };
      const input = checkedInput(CreateWebhookConfigurationInput, raw, [
        ...filter.issues,
        ...(polling ? [] : targetIssues(c.get("deps"), values)),
      ]);
      const { config, signingSecret, pollingToken } = await createWebhookConfiguration(c.get("deps"), org.id, input, actor(c));
      return page(
        c,
        "New webhook configuration",
        [...webhookCrumbs(c, org, config), { label: polling ? "Polling token" : "Signing key" }],
        <WebhookConfigurationCreated
          base={webhookPath(org.id, config.id)}
          config={config}
          view={webhookConfigurationView(config, keywayOrigin(c))}
          secret={signingSecret}
          pollingToken={pollingToken}
        />,
      );
    } catch (err) {
      const errors = formErrors(err);
      if (errors === null) throw err;
      c.status(errors.status);
      return newWebhookPage(c, org, values, errors);
    }
  });

  // A configuration: health and charts, its deliveries (filtered, searched, paged), edits.
  app.get("/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const deps = c.get("deps");
    const base = webhookPath(org.id, config.id);
    const query = deliveryQuery(c);
    // A search for a webhook-id (the delivery id a receiver saw) opens that delivery.
    if (query.search?.kind === "delivery") {
      const found = await findDelivery(c, org.id, query.search.id);
      if (found?.webhook_configuration_id === config.id) return c.redirect(`${base}/deliveries/${found.id}`, 303);
    }
    const [deliveries, traffic, receivers] = await Promise.all([
      query.search?.kind === "delivery"
        ? { items: [], next_cursor: null }
        : listDeliveries(deps, org.id, config.id, { limit: DELIVERIES_PAGE, cursor: query.cursor }, query.filter),
      webhookTraffic(deps, org.id, config.id),
      receiverSections(c, org.id, config),
    ]);
    return page(
      c,
      webhookTitle(config),
      [...webhookCrumbs(c, org), { label: webhookTitle(config) }],
      <WebhookConfigurationDetail
        base={base}
        config={config}
        traffic={traffic}
        deliveries={deliveries.items}
        query={query}
        next={deliveries.next_cursor}
        csrf={csrf(c)}
        view={webhookConfigurationView(config, keywayOrigin(c))}
        origin={keywayOrigin(c)}
      >
        {receivers}
      </WebhookConfigurationDetail>,
      notices[c.req.query("notice") ?? ""],
    );
  });

  // The edit form on its own page; it posts to the configuration's own URL.
  app.get("/:org/webhooks/:id/edit", async (c) => {
    const { org, config } = await webhookFor(c);
    return editWebhookPage(c, org, config, formValuesOf(config, webhookConfigurationView(config, keywayOrigin(c)).oauth));
  });

  app.post("/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const { values, secret, events, filter, channels } = postedWebhookForm(await form(c));
    if (config.delivery === "polling") values.delivery = "polling";
    try {
      // No status here: disabling goes through its confirmation, re-enabling through its button.
      // An empty secret field is left out, which keeps the stored secret (unless a URL moves to
      // another origin: then the domain refuses it, naming the secret field).
      const common = {
        events: events.length === 0 ? null : events,
        description: values.description === "" ? null : values.description,
        operations: values.operations,
        filter: filter.value ?? null,
        channels: channels.length === 0 ? null : channels,
      };
      const current = webhookConfigurationView(config, keywayOrigin(c)).oauth;
      // A polling configuration (issue 45) has no URL, OAuth or pacing to change.
      const raw =
        current === null
          ? common
          : {
              url: values.url,
              oauth: {
                token_url: values.token_url,
                client_id: values.client_id,
                ...(secret !== "" ? { client_secret: secret } : {}),
                ...updateOAuthInput(values, current),
              },
              ...common,
              // A number field posts text; parseInput's schema says what a valid limit is.
              rate_limit: values.rate_limit === "" ? null : Number(values.rate_limit),
              ordered: values.ordered,
              token_cache: values.token_cache,
            };
      const input = checkedInput(UpdateWebhookConfigurationInput, raw, [
        ...filter.issues,
        ...(current === null ? [] : targetIssues(c.get("deps"), values)),
      ]);
      await updateWebhookConfiguration(c.get("deps"), org.id, config.id, input, actor(c));
    } catch (err) {
      const errors = formErrors(err);
      if (errors === null) throw err;
      c.status(errors.status);
      return editWebhookPage(c, org, config, values, errors);
    }
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-saved`, 303);
  });

  // Deleting: a confirmation naming the configuration, then only its form deletes.
  app.get("/:org/webhooks/:id/delete", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config), deleteWebhookConfirmation(config), {
      action: `${base}/delete`,
      cancel: base,
    });
  });

  app.post("/:org/webhooks/:id/delete", async (c) => {
    const { org, config } = await webhookFor(c);
    await deleteWebhookConfiguration(c.get("deps"), org.id, config.id, actor(c));
    return c.redirect(`/manager/organizations/${org.id}/webhooks?notice=webhook-deleted`, 303);
  });

  app.get("/:org/webhooks/:id/disable", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config), confirmations.disableWebhook(config), {
      action: `${base}/disable`,
      cancel: base,
    });
  });

  app.post("/:org/webhooks/:id/disable", async (c) => {
    const { org, config } = await webhookFor(c);
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, { status: "disabled" }, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-disabled`, 303);
  });

  app.post("/:org/webhooks/:id/enable", async (c) => {
    const { org, config } = await webhookFor(c);
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, { status: "active" }, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-enabled`, 303);
  });

  // A token request only, answered on this page in words (nothing of the token is shown).
  app.post("/:org/webhooks/:id/test-connection", async (c) => {
    const { org, config } = await webhookFor(c);
    const result = await testConnection(c.get("deps"), org.id, config.id, actor(c));
    const base = webhookPath(org.id, config.id);
    return page(
      c,
      "Connection test",
      [...webhookCrumbs(c, org, config), { label: "Connection test" }],
      <>
        <ConnectionTestResult result={result} />
        <p>
          <a href={base}>Back to the webhook configuration</a> · <a href={`${base}/edit`}>Edit the receiver's OAuth settings</a>
        </p>
      </>,
    );
  });

  app.post("/:org/webhooks/:id/test", async (c) => {
    const { org, config } = await webhookFor(c);
    await sendTestEvent(c.get("deps"), org.id, config.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=test-sent`, 303);
  });

  // A delivery's full story: the event, the request we send, every attempt, the re-send.
  app.get("/:org/webhooks/:id/deliveries/:delivery", async (c) => {
    const { org, config } = await webhookFor(c);
    const { delivery, body } = await getDeliveryWithBody(c.get("deps"), org.id, c.req.param("delivery") ?? "");
    if (delivery.webhook_configuration_id !== config.id) throw new ApiError("not_found", "There is no such page.");
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return page(
      c,
      `Delivery of ${delivery.event_type}`,
      [...webhookCrumbs(c, org, config), { label: `Delivery ${delivery.id}` }],
      <DeliveryDetail
        base={base}
        config={config}
        delivery={delivery}
        body={body}
        sentHeaders={maskedWebhookHeaders(delivery.id, config)}
        resendable={config.delivery !== "polling" && canResend(c.get("deps"), config, delivery)}
      />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  // Rotating the signing secret: asked first, then the new secret shown once.
  app.get("/:org/webhooks/:id/rotate-signing-secret", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    const scheme = SignatureScheme.safeParse(c.req.query("scheme"));
    return confirmPage(c, webhookCrumbs(c, org, config), confirmations.rotateSigningSecret(config, scheme.data), {
      action: `${base}/rotate-signing-secret`,
      cancel: base,
    });
  });

  // Issue 45: a polling configuration's read token, rotated (shown once) or revoked, each asked first.
  for (const action of ["rotate", "revoke"] as const) {
    app.get(`/:org/webhooks/:id/${action}-polling-token`, async (c) => {
      const { org, config } = await webhookFor(c);
      if (config.delivery !== "polling")
        throw new ApiError("conflict", "This webhook configuration delivers by push: it has no polling token.");
      const base = webhookPath(org.id, config.id);
      return confirmPage(c, webhookCrumbs(c, org, config), confirmations[`${action}PollingToken`](config), {
        action: `${base}/${action}-polling-token`,
        cancel: base,
      });
    });
  }

  app.post("/:org/webhooks/:id/rotate-polling-token", async (c) => {
    const { org, config } = await webhookFor(c);
    const { token } = await rotatePollingToken(c.get("deps"), org.id, config.id, actor(c));
    const base = webhookPath(org.id, config.id);
    return page(
      c,
      "New polling token",
      [...webhookCrumbs(c, org, config), { label: "New polling token" }],
      <>
        <SecretOnce id="polling-token" label="polling token" value={token} stored="hash" />
        <p>The previous token no longer reads. Give this one to the receiver.</p>
        <p>
          <a href={base}>Back to the webhook configuration</a>
        </p>
      </>,
    );
  });

  app.post("/:org/webhooks/:id/revoke-polling-token", async (c) => {
    const { org, config } = await webhookFor(c);
    await revokePollingToken(c.get("deps"), org.id, config.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=polling-token-revoked`, 303);
  });

  // Issue 42: the configuration's own private_key_jwt key: asked first, then the new key's timeline.
  app.get("/:org/webhooks/:id/rotate-assertion-key", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config), confirmations.rotateAssertionKey(config), {
      action: `${base}/rotate-assertion-key`,
      cancel: base,
    });
  });

  app.post("/:org/webhooks/:id/rotate-assertion-key", async (c) => {
    const { org, config } = await webhookFor(c);
    const rotated = await rotateAssertionKey(c.get("deps"), org.id, actor(c), config.id);
    return page(
      c,
      "Assertion key rotated",
      [...webhookCrumbs(c, org, config), { label: "Assertion key rotated" }],
      <AssertionKeyRotated result={rotated} back={webhookPath(org.id, config.id)} />,
    );
  });

  app.post("/:org/webhooks/:id/rotate-signing-secret", async (c) => {
    const { org, config } = await webhookFor(c);
    const scheme = SignatureScheme.safeParse((await form(c)).signature_scheme);
    const rotated = await rotateSigningSecret(c.get("deps"), org.id, config.id, actor(c), scheme.data);
    return page(
      c,
      "New signing secret",
      [...webhookCrumbs(c, org, config), { label: "New signing secret" }],
      <SigningSecretRotated
        base={webhookPath(org.id, config.id)}
        secret={rotated.signingSecret}
        publicKey={rotated.config.signing_secrets[0]?.public_key ?? null}
        previousExpiresAt={rotated.previousExpiresAt}
      />,
    );
  });

  app.get("/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return confirmPage(
      c,
      [...webhookCrumbs(c, org, config), { label: `Delivery ${delivery.id}`, href: base }],
      confirmations.resendDelivery(delivery, config),
      { action: `${base}/resend`, cancel: base },
    );
  });

  app.post("/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    await retryDelivery(c.get("deps"), org.id, delivery.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}/deliveries/${delivery.id}?notice=resent`, 303);
  });

  return app;
}

export const webhookPath = (orgId: string, id: string) => `/manager/organizations/${orgId}/webhooks/${id}`;
const newWebhookPath = (orgId: string) => `/manager/organizations/${orgId}/new-webhook`;

/** Notices of this sub-app's own actions (shared.tsx has the others'). */
const WEBHOOK_NOTICES: Record<string, string> = {
  "webhook-deleted": "Webhook configuration deleted; nothing more is sent to it.",
};

type OrgRef = { id: string; name: string };

function newWebhookPage(c: C, org: OrgRef, values: WebhookFormValues, errors?: WebhookFormErrors) {
  const list = `/manager/organizations/${org.id}/webhooks`;
  return page(
    c,
    "New webhook configuration",
    [...webhookCrumbs(c, org), { label: "New" }],
    <WebhookConfigurationForm mode="create" action={list} cancel={list} values={values} errors={errors} csrf={csrf(c)} />,
  );
}

function editWebhookPage(c: C, org: OrgRef, config: WebhookConfiguration, values: WebhookFormValues, errors?: WebhookFormErrors) {
  const base = webhookPath(org.id, config.id);
  return page(
    c,
    `Edit ${webhookTitle(config)}`,
    [...webhookCrumbs(c, org, config), { label: "Edit" }],
    <WebhookConfigurationForm mode="edit" action={base} cancel={base} values={values} errors={errors} csrf={csrf(c)} />,
  );
}

/**
 * The create and edit forms as posted: text trimmed, boxes on or off, the event types split at
 * commas and spaces. The client secret is among the values, which go back into the page after a
 * refusal (into its password field, as typed), and is also returned apart for the input.
 */
function postedWebhookForm(fields: Record<string, unknown>): {
  values: WebhookFormValues;
  secret: string;
  events: string[];
  filter: ReturnType<typeof jsonField>;
  channels: string[];
} {
  const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string).trim() : "");
  const values: WebhookFormValues = {
    url: text("url"),
    description: text("description"),
    events: text("events"),
    filter: text("filter"),
    channels: text("channels"),
    token_url: text("token_url"),
    client_id: text("client_id"),
    rate_limit: text("rate_limit"),
    ordered: fields.ordered === "on",
    token_cache: fields.token_cache === "on",
    operations: fields.operations === "on",
    client_secret: text("client_secret"),
    delivery: fields.delivery === "polling" ? "polling" : "push",
    signature_scheme: fields.signature_scheme === "v1a" ? "v1a" : "v1",
    ...postedReceiverOAuth(fields),
  };
  const list = (typed: string) => typed.split(/[\s,]+/).filter((e) => e !== "");
  const filter = jsonField(values.filter, ["filter"]);
  // The secret field is hidden for private_key_jwt (ShownFor): what it still holds then is not sent.
  const secret = values.auth_method === "private_key_jwt" ? "" : values.client_secret;
  return { values, secret, events: list(values.events), filter, channels: list(values.channels) };
}

/**
 * A refusal the person can correct in the form: invalid input (the schema's, the URL checks', or
 * the domain's, such as the client secret a move to another origin needs) and a conflict (the
 * organization has its 20 configurations). Anything else (not found, unavailable) is the error
 * page's: null.
 */
const formErrors = (err: unknown): (WebhookFormErrors & { status: 400 | 409 }) | null => formErrorsOf(err, formField, fieldMessage);

/** The form field an input path names (`oauth.token_url` is the token_url field), or null. */
function formField(path: string[]): WebhookField | null {
  const name = path[0] === "oauth" ? path[1] : path[0];
  return name !== undefined && Object.hasOwn(WEBHOOK_FIELD_LABELS, name) ? (name as WebhookField) : null;
}

/** A field's message, starting with its label; the secret's origin rule said in full. */
function fieldMessage(field: WebhookField, issue: InputIssue): string {
  const label = WEBHOOK_FIELD_LABELS[field];
  if ("text" in issue && field === "client_secret" && issue.text.includes("moves to another origin")) {
    const moved = issue.text.includes("token_url") ? "token URL" : "webhook URL";
    return `${label} is needed again: the ${moved} moves to another origin, and the stored secret is only ever sent where it was given for. Enter the receiver's client secret, or keep the ${moved}'s origin.`;
  }
  // A filter's problem names its path inside the filter (filter.data.amount); an event type's, a
  // channel's and a resource's their place in the list (events.<index>, oauth.resource.<index>).
  return placedMessage(label, issue, WEBHOOK_INSIDE[field]);
}

const WEBHOOK_INSIDE: Partial<Record<WebhookField, Inside>> = {
  filter: { json: 1 },
  events: { list: 1 },
  channels: { list: 1 },
  resource: { list: 2 },
};

export async function webhookFor(c: C) {
  const org = await orgFor(c);
  return { org, config: await getWebhookConfiguration(c.get("deps"), org.id, c.req.param("id") ?? "") };
}

/** Recoveries shown on the configuration's page; the rest are on its recoveries page (receivers.tsx). */
const RECENT_RECOVERIES = 10;

/**
 * What the configuration's page shows of recovery and the portal: the recover form (since an
 * hour ago, by default), the newest recoveries, the portal link form and the portal sessions.
 */
async function receiverSections(c: C, orgId: string, config: WebhookConfiguration): Promise<Child> {
  const deps = c.get("deps");
  const base = webhookPath(orgId, config.id);
  const [recoveries, sessions] = await Promise.all([
    listRecoveries(deps, orgId, config.id, { limit: RECENT_RECOVERIES }),
    listPortalSessions(deps, orgId, config.id, { limit: 100 }),
  ]);
  const hourAgo = new Date(deps.now() - 3600_000).toISOString().slice(0, 16);
  // A polling configuration's receiver reads again from an older cursor: nothing to re-send (issue 45).
  const recovery = config.delivery !== "polling" && (
    <>
      <h2 id="recovery">Recovery after an outage</h2>
      <RecoverForm action={`${base}/recover`} csrf={csrf(c)} values={{ since: hourAgo, until: "" }} />
      <Recoveries base={base} recoveries={recoveries.items} caption={`The ${RECENT_RECOVERIES} newest, newest first`} />
      {recoveries.items.length > 0 && (
        <p>
          <a href={`${base}/recoveries`}>Every recovery of this configuration</a>
        </p>
      )}
    </>
  );
  return (
    <>
      {recovery}
      <h2 id="portal">Receiver's portal</h2>
      <PortalLinkForm action={`${base}/portal-links`} csrf={csrf(c)} />
      <h3>Portal sessions</h3>
      <PortalSessions base={base} sessions={sessions.items} />
    </>
  );
}

/** A delivery of the configuration in the URL; one of another configuration is not found here. */
async function deliveryFor(c: C) {
  const { org, config } = await webhookFor(c);
  const delivery = await getDelivery(c.get("deps"), org.id, c.req.param("delivery") ?? "");
  if (delivery.webhook_configuration_id !== config.id) throw new ApiError("not_found", "There is no such page.");
  return { org, config, delivery };
}

export function webhookCrumbs(c: C, org: { id: string; name: string }, config?: WebhookConfiguration): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Webhook configurations", href: `/manager/organizations/${org.id}/webhooks` },
    ...(config ? [{ label: webhookTitle(config), href: webhookPath(org.id, config.id) }] : []),
  ];
}

/** A configuration is named by its description, or else by its URL (never by its id alone). */
const webhookTitle = (config: Pick<WebhookConfiguration, "id" | "description" | "url">): string => `Webhook: ${configName(config)}`;

/**
 * The deliveries' filters from the query string: status and event type (checked by the API's own
 * DeliveryFilter schema), a search box taking an event id or a webhook-id, and the cursor.
 */
function deliveryQuery(c: C): DeliveryQuery {
  const raw = (name: string) => (c.req.query(name) ?? "").trim();
  const q = raw("q");
  let search: DeliveryQuery["search"];
  if (q !== "") {
    if (/^msg_[0-9a-z]{26}$/.test(q)) search = { kind: "delivery", id: q };
    else if (/^evt_[0-9a-z]{26}$/.test(q)) search = { kind: "event", id: q };
    else
      throw invalidInput({ label: "search", issues: [{ path: ["q"], text: " must be an event id (evt_...) or a webhook-id (msg_...)" }] });
  }
  const filter = parseInput(
    DeliveryFilter,
    {
      ...(raw("status") !== "" ? { status: raw("status") } : {}),
      ...(raw("event_type") !== "" ? { event_type: raw("event_type") } : {}),
      ...(search?.kind === "event" ? { event_id: search.id } : {}),
    },
    "filters",
  );
  const cursor = raw("cursor");
  return { filter, q, search, ...(cursor !== "" ? { cursor } : {}) };
}

/** A delivery of this organization by id, or null (another organization's is not found either). */
async function findDelivery(c: C, orgId: string, id: string): Promise<DeliveryRecord | null> {
  try {
    return await getDelivery(c.get("deps"), orgId, id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}
