/**
 * Deliveries end to end through the production code of an attempt, over random interleavings:
 * the endpoint's side (src/objects/endpoints/attempts.ts `Attempts`: begin, proceed, the token's
 * calls, finish, dead letters, the lease net) hosted over an in-memory SQLite of the
 * EndpointObject's own schema, the outbox's real claim and recovery (dispatch.ts), and the Queue
 * consumer's real driver and step (src/webhooks/attempt.ts `drive`) over a port whose receiver
 * follows a generated script. Between and during attempts the runs duplicate and reorder tickets,
 * deliver late ones, lose reports after a send and hand reports over again, dead-letter tickets,
 * pause, resume, disable and delete the configuration (also while a token request or a webhook is
 * awaited), let leases run out, and restart the object (memory lost, rows kept). The harness's
 * host stands in for the EndpointObject's outbox only (claim and recovery are dispatch.ts's own).
 *
 * The properties:
 * 1. Every change of a delivery's place is an edge of the lifecycle (lifecycle.ts), checked after
 *    every statement that wrote.
 * 2. At most one POST per attempt and token and round; none after the DELETE, disable or pause
 *    was answered (the endpoint's row changed) unless nothing was awaited since the object's go.
 * 3. Nothing lost: once the configuration is active again, the receiver is back up and time runs
 *    on, every delivery ends delivered or failed (a deleted configuration's, failed), or is still
 *    due; and each counted retry is an attempt made (a repeated, late or presumed report counts
 *    no more).
 * The runs must reach every rule: `reached` is asserted at the end.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config";
import { Db } from "../../src/objects/db";
import { Attempts, type Begun, liveConfig } from "../../src/objects/endpoints/attempts";
import { accept, deliveryRecord } from "../../src/objects/endpoints/deliveries";
import { claim, dueForRecovery } from "../../src/objects/endpoints/dispatch";
import { edges, PLACE_SQL } from "../../src/objects/endpoints/lifecycle";
import { type DeliveryRow, endpointRow, MIGRATIONS } from "../../src/objects/endpoints/schema";
import { SlotBook } from "../../src/objects/endpoints/slots";
import { migrate } from "../../src/objects/sql";
import type { AttemptReport, DeliveryTicket, WebhookConfigurationRecord } from "../../src/schemas/webhooks";
import { type AttemptPort, drive, planOf } from "../../src/webhooks/attempt";
import { MemoryStorage } from "./memory-storage";

const RUNS = Number(process.env.KEYWAY_PROPERTY_RUNS || 300);
const T0 = Date.UTC(2026, 11, 3, 12);
const ORG = "org_1";
const ID = "whk_0123456789abcdefghjkmnpqrs";

const CONFIG = {
  webhookTimeoutMs: 30_000,
  webhookFastLaneMs: 2_000,
  webhookRetryScheduleMs: [1_000, 5_000, 30_000],
  webhookRedispatchMs: 60_000,
  webhookDisableAfterMs: 86_400_000 * 5,
} as Config;

const record = (status: WebhookConfigurationRecord["status"], version: number): WebhookConfigurationRecord => ({
  id: ID,
  organization_id: ORG,
  url: "https://receiver.example/hook",
  events: null,
  description: null,
  oauth: { token_url: "https://receiver.example/token", client_id: "c", client_secret: null },
  token_cache: false,
  ordered: false,
  rate_limit: null,
  signing_secrets: [],
  status,
  disabled_reason: null,
  version,
  created_at: "2026-12-03T00:00:00.000Z",
  updated_at: "2026-12-03T00:00:00.000Z",
});

/** What the receiver does with a webhook; `meanwhile`: the organization changes the configuration while the answer is awaited. */
type Receiver = ({ status: number } | { hang: true } | { fail: true }) & { meanwhile?: "paused" | "disabled" | "deleted" };
const ALLOWED = new Set(edges().map((e) => `${e.from}>${e.to}`));

const reached = {
  reportAgain: 0,
  corrected: 0,
  endedMidAttempt: 0,
  delivered: 0,
  failedByEnd: 0,
  retried: 0,
  duplicateDropped: 0,
  lateDropped: 0,
  lostReport: 0,
  abandoned: 0,
  deadLettered: 0,
  stoppedByEnd: 0,
  heldByPause: 0,
  restarted: 0,
  gone: 0,
};

