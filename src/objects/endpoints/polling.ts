/**
 * A polling configuration's events in its EndpointObject (issue 45, docs/receivers.md "Polling"):
 * the receiver cannot take inbound HTTP, so keyway keeps the configuration's deliveries in the
 * order its object took them and the receiver reads them after a cursor with a credential of this
 * configuration alone. The rules are functions of plain data (`decideRead`), the rest are the
 * object's SQL over them:
 *
 * - each delivery gets `pos`, the next of the endpoint's own counter (`poll_pos`), when it is
 *   inserted (deliveries.ts `accept`, polled): publish order (the organization hands an endpoint
 *   its deliveries in fan-out order, one hand-over at a time), and never below a position already
 *   served, so a cursor cannot skip a delivery that arrives late (at least once, never "at most
 *   once");
 * - a read after cursor `p` acknowledges everything up to `p` (the receiver asks for what follows
 *   what it has): those deliveries become `delivered`, the backlog is what is after `p`;
 * - retention deletes the oldest rows (30 days, or sooner past the storage budget) and remembers
 *   the highest position it deleted (`pruned_pos`): a cursor below it may have missed events, and
 *   is refused (410) rather than answered with a silent gap.
 *
 * Reads touch only this configuration's object, so one configuration's readers never wait on
 * another's.
 */
