/**
 * The receivers' features of issue 30 over GraphQL: the event-type catalog and the webhook
 * settings, recovery after an outage, and portal links and sessions. Each field answers what its
 * REST route answers (the same domain function and view, camelCased; an event type's schema and
 * examples untouched), needs the REST route's scope (reads webhooks:read, writes webhooks:write and
 * graphql:mutate) and fails alone without it, counts as one request when it is a mutation, and
 * finds nothing of another organization. Invalid input comes back as a GraphQL error naming the
 * field in camelCase, a schema's failing path included.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { camelize } from "../src/graphql/resolvers";
import { fakeNetwork, receiver } from "./fake-network";
import { authed, BASE, body, call, createTenant, issueToken, type Tenant, tokenRequest } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, createConfig } from "./webhook-helpers";

interface GqlResponse {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions: { code: string; status?: number }; path?: string[] }[];
}

interface Org {
  t: Tenant;
  token: string;
  configId: string;
}

async function org(): Promise<Org> {
  const t = await createTenant();
  const token = await issueToken(t);
  const { id } = await createConfig(t, token, "receiver-secret-graphql-receivers");
  return { t, token, configId: id };
}

let a: Org;
beforeAll(async () => {
  fakeNetwork(receiver());
  a = await org();
});

async function gql(query: string, variables?: Record<string, unknown>, o: Org = a, token = o.token) {
  const res = await call(
    "/v1/graphql",
    authed(o.t, token, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query, variables }) }),
  );
  return { status: res.status, headers: res.headers, json: (await res.json()) as GqlResponse };
}

/** The data of a request that must succeed. */
async function ok(query: string, variables?: Record<string, unknown>, o: Org = a) {
  const { status, json } = await gql(query, variables, o);
  expect(json.errors, JSON.stringify(json.errors)).toBeUndefined();
  expect(status).toBe(200);
  return json.data as Record<string, unknown>;
}

const rest = async (path: string, o: Org = a) => (await body<Record<string, unknown>>(await api(o.t, o.token, path))).data;

// A JSON Schema whose keywords and properties are not camelCase-safe: they must arrive as written.
const ORDER_SCHEMA = {
  type: "object",
  required: ["order_id", "total"],
  properties: { order_id: { type: "string" }, total: { type: "number", minimum: 0 } },
  additionalProperties: false,
};
const EXAMPLE = { order_id: "o-1", total: 12.5 };

const TYPE_FIELDS = "name description schema examples deprecated operational createdAt updatedAt";
const RECOVERY_FIELDS = "id webhookConfigurationId since until status found resent skipped createdAt finishedAt";
const SESSION_FIELDS = "id webhookConfigurationId status createdAt lastSeenAt expiresAt endedAt";

/** An event type's view as GraphQL answers it: its own fields camelCased, its JSON as saved. */
const asGraphQLType = (view: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(view).map(([k, v]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), v]));

