/**
 * Propagation from the organization's object: after a change commits, what other places derive
 * from it is pushed, and retried (the object's alarm) until it lands:
 * - each API key's KeyObject gets the key's state and the organization's revocations (by
 *   revision), so the one Durable Object call of every /v1 request decides them;
 * - the credential lookup entries in KV (objects/lookup.ts) the token endpoint reads;
 * - the organization's entry in the DirectoryObject (operator listing): added once created,
 *   dropped once deleted;
 * - a deleted organization's webhook configurations: the WebhookObject deletes them all and
 *   pushes each deletion to its endpoint's object (`deleteAll`), until it answers that every
 *   endpoint has it (issue 29: a deletion answered 503 is finished here, whatever failed first).
 * `run` answers how many key objects still lack a change: a change that must take effect
 * everywhere (a revocation, new limits) is answered only once that is zero.
 */
import { describeError, log } from "../../log";
import type { KeySnapshot } from "../../ratelimit/admission";
import type { Actor } from "../../schemas/audit";
import { deleteCredentialLookup, writeCredentialLookup } from "../lookup";
import { credentialRow, type KeyRow, keyRecord, type OrgRow, objectHashOf, orgRow, quotaOf, SYNC_CONCURRENCY } from "./schema";

export class Propagation {
  /** When the alarm is set for, or null when none is. */
  alarmAt: number | null = null;
  /** Failed runs in a row: the retry's backoff. */
  retries = 0;
  /** Client ids whose KV entry is being written: one write at a time per entry, in order. */
  private readonly lookupsInFlight = new Set<string>();

