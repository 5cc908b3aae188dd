/**
 * What the GraphQL engine may ask of the service: the domain operations its resolvers adapt,
 * scoped to the organization and actor of one admitted request. The engine runs in its own
 * Worker (src/graphql-worker.ts) and holds no binding: the API Worker hands it an implementation
 * of this interface (http/graphql-backend.ts, a Workers RPC target), so every read and change goes
 * through the API Worker's domain functions exactly as REST's do. Inputs go as the caller gave
 * them (in REST's snake_case) and are parsed there, with REST's schemas, once; answers are the REST
 * views.
 *
 * An RPC call cannot carry an ApiError across (a thrown error arrives as a bare Error), so each
 * operation answers an Outcome: the value, or the error's public parts, which `unwrapOutcome` turns back
 * into the same ApiError on the engine's side.
 *
 * The two sides are deployed apart, so an engine of one release meets the backend of the release
 * before or after it: these shapes change only as docs/deploy.md, "The companions' contract", says
 * (new methods and optional fields only; a removal takes two releases; test/companions-contract.test.ts).
 */

import type { output } from "zod";
import { ApiError, ERROR_CODES, type ErrorCode, type InvalidInput } from "../errors";
import type { Page } from "../objects/sql";
import type { EventTypeView, PortalLinkView, PortalSessionView, RecoveryView, WebhookSettingsView } from "../schemas/receivers";
import type {
  AssertionKeyRotationView,
  ConnectionTestView,
  DeliveryRecord,
  PublishedEventView,
  WebhookConfigurationView,
} from "../schemas/webhooks";

/**
 * An ApiError's public parts (never its internal `detail`, which the API Worker logs). `code` may
 * be one this engine does not know: the backend of a later release can refuse with a code added
 * since. `status` is the HTTP status the code stands for, optional because backends before it
 * did not send it.
 */
export interface SentError {
  code: ErrorCode | (string & {});
  message: string;
  input?: InvalidInput;
  headers?: Record<string, string>;
  status?: number;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: SentError };

const knownCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_CODES, code);

/**
 * The value, or the ApiError the backend refused with. An unknown code cannot become an ApiError
 * as it is (there is no status or user message for it here), and a field must not turn into an
 * internal error because the backend is a release ahead: it keeps its message and its status
 * class, as invalid_request for a 4xx and server_error otherwise, until this engine knows it.
 */
export function unwrapOutcome<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  const { code, message, input, headers, status } = outcome.error;
  const options = { ...(input ? { input } : {}), ...(headers ? { headers } : {}) };
  if (knownCode(code)) throw new ApiError(code, message, options);
  const clientFault = status !== undefined && status >= 400 && status < 500;
  throw new ApiError(clientFault ? "invalid_request" : "server_error", message, {
    ...options,
    status: clientFault ? status : ERROR_CODES.server_error.status,
  });
}

/** `limit` and `cursor`, as REST's list query takes them. */
export interface PageArgs {
  limit?: unknown;
  cursor?: string;
}

export interface GraphQLBackend {
  listWebhookConfigurations(page: PageArgs): Promise<Outcome<Page<WebhookConfigurationView>>>;
  getWebhookConfiguration(id: string): Promise<Outcome<WebhookConfigurationView>>;
  /**
   * `signingSecret` is null for a `v1a` or a polling configuration, and `pollingToken` is a polling
   * configuration's read token (issue 45): an API Worker before issue 45 sends no `pollingToken`,
   * and always a secret, since it makes only `v1` push configurations.
   */
  createWebhookConfiguration(
    input: unknown,
  ): Promise<Outcome<{ config: WebhookConfigurationView; signingSecret: string | null; pollingToken?: string | null }>>;
  updateWebhookConfiguration(id: string, input: unknown): Promise<Outcome<WebhookConfigurationView>>;
  deleteWebhookConfiguration(id: string): Promise<Outcome<WebhookConfigurationView>>;
  /** In the configuration's current scheme; `signingSecret` is null when that is `v1a` (issue 45). */
  rotateSigningSecret(id: string): Promise<Outcome<RotatedSigningKey>>;
  listDeliveries(configurationId: string, page: PageArgs): Promise<Outcome<Page<DeliveryRecord>>>;
  getDelivery(id: string): Promise<Outcome<DeliveryRecord>>;
  /** `idempotencyKey` as the caller gave it: the backend checks it as REST checks the header. */
  publishEvent(
    input: { type: unknown; data: unknown; channels?: unknown },
    idempotencyKey: string | undefined,
  ): Promise<Outcome<PublishedEventView>>;
  sendTestEvent(configurationId: string): Promise<Outcome<PublishedEventView>>;
  retryDelivery(id: string): Promise<Outcome<DeliveryRecord>>;

