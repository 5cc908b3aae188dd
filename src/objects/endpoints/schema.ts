/**
 * The EndpointObject's tables (one object per webhook configuration, objects/endpoints/object.ts)
 * and their rows. `endpoint` is the one row of what is per endpoint: the configuration's copy the
 * organization pushed, the lane, the in-flight window, the pause and the circuit, health, and the
 * shared receiver token. `deliveries` are its deliveries with their place in the pipeline: every
 * query the hot paths run has an index that matches it (docs/storage.md, "EndpointObject"), so a
 * call reads rows in proportion to what is due, never to the backlog.
 */
import type { Db } from "../db";
import type { Migration } from "../sql";

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE endpoint (one INTEGER PRIMARY KEY CHECK (one = 1), organization_id TEXT NOT NULL, configuration_id TEXT NOT NULL,
        config TEXT, version INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0,
        lane TEXT NOT NULL DEFAULT 'new', quick_streak INTEGER NOT NULL DEFAULT 0, in_flight_limit INTEGER NOT NULL DEFAULT 1,
        failures INTEGER NOT NULL DEFAULT 0, pause_kind TEXT, paused_until_ms INTEGER, pause_reason TEXT, probes INTEGER NOT NULL DEFAULT 0,
        failing_since_ms INTEGER, last_delivered_ms INTEGER,
        token TEXT, token_key TEXT, token_expires_ms INTEGER, token_generation INTEGER NOT NULL DEFAULT 0,
        token_lease TEXT, token_lease_until_ms INTEGER, token_ms INTEGER, token_short_key TEXT,
        owed_disable TEXT, dispatch_failures INTEGER NOT NULL DEFAULT 0, stored_bytes INTEGER NOT NULL DEFAULT 0)`,
      `CREATE TABLE deliveries (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL,
        body TEXT NOT NULL, status TEXT NOT NULL, series INTEGER NOT NULL, series_attempts INTEGER NOT NULL, attempts INTEGER NOT NULL,
        due_ms INTEGER, state TEXT, ticket INTEGER NOT NULL DEFAULT 0, lane TEXT, queued_ms INTEGER,
        redispatches INTEGER NOT NULL DEFAULT 0, lease_until_ms INTEGER, wake_ms INTEGER,
        created_ms INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
      // Waiting deliveries by due time (the dispatch of an unordered endpoint).
      "CREATE INDEX deliveries_waiting ON deliveries (due_ms, seq) WHERE state = 'waiting'",
      // Open deliveries in publish order (the head of an ordered endpoint's line).
      "CREATE INDEX deliveries_line ON deliveries (seq) WHERE state IS NOT NULL",
      // Tickets in the Queue and attempts in flight (the window).
      "CREATE INDEX deliveries_in_flight ON deliveries (state) WHERE state IN ('queued', 'running')",
      // When the alarm must look at a delivery: a ticket presumed lost, a lease run out.
      "CREATE INDEX deliveries_wake ON deliveries (wake_ms) WHERE wake_ms IS NOT NULL",
      // Retention.
      "CREATE INDEX deliveries_created ON deliveries (created_ms)",
      `CREATE TABLE attempts (delivery_id TEXT NOT NULL, number INTEGER NOT NULL, series INTEGER NOT NULL, at TEXT NOT NULL,
        step TEXT NOT NULL, http_status INTEGER, latency_ms INTEGER NOT NULL, outcome TEXT NOT NULL, error TEXT, note TEXT,
        settled_by TEXT, PRIMARY KEY (delivery_id, number))`,
      // Rate-limit slots granted (rate_limit): the window's arithmetic needs only the last `rate_limit` of them.
      "CREATE TABLE slots (start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL)",
      "CREATE INDEX slots_by_end ON slots (end_ms)",
      "CREATE TABLE audit_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL)",
    ],
  },
  {
    // Issue 22: what the webhook URL answered to a failed attempt (AttemptResponse JSON).
    version: 2,
    statements: ["ALTER TABLE attempts ADD COLUMN response TEXT"],
  },
  {
    // Issue 23: the manager's and the API's delivery filters and search, and the endpoint's
    // hourly counts (health and charts). One row per hour, kept as long as the deliveries.
    version: 3,
    statements: [
      "CREATE INDEX deliveries_by_status ON deliveries (status)",
      "CREATE INDEX deliveries_by_type ON deliveries (event_type)",
      "CREATE INDEX deliveries_by_event ON deliveries (event_id)",
      `CREATE TABLE hourly (hour_ms INTEGER PRIMARY KEY, succeeded INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
        latency_ms_sum INTEGER NOT NULL DEFAULT 0)`,
    ],
  },
  {
    // Issue 30. Recoveries: a window of failed deliveries re-sent as a background job of this
    // object (recovery.ts), each delivery once: `recovered_series` is the series a recovery
    // started, which no later recovery re-sends. Operational events (notices.ts): what this
    // endpoint has announced (`announced`: paused or disabled, until a delivery succeeds) and the
    // outbox of events owed to the organization's WebhookObject, written with the change they
    // announce.
    version: 4,
    statements: [
      `CREATE TABLE recoveries (id TEXT PRIMARY KEY, since_ms INTEGER NOT NULL, until_ms INTEGER NOT NULL, status TEXT NOT NULL,
        found INTEGER NOT NULL, resent INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0, cursor_seq INTEGER NOT NULL,
        created_ms INTEGER NOT NULL, finished_ms INTEGER, actor TEXT NOT NULL)`,
      "CREATE INDEX recoveries_running ON recoveries (created_ms) WHERE status = 'running'",
      "CREATE INDEX recoveries_by_created ON recoveries (created_ms)",
      "ALTER TABLE deliveries ADD COLUMN recovered_series INTEGER",
      "CREATE INDEX deliveries_failed ON deliveries (seq) WHERE status = 'failed'",
      "ALTER TABLE endpoint ADD COLUMN announced TEXT",
      "CREATE TABLE notices (seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, data TEXT NOT NULL, at_ms INTEGER NOT NULL)",
    ],
  },
  {
    // Issue 41, L3: a recovery's last delivery in publish order, fixed when it starts: what is
    // published after it began is not part of it, whatever its stamp says (NULL: a job of the
    // previous release, unbounded as before).
    version: 5,
    statements: ["ALTER TABLE recoveries ADD COLUMN last_seq INTEGER"],
  },
  {
    // Issue 42: deliveries published while the configuration is `paused` are held here; `held`
    // counts those of the current pause (policy.ts PAUSE_HOLD_MAX_DELIVERIES), 0 when not paused.
    version: 6,
    statements: ["ALTER TABLE endpoint ADD COLUMN held INTEGER NOT NULL DEFAULT 0"],
  },
  {
    // Issue 42 item 3: the portal's limits (meter.ts). One row per (action, scope, window start):
    // the actions admitted in that window for the configuration or one portal session
    // (`session:<id>`), deleted by time once the window has ended (`expires_ms`).
    version: 7,
    statements: [
      `CREATE TABLE portal_meter (action TEXT NOT NULL, scope TEXT NOT NULL, window_start_ms INTEGER NOT NULL,
        count INTEGER NOT NULL, expires_ms INTEGER NOT NULL, PRIMARY KEY (action, scope, window_start_ms))`,
      "CREATE INDEX portal_meter_expiry ON portal_meter (expires_ms)",
    ],
  },
  {
    // Issue 45: a polling configuration's events (polling.ts). `pos`: a delivery's place in what
    // the receiver reads, from the endpoint's own counter `poll_pos` (never reused, so a cursor
    // cannot skip a row); `acked_pos`: the last cursor the receiver presented; `pruned_pos`: the
    // highest position retention deleted (a cursor below it is refused); `last_poll_ms`.
    version: 8,
    statements: [
      "ALTER TABLE deliveries ADD COLUMN pos INTEGER",
      "CREATE INDEX deliveries_by_pos ON deliveries (pos) WHERE pos IS NOT NULL",
      "ALTER TABLE endpoint ADD COLUMN poll_pos INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE endpoint ADD COLUMN acked_pos INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE endpoint ADD COLUMN pruned_pos INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE endpoint ADD COLUMN last_poll_ms INTEGER",
    ],
  },
];

