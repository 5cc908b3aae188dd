/**
 * Security headers on every page of the manager app (src/http/manager/routes.tsx): each HTML page
 * a GET reaches (the sign-in page; as the operator and as an organization administrator, every
 * page their role may see, the webhook configuration, delivery and confirmation pages, the event
 * types, webhook settings (the assertion key's rotation too), recoveries, the end of a portal session and the trusted issuers with
 * the removal of one included; and the HTML
 * error page) answers with a Content-Security-Policy whose nonce is new on every
 * response, with the other secure headers (nosniff, framing refused, no referrer, HSTS, no-store),
 * and carries that nonce on every <script> and <style> it contains. The walk is checked against
 * the manager app's own GET routes, so a new page is covered or the run fails. Then isolation of
 * webhooks: an organization administrator who asks for another organization's webhook
 * configuration, its edit, disable, delivery and re-send pages, or posts its test event, is told
 * nothing exists (404, as for the other pages in manager.test.ts), sees none of its data and
 * changes nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { managerApp } from "../src/http/manager/routes";
import { fakeNetwork, json, receiver, TOKEN_URL, WEBHOOK_URL } from "./fake-network";
import { ADMIN_TOKEN, admin, authed, BASE, body, call, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { attemptNow, configInput, createConfig } from "./webhook-helpers";

/**
 * The page's security headers, and its <script> and <style> tags each carrying the CSP's nonce;
 * returns the HTML and the nonce.
 */
async function securePage(res: Response, where: string): Promise<{ html: string; nonce: string }> {
  expect(res.headers.get("content-type"), where).toMatch(/^text\/html/);
  const csp = res.headers.get("content-security-policy") ?? "";
  const nonce = /script-src 'nonce-([A-Za-z0-9_-]{16,})'/.exec(csp)?.[1];
  expect(nonce, `${where}: ${csp}`).toBeDefined();
  // Nothing but what carries this response's nonce runs or styles the page; no framing, no base, forms to this origin.
  const directives = new Map(csp.split(/;\s*/).map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]));
  expect(directives.get("default-src"), where).toBe("'none'");
  expect(directives.get("script-src"), where).toBe(`'nonce-${nonce}'`);
  expect(directives.get("style-src"), where).toBe(`'nonce-${nonce}'`);
  expect(directives.get("frame-ancestors"), where).toBe("'none'");
  expect(directives.get("base-uri"), where).toBe("'none'");
  expect(directives.get("form-action"), where).toBe("'self'");
  expect(res.headers.get("x-content-type-options"), where).toBe("nosniff");
  expect(res.headers.get("x-frame-options"), where).toBe("DENY");
  expect(res.headers.get("referrer-policy"), where).toBe("no-referrer");
  expect(res.headers.get("strict-transport-security"), where).toMatch(/max-age=\d+/);
  // A cached copy would replay the nonce.
  expect(res.headers.get("cache-control"), where).toBe("no-store");

  const html = await res.text();
  const tags = [...html.matchAll(/<(script|style)\b([^>]*)>/gi)];
  expect(tags.map((m) => m[1]?.toLowerCase()).sort(), where).toEqual(["script", "style"]);
  for (const [tag, , attributes] of tags) expect(attributes, `${where}: ${tag}`).toBe(` nonce="${nonce}"`);
  // Inline handlers and style attributes have no nonce, so the CSP would block them; nothing loads from elsewhere.
  expect(html, where).not.toMatch(/<[^>]+\s(on[a-z]+|style)=/i);
  expect(html, where).not.toMatch(/<(link|img|iframe|object|embed)\b/i);
  return { html, nonce: nonce ?? "" };
}

/** Each response's nonce is its own: none repeats across the responses of a walk. */
function expectDistinct(nonces: string[]): void {
  expect(nonces.length).toBeGreaterThan(1);
  expect(new Set(nonces).size).toBe(nonces.length);
}

interface Org {
  tenant: Tenant;
  bearer: string;
  config: string;
  delivery: string;
  adminTokenId: string;
  adminToken: string;
  /** An event type of the organization's, a recovery and a portal session of its configuration. */
  eventType: string;
  recovery: string;
  session: string;
  /** A trusted issuer of the organization's. */
  issuer: string;
  /** A polling configuration of the organization's (issue 45: its token's pages). */
  polling: string;
}

