/**
 * The endpoint's side of one delivery attempt (docs/webhooks.md, "One attempt, step by step"): what
 * the EndpointObject answers each call the Queue consumer's driver makes for an attempt (one entry,
 * `step`, whose call names its kind: `begin`, `proceed`, `store_token`, `token_rejected`, `finish`,
 * `dead_lettered`), and the lease net's conclusion of an attempt that never reported. The object
 * forwards those calls here and hosts
 * this class over its storage (`AttemptHost`); every move of a delivery's place goes through
 * lifecycle.ts, the pacing through flow.ts, the shared token through token.ts, the rate limit's
 * slots through slots.ts.
 */
import type { Config } from "../../config";
import { isoTime } from "../../lib/time";
import { describeError, log } from "../../log";
import type { AttemptReport, DeliveryTicket, FetchedToken, Lane, WebhookConfigurationRecord } from "../../schemas/webhooks";
import type { Db } from "../db";
import { type ConcludeOptions, conclude, failWithoutRequest, isOpen, putBack, refuseTicket, start, type TicketRef } from "./deliveries";
import { afterAttempt, type EndpointChange, failingTooLong, pausedNow } from "./flow";
import { moveOne } from "./lifecycle";
import { announceExhausted, announcePause, announceRecovered } from "./notices";
import { EARLY_TOLERANCE_MS, LEASE_MARGIN_MS, slotLength, TOKEN_REUSE_MARGIN_MS } from "./policy";
import { DELIVERY_COLUMNS, type DeliveryRow, deliveryRow, type EndpointRow } from "./schema";
import { grantableAt, type SlotBook } from "./slots";
import { fetching, leaseOwner, planToken, type TokenPlan, tokenKey } from "./token";

/** What `begin` answers: the attempt to make, or why the ticket is dropped. */
export type Begun =
  | { go: false; reason: string }
  | {
      go: true;
      attempt: number;
      series: number;
      body: string;
      configuration: WebhookConfigurationRecord;
      /** When the attempt must be over (ms since the epoch): the lane's deadline. */
      deadline: number;
      lane: Lane;
      /** The configuration's version this attempt uses (its report carries it back). */
      version: number;
      token: Exclude<TokenPlan, { mode: "wait" }>;
      /** The rate limit's slot: the webhook leaves no earlier than `not_before` and no later than `by`. */
      slot: { not_before: number; by: number } | null;
    };

/** What `proceed` answers: the webhook may be sent now, or not at all (and why). */
export type Proceed = { go: true } | { go: false; reason: string };

/** What the organization's object answers a request to disable a configuration. */
export type DisableAnswer = "disabled" | "kept";

/** A disable the organization's object has yet to record. */
export interface OwedDisable {
  reason: string;
  /** A 410's: only while the configuration's url is still this. */
  url: string | null;
  /** The configuration's version the decision was made on (a re-enable after it wins). */
  basis_version: number;
  /** The attempt whose 410 it was, concluded once the organization answers. */
  gone?: { ref: TicketRef; report: AttemptReport } | undefined;
}

/** What `tokenRejected` answers: whether this attempt refetches (and its slot), or why it stopped. */
export type Rejection = { refetch: boolean; slot: { not_before: number; by: number } | null; stopped?: string };

/**
 * The calls of a delivery attempt to its endpoint's object, by kind, and what each answers: the
 * one entry (`EndpointObject.step`) through which the consumer reaches it, so a reader (and the
 * call budget in test/webhook-send-checks.test.ts) sees every call of an attempt in one type.
 */
