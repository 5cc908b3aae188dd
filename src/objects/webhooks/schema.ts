/**
 * The organization's WebhookObject tables (objects/webhooks/object.ts) and their rows: the
 * configurations (the record each endpoint's object holds a copy of), events, Idempotency-Keys,
 * the fan-out (one row per delivery until its endpoint's object has it: the outbox), tombstones of
 * deleted configurations (their deliveries are found through them), the audit outbox and the hourly
 * publish summaries.
 *
 * Version 1 is the first layout (everything in this object); it is never edited. Version 2 moves
 * its deliveries aside as `legacy_*` tables, which the object then hands to the endpoints' objects
 * (legacy.ts) before it serves anything; version 3 drops them once they are empty, so an upgraded
 * object ends with exactly the schema of a new one.
 */
import type { Migration } from "../sql";

/** Version 1 as it shipped (frozen: the migration test replays it). */
const V1: Migration = {
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
    "CREATE INDEX deliveries_open ON deliveries (next_attempt_ms) WHERE status IN ('pending', 'retrying')",
    `CREATE TABLE attempts (delivery_id TEXT NOT NULL, number INTEGER NOT NULL, series INTEGER NOT NULL, at TEXT NOT NULL,
        step TEXT NOT NULL, http_status INTEGER, latency_ms INTEGER NOT NULL, outcome TEXT NOT NULL, error TEXT,
        PRIMARY KEY (delivery_id, number))`,
    "CREATE TABLE audit_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL)",
  ],
};

/** Version 2: a Durable Object per endpoint (issue 20); what was per endpoint moves aside until it is handed over. */
const V2: Migration = {
  version: 2,
  statements: [
    // What the events' rows hold, counted as they are written and deleted (limits.ts STORAGE_BUDGET_BYTES).
    "ALTER TABLE meta ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE configurations ADD COLUMN ordered INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE configurations ADD COLUMN rate_limit INTEGER",
    // The version at which `status` last changed (a disable decided on an older one yields to a re-enable).
    "ALTER TABLE configurations ADD COLUMN status_version INTEGER NOT NULL DEFAULT 1",
    // The version at which `url` last changed (a 410 yields to a url edited after its attempt's version).
    "ALTER TABLE configurations ADD COLUMN url_version INTEGER NOT NULL DEFAULT 1",
    // The version the endpoint's object has acknowledged.
    "ALTER TABLE configurations ADD COLUMN synced_version INTEGER NOT NULL DEFAULT 0",
    // Kept for as long as the deliveries of the deleted configuration (they are found by it); `acked` once its endpoint knows.
    `CREATE TABLE deleted_configurations (id TEXT PRIMARY KEY, version INTEGER NOT NULL, record TEXT NOT NULL, deleted_ms INTEGER NOT NULL,
        acked INTEGER NOT NULL DEFAULT 0)`,
    // Events keep their body only until every endpoint has its copy; `actor` is the publish's audit record.
    "ALTER TABLE events RENAME TO legacy_events",
    "DROP INDEX events_by_time",
    `CREATE TABLE events (id TEXT PRIMARY KEY, type TEXT NOT NULL, body TEXT, created_at TEXT NOT NULL, created_ms INTEGER NOT NULL,
        actor TEXT)`,
    "CREATE INDEX events_by_created ON events (created_ms)",
    "INSERT INTO events (id, type, body, created_at, created_ms) SELECT id, type, NULL, created_at, created_ms FROM legacy_events",
    "UPDATE meta SET stored_bytes = (SELECT count(*) FROM events) * 250",
    "ALTER TABLE deliveries RENAME TO legacy_deliveries",
    "DROP INDEX deliveries_by_event",
    "DROP INDEX deliveries_open",
    "ALTER TABLE attempts RENAME TO legacy_attempts",
    `CREATE TABLE fanout (seq INTEGER PRIMARY KEY AUTOINCREMENT, delivery_id TEXT NOT NULL UNIQUE, event_id TEXT NOT NULL,
        configuration_id TEXT NOT NULL, created_ms INTEGER NOT NULL, handed INTEGER NOT NULL DEFAULT 0)`,
    "CREATE INDEX fanout_owed ON fanout (configuration_id, seq) WHERE handed = 0",
    "CREATE INDEX fanout_by_event ON fanout (event_id)",
    "CREATE INDEX fanout_by_created ON fanout (created_ms)",
    // New rows are the outbox, deleted once their endpoint has the delivery (a delivery id names its
    // endpoint). The moved deliveries' rows stay, handed, as their order and their index by id.
    `INSERT INTO fanout (delivery_id, event_id, configuration_id, created_ms, handed)
        SELECT d.id, d.event_id, d.configuration_id, coalesce(e.created_ms, 0), 1
        FROM legacy_deliveries d LEFT JOIN legacy_events e ON e.id = d.event_id ORDER BY d.rowid`,
    "CREATE INDEX idempotency_by_created ON idempotency_keys (created_ms)",
    // The publish's answer, which a replay repeats.
    "ALTER TABLE idempotency_keys ADD COLUMN answer TEXT",
    `CREATE TABLE publish_summary (hour INTEGER NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, count INTEGER NOT NULL,
        pushed INTEGER NOT NULL DEFAULT 0, first_event TEXT NOT NULL, last_event TEXT NOT NULL, first_at TEXT NOT NULL,
        last_at TEXT NOT NULL, types TEXT NOT NULL, PRIMARY KEY (hour, actor, action))`,
    "CREATE INDEX publish_summary_unpushed ON publish_summary (hour) WHERE pushed < count",
  ],
};

