/**
 * The event-type catalog in the organization's WebhookObject (issue 30; product brief, "Webhook
 * receivers' way in"): each type's description, JSON Schema for `data` (draft 2020-12), examples
 * and `deprecated` flag, and the organization's webhook settings. Every change is one transaction
 * with its audit entry. A schema is checked (bounded size and depth, local `$ref` only, no pattern
 * that can backtrack without end: lib/json-schema.ts) and each example validated against it before
 * anything is written; a publish of a type with a schema validates its `data` here, in the
 * publish's one call, against a validator compiled once per schema version and kept in memory.
 * keyway's own operational types are in every catalog and cannot be written.
 */

import { checkLogo, type LogoType } from "../../lib/images";
import { type CompiledSchema, checkExamples, checkSchema, compileSchema, pointerSegments } from "../../lib/json-schema";
import { isoTime } from "../../lib/time";
import { OPERATIONAL_SCHEMAS } from "../../schemas/operational";
import {
  type CreateEventTypeInput,
  type EventTypeView,
  OPERATIONAL_EVENT_TYPES,
  type PortalLogoView,
  RESERVED_EVENT_PREFIX,
  type UpdateEventTypeInput,
  type UpdateWebhookSettingsInput,
  type WebhookSettingsView,
} from "../../schemas/receivers";
import type { Db } from "../db";
import { fail, invalid, missing, ok, type Result } from "../sql";
import type { Audit } from "./configurations";
import { filtersBrokenBy } from "./routing";

/** Types an organization may define: a catalog is read whole (the OpenAPI document), so it is bounded. */
export const MAX_EVENT_TYPES = 250;
/** A type's examples, serialized together (the schema has its own bound, lib/json-schema.ts). */
export const MAX_EXAMPLES_BYTES = 64 * 1024;

interface EventTypeRow extends Record<string, SqlStorageValue> {
  name: string;
  description: string | null;
  schema: string | null;
  examples: string;
  deprecated: number;
  created_ms: number;
  updated_ms: number;
}

const isOperational = (name: string): boolean => (OPERATIONAL_EVENT_TYPES as readonly string[]).includes(name);

/** The operational types, as every catalog lists them (their schemas are keyway's: webhooks/catalog.ts). */
function operationalViews(): EventTypeView[] {
  return OPERATIONAL_EVENT_TYPES.map((name) => {
    const entry = OPERATIONAL_SCHEMAS[name];
    return {
      name,
      description: entry.description,
      schema: entry.schema,
      examples: [entry.example],
      deprecated: false,
      operational: true,
      created_at: isoTime(0),
      updated_at: isoTime(0),
    };
  });
}

function view(row: EventTypeRow): EventTypeView {
  return {
    name: row.name,
    description: row.description,
    schema: row.schema === null ? null : (JSON.parse(row.schema) as Record<string, unknown>),
    examples: JSON.parse(row.examples) as unknown[],
    deprecated: row.deprecated === 1,
    operational: false,
    created_at: isoTime(row.created_ms),
    updated_at: isoTime(row.updated_ms),
  };
}

const row = (db: Db, name: string): EventTypeRow | undefined => db.first<EventTypeRow>("SELECT * FROM event_types WHERE name = ?", name);

/** A name keyway keeps for itself (its operational events and `webhook.test`). */
function reserved(name: string): Result<never> | null {
  return name.startsWith(RESERVED_EVENT_PREFIX)
    ? fail("conflict", `Event types starting with "${RESERVED_EVENT_PREFIX}" are keyway's own; choose another name.`)
    : null;
}

/**
 * The schema and its examples, checked as one (each example against the schema that will be
 * stored). `stored`: the schema is the one already saved, not re-checked (it was when saved; a
 * rule added since, such as unknown keywords refused, must not block a change of the examples or
 * the description), only the examples against it.
 */