interface AttemptCalls {
  begin: { call: { kind: "begin"; ticket: DeliveryTicket }; answer: Begun };
  proceed: { call: { kind: "proceed"; ref: TicketRef; again: boolean }; answer: Proceed };
  store_token: { call: { kind: "store_token"; ref: TicketRef; token: FetchedToken }; answer: number | null };
  token_rejected: { call: { kind: "token_rejected"; ref: TicketRef; generation: number; refetch: boolean }; answer: Rejection };
  finish: { call: { kind: "finish"; report: AttemptReport }; answer: null };
  dead_lettered: { call: { kind: "dead_lettered"; ticket: DeliveryTicket }; answer: null };
}
export type AttemptCallKind = keyof AttemptCalls;
/** One call of an attempt: `{ kind, ...its fields }`. */
export type AttemptCall<K extends AttemptCallKind = AttemptCallKind> = AttemptCalls[K]["call"];
/** What a call answers: its kind's answer. */
export type AttemptAnswer<C extends AttemptCall> = AttemptCalls[C["kind"]]["answer"];

/** What the endpoint's object lends the attempts: its storage, its settings, and its outbox. */
export interface AttemptHost {
  readonly db: Db;
  readonly book: SlotBook;
  readonly config: Config;
  readonly env: Env;
  endpoint(): EndpointRow | undefined;
  configOf(ep: EndpointRow | undefined): WebhookConfigurationRecord | null;
  concluding(): Omit<ConcludeOptions, "by" | "counts">;
  updateEndpoint(change: Record<string, SqlStorageValue | undefined>): void;
  /** Sets the alarm for what is due next. */
  plan(now: number): void;
  /** Sends what is due (tickets, notices, audit entries). */
  pump(now: number): Promise<void>;
}

/** Why nothing is sent while the configuration's status is `paused`. */
export const HELD_REASON = "deliveries paused (status paused): held here, sent in publish order when resumed";

export class Attempts {
  /** Failed tries at recording an owed disable with the organization (the alarm's backoff). */
  disableFailures = 0;

  constructor(private readonly host: AttemptHost) {}

  /** Each kind of call and the method that answers it. */
  private readonly answers: {
    [K in AttemptCallKind]: (call: AttemptCall<K>, now: number) => AttemptAnswer<AttemptCall<K>> | Promise<AttemptAnswer<AttemptCall<K>>>;
  } = {
    begin: (c, now) => this.begin(c.ticket, now),
    proceed: (c, now) => this.proceed(c.ref, now, c.again),
    store_token: (c, now) => this.storeToken(c.ref, c.token, now),
    token_rejected: (c, now) => this.tokenRejected(c.ref, c.generation, now, c.refetch),
    finish: (c, now) => this.finish(c.report, now).then(() => null),
    dead_lettered: (c, now) => this.deadLettered(c.ticket, now).then(() => null),
  };

  /** One call of an attempt, answered by the method its kind names. */
  async step<C extends AttemptCall>(call: C, now: number): Promise<AttemptAnswer<C>> {
    // The method of the call's kind takes exactly that kind's call and answers its answer.
    const answer = this.answers[call.kind] as (call: C, now: number) => AttemptAnswer<C> | Promise<AttemptAnswer<C>>;
    return answer(call, now);
  }