/** One run's world: the object's rows, its host, the Queue, the receiver, the clock. */
class World {
  now = T0;
  readonly storage = new MemoryStorage();
  readonly db: Db;
  attempts: Attempts;
  readonly queue: DeliveryTicket[] = [];
  readonly used: DeliveryTicket[] = [];
  /** Every report an attempt made, taken or lost: a later step hands one over again (a duplicate, or a late one). */
  readonly reports: AttemptReport[] = [];
  /** The reports lost after their send. */
  readonly lost: AttemptReport[] = [];
  version = 1;
  status: WebhookConfigurationRecord["status"] | "deleted" = "active";
  /** When the configuration last stopped being active (its change answered), or null. */
  endedAt: number | null = null;
  readonly posts: { delivery: string; attempt: number; at: number; key: string }[] = [];
  readonly places = new Map<string, string>();
  violations: string[] = [];
  /** Running the world out: the organization changes nothing more. */
  draining = false;
  /** The organization changes the configuration while the next token request is awaited. */
  endDuringToken: "paused" | "disabled" | "deleted" | null = null;

  constructor(private readonly receiver: () => Receiver) {
    migrate(this.storage, MIGRATIONS);
    this.db = new Db(this.storage as unknown as DurableObjectStorage);
    this.db.run("INSERT INTO endpoint (one, organization_id, configuration_id) VALUES (1, ?, ?)", ORG, ID);
    this.setConfig("active");
    this.attempts = this.host();
    this.storage.onStatement = () => this.checkPlaces();
  }

  private host(): Attempts {
    const book = new SlotBook(this.db);
    return new Attempts({
      db: this.db,
      book,
      config: CONFIG,
      env: {
        WEBHOOKS: {
          idFromName: (n: string) => n,
          get: () => ({
            // The organization disables the configuration (a 410) and pushes the disabled copy.
            disableConfiguration: async () => {
              this.setConfig("disabled");
              return "disabled";
            },
          }),
        },
      } as unknown as Env,
      endpoint: () => endpointRow(this.db),
      configOf: (ep) => (ep?.config ? (JSON.parse(ep.config) as WebhookConfigurationRecord) : null),
      concluding: () => ({
        scheduleLength: CONFIG.webhookRetryScheduleMs.length,
        retryDelay: (n) => CONFIG.webhookRetryScheduleMs[n - 1] ?? 0,
      }),
      updateEndpoint: (change) => {
        for (const [column, value] of Object.entries(change)) {
          if (value !== undefined) this.db.run(`UPDATE endpoint SET ${column} = ?`, value);
        }
      },
      plan: () => {},
      pump: async (now) => this.pump(now),
    });
  }

  /** The organization's push of a configuration change (what EndpointObject.sync applies): answered once written. */
  setConfig(status: WebhookConfigurationRecord["status"] | "deleted"): void {
    this.version++;
    this.status = status;
    if (status === "deleted") this.db.run("UPDATE endpoint SET deleted = 1, version = ?", this.version);
    else this.db.run("UPDATE endpoint SET config = ?, version = ?", JSON.stringify(record(status, this.version)), this.version);
    if (status !== "active") this.endedAt ??= this.now;
    else this.endedAt = null;
  }

  /** The object's pump, as far as deliveries go: an ended configuration's deliveries concluded (attempts.ts), else tickets claimed (dispatch.ts). */
  pump(now: number): void {
    const ep = endpointRow(this.db);
    if (ep === undefined) return;
    const config = ep.config === null ? null : (JSON.parse(ep.config) as WebhookConfigurationRecord);
    const live = liveConfig(ep, config);
    if (typeof live === "string") {
      this.attempts.concludeEnded(ep, live, now);
      return;
    }
    if (live.status !== "active") return;
    const claimed = claim(this.db, ep, live, new SlotBook(this.db), CONFIG.webhookRedispatchMs, now);
    if (claimed !== null) this.queue.push(...claimed.tickets);
  }

  restart(): void {
    this.attempts = this.host();
    reached.restarted++;
  }

  /** The lease net and lost tickets (the object's alarm), as dispatch.ts finds them. */
  alarm(): void {
    const due = dueForRecovery(this.db, this.now);
    for (const row of due.abandoned) {
      this.attempts.abandon(row, this.now);
      reached.abandoned++;
    }
    this.pump(this.now);
  }

