/**
 * The manager's audit log of an organization, newest first, paged to its end, narrowed by the
 * filters of its form (a GET form: the filtered list is a link to keep or share). The filters are
 * the API's (schemas/audit.ts AuditFilter), checked by its schema; a refused one shows the form
 * again with the reason beside the field, and no list. Mounted under /manager/organizations by
 * routes.tsx, behind its session and CSRF checks; the markup is in pages/audit.tsx.
 */
import { Hono } from "hono";
import { auditLog } from "../../identity/audit";
import { AuditFilter } from "../../schemas/audit";
import { checkedInput, formErrorsOf, labelled, topLevelField } from "./form-check";
import { AUDIT_FILTER_LABELS, AuditLog, type AuditQuery, auditQueryString } from "./pages/audit";
import { listPage, type ManagerEnv, orgCrumbs, orgFor, page } from "./shared";

/** The form's fields as typed: `datetime-local` values are minutes in UTC (the labels say so). */
function typedFilters(query: (name: string) => string | undefined): AuditQuery {
  const raw = (name: string) => (query(name) ?? "").trim();
  return {
    actor: raw("actor"),
    actor_id: raw("actor_id"),
    action: raw("action"),
    resource_type: raw("resource_type"),
    resource_id: raw("resource_id"),
    since: raw("since"),
    until: raw("until"),
  };
}

/** `2026-12-01T09:30` (a datetime-local input, UTC) as the API's instant; anything else as typed, for the schema to refuse. */
const instant = (typed: string): string => (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(typed) ? `${typed}:00Z` : typed);

export function auditRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  app.get("/:org/audit-log", async (c) => {
    const org = await orgFor(c);
    const typed = typedFilters((name) => c.req.query(name));
    const crumbs = [...orgCrumbs(c, org, true), { label: "Audit log" }];
    const path = `/manager/organizations/${org.id}/audit-log`;
    let filter: AuditFilter;
    try {
      filter = checkedInput(
        AuditFilter,
        Object.fromEntries(
          Object.entries(typed)
            .filter(([, v]) => v !== "")
            .map(([k, v]) => [k, k === "since" || k === "until" ? instant(v) : v]),
        ),
      );
    } catch (err) {
      const errors = formErrorsOf(err, topLevelField(AUDIT_FILTER_LABELS), labelled(AUDIT_FILTER_LABELS));
      if (errors === null) throw err;
      return page(c, "Audit log", crumbs, <AuditLog path={path} typed={typed} errors={errors} entries={[]} pager={{ path, next: null }} />);
    }
    const entries = await auditLog(c.get("deps"), org.id, listPage(c), filter);
    const query = auditQueryString(typed);
    const listPath = query === "" ? path : `${path}?${query}`;
    return page(
      c,
      "Audit log",
      crumbs,
      <AuditLog
        path={path}
        typed={typed}
        entries={entries.items}
        pager={{ path: listPath, current: c.req.query("cursor"), next: entries.next_cursor }}
      />,
    );
  });

  return app;
}
