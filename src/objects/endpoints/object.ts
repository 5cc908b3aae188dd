/**
 * EndpointObject: one SQLite-backed Durable Object per webhook configuration (named by its id),
 * the system of record for everything per endpoint (docs/storage.md, "EndpointObject"): its
 * deliveries and their attempts, the outbox of Queue tickets and the alarm, the lane, window,
 * pause and circuit, the rate limit's slots, the line of an ordered endpoint, and the shared
 * receiver token. The organization's WebhookObject holds the configuration itself and pushes a
 * versioned copy here (`sync`), and hands over each published event's delivery (`accept`).
 *
 * This class only forwards: attempts.ts answers each call of a delivery attempt, lifecycle.ts
 * holds every move of a delivery's place, deliveries.ts records attempts, dispatch.ts is the
 * outbox and alarm, flow.ts the pacing, token.ts the token, slots.ts the rate limit.
 *
 * Load: the deliveries of one endpoint: one call per fan-out, two per attempt (begin, finish),
 * one per token fetch with token_cache, the alarm. An object serves about 1,000 short calls/s, so
 * about 400 attempts/s per endpoint; capacity grows with endpoints. Rows: the endpoint's
 * deliveries and attempts for EVENT_RETENTION_DAYS.
 */
import { DurableObject } from "cloudflare:workers";
import { type Config, loadConfig } from "../../config";
import type { SealedValue } from "../../lib/aead";
import { SingleFlight } from "../../lib/flight";
import { isoTime } from "../../lib/time";
import { describeError, log } from "../../log";
import type { Actor } from "../../schemas/audit";
import type { RecoveryView } from "../../schemas/receivers";
import type {
  AttemptReport,
  DeliveryFilter,
  DeliveryRecord,
  DeliveryTicket,
  EndpointState,
  FetchedToken,
  PollingState,
  WebhookConfigurationRecord,
} from "../../schemas/webhooks";
import { Db } from "../db";
import { fail, migrate, missing, ok, type Page, type PageRequest, pageOf, type Result } from "../sql";
import type { AuditOutboxEntry } from "../webhooks/audit";
import { EVENT_RETENTION_DAYS, PREVIEW_SHOWN } from "../webhooks/limits";
import type { TriedEvent } from "../webhooks/routing";
import {
  type AttemptAnswer,
  type AttemptCall,
  Attempts,
  type Begun,
  HELD_REASON,
  liveConfig,
  type Proceed,
  type Rejection,
} from "./attempts";
import {
  accept,
  type ConcludeOptions,
  deliveriesBefore,
  deliveryRecord,
  failWithoutRequest,
  hourlySince,
  type NewDelivery,
  resend,
  type TicketRef,
} from "./deliveries";
import { claim, dueForRecovery, nextAlarm, prune, type Queues, send, unclaim } from "./dispatch";
import { pausedNow } from "./flow";
import { importDeliveries, type LegacyDelivery } from "./legacy";
import {
  decide,
  type MeterCharge,
  type MeterDecision,
  type MeterRequest,
  pruneCounters,
  readCharged,
  readCounters,
  refund,
  writeCounters,
} from "./meter";
import { announceDisabled, pendingNotices } from "./notices";
import { PAUSE_HOLD_MAX_DAYS, PAUSE_HOLD_MAX_DELIVERIES, PAUSE_HOLD_MAX_MS } from "./policy";
import {
  acknowledge,
  decideRead,
  POLL_PAGE_MAX,
  POLL_WAIT_MAX_MS,
  POLL_WAITERS_MAX,
  pollingState,
  type ReadPage,
  type ReadRequest,
  readAfter,
} from "./polling";
import {
  endCircuitWait,
  listRecoveries,
  pruneRecoveries,
  recovering,
  recoveryRow,
  recoveryView,
  startRecovery,
  stepRecovery,
  stopRecoveries,
} from "./recovery";
import { DELIVERY_COLUMNS, type DeliveryRow, deliveryRow, type EndpointRow, endpointRow, type HourlyRow, MIGRATIONS } from "./schema";
import { SlotBook } from "./slots";
import { tokenKey } from "./token";