/** Version 3, applied once the legacy rows are handed over (legacy.ts): they and the per-endpoint columns go. */
const V3: Migration = {
  version: 3,
  statements: [
    "DROP TABLE legacy_attempts",
    "DROP TABLE legacy_deliveries",
    "DROP TABLE legacy_events",
    "ALTER TABLE configurations DROP COLUMN failing_since",
    "ALTER TABLE configurations DROP COLUMN last_delivered_ms",
  ],
};

/**
 * Version 4 (issue 29): the organization's deletion, recorded here when the organization's object
 * drives it (`deleteAll`): from then on this object answers every call as for an organization that
 * does not exist, and `deleted_count` is how many configurations the deletion removed.
 */
const V4: Migration = {
  version: 4,
  statements: ["ALTER TABLE meta ADD COLUMN deleted_ms INTEGER", "ALTER TABLE meta ADD COLUMN deleted_count INTEGER NOT NULL DEFAULT 0"],
};

/**
 * Version 5 (issue 30): what receivers are offered. The event-type catalog (each type's JSON
 * Schema for `data` and its examples, stored as saved: they are validated and bounded before they
 * are written, webhooks/event-schema.ts), the organization's webhook settings (whether a publish
 * of a type outside the catalog is refused; the origins that may frame the portal), and the
 * portal's single-use links and sessions, each stored as the SHA-256 of its secret, each with an
 * expiry pruned by time (docs/storage.md, "What expires").
 */
const V5: Migration = {
  version: 5,
  statements: [
    `CREATE TABLE event_types (name TEXT PRIMARY KEY, description TEXT, schema TEXT, examples TEXT NOT NULL,
        deprecated INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)`,
    "ALTER TABLE meta ADD COLUMN refuse_unknown_types INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE meta ADD COLUMN portal_frame_origins TEXT NOT NULL DEFAULT '[]'",
    `CREATE TABLE portal_links (hash TEXT PRIMARY KEY, configuration_id TEXT NOT NULL, created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL, used_ms INTEGER, created_by TEXT NOT NULL)`,
    "CREATE INDEX portal_links_by_expiry ON portal_links (expires_ms)",
    `CREATE TABLE portal_sessions (id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, configuration_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, ended_ms INTEGER, last_seen_ms INTEGER NOT NULL,
        created_by TEXT NOT NULL)`,
    "CREATE INDEX portal_sessions_by_expiry ON portal_sessions (expires_ms)",
    "CREATE INDEX portal_sessions_by_configuration ON portal_sessions (configuration_id, created_ms)",
  ],
};

