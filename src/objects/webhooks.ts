/**
 * WebhookObject: one SQLite-backed Durable Object per organization, the system of record for its
 * webhooks: configurations, events, deliveries and every attempt, plus the outbox that hands
 * attempts to the Queue. Every change is one transaction; nothing about webhooks lives in KV.
 *
 * A delivery's story only moves forward (docs/storage.md, "Deliveries"):
 * - publishing commits the event, its deliveries and their outbox state together, then sends the
 *   Queue messages; whatever was not sent, or was sent and never began (a lost message, a crashed
 *   consumer), is sent again by the alarm once WEBHOOK_REDISPATCH_SECONDS have passed;
 * - a message is a ticket (delivery, series, attempt number). `begin` takes that number, with an
 *   `in_flight` attempt and a lease, only if the delivery is still open in that series and that
 *   number is the next one, so a duplicate or late message is acknowledged without sending;
 * - `finish` concludes the attempt once (a repeated report finds it concluded) and moves the
 *   state: `delivered` and `failed` are final until a user re-sends (a new series; numbers
 *   continue); a retry is scheduled from WEBHOOK_RETRY_SCHEDULE, or the receiver's Retry-After if
 *   longer; an attempt whose lease runs out unreported is concluded as a failed try by the alarm;
 * - a receiver's 410 disables the configuration only if it has not changed since the attempt
 *   began; a configuration whose every attempt failed for WEBHOOK_DISABLE_AFTER_SECONDS is
 *   disabled with the reason recorded.
 * Audit entries are committed with each change and pushed to the OrganizationObject's audit log
 * (retried until they land).
 *
 * Load: the organization's webhook API calls, one call per publish, two per attempt (begin,
 * finish); about 1,000 short calls/s per object, so about 300 attempts/s per organization.
 * Rows: at most MAX_WEBHOOK_CONFIGURATIONS configurations; events, deliveries and attempts for
 * EVENT_RETENTION_DAYS. Sharding beyond that is described in docs/storage.md.
 */
import { DurableObject } from "cloudflare:workers";
import { type Config, loadConfig } from "../config";
import { newDeliveryId } from "../lib/ids";
import { isoTime } from "../lib/time";
import { describeError, log } from "../log";
import type { Actor } from "../schemas/audit";
import type { DeliveryAttempt, DeliveryMessage, DeliveryRecord, PublishedEventView, WebhookConfigurationRecord } from "../schemas/webhooks";
import { fail, invalid, type Migration, migrate, missing, ok, type Page, type PageRequest, pageOf, pageOfTable, type Result } from "./sql";

/** The most webhook configurations an organization may have: one event's fan-out is at most this. */
export const MAX_WEBHOOK_CONFIGURATIONS = 20;
/** Events, their deliveries and attempts are kept this long. */
export const EVENT_RETENTION_DAYS = 30;
/** An Idempotency-Key answers with the original event for this long. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
/** The Queue delays a message by at most 12 hours; later attempts are sent by the alarm. */
const MAX_QUEUE_DELAY_MS = 12 * 3600 * 1000;
/** A message may arrive this much before its attempt is due (clocks differ a little). */
const EARLY_TOLERANCE_MS = 2_000;
/** An attempt's lease outlasts its deadline by this much before the delivery counts as stuck. */
const LEASE_MARGIN_MS = 10_000;
/** The attempts a delivery view shows: the most recent. */
const ATTEMPTS_SHOWN = 50;
const DAY_MS = 86_400_000;
/** Rows sent per sendBatch (the Queue's limit is 100 messages). */
const BATCH = 100;

type Row = Record<string, SqlStorageValue>;
interface ConfigRow extends Row {
  rowid: number;
  id: string;
  url: string;
  events: string | null;
  description: string | null;
  token_url: string;
  client_id: string;
  client_secret: string;
  token_cache: number;
  signing_secrets: string;
  status: "active" | "disabled";
  disabled_reason: string | null;
  failing_since: number | null;
  last_delivered_ms: number | null;
  version: number;
  created_at: string;
  updated_at: string;
}
interface DeliveryRow extends Row {
  rowid: number;
  id: string;
  event_id: string;
  event_type: string;
  configuration_id: string;
  status: DeliveryRecord["status"];
  series: number;
  series_attempts: number;
  attempts: number;
  next_attempt_ms: number | null;
  dispatched_ms: number | null;
  lease_until_ms: number | null;
  created_at: string;
  updated_at: string;
}
interface AttemptRow extends Row {
  number: number;
  series: number;
  at: string;
  step: DeliveryAttempt["step"];
  http_status: number | null;
  latency_ms: number;
  outcome: DeliveryAttempt["outcome"];
  error: string | null;
}

