/**
 * An organization at a glance, for the manager's home (docs/manager.md, "The overview"): its API
 * traffic and the share refused over the last 24 hours, its webhook attempts and the share
 * failed, the endpoints that need a person (disabled, paused, failing), the keys near a limit
 * today, and the latest audit entries. Read from the systems of record, bounded: the first
 * OVERVIEW_KEYS active keys and OVERVIEW_CONFIGURATIONS configurations (the page says when there
 * are more), so one overview costs at most 2 + 2 × OVERVIEW_KEYS + 1 + 2 × OVERVIEW_CONFIGURATIONS
 * object calls (about 80), off the API's hot path. Which key is "near" and which endpoint needs
 * attention are pure rules of plain data (`nearLimits`, `needsAttention`), tested on their own.
 */
import type { Deps } from "../deps";
import { type Bucket, seriesOf } from "../lib/series";
import { endpointObject, reach } from "../objects/stubs";
import { QUOTA_UNITS } from "../ratelimit/quota";
import type { Decision } from "../ratelimit/windows";
import type { AuditEntryView } from "../schemas/audit";
import type { ApiKeyRecord } from "../schemas/records";
import type { WebhookConfiguration } from "../schemas/webhooks";
import { healthStatus, listWebhookConfigurations } from "../webhooks/configurations";
import { keyTraffic, keyUsage, listApiKeys } from "./api-keys";
import { auditLog } from "./audit";

/** Keys and configurations an overview reads (the first of each list). */
export const OVERVIEW_KEYS = 20;
export const OVERVIEW_CONFIGURATIONS = 20;
/** A window this full is "near its limit". */
export const NEAR_LIMIT_SHARE = 0.8;
/** Audit entries shown. */
export const OVERVIEW_AUDIT_ENTRIES = 5;

/** One limit of a key near its end: which window, how much of it is used. */
export interface NearLimit {
  keyId: string;
  keyName: string | null;
  window: string;
  used: number;
  limit: number;
}

/** An endpoint a person should look at, and why (the first that applies). */
export interface Attention {
  config: WebhookConfiguration;
  why: "disabled" | "paused" | "failing";
}

export interface OrganizationOverview {
  /** Null when the reader may not see API keys (an organization administrator). */
  requests: { hours: Bucket<"admitted" | "refused">[]; admitted: number; refused: number; keysRead: number; moreKeys: boolean } | null;
  attempts: {
    hours: Bucket<"succeeded" | "failed">[];
    succeeded: number;
    failed: number;
    configurationsRead: number;
    moreConfigurations: boolean;
  };
  attention: Attention[];
  nearLimits: NearLimit[] | null;
  audit: AuditEntryView[];
}

/** The windows of a key's usage at or past NEAR_LIMIT_SHARE: today's, its organization's quota, its credits. */
export function nearLimits(key: Pick<ApiKeyRecord, "id" | "name">, usage: Decision | null): NearLimit[] {
  if (usage === null) return [];
  const windows = [
    { window: "today", used: usage.day.used, limit: usage.day.limit },
    ...(usage.quota ?? []).map((q) => ({ window: `organization quota (per ${QUOTA_UNITS[q.name]})`, used: q.used, limit: q.limit })),
  ];
  return windows
    .filter((w) => w.limit > 0 && w.used >= NEAR_LIMIT_SHARE * w.limit)
    .map((w) => ({ keyId: key.id, keyName: key.name ?? null, ...w }));
}

/**
 * Why a configuration needs a person, or null: its health (webhooks/configurations.ts
 * `healthStatus`, the badge's rule) when not active; paused too while the organization's pause has
 * not reached its endpoint's object yet.
 */
export function needsAttention(w: WebhookConfiguration): Attention["why"] | null {
  const health = healthStatus(w);
  if (health === "active" && w.status === "paused") return "paused";
  return health === "active" ? null : health;
}

/** Buckets of the same hours added up (every series covers the same 24 hours, oldest first). */
function sum<K extends string>(series: Bucket<K>[][], keys: readonly K[], now: number): Bucket<K>[] {
  const empty = seriesOf<K>([], keys, now).hours;
  return empty.map((bucket, i) => {
    const out = { ...bucket };
    for (const s of series) for (const k of keys) (out as Record<K, number>)[k] += s[i]?.[k] ?? 0;
    return out;
  });
}

export async function organizationOverview(deps: Deps, orgId: string, withKeys: boolean): Promise<OrganizationOverview> {
  const now = deps.now();
  const [keys, configs, audit] = await Promise.all([
    withKeys ? listApiKeys(deps, orgId, { limit: OVERVIEW_KEYS }) : null,
    listWebhookConfigurations(deps, orgId, { limit: OVERVIEW_CONFIGURATIONS }),
    auditLog(deps, orgId, { limit: OVERVIEW_AUDIT_ENTRIES }),
  ]);
  const active = (keys?.items ?? []).filter((k) => k.revoked_at === null);
  const [usages, traffics, hourly] = await Promise.all([
    Promise.all(active.map((k) => keyUsage(deps, k))),
    Promise.all(active.map((k) => keyTraffic(deps, k))),
    Promise.all(configs.items.map((w) => reach("webhook endpoint", () => endpointObject(deps, w.id).hourly(now)))),
  ]);
  const attempts = hourly.map((rows) => seriesOf(rows, ["succeeded", "failed"] as const, now).hours);
  const attemptHours = sum(attempts, ["succeeded", "failed"] as const, now);
  const requestHours = sum(
    traffics.map((t) => t.hours),
    ["admitted", "refused"] as const,
    now,
  );
  const total = <K extends string>(hours: Bucket<K>[], k: K) => hours.reduce((n, h) => n + h[k], 0);
  return {
    requests:
      keys === null
        ? null
        : {
            hours: requestHours,
            admitted: total(requestHours, "admitted"),
            refused: total(requestHours, "refused"),
            keysRead: active.length,
            moreKeys: keys.next_cursor !== null,
          },
    attempts: {
      hours: attemptHours,
      succeeded: total(attemptHours, "succeeded"),
      failed: total(attemptHours, "failed"),
      configurationsRead: configs.items.length,
      moreConfigurations: configs.next_cursor !== null,
    },
    attention: configs.items.flatMap((config) => {
      const why = needsAttention(config);
      return why === null ? [] : [{ config, why }];
    }),
    nearLimits: keys === null ? null : active.flatMap((k, i) => nearLimits(k, usages[i] ?? null)),
    audit: audit.items,
  };
}
