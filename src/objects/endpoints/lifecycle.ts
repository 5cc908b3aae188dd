/**
 * A delivery's lifecycle: where a delivery row can be, the moves between those places, and the one
 * function every change of a delivery's place goes through (docs/webhooks.md, "A delivery's
 * lifecycle"). A place is the row's `status` and, while the delivery is open, its `state`:
 *
 *   pending|retrying / waiting   due at `due_ms`, no ticket out
 *   pending|retrying / queued    a ticket is in a queue (`ticket` names the current one)
 *   pending|retrying / running   an attempt holds the lease (`lease_until_ms`)
 *   pending / kept               a polling configuration's: its receiver reads it (no ticket ever)
 *   delivered, failed            the end of a series (a user's re-send starts the next)
 *
 * `pending` becomes `retrying` at the first counted retry and never goes back within a series. A
 * row is born by `accept` (or the previous layout's import) and leaves only with its retention.
 *
 * `move` runs one UPDATE whose WHERE clause admits only the rows in one of the move's `from`
 * places: a move the table does not allow changes nothing, and a caller that expected it to
 * (`moveOne`) is told so. The statements that change other columns of a delivery (its wake time,
 * its recovery mark) leave its place alone and do not come here.
 */
import { isoTime } from "../../lib/time";
import type { Db } from "../db";

export type Status = "pending" | "retrying" | "delivered" | "failed";
export type State = "waiting" | "queued" | "running";
export type Place =
  | "pending/waiting"
  | "pending/queued"
  | "pending/running"
  | "retrying/waiting"
  | "retrying/queued"
  | "retrying/running"
  | "pending/kept"
  | "delivered"
  | "failed";

export const PLACES: readonly Place[] = [
  "pending/waiting",
  "pending/queued",
  "pending/running",
  "retrying/waiting",
  "retrying/queued",
  "retrying/running",
  "pending/kept",
  "delivered",
  "failed",
];

/** Where a move takes a row: its new state, and its new status (absent: the status stays). */
interface To {
  status?: Status;
  state: State | null;
}

interface MoveRule {
  from: readonly Place[];
  to: To;
  /** Why the move exists (docs/webhooks.md shows this table). */
  why: string;
}

const OPEN_WAITING: readonly Place[] = ["pending/waiting", "retrying/waiting"];
const OPEN_QUEUED: readonly Place[] = ["pending/queued", "retrying/queued"];
const OPEN_RUNNING: readonly Place[] = ["pending/running", "retrying/running"];
/** A presumed outcome (the lease's, a dead letter's) corrected by the real report, before the retry it scheduled ran. */
const PRESUMED: readonly Place[] = ["retrying/waiting", "retrying/queued"];

/** The lifecycle: every move a delivery can make, from where, to where. */
export const MOVES = {
  claim: { from: OPEN_WAITING, to: { state: "queued" }, why: "the outbox sends a ticket for a due delivery (dispatch.ts)" },
  put_back: {
    from: OPEN_QUEUED,
    to: { state: "waiting" },
    why: "a ticket not attempted now (paused, throttled, another lane), not handed to the Queue, or presumed lost",
  },
  start: { from: OPEN_QUEUED, to: { state: "running" }, why: "the current ticket begins its attempt (EndpointObject.begin)" },
  start_unsent: {
    from: [...OPEN_WAITING, ...OPEN_QUEUED],
    to: { state: "running" },
    why: "an attempt recorded without a request: the configuration ended, or the ticket was dead-lettered",
  },
  retry: {
    from: [...OPEN_RUNNING, ...PRESUMED],
    to: { status: "retrying", state: "waiting" },
    why: "an attempt concluded short of the end: due again by the schedule (or at once, if our side failed)",
  },
  deliver: { from: [...OPEN_RUNNING, ...PRESUMED], to: { status: "delivered", state: null }, why: "the receiver answered 2xx" },
  fail: {
    from: [...OPEN_RUNNING, ...PRESUMED],
    to: { status: "failed", state: null },
    why: "retries exhausted, a 410, or the configuration ended",
  },
  due_now: {
    from: [...OPEN_WAITING, ...OPEN_QUEUED],
    to: { state: "waiting" },
    why: "a user's re-send of an open delivery: due at once (its ticket, if any, superseded)",
  },
  resend: {
    from: ["delivered", "failed"],
    to: { status: "pending", state: "waiting" },
    why: "a user's re-send of a finished delivery: a new series",
  },
  read: { from: ["pending/kept"], to: { status: "delivered", state: null }, why: "a polling receiver's cursor moved past it" },
} as const satisfies Record<string, MoveRule>;

