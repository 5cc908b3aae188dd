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

/**
 * What a webhook object's rows may hold before its oldest finished records go early: 7 GiB, below
 * a Durable Object's 10 GB with room for indexes and free pages. Bytes are counted as the objects
 * write and delete rows (bodies exactly, each row's other columns as the estimates below), so an
 * object never fails for want of space: retention is EVENT_RETENTION_DAYS, or shorter when a busy
 * endpoint (or organization) would pass the budget sooner (docs/storage.md, "Expected load").
 */
export const STORAGE_BUDGET_BYTES = 7 * 2 ** 30;
/** A delivery's row, its indexes and its attempts, beside its body (an estimate on the high side). */
export const DELIVERY_ROW_BYTES = 600;
/** An event's row and indexes in the organization's object (its body is counted while it is kept). */
export const EVENT_ROW_BYTES = 250;
/** How many of the latest events sent to a configuration the portal's "try it" tries (routing.ts previewRouting). */
export const PREVIEW_SHOWN = 20;