type Row = Record<string, SqlStorageValue>;

export type PauseKind = "retry_after" | "circuit" | "gone";

export interface EndpointRow extends Row {
  organization_id: string;
  configuration_id: string;
  /** The configuration (WebhookConfigurationRecord JSON, secrets sealed) at `version`; null before the first sync. */
  config: string | null;
  version: number;
  deleted: number;
  lane: "fast" | "new" | "slow";
  /** Consecutive attempts in the slow lane that finished within half the fast lane's deadline. */
  quick_streak: number;
  /** Attempts the endpoint may have in the Queue or in flight at once (slow start, AIMD). */
  in_flight_limit: number;
  /** Consecutive retryable failures of the receiver (the circuit opens at CIRCUIT_THRESHOLD). */
  failures: number;
  pause_kind: PauseKind | null;
  /** Nothing is sent before this; null with pause_kind "gone" means until the organization answers. */
  paused_until_ms: number | null;
  pause_reason: string | null;
  /** Failed probes since the circuit opened (the next probe's delay). */
  probes: number;
  failing_since_ms: number | null;
  last_delivered_ms: number | null;
  /** The shared receiver token (token_cache): Sealed JSON, the credentials it is for, when it expires. */
  token: string | null;
  token_key: string | null;
  token_expires_ms: number | null;
  token_generation: number;
  /** Which attempt ("<delivery>:<attempt>") is fetching a token for the endpoint, and until when. */
  token_lease: string | null;
  token_lease_until_ms: number | null;
  /** How long the receiver's token step takes (moving average), for the rate limit's slot. */
  token_ms: number | null;
  /**
   * Set (to the credentials' tokenKey) when the receiver's last token lived no longer than the
   * reuse margin: nothing to share, so each attempt fetches its own, several at once, until a
   * longer-lived token is kept.
   */
  token_short_key: string | null;
  /** A disable the organization has not recorded yet (JSON), retried by the alarm. */
  owed_disable: string | null;
  dispatch_failures: number;
  /** What the deliveries' rows hold, counted as they are written and deleted (STORAGE_BUDGET_BYTES). */
  stored_bytes: number;
  /** The trouble last announced by an operational event (migration 4): a delivery's success announces the recovery. */
  announced: "paused" | "disabled" | null;
  /** Deliveries published during the current pause (status `paused`) and held; migration 6. */
  held: number;
  /** A polling configuration's positions (migration 8, polling.ts): the last given, the last acknowledged, the highest pruned. */
  poll_pos: number;
  acked_pos: number;
  pruned_pos: number;
  last_poll_ms: number | null;
}

