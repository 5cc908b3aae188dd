/**
 * The portal's branding (docs/receivers.md, "The portal"): the organization's display name, accent
 * colour and logo, set over REST (`PATCH /v1/webhook-settings`) or in the manager's Webhook
 * settings (an upload), shown on every portal page. The logo is a PNG, JPEG or WebP of at most 64
 * KiB recognised by its bytes, fetched once through the SSRF guard when given as a URL, and served
 * by keyway at `/portal/logo/<sha256>` to the organization's own portal sessions only, with a
 * strict content type. Refusals are 400s that say why, never 5xx.
 */
import { describe, expect, it } from "vitest";
import { accentPalette } from "../src/lib/contrast";
import { MAX_LOGO_BYTES } from "../src/lib/images";
import { fakeNetwork, receiver } from "./fake-network";
import { ADMIN_TOKEN, body, call } from "./helpers";
import { Browser } from "./manager-helpers";
import { brand, org, PORTAL_COOKIE, session, TINY_PNG } from "./portal-helpers";
import { api } from "./webhook-helpers";

const SVG = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
/** A PNG's signature, then padding past the limit. */
const BIG_PNG = (() => {
  const bytes = new Uint8Array(65 * 1024);
  bytes.set(TINY_PNG);
  return bytes;
})();
const TEXT = new TextEncoder().encode("this is a text file, named logo.png\n");
/** A WebP's RIFF header, and a JPEG's SOI marker. */
const WEBP = Uint8Array.from([0x52, 0x49, 0x46, 0x46, 0x1a, 0, 0, 0, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x4c, 0, 0, 0, 0]);
const JPEG = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0]);