describe("event types and webhook settings", () => {
  it("are created, read, listed, changed and deleted as REST does them, the schema and examples untouched", async () => {
    const created = await ok(`mutation($input: CreateEventTypeInput!) { createEventType(input: $input) { ${TYPE_FIELDS} } }`, {
      input: { name: "order.created", description: "An order was placed.", schema: ORDER_SCHEMA, examples: [EXAMPLE] },
    });
    expect(created.createEventType).toMatchObject({
      name: "order.created",
      schema: ORDER_SCHEMA,
      examples: [EXAMPLE],
      deprecated: false,
      operational: false,
    });
    expect(created.createEventType).toEqual(asGraphQLType(await rest("/v1/event-types/order.created")));

    // A literal in the document (not a variable) arrives the same.
    const literal = await ok(
      `mutation { createEventType(input: { name: "order.paid", schema: { type: "object", required: ["order_id"] }, examples: [{ order_id: "o-2" }], description: null }) { name schema examples description } }`,
    );
    expect(literal.createEventType).toEqual({
      name: "order.paid",
      schema: { type: "object", required: ["order_id"] },
      examples: [{ order_id: "o-2" }],
      description: null,
    });

    const one = await ok(`query { eventType(name: "order.created") { ${TYPE_FIELDS} } }`);
    expect(one.eventType).toEqual(created.createEventType);

    const listed = await ok(`query { eventTypes(first: 100) { nodes { ${TYPE_FIELDS} } pageInfo { hasNextPage endCursor } } }`);
    const restList = await body<Record<string, unknown>[]>(await api(a.t, a.token, "/v1/event-types?limit=100"));
    expect(listed.eventTypes).toEqual({ nodes: restList.data.map(asGraphQLType), pageInfo: { hasNextPage: false, endCursor: null } });
    const names = (listed.eventTypes as { nodes: { name: string; operational: boolean }[] }).nodes;
    expect(names.find((n) => n.name === "webhook.endpoint.disabled")?.operational).toBe(true);

    // Pages: `first` and `after` are REST's limit and cursor.
    const first = await ok(`query { eventTypes(first: 1) { nodes { name } pageInfo { hasNextPage endCursor } } }`);
    const page = first.eventTypes as { nodes: { name: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string } };
    expect(page.pageInfo.hasNextPage).toBe(true);
    const next = await ok(`query($after: String) { eventTypes(first: 1, after: $after) { nodes { name } } }`, {
      after: page.pageInfo.endCursor,
    });
    expect((next.eventTypes as { nodes: { name: string }[] }).nodes[0]?.name).toBe(names[1]?.name);

    const updated = await ok(
      `mutation { updateEventType(name: "order.created", input: { deprecated: true, description: null }) { ${TYPE_FIELDS} } }`,
    );
    expect(updated.updateEventType).toMatchObject({ deprecated: true, description: null, schema: ORDER_SCHEMA });
    const unschema = await ok(`mutation { updateEventType(name: "order.paid", input: { schema: null }) { schema examples } }`);
    expect(unschema.updateEventType).toEqual({ schema: null, examples: [{ order_id: "o-2" }] });

    const deleted = await ok(`mutation { deleteEventType(name: "order.paid") { name } }`);
    expect(deleted.deleteEventType).toEqual({ name: "order.paid" });
    const gone = await gql(`query { eventType(name: "order.paid") { name } }`);
    expect(gone.json).toMatchObject({ data: { eventType: null }, errors: [{ path: ["eventType"], extensions: { code: "not_found" } }] });
  });

  it("refuses an example that breaks the schema with the failing path named, and keyway's own names as REST does", async () => {
    const { json } = await gql(`mutation($input: CreateEventTypeInput!) { createEventType(input: $input) { name } }`, {
      input: { name: "refund.issued", schema: ORDER_SCHEMA, examples: [{ order_id: "r-1", total: -1 }] },
    });
    expect(json.data).toEqual({ createEventType: null });
    const [error] = json.errors ?? [];
    expect(error).toMatchObject({ path: ["createEventType"], extensions: { code: "invalid_request", status: 400 } });
    expect(error?.message).toMatch(/^Invalid input: examples\.0\.total /);

    const unknownField = await gql(
      `mutation { updateWebhookSettings(input: { portalFrameOrigins: ["http://insecure.example"] }) { portalFrameOrigins } }`,
    );
    expect(unknownField.json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request" } });
    expect(unknownField.json.errors?.[0]?.message).toMatch(/^Invalid input: portalFrameOrigins\.0 must be an https origin/);

    const reserved = await gql(`mutation { createEventType(input: { name: "webhook.endpoint.disabled" }) { name } }`);
    expect(reserved.json.errors?.[0]).toMatchObject({ path: ["createEventType"], extensions: { code: "conflict", status: 409 } });
  });

  it("reads and changes the webhook settings as REST does", async () => {
    const fields = "refuseUnknownEventTypes portalFrameOrigins portalDisplayName portalAccentColor portalLogo { sha256 }";
    const before = await ok(`query { webhookSettings { ${fields} } }`);
    expect(before.webhookSettings).toEqual(camelize(await rest("/v1/webhook-settings")));
    const after = await ok(
      `mutation { updateWebhookSettings(input: { refuseUnknownEventTypes: true, portalFrameOrigins: ["https://dashboard.example.com"], portalDisplayName: "Acme", portalAccentColor: "#E4002B" }) { ${fields} } }`,
    );
    expect(after.updateWebhookSettings).toEqual({
      refuseUnknownEventTypes: true,
      portalFrameOrigins: ["https://dashboard.example.com"],
      portalDisplayName: "Acme",
      portalAccentColor: "#e4002b",
      portalLogo: null,
    });
    expect(camelize(await rest("/v1/webhook-settings"))).toEqual(after.updateWebhookSettings);
    await ok(`mutation { updateWebhookSettings(input: { refuseUnknownEventTypes: false }) { refuseUnknownEventTypes } }`);
  });
});

describe("recovery", () => {
  it("starts a recovery, reads it and lists it as REST does", async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const started = await ok(
      `mutation($id: ID!, $since: DateTime!) { recoverDeliveries(webhookConfigurationId: $id, since: $since) { ${RECOVERY_FIELDS} } }`,
      { id: a.configId, since },
    );
    const recovery = started.recoverDeliveries as { id: string; webhookConfigurationId: string; since: string };
    expect(recovery).toMatchObject({ webhookConfigurationId: a.configId, since });

    const read = await ok(`query($c: ID!, $id: ID!) { recovery(webhookConfigurationId: $c, id: $id) { ${RECOVERY_FIELDS} } }`, {
      c: a.configId,
      id: recovery.id,
    });
    expect(read.recovery).toEqual(camelize(await rest(`/v1/webhook-configurations/${a.configId}/recoveries/${recovery.id}`)));

    const listed = await ok(
      `query($c: ID!) { recoveries(webhookConfigurationId: $c, first: 5) { nodes { ${RECOVERY_FIELDS} } pageInfo { hasNextPage } } }`,
      {
        c: a.configId,
      },
    );
    expect(listed.recoveries).toEqual({ nodes: [read.recovery], pageInfo: { hasNextPage: false } });
  });

  it("refuses a window that ends before it starts, naming the field", async () => {
    const { json } = await gql(
      `mutation($id: ID!) { recoverDeliveries(webhookConfigurationId: $id, since: "2030-01-01T00:00:00.000Z", until: "2029-01-01T00:00:00.000Z") { id } }`,
      { id: a.configId },
    );
    expect(json.errors?.[0]).toMatchObject({ path: ["recoverDeliveries"], extensions: { code: "invalid_request", status: 400 } });
    expect(json.errors?.[0]?.message).toMatch(/until/);
  });
});

