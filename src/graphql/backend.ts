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
 */
import { ApiError, type ErrorCode, type InvalidInput } from "../errors";
import type { Page } from "../objects/sql";
import type { DeliveryRecord, PublishedEventView, WebhookConfigurationView } from "../schemas/webhooks";

/** An ApiError's public parts (never its internal `detail`, which the API Worker logs). */
export interface SentError {
  code: ErrorCode;
  message: string;
  input?: InvalidInput;
  headers?: Record<string, string>;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: SentError };

/** The value, or the ApiError the backend refused with. */
export function unwrapOutcome<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  const { code, message, input, headers } = outcome.error;
  throw new ApiError(code, message, { ...(input ? { input } : {}), ...(headers ? { headers } : {}) });
}

/** `limit` and `cursor`, as REST's list query takes them. */
export interface PageArgs {
  limit?: unknown;
  cursor?: string;
}

export interface GraphQLBackend {
  listWebhookConfigurations(page: PageArgs): Promise<Outcome<Page<WebhookConfigurationView>>>;
  getWebhookConfiguration(id: string): Promise<Outcome<WebhookConfigurationView>>;
  createWebhookConfiguration(input: unknown): Promise<Outcome<{ config: WebhookConfigurationView; signingSecret: string }>>;
  updateWebhookConfiguration(id: string, input: unknown): Promise<Outcome<WebhookConfigurationView>>;
  deleteWebhookConfiguration(id: string): Promise<Outcome<WebhookConfigurationView>>;
  rotateSigningSecret(id: string): Promise<Outcome<{ config: WebhookConfigurationView; signingSecret: string; previousExpiresAt: string }>>;
  listDeliveries(configurationId: string, page: PageArgs): Promise<Outcome<Page<DeliveryRecord>>>;
  getDelivery(id: string): Promise<Outcome<DeliveryRecord>>;
  /** `idempotencyKey` as the caller gave it: the backend checks it as REST checks the header. */
  publishEvent(input: { type: unknown; data: unknown }, idempotencyKey: string | undefined): Promise<Outcome<PublishedEventView>>;
  sendTestEvent(configurationId: string): Promise<Outcome<PublishedEventView>>;
  retryDelivery(id: string): Promise<Outcome<DeliveryRecord>>;
}