export type DeliveryState = "waiting" | "queued" | "running";

export interface DeliveryRow extends Row {
  rowid: number;
  id: string;
  seq: number;
  event_id: string;
  event_type: string;
  status: "pending" | "retrying" | "delivered" | "failed";
  series: number;
  series_attempts: number;
  attempts: number;
  due_ms: number | null;
  /** Open deliveries only: waiting (owed a ticket), queued (a ticket is in the Queue), running (an attempt is in flight). */
  state: DeliveryState | null;
  ticket: number;
  lane: "fast" | "new" | "slow" | null;
  queued_ms: number | null;
  redispatches: number;
  lease_until_ms: number | null;
  wake_ms: number | null;
  created_ms: number;
  created_at: string;
  updated_at: string;
}

export interface AttemptRow extends Row {
  delivery_id: string;
  number: number;
  series: number;
  at: string;
  step: "configuration" | "token" | "webhook";
  http_status: number | null;
  latency_ms: number;
  outcome: "in_flight" | "delivered" | "retry" | "failed";
  error: string | null;
  note: string | null;
  /** What the webhook URL answered to a failed webhook step (AttemptResponse JSON; migration 2). */
  response: string | null;
  /** Who concluded it: the consumer's report, the lease running out, a dead letter, or keyway without a request. */
  settled_by: "report" | "lease" | "dead_letter" | "keyway" | null;
}

/** One hour of an endpoint's concluded attempts (migration 3). */
export interface HourlyRow extends Row {
  hour_ms: number;
  succeeded: number;
  failed: number;
  latency_ms_sum: number;
}

/** Every column of a delivery but the body (lists and state changes never need it). */
export const DELIVERY_COLUMNS =
  "rowid, id, seq, event_id, event_type, status, series, series_attempts, attempts, due_ms, state, ticket, lane, queued_ms, redispatches, lease_until_ms, wake_ms, created_ms, created_at, updated_at";

export const endpointRow = (db: Db): EndpointRow | undefined => db.first<EndpointRow>("SELECT * FROM endpoint");

export const deliveryRow = (db: Db, id: string): DeliveryRow | undefined =>
  db.first<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE id = ?`, id);