import { digestsEqual } from "../../lib/crypto";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "../../lib/encoding";
import { isoTime } from "../../lib/time";
import type { PollingState, WebhookConfigurationRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import { fail, ok, type Result } from "../sql";
import { move } from "./lifecycle";
import type { EndpointRow } from "./schema";

/** The most events one read answers. */
export const POLL_PAGE_MAX = 100;
/** The longest a read waits for an event when there is none (long polling). */
export const POLL_WAIT_MAX_MS = 20_000;
/** Reads waiting at once on one configuration; more are answered at once with what there is, so no caller holds the object open without bound. */
export const POLL_WAITERS_MAX = 10;

/** A disabled polling configuration's answer to its own token (the edge gives the same, webhooks/polling.ts). */
export const POLLING_DISABLED_MESSAGE =
  "This polling configuration is disabled: nothing is handed over while it is (its events are kept; the organization enables it again with status active).";

/** What a read asks: its credential's hash, the position after which it reads, how many, how long it may wait. */
export interface ReadRequest {
  token_hash: string;
  /** The cursor as presented (opaque to the receiver); null: from the oldest event kept. */
  cursor: string | null;
  limit: number;
  wait_ms: number;
}

/** One read's answer: the events' exact bodies in order, the cursor after the last, and whether more are there now. */
export interface ReadPage {
  bodies: string[];
  next_cursor: string;
  has_more: boolean;
}

/** A cursor names its configuration and a position: another configuration's cursor is refused, not read. */
export const encodeCursor = (configurationId: string, pos: number): string => base64UrlEncode(encodeUtf8(`${configurationId}:${pos}`));

export function decodeCursor(cursor: string): { configuration_id: string; pos: number } | null {
  const raw = base64UrlDecode(cursor);
  if (raw === null) return null;
  const text = decodeUtf8(raw);
  if (text === null) return null;
  const at = text.lastIndexOf(":");
  const pos = Number(text.slice(at + 1));
  if (at <= 0 || !Number.isSafeInteger(pos) || pos < 0 || String(pos) !== text.slice(at + 1)) return null;
  return { configuration_id: text.slice(0, at), pos };
}

/**
 * Whether this read may proceed, and from which position: a pure function of the configuration's
 * copy, the endpoint's row and the request. Every refusal of the credential is the same 401 (a
 * revoked, rotated-out or other configuration's token look alike to the caller); a cursor of
 * another configuration, or one past the last position given, is 404; one below what retention
 * deleted is 410.
 */
export function decideRead(
  config: WebhookConfigurationRecord | null,
  ep: Pick<EndpointRow, "configuration_id" | "deleted" | "pruned_pos" | "poll_pos"> | undefined,
  request: Pick<ReadRequest, "token_hash" | "cursor">,
): Result<{ after: number }> {
  // One answer for every id that is not a live polling configuration and every token that is not
  // its own, as the edge gives (webhooks/polling.ts): no caller learns which ids exist.
  const refused = fail("invalid_token", "The polling token is not this configuration's, or it was revoked or rotated out.");
  if (config === null || ep === undefined || ep.deleted === 1 || config.delivery !== "polling") return refused;
  const expected = config.polling?.token_hash ?? null;
  if (expected === null || !digestsEqual(expected, request.token_hash)) return refused;
  // The status contract: disabled, nothing is handed over (the events are kept, and read once it is enabled).
  if (config.status === "disabled") return fail("conflict", POLLING_DISABLED_MESSAGE);
  // Without a cursor: from the oldest event kept, whatever retention deleted before it.
  if (request.cursor === null) return ok({ after: 0 });
  const cursor = decodeCursor(request.cursor);
  // A cursor of another configuration, or past the last position given (made up: it would mark
  // events not yet published as read, and skip them when they come), is not one this endpoint answered.
  if (cursor === null || cursor.configuration_id !== ep.configuration_id || cursor.pos > ep.poll_pos) {
    return fail(
      "not_found",
      "This cursor is not one of this polling endpoint's; use a cursor it answered, or none to start from the oldest event kept.",
    );
  }
  if (cursor.pos < ep.pruned_pos) {
    return fail(
      "cursor_expired",
      "Events after this cursor have been deleted by retention (30 days, or sooner past the storage budget), so a read from it would skip them; read without a cursor to start from the oldest event kept, and reconcile what you missed.",
    );
  }
  return ok({ after: cursor.pos });
}

/** Up to `limit` events after position `after`, in order, and whether more follow. Reads the rows it answers (+1). */
export function readAfter(db: Db, configurationId: string, after: number, limit: number): ReadPage {
  const rows = db.all<{ pos: number; body: string }>(
    "SELECT pos, body FROM deliveries WHERE pos > ? ORDER BY pos LIMIT ?",
    after,
    limit + 1,
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1)?.pos ?? after;
  return { bodies: page.map((r) => r.body), next_cursor: encodeCursor(configurationId, last), has_more: rows.length > limit };
}

/**
 * The receiver asked for what follows `after`: what is up to it is delivered (at least once: the
 * cursor is the receiver's, so a read from an earlier one answers them again). Writes only when
 * the cursor moved forward; the read's time is kept at most once a second.
 */
export function acknowledge(db: Db, ep: Pick<EndpointRow, "acked_pos" | "last_poll_ms">, after: number, now: number): void {
  const moved = after > ep.acked_pos;
  if (!moved && ep.last_poll_ms !== null && now - ep.last_poll_ms < 1000) return;
  db.txn(() => {
    if (moved) {
      move(db, "read", { where: "pos > ? AND pos <= ?", args: [ep.acked_pos, after] }, {}, now);
    }
    db.run(
      "UPDATE endpoint SET acked_pos = max(acked_pos, ?), last_poll_ms = ?, last_delivered_ms = CASE WHEN ? THEN ? ELSE last_delivered_ms END",
      after,
      now,
      moved ? 1 : 0,
      now,
    );
  });
}

/**
 * The backlog (positions given after the last cursor presented, less those retention deleted) and
 * the last read, from the endpoint's row alone: every view of the configuration asks, so it reads
 * no delivery. Exact while retention deletes in position order (it deletes the oldest first; a
 * hand-over late by days is the only exception, counted as deleted).
 */
export function pollingState(ep: Pick<EndpointRow, "acked_pos" | "last_poll_ms" | "poll_pos" | "pruned_pos">): PollingState {
  const backlog = Math.max(0, ep.poll_pos - Math.max(ep.acked_pos, ep.pruned_pos));
  return { backlog, last_polled_at: ep.last_poll_ms === null ? null : isoTime(ep.last_poll_ms) };
}
