/** GET /v1/me: who the presented access token speaks for (organization, user, client, expiry). */
import { Hono } from "hono";
import { meView } from "../../auth/tokens";
import type { AppEnv } from "../context";
import { respond } from "../envelope";
import { methods } from "../route";

export const me = new Hono<AppEnv>();

methods(me, "/v1/me", {
  GET: (c) => respond(c, meView(c.get("principal"), c.get("deps").now())),
});
