/**
 * WebhookObject: one SQLite-backed Durable Object per organization, the system of record for its
 * webhook configurations, events and Idempotency-Keys (docs/storage.md, "WebhookObject"). What
 * is per endpoint (deliveries, attempts, pacing, the receiver token) lives in each configuration's
 * EndpointObject: this object pushes each configuration's versioned copy to it after every change,
 * and hands each published event's deliveries to it through the fan-out outbox, in publish order,
 * retried by the alarm until the endpoint has them. So a crash anywhere loses nothing, and a
 * delivery is created once whatever is retried.
 *
 * This class only forwards: configurations.ts, publishing.ts and legacy.ts hold the rules.
 *
 * Load: the organization's webhook API calls and one call per publish; per publish, one call to
 * each matching endpoint's object (at most MAX_WEBHOOK_CONFIGURATIONS) and at most one audit push
 * per second. Attempts never reach it. Rows: at most MAX_WEBHOOK_CONFIGURATIONS configurations;
 * events and fan-out rows for EVENT_RETENTION_DAYS (an event's body only until its endpoints have
 * it); Idempotency-Keys for 24 hours; publish summaries per hour.
 */
import { DurableObject } from "cloudflare:workers";
import { Coalescer } from "../../lib/coalesce";
import { hex } from "../../lib/encoding";
import { SingleFlight } from "../../lib/flight";
import { newEventId } from "../../lib/ids";
import { isoTime } from "../../lib/time";
import { describeError, log } from "../../log";
import type { Actor } from "../../schemas/audit";
import type { CreateEventTypeInput, EventTypeView, UpdateEventTypeInput, WebhookSettingsView } from "../../schemas/receivers";
import type { PublishedEventView, WebhookConfigurationRecord } from "../../schemas/webhooks";
import { Db } from "../db";
import type { EndpointObject } from "../endpoints/object";
import { backoff } from "../endpoints/policy";
import { writePollingVerifier, writeReceiverKeySet } from "../lookup";
import { migrate, missing, ok, type Page, type PageRequest, pageOf, type Result } from "../sql";
import type { AuditOutboxEntry, KeyedAuditEntry } from "./audit";
import {
  type AssertionKeyCandidate,
  type Audit,
  type ChangedBy,
  type ConfigurationPatch,
  configRecord,
  configRow,
  create,
  type DisableRequest,
  deletionApplied,
  disable,
  endSigningGraces,
  isSynced,
  keySetOf,
  type NewConfiguration,
  pollingVerifierOf,
  publishedAssertionKeys,
  remove,
  rotateAssertionKey,
  rotateSigningSecret,
  setPollingToken,
  snapshotOf,
  synced,
  unsynced,
  update,
  withAssertionKey,
} from "./configurations";
import {
  createType,
  deleteType,
  getType,
  listTypes,
  logoBytes,
  PublishCheck,
  type SettingsPatch,
  settings,
  updateSettings,
  updateType,
} from "./event-types";
import { handOver, hasLegacy } from "./legacy";
import { createLink, endSession, frameOrigins, listSessions, liveSession, openLink, type PortalStore, prunePortal } from "./portal";
import {
  FANOUT_BATCH,
  handed,
  locate,
  markPushed,
  nextExpiry,
  owedConfigurations,
  owedTo,
  type PublishRequest,
  prune,
  record,
  replay,
  targets,
  unpushedSummaries,
} from "./publishing";
import { previewRouting, type RoutePreviewEvent, Routing, type TriedEvent } from "./routing";
import { CONFIG_COLUMNS, type ConfigRow, MIGRATIONS, MIGRATIONS_BEFORE_HANDOVER } from "./schema";

/** A configuration change, and whether its endpoint's object has it yet. */
export interface Changed {
  record: WebhookConfigurationRecord;
  applied: boolean;
}

/** Audit pushes of an open summary are at least this far apart (a burst is summarised in one push). */
const AUDIT_PUSH_INTERVAL_MS = 1000;

