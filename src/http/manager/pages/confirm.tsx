/**
 * The manager's Confirmations: what each destructive action or re-send asks before it happens, naming the thing it acts on, and the page that asks it. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AdminTokenView, ApiKeyView, ClientCredentialView, TrustedIssuerView } from "../../../schemas/admin";
import type { UserRecord } from "../../../schemas/records";
import type { DeliveryRecord, WebhookConfigurationRecord } from "../../../schemas/webhooks";
import { Field, PostForm, when } from "../views";
import type { Confirmation, Org } from "./common";
import { duration } from "./keys";
import { resendEffect } from "./webhooks";

export type { Confirmation } from "./common";

/** A name in curly quotes when there is one, for a confirmation's question. */
const quoted = (name: string | null | undefined): string => (name ? `“${name}” ` : "");

/** A configuration's id and where it delivers, for a question (a polling configuration has no URL: issue 45). */
const named = (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): string =>
  `${quoted(w.description)}(${w.id}, ${w.url || "polling"})`;

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
  removeTrustedIssuer: (i: Pick<TrustedIssuerView, "id" | "name" | "issuer">): Confirmation => ({
    title: `Stop trusting issuer ${quoted(i.name)}(${i.issuer}, ${i.id})?`,
    consequence:
      "Every federated_jwt client credential that names this issuer is revoked with it: access tokens issued with them stop " +
      "working at once, and its JWTs no longer authenticate anyone. This cannot be undone.",
    button: "Remove trusted issuer",
    danger: true,
  }),
  revokeApiKey: (k: Pick<ApiKeyView, "id" | "name" | "hint">): Confirmation => ({
    title: `Revoke API key ${quoted(k.name)}(${k.id}, ends …${k.hint.slice(-4)})?`,
    consequence: "Requests with it fail at once, at every location. This cannot be undone.",
    button: "Revoke API key",
    danger: true,
  }),
  /** `until`: when the grace would end if confirmed now; the current grace's end, if one is running. */
  rotateApiKey: (
    k: Pick<ApiKeyView, "id" | "name" | "hint" | "previous_secret_expires_at">,
    graceSeconds: number,
    until: string,
  ): Confirmation => ({
    title: `Rotate the secret of API key ${quoted(k.name)}(${k.id}, ${k.hint})?`,
    consequence:
      "A new secret is made and shown once; the key keeps its id, limits, counts and credits. " +
      (graceSeconds === 0
        ? "The current secret stops working at once, at every location: its clients fail until they have the new one."
        : `The current secret keeps working for ${duration(graceSeconds)} more (until about ${when(until)}), both counting against this key's limits, so its clients can switch; then it is refused.`) +
      (k.previous_secret_expires_at !== null
        ? ` The secret an earlier rotation replaced, still working until ${when(k.previous_secret_expires_at)}, stops at once.`
        : ""),
    button: "Rotate secret",
    // Without a grace, it stops something at once.
    danger: graceSeconds === 0,
    hidden: { grace_seconds: String(graceSeconds) },
  }),
  endApiKeyGrace: (k: Pick<ApiKeyView, "id" | "name" | "hint" | "previous_secret_expires_at">): Confirmation => ({
    title: `End the grace of the previous secret of API key ${quoted(k.name)}(${k.id}, ${k.hint})?`,
    consequence:
      (k.previous_secret_expires_at === null
        ? "This key has no previous secret working now; nothing changes. "
        : `The secret the last rotation replaced works until ${when(k.previous_secret_expires_at)}; once confirmed it is refused with 401 from its next request on, at every location, and clients still using it fail. `) +
      "The current secret keeps working. This cannot be undone.",
    button: "End grace now",
    danger: true,
  }),
  disableWebhook: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
    title: `Disable webhook configuration ${named(w)}?`,
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
  rotateAssertionKey: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
    title: `Rotate the assertion key of webhook configuration ${named(w)}?`,
    consequence:
      "A new key is made and published at this configuration's JWKS URL at once; it starts signing its private_key_jwt assertions " +
      "10 minutes later, by when the receiver's OAuth server has fetched the keys again. The current key keeps signing until then " +
      "and stays published for 24 hours after it. A configuration still on the organization's key moves to its own: its receiver " +
      "must have registered this configuration's JWKS URL first.",
    button: "Rotate assertion key",
    danger: false,
  }),
  /** `scheme`: the new key's, when it changes (issue 45: a change of scheme is a rotation). */
  rotateSigningSecret: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">, scheme?: "v1" | "v1a"): Confirmation => ({
    title: `Rotate the signing secret of webhook configuration ${named(w)}${scheme ? ` to ${scheme}` : ""}?`,
    consequence:
      `A new signing key${scheme ? ` (${scheme})` : ""} is made: a v1 secret is shown once, a v1a key's public key shown. ` +
      "For the next 24 hours each webhook carries a signature with the new key and one with the current key, and a key rotated " +
      "out earlier keeps signing until its own 24 hours end, so the receiver can switch at any point in that time.",
    button: "Rotate signing secret",
    danger: false,
    ...(scheme ? { hidden: { signature_scheme: scheme } } : {}),
  }),
  rotatePollingToken: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
    title: `Rotate the polling token of webhook configuration ${named(w)}?`,
    consequence:
      "A new polling token is made and shown once. The current token stops reading at once (a read waiting with it ends): the " +
      "receiver reads nothing until it has the new one. Its events are kept meanwhile.",
    button: "Rotate polling token",
    danger: true,
  }),
  revokePollingToken: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
    title: `Revoke the polling token of webhook configuration ${named(w)}?`,
    consequence:
      "No read succeeds (401) until a new token is rotated in. The configuration keeps its events meanwhile, for the receiver to read then.",
    button: "Revoke polling token",
    danger: true,
  }),
};

export const Confirm: FC<Confirmation & { action: string; csrf: string; cancel: string }> = (p) => (
  <PostForm action={p.action} csrf={p.csrf} label={p.title}>
    {Object.entries(p.hidden ?? {}).map(([name, value]) => (
      <input type="hidden" name={name} value={value} />
    ))}
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