function checked(schema: Record<string, unknown> | null, examples: unknown[], stored = false): Result<void> {
  const size = new TextEncoder().encode(JSON.stringify(examples)).byteLength;
  if (size > MAX_EXAMPLES_BYTES) return invalid(["examples"], ` are ${size} bytes serialized; at most ${MAX_EXAMPLES_BYTES} are kept`);
  if (schema !== null) {
    const problem = stored ? ({ ok: true } as const) : checkSchema(schema);
    if (!problem.ok) return invalid(["schema", ...pointerSegments(problem.path)], ` ${problem.message}`);
    const bad = checkExamples(schema, examples);
    if (!bad.ok) return invalid(["examples", ...pointerSegments(bad.path)], ` ${bad.message}`);
  }
  return ok(undefined);
}

export function createType(db: Db, input: CreateEventTypeInput, audit: Audit, now: number): Result<EventTypeView> {
  const refused = reserved(input.name);
  if (refused) return refused;
  if (row(db, input.name) !== undefined) return fail("conflict", `The event type ${input.name} already exists; change it with PATCH.`);
  if ((db.value<number>("SELECT count(*) AS n FROM event_types") ?? 0) >= MAX_EVENT_TYPES) {
    return fail("conflict", `The organization has ${MAX_EVENT_TYPES} event types, the most it may have; delete one first.`);
  }
  const schema = input.schema ?? null;
  const examples = input.examples ?? [];
  const check = checked(schema, examples);
  if (!check.ok) return check;
  db.txn(() => {
    db.run(
      "INSERT INTO event_types (name, description, schema, examples, deprecated, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
      input.name,
      input.description ?? null,
      schema === null ? null : JSON.stringify(schema),
      JSON.stringify(examples),
      input.deprecated ? 1 : 0,
      now,
      now,
    );
    audit({
      action: "event_type.created",
      resource_type: "event_type",
      resource_id: input.name,
      detail: { schema: schema !== null, examples: examples.length, deprecated: input.deprecated ?? false },
    });
  });
  return ok(view(row(db, input.name) as EventTypeRow));
}

export function getType(db: Db, name: string): Result<EventTypeView> {
  if (isOperational(name)) return ok(operationalViews().find((t) => t.name === name) as EventTypeView);
  const found = row(db, name);
  return found ? ok(view(found)) : missing("Event type");
}