  // Issue 30, the receivers' features. Methods added after the first recorded release: an API
  // Worker of that release lacks them, and then only the GraphQL fields that need them fail
  // (docs/deploy.md, "The companions' contract", rule 4).
  listEventTypes(page: PageArgs): Promise<Outcome<Page<EventTypeView>>>;
  /** `name` as the caller gave it: one that cannot be a type is not found, as in REST's path. */
  getEventType(name: string): Promise<Outcome<EventTypeView>>;
  createEventType(input: unknown): Promise<Outcome<EventTypeView>>;
  updateEventType(name: string, input: unknown): Promise<Outcome<EventTypeView>>;
  deleteEventType(name: string): Promise<Outcome<EventTypeView>>;
  getWebhookSettings(): Promise<Outcome<WebhookSettingsView>>;
  updateWebhookSettings(input: unknown): Promise<Outcome<WebhookSettingsView>>;
  /** `input` is REST's body of POST .../recover: `{ since, until? }`. */
  recoverDeliveries(configurationId: string, input: unknown): Promise<Outcome<RecoveryView>>;
  getRecovery(configurationId: string, id: string): Promise<Outcome<RecoveryView>>;
  listRecoveries(configurationId: string, page: PageArgs): Promise<Outcome<Page<RecoveryView>>>;
  /** `input` is REST's body of POST .../portal-links: `{ expires_in? }`; the link is on the API Worker's origin. */
  createPortalLink(configurationId: string, input: unknown): Promise<Outcome<PortalLinkView>>;
  listPortalSessions(configurationId: string, page: PageArgs): Promise<Outcome<Page<PortalSessionView>>>;
  endPortalSession(configurationId: string, id: string): Promise<Outcome<PortalSessionView>>;

  // Issue 31: methods an API Worker of the release before lacks (the same rule 4).
  rotateAssertionKey(): Promise<Outcome<output<typeof AssertionKeyRotationView>>>;
  testWebhookConnection(configurationId: string): Promise<Outcome<ConnectionTestView>>;

  // Issue 45: methods an API Worker of the release before lacks (the same rule 4).
  /**
   * A rotation to the scheme `input` names: REST's body of POST .../rotate-signing-secret,
   * `{ signature_scheme? }`. A method of its own rather than an argument added to
   * rotateSigningSecret: an API Worker before issue 45 would ignore that argument and rotate in the
   * current scheme, where lacking this method it fails the field and changes nothing.
   */
  rotateSigningKey(id: string, input: unknown): Promise<Outcome<RotatedSigningKey>>;
  /** A polling configuration's new read token (shown once); conflict for a push configuration. */
  rotatePollingToken(id: string): Promise<Outcome<{ config: WebhookConfigurationView; token: string }>>;
  revokePollingToken(id: string): Promise<Outcome<WebhookConfigurationView>>;
}

/** A signing key rotation's answer: the new `v1` secret (null for `v1a`, whose public key is in the view). */
export interface RotatedSigningKey {
  config: WebhookConfigurationView;
  signingSecret: string | null;
  previousExpiresAt: string;
}