  checkPlaces(): void {
    for (const row of this.db.all<{ id: string; place: string }>(`SELECT id, ${PLACE_SQL} AS place FROM deliveries`)) {
      const before = this.places.get(row.id);
      if (before !== undefined && before !== row.place && !ALLOWED.has(`${before}>${row.place}`)) {
        this.violations.push(`${row.id}: ${before} -> ${row.place}`);
      }
      this.places.set(row.id, row.place);
    }
  }

  /** One ticket, taken off the Queue (or a used one again: a duplicate or late message), run through the real consumer path. */
  async run(ticket: DeliveryTicket, loseReport: boolean): Promise<void> {
    const begun = await this.attempts.begin(ticket, this.now);
    if (!begun.go) {
      if (begun.reason.startsWith("attempt already made") || begun.reason.startsWith("superseded")) reached.duplicateDropped++;
      if (begun.reason.startsWith("already")) reached.lateDropped++;
      if (begun.reason.includes("paused")) reached.heldByPause++;
      return;
    }
    const timing = { started_at: this.now, deadline_seconds: Math.ceil((begun.deadline - this.now) / 1000), slow_deadline_seconds: 30 };
    const ended = await drive(this.port(ticket, begun), planOf(ticket, begun, timing));
    if ("stopped" in ended) {
      reached.stoppedByEnd++;
      if (ended.stopped.includes("paused")) reached.heldByPause++;
      return;
    }
    this.reports.push(ended.report);
    if (loseReport) {
      reached.lostReport++;
      this.lost.push(ended.report);
      return;
    }
    if (ended.report.gone) reached.gone++;
    await this.attempts.finish(ended.report, this.now);
  }

  private port(ticket: DeliveryTicket, begun: Extract<Begun, { go: true }>): AttemptPort {
    const ref = { delivery_id: ticket.delivery_id, series: begun.series, attempt: begun.attempt };
    let token = 0;
    return {
      now: () => this.now,
      timedOut: () => this.now >= begun.deadline,
      pausedUntil: () => null,
      rememberPause: () => {},
      openToken: async () => {},
      fetchToken: async (beforeRequest) => {
        const stopped = await beforeRequest();
        if (stopped !== null) return { stopped };
        this.leave(ref, `token${token}`);
        this.now += 20;
        if (this.endDuringToken !== null && this.status === "active") {
          this.setConfig(this.endDuringToken);
          reached.endedMidAttempt++;
        }
        this.endDuringToken = null;
        token++;
        return { expires_in_seconds: 3600 };
      },
      sealToken: async (lifetimeMs) => ({
        sealed: { kid: "k", iv: "iv", ct: `t${token}` },
        expires_ms: this.now + lifetimeMs,
        key: "not this endpoint's",
      }),
      wait: async (ms) => {
        this.now += ms;
      },
      send: async (beforeRequest) => {
        const stopped = await beforeRequest(0);
        if (stopped !== null) return { stopped };
        this.leave(ref, `webhook${token}`);
        // Running the world out, the receiver is back up.
        const r: Receiver = this.draining ? { status: 204 } : this.receiver();
        if (r.meanwhile !== undefined && this.status === "active" && !this.draining) {
          this.setConfig(r.meanwhile);
          reached.endedMidAttempt++;
        }
        if ("hang" in r) {
          this.now = begun.deadline;
          return { failure: { http_status: null, message: "the attempt's deadline passed", retry_after_seconds: null } };
        }
        this.now += 30;
        if ("fail" in r) return { failure: { http_status: null, message: "connection reset", retry_after_seconds: null } };
        return { answer: { status: r.status, retry_after_seconds: null, response: null } };
      },
      // The real one entry: each call as EndpointObject.step forwards it.
      ask: (call) => this.attempts.step(call, this.now),
    };
  }

  private leave(ref: { delivery_id: string; attempt: number }, what: string): void {
    const key = `${ref.delivery_id}:${ref.attempt}:${what}`;
    if (this.posts.some((p) => p.key === key)) this.violations.push(`two requests ${key}`);
    if (this.endedAt !== null && this.status !== "active")
      this.violations.push(`${what} left for ${ref.delivery_id} after the configuration became ${this.status}`);
    this.posts.push({ delivery: ref.delivery_id, attempt: ref.attempt, at: this.now, key });
  }

  rows(): DeliveryRow[] {
    return this.db.all<DeliveryRow>("SELECT * FROM deliveries");
  }
}