/**
 * Version 6 (issue 31): how keyway authenticates at each receiver's token endpoint. `receiver_auth`
 * holds what spec 4.3's default request does not have (the method, scope, resource, audience, the
 * assertion's audience, the configuration's DPoP key, sealed); NULL is the default request, and
 * `client_secret` holds the JSON `null` for private_key_jwt. `assertion_keys` are the organization's
 * ES256 keys that sign private_key_jwt assertions (the private JWK sealed, the public one served at
 * `/v1/receiver-jwks/{org}`). A rotated-in key is published at once but signs only from
 * `activates_ms` (receivers' servers cache the JWKS, and some, node-oidc-provider among them, do
 * not fetch it again for an unknown kid); a rotated-out key stays published until `retires_ms`.
 */
const V6: Migration = {
  version: 6,
  statements: [
    "ALTER TABLE configurations ADD COLUMN receiver_auth TEXT",
    `CREATE TABLE assertion_keys (kid TEXT PRIMARY KEY, private_key TEXT NOT NULL, public_jwk TEXT NOT NULL, created_ms INTEGER NOT NULL,
        activates_ms INTEGER NOT NULL, retires_ms INTEGER)`,
  ],
};

/**
 * Version 7 (issue 42: a receiver holds its own endpoint and nothing else).
 * - `assertion_keys.config_id`: private_key_jwt keys are per configuration (published at
 *   `/v1/receiver-jwks/{org}/{configuration}`); NULL is the organization's key of issue 31, which
 *   keeps signing only for the configurations that used it before this version (marked
 *   `organization_key` in `receiver_auth`) until their operator rotates or changes whose identity
 *   they assert (docs/receiver-oauth.md, "Moving to the configuration's own key").
 * - `configurations.operations`: the organization's operations configurations, the only ones
 *   operational events reach. None is made one by the migration: a configuration that named an
 *   operational type may have been subscribed by its receiver through the portal, and portal
 *   links and sessions are pruned within hours, so no row tells which. Its names are kept, inert,
 *   until the organization sets `operations: true` (docs/deploy.md, the upgrade step).
 */
const V7: Migration = {
  version: 7,
  statements: [
    "ALTER TABLE assertion_keys ADD COLUMN config_id TEXT",
    "CREATE INDEX assertion_keys_by_config ON assertion_keys (config_id, activates_ms)",
    "ALTER TABLE configurations ADD COLUMN operations INTEGER NOT NULL DEFAULT 0",
    `UPDATE configurations SET receiver_auth = json_set(receiver_auth, '$.organization_key', json('true'))
        WHERE receiver_auth IS NOT NULL AND json_extract(receiver_auth, '$.auth_method') = 'private_key_jwt'`,
  ],
};

/**
 * Version 8 (issue 45): `delivery` ('polling', or NULL for push) and a polling configuration's read
 * credential (`polling`: JSON {token_hash, token_created_at}, the token's SHA-256 only). A polling
 * configuration's `url`, `token_url`, `client_id` and `client_secret` hold empty values (the
 * columns are NOT NULL since version 1).
 */
const V8: Migration = {
  version: 8,
  statements: ["ALTER TABLE configurations ADD COLUMN delivery TEXT", "ALTER TABLE configurations ADD COLUMN polling TEXT"],
};

/**
 * Version 9: the entries the edge has not been given yet (objects/lookup.ts) for what was stored
 * before they existed: polling configurations' read verifiers, private_key_jwt configurations' key
 * sets, and the organization's key set (id ''); published once by the object's next start
 * (object.ts `publishOwed`), then deleted from here.
 */
const V9: Migration = {
  version: 9,
  statements: [
    "CREATE TABLE derived_owed (id TEXT PRIMARY KEY)",
    "INSERT INTO derived_owed (id) SELECT id FROM configurations WHERE delivery = 'polling' OR receiver_auth LIKE '%private_key_jwt%'",
    "INSERT OR IGNORE INTO derived_owed (id) SELECT '' FROM assertion_keys WHERE config_id IS NULL LIMIT 1",
  ],
};

