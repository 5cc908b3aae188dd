/**
 * Shared by the browser tests (the manager, /docs): Debian's Chromium driven by playwright-core
 * (`npx playwright install` cannot download here, so the system binary is used; CI installs it in
 * .ci/run), and axe-core run inside the page so accessibility is checked by an outside library,
 * at every impact level.
 */
import { accessSync, constants, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export function chromiumInstalled(): boolean {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-quic",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; html: string }[];
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Runs axe-core (WCAG 2.0/2.1/2.2 A and AA plus best practices) on the page as it is now and
 * returns every violation, whatever its impact, in a form that reads well in a failed assertion.
 * Pages with a strict CSP still allow it: the script is evaluated through the DevTools protocol,
 * not added as page content, so the page's CSP stays as strict as it is in production.
 */
export async function axeViolations(page: Page): Promise<{ id: string; impact: string | null; help: string; targets: string[] }[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"] },
    });
    return result.violations;
  });
  return violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
}
