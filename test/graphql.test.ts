/**
 * The GraphQL API: same authorization as REST (refused with the 401 envelope before any GraphQL
 * work), every operation returning the same data as its REST equivalent, errors with REST codes,
 * and the abuse limits (depth, fields/aliases, document size) refusing documents unexecuted.
 */
import { getIntrospectionQuery } from "graphql";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { camelize } from "../src/graphql/resolvers";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { inWebhooks } from "./webhook-helpers";

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
  fakeNetwork(receiver());
});

interface GqlResponse {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions: { code: string; status?: number }; path?: string[] }[];
}

/** POST /v1/graphql with a raw body, as the tenant (default: the suite's). */
function postGraphQL(payload: string, tenant = t, bearer = token): Promise<Response> {
  return call("/v1/graphql", authed(tenant, bearer, { method: "POST", headers: { "Content-Type": "application/json" }, body: payload }));
}

async function gql(query: string, variables?: Record<string, unknown>, tenant = t, bearer = token) {
  const res = await postGraphQL(JSON.stringify({ query, ...(variables ? { variables } : {}) }), tenant, bearer);
  return { status: res.status, json: (await res.json()) as GqlResponse };
}

const rest = async (path: string, init: RequestInit = {}) => (await body<unknown>(await call(path, authed(t, token, init)))).data;

const CONFIG_FIELDS = `id organizationId delivery url events description oauth { tokenUrl clientId authMethod scope resource audience assertionAudience dpop dpopJkt jwksUri } tokenCache ordered rateLimit operations filter channels receiverFilter receiverChannels status disabledReason lane pausedUntil pauseReason failingSince lastDeliveredAt signatureScheme signingPublicKey signingSecretRotatedAt polling { url tokenActive backlog lastPolledAt } createdAt updatedAt`;
const DELIVERY_FIELDS = `id organizationId webhookConfigurationId eventId eventType status attempts { number series at step httpStatus latencyMs outcome error note } nextAttemptAt inFlightUntil createdAt updatedAt`;
const oauthInput = { tokenUrl: TOKEN_URL, clientId: "kw", clientSecret: "receiver-secret" };

async function createViaGraphQL(extra: Record<string, unknown> = {}) {
  const { json } = await gql(
    `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { signingSecret webhookConfiguration { ${CONFIG_FIELDS} } } }`,
    { input: { url: WEBHOOK_URL, oauth: oauthInput, ...extra } },
  );
  expect(json.errors).toBeUndefined();
  return json.data!.createWebhookConfiguration as { signingSecret: string; webhookConfiguration: { id: string } };
}