export class WebhookObject extends DurableObject<Env> {
  private readonly db: Db;
  private alarmAt: number | null = null;
  private fanoutFailures = 0;
  private syncFailures = 0;
  private auditFailures = 0;
  private lastAuditPush = 0;
  private readonly fanouts = new Coalescer();
  private readonly syncs = new Coalescer();
  private readonly auditPush = new SingleFlight();
  private readonly publishCheck = new PublishCheck();
  /** Each configuration's channels and compiled filter (routing.ts). */
  private readonly routing = new Routing();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, MIGRATIONS_BEFORE_HANDOVER);
    this.db = new Db(ctx.storage);
    // Later versions apply at once to an object with nothing left to hand over.
    if (!hasLegacy(this.db)) migrate(ctx.storage, MIGRATIONS);
    void ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
      // An object of the first layout hands its deliveries to the endpoints' objects before it
      // serves anything (legacy.ts); a failure here is retried by the next call's constructor.
      if (hasLegacy(this.db)) {
        await handOver(this.db, this.orgId(), (id) => this.endpoint(id), Date.now());
        migrate(ctx.storage, MIGRATIONS);
      }
    });
    void this.publishOwed();
  }

  /** The edge's entries owed since before they existed (schema.ts V9), once each. */
  private async publishOwed(): Promise<void> {
    // An object of the first layout gets the table with its later migrations (after its hand-over).
    if (this.db.first("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'derived_owed'") === undefined) return;
    try {
      for (const { id } of this.db.all<{ id: string }>("SELECT id FROM derived_owed")) {
        await (id === "" ? this.publishKeySet(null) : this.publishDerived(id));
        this.db.run("DELETE FROM derived_owed WHERE id = ?", id);
      }
    } catch (err) {
      log.warn("derived entries not yet published; the next start retries", { detail: describeError(err) });
    }
  }

  /**
   * The edge's entries derived from one configuration, after its change committed (and reached its
   * endpoint): its polling verifier and its key set. The objects still decide everything an entry
   * lets through; a stale one costs an object call or a brief 404, never a wrong admission.
   */
  private async publishDerived(id: string): Promise<void> {
    const verifier = pollingVerifierOf(this.db, id, Date.now());
    await Promise.all([verifier === null ? undefined : writePollingVerifier(this.env.KV, id, verifier), this.publishKeySet(id)]);
  }

  /** The organization's key set (`configId` null) or one configuration's, as the edge serves it. */
  private publishKeySet(configId: string | null): Promise<void> {
    const org = this.orgId();
    if (org === "") return Promise.resolve();
    return writeReceiverKeySet(this.env.KV, org, configId, { keys: keySetOf(this.db, configId, this.deleted()) });
  }

  private endpoint(configurationId: string): DurableObjectStub<EndpointObject> {
    return this.env.ENDPOINTS.get(this.env.ENDPOINTS.idFromName(configurationId));
  }

  /** The organization this object belongs to, recorded by its first change. */
  private bind(org: string): void {
    this.db.run("INSERT OR IGNORE INTO meta (one, organization_id) VALUES (1, ?)", org);
  }

  private orgId(): string {
    return this.db.value<string>("SELECT organization_id FROM meta") ?? "";
  }

  /**
   * The organization was deleted (`deleteAll`): every call is answered as for an organization
   * that does not exist, whichever route or surface it comes from (issue 29).
   */
  private deleted(): boolean {
    return this.db.value<number>("SELECT deleted_ms FROM meta") !== null;
  }

  private auditFor(actor: Actor, now: number): Audit {
    return (entry) => {
      const full: AuditOutboxEntry = { ...entry, at: isoTime(now), actor: entry.actor ?? actor };
      this.db.run("INSERT INTO audit_outbox (entry) VALUES (?)", JSON.stringify(full));
    };
  }

  // -------------------------------------------------------------------------------------------
  // Configurations

  /** `assertionKey`: for private_key_jwt, the configuration's own key, generated by the Worker. */
  async createConfiguration(
    org: string,
    input: NewConfiguration,
    actor: Actor,
    now: number,
    assertionKey?: AssertionKeyCandidate,
  ): Promise<Result<WebhookConfigurationRecord>> {
    if (this.deleted()) return missing("Organization");
    this.bind(org);
    const created = create(this.db, input, this.auditFor(actor, now), now, assertionKey);
    if (!created.ok) return created;
    const record = configRecord(configRow(this.db, input.id) as ConfigRow, org);
    this.plan(now);
    // A new endpoint has no deliveries yet: if its copy does not land now, the first fan-out carries it.
    await Promise.all([this.sync(input.id), this.pushAudit()]);
    return ok(record);
  }

  configuration(id: string): Result<WebhookConfigurationRecord> {
    if (this.deleted()) return missing("Organization");
    const row = configRow(this.db, id);
    return row ? ok(configRecord(row, this.orgId())) : missing("Webhook configuration");
  }

  /**
   * The portal's "try it" (routing.ts previewRouting): the proposed receiver filter (JSON text)
   * checked, and the tried events (the latest sent to the configuration, from its endpoint's
   * object) decided with it and the proposed channels. Writes nothing.
   */
  previewRouting(id: string, filter: string | null, channels: string[] | null, tried: TriedEvent[]): Result<RoutePreviewEvent[]> {
    if (this.deleted()) return missing("Organization");
    const row = configRow(this.db, id);
    return row ? previewRouting(this.db, row, { filter, channels }, tried) : missing("Webhook configuration");
  }

  /** The configuration as its endpoint's copy has it (with the assertion key, sealed): the connection test's token request. */
  configurationForToken(id: string): Result<WebhookConfigurationRecord> {
    if (this.deleted()) return missing("Organization");
    const row = configRow(this.db, id);
    return row ? ok(withAssertionKey(this.db, configRecord(row, this.orgId()))) : missing("Webhook configuration");
  }

  listConfigurations(page: PageRequest): Result<Page<WebhookConfigurationRecord>> {
    if (this.deleted()) return missing("Organization");
    const org = this.orgId();
    return pageOf(
      (after, limit) =>
        this.db.all<ConfigRow>(`SELECT ${CONFIG_COLUMNS} FROM configurations WHERE rowid > ? ORDER BY rowid LIMIT ?`, after, limit),
      page,
      (row) => configRecord(row, org),
    );
  }

  /**
   * Applies a change in one transaction, then pushes it to the endpoint's object. `by`: a receiver's
   * change (the portal) is refused what could make keyway vouch for another party (issue 42);
   * `assertionKey`: the configuration's own key, used if the change needs one.
   */
  async updateConfiguration(
    id: string,
    patch: ConfigurationPatch,
    actor: Actor,
    now: number,
    assertionKey?: AssertionKeyCandidate,
    by: ChangedBy = "organization",
  ): Promise<Result<Changed>> {
    if (this.deleted()) return missing("Organization");
    const updated = update(this.db, id, patch, this.auditFor(actor, now), now, by, assertionKey);
    if (!updated.ok) return updated;
    return this.changed(id, now);
  }

  /** Deletes the configuration; its endpoint fails its open deliveries as they fall due. Repeated while not yet applied, it pushes again. */
  async deleteConfiguration(id: string, actor: Actor, now: number): Promise<Result<Changed>> {
    if (this.deleted()) return missing("Organization");
    const tomb = this.db.first<{ record: string }>("SELECT record FROM deleted_configurations WHERE id = ? AND acked = 0", id);
    let record: WebhookConfigurationRecord;
    if (tomb !== undefined && configRow(this.db, id) === undefined) {
      record = JSON.parse(tomb.record) as WebhookConfigurationRecord;
    } else {
      const removed = remove(this.db, id, this.orgId(), this.auditFor(actor, now), now);
      if (!removed.ok) return removed;
      record = removed.value;
    }
    this.plan(now);
    await Promise.all([this.sync(id), this.pushAudit()]);
    return ok({ record, applied: deletionApplied(this.db, id) });
  }

  /**
   * The organization is deleted (driven by its OrganizationObject until this answers `applied`):
   * the deletion is recorded here first, in one transaction with every configuration's removal
   * (each leaves its tombstone and audit entry, by the actor who deleted the organization), so
   * nothing of the organization is created, changed, published or listed here afterwards. Then
   * each tombstone is pushed to its endpoint's object, which stops every delivery: waiting ones are
   * concluded as failed without a request, and an attempt already under way is refused at its
   * check before the webhook is sent (EndpointObject.proceed). `applied` once every endpoint's
   * object has its tombstone; repeated, it pushes again whatever has not landed.
   */
  async deleteAll(org: string, actor: Actor, now: number): Promise<{ deleted: number; applied: boolean }> {
    if (!this.deleted()) {
      this.bind(org);
      const audit = this.auditFor(actor, now);
      this.db.txn(() => {
        const ids = this.db.all<{ id: string }>("SELECT id FROM configurations").map((r) => r.id);
        for (const id of ids) remove(this.db, id, org, audit, now);
        this.db.run("UPDATE meta SET deleted_ms = ?, deleted_count = ?", now, ids.length);
      });
      this.plan(now);
    }
    await Promise.all([...unsynced(this.db).map((id) => this.sync(id)), this.pushAudit(), this.publishKeySet(null)]);
    return { deleted: this.db.value<number>("SELECT deleted_count FROM meta") ?? 0, applied: unsynced(this.db).length === 0 };
  }

  /** Erases the organization's webhook data: every endpoint's object, then this one's storage. */
  async erase(): Promise<void> {
    const ids = this.db.all<{ id: string }>("SELECT id FROM configurations UNION SELECT id FROM deleted_configurations").map((r) => r.id);
    for (const id of ids) await this.endpoint(id).erase();
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  async rotateSigningSecret(
    id: string,
    secret: WebhookConfigurationRecord["signing_secrets"][number],
    previousExpiresAt: string,
    actor: Actor,
    now: number,
    by: ChangedBy = "organization",
  ): Promise<Result<Changed>> {
    if (this.deleted()) return missing("Organization");
    const rotated = rotateSigningSecret(this.db, id, secret, previousExpiresAt, this.auditFor(actor, now), now, by);
    if (!rotated.ok) return rotated;
    return this.changed(id, now);
  }

  /** Ends the earlier signing secrets' graces now (the organization's); pushed to the endpoint before the answer. */
  async endSigningGraces(id: string, actor: Actor, now: number): Promise<Result<Changed & { ended: number }>> {
    if (this.deleted()) return missing("Organization");
    const ended = endSigningGraces(this.db, id, this.auditFor(actor, now), now);
    if (!ended.ok) return ended;
    const changed = await this.changed(id, now);
    return changed.ok ? ok({ ...changed.value, ended: ended.value }) : changed;
  }

  /** A polling configuration's new read credential (its SHA-256), or null to revoke it (issue 45); pushed to its endpoint before the answer. */
  async setPollingToken(
    id: string,
    tokenHash: string | null,
    actor: Actor,
    now: number,
    by: ChangedBy = "organization",
  ): Promise<Result<Changed>> {
    if (this.deleted()) return missing("Organization");
    const set = setPollingToken(this.db, id, tokenHash, this.auditFor(actor, now), now, by);
    if (!set.ok) return set;
    return this.changed(id, now);
  }

  /**
   * A new assertion key for private_key_jwt: the organization's (`configId` null, issue 31) or one
   * configuration's (issue 42); published now, signing from `activatesAt`; the previous ones
   * published until `retiresAt`.
   */
  async rotateAssertionKey(
    org: string,
    candidate: AssertionKeyCandidate,
    configId: string | null,
    activatesAt: number,
    retiresAt: number,
    actor: Actor,
    now: number,
  ): Promise<Result<{ kid: string; previous: string | null }>> {
    if (this.deleted()) return missing("Organization");
    this.bind(org);
    const rotated = rotateAssertionKey(this.db, candidate, configId, activatesAt, retiresAt, this.auditFor(actor, now), now);
    if (!rotated.ok) return rotated;
    this.plan(now);
    await Promise.all([...unsynced(this.db).map((id) => this.sync(id)), this.pushAudit(), this.publishKeySet(configId)]);
    return rotated;
  }

  /** Published assertion keys (a JWKS): the organization's, or one configuration's; none when it has none, or is deleted. */
  assertionKeys(now: number, configId: string | null = null): Record<string, unknown>[] {
    return this.deleted() ? [] : publishedAssertionKeys(this.db, now, configId);
  }

  private async changed(id: string, now: number): Promise<Result<Changed>> {
    this.plan(now);
    await Promise.all([this.sync(id), this.pushAudit()]);
    const record = configRecord(configRow(this.db, id) as ConfigRow, this.orgId());
    return ok({ record, applied: isSynced(this.db, id) });
  }

  /** An endpoint's request to disable its configuration (a 410, or a receiver failing for days). */
  async disableConfiguration(id: string, request: DisableRequest, now: number): Promise<"disabled" | "kept"> {
    const answer = disable(this.db, id, request, this.auditFor({ type: "system" }, now), now);
    this.plan(now);
    void this.sync(id);
    void this.pushAudit();
    return answer;
  }

  /** Pushes the configuration's latest version (or its tombstone) to its endpoint's object; one push at a time. */
  private sync(id: string): Promise<void> {
    return this.syncs
      .run(id, async () => {
        const snapshot = snapshotOf(this.db, id, this.orgId());
        if (snapshot === null) return;
        synced(this.db, id, await this.endpoint(id).sync(snapshot, Date.now()));
        await this.publishDerived(id);
        this.syncFailures = 0;
      })
      .catch((err: unknown) => {
        this.syncFailures++;
        log.warn("webhook configuration not yet applied to its endpoint; the alarm retries", {
          configuration: id,
          detail: describeError(err),
        });
        this.plan(Date.now());
      });
  }

  // -------------------------------------------------------------------------------------------
  // The event-type catalog and the organization's webhook settings (event-types.ts)

  async createEventType(org: string, input: CreateEventTypeInput, actor: Actor, now: number): Promise<Result<EventTypeView>> {
    if (this.deleted()) return missing("Organization");
    this.bind(org);
    return this.audited(createType(this.db, input, this.auditFor(actor, now), now), now);
  }

  eventType(name: string): Result<EventTypeView> {
    return this.deleted() ? missing("Organization") : getType(this.db, name);
  }

  eventTypes(): Result<EventTypeView[]> {
    return this.deleted() ? missing("Organization") : ok(listTypes(this.db));
  }

  async updateEventType(name: string, patch: UpdateEventTypeInput, actor: Actor, now: number): Promise<Result<EventTypeView>> {
    if (this.deleted()) return missing("Organization");
    return this.audited(updateType(this.db, name, patch, this.auditFor(actor, now), now), now);
  }

  async deleteEventType(name: string, actor: Actor, now: number): Promise<Result<EventTypeView>> {
    if (this.deleted()) return missing("Organization");
    return this.audited(deleteType(this.db, name, this.auditFor(actor, now)), now);
  }

  webhookSettings(): Result<WebhookSettingsView> {
    return this.deleted() ? missing("Organization") : ok(settings(this.db));
  }

  async updateWebhookSettings(org: string, patch: SettingsPatch, actor: Actor, now: number): Promise<Result<WebhookSettingsView>> {
    if (this.deleted()) return missing("Organization");
    this.bind(org);
    const logo = patch.portal_logo;
    // The hash is the object's own: the portal's logo URL names it, so it is the stored bytes'.
    const sha256 = logo === undefined || logo === null ? null : hex(await crypto.subtle.digest("SHA-256", logo));
    return this.audited(updateSettings(this.db, patch, sha256, this.auditFor(actor, now), now), now);
  }

  /** The portal's logo, when `sha256` is the stored one's (the portal checks the session first). */
  portalLogo(sha256: string): { content_type: string; bytes: ArrayBuffer } | null {
    return this.deleted() ? null : logoBytes(this.db, sha256);
  }

  /** A change's answer once its audit entry is on its way to the organization's log. */
  private async audited<T>(result: Result<T>, now: number): Promise<Result<T>> {
    if (result.ok) {
      this.plan(now);
      await this.pushAudit();
    }
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // Publishing

  /**
   * Records the event and one delivery per matching active configuration in one transaction (the
   * alarm set in the same write batch), then hands the deliveries to the endpoints' objects. With
   * an Idempotency-Key seen in the last 24 hours it answers the original event instead.
   */
  async publish(org: string, request: PublishRequest, actor: Actor, now: number): Promise<Result<PublishedEventView>> {
    if (this.deleted()) return missing("Organization");
    this.bind(org);
    if (request.idempotency !== undefined) {
      const replayed = replay(this.db, request.idempotency, now);
      if (replayed !== null) return replayed;
    }
    const event = request.event;
    const allowed = this.publishCheck.check(
      this.db,
      event.type,
      () => (JSON.parse(event.body) as { data: unknown }).data,
      request.only !== undefined || request.operational !== undefined,
    );
    if (!allowed.ok) return allowed;
    let data: { parsed: unknown } | null = null;
    const seen = {
      type: event.type,
      channels: event.channels ?? [],
      // Parsed once, for the first configuration with a filter.
      data: () => {
        data ??= { parsed: (JSON.parse(event.body) as { data: unknown }).data };
        return data.parsed;
      },
    };
    const to = targets(request, this.db.all<ConfigRow>(`SELECT ${CONFIG_COLUMNS} FROM configurations ORDER BY rowid`), (c) =>
      this.routing.routes(c, seen),
    );
    if (!to.ok) return to;
    const { answer, opened } = record(this.db, request, to.value, actor, now);
    // In the same write batch as the rows (no await between): if this call dies before the
    // hand-over, the alarm does it.
    this.plan(now);
    await Promise.all(to.value.map((c) => this.fanOut(c.id)));
    this.plan(Date.now());
    // A new hour's summary shows at once; later publishes update it at most once a second.
    if (opened || Date.now() - this.lastAuditPush >= AUDIT_PUSH_INTERVAL_MS) void this.pushAudit();
    return ok(answer);
  }

  /**
   * An operational event an endpoint's object announces about itself (objects/endpoints/notices.ts):
   * published like any event, by keyway, to the configurations whose `events` name its type, never
   * to the endpoint it is about. `key` is the endpoint's notice, used as the Idempotency-Key, so a
   * push repeated after a lost answer publishes nothing twice.
   */
  async publishOperational(
    org: string,
    type: string,
    data: Record<string, unknown>,
    about: string,
    key: string,
    at: number,
  ): Promise<Result<PublishedEventView>> {
    if (this.deleted()) return missing("Organization");
    const id = newEventId();
    const createdAt = isoTime(at);
    const body = JSON.stringify({ id, type, created_at: createdAt, data });
    const event = { id, type, body, created_at: createdAt };
    return this.publish(org, { event, operational: { about }, idempotency: { key, hash: type } }, { type: "system" }, Date.now());
  }

  /** Hands a configuration's owed deliveries to its endpoint, in publish order; one hand-over at a time per endpoint. */
  private fanOut(configurationId: string): Promise<void> {
    return this.fanouts
      .run(configurationId, async () => {
        for (;;) {
          const rows = owedTo(this.db, configurationId);
          if (rows.length === 0) return;
          const snapshot = isSynced(this.db, configurationId) ? null : snapshotOf(this.db, configurationId, this.orgId());
          const answer = await this.endpoint(configurationId).accept(snapshot, rows, Date.now());
          if (!answer.accepted) {
            // The endpoint lacks the configuration: send it again with its copy.
            this.db.run("UPDATE configurations SET synced_version = 0 WHERE id = ?", configurationId);
            if (snapshot === null && snapshotOf(this.db, configurationId, this.orgId()) !== null) continue;
            throw new Error("the endpoint's object has no configuration and none is left to send it");
          }
          if (snapshot !== null) synced(this.db, configurationId, answer.version);
          handed(this.db, rows);
          this.fanoutFailures = 0;
          if (rows.length < FANOUT_BATCH) return;
        }
      })
      .catch((err: unknown) => {
        this.fanoutFailures++;
        log.error("webhook deliveries not yet handed to their endpoint; the alarm retries", {
          configuration: configurationId,
          detail: describeError(err),
        });
      });
  }

  /** Which configuration a delivery belongs to (the delivery routes and the consumer's v2 tickets). */
  locate(deliveryId: string): string | null {
    return this.deleted() ? null : locate(this.db, deliveryId);
  }

  // -------------------------------------------------------------------------------------------
  // Portal: single-use links and the sessions they open, each stored as the SHA-256 of its
  // secret (portal.ts holds the rules; webhooks/portal.ts makes the secrets).

  private get portalStore(): PortalStore {
    return { db: this.db, sql: this.ctx.storage.sql };
  }

  async createPortalLink(configId: string, hash: string, expiresMs: number, actor: Actor, now: number) {
    if (this.deleted()) return missing("Organization");
    const created = createLink(this.portalStore, configId, hash, expiresMs, actor, this.auditFor(actor, now), now);
    this.plan(now);
    await this.pushAudit();
    return created;
  }

  /** Opens a link once (marks it used and creates the session in one transaction); the org's deletion refuses it. */
  async openPortalLink(linkHash: string, sessionId: string, sessionHash: string, sessionExpiresMs: number, now: number) {
    if (this.deleted()) return { ok: false as const, reason: "unknown" as const };
    const opened = openLink(
      this.portalStore,
      linkHash,
      { id: sessionId, hash: sessionHash, expiresMs: sessionExpiresMs },
      this.auditFor({ type: "system" }, now),
      now,
    );
    if (opened.ok) {
      this.plan(now);
      await this.pushAudit();
    }
    return opened;
  }

  portalSession(sessionHash: string, now: number) {
    return this.deleted() ? null : liveSession(this.portalStore, sessionHash, now);
  }

  portalFrameOrigins(): string[] {
    return this.deleted() ? [] : frameOrigins(this.db);
  }

  listPortalSessions(configId: string, page: PageRequest, now: number) {
    if (this.deleted()) return missing("Organization");
    return listSessions(this.portalStore, configId, page, now);
  }

  async endPortalSession(configId: string, id: string, actor: Actor, now: number) {
    if (this.deleted()) return missing("Organization");
    const ended = endSession(this.portalStore, configId, id, this.auditFor(actor, now), now);
    this.plan(now);
    await this.pushAudit();
    return ended;
  }

  // -------------------------------------------------------------------------------------------
  // The outbox, recovery and housekeeping

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = Date.now();
    const { more, lost } = prune(this.db, now);
    prunePortal(this.portalStore, now);
    if (lost > 0) {
      log.error("webhook deliveries never handed to their endpoint expired with their event", {
        organization: this.orgId(),
        deliveries: lost,
      });
    }
    await Promise.all([
      ...owedConfigurations(this.db).map((id) => this.fanOut(id)),
      ...unsynced(this.db).map((id) => this.sync(id)),
      this.pushAudit(),
    ]);
    this.plan(Date.now());
    if (more) this.setAlarm(Date.now());
  }

  /**
   * Sets the alarm for the earliest thing owed: a hand-over, an endpoint's copy, an audit push, or
   * the moment the oldest event or Idempotency-Key expires. Every term is an indexed lookup.
   */
  private plan(now: number): void {
    const times: number[] = [];
    const expiry = nextExpiry(this.db, now);
    if (expiry !== null) times.push(expiry);
    if (this.db.first("SELECT 1 AS x FROM fanout WHERE handed = 0 LIMIT 1") !== undefined) times.push(now + backoff(this.fanoutFailures));
    if (unsynced(this.db).length > 0) times.push(now + backoff(this.syncFailures));
    const audit =
      this.db.first("SELECT 1 AS x FROM audit_outbox LIMIT 1") !== undefined ||
      this.db.first("SELECT 1 AS x FROM publish_summary WHERE pushed < count LIMIT 1") !== undefined;
    if (audit) times.push(Math.max(now + backoff(this.auditFailures), this.lastAuditPush + AUDIT_PUSH_INTERVAL_MS));
    this.setAlarm(times.length === 0 ? null : Math.min(...times));
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

  /** Audit entries and publish summaries go to the organization's log, keyed so a repeated push adds nothing; one push at a time. */
  private pushAudit(): Promise<void> {
    return this.auditPush.run(async () => {
      try {
        for (;;) {
          const outbox = this.db.all<{ seq: number; entry: string }>("SELECT seq, entry FROM audit_outbox ORDER BY seq LIMIT 100");
          const summaries = unpushedSummaries(this.db);
          if (outbox.length === 0 && summaries.entries.length === 0) return;
          const entries: KeyedAuditEntry[] = [
            ...outbox.map((e) => ({ ...(JSON.parse(e.entry) as AuditOutboxEntry), key: `webhooks:${e.seq}` })),
            ...summaries.entries,
          ];
          this.lastAuditPush = Date.now();
          await this.env.ORGS.get(this.env.ORGS.idFromName(this.orgId())).appendAudit(entries);
          this.db.txn(() => {
            if (outbox.length > 0) this.db.run("DELETE FROM audit_outbox WHERE seq <= ?", outbox.at(-1)?.seq ?? 0);
            markPushed(this.db, summaries.marks);
          });
          this.auditFailures = 0;
        }
      } catch (err) {
        this.auditFailures++;
        log.warn("audit entries not pushed; the alarm retries", { detail: describeError(err) });
      } finally {
        this.plan(Date.now());
      }
    });
  }
}
