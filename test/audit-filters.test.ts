/**
 * The audit log's filters (schemas/audit.ts AuditFilter; docs/api.md), in workerd: on random logs
 * and random filters (fast-check), every page the operator API serves, followed to its last
 * cursor, is exactly the unfiltered log narrowed by `auditMatches`, in the same order; the two
 * rules (the object's SQL, objects/org/audit.ts auditWhere, and the predicate the caller checks
 * each page with) are both production code, so each is held to the other. Each narrowing is
 * served by an index (EXPLAIN QUERY PLAN), a bad filter is a 400 naming its field, and a page from
 * an object that ignored the filter (the release before) never shows an excluded entry.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { auditMatches } from "../src/identity/audit";
import { auditWhere } from "../src/objects/org/audit";
import type { Page } from "../src/objects/sql";
import type { KeyedAuditEntry } from "../src/objects/webhooks/audit";
import type { AuditEntryView, AuditFilter } from "../src/schemas/audit";
import { admin, adminCall, body, createTenant, type Tenant } from "./helpers";

const orgStub = (orgId: string) => env.ORGS.get(env.ORGS.idFromName(orgId));

const ACTORS: KeyedAuditEntry["actor"][] = [
  { type: "operator" },
  { type: "system" },
  { type: "admin_token", id: "tok_a" },
  { type: "admin_token", id: "tok_b" },
  { type: "api_client", id: "kw_client_x", api_key_id: "key_1" },
  { type: "receiver", id: "ps_1", webhook_configuration_id: "whk_1" },
];
const ACTIONS = ["api_key.created", "api_key.revoked", "client_credential.revoked", "webhook_configuration.updated"];
const RESOURCES = [
  ["api_key", "key_1"],
  ["api_key", "key_2"],
  ["client_credential", "kw_client_x"],
  ["webhook_configuration", "whk_1"],
] as const;
const T0 = Date.parse("2026-11-01T00:00:00.000Z");
const HOUR = 3_600_000;

/** Every entry of the org's log matching `query`, following the cursor with pages of `limit`. */
async function everyPage(orgId: string, query: Record<string, string>, limit: number): Promise<AuditEntryView[]> {
  const found: AuditEntryView[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 200; pages++) {
    const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) });
    const res = await adminCall("GET", `/organizations/${orgId}/audit-log?${params}`);
    const json = await body<AuditEntryView[]>(res);
    expect(res.status, JSON.stringify(json)).toBe(200);
    found.push(...json.data);
    const next = (json as { _links?: { next?: { href: string } } })._links?.next?.href;
    if (next === undefined) return found;
    cursor = new URL(next).searchParams.get("cursor") ?? undefined;
  }
  throw new Error("more than 200 pages");
}

/** The same, asked of the organization's object directly (what the caller's check of each page does not see). */
async function objectPages(orgId: string, filter: AuditFilter, limit: number): Promise<AuditEntryView[]> {
  const found: AuditEntryView[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 200; pages++) {
    // A plain copy: fast-check's records have no prototype, which RPC does not serialize.
    const page = await orgStub(orgId).auditLog({ limit, ...(cursor ? { cursor } : {}) }, { ...filter });
    if (!page.ok) throw new Error(page.message);
    const { items, next_cursor } = (page as unknown as { value: Page<AuditEntryView> }).value;
    found.push(...items);
    if (next_cursor === null) return found;
    cursor = next_cursor;
  }
  throw new Error("more than 200 pages");
}

const queryOf = (f: AuditFilter): Record<string, string> =>
  Object.fromEntries(Object.entries(f).filter((e): e is [string, string] => typeof e[1] === "string"));

