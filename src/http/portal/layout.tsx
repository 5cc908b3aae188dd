/**
 * The portal's HTML layout: the page shell (landmarks, skip link, the portal's navigation, the
 * "Sign out" form) and its style sheet. The markup inside reuses the manager's components
 * (http/manager/views.tsx, charts.tsx, pages/webhooks.tsx), so the style sheet is the manager's
 * (MANAGER_CSS, light and dark schemes included) plus the navigation's few rules, and times are
 * relative to the request's clock given to the manager's Clock context. Server-rendered, usable without JavaScript; the only
 * script is the optional copy button, allowed by the page's CSP nonce. Hono JSX escapes every
 * interpolated value. Two entries of the navigation, "Recover" and "Event catalog", are rendered
 * only when their href is given (routes.tsx gives both; a page without a session has no nav).
 */
import { raw } from "hono/html";
import type { Child, FC } from "hono/jsx";
import { accentPalette, normalizeHex, paletteCss } from "../../lib/contrast";
import type { PortalBranding } from "../../objects/webhooks/event-types";
import { Clock, MANAGER_CSS } from "../manager/views";

/** The manager's style sheet (one look, one place), and the portal's own rules after it. */
const CSS = `${MANAGER_CSS}
nav.portal ul { list-style:none; padding:0; margin:0 0 1rem; display:flex; flex-wrap:wrap; gap:.25rem 1rem; }
nav.portal a[aria-current=page] { font-weight:700; color:var(--fg); text-decoration:none; box-shadow: inset 0 -3px 0 var(--accent); }
/* The portal's own pages (recover.tsx, catalog.tsx): the window's inputs, folded schemas. */
input[type=datetime-local] { max-width:20rem; }
fieldset { border:1px solid var(--line); border-radius:6px; margin:.5rem 0; padding:.5rem 1rem 1rem; min-width:0; } legend { font-weight:600; padding:0 .25rem; }
details { margin:.5rem 0; } summary { cursor:pointer; color:var(--accent); font-weight:600; }
h2 code { font-size:1em; } .card > h2:first-child { margin-top:0; }
header .brand { display:inline-flex; align-items:center; gap:.5rem; } header .brand img { height:32px; width:auto; max-width:160px; object-fit:contain; }
`;

/**
 * The organization's accent as a style block after the base sheet, or null for keyway's own: the
 * AA palette lib/contrast.ts derives from it, in light and dark. Its values are `#rrggbb` only
 * (checked again here, so nothing a setting holds can reach the CSS as text).
 */
export function brandingCss(branding: PortalBranding | undefined): string | null {
  const accent = branding?.accent == null ? null : normalizeHex(branding.accent);
  return accent === null ? null : paletteCss(accentPalette(accent));
}

/** "Acme webhooks", or keyway's words when the organization named none. */
export const portalName = (branding: PortalBranding | undefined): string =>
  branding?.display_name ? `${branding.display_name} webhooks` : "Webhook portal";

/** Copy buttons (views.tsx's SecretOnce and CopyId): hidden in the markup, shown when scripts run. */
const COPY_SCRIPT = `
document.querySelectorAll("[data-copy]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () {
    var field = document.getElementById(button.getAttribute("data-copy"));
    navigator.clipboard.writeText(field.value).then(function () {
      button.textContent = "Copied";
      document.getElementById("copy-status").textContent = "Secret copied to the clipboard.";
    });
  });
});
document.querySelectorAll("[data-copy-text]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () {
    var text = button.getAttribute("data-copy-text");
    navigator.clipboard.writeText(text).then(function () {
      button.textContent = "Copied";
      document.getElementById("copied").textContent = "Copied " + text + " to the clipboard.";
    });
  });
});
`;

/** Which page of the navigation this is (marked aria-current). */
export type PortalSection = "home" | "deliveries" | "settings" | "filter" | "recover" | "catalog" | null;