describe("authorization", () => {
  it.each([
    ["no API key", { Authorization: "Bearer x" }, "invalid_api_key"],
    ["no access token", "key-only", "invalid_token"],
    ["a bad access token", "bad-token", "invalid_token"],
  ])("refuses %s with the 401 envelope before any GraphQL work", async (_name, headers, code) => {
    const h: Record<string, string> =
      headers === "key-only"
        ? { "x-api-key": t.apiKey }
        : headers === "bad-token"
          ? { "x-api-key": t.apiKey, Authorization: "Bearer kw_at_nope" }
          : (headers as Record<string, string>);
    const res = await call("/v1/graphql", {
      method: "POST",
      headers: { ...h, "Content-Type": "application/json" },
      body: JSON.stringify({ query: "{ viewer { organizationId } }" }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ response_status: 401, error: code, data: null });
  });

  it("does not find another organization's configuration", async () => {
    const mine = await createViaGraphQL();
    const other = await createTenant();
    const otherToken = await issueToken(other);
    const { status, json } = await gql(
      `query($id: ID!) { webhookConfiguration(id: $id) { id } }`,
      { id: mine.webhookConfiguration.id },
      other,
      otherToken,
    );
    expect(status).toBe(200);
    expect(json.data).toEqual({ webhookConfiguration: null });
    expect(json.errors?.[0]).toMatchObject({ extensions: { code: "not_found", status: 404 }, path: ["webhookConfiguration"] });
  });
});

describe("every operation returns what REST returns", () => {
  it("viewer matches /v1/me and the key's usage", async () => {
    const { json } = await gql(
      `{ viewer { organizationId userId clientId apiKeyId token { id issuedAt expiresAt } rateLimit { day { limit used remaining resetsAt } second { limit } } } }`,
    );
    const me = (await rest("/v1/me")) as Record<string, unknown> & { token: Record<string, unknown> };
    const viewer = json.data!.viewer as Record<string, unknown> & { rateLimit: { day: { limit: number; used: number } } };
    expect(viewer).toMatchObject({
      organizationId: me.organization_id,
      userId: me.user_id,
      clientId: me.client_id,
      apiKeyId: me.api_key_id,
      token: { id: me.token.id, issuedAt: me.token.issued_at, expiresAt: me.token.expires_at },
    });
    expect(viewer.rateLimit.day.limit).toBe(100_000);
    expect(viewer.rateLimit.day.used).toBeGreaterThan(0);
  });

  it("createWebhookConfiguration, webhookConfiguration and webhookConfigurations match REST", async () => {
    const created = await createViaGraphQL({ events: ["order.created"], description: "via graphql", tokenCache: null });
    expect(created.signingSecret).toMatch(/^whsec_/);
    const id = created.webhookConfiguration.id;
    expect(created.webhookConfiguration).toEqual(camelize(await rest(`/v1/webhook-configurations/${id}`)));
    const one = await gql(`query($id: ID!) { webhookConfiguration(id: $id) { ${CONFIG_FIELDS} } }`, { id });
    expect(one.json.data!.webhookConfiguration).toEqual(camelize(await rest(`/v1/webhook-configurations/${id}`)));
    const list = await gql(`{ webhookConfigurations(first: 100) { nodes { ${CONFIG_FIELDS} } pageInfo { hasNextPage endCursor } } }`);
    expect(list.json.data!.webhookConfigurations).toEqual({
      nodes: camelize(await rest("/v1/webhook-configurations?limit=100")),
      pageInfo: { hasNextPage: false, endCursor: null },
    });
  });

  it("sets and clears the pacing fields as REST does, and refuses bad values of them", async () => {
    const created = await createViaGraphQL({ rateLimit: 5, ordered: true, tokenCache: true });
    const id = created.webhookConfiguration.id;
    expect(created.webhookConfiguration).toMatchObject({ rateLimit: 5, ordered: true, tokenCache: true });
    const update = `mutation($id: ID!, $input: UpdateWebhookConfigurationInput!) { updateWebhookConfiguration(id: $id, input: $input) { ${CONFIG_FIELDS} } }`;
    const cleared = await gql(update, { id, input: { rateLimit: null, ordered: false } });
    expect(cleared.json.data!.updateWebhookConfiguration).toEqual(camelize(await rest(`/v1/webhook-configurations/${id}`)));
    expect(cleared.json.data!.updateWebhookConfiguration).toMatchObject({ rateLimit: null, ordered: false, tokenCache: true });
    for (const input of [{ rateLimit: 0 }, { rateLimit: 1001 }]) {
      const { json } = await gql(update, { id, input });
      // A field's error (GraphQL over HTTP answers 200 with `errors`), with the REST status in extensions.
      expect(json.errors?.[0], JSON.stringify(input)).toMatchObject({ extensions: { code: "invalid_request", status: 400 } });
      expect(json.errors?.[0]?.message).toContain("rateLimit");
    }
    // A value of the wrong type never reaches the resolver: GraphQL's own variable coercion refuses it.
    const typed = await gql(update, { id, input: { rateLimit: "5" } });
    expect(typed.status).toBe(400);
  });

  it("takes and shows the receiver's token endpoint settings of issue 31 as REST does", async () => {
    const created = await createViaGraphQL({
      oauth: {
        tokenUrl: TOKEN_URL,
        clientId: "kw-jwt",
        authMethod: "private_key_jwt",
        scope: "a b",
        resource: ["https://r.example/"],
        dpop: true,
      },
    });
    const config = created.webhookConfiguration as unknown as { id: string; oauth: Record<string, unknown> };
    expect(config).toEqual(camelize(await rest(`/v1/webhook-configurations/${config.id}`)));
    expect(config.oauth).toMatchObject({ authMethod: "private_key_jwt", scope: "a b", resource: ["https://r.example/"], dpop: true });
    expect(config.oauth.dpopJkt).toEqual(expect.any(String));
    const patched = await gql(
      `mutation($id: ID!, $input: UpdateWebhookConfigurationInput!) { updateWebhookConfiguration(id: $id, input: $input) { oauth { authMethod dpop scope } } }`,
      { id: config.id, input: { oauth: { authMethod: "client_secret_basic", clientSecret: "now-a-secret", dpop: false, scope: null } } },
    );
    expect(patched.json.data?.updateWebhookConfiguration).toEqual({
      oauth: { authMethod: "client_secret_basic", dpop: false, scope: null },
    });
  });

  it("paginates with first/after like REST's limit/cursor", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    for (let i = 0; i < 3; i++) {
      await gql(
        `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { signingSecret } }`,
        { input: { url: WEBHOOK_URL, oauth: oauthInput } },
        tenant,
        bearer,
      );
    }
    const first = await gql(
      `{ webhookConfigurations(first: 2) { nodes { id } pageInfo { hasNextPage endCursor } } }`,
      undefined,
      tenant,
      bearer,
    );
    const page1 = first.json.data!.webhookConfigurations as {
      nodes: { id: string }[];
      pageInfo: { hasNextPage: boolean; endCursor: string };
    };
    expect(page1.nodes).toHaveLength(2);
    expect(page1.pageInfo.hasNextPage).toBe(true);
    const second = await gql(
      `query($after: String) { webhookConfigurations(first: 2, after: $after) { nodes { id } pageInfo { hasNextPage } } }`,
      { after: page1.pageInfo.endCursor },
      tenant,
      bearer,
    );
    const page2 = second.json.data!.webhookConfigurations as { nodes: { id: string }[]; pageInfo: { hasNextPage: boolean } };
    expect(page2.nodes).toHaveLength(1);
    expect(page2.pageInfo.hasNextPage).toBe(false);
  });

  it("updateWebhookConfiguration, rotateSigningSecret and deleteWebhookConfiguration match REST", async () => {
    const id = (await createViaGraphQL()).webhookConfiguration.id;
    const updated = await gql(
      `mutation($id: ID!) { updateWebhookConfiguration(id: $id, input: { description: "renamed", events: ["a.b"], oauth: { clientId: "kw2" } }) { ${CONFIG_FIELDS} } }`,
      { id },
    );
    expect(updated.json.data!.updateWebhookConfiguration).toEqual(camelize(await rest(`/v1/webhook-configurations/${id}`)));
    expect(updated.json.data!.updateWebhookConfiguration).toMatchObject({
      description: "renamed",
      events: ["a.b"],
      oauth: { clientId: "kw2" },
    });

    const rotated = await gql(
      `mutation($id: ID!) { rotateSigningSecret(id: $id) { signingSecret previousSecretExpiresAt webhookConfiguration { signingSecretRotatedAt } } }`,
      { id },
    );
    expect(rotated.json.data!.rotateSigningSecret).toMatchObject({ signingSecret: expect.stringMatching(/^whsec_/) });

    const before = camelize(await rest(`/v1/webhook-configurations/${id}`));
    const deleted = await gql(`mutation($id: ID!) { deleteWebhookConfiguration(id: $id) { ${CONFIG_FIELDS} } }`, { id });
    expect(deleted.json.data!.deleteWebhookConfiguration).toEqual(before);
    expect((await call(`/v1/webhook-configurations/${id}`, authed(t, token))).status).toBe(404);
  });

  it("publishEvent, sendTestEvent, deliveries, delivery and retryDelivery match REST", async () => {
    const tenant = await createTenant();
    const bearer = await issueToken(tenant);
    const created = await gql(
      `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { webhookConfiguration { id } } }`,
      { input: { url: WEBHOOK_URL, oauth: oauthInput } },
      tenant,
      bearer,
    );
    const id = (created.json.data!.createWebhookConfiguration as { webhookConfiguration: { id: string } }).webhookConfiguration.id;

    const published = await gql(
      `mutation { publishEvent(type: "order.created", data: { order_id: "1", nested: [1, true, null] }) { id type createdAt deliveries { id webhookConfigurationId status } } }`,
      undefined,
      tenant,
      bearer,
    );
    const event = published.json.data!.publishEvent as { id: string; deliveries: { id: string }[] };
    expect(event).toMatchObject({ type: "order.created", deliveries: [{ webhookConfigurationId: id, status: "pending" }] });

    const tested = await gql(`mutation($id: ID!) { sendTestEvent(id: $id) { type deliveries { id } } }`, { id }, tenant, bearer);
    expect(tested.json.data!.sendTestEvent).toMatchObject({ type: "webhook.test" });

    const deliveryId = event.deliveries[0]!.id;
    const restDelivery = async () => camelize((await body(await call(`/v1/deliveries/${deliveryId}`, authed(tenant, bearer)))).data);
    const one = await gql(`query($id: ID!) { delivery(id: $id) { ${DELIVERY_FIELDS} } }`, { id: deliveryId }, tenant, bearer);
    expect(one.json.data!.delivery).toEqual(await restDelivery());

    const list = await gql(
      `query($id: ID!) { deliveries(webhookConfigurationId: $id) { nodes { ${DELIVERY_FIELDS} } } }`,
      { id },
      tenant,
      bearer,
    );
    const restList = camelize((await body(await call(`/v1/webhook-configurations/${id}/deliveries`, authed(tenant, bearer)))).data);
    expect((list.json.data!.deliveries as { nodes: unknown[] }).nodes).toEqual(restList);

    // A disabled configuration's deliveries cannot be re-sent: the same 409 as REST, as a GraphQL error.
    await call(
      `/v1/webhook-configurations/${id}`,
      authed(tenant, bearer, { method: "PATCH", headers: { "Content-Type": "application/json" }, body: '{"status":"disabled"}' }),
    );
    const retried = await gql(`mutation($id: ID!) { retryDelivery(id: $id) { id } }`, { id: deliveryId }, tenant, bearer);
    expect(retried.json.errors?.[0]?.extensions).toEqual({ code: "conflict", status: 409 });
  });
});

