/**
 * One Chromium for every browser test file: Debian's Chromium driven by playwright-core
 * (`npx playwright install` cannot download here, so the system binary is used; CI installs it in
 * .ci/run). The browser project's global setup (global-setup.ts) starts it as a playwright server
 * (launchServer) and each file connects to it (connectChromium in browser.ts), getting contexts of
 * its own, instead of launching a browser per file. Imported by the main process, so nothing here
 * needs a test's context.
 */
import { accessSync, constants } from "node:fs";
import { chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

export function chromiumInstalled(): boolean {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface SharedBrowser {
  wsEndpoint: string;
  close(): Promise<void>;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared Chromium's endpoint; empty when Chromium is not installed. */
    chromium: string;
  }
}

export async function startSharedBrowser(): Promise<SharedBrowser | undefined> {
  if (!chromiumInstalled()) return undefined;
  const server = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  return { wsEndpoint: server.wsEndpoint(), close: () => server.close() };
}
