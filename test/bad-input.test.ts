/**
 * Hostile and malformed input: every case is answered with a 4xx envelope (never a 5xx, a hang
 * or a stack trace), and no secret ever reaches a log line.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN_TOKEN, authed, basic, body, call, createTenant, type Envelope, issueToken, type Tenant } from "./helpers";

let t: Tenant;
let token: string;
const logged: string[] = [];

beforeAll(async () => {
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    });
  }
  t = await createTenant();
  token = await issueToken(t);
});

afterAll(() => {
  vi.restoreAllMocks();
});

const json = "application/json";
const form = "application/x-www-form-urlencoded";
const big = (n: number) => "A".repeat(n);

/** Bodies that use the tenant are thunks: cases are declared before beforeAll runs. */
type LazyBody = BodyInit | null | (() => BodyInit);

function oauth(body: LazyBody, contentType: string | null = json, extra: Record<string, string> = {}): () => RequestInit {
  return () => {
    const headers: Record<string, string> = { "x-api-key": t.apiKey, ...extra };
    if (contentType !== null) headers["Content-Type"] = contentType;
    return { method: "POST", headers, body: typeof body === "function" ? body() : body };
  };
}
const creds = (o: Record<string, unknown>) => (): string =>
  JSON.stringify({ grant_type: "client_credentials", client_id: t.clientId, client_secret: t.clientSecret, ...o });
const adminPost = (body: string) => (): RequestInit => ({
  method: "POST",
  headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": json },
  body,
});

