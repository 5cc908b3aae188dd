/**
 * Issue 45 over GraphQL: a configuration's signature scheme (v1a, Ed25519: no secret, a public
 * key in the view; a rotation that changes the scheme) and polling configurations (no url or
 * oauth, a polling state, a read token shown once, rotated and revoked). Each field answers what
 * its REST route answers (the same domain function and view, camelCased), each new mutation
 * counts as one request, and a push configuration's polling token, a polling configuration's
 * signing key, are refused as REST refuses them (409).
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { camelize } from "../src/graphql/resolvers";
import { fakeNetwork, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { authed, body, call, createTenant, issueToken, type Tenant, tokenRequest } from "./helpers";
import { api } from "./webhook-helpers";

let t: Tenant;
let token: string;
beforeAll(async () => {
  t = await createTenant({ per_second: 1000, per_day: 1_000_000 });
  token = await issueToken(t);
  fakeNetwork(receiver());
});

interface GqlResponse {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions: { code: string; status?: number }; path?: string[] }[];
}

async function gql(query: string, variables?: Record<string, unknown>, bearer = token) {
  const res = await call(
    "/v1/graphql",
    authed(t, bearer, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ query, variables }) }),
  );
  return { status: res.status, headers: res.headers, json: (await res.json()) as GqlResponse };
}

/** The data of a request that must succeed. */
async function ok(query: string, variables?: Record<string, unknown>) {
  const { status, json } = await gql(query, variables);
  expect(json.errors, JSON.stringify(json.errors)).toBeUndefined();
  expect(status).toBe(200);
  return json.data as Record<string, unknown>;
}

const rest = async (path: string) => (await body<Record<string, unknown>>(await api(t, token, path))).data;

const CONFIG_FIELDS =
  "id delivery url oauth { tokenUrl clientId } signatureScheme signingPublicKey signingSecretRotatedAt polling { url tokenActive backlog lastPolledAt } ordered status";
const CREATE = `mutation($input: CreateWebhookConfigurationInput!) { createWebhookConfiguration(input: $input) { signingSecret pollingToken webhookConfiguration { ${CONFIG_FIELDS} } } }`;
const oauthInput = { tokenUrl: TOKEN_URL, clientId: "kw", clientSecret: "receiver-secret" };

interface Config {
  id: string;
  delivery: string;
  url: string | null;
  oauth: { tokenUrl: string } | null;
  signatureScheme: string | null;
  signingPublicKey: string | null;
  polling: { url: string; tokenActive: boolean; backlog: number; lastPolledAt: string | null } | null;
}
interface Created {
  signingSecret: string | null;
  pollingToken: string | null;
  webhookConfiguration: Config;
}

/** The REST view's fields of CONFIG_FIELDS, camelCased: what GraphQL must answer for the same configuration. */
async function restView(id: string) {
  const view = camelize(await rest(`/v1/webhook-configurations/${id}`)) as Record<string, unknown>;
  const oauth = view.oauth as Record<string, unknown> | null;
  const { delivery, url, signatureScheme, signingPublicKey, signingSecretRotatedAt, polling, ordered, status } = view;
  return {
    id,
    delivery,
    url,
    oauth: oauth === null ? null : { tokenUrl: oauth.tokenUrl, clientId: oauth.clientId },
    signatureScheme,
    signingPublicKey,
    signingSecretRotatedAt,
    polling,
    ordered,
    status,
  };
}

const readEvents = (id: string, pollingToken: string) =>
  call(`/v1/polling-endpoints/${id}/events`, { headers: { Authorization: `Bearer ${pollingToken}` } });

