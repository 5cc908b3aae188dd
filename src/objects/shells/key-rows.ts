/**
 * The KeyObject's rows (docs/storage.md, "KeyObject"): its migrations, and how the admission state
 * is written to and read from them. The shell (shells/key.ts) is the only writer; the rows are
 * the same whichever host runs it.
 */
import type { AdmissionState, Holding, KeyCopy, KeyCreditsState, Owed } from "../../ratelimit/admission";
import type { CreditsRefill } from "../../ratelimit/credits";
import { type Lease, NO_LEASE, type Paid } from "../../ratelimit/lease";
import type { Baseline, Migration } from "../sql";
import type { Sql } from "./storage";

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE key (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, organization_id TEXT NOT NULL,
        status TEXT NOT NULL, per_second INTEGER, per_day INTEGER, version INTEGER NOT NULL, revision INTEGER NOT NULL)`,
      `CREATE TABLE windows (one INTEGER PRIMARY KEY CHECK (one = 1), second INTEGER NOT NULL, second_count INTEGER NOT NULL,
        day INTEGER NOT NULL, day_count INTEGER NOT NULL)`,
      "CREATE TABLE revoked_clients (client_id TEXT PRIMARY KEY, revision INTEGER NOT NULL)",
      "CREATE TABLE uses (subject TEXT PRIMARY KEY, at INTEGER NOT NULL, flushed_at INTEGER NOT NULL DEFAULT 0)",
    ],
  },
  {
    // Issue 21: credentials whose facts changed, access tokens revoked one by one, DPoP proofs seen.
    version: 2,
    statements: [
      "CREATE TABLE changed_clients (client_id TEXT PRIMARY KEY, version INTEGER NOT NULL)",
      "CREATE TABLE revoked_tokens (token_id TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)",
      "CREATE TABLE proof_jtis (jti TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL) WITHOUT ROWID",
    ],
  },
  {
    // Issue 23: requests admitted and refused by the limits, per hour, for the traffic charts.
    version: 3,
    statements: [
      "CREATE TABLE traffic (hour_ms INTEGER PRIMARY KEY, admitted INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0)",
    ],
  },
  {
    // Issue 24: the organization's shared quota (OrgQuota JSON) and the key's credits.
    version: 4,
    statements: [
      "ALTER TABLE key ADD COLUMN quota TEXT",
      `CREATE TABLE credits (one INTEGER PRIMARY KEY CHECK (one = 1), remaining INTEGER NOT NULL, epoch INTEGER NOT NULL,
        added INTEGER NOT NULL, refill TEXT, next_refill_ms INTEGER)`,
    ],
  },
  {
    // Issue 29: what expires is pruned by time through these indexes; the secrets a rotated key answers to.
    version: 5,
    statements: [
      "CREATE INDEX proof_jtis_by_expiry ON proof_jtis (expires_ms)",
      "CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_ms)",
      "ALTER TABLE key ADD COLUMN secret_hash TEXT",
      "ALTER TABLE key ADD COLUMN previous_hash TEXT",
      "ALTER TABLE key ADD COLUMN previous_until_ms INTEGER",
    ],
  },
  {
    // Issue 33: the current hour's traffic counts live in the windows row (one row per request).
    version: 6,
    statements: [
      "ALTER TABLE windows ADD COLUMN hour_ms INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE windows ADD COLUMN hour_admitted INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE windows ADD COLUMN hour_refused INTEGER NOT NULL DEFAULT 0",
    ],
  },
  {
    // Issue 33: a shard of a key past one object's capacity knows its home object and its index.
    version: 7,
    statements: ["ALTER TABLE key ADD COLUMN shard_home TEXT", "ALTER TABLE key ADD COLUMN shard_index INTEGER"],
  },
  {
    // Issue 41: the slices held and what is owed back live in the windows row (still one row per
    // request), so a restart returns them instead of losing them; a home's high-water mark of
    // shards (NULL for a copy older than this: erasure then reaches MAX_SHARDS); DPoP proof ids
    // moved to the ProofObjects (objects/proofs.ts).
    version: 8,
    statements: [
      "ALTER TABLE windows ADD COLUMN slice TEXT",
      "ALTER TABLE windows ADD COLUMN quota_slice TEXT",
      "ALTER TABLE key ADD COLUMN shard_high INTEGER",
      "DROP TABLE proof_jtis",
    ],
  },
];

/**
 * What MIGRATIONS leave, for a new KeyObject (`Baseline`, objects/sql.ts): a key's shards are
 * made by the thousand, and this is 10 statements where the history is 24. Held equal to the
 * history by test/unit/schema-baselines.test.ts; a new migration updates it in the same change.
 */
export const BASELINE: Baseline = {
  version: 8,
  statements: [
    `CREATE TABLE key (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, organization_id TEXT NOT NULL,
    status TEXT NOT NULL, per_second INTEGER, per_day INTEGER, version INTEGER NOT NULL, revision INTEGER NOT NULL, quota TEXT, secret_hash TEXT, previous_hash TEXT, previous_until_ms INTEGER, shard_home TEXT, shard_index INTEGER, shard_high INTEGER)`,
    `CREATE TABLE windows (one INTEGER PRIMARY KEY CHECK (one = 1), second INTEGER NOT NULL, second_count INTEGER NOT NULL,
    day INTEGER NOT NULL, day_count INTEGER NOT NULL, hour_ms INTEGER NOT NULL DEFAULT 0, hour_admitted INTEGER NOT NULL DEFAULT 0, hour_refused INTEGER NOT NULL DEFAULT 0, slice TEXT, quota_slice TEXT)`,
    "CREATE TABLE revoked_clients (client_id TEXT PRIMARY KEY, revision INTEGER NOT NULL)",
    "CREATE TABLE uses (subject TEXT PRIMARY KEY, at INTEGER NOT NULL, flushed_at INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE changed_clients (client_id TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    "CREATE TABLE revoked_tokens (token_id TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)",
    "CREATE TABLE traffic (hour_ms INTEGER PRIMARY KEY, admitted INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0)",
    `CREATE TABLE credits (one INTEGER PRIMARY KEY CHECK (one = 1), remaining INTEGER NOT NULL, epoch INTEGER NOT NULL,
    added INTEGER NOT NULL, refill TEXT, next_refill_ms INTEGER)`,
    "CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_ms)",
  ],
};

export interface TrafficRow extends Record<string, SqlStorageValue> {
  hour_ms: number;
  admitted: number;
  refused: number;
}

export type KeyRow = KeyCopy & Record<string, SqlStorageValue>;

/** The key row as the core reads it: the copy's columns; the quota column goes to the state apart. */
export const keyCopyOf = ({ quota: _quota, ...copy }: KeyRow & { quota: string | null }): KeyCopy => copy;

export const KEY_COLUMNS =
  "id, organization_id, status, per_second, per_day, version, revision, secret_hash, previous_hash, previous_until_ms, shard_home, shard_index, shard_high";

export interface WindowsRow extends Record<string, SqlStorageValue> {
  second: number;
  second_count: number;
  day: number;
  day_count: number;
  hour_ms: number;
  hour_admitted: number;
  hour_refused: number;
  slice: string | null;
  quota_slice: string | null;
}

/**
 * The one row a request writes: the windows, the current hour's traffic counts, and the slices held
 * and owed back. An upsert updates it in place (REPLACE would delete and re-insert it).
 */
export function writeWindows(sql: Sql, s: AdmissionState): void {
  sql.exec(
    `INSERT INTO windows (one, second, second_count, day, day_count, hour_ms, hour_admitted, hour_refused, slice, quota_slice)
     VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
     ON CONFLICT (one) DO UPDATE SET second = ?1, second_count = ?2, day = ?3, day_count = ?4,
       hour_ms = ?5, hour_admitted = ?6, hour_refused = ?7, slice = ?8, quota_slice = ?9`,
    s.windows.second,
    s.windows.secondCount,
    s.windows.day,
    s.windows.dayCount,
    s.hourly.hour,
    s.hourly.admitted,
    s.hourly.refused,
    encodeHolding(s.slice),
    encodeHolding(s.quotaSlice),
  );
}

export function writeCredits(sql: Sql, credits: KeyCreditsState): void {
  sql.exec(
    `INSERT INTO credits (one, remaining, epoch, added, refill, next_refill_ms) VALUES (1, ?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (one) DO UPDATE SET remaining = ?1, epoch = ?2, added = ?3, refill = ?4, next_refill_ms = ?5`,
    credits.remaining,
    credits.epoch,
    credits.added,
    credits.refill === null ? null : JSON.stringify(credits.refill),
    credits.nextRefillMs,
  );
}

/**
 * A slice held and what is owed back, as the windows row stores them: numbers joined by commas,
 * the lease first and each entry owed after a semicolon (no JSON on a shard's every request);
 * null when there is neither.
 */
export function encodeHolding(h: Holding<unknown>): string | null {
  const l = h.lease;
  if (l.remaining === 0 && h.owed.length === 0) return null;
  const paid = (p: Paid) => `${p.day},${p.quotaDay},${p.month},${p.epoch ?? ""},${p.period ?? ""}`;
  const owed = h.owed.map((o) => `;${o.amount},${paid(o.paid)}`).join("");
  return `${l.second},${l.remaining},${l.admitted},${l.previous},${paid(l.paid)}${owed}`;
}

export function decodeHolding(text: string | null): { lease: Lease; owed: Owed[] } {
  if (text === null) return { lease: NO_LEASE, owed: [] };
  const [leaseText, ...owedTexts] = text.split(";");
  const num = (v: string | undefined) => (v === undefined || v === "" ? null : Number(v));
  const paid = (f: (string | undefined)[]): Paid => ({
    day: num(f[0]) ?? 0,
    quotaDay: num(f[1]) ?? 0,
    month: num(f[2]) ?? 0,
    epoch: num(f[3]),
    period: num(f[4]),
  });
  const l = (leaseText ?? "").split(",");
  const lease: Lease = {
    second: num(l[0]) ?? 0,
    remaining: num(l[1]) ?? 0,
    admitted: num(l[2]) ?? 0,
    previous: num(l[3]) ?? 0,
    paid: paid(l.slice(4)),
  };
  const owed = owedTexts.map((t) => {
    const o = t.split(",");
    return { amount: num(o[0]) ?? 0, paid: paid(o.slice(1)) };
  });
  return { lease, owed };
}

/** The key's credits row, or null when it has none. */
export function readCredits(sql: Sql): KeyCreditsState | null {
  const c = sql
    .exec<{ remaining: number; epoch: number; added: number; refill: string | null; next_refill_ms: number | null }>(
      "SELECT * FROM credits",
    )
    .toArray()[0];
  return c
    ? {
        remaining: c.remaining,
        epoch: c.epoch,
        added: c.added,
        refill: c.refill === null ? null : (JSON.parse(c.refill) as CreditsRefill),
        nextRefillMs: c.next_refill_ms,
      }
    : null;
}
