/**
 * The organization's event-type catalog and webhook settings (issue 30): operations over its
 * WebhookObject, the system of record (objects/webhooks/event-types.ts holds the rules: bounded
 * schemas, validated examples, keyway's reserved names). The catalog is also served as an OpenAPI
 * 3.1 document whose `webhooks` object has one entry per type (webhooks/catalog.ts), so a receiver
 * generates its types with the tools it already has. REST, GraphQL, the manager, the CLI and the
 * portal call these; none of them holds a rule of its own.
 */
import type { Deps } from "../deps";
import { invalidInput, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { fetchLogo } from "../lib/images";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap, webhookObject } from "../objects/stubs";
import type { SettingsPatch } from "../objects/webhooks/event-types";
import {
  type CreateEventTypeInput,
  EventTypeName,
  type EventTypeView,
  type UpdateEventTypeInput,
  type UpdateWebhookSettingsInput,
  type WebhookSettingsView,
} from "../schemas/receivers";
import { catalogDocument } from "./catalog";

const WHAT = "webhooks";

/** The whole catalog (the RPC type of an array of views with `unknown` members is not inferred: it is this). */
const catalogOf = async (deps: Deps, orgId: string): Promise<EventTypeView[]> =>
  unwrap(await reach(WHAT, () => webhookObject(deps, orgId).eventTypes())) as EventTypeView[];

/** A name that cannot be a type is not found (no call to the object). */
function checkedName(name: string): string {
  if (!EventTypeName.safeParse(name).success) throw notFound("Event type");
  return name;
}

export async function createEventType(deps: Deps, orgId: string, input: CreateEventTypeInput, actor: Actor): Promise<EventTypeView> {
  return unwrap(await reach(WHAT, () => webhookObject(deps, orgId).createEventType(orgId, input, actor, deps.now())));
}

export async function getEventType(deps: Deps, orgId: string, name: string): Promise<EventTypeView> {
  const checked = checkedName(name);
  return unwrap(await reach(WHAT, () => webhookObject(deps, orgId).eventType(checked)));
}

/** The catalog by name, a page at a time; the cursor is the last name of the previous page. */
export async function listEventTypes(deps: Deps, orgId: string, page: PageRequest): Promise<Page<EventTypeView>> {
  const all = await catalogOf(deps, orgId);
  const after = page.cursor ?? "";
  const rest = all.filter((t) => t.name > after);
  const items = rest.slice(0, page.limit);
  return { items, next_cursor: rest.length > page.limit ? (items.at(-1)?.name ?? null) : null };
}

export async function updateEventType(
  deps: Deps,
  orgId: string,
  name: string,
  patch: UpdateEventTypeInput,
  actor: Actor,
): Promise<EventTypeView> {
  const checked = checkedName(name);
  return unwrap(await reach(WHAT, () => webhookObject(deps, orgId).updateEventType(checked, patch, actor, deps.now())));
}

export async function deleteEventType(deps: Deps, orgId: string, name: string, actor: Actor): Promise<EventTypeView> {
  const checked = checkedName(name);
  return unwrap(await reach(WHAT, () => webhookObject(deps, orgId).deleteEventType(checked, actor, deps.now())));
}

/** The OpenAPI 3.1 document of the catalog (its `webhooks` object: one entry per type). */
export async function eventCatalog(deps: Deps, orgId: string, apiUrl: string): Promise<Record<string, unknown>> {
  const types = await catalogOf(deps, orgId);
  return catalogDocument({ id: orgId }, types, { apiUrl });
}

export async function getWebhookSettings(deps: Deps, orgId: string): Promise<WebhookSettingsView> {
  return unwrap(await reach(WHAT, () => webhookObject(deps, orgId).webhookSettings()));
}

/**
 * Changes the settings. `portal_logo_url` is fetched once, here, through the SSRF guard with a
 * deadline and the logo's byte cap (lib/images.ts `fetchLogo`); what it answered is checked by
 * the object (PNG, JPEG or WebP by their magic bytes) and kept there, so the portal serves keyway's
 * copy and never the URL. A refusal is a 400 naming `portal_logo_url` with why (fetch failed, too
 * large, not an accepted image), never a 5xx. `upload`: an image's bytes instead (the manager's
 * form), checked the same way.
 */
export async function updateWebhookSettings(
  deps: Deps,
  orgId: string,
  input: UpdateWebhookSettingsInput,
  actor: Actor,
  upload?: Uint8Array,
): Promise<WebhookSettingsView> {
  const { portal_logo_url: url, ...rest } = input;
  const patch: SettingsPatch = { ...rest };
  if (upload !== undefined) patch.portal_logo = upload;
  else if (url === null) patch.portal_logo = null;
  else if (url !== undefined) {
    const fetched = await fetchLogo(url, { allowInsecure: deps.config.allowInsecureTargets });
    if (!fetched.ok)
      throw invalidInput({ label: "request body", issues: [{ path: ["portal_logo_url"], text: ` was not kept: ${fetched.reason}` }] });
    patch.portal_logo = fetched.bytes;
  }
  return unwrap(await reach(WHAT, () => webhookObject(deps, orgId).updateWebhookSettings(orgId, patch, actor, deps.now())));
}
