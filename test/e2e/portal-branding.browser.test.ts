/**
 * The portal's branding in a real browser (Debian's Chromium, playwright-core, a real `npm start`):
 * the operator sets the organization's display name, uploads a PNG logo (made here with node:zlib)
 * and a hard accent colour in the manager's Webhook settings; the receiver opens its portal link
 * and sees the name in the header and the title, the logo loaded (served by keyway with its
 * strict headers), and the accent on links and buttons, made readable: axe-core finds no
 * violation (colour contrast included) in light and dark at 1280 and 390 px (browser.ts
 * expectLaidOut) for yellow, black and mid-grey accents, each of which the palette must move in
 * one scheme at least. The empty catalog says what the endpoint receives. With
 * KEYWAY_SCREENSHOTS=1, each step leaves test-results/portal-branding-<step>[-390][-dark].png.
 */
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accentPalette } from "../../src/lib/contrast";
import { browserFile, burstClient, chromiumFor, expectLaidOut, json, SCREENSHOTS, WIDE } from "./browser";
import { type Receiver, startReceiver } from "./server";

const hasChromium = chromiumFor("portal branding browser tests");

/** keyway's own accents (http/manager/views.tsx MANAGER_CSS), which a branded portal must not show. */
const DEFAULT_ACCENT = { light: "rgb(11, 87, 208)", dark: "rgb(138, 180, 248)" };

