/**
 * The portal's HTML layout: the page shell (landmarks, skip link, the portal's navigation, the
 * "Sign out" form) and its style sheet. The markup inside reuses the manager's components
 * (http/manager/views.tsx, charts.tsx, pages/webhooks.tsx), so the style sheet is the manager's
 * (copied here: views.tsx does not export it, and the portal must not change with the manager's
 * chrome) plus the navigation's few rules. Server-rendered, usable without JavaScript; the only
 * script is the optional copy button, allowed by the page's CSP nonce. Hono JSX escapes every
 * interpolated value. Two entries of the navigation, "Recover" and "Event catalog", are rendered
 * only when their href is given (routes.tsx gives both; a page without a session has no nav).
 */
import { raw } from "hono/html";
import type { Child, FC } from "hono/jsx";

/** The manager's style sheet (views.tsx, kept in step by hand) and the portal's navigation. */
const CSS = `
:root { color-scheme: light; --fg:#1a1a1a; --muted:#555; --line:#d0d0d0; --accent:#0b57d0; --bad:#b3261e; --ok:#146c2e; --warn:#7a4f00; }
* { box-sizing: border-box; } [hidden] { display: none !important; }
body { margin:0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background:#fafafa; }
.skip { position:absolute; left:-999px; } .skip:focus { left:1rem; top:1rem; background:#fff; padding:.5rem; z-index:1; }
header { background:#fff; border-bottom:1px solid var(--line); padding:.75rem 1.5rem; display:flex; justify-content:space-between; align-items:center; gap:1rem; flex-wrap:wrap; }
header .brand { font-weight:700; text-decoration:none; color:var(--fg); }
main { max-width: 1200px; margin: 0 auto; padding: 1.5rem; overflow-wrap: break-word; }
@media (max-width: 480px) { header, main { padding-left: 1rem; padding-right: 1rem; } }
nav.crumbs ol { list-style:none; padding:0; margin:0 0 1rem; display:flex; flex-wrap:wrap; gap:.25rem; color:var(--muted); }
nav.crumbs li + li::before { content:"\\2192"; margin-right:.25rem; }
h1 { font-size:1.6rem; margin:.25rem 0 1rem; } h2 { font-size:1.2rem; margin-top:2rem; }
a { color: var(--accent); } a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, .table-scroll:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
.table-scroll { overflow-x:auto; max-width:100%; margin:1rem 0; }
/* Tables of many columns keep their columns readable at phone widths and scroll in their region
   instead of folding each cell into a tall, mostly blank row. */
table.wide { min-width:44rem; }
/* Short lists at phone widths: each row becomes a card of labelled lines (the labels come from
   data-label, the header row stays for screen readers), so nothing is cut off or needs scrolling. */
@media (max-width: 600px) {
  table.stack thead { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
  table.stack tr { display:block; border-bottom:1px solid var(--line); padding:.5rem 0; }
  table.stack td { display:block; border:0; padding:.15rem .5rem; }
  table.stack td[data-label]::before { content: attr(data-label) ": "; font-weight:600; color:var(--muted); }
} td.detail { min-width:18rem; overflow-wrap:anywhere; } caption { text-align:left; padding:.25rem 0; }
/* A wide table's caption stays readable: as wide as the screen, and in view while the table scrolls. */
.table-scroll caption { position:sticky; left:0; max-width:calc(100vw - 2rem); }
.table-scroll code { white-space:nowrap; word-break:normal; } .table-scroll code.wrap { white-space:normal; word-break:break-all; }
table { border-collapse: collapse; width:100%; background:#fff; } th, td { text-align:left; padding:.5rem; border-bottom:1px solid var(--line); vertical-align: top; }
th { font-size:.85rem; color:var(--muted); text-transform: uppercase; letter-spacing:.03em; }
code { font-family: ui-monospace, monospace; font-size:.9em; word-break: break-all; }
form.card, .card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:1rem; margin:1rem 0; }
label { display:block; font-weight:600; margin:.5rem 0 .25rem; } .hint { font-weight:400; color:var(--muted); font-size:.9rem; }
.check { display:flex; gap:.5rem; align-items:baseline; } .check input { width:auto; }
input[type=text], input[type=email], input[type=password], input[type=number] { display:block; width:100%; max-width:32rem; padding:.5rem; border:1px solid #888; border-radius:4px; font:inherit; }
select { display:block; max-width:100%; padding:.5rem; border:1px solid #888; border-radius:4px; font:inherit; background:#fff; }
button, .button { display:inline-block; margin-top:.75rem; padding:.5rem 1rem; border-radius:4px; border:1px solid var(--accent); background:var(--accent); color:#fff; font:inherit; cursor:pointer; text-decoration:none; }
button.secondary, .button.secondary { background:#fff; color:var(--accent); } button.danger, .button.danger { background:var(--bad); border-color:var(--bad); color:#fff; }
.inline { display:inline; } .inline button { margin:0; }
pre.excerpt { white-space:pre-wrap; overflow-wrap:anywhere; max-width:32rem; max-height:12rem; overflow:auto; margin:.25rem 0 0; font-size:.85em; }
.notice { border-left:4px solid var(--ok); background:#fff; padding:.75rem 1rem; margin:1rem 0; }
.warning { border-left:4px solid var(--bad); background:#fff; padding:.75rem 1rem; margin:1rem 0; }
.field-error { color: var(--bad); font-weight:600; margin:.25rem 0; } input[aria-invalid=true] { border:2px solid var(--bad); }
input.secret { font-size:1rem; max-width:48rem; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
/* Status badges: a word in a pill; the colour repeats what the word says. */
.badge { display:inline-block; padding:0 .55rem; border-radius:999px; font-size:.85rem; font-weight:600; border:1px solid currentColor; white-space:nowrap; background:#fff; }
.status-active, .status-delivered { color: var(--ok); } .status-revoked, .status-failed, .status-disabled, .status-expired { color: var(--bad); }
.status-pending, .status-retrying, .status-in_flight, .status-retry, .status-paused { color: var(--warn); }
.copy { margin:0 0 0 .35rem; padding:0 .5rem; font-size:.8rem; vertical-align:baseline; }
.id { white-space:nowrap; } .nowrap { white-space:nowrap; }
.sr-only { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
/* Charts (charts.tsx): inline SVG scaled to the column; each colour is a class. */
.charts { display:grid; gap:1rem; } @media (min-width: 900px) { .charts { grid-template-columns: 1fr 1fr; } }
figure.chart { margin:0; background:#fff; border:1px solid var(--line); border-radius:8px; padding:.75rem; min-width:0; }
figure.chart figcaption { font-weight:600; } figure.chart svg { display:block; width:100%; height:auto; }
.bar-good { fill: var(--ok); background: var(--ok); } .bar-bad { fill: var(--bad); background: var(--bad); }
.axis { stroke:#888; } .axis-label { font-size:11px; fill:#444; }
.legend { list-style:none; padding:0; margin:.25rem 0; display:flex; flex-wrap:wrap; gap:1rem; }
.swatch { display:inline-block; width:.8rem; height:.8rem; margin-right:.35rem; vertical-align:middle; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.25rem 1rem; margin:0 0 1rem; } dl.facts dd { margin:0; min-width:0; }
@media (max-width: 480px) { dl.facts { grid-template-columns:1fr; } dl.facts dd { margin-bottom:.5rem; } }
.stats { display:flex; flex-wrap:wrap; gap:1rem 2rem; margin:.5rem 0; } .stats div { min-width:8rem; } .stats strong { display:block; font-size:1.4rem; }
form.filters { display:flex; flex-wrap:wrap; gap:.5rem 1rem; align-items:flex-end; } form.filters label { margin:0; }
form.filters input, form.filters select { max-width:14rem; } form.filters button { margin:0; }
nav.pager { display:flex; gap:1rem; margin:.5rem 0 1rem; }
pre.payload { background:#fff; border:1px solid var(--line); border-radius:8px; padding:.75rem; overflow:auto; max-height:24rem; white-space:pre-wrap; overflow-wrap:anywhere; }
ul.links { padding-left:1.2rem; } ul.links li { margin:.4rem 0; }
nav.portal ul { list-style:none; padding:0; margin:0 0 1rem; display:flex; flex-wrap:wrap; gap:.25rem 1rem; }
nav.portal a[aria-current=page] { font-weight:700; color:var(--fg); }
/* The portal's own pages (recover.tsx, catalog.tsx): the window's inputs, a recovery's and a type's states, folded schemas. */
input[type=datetime-local] { display:block; width:100%; max-width:20rem; padding:.5rem; border:1px solid #888; border-radius:4px; font:inherit; }
fieldset { border:1px solid var(--line); border-radius:6px; margin:.5rem 0; padding:.5rem 1rem 1rem; min-width:0; } legend { font-weight:600; padding:0 .25rem; }
.status-done { color: var(--ok); } .status-running { color: var(--warn); } .status-stopped, .status-deprecated { color: var(--bad); }
details { margin:.5rem 0; } summary { cursor:pointer; color:var(--accent); font-weight:600; }
h2 code { font-size:1em; } .card > h2:first-child { margin-top:0; }
`;

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
export type PortalSection = "home" | "deliveries" | "settings" | "recover" | "catalog" | null;

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
  children?: Child;
}

export const PortalPage: FC<PortalPageProps> = (p) => {
  const entries: { section: PortalSection; href: string; label: string }[] = [
    { section: "home", href: "/portal", label: "Endpoint" },
    { section: "deliveries", href: "/portal/deliveries", label: "Deliveries" },
    { section: "settings", href: "/portal/settings", label: "Settings" },
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
          <title>{`${p.title} - webhook portal`}</title>
          {/* A constant, not user input: inserted raw, since JSX would entity-escape its quotes. */}
          <style nonce={p.nonce} dangerouslySetInnerHTML={{ __html: CSS }} />
        </head>
        <body>
          <a class="skip" href="#main">
            Skip to content
          </a>
          <header>
            <span class="brand">Webhook portal{p.endpoint !== undefined ? `: ${p.endpoint}` : ""}</span>
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
            {p.children}
            <p id="copied" class="sr-only" role="status" aria-live="polite"></p>
          </main>
          <script nonce={p.nonce} dangerouslySetInnerHTML={{ __html: COPY_SCRIPT }} />
        </body>
      </html>
    </>
  );
};
