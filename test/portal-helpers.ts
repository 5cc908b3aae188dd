/**
 * A portal session the way a receiver gets one (portal.test.ts, portal-filter.test.ts): an
 * organization with configurations and one event delivered to each, a link made over REST, and
 * a Browser that opens it as a person does (GET the link's page, POST its one form).
 */
import { expect } from "vitest";
import { fakeNetwork, receiver } from "./fake-network";
import { BASE, body, createTenant, issueToken, type Tenant } from "./helpers";
import { Browser } from "./manager-helpers";
import { api, createConfig } from "./webhook-helpers";

export const RECEIVER_SECRET = "receiver-client-secret-portal-0123456789";
export const PORTAL_COOKIE = "__Host-kw_portal";

export interface Org {
  t: Tenant;
  bearer: string;
  configs: { id: string; signing_secret: string }[];
  /** One delivery per configuration, in the same order. */
  deliveries: string[];
}

/** An organization with `n` configurations and one event delivered to each. */
export async function org(n = 2): Promise<Org> {
  fakeNetwork(receiver());
  const t = await createTenant();
  const bearer = await issueToken(t);
  const configs = [];
  for (let i = 0; i < n; i++) configs.push(await createConfig(t, bearer, RECEIVER_SECRET, { description: `endpoint ${i}` }));
  const event = await body<{ deliveries: { id: string; webhook_configuration_id: string }[] }>(
    await api(t, bearer, "/v1/events", "POST", { type: "order.created", data: { n: 1 } }),
  );
  const deliveries = configs.map((c) => event.data.deliveries.find((d) => d.webhook_configuration_id === c.id)?.id ?? "");
  return { t, bearer, configs, deliveries };
}

export async function link(o: Org, config = 0, payload: unknown = {}): Promise<{ url: string; token: string; expires_at: string }> {
  const res = await api(o.t, o.bearer, `/v1/webhook-configurations/${o.configs[config]?.id}/portal-links`, "POST", payload);
  const json = await body<{ url: string; expires_at: string; webhook_configuration_id: string }>(res);
  expect(res.status, JSON.stringify(json)).toBe(200);
  expect(json.data.webhook_configuration_id).toBe(o.configs[config]?.id);
  return { ...json.data, token: new URL(json.data.url).searchParams.get("token") ?? "" };
}

/** Opens a link the way a browser does: GET its page, POST its one form. */
export async function open(b: Browser, url: string, now?: number): Promise<Response> {
  const path = url.slice(BASE.length);
  const page = await b.get(path, now);
  expect(page.status).toBe(200);
  const html = await page.text();
  const token = new URL(url).searchParams.get("token") ?? "";
  return b.post("/portal/open", { csrf: Browser.csrf(html), token }, now);
}

export async function session(o: Org, config = 0): Promise<{ b: Browser; csrf: string; link: Awaited<ReturnType<typeof link>> }> {
  const l = await link(o, config);
  const b = new Browser();
  const res = await open(b, l.url);
  expect(res.status).toBe(303);
  expect(res.headers.get("location")).toBe("/portal");
  return { b, csrf: await b.csrfOf("/portal"), link: l };
}

/** A valid 1x1 PNG, 70 bytes. */
export const TINY_PNG = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="),
  (ch) => ch.charCodeAt(0),
);
/** Where the tests' logos are fetched from (the fake network answers it). */
export const LOGO_URL = "https://brand.example/logo.png";

/**
 * Sets the organization's portal branding over REST; `logo` (bytes, or the answer to make) is
 * served at LOGO_URL for the one fetch keyway makes when saving. Returns the settings as answered.
 */
export async function brand(
  o: Org,
  fields: Record<string, unknown>,
  logo?: Uint8Array | (() => Response),
): Promise<{ status: number; data: Record<string, unknown>; developer_message?: string }> {
  // A Response made when asked for: its body is read in the request that fetched it.
  fakeNetwork({ ...receiver(), [LOGO_URL]: () => (typeof logo === "function" ? logo() : new Response(logo ?? TINY_PNG)) });
  const res = await api(o.t, o.bearer, "/v1/webhook-settings", "PATCH", {
    ...(logo !== undefined ? { portal_logo_url: LOGO_URL } : {}),
    ...fields,
  });
  const json = await body<Record<string, unknown>>(res);
  return { status: res.status, data: json.data, ...(json.developer_message ? { developer_message: String(json.developer_message) } : {}) };
}