  /**
   * A ticket wants to make an attempt. It gets a lease (and everything the attempt needs) only if
   * it is the delivery's current ticket and the endpoint may take an attempt now; otherwise the
   * ticket is dropped and, if the delivery is still owed one, it waits here for a better moment
   * (a pause's end, the rate limit, the token, the other lane).
   */
  async begin(ticket: DeliveryTicket, now: number): Promise<Begun> {
    const row = deliveryRow(this.host.db, ticket.delivery_id);
    const refused = refuseTicket(row, ticket);
    const ep = this.host.endpoint();
    const config = this.host.configOf(ep);
    if (refused !== null || row === undefined) return { go: false, reason: refused ?? "unknown delivery" };
    if (ep === undefined || ep.organization_id !== ticket.organization_id) return { go: false, reason: "unknown delivery" };
    const live = liveConfig(ep, config);
    if (typeof live === "string") {
      failWithoutRequest(this.host.db, row, live, now, { ...this.host.concluding(), by: "keyway", counts: true });
      this.host.plan(now);
      return { go: false, reason: live };
    }
    // A polling configuration sends nothing (it has no URL): a ticket for it is a fault, dropped.
    if (live.delivery === "polling") return { go: false, reason: "polling configuration: its receiver reads its events" };
    // Not now: the ticket is dropped and the delivery waits here for a better moment.
    const refuse = async (reason: string): Promise<Begun> => {
      putBack(this.host.db, row.id, now);
      await this.host.pump(now);
      return { go: false, reason };
    };
    if (live.status === "paused") return refuse(HELD_REASON);
    if ((row.due_ms ?? 0) > now + EARLY_TOLERANCE_MS) return refuse("not due yet");
    const paused = pausedNow(ep, now);
    if (paused !== null) return refuse(`endpoint paused: ${paused.reason}`);
    if (ep.lane === "slow" && ticket.lane !== "slow") return refuse("the endpoint moved to the slow lane");
    const token = planToken(ep, live, now);
    if (token.mode === "wait") return refuse("waiting for the endpoint's receiver token");
    let slot: { not_before: number; by: number } | null = null;
    if (live.rate_limit !== null) {
      const startAt = this.host.book.earliest(live.rate_limit, now);
      if (!grantableAt(startAt, now)) return refuse(`rate limit of ${live.rate_limit}/s`);
      slot = { not_before: startAt, by: startAt + slotLength(token.mode === "fetch", ep.token_ms) };
    }
    const laneMs = ticket.lane === "slow" ? this.host.config.webhookTimeoutMs : this.host.config.webhookFastLaneMs;
    const deadline = now + laneMs;
    const body = this.host.db.value<string>("SELECT body FROM deliveries WHERE id = ?", row.id) ?? "";
    this.host.db.txn(() => {
      start(this.host.db, row, ticket.attempt, deadline + LEASE_MARGIN_MS, now);
      if (token.mode === "fetch" && token.lease) {
        this.host.updateEndpoint({ token_lease: leaseOwner(row.id, ticket.attempt), token_lease_until_ms: deadline });
      }
      if (slot !== null) this.host.book.reserve(slot.not_before, slot.by, now);
    });
    this.host.plan(now);
    return {
      go: true,
      attempt: ticket.attempt,
      series: row.series,
      body,
      configuration: live,
      deadline,
      lane: ticket.lane,
      version: ep.version,
      token,
      slot,
    };
  }

  /**
   * The check immediately before a request of an attempt leaves for the receiver (its token
   * request, its webhook, the webhook again after a DPoP nonce challenge or a 401), when the attempt
   * awaited anything outside this object since it last answered (a receiver's answer, a rate-limit
   * slot's wait): whether it may still go (issue 29, issue 41). A configuration deleted or disabled
   * meanwhile concludes the attempt here as failed without that request, so nothing is sent after
   * the deletion's (or the disable's) answer; `again` (the webhook already went once and was
   * refused) makes the record say "sent again". An attempt that is no longer the delivery's running
   * one (its lease ran out and the alarm concluded it) does not send either. An attempt whose last
   * word from this object came just before the POST (a cached token, no wait) needs no second
   * call: `begin` was that check.
   */
  proceed(ref: TicketRef, now: number, again = false): Proceed {
    const ep = this.host.endpoint();
    const row = deliveryRow(this.host.db, ref.delivery_id);
    if (ep === undefined || row === undefined || row.series !== ref.series || row.attempts !== ref.attempt || row.state !== "running") {
      return { go: false, reason: "the attempt is no longer in flight" };
    }
    const live = liveConfig(ep, this.host.configOf(ep));
    if (typeof live === "string") {
      this.stopAttempt(ref, `${live} before the webhook was sent${again ? " again" : ""}`, now);
      return { go: false, reason: live };
    }
    if (live.status === "paused") {
      this.holdAttempt(
        ref,
        `not sent: deliveries were paused before the webhook was sent${again ? " again" : ""}; held until resumed`,
        now,
      );
      return { go: false, reason: HELD_REASON };
    }
    if ((row.lease_until_ms ?? 0) <= now) return { go: false, reason: "the attempt's lease ran out" };
    return { go: true };
  }