export type Move = keyof typeof MOVES;

/** The place a move takes a row in `from` to. */
export function placeAfter(move: Move, from: Place): Place | null {
  const rule: MoveRule = MOVES[move];
  if (!rule.from.includes(from)) return null;
  const status = rule.to.status ?? (from.split("/")[0] as Status);
  if (rule.to.state === null) return status === "pending" ? "pending/kept" : (status as Place);
  return `${status}/${rule.to.state}` as Place;
}

/** Every edge of the lifecycle: (from, move, to). */
export function edges(): { from: Place; move: Move; to: Place }[] {
  const out: { from: Place; move: Move; to: Place }[] = [];
  for (const move of Object.keys(MOVES) as Move[]) {
    for (const from of MOVES[move].from) {
      const to = placeAfter(move, from);
      if (to !== null) out.push({ from, move, to });
    }
  }
  return out;
}

/** A row's place, in SQL (the `status` and `state` columns). */
export const PLACE_SQL = "CASE WHEN status IN ('delivered', 'failed') THEN status ELSE status || '/' || coalesce(state, 'kept') END";

/** A value to set, or an SQL expression over the row's own columns (never input). */
export type Value = SqlStorageValue | { sql: string };

/** Which rows a move is for: one delivery, or a condition (its text from code, its values bound). */
export type Which = { id: string } | { where: string; args: SqlStorageValue[] };

/**
 * Moves the rows `which` names that are in one of the move's `from` places, setting `set` besides;
 * answers the ids moved. Column names and expressions come from this module's callers, never
 * from input; values are bound.
 */
export function move(db: Db, name: Move, which: Which, set: Record<string, Value>, now: number): string[] {
  const rule: MoveRule = MOVES[name];
  const columns: string[] = [];
  const args: SqlStorageValue[] = [];
  const assign = (column: string, value: Value) => {
    if (typeof value === "object" && value !== null && "sql" in value) columns.push(`${column} = ${value.sql}`);
    else {
      columns.push(`${column} = ?`);
      args.push(value);
    }
  };
  if (rule.to.status !== undefined) assign("status", rule.to.status);
  assign("state", rule.to.state);
  for (const [column, value] of Object.entries(set)) assign(column, value);
  assign("updated_at", isoTime(now));
  const where = "id" in which ? "id = ?" : which.where;
  const whereArgs = "id" in which ? [which.id] : which.args;
  const from = rule.from.map(() => "?").join(", ");
  return db
    .all<{ id: string }>(
      `UPDATE deliveries SET ${columns.join(", ")} WHERE (${where}) AND ${PLACE_SQL} IN (${from}) RETURNING id`,
      ...args,
      ...whereArgs,
      ...rule.from,
    )
    .map((r) => r.id);
}

/** A move the lifecycle does not allow from where the row is: a fault of the caller's. */
export class IllegalMove extends Error {
  constructor(
    readonly move: Move,
    readonly id: string,
  ) {
    super(`delivery ${id}: the lifecycle has no ${move} from where it is`);
    this.name = "IllegalMove";
  }
}

/** A move of one delivery that must happen: throws IllegalMove (and its transaction rolls back) when the table refuses it. */
export function moveOne(db: Db, name: Move, id: string, set: Record<string, Value>, now: number): void {
  if (move(db, name, { id }, set, now).length !== 1) throw new IllegalMove(name, id);
}