/**
 * The entries of the pages added with issue 30 items 1 and 3 (routes.tsx passes both in a
 * session): an entry without its href is not rendered, so no link leads nowhere.
 */
export interface PortalExtras {
  /** "Recover": re-send every failed delivery of a time window (issue 30 item 3). */
  recoverHref?: string;
  /** "Event catalog": the event types and their schemas and examples (issue 30 item 1). */
  catalogHref?: string;
}

export interface PortalPageProps extends PortalExtras {
  title: string;
  nonce: string;
  /** Present in a session: the navigation and the "Sign out" form (which needs the CSRF token). */
  csrf?: string;
  /** What the session reaches, named in the header (the configuration's description or URL). */
  endpoint?: string;
  section?: PortalSection;
  notice?: string;
  /** The request's time (ms since the epoch), which the manager's Time counts relative times from. */
  now?: number;
  /** The organization's name, logo and accent (a session's); keyway's own look without. */
  branding?: PortalBranding;
  children?: Child;
}

export const PortalPage: FC<PortalPageProps> = (p) => {
  const palette = brandingCss(p.branding);
  const entries: { section: PortalSection; href: string; label: string }[] = [
    { section: "home", href: "/portal", label: "Endpoint" },
    { section: "deliveries", href: "/portal/deliveries", label: "Deliveries" },
    { section: "settings", href: "/portal/settings", label: "Settings" },
    { section: "filter", href: "/portal/filter", label: "Filter" },
    ...(p.recoverHref !== undefined ? [{ section: "recover" as const, href: p.recoverHref, label: "Recover" }] : []),
    ...(p.catalogHref !== undefined ? [{ section: "catalog" as const, href: p.catalogHref, label: "Event catalog" }] : []),
  ];
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${p.title} - ${p.branding?.display_name ? `${p.branding.display_name} webhooks` : "webhook portal"}`}</title>
          {/* A constant, not user input: inserted raw, since JSX would entity-escape its quotes. */}
          <style nonce={p.nonce} dangerouslySetInnerHTML={{ __html: CSS }} />
          {/* Only #rrggbb values (brandingCss): raw for the same reason. */}
          {palette !== null && <style nonce={p.nonce} dangerouslySetInnerHTML={{ __html: palette }} />}
        </head>
        <body>
          <a class="skip" href="#main">
            Skip to content
          </a>
          <header>
            <span class="brand">
              {p.branding?.logo_sha256 && (
                <img
                  src={`/portal/logo/${p.branding.logo_sha256}`}
                  alt={p.branding.display_name ? `${p.branding.display_name} logo` : ""}
                  height={32}
                />
              )}
              <span>
                {portalName(p.branding)}
                {p.endpoint !== undefined ? `: ${p.endpoint}` : ""}
              </span>
            </span>
            {p.csrf !== undefined && (
              <form class="inline" method="post" action="/portal/sign-out">
                <input type="hidden" name="csrf" value={p.csrf} />
                <button type="submit" class="secondary">
                  Sign out
                </button>
              </form>
            )}
          </header>
          <main id="main">
            {p.csrf !== undefined && (
              <nav class="portal" aria-label="Portal">
                <ul>
                  {entries.map((e) => (
                    <li>
                      <a href={e.href} aria-current={e.section === p.section ? "page" : undefined}>
                        {e.label}
                      </a>
                    </li>
                  ))}
                </ul>
              </nav>
            )}
            <h1>{p.title}</h1>
            {p.notice && (
              <p class="notice" role="status">
                {p.notice}
              </p>
            )}
            <Clock.Provider value={p.now ?? null}>{p.children}</Clock.Provider>
            <p id="copied" class="sr-only" role="status" aria-live="polite"></p>
          </main>
          <script nonce={p.nonce} dangerouslySetInnerHTML={{ __html: COPY_SCRIPT }} />
        </body>
      </html>
    </>
  );
};