  /** `bindings` is read on each use (the object's env, which fault-injection tests replace). */
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly bindings: () => Env,
  ) {}

  private get env(): Env {
    return this.bindings();
  }

  private get sql(): SqlStorage {
    return this.storage.sql;
  }

  private org(): OrgRow {
    const row = orgRow(this.sql);
    if (row === null) throw new Error("organization object used before it was created");
    return row;
  }

  /**
   * Pushes what changed to the key objects, KV and the directory; returns how many key objects
   * still lack a change, and schedules a retry for whatever did not land.
   */
  async run(): Promise<number> {
    if (orgRow(this.sql) === null) return 0;
    const [pendingKeys, pendingOther, pendingWebhooks] = await Promise.all([this.syncKeys(), this.writeDerived(), this.deleteWebhooks()]);
    if (pendingKeys + pendingOther + pendingWebhooks > 0) {
      // 0.5 s, 1 s, 2 s ... at most 60 s, for as long as it takes.
      this.schedule(Date.now() + Math.min(60_000, 500 * 2 ** Math.min(this.retries, 7)));
      this.retries++;
    }
    return pendingKeys;
  }

  /** Brings every key object up to date with its key's version and the organization's revision. */
  private async syncKeys(): Promise<number> {
    const org = this.org();
    const stale = this.sql
      .exec<KeyRow>(
        "SELECT rowid, * FROM api_keys WHERE synced_version < version OR (revoked_at IS NULL AND synced_revision < ?)",
        org.revision,
      )
      .toArray();
    let pending = 0;
    for (let i = 0; i < stale.length; i += SYNC_CONCURRENCY) {
      await Promise.all(
        stale.slice(i, i + SYNC_CONCURRENCY).map(async (key) => {
          const snapshot = this.snapshotOf(key, key.synced_revision);
          try {
            // The first call creates the key's object: near the hinted region, else near this one.
            const hint = key.location_hint === null ? undefined : { locationHint: key.location_hint as DurableObjectLocationHint };
            const ack = await this.env.KEYS.get(this.env.KEYS.idFromName(objectHashOf(key)), hint).sync(snapshot);
            // A key's object behind what this organization believed it had (its storage was lost)
            // says so: the next push starts from the revision it really holds (issue 41).
            this.sql.exec(
              `UPDATE api_keys SET synced_version = max(synced_version, ?1),
                 synced_revision = CASE WHEN ?3 THEN ?2 ELSE max(synced_revision, ?2) END WHERE id = ?4`,
              ack.version,
              ack.revision,
              ack.behind === true ? 1 : 0,
              key.id,
            );
            // Not applied yet: the change is answered only once this key's object has all of it.
            if (ack.behind === true) pending++;
          } catch (err) {
            pending++;
            log.warn("key object sync failed; will retry", { key: key.id, detail: describeError(err) });
          }
        }),
      );
    }
    return pending;
  }

  /**
   * What a key's object needs: the key's state, and the organization's revocations after
   * `revision` (the snapshot's `since`: a copy that holds less than that keeps its revision and
   * says it is behind, ratelimit/admission.ts `applySnapshot`).
   */
  snapshotOf(key: KeyRow, revision: number): KeySnapshot {
    const org = this.org();
    return {
      id: key.id,
      organization_id: org.id,
      status: key.revoked_at === null ? "active" : "revoked",
      limits: {
        ...(key.per_second !== null ? { per_second: key.per_second } : {}),
        ...(key.per_day !== null ? { per_day: key.per_day } : {}),
      },
      version: key.version,
      revision: org.revision,
      since: revision,
      secrets: { current: key.key_hash, previous: key.previous_hash, previous_until_ms: key.previous_until_ms },
      credits: keyRecord(org.id, key).credits,
      quota: quotaOf(org),
      revocations: this.sql
        .exec<{
          client_id: string;
          revision: number;
          kind: "client" | "changed" | "token";
          version: number | null;
          token_id: string | null;
          expires_ms: number | null;
        }>(
          "SELECT client_id, revision, kind, version, token_id, expires_ms FROM revocations WHERE revision > ? ORDER BY revision",
          revision,
        )
        .toArray()
        .map((r) =>
          r.kind === "changed"
            ? { client_id: r.client_id, revision: r.revision, kind: r.kind, version: r.version ?? 0 }
            : r.kind === "token"
              ? { client_id: r.client_id, revision: r.revision, kind: r.kind, token_id: r.token_id ?? "", expires_ms: r.expires_ms ?? 0 }
              : { client_id: r.client_id, revision: r.revision },
        ),
    };
  }

  /** KV lookup entries and the directory entry; their absence only costs a slower path. */
  private async writeDerived(): Promise<number> {
    let pending = 0;
    const org = this.org();
    const lookups = this.sql.exec<{ client_id: string }>("SELECT client_id FROM pending_lookups").toArray();
    await Promise.all(
      lookups
        .filter(({ client_id }) => !this.lookupsInFlight.has(client_id))
        .map(async ({ client_id }) => {
          // One write at a time per entry: a delete queued while a put is in flight runs after
          // it, never before (a put landing last would leave a revoked credential's entry).
          this.lookupsInFlight.add(client_id);
          try {
            for (;;) {
              const next = this.sql.exec<{ op: string }>("SELECT op FROM pending_lookups WHERE client_id = ?", client_id).toArray()[0];
              if (next === undefined) break;
              const row = credentialRow(this.sql, client_id);
              if (next.op === "put" && row && row.revoked_at === null) {
                await writeCredentialLookup(this.env.KV, client_id, {
                  organization_id: org.id,
                  user_id: row.user_id,
                  secret_hash: row.secret_hash,
                  // Every credential without a secret is "private_key_jwt" here: the entry's one use is
                  // that such a credential is never authenticated from it (and an earlier release reads it).
                  auth_method: row.auth_method === "client_secret" ? "client_secret" : "private_key_jwt",
                  scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
                  dpop_bound: row.dpop_bound === 1,
                  version: row.version,
                  ...(row.token_strategy === "jwt" ? { access_token_strategy: "jwt" as const } : {}),
                });
              } else {
                await deleteCredentialLookup(this.env.KV, client_id);
              }
              this.sql.exec("DELETE FROM pending_lookups WHERE client_id = ? AND op = ?", client_id, next.op);
            }
          } catch (err) {
            pending++;
            log.warn("KV lookup write failed; will retry", { client: client_id, detail: describeError(err) });
          } finally {
            this.lookupsInFlight.delete(client_id);
          }
        }),
    );
    const listed = org.in_directory === 1;
    if (listed === (org.deleted_at !== null)) {
      // Created and not yet listed, or deleted and still listed (the operator's listing drops it at once).
      const directory = this.env.DIRECTORY.get(this.env.DIRECTORY.idFromName("directory"));
      try {
        if (listed) await directory.unregister(org.id);
        else await directory.register({ id: org.id, name: org.name, created_at: org.created_at });
        this.sql.exec("UPDATE organization SET in_directory = ?", listed ? 0 : 1);
      } catch (err) {
        pending++;
        log.warn("directory entry not updated; will retry", { organization: org.id, detail: describeError(err) });
      }
    }
    return pending;
  }

  /**
   * A deleted organization's webhooks: the WebhookObject records the deletion and deletes every
   * configuration (by the actor who deleted the organization), then pushes each deletion to its
   * endpoint's object; 1 until it answers that all of them have it, then never again.
   */
  private async deleteWebhooks(): Promise<number> {
    const org = this.org();
    if (org.deleted_at === null || org.webhooks_deleted !== null) return 0;
    const actor = this.sql
      .exec<{ actor: string }>("SELECT actor FROM audit_log WHERE action = 'organization.deleted' ORDER BY seq DESC LIMIT 1")
      .toArray()[0];
    try {
      const answer = await this.env.WEBHOOKS.get(this.env.WEBHOOKS.idFromName(org.id)).deleteAll(
        org.id,
        actor === undefined ? { type: "system" } : (JSON.parse(actor.actor) as Actor),
        Date.parse(org.deleted_at),
      );
      if (!answer.applied) throw new Error("an endpoint's object does not have its configuration's deletion yet");
      this.sql.exec("UPDATE organization SET webhooks_deleted = ?", answer.deleted);
      return 0;
    } catch (err) {
      log.warn("deleted organization's webhooks not yet deleted everywhere; will retry", {
        organization: org.id,
        detail: describeError(err),
      });
      return 1;
    }
  }

  /** Whether a deleted organization's webhook configurations are still to be deleted everywhere. */
  webhooksPending(): boolean {
    const org = this.org();
    return org.deleted_at !== null && org.webhooks_deleted === null;
  }

  /** Sets the alarm for `at` unless it is already set to go off sooner. */
  schedule(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.storage.setAlarm(at);
  }
}