/** A JSON POST with the tenant's API key and access token. */
const bearerPost = (body: string) => (): RequestInit => ({
  method: "POST",
  headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${token}`, "Content-Type": json },
  body,
});
/** `{"type":...,"data":<n nested arrays>}`: the body itself is level 1. */
const nestedEvent = (n: number) => `{"type":"order.created","data":${"[".repeat(n)}${"]".repeat(n)}}`;

/** A token request whose body, one byte over the 16 KiB cap, arrives as a stream. */
const streamedOverCap = (headers: Record<string, string>) => (): RequestInit =>
  ({
    method: "POST",
    headers: { "x-api-key": t.apiKey, "Content-Type": json, ...headers },
    body: new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big(16 * 1024 + 1)));
        c.close();
      },
    }),
    duplex: "half",
  }) as RequestInit;

type Case = [name: string, path: string, init: () => RequestInit, status: number];

const cases: Case[] = [
  ["a 1 MiB JSON body", "/v1/oauth", oauth(`{"client_id":"${big(1 << 20)}"}`), 413],
  ["a body just over the 16 KiB cap, streamed without Content-Length", "/v1/oauth", streamedOverCap({}), 413],
  ["a body over the cap whose Content-Length understates it", "/v1/oauth", streamedOverCap({ "Content-Length": "10" }), 413],
  ["truncated JSON", "/v1/oauth", oauth('{"client_id": "a"'), 400],
  ["a JSON array", "/v1/oauth", oauth("[1,2,3]"), 400],
  ["a JSON string", "/v1/oauth", oauth('"client_credentials"'), 400],
  ["JSON null", "/v1/oauth", oauth("null"), 400],
  ["a JSON number", "/v1/oauth", oauth("1e400"), 400],
  ["10,000 nested arrays", "/v1/oauth", oauth(`${"[".repeat(5000)}${"]".repeat(5000)}`), 400],
  ["deeply nested objects", "/v1/oauth", oauth(`${'{"a":'.repeat(2000)}1${"}".repeat(2000)}`), 400],
  ["a text/plain body", "/v1/oauth", oauth(creds({}), "text/plain"), 415],
  ["a body without Content-Type", "/v1/oauth", oauth(creds({}), null), 415],
  ["a multipart body", "/v1/oauth", oauth(creds({}), "multipart/form-data; boundary=x"), 415],
  ["invalid UTF-8 bytes", "/v1/oauth", oauth(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])), 400],
  ["a UTF-8 BOM before JSON", "/v1/oauth", oauth(new Uint8Array([0xef, 0xbb, 0xbf, 0x5b, 0x5d])), 400],
  ["a NUL in client_id", "/v1/oauth", oauth(() => creds({ client_id: `${t.clientId}\u0000` })()), 401],
  ["a lone surrogate in client_id", "/v1/oauth", oauth(() => creds({})().replace(/"client_id":"[^"]+"/, '"client_id":"\\ud800"')), 401],
  [
    "a lone surrogate in client_secret",
    "/v1/oauth",
    oauth(() => creds({})().replace(/"client_secret":"[^"]+"/, '"client_secret":"\\udfff"')),
    401,
  ],
  ["a 100 KB client_secret", "/v1/oauth", oauth(creds({ client_secret: big(100_000) })), 413],
  ["a 600-character client_id", "/v1/oauth", oauth(creds({ client_id: big(600) })), 400],
  [
    "credentials hidden under __proto__",
    "/v1/oauth",
    oauth('{"__proto__":{"grant_type":"client_credentials","client_id":"x","client_secret":"y"}}'),
    400,
  ],
  ["a constructor.prototype payload", "/v1/oauth", oauth('{"constructor":{"prototype":{"grant_type":"client_credentials"}}}'), 400],
  ["a form body with __proto__ fields", "/v1/oauth", oauth("__proto__=x&constructor=y&grant_type=client_credentials", form), 400],
  [
    "a repeated form parameter",
    "/v1/oauth",
    oauth("grant_type=client_credentials&grant_type=client_credentials&client_id=a&client_secret=b", form),
    400,
  ],
  ["a client_id that is an array", "/v1/oauth", oauth(creds({ client_id: ["a"] })), 400],
  ["grant_type with a NUL", "/v1/oauth", oauth(creds({ grant_type: "client_credentials\u0000" })), 400],
  ["a 10 KB x-api-key", "/v1/oauth", () => ({ method: "POST", headers: { "x-api-key": big(10_240) } }), 401],
  ["a 10 KB bearer token", "/v1/me", () => ({ headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${big(10_240)}` } }), 401],
  ["a 10 KB Basic header", "/v1/oauth", oauth("grant_type=client_credentials", form, { Authorization: `Basic ${big(10_240)}` }), 400],
  ["Basic that is not base64", "/v1/oauth", oauth("grant_type=client_credentials", form, { Authorization: "Basic !!!not-base64!!!" }), 400],
  ["Basic without a colon", "/v1/oauth", oauth("grant_type=client_credentials", form, { Authorization: `Basic ${btoa("justanid")}` }), 400],
  [
    "Basic with bad percent-encoding",
    "/v1/oauth",
    oauth("grant_type=client_credentials", form, { Authorization: `Basic ${btoa("%zz:%E0%A4%A")}` }),
    400,
  ],
  [
    "Basic with invalid UTF-8",
    "/v1/oauth",
    oauth("grant_type=client_credentials", form, { Authorization: `Basic ${btoa("\xff\xfe:\xff")}` }),
    400,
  ],
  [
    "Basic with an empty secret",
    "/v1/oauth",
    oauth("grant_type=client_credentials", form, { Authorization: basic("kw_client_x", "") }),
    400,
  ],
  ["Bearer with two tokens", "/v1/me", () => ({ headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${token} ${token}` } }), 401],
  [
    "an API key with inner spaces and tabs",
    "/v1/me",
    () => ({ headers: { "x-api-key": `${t.apiKey.slice(0, 20)} \t ${t.apiKey.slice(20)}` } }),
    401,
  ],
  ["an organization name with a lone surrogate", "/admin/v1/organizations", adminPost('{"name":"a\\ud800b"}'), 400],
  ["an organization name with a NUL", "/admin/v1/organizations", adminPost('{"name":"a\\u0000b"}'), 400],
  ["a 10 KB organization name", "/admin/v1/organizations", adminPost(JSON.stringify({ name: big(10_000) })), 400],
  ["an organization name that is only spaces", "/admin/v1/organizations", adminPost('{"name":"   "}'), 400],
  ["an admin body that is an array", "/admin/v1/organizations", adminPost("[]"), 400],
  [
    "a form body on the admin API",
    "/admin/v1/organizations",
    () => ({ method: "POST", headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": form }, body: "name=x" }),
    415,
  ],
  ["limits of 1e20", "/admin/v1/organizations/org_00000000000000000000000000/api-keys", adminPost('{"limits":{"per_day":1e20}}'), 400],
  [
    "an invalid e-mail",
    "/admin/v1/organizations/org_00000000000000000000000000/users",
    adminPost('{"name":"x","email":"not-an-email"}'),
    400,
  ],
  ["an encoded NUL in a path segment", "/admin/v1/organizations/%00", () => ({ headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }), 404],
  ["a list limit of 1e3", "/admin/v1/organizations?limit=1e3", () => ({ headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }), 400],
  ["a 10 KB admin token", "/admin/v1/organizations", () => ({ headers: { Authorization: `Bearer ${big(10_240)}` } }), 401],
  ["an event whose data nests 20,000 arrays", "/v1/events", bearerPost(nestedEvent(20_000)), 400],
  ["an event nested 65 levels deep", "/v1/events", bearerPost(nestedEvent(64)), 400],
  [
    "an event nesting 65 levels of objects",
    "/v1/events",
    bearerPost(`{"type":"order.created","data":${'{"a":'.repeat(64)}1${"}".repeat(64)}}`),
    400,
  ],
  [
    "brackets in strings do not hide real nesting",
    "/v1/events",
    bearerPost(`{"type":"order.created","data":${'["]",'.repeat(64)}1${"]".repeat(64)}}`),
    400,
  ],
];

describe("hostile input", () => {
  it(`covers at least 25 distinct bad inputs (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(25);
  });

  const table = cases.map(([name, path, init, status]) => [name, path, status, init] as const);
  it.each(table)("answers %s on %s with a %i envelope", async (_name, path, status, init) => {
    const res = await call(path, init());
    const text = await res.text();
    expect(res.status, text).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const envelope = JSON.parse(text) as Envelope;
    expect(envelope.response_status).toBe(status);
    expect(envelope.data).toBeNull();
    expect(envelope.error).toMatch(/^[a-z_]+$/);
    expect(envelope.developer_message.length).toBeLessThan(400);
    expect(text).not.toMatch(/\n\s+at |\.ts:\d+|Error:/);
  });
});