describe("errors", () => {
  it("reports invalid input with the REST rule and a GraphQL field name", async () => {
    const { json } = await gql(
      `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { signingSecret } }`,
      {
        input: { url: "http://127.0.0.1/x", oauth: { ...oauthInput, clientSecret: "" } },
      },
    );
    expect(json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request", status: 400 } });
    expect(json.errors?.[0]?.message).toMatch(/oauth\.clientSecret must not be empty/);
  });

  it.each([
    ["a syntax error", `{ viewer { `, /Syntax Error/],
    ["an unknown field", `{ viewer { password } }`, /Cannot query field "password"/],
    ["a mutation without its argument", `mutation { publishEvent(type: "a.b") { id } }`, /argument "data"/],
  ])("answers %s with 400 and invalid_request", async (_name, query, message) => {
    const { status, json } = await gql(query);
    expect(status).toBe(400);
    expect(json.data).toBeUndefined();
    expect(json.errors?.[0]?.extensions.code).toBe("invalid_request");
    expect(json.errors?.[0]?.message).toMatch(message);
  });

  it("answers variables of the wrong type with 400", async () => {
    const { status, json } = await gql(`query($first: Int) { webhookConfigurations(first: $first) { nodes { id } } }`, { first: "ten" });
    expect(status).toBe(400);
    expect(json.errors?.[0]?.message).toMatch(/Int cannot represent/);
  });

  it("refuses a list page size over 100 like REST", async () => {
    const { json } = await gql(`{ webhookConfigurations(first: 1000) { nodes { id } } }`);
    expect(json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request" } });
    expect(json.errors?.[0]?.message).toMatch(/limit must be at most 100/);
  });

  it.each([
    ["a non-JSON body", "{", 400],
    ["a body without query", "{}", 400],
    ["variables that are an array", JSON.stringify({ query: "{ viewer { userId } }", variables: [1] }), 400],
  ])("refuses %s", async (_name, payload, status) => {
    const res = await postGraphQL(payload);
    expect(res.status).toBe(status);
  });

  it.each([
    ["alone", { query: "subscription { viewer { userId } }" }],
    ["chosen by operationName", { query: "query Q { viewer { userId } } subscription S { viewer { userId } }", operationName: "S" }],
  ])("refuses a subscription (%s) with 400, executing nothing", async (_name, payload) => {
    const res = await postGraphQL(JSON.stringify(payload));
    expect(res.status).toBe(400);
    const json = (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
    expect(json.data).toBeUndefined();
    expect(json.errors?.[0]?.message).toMatch(/Subscriptions are not supported/);
    expect(json.errors?.[0]?.extensions?.code).toBe("invalid_request");
  });

  it("runs queries over GET and refuses mutations over GET with 405", async () => {
    const q = encodeURIComponent("{ viewer { organizationId } }");
    const ok = await call(`/v1/graphql?query=${q}`, authed(t, token));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ data: { viewer: { organizationId: t.orgId } } });
    const m = encodeURIComponent(`mutation { sendTestEvent(id: "whk_x") { id } }`);
    const refused = await call(`/v1/graphql?query=${m}`, authed(t, token));
    expect(refused.status).toBe(405);
    expect(refused.headers.get("allow")).toBe("POST");
  });
});

describe("abuse limits", () => {
  it("refuses a 5000-alias query without executing it", async () => {
    const aliases = Array.from({ length: 5000 }, (_, i) => `a${i}: viewer { userId }`).join(" ");
    const res = await postGraphQL(JSON.stringify({ query: `{ ${aliases} }` }));
    // Either the byte cap of the request body or the document limit stops it: never executed.
    expect([400, 413]).toContain(res.status);
    const text = await res.text();
    expect(text).not.toContain(t.userId);
  });

  it("refuses a query selecting more than 200 fields", async () => {
    const aliases = Array.from({ length: 201 }, (_, i) => `a${i}: __typename`).join(" ");
    const { status, json } = await gql(`{ ${aliases} }`);
    expect(status).toBe(400);
    expect(json.errors?.[0]?.message).toBe("The query selects 201 fields (aliases included); the limit is 200.");
  });

  it("refuses a query nested deeper than 8 levels, through fields and fragments, before validation", async () => {
    const nest = (n: number) => `${"a { ".repeat(n)}b${" }".repeat(n)}`;
    const direct = await gql(`{ ${nest(8)} }`);
    expect(direct.json.errors?.[0]?.message).toBe("The query is 9 levels deep; the limit is 8.");
    const viaFragments = await gql(`{ a { ...F1 } } fragment F1 on Query { b { ...F2 } } fragment F2 on Query { ${nest(7)} }`);
    expect(viaFragments.status).toBe(400);
    expect(viaFragments.json.errors?.[0]?.message).toBe("The query is 10 levels deep; the limit is 8.");
    // At the limit, the document reaches validation (which then rejects the made-up fields).
    const atLimit = await gql(`{ ${nest(7)} }`);
    expect(atLimit.json.errors?.[0]?.message).toMatch(/Cannot query field "a"/);
    // The deepest real path in the schema is well within the limit.
    const real = await gql(`{ deliveries(webhookConfigurationId: "whk_x") { nodes { attempts { number } } } }`);
    expect(real.json.errors?.[0]?.extensions.code).toBe("not_found");
  });

  it("refuses a document over 10,000 characters", async () => {
    const { status, json } = await gql(`{ viewer { userId } } # ${"x".repeat(10_000)}`);
    expect(status).toBe(400);
    expect(json.errors?.[0]?.message).toMatch(/the limit is 10000/);
  });

  it("counts introspection toward the limits: forty aliased __schema selections are refused unexecuted", async () => {
    const one = "__schema { types { name kind description fields { name description type { name kind ofType { name kind } } } } }";
    const aliases = Array.from({ length: 40 }, (_, i) => `s${i}: ${one}`).join(" ");
    const res = await postGraphQL(JSON.stringify({ query: `{ ${aliases} }` }));
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text.length).toBeLessThan(1000);
    expect(JSON.parse(text).errors[0].message).toBe("The query's introspection returns more than 5000 fields; the limit is 5000.");
    // One such selection is well within the limit.
    const single = await gql(`{ ${one} }`);
    expect(single.status).toBe(200);
  });

  it("counts __type answers too, whatever the type name (a variable counts as the largest type)", async () => {
    const aliases = Array.from({ length: 150 }, (_, i) => `t${i}: __type(name: "Mutation") { ...M }`).join(" ");
    const many = await gql(`{ ${aliases} } fragment M on __Type { name fields { name args { name type { name } } } }`);
    expect(many.status).toBe(400);
    expect(many.json.errors?.[0]?.message).toMatch(/introspection returns more than 5000 fields/);
    const byVariable = await gql(`query($n: String!) { __type(name: $n) { name fields { name } } }`, { n: "WebhookConfiguration" });
    expect(byVariable.status).toBe(200);
    expect((byVariable.json.data!.__type as { fields: unknown[] }).fields).toHaveLength(28);
  });

  it("passes the standard introspection query with every option on", async () => {
    const query = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
      oneOf: true,
    });
    const { status, json } = await gql(query);
    expect(status).toBe(200);
    expect(json.errors).toBeUndefined();
  });

  it("counts a fragment's fields at every spread", async () => {
    const fields = Array.from({ length: 10 }, () => "userId").join(" ");
    const spreads = Array.from({ length: 21 }, (_, i) => `v${i}: viewer { ...F }`).join(" ");
    const { status, json } = await gql(`{ ${spreads} } fragment F on Viewer { ${fields} }`);
    expect(status).toBe(400);
    expect(json.errors?.[0]?.message).toBe("The query selects 231 fields (aliases included); the limit is 200.");
  });

  it("measures fragments that double at every level in linear time", async () => {
    const levels = 40;
    const fragments = Array.from({ length: levels }, (_, i) =>
      i === levels - 1
        ? `fragment F${i} on Viewer { userId }`
        : `fragment F${i} on Viewer { ...F${i + 1} a${i}: token { id } ...F${i + 1} }`,
    ).join(" ");
    const started = Date.now();
    const { status, json } = await gql(`{ viewer { ...F0 } } ${fragments}`);
    expect(status).toBe(400);
    expect(json.errors?.[0]?.message).toMatch(/^The query selects \d+ fields/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("bounds the work of counting introspection, even through fragments that double at every level", async () => {
    for (const leaf of ["...Missing", "...F59"]) {
      const fragments = Array.from({ length: 60 }, (_, i) =>
        i === 59 ? `fragment F59 on __Schema { ${leaf} }` : `fragment F${i} on __Schema { ...F${i + 1} ...F${i + 1} }`,
      ).join(" ");
      const started = Date.now();
      const { status, json } = await gql(`{ __schema { ...F0 } } ${fragments}`);
      expect(status).toBe(400);
      expect(json.errors?.[0]?.message).toBe("The query's introspection is too complex to evaluate (more than 20000 selections to visit).");
      expect(Date.now() - started).toBeLessThan(2000);
    }
  });

  it("refuses argument values nested deeper than 64 levels before validation", async () => {
    const nested = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;
    const deep = await gql(`mutation { publishEvent(type: "order.created", data: ${nested(65)}) { id } }`);
    expect(deep.status).toBe(400);
    expect(deep.json.errors?.[0]?.message).toBe("An argument value nests objects and lists deeper than 64 levels.");
    const objects = await gql(`mutation { publishEvent(type: "order.created", data: ${"{a: ".repeat(65)}1${"}".repeat(65)}) { id } }`);
    expect(objects.json.errors?.[0]?.message).toBe("An argument value nests objects and lists deeper than 64 levels.");
    const atLimit = await gql(`mutation { publishEvent(type: "order.created", data: ${nested(64)}) { id } }`);
    expect(atLimit.status).toBe(200);
    expect(atLimit.json.errors).toBeUndefined();
  });

  it("refuses variables nested deeper than 64 levels, in a POST body or a GET query string", async () => {
    const query = 'mutation($d: JSON!) { publishEvent(type: "order.created", data: $d) { id } }';
    const nested = (n: number): unknown => (n === 0 ? 1 : [nested(n - 1)]);
    // The body is level 1 and variables level 2, so data may nest 62 more.
    const post = await postGraphQL(JSON.stringify({ query, variables: { d: nested(63) } }));
    expect(post.status).toBe(400);
    expect(await post.json()).toMatchObject({
      error: "invalid_request",
      developer_message: "The request body nests JSON objects and arrays deeper than 64 levels.",
    });
    const within = await gql(query, { d: nested(62) });
    expect(within.status).toBe(200);
    const get = await call(
      `/v1/graphql?query=${encodeURIComponent("query($v: String) { viewer { userId } }")}&variables=${encodeURIComponent(JSON.stringify({ v: nested(64) }))}`,
      authed(t, token),
    );
    expect(get.status).toBe(400);
    expect(await get.json()).toMatchObject({
      error: "invalid_request",
      developer_message: "The variables query parameter nests JSON objects and arrays deeper than 64 levels.",
    });
  });

  it("keeps introspection on", async () => {
    const { status, json } = await gql(getIntrospectionQuery());
    expect(status).toBe(200);
    const types = (json.data!.__schema as { types: { name: string }[] }).types.map((ty) => ty.name);
    expect(types).toEqual(expect.arrayContaining(["WebhookConfiguration", "Delivery", "Viewer"]));
  });
});

describe("each mutation field counts against the API key's limits", () => {
  const remainingToday = (res: Response) => Number(/"day";r=(\d+)/.exec(res.headers.get("ratelimit") ?? "")?.[1]);

  it("refuses, with 429 and before any runs, mutations that exceed what the key has left", async () => {
    const tenant = await createTenant({ per_second: 1000, per_day: 14 });
    const bearer = await issueToken(tenant); // 1 request spent
    const config = await gql(
      `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { webhookConfiguration { id } } }`,
      { input: { url: WEBHOOK_URL, oauth: oauthInput } },
      tenant,
      bearer,
    );
    expect(config.json.errors).toBeUndefined(); // 2 spent, 12 left
    const id = (config.json.data!.createWebhookConfiguration as { webhookConfiguration: { id: string } }).webhookConfiguration.id;
    const aliases = Array.from({ length: 25 }, (_, i) => `p${i}: publishEvent(type: "order.created", data: {n: ${i}}) { id }`).join(" ");
    const res = await postGraphQL(JSON.stringify({ query: `mutation { ${aliases} }` }), tenant, bearer);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).not.toBeNull();
    const refused = (await res.json()) as { error: string; developer_message: string };
    expect(refused.error).toBe("rate_limited");
    expect(refused.developer_message).toMatch(
      /this request counts as 25 requests \(a route's weight, or one per GraphQL mutation field\), more than the 12 left/,
    );
    // Nothing ran: no event, no delivery.
    const deliveries = await body<unknown[]>(await call(`/v1/webhook-configurations/${id}/deliveries`, authed(tenant, bearer)));
    expect(deliveries.data).toEqual([]);
    // And nothing was counted: what is left still fits a request that fits.
    const three = Array.from({ length: 3 }, (_, i) => `q${i}: publishEvent(type: "a.b", data: {n: ${i}}) { id }`).join(" ");
    const ok = await postGraphQL(JSON.stringify({ query: `mutation { ${three} }` }), tenant, bearer);
    expect(ok.status).toBe(200);
    expect(remainingToday(ok)).toBe(12 - 1 - 3); // the deliveries list above, then the three
  });

  it("counts as executed: fields sharing a response key once, @skip and @include applied, fragments expanded, queries as one", async () => {
    const tenant = await createTenant({ per_second: 1000, per_day: 1000 });
    const bearer = await issueToken(tenant);
    const cost = async (query: string, variables?: Record<string, unknown>) => {
      const before = remainingToday(await postGraphQL(JSON.stringify({ query: "{ viewer { userId } }" }), tenant, bearer));
      const res = await postGraphQL(JSON.stringify({ query, ...(variables ? { variables } : {}) }), tenant, bearer);
      expect(res.status).toBe(200);
      return before - remainingToday(res);
    };
    const p = (alias: string, extra = "") => `${alias}: publishEvent(type: "a.b", data: {}) ${extra} { id }`;
    expect(await cost("{ viewer { userId } }")).toBe(1);
    expect(await cost(`mutation { ${p("a")} ${p("b")} }`)).toBe(2);
    expect(await cost(`mutation { ${p("a")} ${p("a")} }`)).toBe(1);
    expect(
      await cost(`mutation($s: Boolean!) { ${p("a")} ${p("b", "@skip(if: $s)")} ${p("c", "@include(if: false)")} }`, { s: true }),
    ).toBe(1);
    expect(await cost(`mutation { ...M ${p("c")} } fragment M on Mutation { ${p("a")} ${p("b")} }`)).toBe(3);
    expect(await cost(`mutation { __typename }`)).toBe(1);
    // Defaults count as execution sees them: an omitted variable with a default is that default.
    expect(await cost(`mutation($s: Boolean = false) { ${p("a", "@skip(if: $s)")} ${p("b", "@skip(if: $s)")} }`)).toBe(2);
  });
});

describe("errors from the service behind the engine", () => {
  it("reports a fault of ours as server_error with a generic message; the detail is logged, never sent", async () => {
    const created = await createViaGraphQL();
    const id = created.webhookConfiguration.id;
    // A stored record that no longer parses: the organization's object throws reading it.
    await inWebhooks(t.orgId, "UPDATE configurations SET events = '{not json' WHERE id = ?", id);
    const lines: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      const { status, json } = await gql(`query($id: ID!) { webhookConfiguration(id: $id) { id } }`, { id });
      expect(status).toBe(200);
      expect(json.data).toEqual({ webhookConfiguration: null });
      expect(json.errors).toEqual([
        {
          message: "An internal error occurred. It has been logged.",
          locations: [{ line: 1, column: 19 }],
          path: ["webhookConfiguration"],
          extensions: { code: "server_error", status: 500 },
        },
      ]);
      expect(JSON.stringify(json)).not.toContain("JSON");
    } finally {
      spy.mockRestore();
      await inWebhooks(t.orgId, "UPDATE configurations SET events = NULL WHERE id = ?", id);
    }
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "graphql field failed");
    expect(logged).toMatchObject({ code: "server_error", field: "webhookConfiguration", detail: expect.stringContaining("JSON") });
  });
});