/** A workload identity issuer the organizations trust (its metadata and keys served by the fake network). */
const ISSUER = "https://issuer.example";
const issuerNetwork = {
  [`${ISSUER}/.well-known/openid-configuration`]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` }),
  [`${ISSUER}/jwks`]: () =>
    json({
      keys: [
        {
          kty: "EC",
          crv: "P-256",
          kid: "k1",
          x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
          y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        },
      ],
    }),
};

/** An organization with a webhook configuration (described `description`), a delivery to it with one attempt, and an administrator token. */
async function organization(description: string): Promise<Org> {
  const tenant = await createTenant();
  const bearer = await issueToken(tenant);
  const config = await createConfig(tenant, bearer, `${description}-receiver-secret`, { description });
  const published = await call(
    "/v1/events",
    authed(tenant, bearer, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ type: "order.created", data: { description } }),
    }),
  );
  const delivery = (await body<{ deliveries: { id: string }[] }>(published)).data.deliveries[0]?.id ?? "";
  expect(delivery).toMatch(/^msg_/);
  await attemptNow(tenant, bearer, delivery);
  const minted = await admin<{ id: string; token: string }>("POST", `/organizations/${tenant.orgId}/admin-tokens`, { name: description });
  const eventType = `${description.replace(/-/g, "_")}.placed`;
  await admin("POST", `/organizations/${tenant.orgId}/event-types`, { name: eventType, description });
  const webhookApi = `/organizations/${tenant.orgId}/webhook-configurations/${config.id}`;
  const recovery = await admin<{ id: string }>("POST", `${webhookApi}/recover`, { since: new Date(Date.now() - 3600_000).toISOString() });
  // A portal session, opened as the receiver's browser opens its link.
  const link = await admin<{ url: string }>("POST", `${webhookApi}/portal-links`, {});
  const receiverBrowser = new Browser();
  const openPage = await (await receiverBrowser.get(link.url.slice(BASE.length))).text();
  const token = new URL(link.url).searchParams.get("token") ?? "";
  expect((await receiverBrowser.post("/portal/open", { csrf: Browser.csrf(openPage), token })).status).toBe(303);
  const [session] = await admin<{ id: string }[]>("GET", `${webhookApi}/portal-sessions`);
  const issuer = await admin<{ id: string }>("POST", `/organizations/${tenant.orgId}/trusted-issuers`, { issuer: ISSUER });
  const polling = await admin<{ id: string }>("POST", `/organizations/${tenant.orgId}/webhook-configurations`, {
    delivery: "polling",
    description: `${description} polling`,
  });
  return {
    tenant,
    bearer,
    config: config.id,
    delivery,
    adminTokenId: minted.id,
    adminToken: minted.token,
    eventType,
    recovery: recovery.id,
    session: session?.id ?? "",
    issuer: issuer.id,
    polling: polling.id,
  };
}

/** Each manager page pattern (as routes.tsx declares it) with the concrete path for `o`. */
function pages(o: Org): Record<string, string> {
  const org = `/manager/organizations/${o.tenant.orgId}`;
  const user = `${org}/users/${o.tenant.userId}`;
  const webhook = `${org}/webhooks/${o.config}`;
  const delivery = `${webhook}/deliveries/${o.delivery}`;
  return {
    "/manager/organizations": "/manager/organizations",
    "/manager/organizations/:org": org,
    "/manager/organizations/:org/overview": `${org}/overview`,
    "/manager/organizations/:org/delete": `${org}/delete`,
    "/manager/organizations/:org/admin-tokens/:token/revoke": `${org}/admin-tokens/${o.adminTokenId}/revoke`,
    "/manager/organizations/:org/audit-log": `${org}/audit-log`,
    "/manager/organizations/:org/users": `${org}/users`,
    "/manager/organizations/:org/trusted-issuers": `${org}/trusted-issuers`,
    "/manager/organizations/:org/trusted-issuers/:issuer/remove": `${org}/trusted-issuers/${o.issuer}/remove`,
    "/manager/organizations/:org/users/:user/remove": `${user}/remove`,
    "/manager/organizations/:org/users/:user/client-credentials": `${user}/client-credentials`,
    "/manager/organizations/:org/users/:user/client-credentials/:client/revoke": `${user}/client-credentials/${o.tenant.clientId}/revoke`,
    "/manager/organizations/:org/users/:user/client-credentials/:client/edit": `${user}/client-credentials/${o.tenant.clientId}/edit`,
    "/manager/organizations/:org/api-keys": `${org}/api-keys`,
    "/manager/organizations/:org/api-keys/:key": `${org}/api-keys/${o.tenant.apiKeyId}`,
    "/manager/organizations/:org/api-keys/:key/revoke": `${org}/api-keys/${o.tenant.apiKeyId}/revoke`,
    "/manager/organizations/:org/api-keys/:key/rotate": `${org}/api-keys/${o.tenant.apiKeyId}/rotate?grace=3600`,
    "/manager/organizations/:org/api-keys/:key/end-grace": `${org}/api-keys/${o.tenant.apiKeyId}/end-grace`,
    "/manager/organizations/:org/webhooks": `${org}/webhooks`,
    "/manager/organizations/:org/webhooks/:id": webhook,
    "/manager/organizations/:org/new-webhook": `${org}/new-webhook`,
    "/manager/organizations/:org/webhooks/:id/edit": `${webhook}/edit`,
    "/manager/organizations/:org/webhooks/:id/delete": `${webhook}/delete`,
    "/manager/organizations/:org/webhooks/:id/disable": `${webhook}/disable`,
    "/manager/organizations/:org/webhooks/:id/rotate-signing-secret": `${webhook}/rotate-signing-secret`,
    "/manager/organizations/:org/webhooks/:id/rotate-assertion-key": `${webhook}/rotate-assertion-key`,
    "/manager/organizations/:org/webhooks/:id/rotate-polling-token": `${org}/webhooks/${o.polling}/rotate-polling-token`,
    "/manager/organizations/:org/webhooks/:id/revoke-polling-token": `${org}/webhooks/${o.polling}/revoke-polling-token`,
    "/manager/organizations/:org/webhooks/:id/deliveries/:delivery": delivery,
    "/manager/organizations/:org/webhooks/:id/deliveries/:delivery/resend": `${delivery}/resend`,
    "/manager/organizations/:org/webhooks/:id/recoveries": `${webhook}/recoveries`,
    "/manager/organizations/:org/webhooks/:id/recoveries/:recovery": `${webhook}/recoveries/${o.recovery}`,
    "/manager/organizations/:org/webhooks/:id/portal-sessions/:session/end": `${webhook}/portal-sessions/${o.session}/end`,
    "/manager/organizations/:org/event-types": `${org}/event-types`,
    "/manager/organizations/:org/new-event-type": `${org}/new-event-type`,
    "/manager/organizations/:org/event-types/:name": `${org}/event-types/${o.eventType}`,
    "/manager/organizations/:org/event-types/:name/delete": `${org}/event-types/${o.eventType}/delete`,
    "/manager/organizations/:org/webhook-settings": `${org}/webhook-settings`,
    "/manager/organizations/:org/webhook-settings/rotate-assertion-key": `${org}/webhook-settings/rotate-assertion-key`,
  };
}

/** Pages an organization administrator is told do not exist (spec 2.2: API keys come from the operator). */
const OPERATOR_ONLY = new Set([
  "/manager/organizations/:org/delete",
  "/manager/organizations",
  "/manager/organizations/:org/api-keys",
  "/manager/organizations/:org/api-keys/:key",
  "/manager/organizations/:org/api-keys/:key/revoke",
  "/manager/organizations/:org/api-keys/:key/rotate",
  "/manager/organizations/:org/api-keys/:key/end-grace",
]);
/** GET routes that answer a redirect, not a page. */
const REDIRECTS = new Set(["/manager"]);

let mine: Org;
let other: Org;
let operator: Browser;
let orgAdmin: Browser;

beforeAll(async () => {
  fakeNetwork({ ...receiver(), ...issuerNetwork });
  mine = await organization("mine-orders");
  other = await organization("other-orders");
  operator = await Browser.signedIn(ADMIN_TOKEN);
  orgAdmin = await Browser.signedIn(mine.adminToken);
});

describe("security headers on every manager page", () => {
  it("walks every GET page the manager app declares", () => {
    const declared = managerApp(Date.now)
      .routes.filter((r) => r.method === "GET" && !REDIRECTS.has(r.path))
      .map((r) => r.path);
    const walked = ["/manager/sign-in", "/manager/sign-in/link", ...Object.keys(pages(mine))];
    expect(new Set(declared)).toEqual(new Set(walked));
    for (const path of OPERATOR_ONLY) expect(walked).toContain(path);
  });

  it("the sign-in page, each response with its own nonce", async () => {
    const visitor = new Browser();
    const nonces: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await visitor.get("/manager/sign-in");
      expect(res.status).toBe(200);
      const { html, nonce } = await securePage(res, "sign-in");
      expect(html).toMatch(/<form method="post" action="\/manager\/sign-in"/);
      nonces.push(nonce);
    }
    // The one-time link's page (issue 43): its GET only offers the button (nothing is used up), with the same headers.
    const link = await visitor.get("/manager/sign-in/link?ticket=kw_signin_unknown");
    expect(link.status).toBe(200);
    nonces.push((await securePage(link, "sign-in link")).nonce);
    expectDistinct(nonces);
  });

  it("every page the operator may see, each response with its own nonce", async () => {
    const nonces: string[] = [];
    for (const [pattern, path] of Object.entries(pages(mine))) {
      const res = await operator.get(path);
      expect(res.status, pattern).toBe(200);
      nonces.push((await securePage(res, `operator ${pattern}`)).nonce);
    }
    // The same page twice, too.
    nonces.push((await securePage(await operator.get(pages(mine)["/manager/organizations/:org"] ?? ""), "operator again")).nonce);
    expectDistinct(nonces);
  });

  it("every page an organization administrator may see, and the 404 page for the rest, each with its own nonce", async () => {
    const nonces: string[] = [];
    for (const [pattern, path] of Object.entries(pages(mine))) {
      const res = await orgAdmin.get(path);
      expect(res.status, pattern).toBe(OPERATOR_ONLY.has(pattern) ? 404 : 200);
      nonces.push((await securePage(res, `organization administrator ${pattern}`)).nonce);
    }
    expectDistinct(nonces);
  });

  it("the HTML error page of an unknown manager path", async () => {
    const res = await operator.get("/manager/nowhere");
    expect(res.status).toBe(404);
    await securePage(res, "unknown page");
  });
});

describe("an organization administrator and another organization's webhooks", () => {
  /** What of the other organization must never show: its ids, its configuration's description, its event's data. */
  const theirs = () => [other.tenant.orgId.slice(4), other.config, other.delivery, "other-orders"];

  async function expectNothingThere(res: Response, where: string): Promise<void> {
    expect(res.status, where).toBe(404);
    const { html } = await securePage(res, where);
    expect(html, where).toMatch(/There is no such page|not found/i);
    for (const value of theirs()) expect(html.includes(value), `${where} shows ${value}`).toBe(false);
  }

  it("cannot read its configuration, edit form, disable confirmation, deliveries' attempts or re-send confirmation", async () => {
    const theirPages = pages(other);
    const ownOrg = `/manager/organizations/${mine.tenant.orgId}`;
    const paths = [
      theirPages["/manager/organizations/:org/webhooks"],
      theirPages["/manager/organizations/:org/webhooks/:id"],
      theirPages["/manager/organizations/:org/webhooks/:id/disable"],
      theirPages["/manager/organizations/:org/webhooks/:id/deliveries/:delivery"],
      theirPages["/manager/organizations/:org/webhooks/:id/deliveries/:delivery/resend"],
      // Their configuration or delivery under this administrator's own organization.
      `${ownOrg}/webhooks/${other.config}`,
      `${ownOrg}/webhooks/${other.config}/disable`,
      `${ownOrg}/webhooks/${other.config}/deliveries/${other.delivery}`,
      `${ownOrg}/webhooks/${mine.config}/deliveries/${other.delivery}`,
      `${ownOrg}/webhooks/${mine.config}/deliveries/${other.delivery}/resend`,
    ];
    for (const path of paths) await expectNothingThere(await orgAdmin.get(path ?? ""), path ?? "");
    // The same administrator reads its own configuration's pages: the refusals are about ownership.
    for (const path of [`${ownOrg}/webhooks/${mine.config}`, `${ownOrg}/webhooks/${mine.config}/deliveries/${mine.delivery}`]) {
      expect((await orgAdmin.get(path)).status, path).toBe(200);
    }
  });

  it("cannot send it a test event, edit, disable or re-send it by posting forms, and nothing changes", async () => {
    const csrf = Browser.csrf(await (await orgAdmin.get(`/manager/organizations/${mine.tenant.orgId}/users`)).text());
    expect(csrf).not.toBe("");
    const edit = {
      csrf,
      url: WEBHOOK_URL,
      token_url: TOKEN_URL,
      client_id: "mallory",
      client_secret: "",
      events: "",
      description: "taken over",
    };
    for (const org of [other.tenant.orgId, mine.tenant.orgId]) {
      const webhook = `/manager/organizations/${org}/webhooks/${other.config}`;
      const attempts: [string, Record<string, string>][] = [
        [`${webhook}/test`, { csrf }],
        [webhook, edit],
        [`${webhook}/disable`, { csrf }],
        [`${webhook}/deliveries/${other.delivery}/resend`, { csrf }],
      ];
      for (const [path, fields] of attempts) await expectNothingThere(await orgAdmin.post(path, fields), `POST ${path}`);
    }

    const config = await body<{ description: string; status: string; oauth: { client_id: string } }>(
      await call(`/v1/webhook-configurations/${other.config}`, authed(other.tenant, other.bearer)),
    );
    expect(config.data).toMatchObject({
      description: "other-orders",
      status: "active",
      oauth: { client_id: configInput("").oauth.client_id },
    });
    const deliveries = await body<{ id: string; attempts: unknown[] }[]>(
      await call(`/v1/webhook-configurations/${other.config}/deliveries`, authed(other.tenant, other.bearer)),
    );
    // No test event was published to it, and its one delivery was not re-sent.
    expect(deliveries.data.map((d) => d.id)).toEqual([other.delivery]);
    expect(deliveries.data[0]?.attempts).toHaveLength(1);
  });
});