/** The whole catalog, by name: the organization's types and keyway's operational ones. */
export function listTypes(db: Db): EventTypeView[] {
  const own = db.all<EventTypeRow>("SELECT * FROM event_types ORDER BY name").map(view);
  return [...own, ...operationalViews()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function updateType(db: Db, name: string, patch: UpdateEventTypeInput, audit: Audit, now: number): Result<EventTypeView> {
  if (isOperational(name)) return fail("conflict", `${name} is one of keyway's operational event types; it cannot be changed.`);
  const current = row(db, name);
  if (current === undefined) return missing("Event type");
  const schema =
    patch.schema === undefined ? (current.schema === null ? null : (JSON.parse(current.schema) as Record<string, unknown>)) : patch.schema;
  const examples = patch.examples ?? (JSON.parse(current.examples) as unknown[]);
  const check = checked(schema, examples, patch.schema === undefined);
  if (!check.ok) return check;
  if (patch.schema !== undefined) {
    const broken = filtersBrokenBy(db, { name, schema });
    if (broken.length > 0) return brokenFilters(broken, `The new schema of ${name}`);
  }
  const description = patch.description === undefined ? current.description : patch.description;
  const deprecated = patch.deprecated === undefined ? current.deprecated : patch.deprecated ? 1 : 0;
  db.txn(() => {
    db.run(
      "UPDATE event_types SET description = ?, schema = ?, examples = ?, deprecated = ?, updated_ms = ? WHERE name = ?",
      description,
      schema === null ? null : JSON.stringify(schema),
      JSON.stringify(examples),
      deprecated,
      // Strictly increasing: a compiled validator is kept by (name, updated_ms).
      Math.max(now, current.updated_ms + 1),
      name,
    );
    audit({
      action: "event_type.updated",
      resource_type: "event_type",
      resource_id: name,
      detail: { fields: Object.keys(patch).sort(), schema: schema !== null, deprecated: deprecated === 1 },
    });
  });
  return ok(view(row(db, name) as EventTypeRow));
}

/** A catalog change refused for the live filters it would leave matching nothing (at most 5 named). */
function brokenFilters(broken: string[], what: string): Result<never> {
  const named = broken.slice(0, 5).join("; ");
  return fail(
    "conflict",
    `${what} would leave ${broken.length} webhook configuration filter${broken.length === 1 ? "" : "s"} matching nothing (${named}${broken.length > 5 ? "; ..." : ""}); change or remove ${broken.length === 1 ? "that filter" : "those filters"} first.`,
  );
}

export function deleteType(db: Db, name: string, audit: Audit): Result<EventTypeView> {
  if (isOperational(name)) return fail("conflict", `${name} is one of keyway's operational event types; it cannot be deleted.`);
  const current = row(db, name);
  if (current === undefined) return missing("Event type");
  const broken = filtersBrokenBy(db, { name, deleted: true });
  if (broken.length > 0) return brokenFilters(broken, `Deleting ${name}`);
  db.txn(() => {
    db.run("DELETE FROM event_types WHERE name = ?", name);
    audit({ action: "event_type.deleted", resource_type: "event_type", resource_id: name, detail: null });
  });
  return ok(view(current));
}

/**
 * A settings change as the object takes it: a logo URL has become its fetched bytes
 * (webhooks/event-types.ts), or an upload's (the manager); null removes the logo. The bytes are
 * checked here (lib/images.ts): their type is what their magic bytes say, whatever was sent.
 */
export type SettingsPatch = Omit<UpdateWebhookSettingsInput, "portal_logo_url"> & { portal_logo?: Uint8Array | null };

interface LogoRow extends Record<string, SqlStorageValue> {
  content_type: LogoType;
  sha256: string;
  size: number;
  updated_at: string;
}

function logoView(db: Db): PortalLogoView | null {
  const row = db.first<LogoRow>("SELECT content_type, sha256, length(bytes) AS size, updated_at FROM portal_logo");
  return row === undefined
    ? null
    : { sha256: row.sha256, content_type: row.content_type, size_bytes: row.size, updated_at: row.updated_at };
}

export function settings(db: Db): WebhookSettingsView {
  const meta = db.first<{
    refuse_unknown_types: number;
    portal_frame_origins: string;
    portal_display_name: string | null;
    portal_accent: string | null;
  }>("SELECT refuse_unknown_types, portal_frame_origins, portal_display_name, portal_accent FROM meta");
  return {
    refuse_unknown_event_types: meta?.refuse_unknown_types === 1,
    portal_frame_origins: meta === undefined ? [] : (JSON.parse(meta.portal_frame_origins) as string[]),
    portal_display_name: meta?.portal_display_name ?? null,
    portal_accent_color: meta?.portal_accent ?? null,
    portal_logo: logoView(db),
  };
}

/** What the portal shows of the organization on every page (in the session's one call: portal.ts `liveSession`). */
export interface PortalBranding {
  display_name: string | null;
  /** `#rrggbb` as set; the portal derives its AA palette from it (lib/contrast.ts). */
  accent: string | null;
  logo_sha256: string | null;
}

export function branding(db: Db): PortalBranding {
  const meta = db.first<{ portal_display_name: string | null; portal_accent: string | null }>(
    "SELECT portal_display_name, portal_accent FROM meta",
  );
  return {
    display_name: meta?.portal_display_name ?? null,
    accent: meta?.portal_accent ?? null,
    logo_sha256: db.value<string>("SELECT sha256 FROM portal_logo") ?? null,
  };
}

/** The stored logo's bytes when `sha256` is its hash (the portal's `/portal/logo/{sha256}`), else null. */
export function logoBytes(db: Db, sha256: string): { content_type: LogoType; bytes: ArrayBuffer } | null {
  const row = db.first<{ content_type: LogoType; bytes: ArrayBuffer }>(
    "SELECT content_type, bytes FROM portal_logo WHERE sha256 = ?",
    sha256,
  );
  return row ?? null;
}

/** Whether these bytes may be the logo, as the change's answer: a 400 naming `portal_logo_url` with why not. */
export function checkedLogo(bytes: Uint8Array): Result<LogoType> {
  const checked = checkLogo(bytes);
  return checked.ok ? ok(checked.contentType) : invalid(["portal_logo_url"], ` ${checked.reason}`);
}

/** `sha256`: the hex SHA-256 of `patch.portal_logo`, computed by the object (it names the portal's logo URL). */
export function updateSettings(
  db: Db,
  patch: SettingsPatch,
  sha256: string | null,
  audit: Audit,
  now: number,
): Result<WebhookSettingsView> {
  const bytes = patch.portal_logo;
  let logo: { content_type: LogoType; bytes: Uint8Array; sha256: string } | null | undefined = bytes === null ? null : undefined;
  if (bytes !== undefined && bytes !== null) {
    const type = checkedLogo(bytes);
    if (!type.ok) return type;
    if (sha256 === null) throw new Error("a logo's hash is needed");
    logo = { content_type: type.value, bytes, sha256 };
  }
  const current = settings(db);
  const next = {
    refuse_unknown_event_types: patch.refuse_unknown_event_types ?? current.refuse_unknown_event_types,
    portal_frame_origins: patch.portal_frame_origins ?? current.portal_frame_origins,
    portal_display_name: patch.portal_display_name === undefined ? current.portal_display_name : patch.portal_display_name,
    portal_accent_color:
      patch.portal_accent_color === undefined ? current.portal_accent_color : (patch.portal_accent_color?.toLowerCase() ?? null),
  };
  db.txn(() => {
    db.run(
      "UPDATE meta SET refuse_unknown_types = ?, portal_frame_origins = ?, portal_display_name = ?, portal_accent = ?",
      next.refuse_unknown_event_types ? 1 : 0,
      JSON.stringify(next.portal_frame_origins),
      next.portal_display_name,
      next.portal_accent_color,
    );
    if (logo === null) db.run("DELETE FROM portal_logo");
    if (logo !== undefined && logo !== null) {
      db.run(
        "INSERT OR REPLACE INTO portal_logo (one, content_type, bytes, sha256, updated_at) VALUES (1, ?, ?, ?, ?)",
        logo.content_type,
        logo.bytes.slice().buffer,
        logo.sha256,
        isoTime(now),
      );
    }
    // The logo by its hash and size only: never its bytes.
    const logoDetail =
      logo === undefined
        ? {}
        : {
            portal_logo: logo === null ? null : { sha256: logo.sha256, content_type: logo.content_type, size_bytes: logo.bytes.byteLength },
          };
    audit({
      action: "webhook_settings.updated",
      resource_type: "webhook_settings",
      resource_id: "webhooks",
      detail: { ...next, ...logoDetail },
    });
  });
  return ok(settings(db));
}

/**
 * What a publish of `type` must pass before anything is recorded: a client may not publish
 * keyway's own types; with the setting on, a type outside the catalog is refused; a type with a
 * schema has its `data` validated (400 naming the first failing path under `data`). The body is
 * parsed only for a type that has a schema.
 */
export class PublishCheck {
  private readonly compiled = new Map<string, { version: number; schema: CompiledSchema }>();

  check(db: Db, type: string, body: () => unknown, byKeyway: boolean): Result<void> {
    if (!byKeyway && type.startsWith(RESERVED_EVENT_PREFIX)) {
      return invalid(["type"], ` must not start with "${RESERVED_EVENT_PREFIX}": those event types are keyway's own`);
    }
    if (byKeyway) return ok(undefined);
    const found = db.first<{ schema: string | null; updated_ms: number }>(
      "SELECT schema, updated_ms FROM event_types WHERE name = ?",
      type,
    );
    if (found === undefined) {
      return settings(db).refuse_unknown_event_types
        ? invalid(["type"], ` is not in the organization's event catalog (unknown types are refused by its webhook settings)`)
        : ok(undefined);
    }
    if (found.schema === null) return ok(undefined);
    const schema = this.validator(type, found.updated_ms, found.schema);
    const answer = schema.validate(body());
    return answer.ok ? ok(undefined) : invalid(["data", ...pointerSegments(answer.path)], ` ${answer.message} (the schema of ${type})`);
  }

  private validator(type: string, version: number, text: string): CompiledSchema {
    const kept = this.compiled.get(type);
    if (kept !== undefined && kept.version === version) return kept.schema;
    const schema = compileSchema(JSON.parse(text) as Record<string, unknown>);
    // Bounded by MAX_EVENT_TYPES: one validator per type at most.
    this.compiled.set(type, { version, schema });
    return schema;
  }
}