describe("the audit log's filters", () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await createTenant();
  });

  it("serve exactly the log narrowed by auditMatches, page after page, newest first, for random logs and filters", async () => {
    const entry = fc.record({
      actor: fc.constantFrom(...ACTORS),
      action: fc.constantFrom(...ACTIONS),
      resource: fc.constantFrom(...RESOURCES),
      // Few hours, on the hour as the bounds are: entries at a bound tell >= from > and < from <=.
      hour: fc.integer({ min: 0, max: 7 }),
    });
    const narrowings = {
      actor: fc.constantFrom(...new Set(ACTORS.map((a) => a.type))),
      actor_id: fc.constantFrom("tok_a", "tok_b", "kw_client_x", "ps_1", "nobody"),
      action: fc.constantFrom(...ACTIONS),
      resource_type: fc.constantFrom(...new Set(RESOURCES.map(([type]) => type))),
      resource_id: fc.constantFrom(...RESOURCES.map(([, id]) => id)),
      since: fc.integer({ min: 0, max: 7 }).map((h) => new Date(T0 + h * HOUR).toISOString()),
      until: fc.integer({ min: 1, max: 8 }).map((h) => new Date(T0 + h * HOUR).toISOString()),
    };
    // None, one or two narrowings at once: more would mostly select nothing.
    const filter = fc
      .subarray(Object.keys(narrowings) as (keyof typeof narrowings)[], { maxLength: 2 })
      .chain((keys) => fc.record(Object.fromEntries(keys.map((k) => [k, narrowings[k]])) as typeof narrowings))
      .map((f) => f as AuditFilter);
    // Which narrowings took part in a run that kept some entries and excluded others.
    const reached = new Set<string>();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { minLength: 1, maxLength: 25 }),
        filter,
        fc.integer({ min: 1, max: 9 }),
        async (entries, f, limit) => {
          if (f.since !== undefined && f.until !== undefined && Date.parse(f.since) >= Date.parse(f.until)) return;
          // A log of its own: a fresh organization per run, its entries appended as the webhook objects push them.
          const org = await admin<{ id: string }>("POST", "/organizations", { name: `Audit ${run++}` });
          await orgStub(org.id).appendAudit(
            entries.map((e, i) => ({
              key: `k${i}`,
              at: new Date(T0 + e.hour * HOUR).toISOString(),
              actor: e.actor,
              action: e.action,
              resource_type: e.resource[0],
              resource_id: e.resource[1],
              detail: null,
            })),
          );
          const all = await everyPage(org.id, {}, 100);
          const kept = all.filter((e) => auditMatches(e, f));
          expect(await everyPage(org.id, queryOf(f), limit)).toEqual(kept);
          // The object's SQL alone, without the caller's check of each page, is exact too.
          expect(await objectPages(org.id, f, limit)).toEqual(kept);
          if (kept.length > 0 && kept.length < all.length) for (const key of Object.keys(f)) reached.add(key);
        },
      ),
      {
        numRuns: 60,
        // One run per narrowing that keeps some entries and excludes others, whatever the seed:
        // the random runs then add the combinations and the bounds.
        examples: (() => {
          const two = [
            { actor: ACTORS[2] as KeyedAuditEntry["actor"], action: ACTIONS[0] as string, resource: RESOURCES[0], hour: 1 },
            { actor: ACTORS[4] as KeyedAuditEntry["actor"], action: ACTIONS[2] as string, resource: RESOURCES[2], hour: 5 },
            // On the time bounds below: kept by since, excluded by until.
            { actor: ACTORS[1] as KeyedAuditEntry["actor"], action: ACTIONS[1] as string, resource: RESOURCES[1], hour: 3 },
          ];
          const at3 = new Date(T0 + 3 * HOUR).toISOString();
          const filters: AuditFilter[] = [
            { actor: "admin_token" },
            { actor_id: "tok_a" },
            { action: ACTIONS[0] },
            { resource_type: "api_key" },
            { resource_id: "key_1" },
            { since: at3 },
            { until: at3 },
          ];
          return filters.map((f): [typeof two, AuditFilter, number] => [two, f, 1]);
        })(),
      },
    );
    expect([...reached].sort()).toEqual(["action", "actor", "actor_id", "resource_id", "resource_type", "since", "until"]);
  });

  it("serves each narrowing by who, what or which resource through an index of the log, and a time range along the log's order", async () => {
    const filters: AuditFilter[] = [
      { actor: "admin_token" },
      { actor_id: "tok_a" },
      { action: "api_key.created" },
      { resource_type: "api_key" },
      { resource_id: "key_1" },
      { since: "2026-11-01T00:00:00.000Z" },
      { until: "2026-11-01T00:00:00.000Z" },
    ];
    const plans = await runInDurableObject(orgStub(t.orgId), (_instance, state) =>
      filters.map((f) => {
        const where = auditWhere(f);
        return state.storage.sql
          .exec<{ detail: string }>(
            `EXPLAIN QUERY PLAN SELECT seq AS rowid, * FROM audit_log WHERE seq < ?${where.clause} ORDER BY seq DESC LIMIT ?`,
            Number.MAX_SAFE_INTEGER,
            ...where.params,
            10,
          )
          .toArray()
          .map((r) => r.detail)
          .join("; ");
      }),
    );
    // A time range alone walks the log newest first by its key (the order pages are served in):
    // what it reads is the entries after `until` and the page, never a sort of the whole log.
    expect(plans.slice(-2)).toEqual([
      "SEARCH audit_log USING INTEGER PRIMARY KEY (rowid<?)",
      "SEARCH audit_log USING INTEGER PRIMARY KEY (rowid<?)",
    ]);
    for (const [i, plan] of plans.slice(0, -2).entries())
      expect(plan, JSON.stringify(filters[i])).toMatch(/USING INDEX audit_log_by_\w+ \(.*seq<\?\)/);
  });

  it("answers a bad filter with 400 naming the field", async () => {
    for (const [query, field] of [
      ["actor=someone", "actor"],
      ["action=DROP%20TABLE", "action"],
      ["resource_id=a%20b", "resource_id"],
      ["since=yesterday", "since"],
      ["since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", "until"],
    ] as const) {
      const res = await adminCall("GET", `/organizations/${t.orgId}/audit-log?${query}`);
      const json = (await res.json()) as { developer_message: string };
      expect(res.status, query).toBe(400);
      expect(json.developer_message, query).toContain(field);
    }
  });

  it("never shows an entry the filter excludes, even from an object that ignores it", () => {
    const entries: AuditEntryView[] = ACTIONS.map((action, i) => ({
      id: String(i),
      at: new Date(T0 + i * HOUR).toISOString(),
      actor: { type: "operator" },
      action,
      resource: { type: "api_key", id: "key_1" },
      detail: null,
    }));
    expect(entries.filter((e) => auditMatches(e, { action: "api_key.revoked" })).map((e) => e.action)).toEqual(["api_key.revoked"]);
    expect(entries.filter((e) => auditMatches(e, { until: new Date(T0 + HOUR).toISOString() }))).toHaveLength(1);
  });
});
