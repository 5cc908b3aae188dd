/**
 * The manager's audit log of an organization, newest first, paged to its end. Mounted under
 * /manager/organizations by routes.tsx, behind its session and CSRF checks; the markup is in
 * pages/audit.tsx.
 */
import { Hono } from "hono";
import { auditLog } from "../../identity/audit";
import { AuditLog } from "./pages/audit";
import { listPage, type ManagerEnv, orgCrumbs, orgFor, page, pagerOf } from "./shared";

export function auditRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // The audit log.
  app.get("/:org/audit-log", async (c) => {
    const org = await orgFor(c);
    const entries = await auditLog(c.get("deps"), org.id, listPage(c));
    return page(
      c,
      "Audit log",
      [...orgCrumbs(c, org, true), { label: "Audit log" }],
      <AuditLog entries={entries.items} pager={pagerOf(c, entries.next_cursor)} />,
    );
  });

  return app;
}