async function sha256(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function auditOf(orgId: string) {
  const res = await call(`/admin/v1/organizations/${orgId}/audit-log`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  return (await body<{ action: string; detail: Record<string, unknown> | null }[]>(res)).data;
}

describe("the portal's branding over REST", () => {
  it("sets the name, the accent (kept lower-case) and a logo fetched from its URL, audited by the logo's hash and size; null removes each", async () => {
    const o = await org(1);
    const set = await brand(o, { portal_display_name: "  Acme Corp  ", portal_accent_color: "#E4002B" }, TINY_PNG);
    expect(set.status, set.developer_message).toBe(200);
    expect(set.data).toMatchObject({
      portal_display_name: "Acme Corp",
      portal_accent_color: "#e4002b",
      portal_logo: { sha256: await sha256(TINY_PNG), content_type: "image/png", size_bytes: TINY_PNG.byteLength },
    });
    const entry = (await auditOf(o.t.orgId)).filter((e) => e.action === "webhook_settings.updated").at(-1);
    expect(entry?.detail).toMatchObject({
      portal_display_name: "Acme Corp",
      portal_accent_color: "#e4002b",
      portal_logo: { sha256: await sha256(TINY_PNG), content_type: "image/png", size_bytes: TINY_PNG.byteLength },
    });
    // Never the bytes, in any encoding.
    expect(JSON.stringify(entry)).not.toContain(btoa(String.fromCharCode(...TINY_PNG)).slice(0, 20));
    expect(Object.keys((entry?.detail?.portal_logo as object) ?? {}).sort()).toEqual(["content_type", "sha256", "size_bytes"]);

    // WebP and JPEG by their bytes, whatever the URL's name says.
    expect((await brand(o, {}, WEBP)).data.portal_logo).toMatchObject({ content_type: "image/webp" });
    expect((await brand(o, {}, () => new Response(JPEG, { headers: { "Content-Type": "image/png" } }))).data.portal_logo).toMatchObject({
      content_type: "image/jpeg",
    });

    const cleared = await brand(o, { portal_display_name: null, portal_accent_color: null, portal_logo_url: null });
    expect(cleared.status).toBe(200);
    expect(cleared.data).toMatchObject({ portal_display_name: null, portal_accent_color: null, portal_logo: null });
  });

  it("refuses a name, a colour or a URL that is not one, naming the field", async () => {
    const o = await org(1);
    for (const [fields, field] of [
      [{ portal_display_name: "x".repeat(81) }, "portal_display_name"],
      [{ portal_display_name: "   " }, "portal_display_name"],
      [{ portal_display_name: "Acme\u0007" }, "portal_display_name"],
      [{ portal_accent_color: "#fff" }, "portal_accent_color"],
      [{ portal_accent_color: "red;}body{color:red" }, "portal_accent_color"],
      [{ portal_logo_url: "http://brand.example/logo.png" }, "portal_logo_url"],
    ] as const) {
      const res = await brand(o, fields);
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(res.developer_message).toContain(field);
    }
  });

  it("refuses an SVG, a 65 KiB PNG, a text file named .png, a failed or redirected fetch and a private address: 400 saying why, nothing kept", async () => {
    const o = await org(1);
    const cases: [Uint8Array | (() => Response), RegExp][] = [
      [SVG, /portal_logo_url was not kept: logo is not a PNG, JPEG or WebP image \(SVG is not accepted\)/],
      [BIG_PNG, /portal_logo_url was not kept: logo is larger than 64 KiB/],
      [TEXT, /not a PNG, JPEG or WebP image/],
      [new Uint8Array(), /logo is empty/],
      [() => new Response("gone", { status: 500 }), /logo URL answered 500/],
      [() => new Response(null, { status: 302, headers: { Location: "https://10.0.0.1/logo.png" } }), /logo URL redirected/],
      [() => new Response(new Blob([SVG]), { headers: { "Content-Type": "image/png" } }), /not a PNG, JPEG or WebP image/],
    ];
    for (const [logo, why] of cases) {
      const res = await brand(o, {}, logo);
      expect(res.status, String(why)).toBe(400);
      expect(res.developer_message).toMatch(why);
    }
    expect(MAX_LOGO_BYTES).toBe(64 * 1024);
    // The SSRF guard, before any request: a private address, loopback, metadata.
    for (const url of ["https://10.0.0.1/logo.png", "https://127.0.0.1/logo.png", "https://169.254.169.254/latest"]) {
      const sent = fakeNetwork(receiver());
      const res = await brand(o, { portal_logo_url: url });
      expect(res.status, url).toBe(400);
      expect(res.developer_message).toMatch(/portal_logo_url was not kept: url points to a/);
      expect(sent.filter((s) => s.url.startsWith(url.slice(0, 12)))).toEqual([]);
    }
    const kept = await body<Record<string, unknown>>(await api(o.t, o.bearer, "/v1/webhook-settings"));
    expect(kept.data.portal_logo).toBeNull();
  });
});

describe("the portal shows it", () => {
  it("names the organization in the header and the title, shows the logo, and applies the AA palette of its accent", async () => {
    const o = await org(1);
    const { b } = await session(o);
    const plain = await (await b.get("/portal")).text();
    expect(plain).toContain("Webhook portal: endpoint 0");
    expect(plain).not.toContain("/portal/logo/");
    expect(plain.match(/<style nonce/g)).toHaveLength(1);

    await brand(o, { portal_display_name: "Acme <b>Corp</b>", portal_accent_color: "#ffff00" }, TINY_PNG);
    const res = await b.get("/portal");
    const html = await res.text();
    const hash = await sha256(TINY_PNG);
    expect(html).toContain(`<img src="/portal/logo/${hash}" alt="Acme &lt;b&gt;Corp&lt;/b&gt; logo" height="32"/>`);
    expect(html).toContain("Acme &lt;b&gt;Corp&lt;/b&gt; webhooks: endpoint 0");
    expect(html).toContain("<title>Endpoint - Acme &lt;b&gt;Corp&lt;/b&gt; webhooks</title>");
    const palette = accentPalette("#ffff00");
    expect(html).toContain(`--accent:${palette.light.accent}; --on-accent:${palette.light.onAccent};`);
    expect(html).toContain(`--accent:${palette.dark.accent};`);
    expect(palette.light.accent).not.toBe("#ffff00");
    // Images from this origin only; nothing else loosened.
    expect(res.headers.get("Content-Security-Policy")).toMatch(/img-src 'self'/);
    expect(res.headers.get("Content-Security-Policy")).toMatch(/default-src 'none'/);
  });
});

describe("GET /portal/logo/<sha256>", () => {
  it("serves the session's organization's logo with a strict type, and 404s without a session, with a forged cookie, another hash or another organization's session", async () => {
    const o = await org(1);
    const other = await org(1);
    const { b } = await session(o);
    const { b: otherBrowser } = await session(other);
    await brand(o, {}, TINY_PNG);
    await brand(other, {}, WEBP);
    const hash = await sha256(TINY_PNG);
    const path = `/portal/logo/${hash}`;

    const res = await b.get(path);
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(TINY_PNG);
    expect(res.headers.get("Content-Type")).toBe("image/png");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; sandbox");
    expect(res.headers.get("Cache-Control")).toBe("private, max-age=86400, immutable");
    expect(res.headers.get("Cross-Origin-Resource-Policy")).toBe("same-origin");

    const notFound = async (r: Response, why: string) => {
      expect(r.status, why).toBe(404);
      expect(r.headers.get("Content-Type"), why).toBe("text/plain; charset=utf-8");
      expect(r.headers.get("X-Content-Type-Options"), why).toBe("nosniff");
      expect(await r.text(), why).toBe("There is no such page.\n");
    };
    await notFound(await new Browser().get(path), "no session");
    const forged = new Browser();
    const cookie = b.cookies.get(PORTAL_COOKIE) ?? "";
    forged.cookies.set(PORTAL_COOKIE, `${cookie.slice(0, -2)}xx`);
    await notFound(await forged.get(path), "a cookie that fails its signature");
    await notFound(await b.get(`/portal/logo/${await sha256(WEBP)}`), "another organization's hash");
    await notFound(await b.get(`/portal/logo/${"0".repeat(64)}`), "a hash that is no logo's");
    await notFound(await b.get(`/portal/logo/${hash.toUpperCase()}`), "not the hash as written");
    await notFound(await otherBrowser.get(path), "another organization's session");
    // An old hash, once the logo changes, finds nothing.
    await brand(o, {}, JPEG);
    await notFound(await b.get(path), "the previous logo's hash");
    expect((await b.get(`/portal/logo/${await sha256(JPEG)}`)).headers.get("Content-Type")).toBe("image/jpeg");
  });
});

describe("the manager's Webhook settings", () => {
  const settingsPath = (orgId: string) => `/manager/organizations/${orgId}/webhook-settings`;

  async function upload(b: Browser, orgId: string, csrf: string, file: Uint8Array, name: string, extra: Record<string, string> = {}) {
    const form = new FormData();
    form.set("csrf", csrf);
    form.set("portal_display_name", "Acme");
    form.set("portal_accent_color", "#777777");
    form.set("portal_frame_origins", "");
    for (const [k, v] of Object.entries(extra)) form.set(k, v);
    form.set("portal_logo_file", new File([file], name, { type: "image/png" }));
    return b.postMultipart(settingsPath(orgId), form);
  }

  it("uploads a logo in a multipart form, and refuses an SVG, a 65 KiB PNG and a text file named .png beside the field", async () => {
    const o = await org(1);
    const b = await Browser.signedIn(ADMIN_TOKEN);
    const page = await (await b.get(settingsPath(o.t.orgId))).text();
    expect(page).toContain('enctype="multipart/form-data"');
    expect(page).toContain('<input id="portal_logo_file" name="portal_logo_file" type="file" accept="image/png,image/jpeg,image/webp"');
    const csrf = Browser.csrf(page);

    const saved = await upload(b, o.t.orgId, csrf, TINY_PNG, "logo.png");
    expect(saved.status, await saved.clone().text()).toBe(303);
    const after = await (await b.get(settingsPath(o.t.orgId))).text();
    expect(after).toContain(`Logo kept: image/png, ${TINY_PNG.byteLength} bytes`);
    expect(after).toMatch(/id="portal_display_name"[^>]*value="Acme"/);

    for (const [file, name, why] of [
      [SVG, "logo.svg", "is not a PNG, JPEG or WebP image (SVG is not accepted)"],
      [BIG_PNG, "big.png", "is larger than 64 KiB"],
      [TEXT, "logo.png", "is not a PNG, JPEG or WebP image"],
    ] as const) {
      const res = await upload(b, o.t.orgId, csrf, file, name, { portal_display_name: "Changed" });
      expect(res.status, name).toBe(400);
      const html = await res.text();
      expect(html).toContain(`<p id="portal_logo_file-error" class="field-error" role="alert">The uploaded file (${name}) ${why}`);
      // Nothing was changed: the name neither.
      expect(html).toMatch(/id="portal_display_name"[^>]*value="Changed"/);
    }
    const settings = await body<Record<string, unknown>>(await api(o.t, o.bearer, "/v1/webhook-settings"));
    expect(settings.data).toMatchObject({
      portal_display_name: "Acme",
      portal_accent_color: "#777777",
      portal_logo: { content_type: "image/png" },
    });

    // Removing it, and the CSRF and same-origin checks of every manager form.
    expect((await upload(b, o.t.orgId, "wrong", TINY_PNG, "logo.png")).status).toBe(403);
    expect(
      (await b.postMultipart(settingsPath(o.t.orgId), new FormData(), { Origin: "https://evil.example", "Sec-Fetch-Site": "cross-site" }))
        .status,
    ).toBe(403);
    const removed = new FormData();
    removed.set("csrf", csrf);
    removed.set("remove_logo", "on");
    expect((await b.postMultipart(settingsPath(o.t.orgId), removed)).status).toBe(303);
    expect(await (await b.get(settingsPath(o.t.orgId))).text()).toContain("No logo.");
  });
});
