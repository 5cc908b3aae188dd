/**
 * Which of the organization's configurations an event goes to beyond its type (docs/receivers.md,
 * "Filters and channels"): the configuration's channels and its payload filter, decided in the
 * publish's one call before anything is recorded, so a filtered-out event costs no delivery row,
 * Queue message or attempt.
 *
 * - `filterRefusal` checks a filter when it is written (created, or its configuration's `events`
 *   changed): its shape and bounds (lib/event-filter.ts), then against the schemas of the types the
 *   configuration receives (lib/filter-schema.ts: its `events`, or every type of the catalog);
 *   refused with a 400 naming `filter` and the path.
 * - `Routing` keeps each configuration's filters compiled, per their stored text (a change compiles
 *   them again; at most two per configuration, MAX_WEBHOOK_CONFIGURATIONS of them), and answers
 *   `routes(row, event)`: both layers, the organization's and the receiver's.
 */
import { type CompiledFilter, compileFilter, type FilteredEvent, isNoFilter } from "../../lib/event-filter";
import { checkFilter, type FilteredType } from "../../lib/filter-schema";
import { OPERATIONAL_SCHEMAS } from "../../schemas/operational";
import { OPERATIONAL_EVENT_TYPES } from "../../schemas/receivers";
import type { Db } from "../db";
import { invalid, ok, type Result } from "../sql";
import { PREVIEW_SHOWN } from "./limits";
import type { ConfigRow } from "./schema";

/** A change of the catalog not yet written: a type's new schema (null: none), or its deletion. */
type CatalogChange = { name: string; schema: Record<string, unknown> | null } | { name: string; deleted: true };

/** The organization's catalog as the schema check reads it, with a change not yet written applied. */
function catalogOf(db: Db, change?: CatalogChange): FilteredType[] {
  return db
    .all<{ name: string; schema: string | null }>("SELECT name, schema FROM event_types")
    .map((t) => ({ name: t.name, schema: t.schema === null ? null : (JSON.parse(t.schema) as Record<string, unknown>) }))
    .filter((t) => change === undefined || t.name !== change.name)
    .concat(change === undefined || "deleted" in change ? [] : [{ name: change.name, schema: change.schema }]);
}

/** The types a configuration receiving `events` (null: every type) can be sent, with their schemas. */
function receivedTypes(catalog: FilteredType[], events: string[] | null, operations: boolean): FilteredType[] {
  const all: FilteredType[] = [
    ...catalog,
    ...(operations
      ? OPERATIONAL_EVENT_TYPES.map((name) => ({ name, schema: OPERATIONAL_SCHEMAS[name].schema as Record<string, unknown> }))
      : []),
  ];
  if (events === null) return all;
  // A named type outside the catalog (allowed unless the settings refuse them) has no schema.
  return events.map((name) => all.find((t) => t.name === name) ?? { name, schema: null });
}

/**
 * A configuration's two filters: the organization's (`filter`, with `channels`) and the receiver's
 * own (`receiver_filter`, with `receiver_channels`, written in the portal). An event goes to the
 * configuration only if it passes both layers, so the receiver narrows what the organization routes
 * to it and never widens it (the organization's routing may be what keeps its customers' events
 * apart).
 */
export type FilterColumn = "filter" | "receiver_filter";
const FILTER_COLUMNS: readonly FilterColumn[] = ["filter", "receiver_filter"];
const CHANNEL_COLUMNS = ["channels", "receiver_channels"] as const;

/**
 * The filter to store for a configuration (its JSON text, or null for none), or the 400 naming what
 * is wrong with it under `name`. `text` is the filter as the request gave it (serialized); `{}` and
 * null are none.
 */
