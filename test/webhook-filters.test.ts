/**
 * Payload filters and channels through the API (docs/receivers.md, "Filters and channels"): a
 * configuration's `filter` is checked against the schemas of the types it receives when written
 * (a 400 naming the path), and a publish fans out only to the configurations whose channels and
 * filter match, so a filtered-out event makes no delivery at all.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { authed, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { api, createConfig } from "./webhook-helpers";

let t: Tenant;
let token: string;

const ORDER = {
  type: "object",
  properties: {
    account: { type: "string" },
    amount: { type: "integer" },
    status: { type: "string", enum: ["open", "paid"] },
    tags: { type: "array", items: { type: "string" } },
  },
  required: ["account", "amount"],
};

beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
  const res = await api(t, token, "/v1/event-types", "POST", { name: "order.created", schema: ORDER });
  expect(res.status).toBe(201);
  expect((await api(t, token, "/v1/event-types", "POST", { name: "note.added" })).status).toBe(201);
});

const SECRET = "receiver-secret-0123456789";

async function publish(data: unknown, channels?: string[], type = "order.created"): Promise<string[]> {
  const res = await api(t, token, "/v1/events", "POST", { type, data, ...(channels ? { channels } : {}) });
  const json = await body<{ deliveries: { webhook_configuration_id: string }[] }>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data.deliveries.map((d) => d.webhook_configuration_id).sort();
}

async function refusal(payload: Record<string, unknown>, path = "/v1/webhook-configurations", method = "POST"): Promise<string> {
  const res = await api(
    t,
    token,
    path,
    method,
    method === "POST"
      ? {
          url: "https://receiver.test/hook",
          oauth: { token_url: "https://receiver.test/token", client_id: "k", client_secret: SECRET },
          ...payload,
        }
      : payload,
  );
  const json = await body<unknown>(res);
  expect(res.status, JSON.stringify(json)).toBe(400);
  return (json as { developer_message: string }).developer_message;
}

describe("a configuration's filter, checked when written", () => {
  it("names the path its types' schema lacks, with what it names and a did-you-mean", async () => {
    expect(await refusal({ events: ["order.created"], filter: { data: { acount: "acct_1" } } })).toContain(
      'filter.data.acount is not in the event type\'s schema, which names "account", "amount", "status", "tags" (did you mean "account"?)',
    );
  });

  it("refuses a comparison of the wrong type, a value the schema does not allow, and a regular expression", async () => {
    expect(await refusal({ events: ["order.created"], filter: { data: { amount: { $gte: "100" } } } })).toContain(
      'filter.data.amount."$gte" compares with a string, but the schema has a number here',
    );
    expect(await refusal({ events: ["order.created"], filter: { data: { status: "piad" } } })).toContain('did you mean "paid"?');
    expect(await refusal({ filter: { data: { account: { $regex: "^acct" } } } })).toContain("no regular expressions");
    expect(await refusal({ events: ["note.added"], filter: { data: { text: "x" } } })).toContain(
      "no event type this configuration receives has a schema",
    );
  });

  it("is checked again when the configuration's types change", async () => {
    const config = await createConfig(t, token, SECRET, { events: ["order.created"], filter: { data: { account: "acct_1" } } });
    expect(await refusal({ events: ["note.added"] }, `/v1/webhook-configurations/${config.id}`, "PATCH")).toContain(
      "filter.data names the event's data, but no event type this configuration receives has a schema",
    );
  });

  it("is shown as written, and removed with {} or null", async () => {
    const config = await createConfig(t, token, SECRET, {
      events: ["order.created"],
      filter: { data: { amount: { $gte: 100 } } },
      channels: ["eu"],
    });
    const read = await body<{ filter: unknown; channels: unknown }>(await api(t, token, `/v1/webhook-configurations/${config.id}`, "GET"));
    expect(read.data).toMatchObject({ filter: { data: { amount: { $gte: 100 } } }, channels: ["eu"] });
    const cleared = await body<{ filter: unknown; channels: unknown }>(
      await api(t, token, `/v1/webhook-configurations/${config.id}`, "PATCH", { filter: {}, channels: null }),
    );
    expect(cleared.data).toMatchObject({ filter: null, channels: null });
  });
});

describe("a schema change that would leave a live filter matching nothing", () => {
  it("is refused, naming the configuration and the path; a change the filters survive is not", async () => {
    const org = await createTenant();
    const bearer = await issueToken(org);
    const schema = { type: "object", properties: { account: { type: "string" }, amount: { type: "integer" } } };
    expect((await api(org, bearer, "/v1/event-types", "POST", { name: "order.created", schema })).status).toBe(201);
    const config = await createConfig(org, bearer, SECRET, { events: ["order.created"], filter: { data: { amount: { $gte: 100 } } } });
    const renamed = { type: "object", properties: { account: { type: "string" }, total: { type: "integer" } } };
    const refused = await api(org, bearer, "/v1/event-types/order.created", "PATCH", { schema: renamed });
    const json = await body<unknown>(refused);
    expect(refused.status, JSON.stringify(json)).toBe(409);
    expect((json as { developer_message: string }).developer_message).toContain(
      `The new schema of order.created would leave 1 webhook configuration filter matching nothing (${config.id}: filter.data.amount is not in the event type's schema`,
    );
    expect((await api(org, bearer, "/v1/event-types/order.created", "DELETE")).status).toBe(409);
    const widened = { type: "object", properties: { ...schema.properties, currency: { type: "string" } } };
    expect((await api(org, bearer, "/v1/event-types/order.created", "PATCH", { schema: widened })).status).toBe(200);
    expect((await api(org, bearer, `/v1/webhook-configurations/${config.id}`, "PATCH", { filter: null })).status).toBe(200);
    expect((await api(org, bearer, "/v1/event-types/order.created", "PATCH", { schema: renamed })).status).toBe(200);
  });
});

describe("fan-out by channels and filters", () => {
  it("sends each event only to the configurations it matches, and records nothing for the rest", async () => {
    const org = await createTenant();
    const bearer = await issueToken(org);
    expect((await api(org, bearer, "/v1/event-types", "POST", { name: "order.created", schema: ORDER })).status).toBe(201);
    const make = async (overrides: Record<string, unknown>) =>
      (await createConfig(org, bearer, SECRET, { events: ["order.created"], ...overrides })).id;
    const all = await make({});
    const big = await make({ filter: { data: { amount: { $gte: 100 } } } });
    const acct1 = await make({ filter: { data: { account: "acct_1" } } });
    const eu = await make({ channels: ["eu"] });
    const euBigOrUrgent = await make({
      channels: ["eu"],
      filter: { $or: [{ data: { amount: { $gte: 100 } } }, { data: { tags: "urgent" } }] },
    });
    const notPaid = await make({ filter: { data: { status: { $not: { $in: ["paid"] } } } } });
    const send = async (data: unknown, channels?: string[]) => {
      const res = await api(org, bearer, "/v1/events", "POST", { type: "order.created", data, ...(channels ? { channels } : {}) });
      const json = await body<{ deliveries: { webhook_configuration_id: string }[] }>(res);
      expect(res.status, JSON.stringify(json)).toBe(202);
      return json.data.deliveries.map((d) => d.webhook_configuration_id).sort();
    };
    expect(await send({ account: "acct_1", amount: 50 })).toEqual([all, acct1, notPaid].sort());
    expect(await send({ account: "acct_2", amount: 500, status: "paid" }, ["eu"])).toEqual([all, big, eu, euBigOrUrgent].sort());
    expect(await send({ account: "acct_2", amount: 5, tags: ["urgent"] }, ["us", "eu"])).toEqual([all, eu, euBigOrUrgent, notPaid].sort());
    expect(await send({ account: "acct_3", amount: 5, status: "paid" }, ["us"])).toEqual([all]);
  });

  it("a polling configuration keeps only the events its filter and channels match", async () => {
    const org = await createTenant();
    const bearer = await issueToken(org);
    expect((await api(org, bearer, "/v1/event-types", "POST", { name: "order.created", schema: ORDER })).status).toBe(201);
    const res = await api(org, bearer, "/v1/webhook-configurations", "POST", {
      delivery: "polling",
      events: ["order.created"],
      filter: { data: { amount: { $gt: 10 } } },
      channels: ["eu"],
    });
    const json = await body<{ id: string }>(res);
    expect(res.status, JSON.stringify(json)).toBe(201);
    const send = async (data: unknown, channels: string[]) => {
      const r = await api(org, bearer, "/v1/events", "POST", { type: "order.created", data, channels });
      return (await body<{ deliveries: unknown[] }>(r)).data.deliveries.length;
    };
    expect([
      await send({ account: "a", amount: 11 }, ["eu"]),
      await send({ account: "a", amount: 9 }, ["eu"]),
      await send({ account: "a", amount: 11 }, ["us"]),
    ]).toEqual([1, 0, 0]);
  });

  it("a publish's channels are bounded and named", async () => {
    const res = await api(t, token, "/v1/events", "POST", {
      type: "order.created",
      data: { account: "a", amount: 1 },
      channels: ["no spaces"],
    });
    expect(res.status).toBe(400);
    const many = await api(t, token, "/v1/events", "POST", {
      type: "order.created",
      data: { account: "a", amount: 1 },
      channels: Array.from({ length: 11 }, (_, i) => `c${i}`),
    });
    expect(many.status).toBe(400);
    expect(await publish({ account: "a", amount: 1 }, ["eu"])).toBeInstanceOf(Array);
  });
});

const postGraphQL = (payload: string, tenant: Tenant, bearer: string) =>
  call("/v1/graphql", authed(tenant, bearer, { method: "POST", headers: { "Content-Type": "application/json" }, body: payload }));

describe("through GraphQL", () => {
  it("takes and shows a filter with its keys as written (operators and the event's camelCase fields are never renamed)", async () => {
    const org = await createTenant();
    const bearer = await issueToken(org);
    const schema = { type: "object", properties: { accountId: { type: "string" }, total_cents: { type: "integer" } } };
    expect((await api(org, bearer, "/v1/event-types", "POST", { name: "invoice.paid", schema })).status).toBe(201);
    const filter = { data: { accountId: { $startsWith: "acct_" }, total_cents: { $gte: 100 } } };
    const res = await postGraphQL(
      JSON.stringify({
        query: `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { webhookConfiguration { id filter channels } } }`,
        variables: {
          input: {
            url: "https://receiver.test/hook",
            events: ["invoice.paid"],
            oauth: { tokenUrl: "https://receiver.test/token", clientId: "k", clientSecret: SECRET },
            filter,
            channels: ["eu"],
          },
        },
      }),
      org,
      bearer,
    );
    const json = (await res.json()) as {
      data?: { createWebhookConfiguration: { webhookConfiguration: { id: string; filter: unknown; channels: unknown } } };
      errors?: unknown;
    };
    expect(json.errors, JSON.stringify(json.errors)).toBeUndefined();
    const created = json.data!.createWebhookConfiguration.webhookConfiguration;
    expect(created).toMatchObject({ filter, channels: ["eu"] });
    const read = await body<{ filter: unknown }>(await api(org, bearer, `/v1/webhook-configurations/${created.id}`, "GET"));
    expect(read.data.filter).toEqual(filter);
  });
});