  /** Concludes an attempt under way as failed without the webhook: its configuration is gone or disabled. */
  private stopAttempt(ref: TicketRef, error: string, now: number): void {
    this.concludeUnsent(ref, { outcome: "failed", by: "keyway", counts: true }, error, now);
    this.host.plan(now);
  }

  /**
   * Concludes an attempt under way without the webhook because deliveries were paused meanwhile:
   * not counted (nothing reached the receiver), due again at once, so held until the resume.
   */
  private holdAttempt(ref: TicketRef, error: string, now: number): void {
    this.concludeUnsent(ref, { outcome: "retry", by: "keyway", counts: false }, error, now);
    this.host.plan(now);
  }

  /** Concludes an attempt under way that sent nothing more (no step of the receiver's), and frees its token lease. */
  private concludeUnsent(
    ref: TicketRef,
    how: { outcome: "failed" | "retry"; by: "keyway" | "lease"; counts: boolean },
    error: string,
    now: number,
  ): void {
    this.host.db.txn(() => {
      conclude(this.host.db, ref, { step: "configuration", http_status: null, latency_ms: 0, outcome: how.outcome, error }, now, {
        ...this.host.concluding(),
        by: how.by,
        counts: how.counts,
      });
      this.releaseTokenLease(ref);
    });
  }

  /** The consumer's report of an attempt `begin` started; a repeated or late report changes nothing. */
  async finish(report: AttemptReport, now: number): Promise<void> {
    const ep = this.host.endpoint();
    if (ep === undefined) return;
    const ref: TicketRef = { delivery_id: report.delivery_id, series: report.series, attempt: report.attempt };
    if (report.token !== null) this.keepToken(ref, report.token, now);
    let outcome: "delivered" | "retry" | "failed" = report.outcome === "in_flight" ? "retry" : report.outcome;
    let error = report.error;
    if (report.gone && outcome !== "delivered") {
      const answer = await this.disableForGone(ep, ref, report, now);
      if (answer === "owed") {
        // Concluded when the organization answers (the alarm retries the request).
        await this.host.pump(now);
        return;
      }
      if (answer === "kept") {
        outcome = "retry";
        error = `${goneReason(report)}, but the configuration's url has changed since; retrying`;
      }
    }
    // A receiver that took the webhook and asked to be disabled (webhook-delivery: disable): the
    // delivery stands, and the disable is owed before it is concluded (a restart between them
    // loses neither), then asked for by `settleOwed` below, as every owed disable is.
    if (report.gone && outcome === "delivered" && this.host.endpoint()?.owed_disable == null) {
      const owed: OwedDisable = { reason: goneReason(report), url: report.url, basis_version: report.version };
      this.host.updateEndpoint({ owed_disable: JSON.stringify(owed) });
    }
    this.concludeReport(ref, report, outcome, error, now);
    await this.settleOwed(now);
    await this.host.pump(now);
  }

