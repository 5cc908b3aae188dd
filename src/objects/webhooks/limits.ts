/**
 * The bounds of an organization's webhooks, shared by its WebhookObject and its endpoints'
 * objects: how many configurations (so how wide one event's fan-out is), how long events,
 * deliveries and attempts are kept, and how long an Idempotency-Key answers.
 */

/** The most webhook configurations an organization may have: one event's fan-out is at most this. */
export const MAX_WEBHOOK_CONFIGURATIONS = 20;
/** Events, their deliveries and attempts are kept this long. */
export const EVENT_RETENTION_DAYS = 30;
/** An Idempotency-Key answers with the original event for this long. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
