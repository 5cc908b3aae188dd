/** GET /v1/me: who the presented access token speaks for (organization, user, client, expiry). */
import { Hono } from "hono";
import { isoTime } from "../../deps";
import type { MeView } from "../../schemas/oauth";
import type { AppEnv } from "../context";
import { respond } from "../envelope";
import { methods } from "../route";

export const me = new Hono<AppEnv>();

methods(me, "/v1/me", {
  GET: (c) => {
    const p = c.get("principal");
    const view: MeView = {
      organization_id: p.organizationId,
      user_id: p.userId,
      client_id: p.clientId,
      api_key_id: p.apiKeyId,
      token: {
        id: p.tokenId,
        issued_at: isoTime(p.issuedAt * 1000),
        expires_at: isoTime(p.expiresAt * 1000),
        expires_in: Math.max(0, p.expiresAt - Math.floor(c.get("deps").now() / 1000)),
      },
    };
    return respond(c, view);
  },
});
