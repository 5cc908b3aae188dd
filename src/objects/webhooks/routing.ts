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
 * - `Routing` keeps each configuration's filter compiled, per its stored text (a change compiles
 *   it again; at most MAX_WEBHOOK_CONFIGURATIONS are kept), and answers `routes(row, event)`.
 */
import { type CompiledFilter, compileFilter, type FilteredEvent, isNoFilter } from "../../lib/event-filter";
import { checkFilter, type FilteredType } from "../../lib/filter-schema";
import { OPERATIONAL_SCHEMAS } from "../../schemas/operational";
import { OPERATIONAL_EVENT_TYPES } from "../../schemas/receivers";
import type { Db } from "../db";
import { invalid, ok, type Result } from "../sql";
import type { ConfigRow } from "./schema";

/** A change of the catalog not yet written: a type's new schema (null: none), or its deletion. */
type CatalogChange = { name: string; schema: Record<string, unknown> | null } | { name: string; deleted: true };

/** The types a configuration receiving `events` (null: every type) can be sent, with their schemas. */
function receivedTypes(db: Db, events: string[] | null, operations: boolean, change?: CatalogChange): FilteredType[] {
  const catalog = db
    .all<{ name: string; schema: string | null }>("SELECT name, schema FROM event_types")
    .map((t) => ({ name: t.name, schema: t.schema === null ? null : (JSON.parse(t.schema) as Record<string, unknown>) }))
    .filter((t) => change === undefined || t.name !== change.name)
    .concat(change === undefined || "deleted" in change ? [] : [{ name: change.name, schema: change.schema }]);
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
 * The filter to store for a configuration (its JSON text, or null for none), or the 400 naming what
 * is wrong with it. `text` is the filter as the request gave it (serialized); `{}` and null are none.
 */
export function filterRefusal(db: Db, text: string | null, events: string[] | null, operations: boolean): Result<string | null> {
  if (text === null) return ok(null);
  const raw = JSON.parse(text) as unknown;
  if (isNoFilter(raw)) return ok(null);
  const compiled = compileFilter(raw);
  if (!compiled.ok) return invalid(["filter", ...compiled.path], ` ${compiled.message}`);
  const checked = checkFilter(compiled.value, receivedTypes(db, events, operations));
  if (!checked.ok) return invalid(["filter", ...checked.path], ` ${checked.message}`);
  return ok(text);
}

/**
 * The live filters a change of one type's schema (or its deletion) would leave matching nothing,
 * each as "configuration: filter.path what is wrong"; the change is refused while there are any
 * (docs/receivers.md, "Filters and channels"): change or remove those filters first.
 */
export function filtersBrokenBy(db: Db, change: CatalogChange): string[] {
  const rows = db.all<{ id: string; events: string | null; operations: number; filter: string }>(
    "SELECT id, events, operations, filter FROM configurations WHERE filter IS NOT NULL",
  );
  const broken: string[] = [];
  for (const r of rows) {
    const events = r.events === null ? null : (JSON.parse(r.events) as string[]);
    if (events !== null && !events.includes(change.name)) continue;
    const compiled = compileFilter(JSON.parse(r.filter) as unknown);
    if (!compiled.ok) continue;
    const checked = checkFilter(compiled.value, receivedTypes(db, events, r.operations === 1, change));
    if (!checked.ok) broken.push(`${r.id}: filter.${checked.path.join(".")} ${checked.message}`);
  }
  return broken;
}

/** The channels column: the names as stored (JSON), or null for every channel. */
export const channelsColumn = (channels: string[] | null | undefined): string | null =>
  channels === null || channels === undefined ? null : JSON.stringify([...new Set(channels)]);

export class Routing {
  private readonly compiled = new Map<string, { text: string; filter: CompiledFilter }>();

  /**
   * Whether an event of the configuration's types goes to it: one of its channels (if it names
   * any) among the event's, and its filter matched. `data` is parsed once, for the first filter.
   */
  routes(row: ConfigRow, event: { type: string; channels: readonly string[]; data: () => unknown }): boolean {
    // A row read before version 10 has neither column (undefined): none.
    if (row.channels != null) {
      const wanted = JSON.parse(row.channels) as string[];
      if (!wanted.some((c) => event.channels.includes(c))) return false;
    }
    const filter = this.filterOf(row);
    if (filter === null) return true;
    const seen: FilteredEvent = { type: event.type, channels: event.channels, data: event.data() };
    return filter.matches(seen);
  }

  private filterOf(row: ConfigRow): CompiledFilter | null {
    if (row.filter == null) return null;
    const kept = this.compiled.get(row.id);
    if (kept !== undefined && kept.text === row.filter) return kept.filter;
    const c = compileFilter(JSON.parse(row.filter) as unknown);
    // A stored filter was checked when written; one that no longer compiles routes nothing to it.
    const filter = c.ok ? c.value : NOTHING;
    this.compiled.set(row.id, { text: row.filter, filter });
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