const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)).join(", ")})`;

/** A PNG (RGB, 8 bits) of `width` x `height`: three vertical stripes, as a logo would have. */
function png(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const b of bytes) c = (crcTable[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const stripes = [
    [0xe4, 0x00, 0x2b],
    [0x1a, 0x1a, 0x1a],
    [0xff, 0xc8, 0x00],
  ];
  const rows = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; y++) {
    const row = y * (1 + width * 3);
    for (let x = 0; x < width; x++) rows.set(stripes[Math.floor((x * 3) / width)] ?? [0, 0, 0], row + 1 + x * 3);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

async function expectAccessible(page: Page, step: string): Promise<void> {
  await expectLaidOut(page, step, async (suffix) => {
    await page.screenshot({ path: join(SCREENSHOTS, `portal-branding-${step}${suffix}.png`), fullPage: true });
  });
}

/** The computed colour of a link of the navigation (not the current page's), in each scheme. */
async function linkColours(page: Page): Promise<{ light: string; dark: string }> {
  const colour = () =>
    page
      .locator("nav.portal a:not([aria-current])")
      .first()
      .evaluate((a) => getComputedStyle(a).color);
  await page.emulateMedia({ colorScheme: "dark" });
  const dark = await colour();
  await page.emulateMedia({ colorScheme: "light" });
  return { light: await colour(), dark };
}

describe.skipIf(!hasChromium)("the portal's branding in Chromium against npm start", () => {
  const files = browserFile();
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
  });

  it("shows the organization's name, uploaded logo and accent, axe-clean in light and dark at 1280 and 390 px for hard accents", async () => {
    if (!receiver) throw new Error("setup failed");
    const keyway = files.server();
    const browser = files.browser();
    const base = keyway.baseUrl;
    const { demo, adminToken } = keyway;
    const org = demo.organizationId;

    const headers = await burstClient(keyway, "Branding walk");
    const call = <T>(method: string, path: string, payload?: unknown) =>
      json<T>(`${base}${path}`, { method, headers, ...(payload !== undefined ? { body: JSON.stringify(payload) } : {}) });
    const config = await call<{ id: string }>("POST", "/v1/webhook-configurations", {
      url: `${receiver.url}/hook`,
      description: "Orders",
      oauth: { token_url: `${receiver.url}/token`, client_id: "keyway", client_secret: "branding-walk-receiver-secret" },
    });
    expect(config.status).toBe(201);

    // The operator brands the portal in the manager: a name, a hard accent and an uploaded PNG.
    const context = await browser.newContext({ viewport: WIDE });
    const manager = await context.newPage();
    await manager.goto(`${base}/manager/sign-in`);
    await manager.getByLabel("Administrator token").fill(adminToken);
    await manager.getByRole("button", { name: "Sign in" }).click();
    await manager.waitForURL((url) => url.pathname !== "/manager/sign-in");
    await manager.goto(`${base}/manager/organizations/${org}/webhook-settings`);
    await manager.getByLabel("Display name").fill("Acme Corp");
    await manager.getByLabel("Accent colour").fill("#ffff00");
    const logo = png(96, 32);
    await manager.getByLabel("Upload a logo").setInputFiles({ name: "acme.png", mimeType: "image/png", buffer: logo });
    await manager.getByRole("button", { name: "Save settings" }).click();
    await manager.waitForURL((url) => url.search === "?notice=settings-saved");
    expect(await manager.content()).toContain(`Logo kept: image/png, ${logo.length.toLocaleString("en-US")} bytes`);
    await expectAccessible(manager, "manager-settings");
    await context.close();

    const settings = await call<{ portal_logo: { sha256: string } | null; portal_display_name: string }>("GET", "/v1/webhook-settings");
    expect(settings.data.portal_display_name).toBe("Acme Corp");
    const sha = settings.data.portal_logo?.sha256 ?? "";
    expect(sha).toMatch(/^[0-9a-f]{64}$/);

    // The receiver opens its link.
    const link = await call<{ url: string }>("POST", `/v1/webhook-configurations/${config.data.id}/portal-links`, {});
    expect(link.status).toBe(200);
    const portal = await browser.newContext({ viewport: WIDE });
    const page = await portal.newPage();
    await page.goto(link.data.url);
    await page.getByRole("button", { name: "Open the portal" }).click();
    await page.waitForURL(`${base}/portal`);

    expect(await page.title()).toBe("Endpoint - Acme Corp webhooks");
    await expect.poll(() => page.locator("header .brand").innerText()).toBe("Acme Corp webhooks: Orders");
    const img = page.getByRole("img", { name: "Acme Corp logo" });
    expect(await img.getAttribute("src")).toBe(`/portal/logo/${sha}`);
    await expect.poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(96);
    // Served by keyway, with the session's cookie, under strict headers; nothing without it.
    const served = await page.request.get(`${base}/portal/logo/${sha}`);
    expect(served.status()).toBe(200);
    expect(served.headers()).toMatchObject({
      "content-type": "image/png",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
      "cache-control": "private, max-age=86400, immutable",
      "cross-origin-resource-policy": "same-origin",
    });
    expect(Buffer.from(await served.body()).equals(logo)).toBe(true);
    expect((await fetch(`${base}/portal/logo/${sha}`)).status).toBe(404);

    // Hard accents: each is moved in one scheme at least, and every page passes axe in both.
    const moved = { light: 0, dark: 0 };
    for (const accent of ["#ffff00", "#000000", "#777777"]) {
      if (accent !== "#ffff00") expect((await call("PATCH", "/v1/webhook-settings", { portal_accent_color: accent })).status).toBe(200);
      const palette = accentPalette(accent);
      moved.light += palette.light.adjusted ? 1 : 0;
      moved.dark += palette.dark.adjusted ? 1 : 0;
      const name = accent.slice(1);
      for (const [step, path] of [
        ["home", "/portal"],
        ["catalog", "/portal/catalog"],
      ] as const) {
        await page.goto(`${base}${path}`);
        const colours = await linkColours(page);
        expect(colours).toEqual({ light: rgb(palette.light.accent), dark: rgb(palette.dark.accent) });
        expect(colours.light).not.toBe(DEFAULT_ACCENT.light);
        expect(colours.dark).not.toBe(DEFAULT_ACCENT.dark);
        if (step === "catalog") {
          // No type of the organization's: what the endpoint receives, and where to narrow it.
          const notice = page.locator("section[aria-labelledby=no-types]");
          await expect.poll(() => notice.innerText()).toMatch(/receives every event the provider publishes, unless a filter narrows them/);
          for (const target of ["Filter", "Settings", "Deliveries"])
            expect(await notice.getByRole("link", { name: target }).count()).toBe(1);
        }
        await expectAccessible(page, `${step}-${name}`);
      }
      // A button on the accent, in both schemes (the settings page's Save).
      await page.goto(`${base}/portal/settings`);
      await expectAccessible(page, `settings-${name}`);
    }
    expect(moved.light).toBeGreaterThan(0);
    expect(moved.dark).toBeGreaterThan(0);
    await portal.close();
  });
});
