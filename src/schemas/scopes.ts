/**
 * The scopes an access token may carry (RFC 6749 section 3.3), the one list that the token
 * endpoint, the route declarations, GraphQL, the metadata's `scopes_supported` and the API
 * description read. What they mean for a request is decided in auth/scopes.ts.
 */
export const SCOPES = {
  "webhooks:read": "Read webhook configurations and their deliveries.",
  "webhooks:write":
    "Create, change and delete webhook configurations, rotate their signing secrets, send test events and re-send deliveries.",
  "events:write": "Publish events (POST /v1/events, GraphQL publishEvent).",
  "graphql:mutate": "Run GraphQL mutations; each mutation field also needs the scope of its REST operation.",
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as [Scope, ...Scope[]];

export const isScope = (value: string): value is Scope => Object.hasOwn(SCOPES, value);