  private concludeReport(
    ref: TicketRef,
    report: AttemptReport,
    outcome: "delivered" | "retry" | "failed",
    error: string | null,
    now: number,
  ): void {
    const counts = report.ours === null;
    const ep = this.host.endpoint();
    if (ep === undefined) return;
    let change: EndpointChange = {};
    this.host.db.txn(() => {
      const done = conclude(
        this.host.db,
        ref,
        {
          step: report.step,
          http_status: report.http_status,
          latency_ms: report.latency_ms,
          outcome,
          error,
          note: report.note,
          response: report.response,
        },
        now,
        { ...this.host.concluding(), by: "report", counts },
      );
      if (done === null) return;
      this.releaseTokenLease(ref);
      const timing = { fastLaneMs: this.host.config.webhookFastLaneMs, disableAfterMs: this.host.config.webhookDisableAfterMs };
      change = afterAttempt(ep, { report, outcome: done.outcome }, timing, now);
      this.announce(ep, ref, done, change, report.gone ? null : error, now);
      const since = failingTooLong(ep, change, timing, now);
      const config = this.host.configOf(ep);
      if (since !== null && config !== null && config.status === "active" && ep.owed_disable === null) {
        const owed: OwedDisable = {
          reason: `every delivery attempt failed for ${describePeriod(timing.disableAfterMs)} (since ${isoTime(since)})`,
          url: null,
          basis_version: ep.version,
        };
        this.host.updateEndpoint({ owed_disable: JSON.stringify(owed) });
      }
      this.host.updateEndpoint(change);
    });
  }

  /** The operational events a concluded attempt calls for (notices.ts), in its transaction. */
  private announce(
    ep: EndpointRow,
    ref: TicketRef,
    done: { outcome: "delivered" | "retry" | "failed"; moved: boolean },
    change: EndpointChange,
    /** The attempt's error; null for a 410, whose delivery ends with the endpoint's disable (announced as that). */
    error: string | null,
    now: number,
  ): void {
    const config = this.host.configOf(ep);
    if (config === null) return;
    if (done.outcome === "delivered") announceRecovered(this.host.db, ep, config, now);
    else announcePause(this.host.db, ep, change, config, now);
    if (done.moved && done.outcome === "failed" && error !== null) {
      const row = deliveryRow(this.host.db, ref.delivery_id);
      if (row !== undefined) announceExhausted(this.host.db, ep, row, error, now);
    }
  }

  /**
   * A 410: asks the organization's object to disable the configuration unless its url changed after
   * the version the attempt used. While it cannot be asked, the endpoint is paused and the request owed.
   */
  private async disableForGone(ep: EndpointRow, ref: TicketRef, report: AttemptReport, now: number): Promise<DisableAnswer | "owed"> {
    const owed: OwedDisable = {
      reason: goneReason(report),
      url: report.url,
      basis_version: report.version,
      gone: { ref, report },
    };
    try {
      const answer = await this.askOrganizationToDisable(ep, owed, now);
      this.disableFailures = 0;
      return answer;
    } catch (err) {
      log.warn("410 not yet recorded by the organization; retrying", { detail: describeError(err) });
      this.disableFailures++;
      this.host.updateEndpoint({
        owed_disable: JSON.stringify(owed),
        pause_kind: "gone",
        paused_until_ms: null,
        pause_reason: `${goneReason(report)}; nothing is sent until the configuration is disabled`,
      });
      return "owed";
    }
  }

  private askOrganizationToDisable(ep: EndpointRow, owed: OwedDisable, now: number): Promise<DisableAnswer> {
    const org = this.host.env.WEBHOOKS.get(this.host.env.WEBHOOKS.idFromName(ep.organization_id));
    return org.disableConfiguration(ep.configuration_id, { reason: owed.reason, url: owed.url, basis_version: owed.basis_version }, now);
  }

  /** Retries a disable the organization has not recorded yet; concludes a 410's attempt once it has. */
  async settleOwed(now: number): Promise<void> {
    const ep = this.host.endpoint();
    if (ep?.owed_disable == null) return;
    const owed = JSON.parse(ep.owed_disable) as OwedDisable;
    let answer: DisableAnswer;
    try {
      answer = await this.askOrganizationToDisable(ep, owed, now);
    } catch (err) {
      this.disableFailures++;
      log.warn("disable not yet recorded by the organization; the alarm retries", { detail: describeError(err) });
      return;
    }
    this.disableFailures = 0;
    this.host.updateEndpoint({ owed_disable: null, ...(ep.pause_kind === "gone" ? { pause_kind: null, pause_reason: null } : {}) });
    if (owed.gone !== undefined) {
      const kept = answer === "kept";
      this.concludeReport(
        owed.gone.ref,
        owed.gone.report,
        kept ? "retry" : "failed",
        kept ? `${goneReason(owed.gone.report)}, but the configuration's url has changed since; retrying` : owed.gone.report.error,
        now,
      );
    }
  }