describe("JSON nesting", () => {
  it("accepts a body nested exactly 64 levels deep, and counts brackets inside strings as text", async () => {
    const atLimit = await call("/v1/events", bearerPost(nestedEvent(63))());
    expect(atLimit.status).toBe(202);
    const strings = await call("/v1/events", bearerPost(`{"type":"order.created","data":"${"[{".repeat(500)}\\""}`)());
    expect(strings.status).toBe(202);
  });
});

describe("duplicate keys in JSON (RFC 8259 4: JSON.parse keeps the last, other parsers the first)", () => {
  const refusesNaming = async (res: Response, key: string, path: string) => {
    const json = await body(res);
    expect(res.status, JSON.stringify(json)).toBe(400);
    expect(json.error).toBe("invalid_request");
    expect(json.developer_message).toContain(`the key ${JSON.stringify(key)} twice`);
    expect(json.developer_message).toContain(`at ${path}`);
  };

  it("refuses them at the token endpoint, on the operator API and in /v1 bodies, naming the key and where", async () => {
    await refusesNaming(
      await call(
        "/v1/oauth",
        oauth(
          () => `{"client_id":"${t.clientId}","client_secret":"x","client_secret":"${t.clientSecret}","grant_type":"client_credentials"}`,
        )(),
      ),
      "client_secret",
      "$",
    );
    await refusesNaming(await call("/admin/v1/organizations", adminPost('{"name":"a","name":"b"}')()), "name", "$");
    await refusesNaming(
      await call("/v1/events", bearerPost('{"type":"order.created","data":{"items":[{"sku":"a"},{"sku":"b","sku":"c"}]}}')()),
      "sku",
      "$.data.items[1]",
    );
    // The same name spelled with an escape is the same name.
    await refusesNaming(await call("/admin/v1/organizations", adminPost('{"name":"a","\\u006eame":"b"}')()), "name", "$");
  });

  it("refuses them in GraphQL bodies and in GET variables", async () => {
    const post = await call(
      "/v1/graphql",
      authed(t, token, {
        method: "POST",
        headers: { "Content-Type": json },
        body: '{"query":"{ viewer { userId } }","query":"{ viewer { organizationId } }"}',
      }),
    );
    expect(post.status).toBe(400);
    expect(await post.text()).toContain('the key \\"query\\" twice');
    const vars = encodeURIComponent('{"first":1,"first":2}');
    const get = await call(`/v1/graphql?query=${encodeURIComponent("{ viewer { userId } }")}&variables=${vars}`, authed(t, token));
    expect(get.status).toBe(400);
    expect(await get.text()).toContain("twice");
  });

  it("accepts the same name in different objects, and names that only look alike", async () => {
    const ok = await call(
      "/v1/events",
      bearerPost(
        '{"type":"order.created","data":{"a":{"id":1},"b":{"id":2},"list":[{"id":3},{"id":4}],"id":"x","Id":"y","s":"\\"id\\":1,\\"id\\":2"}}',
      )(),
    );
    expect(ok.status).toBe(202);
  });
});

describe("failures of our own", () => {
  it("answers a corrupt stored record with a generic 500 envelope and logs no secret", async () => {
    const tenant = await createTenant();
    const access = await issueToken(tenant);
    const created = await call(
      "/v1/webhook-configurations",
      authed(tenant, access, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          url: "https://receiver.example/hook",
          oauth: { token_url: "https://receiver.example/token", client_id: "a", client_secret: "b" },
        }),
      }),
    );
    const id = (await body<{ id: string }>(created)).data.id;
    // Simulate a row written by an incompatible version.
    await runInDurableObject(env.WEBHOOKS.get(env.WEBHOOKS.idFromName(tenant.orgId)), (_i, state) => {
      state.storage.sql.exec("UPDATE configurations SET signing_secrets = '{not json' WHERE id = ?", id);
    });
    const res = await call(`/v1/webhook-configurations/${id}`, authed(tenant, access));
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ response_status: 500, error: "server_error", data: null });
    expect(text).not.toContain("JSON");
    expect(logged.some((line) => line.includes("webhooks failed"))).toBe(true);
    expect(logged.join("\n")).not.toContain(tenant.apiKey);
  });
});

describe("logs", () => {
  it("never contain an API key, client secret, access token or the admin token", () => {
    const all = logged.join("\n");
    for (const secret of [t.apiKey, t.clientSecret, token, ADMIN_TOKEN]) expect(all).not.toContain(secret);
    // The spy is live: the corrupt-record test above logged through it.
    expect(logged.length).toBeGreaterThan(0);
  });
});
