/**
 * GET /v1/me: who the presented access token speaks for (organization, user, client, expiry), and
 * what the request's own admission saw: the key's limits, its usage after this request, its
 * organization's shared quota and its credits (issue 24). All of it comes from the request's one
 * Durable Object call; reading it costs nothing more.
 */
import { meView, type Principal } from "../../auth/tokens";
import { usageView } from "../../ratelimit/service";
import type { Decision } from "../../ratelimit/windows";
import { MeWithUsageView } from "../../schemas/admin";
import { CLIENT_ID, KEY_ID, ORG_ID, T0, USER_ID, usageWindow } from "../examples";
import { envelopeRoute, type Route } from "../route";

export const meRoutes: Route[] = [
  envelopeRoute({
    method: "GET",
    path: "/v1/me",
    operationId: "getMe",
    summary: "Who the access token speaks for, with the key's limits, usage, quota and credits",
    description:
      "`usage` is as this request left it (it counts itself): the key's `second` and `day` windows, its organization's shared `quota` (each window that has a limit, counted over all its keys; null without one) and its `credits` (null without them).",
    tag: "Access tokens",
    auth: "client",
    prebuilt: true,
    response: {
      schema: MeWithUsageView,
      example: {
        organization_id: ORG_ID,
        user_id: USER_ID,
        client_id: CLIENT_ID,
        api_key_id: KEY_ID,
        token: {
          id: "tok_qynxaqk1y3a0q5gpvhagb0tk3y",
          issued_at: T0,
          expires_at: "2026-06-01T13:00:00.000Z",
          expires_in: 3595,
          format: "opaque",
        },
        limits: { per_second: 5, per_day: 10_000 },
        usage: {
          second: usageWindow(5, 1, "2026-06-01T12:00:01.000Z"),
          day: usageWindow(10_000, 42, "2026-06-02T00:00:00.000Z"),
          quota: [{ window: "day", ...usageWindow(100_000, 5_210, "2026-06-02T00:00:00.000Z") }],
          credits: { remaining: 9_958, refill: { amount: 10_000, interval: "month" }, next_refill_at: "2026-07-01T00:00:00.000Z" },
        },
      },
    },
    handle: (c) => meAnswer(c.get("principal"), c.get("admitted").decision, c.get("deps").now()),
  }),
];

/** What GET /v1/me answers: the token's principal, and the key's limits and usage as its admission saw them. */
export function meAnswer(principal: Principal, decision: Decision, nowMs: number) {
  return {
    ...meView(principal, nowMs),
    limits: { per_second: decision.second.limit, per_day: decision.day.limit },
    usage: usageView(decision),
  };
}