describe("signature schemes", () => {
  it("creates a v1a configuration: no secret, its public key in the view, as REST reads it", async () => {
    const created = (await ok(CREATE, { input: { url: WEBHOOK_URL, oauth: oauthInput, signatureScheme: "v1a" } }))
      .createWebhookConfiguration as Created;
    expect(created.signingSecret).toBeNull();
    expect(created.pollingToken).toBeNull();
    const config = created.webhookConfiguration;
    expect(config).toMatchObject({ delivery: "push", url: WEBHOOK_URL, signatureScheme: "v1a", polling: null });
    expect(config.signingPublicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    const read = await ok(`query($id: ID!) { webhookConfiguration(id: $id) { ${CONFIG_FIELDS} } }`, { id: config.id });
    expect(read.webhookConfiguration).toEqual(await restView(config.id));
    expect(read.webhookConfiguration).toMatchObject({ signingPublicKey: config.signingPublicKey });
  });

  it("a v1 configuration (the default) shows its secret once and no public key", async () => {
    const created = (await ok(CREATE, { input: { url: WEBHOOK_URL, oauth: oauthInput } })).createWebhookConfiguration as Created;
    expect(created.signingSecret).toMatch(/^whsec_/);
    expect(created.webhookConfiguration).toMatchObject({ signatureScheme: "v1", signingPublicKey: null, polling: null });
  });

  it("rotates with a change of scheme: v1 to v1a (no secret, a new public key), then back to v1 (a secret)", async () => {
    const created = (await ok(CREATE, { input: { url: WEBHOOK_URL, oauth: oauthInput } })).createWebhookConfiguration as Created;
    const id = created.webhookConfiguration.id;
    const ROTATE = `mutation($id: ID!, $scheme: String) { rotateSigningSecret(id: $id, signatureScheme: $scheme) { signingSecret previousSecretExpiresAt webhookConfiguration { ${CONFIG_FIELDS} } } }`;
    const toV1a = (await ok(ROTATE, { id, scheme: "v1a" })).rotateSigningSecret as {
      signingSecret: string | null;
      previousSecretExpiresAt: string;
      webhookConfiguration: Config;
    };
    expect(toV1a.signingSecret).toBeNull();
    expect(toV1a.previousSecretExpiresAt).toEqual(expect.any(String));
    expect(toV1a.webhookConfiguration).toMatchObject({ signatureScheme: "v1a", signingPublicKey: expect.stringMatching(/^whpk_/) });
    expect(toV1a.webhookConfiguration).toEqual(await restView(id));

    // Without a scheme, the current one (v1a): another public key, still no secret.
    const again = (await ok(ROTATE, { id })).rotateSigningSecret as typeof toV1a;
    expect(again.signingSecret).toBeNull();
    expect(again.webhookConfiguration.signatureScheme).toBe("v1a");
    expect(again.webhookConfiguration.signingPublicKey).toMatch(/^whpk_/);
    expect(again.webhookConfiguration.signingPublicKey).not.toBe(toV1a.webhookConfiguration.signingPublicKey);

    const toV1 = (await ok(ROTATE, { id, scheme: "v1" })).rotateSigningSecret as typeof toV1a;
    expect(toV1.signingSecret).toMatch(/^whsec_/);
    expect(toV1.webhookConfiguration).toMatchObject({ signatureScheme: "v1", signingPublicKey: null });
  });

  it("refuses an unknown scheme, naming the field, on create and on rotation; nothing is rotated", async () => {
    const bad = await gql(CREATE, { input: { url: WEBHOOK_URL, oauth: oauthInput, signatureScheme: "v2" } });
    expect(bad.json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request" } });
    expect(bad.json.errors?.[0]?.message).toContain("signatureScheme");
    const created = (await ok(CREATE, { input: { url: WEBHOOK_URL, oauth: oauthInput } })).createWebhookConfiguration as Created;
    const id = created.webhookConfiguration.id;
    const before = await restView(id);
    const rotated = await gql('mutation($id: ID!) { rotateSigningSecret(id: $id, signatureScheme: "v2") { signingSecret } }', { id });
    expect(rotated.json.errors?.[0]).toMatchObject({ path: ["rotateSigningSecret"], extensions: { code: "invalid_request" } });
    expect(rotated.json.errors?.[0]?.message).toContain("signatureScheme");
    expect(await restView(id)).toEqual(before);
  });
});

describe("polling configurations", () => {
  async function createPolling(): Promise<Created> {
    const created = (await ok(CREATE, { input: { delivery: "polling", events: ["order.created"], description: "pull" } }))
      .createWebhookConfiguration as Created;
    return created;
  }

  it("are created without url or oauth, with a polling state and a read token shown once", async () => {
    const created = await createPolling();
    expect(created.signingSecret).toBeNull();
    expect(created.pollingToken).toMatch(/^kw_poll_[A-Za-z0-9-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    const config = created.webhookConfiguration;
    expect(config).toMatchObject({
      delivery: "polling",
      url: null,
      oauth: null,
      signatureScheme: null,
      signingPublicKey: null,
      polling: { tokenActive: true, backlog: 0, lastPolledAt: null },
    });
    expect(config.polling?.url).toMatch(new RegExp(`/v1/polling-endpoints/${config.id}/events$`));
    const read = await ok(`query($id: ID!) { webhookConfiguration(id: $id) { ${CONFIG_FIELDS} } }`, { id: config.id });
    expect(read.webhookConfiguration).toEqual(await restView(config.id));
    expect(JSON.stringify(read)).not.toContain(created.pollingToken);
    // A list with push and polling configurations answers both (url and oauth are nullable).
    const listed = await ok(`{ webhookConfigurations(first: 50) { nodes { id delivery url oauth { tokenUrl } } } }`);
    const nodes = (listed.webhookConfigurations as { nodes: { id: string; delivery: string }[] }).nodes;
    expect(nodes.find((n) => n.id === config.id)).toEqual({ id: config.id, delivery: "polling", url: null, oauth: null });
    // Its token reads.
    expect((await readEvents(config.id, created.pollingToken!)).status).toBe(200);
  });

  it("refuses push-only fields on a polling creation, naming them in camelCase", async () => {
    const bad = await gql(CREATE, { input: { delivery: "polling", url: WEBHOOK_URL, signatureScheme: "v1a" } });
    expect(bad.json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request" } });
    expect(bad.json.errors?.[0]?.message).toMatch(/url/);
    expect(bad.json.errors?.[0]?.message).toMatch(/signatureScheme/);
    const noUrl = await gql(CREATE, { input: { events: ["order.created"] } });
    expect(noUrl.json.errors?.[0]).toMatchObject({ extensions: { code: "invalid_request" } });
  });

  it("rotates the read token (the old one stops reading) and revokes it (no read succeeds, 401)", async () => {
    const created = await createPolling();
    const id = created.webhookConfiguration.id;
    const first = created.pollingToken!;

    const rotated = (
      await ok(`mutation($id: ID!) { rotatePollingToken(id: $id) { token webhookConfiguration { ${CONFIG_FIELDS} } } }`, { id })
    ).rotatePollingToken as { token: string; webhookConfiguration: Config };
    expect(rotated.token).toMatch(/^kw_poll_/);
    expect(rotated.token).not.toBe(first);
    expect(rotated.webhookConfiguration).toMatchObject({ id, delivery: "polling", polling: { tokenActive: true } });
    expect((await readEvents(id, first)).status).toBe(401);
    expect((await readEvents(id, rotated.token)).status).toBe(200);

    const revoked = (await ok(`mutation($id: ID!) { revokePollingToken(id: $id) { ${CONFIG_FIELDS} } }`, { id }))
      .revokePollingToken as Config;
    expect(revoked).toMatchObject({ id, delivery: "polling", polling: { tokenActive: false } });
    expect(revoked).toEqual(await restView(id));
    const refused = await readEvents(id, rotated.token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer realm="keyway-polling"/);
    expect((await readEvents(id, first)).status).toBe(401);

    // A token rotated in after a revocation reads again.
    const back = (
      await ok(`mutation($id: ID!) { rotatePollingToken(id: $id) { token webhookConfiguration { polling { tokenActive } } } }`, { id })
    ).rotatePollingToken as { token: string; webhookConfiguration: { polling: { tokenActive: boolean } } };
    expect(back.webhookConfiguration.polling.tokenActive).toBe(true);
    expect((await readEvents(id, back.token)).status).toBe(200);
  });

  it("refuses a polling token on a push configuration and a signing key on a polling one (409), each field alone", async () => {
    const push = ((await ok(CREATE, { input: { url: WEBHOOK_URL, oauth: oauthInput } })).createWebhookConfiguration as Created)
      .webhookConfiguration.id;
    const polling = (await createPolling()).webhookConfiguration.id;
    const { status, json } = await gql(
      "mutation($push: ID!) { rotatePollingToken(id: $push) { token } revokePollingToken(id: $push) { id } }",
      { push },
    );
    expect(status).toBe(200);
    expect(json.data).toEqual({ rotatePollingToken: null, revokePollingToken: null });
    expect(json.errors?.map((e) => [e.path, e.extensions.code])).toEqual([
      [["rotatePollingToken"], "conflict"],
      [["revokePollingToken"], "conflict"],
    ]);
    const signing = await gql("mutation($id: ID!) { rotateSigningSecret(id: $id) { signingSecret } }", { id: polling });
    expect(signing.json.errors?.[0]).toMatchObject({ path: ["rotateSigningSecret"], extensions: { code: "conflict", status: 409 } });
    const unknown = await gql('mutation { rotatePollingToken(id: "whk_00000000000000000000000000") { token } }');
    expect(unknown.json.errors?.[0]).toMatchObject({ path: ["rotatePollingToken"], extensions: { code: "not_found" } });
  });

  it("needs webhooks:write and graphql:mutate, as REST's routes do, and each mutation counts as one request", async () => {
    const created = await createPolling();
    const id = created.webhookConfiguration.id;
    const MUTATIONS = "mutation($id: ID!) { rotatePollingToken(id: $id) { token } revokePollingToken(id: $id) { id } }";
    for (const scope of ["webhooks:read graphql:mutate events:write", "webhooks:read webhooks:write events:write"]) {
      const narrowed = await call("/v1/oauth", tokenRequest(t, { scope }));
      const bearer = String(((await narrowed.json()) as { data: { access_token: string } }).data.access_token);
      const { json } = await gql(MUTATIONS, { id }, bearer);
      expect(json.data, scope).toEqual({ rotatePollingToken: null, revokePollingToken: null });
      expect(
        json.errors?.map((e) => [e.path, e.extensions]),
        scope,
      ).toEqual([
        [["rotatePollingToken"], { code: "insufficient_scope", status: 403 }],
        [["revokePollingToken"], { code: "insufficient_scope", status: 403 }],
      ]);
    }
    // Nothing changed: the token still reads.
    expect((await readEvents(id, created.pollingToken!)).status).toBe(200);

    const costOf = (query: string) => env.GRAPHQL.cost({ query, variables: { id } });
    expect(await costOf(MUTATIONS)).toBe(2);
    expect(await costOf('mutation($id: ID!) { rotateSigningSecret(id: $id, signatureScheme: "v1a") { signingSecret } }')).toBe(1);
  });
});
