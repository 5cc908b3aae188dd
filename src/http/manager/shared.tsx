/**
 * What the manager's sub-apps share: the Hono environment of a signed-in request, reading a POST's
 * form once, the organization in the URL (only the session's own for an organization
 * administrator; anything else is a 404), breadcrumbs, the page layout with the session's
 * sign-out form, confirmation pages, and the notices shown after an action.
 */
import type { Context } from "hono";
import type { Child } from "hono/jsx";
import { actorOf, canAccess, type Session } from "../../auth/sessions";
import { ApiError } from "../../errors";
import { getOrganization } from "../../identity/organizations";
import { readFields } from "../body";
import type { AppEnv } from "../context";
import { pageNonce } from "../middleware/html";
import type { ListPager } from "./list";
import { Confirm, type Confirmation } from "./pages/confirm";
import { type Crumb, Page, type Section } from "./views";

export type ManagerEnv = {
  Bindings: AppEnv["Bindings"];
  /**
   * `form`: a POST's fields, read once (the CSRF check and the handler both need them); `org`:
   * the organization in the URL once orgFor checked it, for the layout's section navigation.
   */
  Variables: AppEnv["Variables"] & { session: Session; form: Record<string, unknown>; org?: { id: string; name: string } };
};
export type C = Context<ManagerEnv>;

/** Lists show at most this many rows per page; the rest is behind "Next page" (cursors). */
export const PAGE_SIZE = { limit: 100 };

/** The page of a list this request asks for: PAGE_SIZE rows after the `cursor` in the query, if any. */
export function listPage(c: C): { limit: number; cursor?: string } {
  const cursor = c.req.query("cursor");
  return cursor ? { ...PAGE_SIZE, cursor } : PAGE_SIZE;
}

/** Where this list page is in its list (list.tsx List's pager): its path, the cursor it was asked with, the next page's. */
export const pagerOf = (c: C, next: string | null): ListPager => ({ path: c.req.path, current: c.req.query("cursor"), next });

export const notices: Record<string, string> = {
  "user-added": "User added.",
  "org-deleted": "Organization deleted: everything it held has stopped working; its data is erased after 30 days.",
  "user-removed": "User removed; their client credentials were revoked.",
  "credential-revoked": "Client credentials revoked.",
  "credential-saved": "Client credentials saved; the next token request everywhere follows them.",
  "issuer-added": "Trusted issuer added; its key set was fetched.",
  "issuer-removed": "Trusted issuer removed; the federated client credentials that named it were revoked.",
  "issuer-keys-refreshed": "The issuer's key set was fetched now: a key it no longer publishes stops authenticating.",
  "issuer-keys-unreachable": "The issuer's key set could not be fetched; the keys held before are kept.",
  "key-revoked": "API key revoked.",
  "limits-saved": "Limits saved; they apply from the next request.",
  "credits-saved": "Credits saved; they apply from the next request.",
  "quota-saved": "Shared quota saved; every key of the organization counts against it from its next request.",
  "token-revoked": "Administrator token revoked; its sessions have ended.",
  "webhook-saved": "Webhook configuration saved.",
  "webhook-disabled": "Webhook configuration disabled; nothing is sent to it until it is re-enabled.",
  "webhook-enabled": "Webhook configuration re-enabled; its health count starts again.",
  "polling-token-revoked": "Polling token revoked: no read succeeds until a new one is rotated in.",
  "test-sent": "Test event published; its delivery is listed below.",
  resent: "Re-sent; the new attempt appears here once it is made.",
  "event-type-saved": "Event type saved; publishes of this type are checked against its schema from now on.",
  "event-type-deleted": "Event type deleted; publishes of it are no longer checked against a schema.",
  "settings-saved": "Webhook settings saved.",
  "recovery-started":
    "Recovery started: every delivery of the window that failed is re-sent in the background, paced by this endpoint. Reload this page to follow it.",
  "portal-session-ended": "Portal session ended: its cookie stopped working at once, wherever it is.",
};

/** Where the manager opens: the operator's list of organizations, an administrator's organization's overview. */
export const home = (s: Session) => (s.role === "operator" ? "/manager/organizations" : `/manager/organizations/${s.org}/overview`);

/**
 * The largest form the manager reads. An event type's form carries its JSON Schema (at most 64
 * KiB) and examples, which URL-encoding can more than double; every other form is far smaller.
 * Only a signed-in session's POST is read this far (routes.tsx checks the session first).
 */
const MAX_FORM_BYTES = 256 * 1024;

export async function form(c: C): Promise<Record<string, unknown>> {
  const cached = c.get("form");
  if (cached) return cached;
  const fields = await readFields(c.req.raw, ["form"], MAX_FORM_BYTES);
  c.set("form", fields);
  return fields;
}