/** The configuration as the organization's object last committed it; `configuration` null: deleted. */
export interface EndpointSnapshot {
  organization_id: string;
  configuration_id: string;
  version: number;
  configuration: WebhookConfigurationRecord | null;
}

export class EndpointObject extends DurableObject<Env> {
  private readonly db: Db;
  private readonly book: SlotBook;
  /** Each delivery attempt's calls (attempts.ts). */
  private readonly attempts: Attempts;
  private alarmAt: number | null = null;
  private auditFailures = 0;
  private disableFailures = 0;
  private noticeFailures = 0;
  private readonly auditPush = new SingleFlight();
  private readonly noticePush = new SingleFlight();
  /** Whether a recovery is running (null: not read yet); kept so a pump without one reads nothing for it. */
  private recoveryRunning: boolean | null = null;
  /** The last recovery step stopped at its batch: the alarm runs the next at once. */
  private recoveryMore = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS);
    this.db = new Db(ctx.storage);
    this.book = new SlotBook(this.db);
    const object = this;
    this.attempts = new Attempts({
      db: this.db,
      book: this.book,
      get config() {
        return object.config;
      },
      env,
      endpoint: () => this.endpoint(),
      configOf: (ep) => this.configOf(ep),
      concluding: () => this.concluding(),
      updateEndpoint: (change) => this.updateEndpoint(change),
      plan: (now) => this.plan(now),
      pump: (now) => this.pump(now),
    });
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  private get config(): Config {
    return loadConfig(this.env);
  }

  private get queues(): Queues {
    return { fast: this.env.WEBHOOK_QUEUE, new: this.env.WEBHOOK_QUEUE_NEW, slow: this.env.WEBHOOK_QUEUE_SLOW };
  }

  private endpoint(): EndpointRow | undefined {
    return endpointRow(this.db);
  }

  private configOf(ep: EndpointRow | undefined): WebhookConfigurationRecord | null {
    return ep?.config ? (JSON.parse(ep.config) as WebhookConfigurationRecord) : null;
  }

  private concluding(): Omit<ConcludeOptions, "by" | "counts"> {
    const schedule = this.config.webhookRetryScheduleMs;
    return {
      scheduleLength: schedule.length,
      // +-10% jitter, so retries of many deliveries that failed together do not arrive together.
      retryDelay: (n) => Math.round((schedule[n - 1] ?? 0) * (0.9 + 0.2 * Math.random())),
    };
  }

  // -------------------------------------------------------------------------------------------
  // From the organization's object

  /** Applies a newer copy of the configuration; returns the version this object now holds. */
  async sync(snapshot: EndpointSnapshot, now: number): Promise<number> {
    const version = this.apply(snapshot);
    await this.pump(now);
    return version;
  }

  private apply(snapshot: EndpointSnapshot): number {
    this.db.run(
      "INSERT OR IGNORE INTO endpoint (one, organization_id, configuration_id) VALUES (1, ?, ?)",
      snapshot.organization_id,
      snapshot.configuration_id,
    );
    const ep = this.endpoint() as EndpointRow;
    if (snapshot.version <= ep.version) return ep.version;
    const prev = this.configOf(ep);
    const next = snapshot.configuration;
    const change: Record<string, SqlStorageValue> = { version: snapshot.version };
    if (next === null || next.status === "disabled") {
      stopRecoveries(this.db, Date.now());
      this.recoveryRunning = false;
    }
    // Operational events tell of an endpoint's trouble; a polling configuration has no endpoint to
    // be in trouble (the organization disables it itself), so it announces nothing (issue 45).
    if (next !== null && prev !== null && prev.status !== "disabled" && next.status === "disabled" && next.delivery !== "polling")
      announceDisabled(this.db, ep, next, Date.now());
    // A pause's count of what it holds starts with the pause and ends with it (policy.ts). Paused
    // time is not failing time: the health count starts again on pausing and on resuming, so a
    // resume after a long pause is not disabled by its first failure (docs/receivers.md).
    if ((prev?.status === "paused") !== (next?.status === "paused")) Object.assign(change, { held: 0, failing_since_ms: null });
    if (next === null) {
      Object.assign(change, {
        deleted: 1,
        token: null,
        token_key: null,
        owed_disable: null,
        pause_kind: null,
        paused_until_ms: null,
        pause_reason: null,
      });
    } else {
      change.config = JSON.stringify(next);
      const fresh = {
        pause_kind: null,
        paused_until_ms: null,
        pause_reason: null,
        probes: 0,
        failures: 0,
        in_flight_limit: 1,
        owed_disable: null,
      };
      // A new url is a new receiver: it proves itself in the new lane.
      if (prev !== null && prev.url !== next.url) Object.assign(change, fresh, { lane: "new", quick_streak: 0 });
      // Re-enabling starts the health count afresh (and lifts any pause).
      if (prev !== null && prev.status === "disabled" && next.status !== "disabled")
        Object.assign(change, fresh, { failing_since_ms: null });
      if (ep.token !== null && ep.token_key !== tokenKey(next))
        Object.assign(change, { token: null, token_key: null, token_expires_ms: null });
    }
    this.updateEndpoint(change);
    // A waiting read is decided again on the new copy (a revoked or rotated token reads nothing more).
    this.wakeReaders();
    return snapshot.version;
  }

  /**
   * Takes the deliveries of a published event (with the configuration first, if this object lacks
   * its version). Not accepted when this object has never had a copy and none came with them: the
   * organization sends them again with one.
   */
  async accept(snapshot: EndpointSnapshot | null, deliveries: NewDelivery[], now: number): Promise<{ accepted: boolean; version: number }> {
    if (snapshot !== null) this.apply(snapshot);
    const ep = this.endpoint();
    if (ep === undefined) return { accepted: false, version: 0 };
    const config = this.configOf(ep);
    // A polling configuration's deliveries are kept for its receiver to read (polling.ts): a
    // waiting read returns at once.
    const polled = config?.delivery === "polling";
    const inserted = accept(this.db, deliveries, now, polled);
    if (polled && inserted.length > 0) this.wakeReaders();
    else if (config?.status === "paused" && ep.deleted !== 1 && inserted.length > 0) this.hold(ep, inserted, now);
    await this.pump(now);
    return { accepted: true, version: ep.version };
  }

  /**
   * Deliveries published while the configuration is paused are held (they wait here, nothing is
   * sent), up to PAUSE_HOLD_MAX_DELIVERIES in one pause; the rest are concluded failed at once,
   * saying why (a recovery after resuming sends them).
   */
  private hold(ep: EndpointRow, inserted: string[], now: number): void {
    const room = Math.max(0, PAUSE_HOLD_MAX_DELIVERIES - ep.held);
    const kept = Math.min(room, inserted.length);
    this.updateEndpoint({ held: ep.held + kept });
    const error =
      `not sent: deliveries to this endpoint are paused and the pause already holds ${PAUSE_HOLD_MAX_DELIVERIES.toLocaleString("en-US")} ` +
      "deliveries published during it (the most a pause holds); resume, then recover the window to send it";
    for (const id of inserted.slice(kept)) {
      const row = deliveryRow(this.db, id);
      if (row !== undefined) failWithoutRequest(this.db, row, error, now, { ...this.concluding(), by: "keyway", counts: false });
    }
  }

  /**
   * The upgrade from one WebhookObject per organization (objects/webhooks/legacy.ts): the
   * configuration's copy, its health as version 1 kept it, and a batch of its deliveries.
   */
  async importLegacy(
    snapshot: EndpointSnapshot,
    health: { failing_since: number | null; last_delivered_ms: number | null } | null,
    deliveries: LegacyDelivery[],
    now: number,
  ): Promise<number> {
    const version = this.apply(snapshot);
    if (health !== null) {
      this.db.run(
        "UPDATE endpoint SET failing_since_ms = coalesce(failing_since_ms, ?), last_delivered_ms = coalesce(last_delivered_ms, ?)",
        health.failing_since,
        health.last_delivered_ms,
      );
    }
    importDeliveries(this.db, deliveries, this.config.webhookRedispatchMs);
    await this.pump(now);
    return version;
  }

  // -------------------------------------------------------------------------------------------
  // A polling configuration's reads (issue 45; polling.ts holds the rules)

  /** Reads waiting for an event (long polling): each resolves when one arrives, the configuration changes, or its wait ends. */
  private readonly readers = new Set<() => void>();

  private wakeReaders(): void {
    for (const wake of [...this.readers]) wake();
  }

  /**
   * One read of a polling configuration's events: the credential and cursor decided by
   * `decideRead` on the copy this object holds (a revocation or rotation the organization
   * committed is here before its answer), then the page; with none and `wait_ms`, the read waits
   * here for an event (or a change of the configuration, after which it is decided again) up to
   * POLL_WAIT_MAX_MS. Waiting holds no input gate: hand-overs and other reads go on meanwhile.
   */
  async poll(request: ReadRequest, _now: number): Promise<Result<ReadPage>> {
    const limit = Math.min(Math.max(1, Math.trunc(request.limit)), POLL_PAGE_MAX);
    // The wait is a duration, timed on this object's clock alone: the caller's `now` comes from
    // another machine, and a skew between the two must not lengthen (or cut) the wait.
    const until = Date.now() + Math.min(Math.max(0, request.wait_ms), POLL_WAIT_MAX_MS);
    for (let waited = false; ; waited = true) {
      const ep = this.endpoint();
      const decided = decideRead(this.configOf(ep), ep, request);
      if (!decided.ok || ep === undefined) return decided.ok ? missing("Polling endpoint") : decided;
      const page = readAfter(this.db, ep.configuration_id, decided.value.after, limit);
      const left = until - Date.now();
      // Answered now: events are there, the wait is over, or enough reads wait already.
      if (page.bodies.length > 0 || left <= 0 || (waited && left < 50) || this.readers.size >= POLL_WAITERS_MAX) {
        acknowledge(this.db, ep, decided.value.after, Date.now());
        return ok(page);
      }
      await new Promise<void>((resolve) => {
        const readers = this.readers;
        const timer = setTimeout(done, left);
        // Leaves the set however it ends (a wake, or its own timer), so a read that timed out
        // never counts against POLL_WAITERS_MAX afterwards.
        function done(): void {
          clearTimeout(timer);
          readers.delete(done);
          resolve();
        }
        readers.add(done);
      });
    }
  }

  /** The endpoint's lane, pause and health; for a polling configuration, its backlog and last read (issue 45). */
  state(now: number): EndpointState & { polling: PollingState | null } {
    const ep = this.endpoint();
    if (ep === undefined)
      return { lane: "new", paused_until: null, pause_reason: null, failing_since: null, last_delivered_at: null, polling: null };
    const paused = pausedNow(ep, now);
    // Past its probe time, an open circuit is half-open: not paused, but one attempt at a time.
    const halfOpen = paused === null && ep.pause_kind === "circuit";
    const held = this.configOf(ep)?.status === "paused" ? HELD_REASON : null;
    return {
      lane: ep.lane,
      paused_until: paused?.until ? isoTime(paused.until) : null,
      pause_reason:
        held ??
        paused?.reason ??
        (halfOpen ? `circuit half-open after ${ep.failures} failed attempts in a row: one attempt at a time until one succeeds` : null),
      failing_since: ep.failing_since_ms === null ? null : isoTime(ep.failing_since_ms),
      last_delivered_at: ep.last_delivered_ms === null ? null : isoTime(ep.last_delivered_ms),
      polling: this.configOf(ep)?.delivery === "polling" ? pollingState(ep) : null,
    };
  }

  delivery(id: string): Result<DeliveryRecord> {
    const ep = this.endpoint();
    const row = deliveryRow(this.db, id);
    return ep && row ? ok(this.record(ep, row)) : missing("Delivery");
  }

  /** The event body sent to the receiver (the manager's delivery page shows it). */
  /**
   * The latest events sent to this endpoint, newest first, with their bodies: what the portal's
   * "try it" tries a receiver filter against (objects/webhooks/routing.ts tryRoutes). Test events
   * go to an endpoint whatever its filter, so they are not among them.
   */
  recentEvents(limit: number): TriedEvent[] {
    return this.db.all<TriedEvent & Record<string, SqlStorageValue>>(
      "SELECT event_id, event_type, created_at, body FROM deliveries WHERE event_type != 'webhook.test' ORDER BY seq DESC LIMIT ?",
      Math.min(Math.max(0, Math.trunc(limit)), PREVIEW_SHOWN),
    );
  }

  deliveryBody(id: string): Result<string> {
    const row = this.db.first<{ body: string }>("SELECT body FROM deliveries WHERE id = ?", id);
    return row ? ok(row.body) : missing("Delivery");
  }

  listDeliveries(page: PageRequest, filter: DeliveryFilter = {}): Result<Page<DeliveryRecord>> {
    const ep = this.endpoint();
    if (ep === undefined) return ok({ items: [], next_cursor: null });
    return pageOf(
      (before, limit) => deliveriesBefore(this.db, before, limit, filter),
      page,
      (row) => this.record(ep, row),
      true,
    );
  }

  /** The endpoint's concluded attempts by hour over the retention (health and charts). */
  hourly(now: number): HourlyRow[] {
    return this.endpoint() === undefined ? [] : hourlySince(this.db, now - EVENT_RETENTION_DAYS * 86_400_000);
  }

  private record(ep: EndpointRow, row: DeliveryRow): DeliveryRecord {
    return deliveryRecord(this.db, row, ep.organization_id, ep.configuration_id, pausedNow(ep, Date.now())?.until ?? null);
  }

  /**
   * A user's re-send. Refused while an attempt is in flight, or when the configuration is gone or
   * disabled. An attempt in flight past its lease is concluded first, as the alarm would.
   */
  async resend(id: string, actor: Actor, now: number): Promise<Result<DeliveryRecord>> {
    const ep = this.endpoint();
    let row = deliveryRow(this.db, id);
    if (ep === undefined || row === undefined) return missing("Delivery");
    const config = this.configOf(ep);
    if (ep.deleted === 1 || config === null) return fail("conflict", "The delivery's webhook configuration has been deleted.");
    if (config.delivery === "polling") return fail("conflict", POLLING_CONFLICT);
    if (config.status === "paused") return fail("conflict", PAUSED_CONFLICT);
    if (config.status !== "active")
      return fail("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
    if (row.state === "running" && (row.lease_until_ms ?? 0) <= now) {
      this.attempts.abandon(row, now);
      row = deliveryRow(this.db, id) as DeliveryRow;
    }
    if (row.state === "running") return fail("conflict", "An attempt of this delivery is in flight; wait for its outcome.");
    const was = row.status;
    const current = row;
    this.db.txn(() => {
      resend(this.db, current, now);
      this.audit(actor, "delivery.resent", "delivery", id, now, { was });
    });
    await Promise.all([this.pump(now), this.pushAudit()]);
    return ok(this.record(this.endpoint() as EndpointRow, deliveryRow(this.db, id) as DeliveryRow));
  }

  // -------------------------------------------------------------------------------------------
  // Recovery after an outage (recovery.ts)

  /**
   * Starts re-sending the failed deliveries of [since, until), a batch at a time as the endpoint
   * takes them; refused when the configuration is deleted or disabled (nothing could be sent).
   */
  async recover(org: string, since: number, until: number, actor: Actor, now: number): Promise<Result<RecoveryView>> {
    const ep = this.endpoint();
    if (ep === undefined || ep.organization_id !== org) return missing("Webhook configuration");
    const live = liveConfig(ep, this.configOf(ep));
    if (live === "webhook configuration was deleted") return missing("Webhook configuration");
    if (typeof live === "string")
      return fail("conflict", "The webhook configuration is disabled; re-enable it (PATCH status: active) first.");
    if (live.delivery === "polling") return fail("conflict", POLLING_CONFLICT);
    if (live.status === "paused") return fail("conflict", PAUSED_CONFLICT);
    const job = this.db.txn(() => {
      const row = startRecovery(this.db, since, until, actor, now);
      // The receiver (or someone for it) says it is back: an open circuit probes now.
      const probe = endCircuitWait(this.db, now);
      this.audit(actor, "webhook_configuration.recovery_started", "webhook_configuration", ep.configuration_id, now, {
        recovery_id: row.id,
        since: isoTime(since),
        until: isoTime(until),
        found: row.found,
        ...(probe ? { circuit_probe: "now" } : {}),
      });
      return row;
    });
    this.recoveryRunning = null;
    await Promise.all([this.pump(now), this.pushAudit()]);
    return ok(recoveryView(recoveryRow(this.db, job.id) ?? job, ep.configuration_id));
  }

  recovery(org: string, id: string): Result<RecoveryView> {
    const ep = this.endpoint();
    const row = recoveryRow(this.db, id);
    return ep && ep.organization_id === org && row ? ok(recoveryView(row, ep.configuration_id)) : missing("Recovery");
  }

  recoveries(org: string, page: PageRequest): Result<Page<RecoveryView>> {
    const ep = this.endpoint();
    if (ep === undefined || ep.organization_id !== org) return missing("Webhook configuration");
    return listRecoveries(this.db, page, ep.configuration_id);
  }

  /** The running recovery's next step, if there is one (a pump without one reads nothing for it). */
  private stepRecovery(now: number): void {
    if (this.recoveryRunning === null) this.recoveryRunning = recovering(this.db);
    if (!this.recoveryRunning) return;
    const step = stepRecovery(this.db, now);
    this.recoveryMore = step.more;
    this.recoveryRunning = recovering(this.db);
  }

  // -------------------------------------------------------------------------------------------
  // From the Queue consumer

  /**
   * Every call of a delivery attempt, by its kind (attempts.ts `step`): the consumer's one entry.
   * The methods below it were the entries of the release before; a consumer of that release may
   * still call them during a deploy (docs/deploy.md, "The companions' contract"), so they stay
   * until the release after this one.
   */
  step<C extends AttemptCall>(call: C, now: number): Promise<AttemptAnswer<C>> {
    return this.attempts.step(call, now);
  }

  /** The previous release's entry: `step({ kind: "begin" })`. */
  begin(ticket: DeliveryTicket, now: number): Promise<Begun> {
    return this.attempts.step({ kind: "begin", ticket }, now);
  }

  /** The previous release's entry: `step({ kind: "proceed" })`. */
  proceed(ref: TicketRef, now: number, again = false): Promise<Proceed> {
    return this.attempts.step({ kind: "proceed", ref, again }, now);
  }

  /** The previous release's entry: `step({ kind: "finish" })`. */
  async finish(report: AttemptReport, now: number): Promise<void> {
    await this.attempts.step({ kind: "finish", report }, now);
  }

  /** The previous release's entry: `step({ kind: "store_token" })`. */
  storeToken(ref: TicketRef, token: FetchedToken, now: number): Promise<number | null> {
    return this.attempts.step({ kind: "store_token", ref, token }, now);
  }

  /** The previous release's entry: `step({ kind: "token_rejected" })`. */
  tokenRejected(ref: TicketRef, generation: number, now: number, wantRefetch = true): Promise<Rejection> {
    return this.attempts.step({ kind: "token_rejected", ref, generation, refetch: wantRefetch }, now);
  }

  /** The previous release's entry: `step({ kind: "dead_lettered" })`. */
  async deadLettered(ticket: DeliveryTicket, now: number): Promise<void> {
    await this.attempts.step({ kind: "dead_lettered", ticket }, now);
  }
  // -------------------------------------------------------------------------------------------
  // The outbox, recovery and housekeeping

  /** The organization was deleted and its retention has passed: everything this object holds goes. */
  async erase(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = Date.now();
    const recovered = dueForRecovery(this.db, now);
    for (const row of recovered.abandoned) this.attempts.abandon(row, now);
    if (recovered.lost + recovered.abandoned.length > 0) {
      log.warn("webhook deliveries recovered", { lost_messages: recovered.lost, abandoned_attempts: recovered.abandoned.length });
    }
    const ep = this.endpoint();
    const pruning = ep !== undefined && prune(this.db, ep, EVENT_RETENTION_DAYS, now);
    pruneRecoveries(this.db, now - EVENT_RETENTION_DAYS * 86_400_000);
    this.recoveryMore = false;
    await Promise.all([this.attempts.settleOwed(now), this.pushAudit(), this.pushNotices()]);
    await this.pump(Date.now());
    // More rows due than one run takes: run again at once.
    if (recovered.more || pruning) this.setAlarm(Date.now());
  }

  /**
   * Sends tickets for what may be attempted now (claimed first), fails what a deleted or disabled
   * configuration still owes, and sets the next alarm.
   */
  private async pump(now: number): Promise<void> {
    // Operational events owed (a disable announces one, and a disabled endpoint pumps no further).
    if (this.db.first("SELECT 1 AS x FROM notices LIMIT 1") !== undefined) void this.pushNotices();
    const ep = this.endpoint();
    const config = this.configOf(ep);
    if (ep === undefined || (config === null && ep.deleted !== 1)) return;
    const live = liveConfig(ep, config);
    if (typeof live === "string") {
      const more = this.attempts.concludeEnded(ep, live, now);
      this.plan(now);
      if (more) this.setAlarm(Date.now()); // more to conclude: at once
      return;
    }
    if (live.status === "paused") {
      // Held: nothing is sent and a recovery waits for the resume; only the hold's bound acts.
      this.holdTooLong(now);
      this.plan(now);
      return;
    }
    this.stepRecovery(now);
    const claimed = claim(this.db, ep, live, this.book, this.config.webhookRedispatchMs, now);
    if (claimed !== null) {
      // The claim's wake time goes into the alarm in the same write batch as the claim, before the
      // send is awaited: an object that dies mid-send leaves the ticket to the alarm.
      this.plan(now);
      try {
        await send(this.queues, claimed);
        if (ep.dispatch_failures > 0) this.updateEndpoint({ dispatch_failures: 0 });
      } catch (err) {
        unclaim(this.db, claimed, Date.now());
        this.db.run("UPDATE endpoint SET dispatch_failures = dispatch_failures + 1");
        log.error("webhook tickets not sent; the alarm retries", { count: claimed.tickets.length, detail: describeError(err) });
      }
    }
    this.plan(Date.now());
  }

  /**
   * A paused endpoint's deliveries wait at most PAUSE_HOLD_MAX_MS past their due time: then each is
   * concluded failed, saying why (a recovery after resuming sends it). A batch at a time.
   */
  private holdTooLong(now: number): void {
    const due = this.db.all<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE state = 'waiting' AND due_ms <= ? ORDER BY due_ms LIMIT 100`,
      now - PAUSE_HOLD_MAX_MS,
    );
    const error =
      `not sent: held for ${PAUSE_HOLD_MAX_DAYS} days while deliveries to this endpoint were paused (the longest a pause holds one); ` +
      "resume, then recover the window to send it";
    for (const row of due) failWithoutRequest(this.db, row, error, now, { ...this.concluding(), by: "keyway", counts: false });
    if (due.length === 100) this.setAlarm(Date.now());
  }

  /** Sets the alarm for the earliest thing owed (dispatch.ts `nextAlarm`); none when nothing is. */
  private plan(now: number): void {
    const ep = this.endpoint();
    if (ep === undefined) return;
    const owed = {
      audit: this.db.first("SELECT 1 AS x FROM audit_outbox LIMIT 1") ? this.auditFailures : null,
      disable: ep.owed_disable !== null ? this.attempts.disableFailures : null,
      notices: this.db.first("SELECT 1 AS x FROM notices LIMIT 1") ? this.noticeFailures : null,
      recovery: this.recoveryMore,
    };
    this.setAlarm(nextAlarm(this.db, ep, this.configOf(ep), this.book, EVENT_RETENTION_DAYS, owed, now));
  }

  private setAlarm(at: number | null): void {
    if (at === null) {
      if (this.alarmAt !== null) void this.ctx.storage.deleteAlarm();
      this.alarmAt = null;
      return;
    }
    if (this.alarmAt === at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  /**
   * Operational events (notices.ts) go to the organization's WebhookObject, which publishes each
   * once (its key is the notice's, so a push repeated after a lost answer publishes nothing
   * twice); one push at a time, retried by the alarm.
   */
  private pushNotices(): Promise<void> {
    return this.noticePush.run(async () => {
      try {
        for (;;) {
          const notices = pendingNotices(this.db, 20);
          const ep = this.endpoint();
          if (notices.length === 0 || ep === undefined) return;
          const org = this.env.WEBHOOKS.get(this.env.WEBHOOKS.idFromName(ep.organization_id));
          for (const n of notices) {
            const key = `notice:${ep.configuration_id}:${n.seq}`;
            await org.publishOperational(
              ep.organization_id,
              n.type,
              JSON.parse(n.data) as Record<string, unknown>,
              ep.configuration_id,
              key,
              n.at_ms,
            );
            this.db.run("DELETE FROM notices WHERE seq = ?", n.seq);
          }
          this.noticeFailures = 0;
        }
      } catch (err) {
        this.noticeFailures++;
        log.warn("operational events not yet handed to the organization; the alarm retries", { detail: describeError(err) });
      } finally {
        this.plan(Date.now());
      }
    });
  }

  /** Audit entries go to the organization's log, keyed so a repeated push adds nothing; one push at a time. */
  private pushAudit(): Promise<void> {
    return this.auditPush.run(async () => {
      try {
        for (;;) {
          const entries = this.db.all<{ seq: number; entry: string }>("SELECT seq, entry FROM audit_outbox ORDER BY seq LIMIT 100");
          const ep = this.endpoint();
          if (entries.length === 0 || ep === undefined) return;
          const stub = this.env.ORGS.get(this.env.ORGS.idFromName(ep.organization_id));
          await stub.appendAudit(
            entries.map((e) => ({ ...(JSON.parse(e.entry) as AuditOutboxEntry), key: `endpoint:${ep.configuration_id}:${e.seq}` })),
          );
          this.db.run("DELETE FROM audit_outbox WHERE seq <= ?", entries.at(-1)?.seq ?? 0);
          this.auditFailures = 0;
        }
      } catch (err) {
        this.auditFailures++;
        log.warn("audit entries not pushed; the alarm retries", { detail: describeError(err) });
      }
    });
  }

  private audit(
    actor: Actor,
    action: string,
    resourceType: string,
    resourceId: string,
    now: number,
    detail: Record<string, unknown> | null,
  ) {
    const entry: AuditOutboxEntry = { at: isoTime(now), actor, action, resource_type: resourceType, resource_id: resourceId, detail };
    this.db.run("INSERT INTO audit_outbox (entry) VALUES (?)", JSON.stringify(entry));
  }

  private updateEndpoint(change: Record<string, SqlStorageValue | undefined>): void {
    const entries = Object.entries(change).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return;
    // Column names come from this module's own objects, never from input.
    this.db.run(`UPDATE endpoint SET ${entries.map(([k]) => `${k} = ?`).join(", ")}`, ...entries.map(([, v]) => v as SqlStorageValue));
  }

  // -------------------------------------------------------------------------------------------
  // The portal's limits (meter.ts)

  /**
   * A portal session's action on this configuration (issue 42 item 3): `charge` admits or refuses
   * it, per session and per configuration, counting it only when admitted; `refund` gives back an
   * admitted one that the domain then refused before it started anything (answered null). One
   * transaction, which also prunes counters whose window has ended; every rule is meter.ts's.
   */
  meterPortal(call: { charge: MeterRequest } | { refund: MeterCharge }, now: number): MeterDecision | null {
    return this.db.txn(() => {
      pruneCounters(this.ctx.storage.sql, now);
      if ("refund" in call) {
        writeCounters(this.db, refund(readCharged(this.db, call.refund), call.refund));
        return null;
      }
      const decision = decide(readCounters(this.db, call.charge), call.charge, now);
      writeCounters(this.db, decision.writes);
      return decision;
    });
  }
}

/**
 * The configuration while it is active or paused (a paused one holds its deliveries: nothing is
 * sent, nothing fails); else why nothing may be sent for this endpoint any more (deleted or disabled).
 */
/** Issue 45: a polling configuration's events are read by its receiver, from a cursor it keeps. */
const POLLING_CONFLICT =
  "A polling configuration sends nothing: its receiver reads its events, and reads them again from an earlier cursor (GET /v1/polling-endpoints/{id}/events?after=...).";
const PAUSED_CONFLICT = "Deliveries to this webhook configuration are paused; resume them (PATCH status: active) first.";

export type { NewDelivery, SealedValue, TicketRef };
