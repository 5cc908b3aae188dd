/**
 * The polling read (issue 45; docs/receivers.md, "Polling"): `GET /v1/polling-endpoints/{id}/events`
 * with a polling configuration's own token, never the organization's API key, so it is mounted
 * ahead of the /v1 credentials check (`auth: "polling"`) and checks its token itself, in the
 * configuration's endpoint object (webhooks/polling.ts): one Durable Object call per read. The
 * answer is the spec 2.3 envelope, written around the events' stored bodies as they are (each
 * exactly what a webhook would carry), without parsing and serializing them again.
 */
import { depsFromEnv } from "../../deps";
import { parseInput } from "../../schemas/validate";
import { PolledEventsView, PollQuery } from "../../schemas/webhooks";
import { readPolledEvents } from "../../webhooks/polling";
import { envelope } from "../envelope";
import { EVENT_ID, T0 } from "../examples";
import { param, type Route, rawRoute } from "../route";

export const pollingRoutes: Route[] = [
  rawRoute({
    method: "GET",
    path: "/v1/polling-endpoints/{id}/events",
    operationId: "readPolledEvents",
    summary: "Read a polling configuration's events",
    description:
      "For a receiver without a public URL: `Authorization: Bearer <polling token>` (the configuration's `kw_poll_...`, not an API key; 401 for any other, a revoked or a rotated-out token, and for an id that is not a live polling configuration: one answer for all). The token is checked at the edge first, so a refused read calls no Durable Object; more than 60 refused reads a minute from one address, or for one configuration, are 429 with Retry-After (a read with the configuration's own token is never counted). 409 while the configuration is disabled: nothing is handed over. Up to `limit` (default and at most 100) events after the cursor `after` (none: from the oldest event kept), oldest first, each exactly as a webhook would carry it, and `next_cursor`. With `wait` (seconds, at most 20) and no event after the cursor, the read waits until one is published, then answers at once (long polling). Delivery is at least once: the cursor is the receiver's to keep; a read after a cursor marks the events up to it delivered, and reading from an older cursor answers them again. Events are kept 30 days (sooner past the storage budget): a cursor older than that is 410 `cursor_expired`. A cursor of another configuration is 404.",
    tag: "Webhook configurations",
    auth: "polling",
    query: [
      {
        name: "after",
        description: "The `next_cursor` of the previous read; absent: from the oldest event kept.",
        schema: PollQuery.shape.after,
      },
      { name: "limit", description: "At most this many events (1 to 100, default 100).", schema: PollQuery.shape.limit },
      {
        name: "wait",
        description: "Seconds to wait for an event when none is there (0 to 20, default 0).",
        schema: PollQuery.shape.wait,
      },
    ],
    response: {
      schema: PolledEventsView,
      example: {
        events: [{ id: EVENT_ID, type: "order.created", created_at: T0, data: { order_id: "1234", total: 42.5 } }],
        next_cursor: "d2hjXzAxSjAwMDAwMDAwMDAwMDAwMDAwMDAwMDA6MQ",
        has_more: false,
      },
    },
    wire: "envelope",
    errors: [404, 409, 410, 429],
    reply: async (c) => {
      const query = parseInput(PollQuery, c.req.query(), "query string");
      const deps = depsFromEnv(c.env, Date.now);
      const client = c.req.header("cf-connecting-ip") ?? "unknown";
      const page = await readPolledEvents(deps, param(c, "id"), c.req.header("authorization"), query, client);
      const self = c.req.url;
      const next = new URL(self);
      next.searchParams.set("after", page.next_cursor);
      const links = { self: { href: self }, ...(page.has_more ? { next: { href: next.toString() } } : {}) };
      // The one envelope (http/envelope.ts), its empty `events` replaced by the stored bodies as
      // they are (a function, so a `$` in a body is not a replacement pattern). The first match is
      // data's: the keys before it are fixed words, and a quote in a link is escaped.
      const shell = JSON.stringify(envelope(200, { events: [], next_cursor: page.next_cursor, has_more: page.has_more }, links));
      const body = shell.replace('"events":[]', () => `"events":[${page.bodies.join(",")}]`);
      return new Response(body, { status: 200, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
    },
  }),
];
