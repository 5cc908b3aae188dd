/**
 * The manager's Confirmations: what each destructive action or re-send asks before it happens, naming the thing it acts on, and the page that asks it. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { AdminTokenView, ApiKeyView, ClientCredentialView } from "../../../schemas/admin";
import type { UserRecord } from "../../../schemas/records";
import type { DeliveryRecord, WebhookConfigurationRecord } from "../../../schemas/webhooks";
import { Field, PostForm } from "../views";
import type { Org } from "./common";
import { resendEffect } from "./webhooks";

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
  rotateSigningSecret: (w: Pick<WebhookConfigurationRecord, "id" | "url" | "description">): Confirmation => ({
    title: `Rotate the signing secret of webhook configuration ${quoted(w.description)}(${w.id}, ${w.url})?`,
    consequence:
      "A new signing secret is made and shown once. For the next 24 hours each webhook carries two signatures, one with the new " +
      "secret and one with the current secret, so the receiver can switch to the new secret at any point in that time; after it, " +
      "only the new secret signs.",
    button: "Rotate signing secret",
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