const OPEN = "status IN ('pending', 'retrying')";

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      "CREATE TABLE meta (one INTEGER PRIMARY KEY CHECK (one = 1), organization_id TEXT NOT NULL)",
      `CREATE TABLE configurations (id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT, description TEXT,
        token_url TEXT NOT NULL, client_id TEXT NOT NULL, client_secret TEXT NOT NULL, token_cache INTEGER NOT NULL,
        signing_secrets TEXT NOT NULL, status TEXT NOT NULL, disabled_reason TEXT, failing_since INTEGER,
        last_delivered_ms INTEGER, version INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
      "CREATE TABLE events (id TEXT PRIMARY KEY, type TEXT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL, created_ms INTEGER NOT NULL)",
      "CREATE INDEX events_by_time ON events (created_ms)",
      `CREATE TABLE idempotency_keys (key TEXT PRIMARY KEY, request_hash TEXT NOT NULL, event_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL)`,
      `CREATE TABLE deliveries (id TEXT PRIMARY KEY, event_id TEXT NOT NULL, event_type TEXT NOT NULL,
        configuration_id TEXT NOT NULL, status TEXT NOT NULL, series INTEGER NOT NULL, series_attempts INTEGER NOT NULL,
        attempts INTEGER NOT NULL, next_attempt_ms INTEGER, dispatched_ms INTEGER, lease_until_ms INTEGER,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
      "CREATE INDEX deliveries_by_configuration ON deliveries (configuration_id)",
      "CREATE INDEX deliveries_by_event ON deliveries (event_id)",
      `CREATE INDEX deliveries_open ON deliveries (next_attempt_ms) WHERE ${OPEN}`,
      `CREATE TABLE attempts (delivery_id TEXT NOT NULL, number INTEGER NOT NULL, series INTEGER NOT NULL, at TEXT NOT NULL,
        step TEXT NOT NULL, http_status INTEGER, latency_ms INTEGER NOT NULL, outcome TEXT NOT NULL, error TEXT,
        PRIMARY KEY (delivery_id, number))`,
      "CREATE TABLE audit_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL)",
    ],
  },
];

/** A new configuration, its secrets already sealed by the Worker. */
export interface NewConfiguration {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  oauth: WebhookConfigurationRecord["oauth"];
  token_cache: boolean;
  signing_secret: WebhookConfigurationRecord["signing_secrets"][number];
}

/** A change to a configuration; absent fields are kept. */
export interface ConfigurationPatch {
  url?: string | undefined;
  events?: string[] | null | undefined;
  description?: string | null | undefined;
  oauth?:
    | {
        token_url?: string | undefined;
        client_id?: string | undefined;
        client_secret?: WebhookConfigurationRecord["oauth"]["client_secret"] | undefined;
      }
    | undefined;
  token_cache?: boolean | undefined;
  status?: "active" | "disabled" | undefined;
}

export interface EventToPublish {
  id: string;
  type: string;
  /** The exact JSON sent (and signed) on every attempt. */
  body: string;
  created_at: string;
}

export interface PublishRequest {
  event: EventToPublish;
  /** `webhook.test` to one configuration, whatever its event filter. */
  only?: string | undefined;
  idempotency?: { key: string; hash: string } | undefined;
}

/** What `begin` answers: the attempt to make, or why the message is dropped. */
export type Begun =
  | { go: false; reason: string }
  | {
      go: true;
      attempt: number;
      series: number;
      body: string;
      configuration: WebhookConfigurationRecord;
      /** When the attempt must be over (ms since the epoch). */
      deadline: number;
    };

/** What the consumer reports after an attempt. */
export interface AttemptReport {
  delivery_id: string;
  series: number;
  attempt: number;
  /** When the attempt began (ms since the epoch). */
  started_at: number;
  step: DeliveryAttempt["step"];
  http_status: number | null;
  latency_ms: number;
  outcome: DeliveryAttempt["outcome"];
  error: string | null;
  /** Seconds the receiver asked us to wait (429/503 Retry-After). */
  retry_after_seconds: number | null;
  /** The webhook URL answered 410 Gone. */
  gone: boolean;
  /** The configuration's version the attempt used. */
  configuration_version: number;
}

export class WebhookObject extends DurableObject<Env> {
  private alarmAt: number | null = null;
  private dispatchFailures = 0;
  private auditFailures = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private get config(): Config {
    return loadConfig(this.env);
  }

  /** The organization this object belongs to, recorded by its first change. */
  private bind(org: string): void {
    this.sql.exec("INSERT OR IGNORE INTO meta (one, organization_id) VALUES (1, ?)", org);
  }

  private orgId(): string {
    return this.sql.exec<{ organization_id: string }>("SELECT organization_id FROM meta").toArray()[0]?.organization_id ?? "";
  }

  // -------------------------------------------------------------------------------------------
  // Configurations