/** Empty form fields mean "not given" for optional inputs. */
export function optional(fields: Record<string, unknown>, names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const value = fields[name];
    if (typeof value === "string" && value.trim() !== "") out[name] = value;
  }
  return out;
}

export function operatorOnly(c: C): void {
  // Organization administrators are told nothing exists here, as for another organization.
  if (c.get("session").role !== "operator") throw new ApiError("not_found", "There is no such page.");
}

export async function orgFor(c: C) {
  const orgId = c.req.param("org") ?? "";
  if (!canAccess(c.get("session"), orgId)) throw new ApiError("not_found", "There is no such page.");
  const org = await getOrganization(c.get("deps"), orgId);
  c.set("org", { id: org.id, name: org.name });
  return org;
}

/**
 * Pages whose first path segment is not their section's: the new forms sit beside their
 * collection, not under it (so no segment is both a literal and a parameter, for Hono's
 * RegExpRouter), yet they belong to its section, not to Settings.
 */
const SECTION_OF: Record<string, string> = { "new-webhook": "webhooks", "new-event-type": "event-types" };

/**
 * An organization's sections, as the layout's navigation shows them: the one this path is in is
 * current (a webhook's deliveries, recoveries and portal links are in Webhooks, a user's
 * credentials in Users, removing a trusted issuer in Trusted issuers, administrator tokens and the shared quota on Settings). API keys are the
 * operator's only, so an organization administrator is not shown a link that answers 404.
 */
export function sectionsOf(s: Session, org: { id: string; name: string }, path: string): { org: string; items: Section[] } {
  const base = `/manager/organizations/${org.id}`;
  const rest = path.startsWith(base) ? path.slice(base.length) : "";
  const first = rest.split("/")[1] ?? "";
  const entries: [string, string][] = [
    ["overview", "Overview"],
    ["", "Settings and quota"],
    ["users", "Users and credentials"],
    ["trusted-issuers", "Trusted issuers"],
    ...(s.role === "operator" ? ([["api-keys", "API keys"]] as [string, string][]) : []),
    ["webhooks", "Webhooks"],
    ["event-types", "Event types"],
    ["webhook-settings", "Webhook settings"],
    ["audit-log", "Audit log"],
  ];
  const section = SECTION_OF[first] ?? first;
  const current = entries.some(([seg]) => seg === section) ? section : "";
  return {
    org: org.name,
    items: entries.map(([seg, label]) => ({ label, href: seg === "" ? base : `${base}/${seg}`, current: seg === current })),
  };
}

export function orgCrumbs(c: C, org: { id: string; name: string }, link = false): Crumb[] {
  const crumbs: Crumb[] = c.get("session").role === "operator" ? [{ label: "Organizations", href: "/manager/organizations" }] : [];
  crumbs.push({ label: `${org.name}: Organization Settings`, ...(link ? { href: `/manager/organizations/${org.id}` } : {}) });
  return crumbs;
}

export const csrf = (c: C) => c.get("session").csrf;

export const actor = (c: C) => actorOf(c.get("session"));

export const who = (s: Session) => (s.role === "operator" ? "Operator" : "Organization administrator");

export function page(c: C, title: string, crumbs: Crumb[], body: Child, notice?: string): Response | Promise<Response> {
  const s = c.get("session");
  const org = c.get("org");
  return c.html(
    <Page
      title={title}
      nonce={pageNonce(c)}
      crumbs={crumbs}
      {...(org ? { sections: sectionsOf(s, org, c.req.path) } : {})}
      now={c.get("deps").now()}
      csrf={s.csrf}
      who={who(s)}
      notice={notice}
    >
      {body}
    </Page>,
  );
}

export function confirmPage(c: C, crumbs: Crumb[], confirmation: Confirmation, to: { action: string; cancel: string }) {
  return page(c, confirmation.title, [...crumbs, { label: "Confirm" }], <Confirm {...confirmation} {...to} csrf={csrf(c)} />);
}

/**
 * Number inputs to limits (a key's, an organization's quota); empty means "none" or the default:
 * null on update, absent on create. Text that is not a number becomes NaN, which the input schema
 * refuses with a message naming the field.
 */
export function limitsFrom(fields: Record<string, unknown>, names: string[], update: boolean): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const name of names) {
    const value = typeof fields[name] === "string" ? (fields[name] as string).trim() : "";
    if (value === "") {
      if (update) out[name] = null;
    } else out[name] = /^\d{1,12}$/.test(value) ? Number(value) : Number.NaN;
  }
  return out;
}

export { keywayOrigin } from "../context";
