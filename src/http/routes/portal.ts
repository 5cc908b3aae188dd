/**
 * The portal's REST routes (issue 30 item 2): an organization makes a single-use portal link for
 * one of its webhook configurations, lists the portal sessions opened with such links, and ends
 * one. Scoped to the access token's organization like every webhook route (another
 * organization's ids are not found); handlers only parse and shape, the rules are in
 * webhooks/portal.ts. The portal itself is an HTML app (http/portal), not part of the API.
 */

import type { Context } from "hono";
import { publicBaseUrl } from "../../config";
import { CreatePortalLinkInput, PortalLinkView, PortalSessionView } from "../../schemas/receivers";
import { createPortalLink, endPortalSession, listPortalSessions } from "../../webhooks/portal";
import type { AppEnv } from "../context";
import { PORTAL_LINK, PORTAL_SESSION, T1 } from "../examples";
import { envelopeRoute, listRoute, param, type Route } from "../route";

const CONFIG_PATH = "/v1/webhook-configurations/{id}";
const deps = (c: Context<AppEnv>) => c.get("deps");
/**
 * The organization a request acts in: the access token's, or on the operator's mirror of these
 * routes (operatorMirror in routes/webhooks.ts) the `{org}` of the path.
 */
const org = (c: Context<AppEnv>) => c.req.param("org") ?? c.get("principal").organizationId;

export const portalRoutes: Route[] = [
  envelopeRoute({
    method: "POST",
    path: `${CONFIG_PATH}/portal-links`,
    operationId: "createPortalLink",
    scope: "webhooks:write",
    summary: "Create a portal link for the receiver",
    description:
      "A single-use link, on this service's origin, to hand to the receiver of this configuration: opening it (within `expires_in` seconds, 600 by default, at most 3600) starts a portal session for this configuration alone, where the receiver sees its deliveries and their attempts, re-sends them, sends a test event, rotates the signing secret, edits its webhook URL, its token endpoint's settings (never the client id, authentication method or assertion audience: those decide whose identity keyway asserts) and its event types among the catalog's own (never the operational ones), and pauses or resumes deliveries, every action audited as the receiver and metered per session and per configuration. The link is shown only in this answer (keyway keeps its SHA-256); a second opening is refused. The portal may be framed only by the organization's `portal_frame_origins`. 409 for an operations configuration (`operations: true`): it is the organization's own.",
    tag: "Webhook configurations",
    errors: [409],
    auth: "client",
    // 200, not 201: a link is not a resource with an address of its own (nothing can GET it again).
    body: { schema: CreatePortalLinkInput, example: { expires_in: 600 }, optional: true },
    response: { schema: PortalLinkView, example: PORTAL_LINK },
    handle: (c, input) =>
      createPortalLink(deps(c), org(c), param(c, "id"), input, c.get("actor"), publicBaseUrl(c.env).url ?? new URL(c.req.url).origin),
  }),
  listRoute({
    method: "GET",
    path: `${CONFIG_PATH}/portal-sessions`,
    operationId: "listPortalSessions",
    scope: "webhooks:read",
    summary: "List the configuration's portal sessions",
    description:
      "Oldest first. A session is `active` until it is ended or its 8 hours are up; ended and expired sessions stay listed for a day.",
    tag: "Webhook configurations",
    auth: "client",
    response: { schema: PortalSessionView, example: [PORTAL_SESSION] },
    handle: (c, query) => listPortalSessions(deps(c), org(c), param(c, "id"), query),
  }),
  envelopeRoute({
    method: "DELETE",
    path: `${CONFIG_PATH}/portal-sessions/{session}`,
    operationId: "endPortalSession",
    scope: "webhooks:write",
    summary: "End a portal session",
    description: "Its cookie stops working at once, wherever it is. Ending an ended session changes nothing.",
    tag: "Webhook configurations",
    auth: "client",
    response: { schema: PortalSessionView, example: { ...PORTAL_SESSION, status: "ended", ended_at: T1 } },
    handle: (c) => endPortalSession(deps(c), org(c), param(c, "id"), param(c, "session"), c.get("actor")),
  }),
];