/**
 * Version 10: a configuration's payload filter (its JSON text, objects/webhooks/routing.ts) and
 * the channels it receives (JSON array), and the channels each event carried; NULL for none.
 */
const V10: Migration = {
  version: 10,
  statements: [
    "ALTER TABLE configurations ADD COLUMN filter TEXT",
    "ALTER TABLE configurations ADD COLUMN channels TEXT",
    "ALTER TABLE events ADD COLUMN channels TEXT",
  ],
};

/**
 * Version 11: the receiver's own narrowing (the portal): its payload filter's JSON text and the
 * channels it chose, applied after the organization's (routing.ts); NULL for none.
 */
const V11: Migration = {
  version: 11,
  statements: [
    "ALTER TABLE configurations ADD COLUMN receiver_filter TEXT",
    "ALTER TABLE configurations ADD COLUMN receiver_channels TEXT",
  ],
};

/**
 * Version 12: the portal's branding (objects/webhooks/event-types.ts, the webhook settings): the
 * name it shows and its accent colour (`#rrggbb`), NULL for none; and the logo's bytes, one row at
 * most, served by keyway to the organization's portal sessions (http/portal/routes.tsx).
 */
const V12: Migration = {
  version: 12,
  statements: [
    "ALTER TABLE meta ADD COLUMN portal_display_name TEXT",
    "ALTER TABLE meta ADD COLUMN portal_accent TEXT",
    `CREATE TABLE portal_logo (one INTEGER PRIMARY KEY CHECK (one = 1), content_type TEXT NOT NULL, bytes BLOB NOT NULL,
        sha256 TEXT NOT NULL, updated_at TEXT NOT NULL)`,
  ],
};

/** Applied in the constructor, before anything is served. */
export const MIGRATIONS_BEFORE_HANDOVER: Migration[] = [V1, V2];
/** Applied once the legacy rows have been handed over. */
export const MIGRATIONS: Migration[] = [V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12];

type Row = Record<string, SqlStorageValue>;

export interface ConfigRow extends Row {
  rowid: number;
  id: string;
  url: string;
  events: string | null;
  description: string | null;
  token_url: string;
  client_id: string;
  client_secret: string;
  token_cache: number;
  ordered: number;
  rate_limit: number | null;
  signing_secrets: string;
  status: "active" | "paused" | "disabled";
  disabled_reason: string | null;
  version: number;
  status_version: number;
  url_version: number;
  synced_version: number;
  /** Issue 31: ReceiverAuth JSON (configurations.ts); NULL for spec 4.3's default request. */
  receiver_auth: string | null;
  /** Issue 42: 1 for the organization's operations configurations (operational events go only there). */
  operations: number;
  /** Issue 45 (version 8): 'polling', or null for push; a polling configuration's credential JSON. */
  delivery: "polling" | null;
  polling: string | null;
  /** Version 10: the payload filter's JSON text, and the channels (JSON array) it receives; null for none. */
  filter: string | null;
  channels: string | null;
  /** Version 11: the receiver's own filter and channels (the portal), in the same forms; null for none. */
  receiver_filter: string | null;
  receiver_channels: string | null;
  created_at: string;
  updated_at: string;
}

export interface FanoutRow extends Row {
  seq: number;
  delivery_id: string;
  event_id: string;
  configuration_id: string;
  created_ms: number;
  handed: number;
}

/** The configuration's columns, without the legacy ones (version 1's health columns live in the endpoint now). */
export const CONFIG_COLUMNS =
  "rowid, id, url, events, description, token_url, client_id, client_secret, token_cache, ordered, rate_limit, signing_secrets, status, disabled_reason, version, status_version, url_version, synced_version, receiver_auth, operations, created_at, updated_at, delivery, polling, filter, channels, receiver_filter, receiver_channels";