export function filterRefusal(
  db: Db,
  text: string | null,
  events: string[] | null,
  operations: boolean,
  name: FilterColumn = "filter",
): Result<string | null> {
  if (text === null) return ok(null);
  const raw = JSON.parse(text) as unknown;
  if (isNoFilter(raw)) return ok(null);
  const compiled = compileFilter(raw);
  if (!compiled.ok) return invalid([name, ...compiled.path], ` ${compiled.message}`);
  const checked = checkFilter(compiled.value, receivedTypes(catalogOf(db), events, operations));
  if (!checked.ok) return invalid([name, ...checked.path], ` ${checked.message}`);
  return ok(text);
}

/**
 * The live filters a change of one type's schema (or its deletion) would leave matching nothing,
 * each as "configuration: filter.path what is wrong"; the change is refused while there are any
 * (docs/receivers.md, "Filters and channels"): change or remove those filters first.
 */
export function filtersBrokenBy(db: Db, change: CatalogChange): string[] {
  const rows = db.all<{ id: string; events: string | null; operations: number; filter: string | null; receiver_filter: string | null }>(
    "SELECT id, events, operations, filter, receiver_filter FROM configurations WHERE filter IS NOT NULL OR receiver_filter IS NOT NULL",
  );
  const broken: string[] = [];
  // The catalog read once, for every filter this change could break.
  const catalog = rows.length > 0 ? catalogOf(db, change) : [];
  for (const r of rows) {
    const events = r.events === null ? null : (JSON.parse(r.events) as string[]);
    if (events !== null && !events.includes(change.name)) continue;
    const types = receivedTypes(catalog, events, r.operations === 1);
    for (const name of FILTER_COLUMNS) {
      const text = r[name];
      if (text === null) continue;
      const compiled = compileFilter(JSON.parse(text) as unknown);
      if (!compiled.ok) continue;
      const checked = checkFilter(compiled.value, types);
      if (!checked.ok) broken.push(`${r.id}: ${name}.${checked.path.join(".")} ${checked.message}`);
    }
  }
  return broken;
}

/**
 * Whether a configuration takes an event of `type` at all, before its channels and filters. A
 * type it names (or every type, with `events` null); an operational event (`about`: the endpoint it
 * is about) only if it is one of the organization's operations configurations (issue 42) and not
 * the endpoint the event is about.
 */
export function takesType(c: Pick<ConfigRow, "id" | "events" | "operations">, type: string, about: string | undefined): boolean {
  if (about !== undefined && c.operations !== 1) return false;
  return c.events === null ? about === undefined : (JSON.parse(c.events) as string[]).includes(type) && c.id !== about;
}

/** The channels column: the names as stored (JSON), or null for every channel. */
export const channelsColumn = (channels: string[] | null | undefined): string | null =>
  channels === null || channels === undefined ? null : JSON.stringify([...new Set(channels)]);

/** What routing reads of a configuration's row (the columns may be absent on a row from before them). */
export type RoutedRow = Pick<ConfigRow, "id"> & Partial<Pick<ConfigRow, FilterColumn | (typeof CHANNEL_COLUMNS)[number]>>;

export class Routing {
  private readonly compiled = new Map<string, { text: string; filter: CompiledFilter }>();

  /**
   * Whether an event of the configuration's types goes to it: one of its channels (if it names
   * any) among the event's, and its filter matched. `data` is parsed once, for the first filter.
   */
  routes(row: RoutedRow, event: { type: string; channels: readonly string[]; data: () => unknown }): boolean {
    // A row read before version 10 (11) has neither column (undefined): none.
    for (const column of CHANNEL_COLUMNS) {
      const named = row[column];
      if (named == null) continue;
      const wanted = JSON.parse(named) as string[];
      if (!wanted.some((c) => event.channels.includes(c))) return false;
    }
    let seen: FilteredEvent | undefined;
    for (const column of FILTER_COLUMNS) {
      const filter = this.filterOf(row, column);
      if (filter === null) continue;
      seen ??= { type: event.type, channels: event.channels, data: event.data() };
      if (!filter.matches(seen)) return false;
    }
    return true;
  }

