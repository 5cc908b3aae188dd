/** GET /v1/me: who the presented access token speaks for (organization, user, client, expiry). */
import { meView } from "../../auth/tokens";
import { MeView } from "../../schemas/oauth";
import { CLIENT_ID, KEY_ID, ORG_ID, T0, USER_ID } from "../examples";
import { envelopeRoute, type Route } from "../route";

export const meRoutes: Route[] = [
  envelopeRoute({
    method: "GET",
    path: "/v1/me",
    operationId: "getMe",
    summary: "Who the access token speaks for",
    tag: "Access tokens",
    auth: "client",
    response: {
      schema: MeView,
      example: {
        organization_id: ORG_ID,
        user_id: USER_ID,
        client_id: CLIENT_ID,
        api_key_id: KEY_ID,
        token: { id: "tok_qynxaqk1y3a0q5gpvhagb0tk3y", issued_at: T0, expires_at: "2026-06-01T13:00:00.000Z", expires_in: 3595 },
      },
    },
    handle: (c) => meView(c.get("principal"), c.get("deps").now()),
  }),
];