  /**
   * A token the consumer fetched for the endpoint's cache; answers the generation it is kept as
   * (which a 401 to it names), or null if it is not kept.
   */
  async storeToken(ref: TicketRef, token: FetchedToken, now: number): Promise<number | null> {
    const generation = this.keepToken(ref, token, now);
    await this.host.pump(now);
    return generation;
  }

  private keepToken(ref: TicketRef, token: FetchedToken, now: number): number | null {
    const ep = this.host.endpoint();
    const config = this.host.configOf(ep);
    if (ep === undefined || config === null || token.key !== tokenKey(config)) return null;
    let generation: number | null = null;
    this.host.db.txn(() => {
      if (token.expires_ms - now <= TOKEN_REUSE_MARGIN_MS) {
        // Nothing to share: each attempt fetches its own (token.ts), several at once.
        if (ep.token_short_key !== token.key) this.host.updateEndpoint({ token_short_key: token.key });
      } else {
        generation = ep.token_generation + 1;
        this.host.updateEndpoint({
          token: JSON.stringify(token.sealed),
          token_key: token.key,
          token_expires_ms: token.expires_ms,
          token_generation: generation,
          token_short_key: null,
        });
      }
      this.releaseTokenLease(ref);
    });
    return generation;
  }

  private releaseTokenLease(ref: TicketRef): void {
    this.host.db.run(
      "UPDATE endpoint SET token_lease = NULL, token_lease_until_ms = NULL WHERE token_lease = ?",
      leaseOwner(ref.delivery_id, ref.attempt),
    );
  }

  /**
   * The receiver answered 401 to the endpoint's token (`generation`): it is dropped (never used
   * again). With `refetch`, the attempt that saw it fetches the next one and sends once more,
   * unless another attempt already is fetching, or the rate limit has no slot for that second
   * webhook soon enough (then `refetch` is false and the delivery is retried at once).
   */
  tokenRejected(ref: TicketRef, generation: number, now: number, wantRefetch = true): Rejection {
    const ep = this.host.endpoint();
    const config = this.host.configOf(ep);
    const row = deliveryRow(this.host.db, ref.delivery_id);
    const none = { refetch: false, slot: null };
    if (ep === undefined || config === null || row === undefined || row.state !== "running" || row.attempts !== ref.attempt) return none;
    // Before the next token request: a configuration deleted or disabled meanwhile stops the attempt here.
    const live = liveConfig(ep, config);
    if (wantRefetch && typeof live === "string") {
      this.stopAttempt(ref, `${live} before the webhook was sent again`, now);
      return { ...none, stopped: live };
    }
    if (wantRefetch && typeof live !== "string" && live.status === "paused") {
      this.holdAttempt(ref, "not sent: deliveries were paused before the webhook was sent again; held until resumed", now);
      return { ...none, stopped: HELD_REASON };
    }
    const owner = leaseOwner(ref.delivery_id, ref.attempt);
    let answer: { refetch: boolean; slot: { not_before: number; by: number } | null } = none;
    this.host.db.txn(() => {
      if (ep.token_generation === generation) this.host.updateEndpoint({ token: null, token_key: null, token_expires_ms: null });
      if (!wantRefetch || (fetching(ep, now) && ep.token_lease !== owner)) return;
      let slot: { not_before: number; by: number } | null = null;
      if (config.rate_limit !== null) {
        // The second webhook is a request like any other: it needs a slot of its own.
        const startAt = this.host.book.earliest(config.rate_limit, now);
        if (!grantableAt(startAt, now)) return;
        slot = { not_before: startAt, by: startAt + slotLength(true, ep.token_ms) };
        this.host.book.reserve(slot.not_before, slot.by, now);
      }
      this.host.updateEndpoint({ token_lease: owner, token_lease_until_ms: (row.lease_until_ms ?? now) - LEASE_MARGIN_MS });
      answer = { refetch: true, slot };
    });
    return answer;
  }

