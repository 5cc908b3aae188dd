/**
 * The manager's recoveries and portal links of a webhook configuration (issue 30 items 2, 3 and
 * 5): starting a recovery of a window (times read as UTC), its list and a recovery's progress on a
 * page to reload; a single-use portal link, shown once with its expiry; the configuration's portal
 * sessions, and ending one through its confirmation page (the configuration's own page shows
 * the forms and lists: webhooks.tsx `receiverSections`). Actions call the same domain functions
 * as the REST routes (webhooks/recovery.ts, webhooks/portal.ts), as the session's actor; another
 * configuration's recovery or session is not found under this one. Mounted under
 * /manager/organizations by routes.tsx; the markup is in pages/receivers.tsx.
 */
import { Hono } from "hono";
import { publicBaseUrl } from "../../config";
import { ApiError, invalidInput } from "../../errors";
import { CreatePortalLinkInput, type PortalSessionView, RecoverInput } from "../../schemas/receivers";
import { parseInput } from "../../schemas/validate";
import type { WebhookConfiguration } from "../../schemas/webhooks";
import { createPortalLink, endPortalSession, listPortalSessions } from "../../webhooks/portal";
import { getRecovery, listRecoveries, recoverDeliveries } from "../../webhooks/recovery";
import type { FormErrors } from "./pages/event-types";
import {
  endPortalSessionConfirmation,
  PortalLinkCreated,
  type RecoverField,
  RecoverForm,
  type RecoverFormValues,
  Recoveries,
  RecoveryDetail,
} from "./pages/receivers";
import { actor, type C, confirmPage, csrf, form, listPage, type ManagerEnv, notices, page, pagerOf } from "./shared";
import { webhookCrumbs, webhookFor, webhookPath } from "./webhooks";

/** Pages of portal sessions read to find one (they stay listed a day: far fewer than this many). */
const MAX_SESSION_PAGES = 10;

export function receiverRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();

  app.post("/:org/webhooks/:id/recover", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    const fields = await form(c);
    const values: RecoverFormValues = { since: text(fields.since), until: text(fields.until) };
    try {
      const input = parseInput(RecoverInput, {
        since: utc(values.since, "since"),
        ...(values.until !== "" ? { until: utc(values.until, "until") } : {}),
      });
      const recovery = await recoverDeliveries(c.get("deps"), org.id, config.id, input, actor(c));
      return c.redirect(`${base}/recoveries/${recovery.id}?notice=recovery-started`, 303);
    } catch (err) {
      const errors = recoverErrors(err);
      if (errors === null) throw err;
      c.status(errors.status);
      return page(
        c,
        "Recover failed deliveries",
        [...webhookCrumbs(c, org, config), { label: "Recover" }],
        <RecoverForm action={`${base}/recover`} csrf={csrf(c)} values={values} errors={errors} />,
      );
    }
  });

  app.get("/:org/webhooks/:id/recoveries", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    const list = await listRecoveries(c.get("deps"), org.id, config.id, listPage(c));
    return page(
      c,
      "Recoveries",
      [...webhookCrumbs(c, org, config), { label: "Recoveries" }],
      <Recoveries base={base} recoveries={list.items} caption="Newest first, 100 a page" pager={pagerOf(c, list.next_cursor)} />,
    );
  });

  app.get("/:org/webhooks/:id/recoveries/:recovery", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    const recovery = await getRecovery(c.get("deps"), org.id, config.id, c.req.param("recovery") ?? "");
    return page(
      c,
      `Recovery ${recovery.id}`,
      [...webhookCrumbs(c, org, config), { label: "Recoveries", href: `${base}/recoveries` }, { label: recovery.id }],
      <RecoveryDetail self={`${base}/recoveries/${recovery.id}`} back={base} recovery={recovery} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  // The link is in this answer only (keyway keeps its hash): a page, not a redirect to one.
  app.post("/:org/webhooks/:id/portal-links", async (c) => {
    const { org, config } = await webhookFor(c);
    const fields = await form(c);
    const seconds = text(fields.expires_in);
    const input = parseInput(
      CreatePortalLinkInput,
      seconds === "" ? {} : { expires_in: /^\d{1,6}$/.test(seconds) ? Number(seconds) : seconds },
    );
    const origin = publicBaseUrl(c.env).url ?? new URL(c.req.url).origin;
    const link = await createPortalLink(c.get("deps"), org.id, config.id, input, actor(c), origin);
    return page(
      c,
      "Portal link",
      [...webhookCrumbs(c, org, config), { label: "Portal link" }],
      <PortalLinkCreated back={webhookPath(org.id, config.id)} url={link.url} expiresAt={link.expires_at} />,
    );
  });

  app.get("/:org/webhooks/:id/portal-sessions/:session/end", async (c) => {
    const { org, config, session } = await sessionFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config), endPortalSessionConfirmation(session, config), {
      action: `${base}/portal-sessions/${session.id}/end`,
      cancel: `${base}#portal`,
    });
  });

  app.post("/:org/webhooks/:id/portal-sessions/:session/end", async (c) => {
    const { org, config, session } = await sessionFor(c);
    await endPortalSession(c.get("deps"), org.id, config.id, session.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=portal-session-ended#portal`, 303);
  });

  return app;
}

const text = (value: unknown): string => (typeof value === "string" ? value.trim() : "");

/**
 * A form's date and time, read as UTC: `YYYY-MM-DDTHH:MM`, with seconds or a trailing `Z`
 * optional (what a datetime-local input posts, or what a person pastes), as an ISO timestamp.
 */
function utc(value: string, field: RecoverField): string {
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)Z?$/.exec(value);
  const ms = m ? Date.parse(`${m[1]}T${m[2]}Z`) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw invalidInput({ label: "form", issues: [{ path: [field], text: " must be a date and time in UTC, e.g. 2026-06-01T09:00" }] });
  }
  return new Date(ms).toISOString();
}

const RECOVER_LABELS: Record<RecoverField, string> = { since: "Since (UTC)", until: "Until (UTC)" };

/** A refusal of the recover form: a bad time or window beside its field, or a conflict (disabled) above it. */
function recoverErrors(err: unknown): (FormErrors<RecoverField> & { status: 400 | 409 }) | null {
  if (!(err instanceof ApiError)) return null;
  if (err.code === "conflict") return { message: err.developerMessage, fields: {}, status: 409 };
  if (err.code !== "invalid_request") return null;
  const fields: FormErrors<RecoverField>["fields"] = {};
  for (const issue of err.input?.issues ?? []) {
    const field = issue.path[0];
    if ((field === "since" || field === "until") && fields[field] === undefined) {
      fields[field] = `${RECOVER_LABELS[field]}${"text" in issue ? issue.text : " is invalid"}`;
    }
  }
  return { message: err.developerMessage, fields, status: 400 };
}

/** A portal session of the configuration in the URL; one of another configuration is not found here. */
async function sessionFor(c: C): Promise<{ org: { id: string; name: string }; config: WebhookConfiguration; session: PortalSessionView }> {
  const { org, config } = await webhookFor(c);
  const id = c.req.param("session") ?? "";
  let cursor: string | undefined;
  for (let i = 0; i < MAX_SESSION_PAGES; i++) {
    const list = await listPortalSessions(c.get("deps"), org.id, config.id, cursor === undefined ? { limit: 100 } : { limit: 100, cursor });
    const session = list.items.find((s) => s.id === id);
    if (session !== undefined) return { org, config, session };
    if (list.next_cursor === null) break;
    cursor = list.next_cursor;
  }
  throw new ApiError("not_found", "There is no such page.");
}