// ---------------------------------------------------------------------------------------------
// The commands

type Step =
  | { kind: "publish"; n: number }
  | { kind: "take"; index: number; lose: boolean }
  | { kind: "again"; index: number }
  | { kind: "deadLetter"; index: number }
  | { kind: "status"; to: "active" | "paused" | "disabled" | "deleted" }
  | { kind: "time"; ms: number }
  | { kind: "alarm" }
  | { kind: "restart" }
  | { kind: "report"; index: number }
  | { kind: "lateReport"; index: number }
  | { kind: "endDuringToken"; to: "paused" | "disabled" | "deleted" };

const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("publish" as const), n: fc.integer({ min: 1, max: 3 }) }) },
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant("take" as const),
        index: fc.nat(5),
        lose: fc.oneof({ weight: 2, arbitrary: fc.constant(false) }, fc.constant(true)),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("again" as const), index: fc.nat(20) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("deadLetter" as const), index: fc.nat(5) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("status" as const),
        to: fc.constantFrom(
          "active" as const,
          "active" as const,
          "paused" as const,
          "paused" as const,
          "disabled" as const,
          "deleted" as const,
        ),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("time" as const), ms: fc.constantFrom(100, 1_000, 5_000, 40_000, 120_000) }) },
    { weight: 2, arbitrary: fc.constant({ kind: "alarm" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "restart" as const }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("report" as const), index: fc.nat(20) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("lateReport" as const), index: fc.nat(5) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("endDuringToken" as const),
        to: fc.constantFrom("paused" as const, "disabled" as const, "deleted" as const),
      }),
    },
  ),
  { minLength: 5, maxLength: 40 },
);

const meanwhile = fc.oneof(
  { weight: 12, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom("paused" as const, "disabled" as const, "deleted" as const) },
);
const receivers: fc.Arbitrary<Receiver[]> = fc.array(
  fc
    .tuple(
      fc.oneof(
        { weight: 5, arbitrary: fc.record({ status: fc.constantFrom(200, 204) }) },
        { weight: 3, arbitrary: fc.record({ status: fc.constantFrom(500, 503, 401, 302) }) },
        { weight: 3, arbitrary: fc.record({ status: fc.constant(410) }) },
        { weight: 1, arbitrary: fc.constant({ hang: true as const }) },
        { weight: 1, arbitrary: fc.constant({ fail: true as const }) },
      ),
      meanwhile,
    )
    .map(([r, t]): Receiver => (t === undefined ? r : { ...r, meanwhile: t })),
  { minLength: 1, maxLength: 12 },
);

async function play(script: Step[], answers: Receiver[]): Promise<World> {
  let i = 0;
  const w = new World(() => answers[i++ % answers.length] ?? { status: 204 });
  let seq = 0;
  for (const s of script) {
    switch (s.kind) {
      case "publish": {
        const news = Array.from({ length: s.n }, () => {
          seq++;
          return {
            id: `dlv_${seq}`,
            seq,
            event_id: `evt_${seq}`,
            event_type: "order.created",
            body: "{}",
            created_ms: w.now,
            created_at: "",
          };
        });
        accept(w.db, news, w.now);
        w.pump(w.now);
        break;
      }
      case "take": {
        const t = w.queue.splice(s.index % Math.max(1, w.queue.length), 1)[0];
        if (t !== undefined) {
          w.used.push(t);
          await w.run(t, s.lose);
        }
        break;
      }
      case "again": {
        const t = w.used[s.index % Math.max(1, w.used.length)];
        if (t !== undefined) await w.run(t, false);
        break;
      }
      case "deadLetter": {
        const t = w.queue.splice(s.index % Math.max(1, w.queue.length), 1)[0];
        if (t !== undefined) {
          await w.attempts.deadLettered(t, w.now);
          reached.deadLettered++;
        }
        break;
      }
      case "status":
        if (w.status !== "deleted" && w.status !== s.to) w.setConfig(s.to);
        break;
      case "time":
        w.now += s.ms;
        break;
      case "alarm":
        w.alarm();
        break;
      case "restart":
        w.restart();
        break;
      case "report": {
        // A report handed over again: the consumer's retry after a lost answer, or the Queue's copy after a lease presumed it.
        const r = w.reports[s.index % Math.max(1, w.reports.length)];
        if (r !== undefined) {
          const settled = w.db.value<string>(
            "SELECT settled_by FROM attempts WHERE delivery_id = ? AND number = ?",
            r.delivery_id,
            r.attempt,
          );
          if (settled === "lease" || settled === "dead_letter") reached.corrected++;
          await w.attempts.finish(r, w.now);
          reached.reportAgain++;
        }
        break;
      }
      case "lateReport": {
        // A lost report that arrives after the lease presumed its attempt's outcome (the alarm ran).
        const r = w.lost.splice(s.index % Math.max(1, w.lost.length), 1)[0];
        if (r !== undefined) {
          w.now += 60_000;
          w.alarm();
          const settled = w.db.value<string>(
            "SELECT settled_by FROM attempts WHERE delivery_id = ? AND number = ?",
            r.delivery_id,
            r.attempt,
          );
          if (settled === "lease") reached.corrected++;
          await w.attempts.finish(r, w.now);
        }
        break;
      }
      case "endDuringToken":
        w.endDuringToken = s.to;
        break;
    }
  }
  return w;
}