  /**
   * A ticket the consumer could not process after all its Queue retries. If its attempt never
   * began, that is recorded as a failed try (and the delivery goes on by its schedule); if it began,
   * the lease decides. The dead-letter path never overwrites a newer outcome.
   */
  async deadLettered(ticket: DeliveryTicket, now: number): Promise<void> {
    const row = deliveryRow(this.host.db, ticket.delivery_id);
    if (row === undefined || !isOpen(row) || row.series !== ticket.series || ticket.attempt !== row.attempts + 1) return;
    if (row.state === "running" || (row.state === "queued" && row.ticket !== ticket.ticket)) return;
    this.host.db.txn(() => {
      moveOne(this.host.db, "start_unsent", row.id, { attempts: ticket.attempt }, now);
      this.host.db.run(
        `INSERT INTO attempts (delivery_id, number, series, at, step, latency_ms, outcome) VALUES (?, ?, ?, ?, 'configuration', 0, 'in_flight')`,
        row.id,
        ticket.attempt,
        row.series,
        isoTime(now),
      );
    });
    const error = "the Queue message could not be processed (dead-lettered after repeated consumer failures)";
    conclude(this.host.db, ticket, { step: "configuration", http_status: null, latency_ms: 0, outcome: "retry", error }, now, {
      ...this.host.concluding(),
      by: "dead_letter",
      counts: true,
    });
    await this.host.pump(now);
  }

  /**
   * A configuration deleted (its organization deleted, say) concludes every waiting delivery now,
   * not at its next due time: nothing will ever be sent for them. A disabled one fails them as
   * they fall due. At most 100 a call; answers whether more may be left.
   */
  concludeEnded(ep: EndpointRow, reason: string, now: number): boolean {
    const due = this.host.db.all<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE state = 'waiting' AND due_ms <= ? ORDER BY due_ms LIMIT 100`,
      ep.deleted === 1 ? Number.MAX_SAFE_INTEGER : now,
    );
    for (const row of due) failWithoutRequest(this.host.db, row, reason, now, { ...this.host.concluding(), by: "keyway", counts: true });
    return due.length === 100;
  }

  /** Concludes an attempt whose lease ran out with no report: a failed try on our side, retried by the schedule. */
  abandon(row: DeliveryRow, now: number): void {
    const error = "no outcome was reported before the attempt's deadline (the consumer stopped)";
    this.concludeUnsent(
      { delivery_id: row.id, series: row.series, attempt: row.attempts },
      { outcome: "retry", by: "lease", counts: true },
      error,
      now,
    );
  }
}

/** Why a configuration is disabled for its receiver: a 410, or the receiver's `webhook-delivery: disable`. */
const goneReason = (report: AttemptReport): string =>
  report.http_status === 410 ? "the webhook URL answered 410 Gone" : "the receiver asked to be disabled (webhook-delivery: disable)";

export function liveConfig(ep: EndpointRow, config: WebhookConfigurationRecord | null): WebhookConfigurationRecord | string {
  if (ep.deleted === 1 || config === null) return "webhook configuration was deleted";
  return config.status === "disabled" ? "webhook configuration is disabled" : config;
}

function describePeriod(ms: number): string {
  const day = 86_400_000;
  if (ms % day === 0) return `${ms / day} day${ms === day ? "" : "s"}`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Math.round(ms / 1000)} s`;
}