  private filterOf(row: RoutedRow, column: FilterColumn): CompiledFilter | null {
    const text = row[column];
    if (text == null) return null;
    const key = `${column}:${row.id}`;
    const kept = this.compiled.get(key);
    if (kept !== undefined && kept.text === text) return kept.filter;
    const c = compileFilter(JSON.parse(text) as unknown);
    // A stored filter was checked when written; one that no longer compiles routes nothing to it.
    const filter = c.ok ? c.value : NOTHING;
    this.compiled.set(key, { text, filter });
    return filter;
  }
}

/** What a stored filter that no longer compiles matches: nothing. */
const NOTHING: CompiledFilter = {
  source: {},
  conditions: 0,
  root: { k: "or", conds: [] },
  matches: () => false,
};

/** How much of an event's data a preview shows. */
const EXCERPT_CHARS = 160;

/** An event a preview tries: one the endpoint was sent (its object keeps the body). */
export interface TriedEvent {
  event_id: string;
  event_type: string;
  created_at: string;
  /** The event's body as sent (eventBody: its `data` among the envelope's fields). */
  body: string;
}

export interface RoutePreviewEvent {
  id: string;
  type: string;
  created_at: string;
  channels: string[];
  /** The start of its data, as JSON. */
  excerpt: string;
  /** Whether it would go to the configuration with the proposed receiver filter and channels. */
  would: boolean;
}

/**
 * The receiver's "try it" in the organization's object: the proposed receiver filter checked as a
 * write would check it (a 400 naming `receiver_filter`), then the tried events (the latest sent to
 * the configuration, at most PREVIEW_SHOWN, with the bodies their endpoint keeps) decided with the
 * configuration's routing, the proposed filter and channels in place of the receiver's, and the
 * channels each event carried (kept here with the event).
 */
export function previewRouting(
  db: Db,
  row: ConfigRow,
  proposed: { filter: string | null; channels: string[] | null },
  tried: TriedEvent[],
): Result<RoutePreviewEvent[]> {
  const events = row.events === null ? null : (JSON.parse(row.events) as string[]);
  const filter = filterRefusal(db, proposed.filter, events, row.operations === 1, "receiver_filter");
  if (!filter.ok) return filter;
  const shown = tried.slice(0, PREVIEW_SHOWN);
  const channels: Record<string, string[]> = {};
  for (const e of shown) {
    const kept = db.first<{ channels: string | null }>("SELECT channels FROM events WHERE id = ?", e.event_id);
    channels[e.event_id] = kept?.channels == null ? [] : (JSON.parse(kept.channels) as string[]);
  }
  const routed: RoutedRow = {
    id: row.id,
    filter: row.filter ?? null,
    channels: row.channels ?? null,
    receiver_filter: filter.value,
    receiver_channels: channelsColumn(proposed.channels),
  };
  return ok(tryRoutes(routed, channels, shown));
}

/**
 * The receiver's "try it" (the portal's filter page), decided as a publish decides it
 * (`Routing.routes`): for each of the latest events sent to the configuration, whether it would
 * still go there with the proposed routing. Pure: nothing is sent or written, and only events the
 * endpoint was already sent are shown.
 */
export function tryRoutes(routed: RoutedRow, channels: Record<string, string[]>, tried: TriedEvent[]): RoutePreviewEvent[] {
  const routing = new Routing();
  return tried.map((e) => {
    const data = (JSON.parse(e.body) as { data?: unknown }).data ?? null;
    const seen = { type: e.event_type, channels: channels[e.event_id] ?? [], data: () => data };
    const text = JSON.stringify(data) ?? "null";
    return {
      id: e.event_id,
      type: e.event_type,
      created_at: e.created_at,
      channels: seen.channels,
      excerpt: text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS - 1)}…` : text,
      would: routing.routes(routed, seen),
    };
  });
}