  async createConfiguration(org: string, input: NewConfiguration, actor: Actor, now: number): Promise<Result<WebhookConfigurationRecord>> {
    this.bind(org);
    const count = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM configurations").one().n;
    if (count >= MAX_WEBHOOK_CONFIGURATIONS) {
      return fail(
        "conflict",
        `The organization has ${MAX_WEBHOOK_CONFIGURATIONS} webhook configurations, the most it may have; delete one first.`,
      );
    }
    const at = isoTime(now);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO configurations (id, url, events, description, token_url, client_id, client_secret, token_cache,
          signing_secrets, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', 1, ?, ?)`,
        input.id,
        input.url,
        input.events === null ? null : JSON.stringify(input.events),
        input.description,
        input.oauth.token_url,
        input.oauth.client_id,
        JSON.stringify(input.oauth.client_secret),
        input.token_cache ? 1 : 0,
        JSON.stringify([input.signing_secret]),
        at,
        at,
      );
      this.audit(actor, "webhook_configuration.created", "webhook_configuration", input.id, now, {
        url: redactUrl(input.url),
        token_url: redactUrl(input.oauth.token_url),
        events: input.events,
      });
    });
    return this.settled(this.configRecord(this.configRow(input.id) as ConfigRow), now);
  }

  configuration(id: string): Result<WebhookConfigurationRecord> {
    const row = this.configRow(id);
    return row ? ok(this.configRecord(row)) : missing("Webhook configuration");
  }

  listConfigurations(page: PageRequest): Result<Page<WebhookConfigurationRecord>> {
    return pageOfTable(this.sql, "configurations", page, (row: ConfigRow) => this.configRecord(row));
  }

  /**
   * Applies a change in one transaction. Moving `url` or `oauth.token_url` to another origin needs
   * `oauth.client_secret` in the same change (product brief): no stored secret, and no token the
   * receiver's server minted, is sent to an origin the caller did not vouch for with it.
   */
  async updateConfiguration(id: string, patch: ConfigurationPatch, actor: Actor, now: number): Promise<Result<WebhookConfigurationRecord>> {
    const current = this.configRow(id);
    if (current === undefined) return missing("Webhook configuration");
    const newSecret = patch.oauth?.client_secret !== undefined;
    if (!newSecret) {
      if (patch.oauth?.token_url !== undefined && originOf(patch.oauth.token_url) !== originOf(current.token_url)) {
        return invalid(["oauth", "client_secret"], " is required when oauth.token_url moves to another origin");
      }
      if (patch.url !== undefined && originOf(patch.url) !== originOf(current.url)) {
        return invalid(["oauth", "client_secret"], " is required when url moves to another origin");
      }
    }
    const status = patch.status ?? current.status;
    const reenabled = status === "active" && current.status !== "active";
    const at = isoTime(now);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `UPDATE configurations SET url = ?, events = ?, description = ?, token_url = ?, client_id = ?, client_secret = ?,
          token_cache = ?, status = ?, disabled_reason = ?, failing_since = ?, version = version + 1, updated_at = ? WHERE id = ?`,
        patch.url ?? current.url,
        patch.events === undefined ? current.events : patch.events === null ? null : JSON.stringify(patch.events),
        patch.description === undefined ? current.description : patch.description,
        patch.oauth?.token_url ?? current.token_url,
        patch.oauth?.client_id ?? current.client_id,
        newSecret ? JSON.stringify(patch.oauth?.client_secret) : current.client_secret,
        patch.token_cache === undefined ? current.token_cache : patch.token_cache ? 1 : 0,
        status,
        status === "active" ? null : patch.status === "disabled" ? "disabled through the API" : current.disabled_reason,
        // Re-enabling starts the health count afresh.
        reenabled ? null : current.failing_since,
        at,
        id,
      );
      this.audit(actor, "webhook_configuration.updated", "webhook_configuration", id, now, {
        fields: Object.keys(patch),
        ...(patch.url !== undefined ? { url: redactUrl(patch.url) } : {}),
        ...(patch.oauth?.token_url !== undefined ? { token_url: redactUrl(patch.oauth.token_url) } : {}),
        status,
      });
    });
    return this.settled(this.configRecord(this.configRow(id) as ConfigRow), now);
  }

  /** Deletes the configuration; its open deliveries end `failed` at their next attempt. */
  async deleteConfiguration(id: string, actor: Actor, now: number): Promise<Result<WebhookConfigurationRecord>> {
    const current = this.configRow(id);
    if (current === undefined) return missing("Webhook configuration");
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM configurations WHERE id = ?", id);
      this.audit(actor, "webhook_configuration.deleted", "webhook_configuration", id, now, null);
    });
    return this.settled(this.configRecord(current), now);
  }

  /** Puts a new signing secret first; the previous one signs too until `previousExpiresAt`. */
  async rotateSigningSecret(
    id: string,
    secret: WebhookConfigurationRecord["signing_secrets"][number],
    previousExpiresAt: string,
    actor: Actor,
    now: number,
  ): Promise<Result<WebhookConfigurationRecord>> {
    const current = this.configRow(id);
    if (current === undefined) return missing("Webhook configuration");
    const previous = (JSON.parse(current.signing_secrets) as WebhookConfigurationRecord["signing_secrets"])[0];
    const secrets = previous === undefined ? [secret] : [secret, { ...previous, expires_at: previousExpiresAt }];
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "UPDATE configurations SET signing_secrets = ?, version = version + 1, updated_at = ? WHERE id = ?",
        JSON.stringify(secrets),
        isoTime(now),
        id,
      );
      this.audit(actor, "webhook_configuration.signing_secret_rotated", "webhook_configuration", id, now, {
        previous_secret_expires_at: previousExpiresAt,
      });
    });
    return this.settled(this.configRecord(this.configRow(id) as ConfigRow), now);
  }

  // -------------------------------------------------------------------------------------------
  // Publishing

  /**
   * Records the event and one delivery per matching active configuration, with their outbox
   * state, in one transaction; then sends the Queue messages. With an Idempotency-Key seen in the
   * last 24 hours it answers the original event instead (and refuses a different request).
   */
  async publish(org: string, request: PublishRequest, actor: Actor, now: number): Promise<Result<PublishedEventView>> {
    this.bind(org);
    const { event, idempotency } = request;
    if (idempotency !== undefined) {
      const seen = this.sql
        .exec<{ request_hash: string; event_id: string }>(
          "SELECT request_hash, event_id FROM idempotency_keys WHERE key = ? AND created_ms > ?",
          idempotency.key,
          now - IDEMPOTENCY_WINDOW_MS,
        )
        .toArray()[0];
      if (seen !== undefined) {
        if (seen.request_hash !== idempotency.hash) {
          return fail(
            "idempotency_key_reused",
            "This Idempotency-Key was used in the last 24 hours for a different request; use a new key for a new event.",
          );
        }
        const original = this.publishedView(seen.event_id);
        if (original !== null) return ok({ ...original, replayed: true });
      }
    }
    let targets: ConfigRow[];
    if (request.only !== undefined) {
      const only = this.configRow(request.only);
      if (only === undefined) return missing("Webhook configuration");
      if (only.status !== "active") {
        return fail("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
      }
      targets = [only];
    } else {
      targets = this.sql
        .exec<ConfigRow>("SELECT rowid, * FROM configurations WHERE status = 'active' ORDER BY rowid")
        .toArray()
        .filter((c) => c.events === null || (JSON.parse(c.events) as string[]).includes(event.type));
    }
    const at = isoTime(now);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO events (id, type, body, created_at, created_ms) VALUES (?, ?, ?, ?, ?)",
        event.id,
        event.type,
        event.body,
        event.created_at,
        now,
      );
      for (const config of targets) {
        this.sql.exec(
          `INSERT INTO deliveries (id, event_id, event_type, configuration_id, status, series, series_attempts, attempts,
            next_attempt_ms, created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', 1, 0, 0, ?, ?, ?)`,
          newDeliveryId(),
          event.id,
          event.type,
          config.id,
          now,
          at,
          at,
        );
      }
      if (idempotency !== undefined) {
        this.sql.exec(
          "INSERT OR REPLACE INTO idempotency_keys (key, request_hash, event_id, created_ms) VALUES (?, ?, ?, ?)",
          idempotency.key,
          idempotency.hash,
          event.id,
          now,
        );
      }
      this.audit(actor, request.only ? "webhook_configuration.tested" : "event.published", "event", event.id, now, {
        type: event.type,
        deliveries: targets.length,
      });
    });
    // In the same write batch as the rows (no await between): if this invocation dies before the
    // messages are sent, the alarm sends them.
    return this.settled(this.publishedView(event.id) as PublishedEventView, now);
  }

  // -------------------------------------------------------------------------------------------
  // Deliveries

  delivery(id: string): Result<DeliveryRecord> {
    const row = this.deliveryRow(id);
    return row ? ok(this.deliveryRecord(row)) : missing("Delivery");
  }

  listDeliveries(configurationId: string, page: PageRequest): Result<Page<DeliveryRecord>> {
    if (this.configRow(configurationId) === undefined) return missing("Webhook configuration");
    return pageOf(
      (before, limit) =>
        this.sql
          .exec<DeliveryRow>(
            "SELECT rowid, * FROM deliveries WHERE configuration_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?",
            configurationId,
            before,
            limit,
          )
          .toArray(),
      page,
      (row) => this.deliveryRecord(row),
      true,
    );
  }

  /**
   * A user's re-send. A finished delivery (`delivered` or `failed`) starts a new series of
   * attempts with the same webhook-id; an open one is attempted now (a stuck one included).
   * Refused while an attempt is in flight, or when the configuration is gone or disabled.
   */
  async resend(id: string, actor: Actor, now: number): Promise<Result<DeliveryRecord>> {
    let row = this.deliveryRow(id);
    if (row === undefined) return missing("Delivery");
    if (row.lease_until_ms !== null && row.lease_until_ms <= now) {
      // An attempt whose consumer stopped: concluded first, as the alarm would, so it never lingers.
      this.abandon(row, now);
      row = this.deliveryRow(id) as DeliveryRow;
    }
    const config = this.configRow(row.configuration_id);
    if (config === undefined) return fail("conflict", "The delivery's webhook configuration has been deleted.");
    if (config.status !== "active") {
      return fail("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
    }
    if (row.lease_until_ms !== null && row.lease_until_ms > now) {
      return fail("conflict", "An attempt of this delivery is in flight; wait for its outcome.");
    }
    const open = row.status === "pending" || row.status === "retrying";
    this.ctx.storage.transactionSync(() => {
      if (open) {
        this.sql.exec(
          "UPDATE deliveries SET next_attempt_ms = ?, dispatched_ms = NULL, lease_until_ms = NULL, updated_at = ? WHERE id = ?",
          now,
          isoTime(now),
          id,
        );
      } else {
        this.sql.exec(
          `UPDATE deliveries SET status = 'pending', series = series + 1, series_attempts = 0, next_attempt_ms = ?,
            dispatched_ms = NULL, lease_until_ms = NULL, updated_at = ? WHERE id = ?`,
          now,
          isoTime(now),
          id,
        );
      }
      this.audit(actor, "delivery.resent", "delivery", id, now, { was: row.status });
    });
    this.plan(now);
    return this.settled(this.deliveryRecord(this.deliveryRow(id) as DeliveryRow), now);
  }

  /**
   * A Queue message wants to make an attempt. It gets a lease (and everything the attempt needs)
   * only if the delivery is open in the message's series, this attempt is the next one and no
   * other is in flight; anything else is a duplicate or late message, dropped.
   */
  begin(ticket: DeliveryMessage, now: number): Begun {
    const row = this.deliveryRow(ticket.delivery_id);
    if (row === undefined) return { go: false, reason: "unknown delivery" };
    if (row.series !== ticket.series) return { go: false, reason: "superseded by a re-send" };
    if (row.status === "delivered" || row.status === "failed") return { go: false, reason: `already ${row.status}` };
    if (ticket.attempt !== row.attempts + 1) return { go: false, reason: "attempt already made" };
    if (row.lease_until_ms !== null) return { go: false, reason: "attempt in flight" };
    if (row.next_attempt_ms !== null && row.next_attempt_ms > now + EARLY_TOLERANCE_MS) {
      // Early (a clock far off): send it again when it is due.
      this.sql.exec("UPDATE deliveries SET dispatched_ms = NULL WHERE id = ?", row.id);
      this.plan(now);
      return { go: false, reason: "not due yet" };
    }
    const config = this.configRow(row.configuration_id);
    const event = this.sql.exec<{ body: string }>("SELECT body FROM events WHERE id = ?", row.event_id).toArray()[0];
    // The attempt's number is taken now, with an `in_flight` record: it is reported exactly once,
    // by `finish` or, if that never comes, by the alarm once the lease has run out.
    const deadline = now + this.config.webhookTimeoutMs;
    this.ctx.storage.transactionSync(() => {
      // Its ticket has arrived, whatever the sender managed to mark: never owed again.
      this.sql.exec(
        "UPDATE deliveries SET attempts = ?, lease_until_ms = ?, dispatched_ms = coalesce(dispatched_ms, ?), updated_at = ? WHERE id = ?",
        ticket.attempt,
        deadline + LEASE_MARGIN_MS,
        now,
        isoTime(now),
        row.id,
      );
      this.sql.exec(
        `INSERT INTO attempts (delivery_id, number, series, at, step, latency_ms, outcome) VALUES (?, ?, ?, ?, 'token', 0, 'in_flight')`,
        row.id,
        ticket.attempt,
        row.series,
        isoTime(now),
      );
    });
    if (config === undefined || config.status !== "active" || event === undefined) {
      const error =
        config === undefined
          ? "webhook configuration was deleted"
          : config.status !== "active"
            ? "webhook configuration is disabled"
            : "the event has expired";
      this.conclude(ticket, { step: "configuration", http_status: null, latency_ms: 0, outcome: "failed", error }, now);
      return { go: false, reason: error };
    }
    this.plan(now);
    return {
      go: true,
      attempt: ticket.attempt,
      series: row.series,
      body: event.body,
      configuration: this.configRecord(config),
      deadline,
    };
  }

  /** The consumer's report of an attempt `begin` started; a repeated or late report changes nothing. */
  async finish(report: AttemptReport, now: number): Promise<void> {
    const concluded = this.conclude(
      { delivery_id: report.delivery_id, series: report.series, attempt: report.attempt },
      report,
      now,
      report,
    );
    if (concluded) await this.settle(now);
  }

  /**
   * A message the consumer could not process after all its Queue retries. If its attempt never
   * began, that is recorded as a failed attempt (and the delivery goes on by its schedule); if it
   * began, the lease decides. The dead-letter path never overwrites a newer outcome.
   */
  async deadLettered(ticket: DeliveryMessage, now: number): Promise<void> {
    const row = this.deliveryRow(ticket.delivery_id);
    if (row === undefined || row.series !== ticket.series || ticket.attempt !== row.attempts + 1) return;
    if ((row.status !== "pending" && row.status !== "retrying") || (row.lease_until_ms !== null && row.lease_until_ms > now)) return;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE deliveries SET attempts = ? WHERE id = ?", ticket.attempt, row.id);
      this.sql.exec(
        `INSERT INTO attempts (delivery_id, number, series, at, step, latency_ms, outcome) VALUES (?, ?, ?, ?, 'configuration', 0, 'in_flight')`,
        row.id,
        ticket.attempt,
        row.series,
        isoTime(now),
      );
    });
    const error = "the Queue message could not be processed (dead-lettered after repeated consumer failures)";
    if (this.conclude(ticket, { step: "configuration", http_status: null, latency_ms: 0, outcome: "retry", error }, now)) {
      await this.settle(now);
    }
  }

  /** Concludes an attempt whose lease ran out with no report: a failed try on our side, retried by the schedule. */
  private abandon(d: { id: string; series: number; attempts: number }, now: number): void {
    const error = "no outcome was reported before the attempt's deadline (the consumer stopped)";
    this.conclude(
      { delivery_id: d.id, series: d.series, attempt: d.attempts },
      { step: "configuration", http_status: null, latency_ms: 0, outcome: "retry", error },
      now,
    );
  }

  /**
   * Records the outcome of an `in_flight` attempt and moves its delivery forward: the one state
   * machine behind `finish`, the dead-letter path and abandoned attempts. False when the attempt
   * was already concluded (nothing changes).
   */
  private conclude(
    ticket: Pick<DeliveryMessage, "delivery_id" | "series" | "attempt">,
    outcome: Pick<AttemptReport, "step" | "http_status" | "latency_ms" | "outcome" | "error">,
    now: number,
    extra: Partial<Pick<AttemptReport, "retry_after_seconds" | "gone" | "configuration_version" | "started_at">> = {},
  ): boolean {
    const row = this.deliveryRow(ticket.delivery_id);
    if (row === undefined) return false;
    let concluded = false;
    this.ctx.storage.transactionSync(() => {
      const inFlight = this.sql
        .exec("SELECT 1 FROM attempts WHERE delivery_id = ? AND number = ? AND outcome = 'in_flight'", row.id, ticket.attempt)
        .toArray();
      if (inFlight.length === 0) return; // already concluded: a repeated or late report
      concluded = true;
      // Only the delivery's latest attempt moves it; an older one is recorded and that is all.
      const open =
        (row.status === "pending" || row.status === "retrying") && row.series === ticket.series && row.attempts === ticket.attempt;
      const config = this.configRow(row.configuration_id);
      let result = outcome.outcome;
      let error = outcome.error;
      if (open && extra.gone && config !== undefined) {
        // Only the configuration the 410 was answered for: an edit since then wins.
        if (config.version === extra.configuration_version) {
          this.disable(config.id, "the webhook URL answered 410 Gone", now);
          result = "failed";
        } else {
          result = "retry";
          error = "webhook URL answered 410 Gone, but the configuration has changed since; retrying";
        }
      }
      // A failure on our side (step "configuration": the configuration, the consumer) is not the receiver's.
      if (open && config !== undefined && outcome.step !== "configuration") {
        this.noteHealth(config, result === "delivered", extra.started_at ?? now, now);
      }
      const seriesAttempts = row.series_attempts + 1;
      if (open && result === "retry" && seriesAttempts > this.config.webhookRetryScheduleMs.length) {
        result = "failed";
        error = `${error ?? "failed"}; retries exhausted`;
      }
      this.sql.exec(
        "UPDATE attempts SET step = ?, http_status = ?, latency_ms = ?, outcome = ?, error = ? WHERE delivery_id = ? AND number = ?",
        outcome.step,
        outcome.http_status,
        outcome.latency_ms,
        result,
        error,
        row.id,
        ticket.attempt,
      );
      if (!open) return; // the attempt happened and is recorded; the delivery has moved on
      if (result === "retry") {
        const asked = Math.min(DAY_MS, (extra.retry_after_seconds ?? 0) * 1000);
        this.sql.exec(
          `UPDATE deliveries SET status = 'retrying', series_attempts = ?, next_attempt_ms = ?, dispatched_ms = NULL,
            lease_until_ms = NULL, updated_at = ? WHERE id = ?`,
          seriesAttempts,
          now + Math.max(this.retryDelay(seriesAttempts), asked),
          isoTime(now),
          row.id,
        );
      } else {
        this.sql.exec(
          `UPDATE deliveries SET status = ?, series_attempts = ?, next_attempt_ms = NULL, dispatched_ms = NULL,
            lease_until_ms = NULL, updated_at = ? WHERE id = ?`,
          result === "delivered" ? "delivered" : "failed",
          seriesAttempts,
          isoTime(now),
          row.id,
        );
      }
    });
    if (concluded) this.plan(now);
    return concluded;
  }

  // -------------------------------------------------------------------------------------------
  // The outbox, recovery and housekeeping

  /**
   * Sends what is owed, re-sends what was lost, pushes audit entries, prunes old rows, and sets
   * the next alarm: the durable half of every promise above.
   */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = Date.now();
    const bound = this.config.webhookRedispatchMs;
    // Attempts whose lease ran out with no report (a consumer that stopped): concluded as failed
    // tries, so the delivery goes on by its schedule.
    const abandoned = this.sql
      .exec<{ id: string; series: number; attempts: number }>(
        `SELECT id, series, attempts FROM deliveries WHERE ${OPEN} AND lease_until_ms IS NOT NULL AND lease_until_ms <= ?`,
        now,
      )
      .toArray();
    for (const d of abandoned) this.abandon(d, now);
    // Sent, yet not begun well after it was due: the message is presumed lost and sent again.
    const lost = this.sql.exec(
      `UPDATE deliveries SET dispatched_ms = NULL WHERE ${OPEN} AND dispatched_ms IS NOT NULL AND lease_until_ms IS NULL
        AND max(next_attempt_ms, dispatched_ms) + ? <= ?`,
      bound,
      now,
    ).rowsWritten;
    if (lost + abandoned.length > 0) {
      log.warn("webhook deliveries recovered", { lost_messages: lost, abandoned_attempts: abandoned.length });
    }
    this.housekeep(now);
    this.plan(now);
    await this.settle(now);
  }

  /**
   * The end of every change: the record it answers with, taken before anything is awaited (a
   * concurrent change cannot swap it), the alarm set in the same write batch as the change (so a
   * crash before the sends below leaves them to the alarm), then the sends.
   */
  private async settled<T>(answer: T, now: number): Promise<Result<T>> {
    this.plan(now);
    await this.settle(now);
    return ok(answer);
  }

  /** Sends the owed messages and the audit entries, then plans the next alarm. */
  private async settle(now: number): Promise<void> {
    await Promise.all([this.dispatch(now), this.pushAudit()]);
    this.plan(Date.now());
  }

  /** Hands every owed attempt due within the Queue's delay limit to the Queue. */
  private async dispatch(now: number): Promise<void> {
    const org = this.orgId();
    const due = this.sql
      .exec<{ id: string; series: number; attempts: number; next_attempt_ms: number }>(
        `SELECT id, series, attempts, next_attempt_ms FROM deliveries WHERE ${OPEN} AND dispatched_ms IS NULL
          AND lease_until_ms IS NULL AND next_attempt_ms <= ? ORDER BY next_attempt_ms LIMIT 1000`,
        now + MAX_QUEUE_DELAY_MS,
      )
      .toArray();
    for (let i = 0; i < due.length; i += BATCH) {
      const chunk = due.slice(i, i + BATCH);
      try {
        await this.env.WEBHOOK_QUEUE.sendBatch(
          chunk.map((d) => ({
            body: { v: 2, organization_id: org, delivery_id: d.id, series: d.series, attempt: d.attempts + 1 } satisfies DeliveryMessage,
            delaySeconds: Math.max(0, Math.ceil((d.next_attempt_ms - now) / 1000)),
          })),
        );
      } catch (err) {
        this.dispatchFailures++;
        log.error("webhook messages not sent; the alarm retries", { count: chunk.length, detail: describeError(err) });
        return;
      }
      this.dispatchFailures = 0;
      const sentAt = Date.now();
      for (const d of chunk) {
        // Only if nothing moved meanwhile (a re-send, an attempt): else the newer state stands.
        this.sql.exec(
          `UPDATE deliveries SET dispatched_ms = ? WHERE id = ? AND series = ? AND attempts = ? AND dispatched_ms IS NULL AND ${OPEN}`,
          sentAt,
          d.id,
          d.series,
          d.attempts,
        );
      }
    }
  }

  /** Audit entries go to the organization's log, keyed so a repeated push adds nothing. */
  private async pushAudit(): Promise<void> {
    const entries = this.sql.exec<{ seq: number; entry: string }>("SELECT seq, entry FROM audit_outbox ORDER BY seq LIMIT 100").toArray();
    if (entries.length === 0) return;
    const org = this.orgId();
    try {
      const stub = this.env.ORGS.get(this.env.ORGS.idFromName(org));
      await stub.appendAudit(entries.map((e) => ({ ...(JSON.parse(e.entry) as AuditOutboxEntry), key: `webhooks:${e.seq}` })));
      this.sql.exec("DELETE FROM audit_outbox WHERE seq <= ?", entries.at(-1)?.seq ?? 0);
      this.auditFailures = 0;
    } catch (err) {
      this.auditFailures++;
      log.warn("audit entries not pushed; the alarm retries", { count: entries.length, detail: describeError(err) });
    }
  }

  /**
   * Sets the alarm for the earliest thing owed: a send, the end of a lease, a recovery check, an
   * audit push, or the moment the oldest event or Idempotency-Key expires. An object with none of
   * these sets no alarm (it does not wake for nothing).
   */
  private plan(now: number): void {
    const bound = this.config.webhookRedispatchMs;
    const times: number[] = [];
    const expiring = this.sql
      .exec<{ e: number | null; k: number | null }>(
        "SELECT (SELECT min(created_ms) FROM events) AS e, (SELECT min(created_ms) FROM idempotency_keys) AS k",
      )
      .one();
    if (expiring.e !== null) times.push(expiring.e + EVENT_RETENTION_DAYS * DAY_MS);
    if (expiring.k !== null) times.push(expiring.k + IDEMPOTENCY_WINDOW_MS);
    const owed = this.sql
      .exec<{ t: number | null }>(
        `SELECT min(next_attempt_ms) AS t FROM deliveries WHERE ${OPEN} AND dispatched_ms IS NULL AND lease_until_ms IS NULL`,
      )
      .one().t;
    if (owed !== null) times.push(Math.max(owed - MAX_QUEUE_DELAY_MS, now + backoff(this.dispatchFailures)));
    const sent = this.sql
      .exec<{ t: number | null }>(
        `SELECT min(max(next_attempt_ms, dispatched_ms)) AS t FROM deliveries
          WHERE ${OPEN} AND dispatched_ms IS NOT NULL AND lease_until_ms IS NULL`,
      )
      .one().t;
    if (sent !== null) times.push(sent + bound);
    const leased = this.sql
      .exec<{ t: number | null }>(`SELECT min(lease_until_ms) AS t FROM deliveries WHERE ${OPEN} AND lease_until_ms IS NOT NULL`)
      .one().t;
    if (leased !== null) times.push(leased);
    if (this.sql.exec("SELECT 1 FROM audit_outbox LIMIT 1").toArray().length > 0) times.push(now + backoff(this.auditFailures));
    if (times.length === 0) {
      if (this.alarmAt !== null) void this.ctx.storage.deleteAlarm();
      this.alarmAt = null;
      return;
    }
    const at = Math.min(...times);
    if (this.alarmAt === at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  private housekeep(now: number): void {
    const cutoff = now - EVENT_RETENTION_DAYS * DAY_MS;
    const oldest = this.sql
      .exec<{ e: number | null; k: number | null }>(
        "SELECT (SELECT min(created_ms) FROM events) AS e, (SELECT min(created_ms) FROM idempotency_keys) AS k",
      )
      .one();
    if ((oldest.e ?? now) >= cutoff && (oldest.k ?? now) >= now - IDEMPOTENCY_WINDOW_MS) return;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `DELETE FROM attempts WHERE delivery_id IN (SELECT d.id FROM deliveries d JOIN events e ON e.id = d.event_id
          WHERE e.created_ms < ?)`,
        cutoff,
      );
      this.sql.exec("DELETE FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE created_ms < ?)", cutoff);
      this.sql.exec("DELETE FROM events WHERE created_ms < ?", cutoff);
      this.sql.exec("DELETE FROM idempotency_keys WHERE created_ms < ?", now - IDEMPOTENCY_WINDOW_MS);
    });
  }

  // -------------------------------------------------------------------------------------------
  // Rows and records

  /** Endpoint health (Svix-style): disabled once every attempt has failed for the configured period. */
  private noteHealth(config: ConfigRow, success: boolean, startedAt: number, now: number): void {
    if (success) {
      this.sql.exec("UPDATE configurations SET failing_since = NULL, last_delivered_ms = ? WHERE id = ?", now, config.id);
      return;
    }
    const since = config.failing_since ?? startedAt;
    if (config.failing_since === null) this.sql.exec("UPDATE configurations SET failing_since = ? WHERE id = ?", since, config.id);
    const period = this.config.webhookDisableAfterMs;
    if (config.status === "active" && now - since >= period) {
      this.disable(config.id, `every delivery attempt failed for ${describePeriod(period)} (since ${isoTime(since)})`, now);
    }
  }

  /** Only the status and its reason change: nothing else of the configuration is written. */
  private disable(id: string, reason: string, now: number): void {
    this.sql.exec(
      "UPDATE configurations SET status = 'disabled', disabled_reason = ?, version = version + 1, updated_at = ? WHERE id = ? AND status = 'active'",
      reason,
      isoTime(now),
      id,
    );
  }

  private retryDelay(seriesAttempts: number): number {
    const base = this.config.webhookRetryScheduleMs[seriesAttempts - 1] ?? 0;
    // +-10% jitter, so retries of many deliveries that failed together do not arrive together.
    return Math.round(base * (0.9 + 0.2 * Math.random()));
  }

  private audit(
    actor: Actor,
    action: string,
    resourceType: string,
    resourceId: string,
    now: number,
    detail: Record<string, unknown> | null,
  ): void {
    const entry: AuditOutboxEntry = { at: isoTime(now), actor, action, resource_type: resourceType, resource_id: resourceId, detail };
    this.sql.exec("INSERT INTO audit_outbox (entry) VALUES (?)", JSON.stringify(entry));
  }

  private configRow(id: string): ConfigRow | undefined {
    return this.sql.exec<ConfigRow>("SELECT rowid, * FROM configurations WHERE id = ?", id).toArray()[0];
  }

  private deliveryRow(id: string): DeliveryRow | undefined {
    return this.sql.exec<DeliveryRow>("SELECT rowid, * FROM deliveries WHERE id = ?", id).toArray()[0];
  }

  private configRecord(row: ConfigRow): WebhookConfigurationRecord {
    return {
      id: row.id,
      organization_id: this.orgId(),
      url: row.url,
      events: row.events === null ? null : (JSON.parse(row.events) as string[]),
      description: row.description,
      oauth: {
        token_url: row.token_url,
        client_id: row.client_id,
        client_secret: JSON.parse(row.client_secret) as WebhookConfigurationRecord["oauth"]["client_secret"],
      },
      token_cache: row.token_cache === 1,
      signing_secrets: JSON.parse(row.signing_secrets) as WebhookConfigurationRecord["signing_secrets"],
      status: row.status,
      disabled_reason: row.disabled_reason,
      failing_since: row.failing_since === null ? null : isoTime(row.failing_since),
      last_delivered_at: row.last_delivered_ms === null ? null : isoTime(row.last_delivered_ms),
      version: row.version,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private deliveryRecord(row: DeliveryRow): DeliveryRecord {
    const attempts = this.sql
      .exec<AttemptRow>("SELECT * FROM attempts WHERE delivery_id = ? ORDER BY number DESC LIMIT ?", row.id, ATTEMPTS_SHOWN)
      .toArray()
      .reverse();
    return {
      id: row.id,
      organization_id: this.orgId(),
      webhook_configuration_id: row.configuration_id,
      event_id: row.event_id,
      event_type: row.event_type,
      status: row.status,
      attempts: attempts.map((a) => ({
        number: a.number,
        series: a.series,
        at: a.at,
        step: a.step,
        http_status: a.http_status,
        latency_ms: a.latency_ms,
        outcome: a.outcome,
        error: a.error,
      })),
      next_attempt_at: row.next_attempt_ms === null ? null : isoTime(row.next_attempt_ms),
      in_flight_until: row.lease_until_ms === null ? null : isoTime(row.lease_until_ms),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private publishedView(eventId: string): PublishedEventView | null {
    const event = this.sql
      .exec<{ id: string; type: string; created_at: string }>("SELECT id, type, created_at FROM events WHERE id = ?", eventId)
      .toArray()[0];
    if (event === undefined) return null;
    const deliveries = this.sql
      .exec<{ id: string; configuration_id: string; status: DeliveryRecord["status"] }>(
        "SELECT id, configuration_id, status FROM deliveries WHERE event_id = ? ORDER BY rowid",
        eventId,
      )
      .toArray();
    return {
      id: event.id,
      type: event.type,
      created_at: event.created_at,
      deliveries: deliveries.map((d) => ({ id: d.id, webhook_configuration_id: d.configuration_id, status: d.status })),
      replayed: false,
    };
  }
}

/** An audit entry waiting to reach the organization's log. */
export interface AuditOutboxEntry {
  at: string;
  actor: Actor;
  action: string;
  resource_type: string;
  resource_id: string;
  detail: Record<string, unknown> | null;
}

/** 1 s, 2 s, 4 s ... at most 60 s. */
const backoff = (failures: number) => Math.min(60_000, 1000 * 2 ** Math.min(failures, 6));

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** A URL without its query and fragment, which may carry a receiver's token. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? "?..." : ""}`;
  } catch {
    return "(unparseable URL)";
  }
}

function describePeriod(ms: number): string {
  if (ms % DAY_MS === 0) return `${ms / DAY_MS} day${ms === DAY_MS ? "" : "s"}`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Math.round(ms / 1000)} s`;
}