/** Runs the world out: active again (unless deleted), time running on, every ticket taken, every alarm fired. */
async function drain(w: World): Promise<void> {
  w.draining = true;
  if (w.status === "paused" || w.status === "disabled") w.setConfig("active");
  for (let round = 0; round < 200; round++) {
    // A 410 disables the configuration; the organization enables it again.
    if (w.status === "disabled") w.setConfig("active");
    const open = w.rows().filter((r) => r.status === "pending" || r.status === "retrying");
    if (open.length === 0) return;
    if (w.status === "deleted") {
      // The object's pump concludes a deleted configuration's waiting deliveries; here, the tickets do.
      for (const r of open.filter((r) => r.state === "waiting")) {
        w.db.run("UPDATE deliveries SET due_ms = ? WHERE id = ?", w.now, r.id);
      }
    }
    w.now += 150_000;
    w.alarm();
    while (w.queue.length > 0) {
      const t = w.queue.shift() as DeliveryTicket;
      await w.run(t, false);
    }
    if (w.status === "deleted") {
      for (const r of w.rows().filter((r) => r.state === "waiting" || r.state === "queued")) {
        await w.run(
          {
            v: 3,
            kind: "attempt",
            organization_id: ORG,
            configuration_id: ID,
            delivery_id: r.id,
            series: r.series,
            attempt: r.attempts + 1,
            ticket: r.ticket,
            lane: "fast",
          },
          false,
        );
      }
    }
  }
}

describe("deliveries through the production attempt, over random interleavings", () => {
  it("1-3: lifecycle moves only; one request per attempt, token and round, none after an end; nothing lost", async () => {
    await fc.assert(
      fc.asyncProperty(steps, receivers, async (script, answers) => {
        const w = await play(script, answers);
        expect(w.violations, "during the run").toEqual([]);
        await drain(w);
        expect(w.violations, "while draining").toEqual([]);
        for (const row of w.rows()) {
          // Nothing lost: ended, or still due (waiting for its time, or a ticket or attempt the alarm wakes).
          const due = row.state === "waiting" ? row.due_ms !== null : row.state !== null && row.wake_ms !== null;
          if (row.status !== "delivered" && row.status !== "failed") {
            expect(due, `${row.id} is stuck (${row.status}/${row.state})`).toBe(true);
          }
          // Counted once: the retries a delivery's series counted are attempts it made (a report repeated, late or presumed counts no more).
          const made = w.db.value<number>("SELECT count(*) FROM attempts WHERE delivery_id = ? AND series = ?", row.id, row.series) ?? 0;
          expect(row.series_attempts, `${row.id}: counted attempts`).toBeLessThanOrEqual(made);
          if (w.status === "deleted" && row.status === "failed") reached.failedByEnd++;
          if (row.status === "delivered") reached.delivered++;
          const view = deliveryRecord(w.db, row, ORG, ID);
          if (view.attempts.some((a) => a.outcome === "retry")) reached.retried++;
        }
      }),
      { numRuns: RUNS },
    );
    // About 1.5 s alone; a two-core machine running every tier has made it ten times that.
  }, 300_000);

  afterAll(() => {
    console.info(`attempts properties reached: ${JSON.stringify(reached)}`);
    for (const [rule, n] of Object.entries(reached)) expect(n, `the properties never reached: ${rule}`).toBeGreaterThan(0);
  });
});