describe("portal", () => {
  it("makes a link on REST's origin, lists the session it opens and ends it", async () => {
    const made = await ok(
      `mutation($id: ID!) { createPortalLink(webhookConfigurationId: $id, expiresIn: 300) { url webhookConfigurationId expiresAt } }`,
      { id: a.configId },
    );
    const link = made.createPortalLink as { url: string; webhookConfigurationId: string; expiresAt: string };
    expect(link.webhookConfigurationId).toBe(a.configId);
    expect(link.url.startsWith(`${BASE}/portal/open?token=kw_portal_`)).toBe(true);
    const lifetime = Date.parse(link.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(290_000);
    expect(lifetime).toBeLessThanOrEqual(300_000);

    // Opened the way a browser opens it: the page, then its one form.
    const b = new Browser();
    const page = await b.get(link.url.slice(BASE.length));
    const token = new URL(link.url).searchParams.get("token") ?? "";
    expect((await b.post("/portal/open", { csrf: Browser.csrf(await page.text()), token })).status).toBe(303);

    const listed = await ok(
      `query($c: ID!) { portalSessions(webhookConfigurationId: $c) { nodes { ${SESSION_FIELDS} } pageInfo { hasNextPage } } }`,
      {
        c: a.configId,
      },
    );
    const restSessions = await body<Record<string, unknown>[]>(
      await api(a.t, a.token, `/v1/webhook-configurations/${a.configId}/portal-sessions`),
    );
    expect(listed.portalSessions).toEqual({ nodes: restSessions.data.map(camelize), pageInfo: { hasNextPage: false } });
    const [session] = (listed.portalSessions as { nodes: { id: string; status: string }[] }).nodes;
    expect(session?.status).toBe("active");

    const ended = await ok(`mutation($c: ID!, $id: ID!) { endPortalSession(webhookConfigurationId: $c, id: $id) { ${SESSION_FIELDS} } }`, {
      c: a.configId,
      id: session?.id,
    });
    expect(ended.endPortalSession).toMatchObject({ id: session?.id, status: "ended" });
    expect((await b.get("/portal")).status).toBe(403);
  });

  it("makes a link with the default lifetime and refuses one beyond the maximum, naming expiresIn", async () => {
    const made = await ok(`mutation($id: ID!) { createPortalLink(webhookConfigurationId: $id) { expiresAt } }`, { id: a.configId });
    const lifetime = Date.parse((made.createPortalLink as { expiresAt: string }).expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(590_000);
    const { json } = await gql(`mutation($id: ID!) { createPortalLink(webhookConfigurationId: $id, expiresIn: 7200) { url } }`, {
      id: a.configId,
    });
    expect(json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request", status: 400 } });
    expect(json.errors?.[0]?.message).toMatch(/^Invalid input: expiresIn must be at most 3600/);
  });
});

describe("the receiver's token endpoint (issue 31)", () => {
  const OAUTH_FIELDS = "tokenUrl clientId authMethod scope resource audience assertionAudience dpop dpopJkt jwksUri";
  const create = (oauth: Record<string, unknown>) =>
    gql(
      `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { webhookConfiguration { id oauth { ${OAUTH_FIELDS} } } } }`,
      {
        input: {
          url: "https://receiver.example/webhooks",
          oauth: { tokenUrl: "https://receiver.example/oauth/token", clientId: "kw", ...oauth },
        },
      },
    );
  type Created = { createWebhookConfiguration: { webhookConfiguration: { id: string; oauth: Record<string, unknown> } } };

  it.each([
    ["client_secret_post", { clientSecret: "s-post" }],
    [
      "client_secret_basic",
      { authMethod: "client_secret_basic", clientSecret: "s-basic", scope: "read write", audience: "https://api.receiver.example" },
    ],
    [
      "private_key_jwt",
      {
        authMethod: "private_key_jwt",
        assertionAudience: "https://receiver.example",
        resource: ["https://receiver.example/hooks"],
        dpop: true,
      },
    ],
  ] as const)("creates a configuration with %s and its settings, shown as REST shows them", async (method, oauth) => {
    const { json } = await create(oauth);
    expect(json.errors, JSON.stringify(json.errors)).toBeUndefined();
    const config = (json.data as Created).createWebhookConfiguration.webhookConfiguration;
    expect(config.oauth.authMethod).toBe(method);
    expect(config.oauth).toEqual(camelize((await rest(`/v1/webhook-configurations/${config.id}`)).oauth));
    expect(config.oauth.jwksUri).toBe(method === "private_key_jwt" ? `${BASE}/v1/receiver-jwks/${a.t.orgId}/${config.id}` : null);
    expect(config.oauth.dpop).toBe(method === "private_key_jwt");
    expect(typeof config.oauth.dpopJkt).toBe(method === "private_key_jwt" ? "string" : "object");
  });

  it("refuses a secret with private_key_jwt, and none with client_secret_basic, naming the field", async () => {
    for (const [oauth, said] of [
      [{ authMethod: "private_key_jwt", clientSecret: "not-used" }, "oauth.clientSecret is not used with private_key_jwt"],
      [{ authMethod: "client_secret_basic" }, "oauth.clientSecret is required"],
    ] as const) {
      const { json } = await create(oauth);
      expect(json.data).toBeNull();
      expect(json.errors?.[0]?.extensions).toMatchObject({ code: "invalid_request", status: 400 });
      expect(json.errors?.[0]?.message).toContain(said);
    }
  });

  it("changes the method and the settings, null removing one, as REST does", async () => {
    const { json } = await create({ clientSecret: "s", scope: "a", resource: ["https://r.example/"] });
    const id = (json.data as Created).createWebhookConfiguration.webhookConfiguration.id;
    const updated = await ok(
      `mutation($id: ID!, $input: UpdateWebhookConfigurationInput!) { updateWebhookConfiguration(id: $id, input: $input) { oauth { ${OAUTH_FIELDS} } } }`,
      { id, input: { oauth: { authMethod: "private_key_jwt", scope: null, resource: null, audience: "aud-1", dpop: true } } },
    );
    const oauth = (updated.updateWebhookConfiguration as { oauth: Record<string, unknown> }).oauth;
    expect(oauth).toMatchObject({ authMethod: "private_key_jwt", scope: null, resource: null, audience: "aud-1", dpop: true });
    expect(oauth).toEqual(camelize((await rest(`/v1/webhook-configurations/${id}`)).oauth));
  });

  it("rotates the assertion key as REST does: the new key published at once, the previous one named", async () => {
    const first = (await ok(`mutation { rotateAssertionKey { kid activatesAt previousKid previousExpiresAt } }`)).rotateAssertionKey as {
      kid: string;
      activatesAt: string;
    };
    expect(Date.parse(first.activatesAt)).toBeGreaterThan(Date.now());
    const second = (await ok(`mutation { rotateAssertionKey { kid previousKid previousExpiresAt } }`)).rotateAssertionKey as Record<
      string,
      unknown
    >;
    expect(second.kid).not.toBe(first.kid);
    expect(second.previousExpiresAt === null || typeof second.previousExpiresAt === "string").toBe(true);
    const jwks = (await (await call(`/v1/receiver-jwks/${a.t.orgId}`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toContain(second.kid);
  });

  it("tests the connection: a token request only, answered in words as REST answers it", async () => {
    fakeNetwork(receiver());
    const fields = "webhookConfigurationId ok outcome message reached httpStatus error tokenType expiresIn authMethod dpop latencyMs";
    const answer = (await ok(`mutation($id: ID!) { testWebhookConnection(id: $id) { ${fields} } }`, { id: a.configId }))
      .testWebhookConnection as Record<string, unknown>;
    expect(answer).toMatchObject({
      webhookConfigurationId: a.configId,
      ok: true,
      outcome: "token_issued",
      reached: true,
      httpStatus: 200,
      error: null,
      tokenType: "Bearer",
      expiresIn: 300,
      authMethod: "client_secret_post",
      dpop: false,
    });
    const viaRest = (
      await body<Record<string, unknown>>(await api(a.t, a.token, `/v1/webhook-configurations/${a.configId}/test-connection`, "POST"))
    ).data;
    expect({ ...answer, latencyMs: 0 }).toEqual({ ...(camelize(viaRest) as Record<string, unknown>), latencyMs: 0 });
    const { json } = await gql(`mutation { testWebhookConnection(id: "whk_00000000000000000000000000") { ok } }`);
    expect(json.errors).toEqual([
      expect.objectContaining({ path: ["testWebhookConnection"], extensions: { code: "not_found", status: 404 } }),
    ]);
  });
});

describe("what every new field shares", () => {
  const queries: [string, string][] = [
    ["eventTypes", `{ eventTypes { nodes { name } } }`],
    ["eventType", `{ eventType(name: "order.created") { name } }`],
    ["webhookSettings", `{ webhookSettings { refuseUnknownEventTypes } }`],
    ["recoveries", `query($c: ID!) { recoveries(webhookConfigurationId: $c) { nodes { id } } }`],
    ["recovery", `query($c: ID!) { recovery(webhookConfigurationId: $c, id: "rcv_00000000000000000000000000") { id } }`],
    ["portalSessions", `query($c: ID!) { portalSessions(webhookConfigurationId: $c) { nodes { id } } }`],
  ];
  const mutations: [string, string][] = [
    ["createEventType", `mutation { createEventType(input: { name: "scope.probe" }) { name } }`],
    ["updateEventType", `mutation { updateEventType(name: "order.created", input: { deprecated: false }) { name } }`],
    ["deleteEventType", `mutation { deleteEventType(name: "order.created") { name } }`],
    ["updateWebhookSettings", `mutation { updateWebhookSettings(input: {}) { refuseUnknownEventTypes } }`],
    ["recoverDeliveries", `mutation($c: ID!) { recoverDeliveries(webhookConfigurationId: $c, since: "2020-01-01T00:00:00.000Z") { id } }`],
    ["createPortalLink", `mutation($c: ID!) { createPortalLink(webhookConfigurationId: $c) { url } }`],
    ["endPortalSession", `mutation($c: ID!) { endPortalSession(webhookConfigurationId: $c, id: "pts_00000000000000000000000000") { id } }`],
    ["rotateAssertionKey", `mutation { rotateAssertionKey { kid } }`],
    ["testWebhookConnection", `mutation($c: ID!) { testWebhookConnection(id: $c) { ok } }`],
  ];

  const narrowed = async (scope: string) => {
    const res = await call("/v1/oauth", tokenRequest(a.t, { scope }));
    return String(((await res.json()) as { data: { access_token: string } }).data.access_token);
  };

  it.each(queries)("%s needs webhooks:read: without it the field fails with insufficient_scope (403)", async (field, query) => {
    const token = await narrowed("webhooks:write graphql:mutate events:write");
    const { status, json } = await gql(query, { c: a.configId }, a, token);
    expect(status).toBe(200);
    expect(json.errors).toEqual([expect.objectContaining({ path: [field], extensions: { code: "insufficient_scope", status: 403 } })]);
  });

  it.each(mutations)(
    "%s needs webhooks:write (and graphql:mutate): without it the field fails with insufficient_scope",
    async (field, query) => {
      for (const scope of ["webhooks:read graphql:mutate events:write", "webhooks:read webhooks:write events:write"]) {
        const token = await narrowed(scope);
        const { json } = await gql(query, { c: a.configId }, a, token);
        expect(json.errors, scope).toEqual([
          expect.objectContaining({ path: [field], extensions: { code: "insufficient_scope", status: 403 } }),
        ]);
      }
    },
  );

  it("counts each mutation field as one request against the API key", async () => {
    const costOf = (query: string) => env.GRAPHQL.cost({ query, variables: { c: a.configId } });
    for (const [field, query] of mutations) expect(await costOf(query), field).toBe(1);
    // All of them in one document, each aliased: one request each.
    const body = (query: string) => query.replace(/^mutation(\(\$c: ID!\))? \{ /, "").replace(/ \}$/, "");
    const all = `mutation($c: ID!) { ${mutations.map(([, query], i) => `m${i}: ${body(query)}`).join(" ")} }`;
    expect(await costOf(all)).toBe(mutations.length);
  });

  it("finds nothing of another organization: its configurations, recoveries, sessions and event types", async () => {
    const b = await org();
    await ok(`mutation { createEventType(input: { name: "theirs.only" }) { name } }`, undefined, b);
    const recovery = (
      await ok(
        `mutation($c: ID!) { recoverDeliveries(webhookConfigurationId: $c, since: "${new Date(Date.now() - 60_000).toISOString()}") { id } }`,
        { c: b.configId },
        b,
      )
    ).recoverDeliveries as { id: string };
    const foreign: [string, string, Record<string, unknown>][] = [
      ["eventType", `{ eventType(name: "theirs.only") { name } }`, {}],
      ["updateEventType", `mutation { updateEventType(name: "theirs.only", input: { deprecated: true }) { name } }`, {}],
      ["deleteEventType", `mutation { deleteEventType(name: "theirs.only") { name } }`, {}],
      ["recovery", `query($c: ID!, $id: ID!) { recovery(webhookConfigurationId: $c, id: $id) { id } }`, { c: b.configId, id: recovery.id }],
      ["recoveries", `query($c: ID!) { recoveries(webhookConfigurationId: $c) { nodes { id } } }`, { c: b.configId }],
      [
        "recoverDeliveries",
        `mutation($c: ID!) { recoverDeliveries(webhookConfigurationId: $c, since: "${new Date(Date.now() - 60_000).toISOString()}") { id } }`,
        { c: b.configId },
      ],
      ["createPortalLink", `mutation($c: ID!) { createPortalLink(webhookConfigurationId: $c) { url } }`, { c: b.configId }],
      ["portalSessions", `query($c: ID!) { portalSessions(webhookConfigurationId: $c) { nodes { id } } }`, { c: b.configId }],
    ];
    for (const [field, query, variables] of foreign) {
      const { json } = await gql(query, variables);
      expect(json.errors, field).toEqual([expect.objectContaining({ path: [field], extensions: { code: "not_found", status: 404 } })]);
    }
    // The other organization still has them.
    expect((await ok(`{ eventType(name: "theirs.only") { deprecated } }`, undefined, b)).eventType).toEqual({ deprecated: false });
  });
});
