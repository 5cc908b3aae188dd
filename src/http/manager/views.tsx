/**
 * The manager app's HTML: one layout (landmarks, skip link, an organization's sections as a
 * sidebar or, at phone widths, a row of tabs, breadcrumbs named as the spec names the path:
 * Organization Settings, Users, Client credentials), one style sheet with a light and a dark
 * scheme (prefers-color-scheme), and small components: form fields with their error messages
 * attached, tables in a labelled region that become cards of labelled lines at phone widths,
 * times shown relative to the request's clock with the exact UTC time on hover and for screen
 * readers, URLs that break after their slashes. Server-rendered and usable without JavaScript;
 * the only script is the optional copy button, allowed by the page's CSP nonce. Hono JSX escapes
 * every interpolated value.
 */
import { raw } from "hono/html";
import { type Child, createContext, type FC, useContext } from "hono/jsx";
import { BASE } from "../../lib/contrast";

export interface Crumb {
  label: string;
  href?: string;
}

/** One of an organization's sections in the navigation; `current` is marked aria-current="page". */
export interface Section {
  label: string;
  href: string;
  current: boolean;
}

export interface PageProps {
  title: string;
  nonce: string;
  crumbs?: Crumb[];
  /** An organization's page: its name and sections, shown as a sidebar (tabs at phone widths). */
  sections?: { org: string; items: Section[] };
  /** The request's time (ms since the epoch): what relative times (Time) are counted from. */
  now?: number;
  /** Present when signed in: the sign-out form needs the CSRF token. */
  csrf?: string;
  who?: string;
  notice?: string;
  children?: Child;
}

/** The manager's style sheet; the receivers' portal (http/portal/layout.tsx) uses it too, with a few rules of its own. */
/**
 * The radio choices whose other fields depend on them, and each one's values: a form shows a
 * field only for the values it serves (ShownFor), with CSS `:has()` and no script, so the page
 * works the same with scripts off. A browser without `:has()` shows every field, as before.
 */
export const CHOICE_FIELDS = {
  token_endpoint_auth_method: ["client_secret_basic", "private_key_jwt", "federated_jwt"],
  auth_method: ["client_secret_post", "client_secret_basic", "private_key_jwt"],
} as const;
type ChoiceName = keyof typeof CHOICE_FIELDS;

const CHOICE_CSS = `${Object.entries(CHOICE_FIELDS)
  .flatMap(([name, values]) =>
    values.map((v) => `form:has(input[name="${name}"][value="${v}"]:checked) [data-hidden-when~="${name}:${v}"]`),
  )
  .join(",\n")} { display:none; }`;

export const MANAGER_CSS = `
/* Colours are custom properties: the light scheme here, the dark one in the media query below,
   so every rule (charts included) follows prefers-color-scheme without a second sheet. */
:root { color-scheme: light dark; --bg:${BASE.light.bg}; --surface:${BASE.light.surface}; --fg:${BASE.light.fg}; --muted:#555; --line:#d0d4da; --field:#767676;
  --accent:#0b57d0; --on-accent:${BASE.light.onAccent}; --bad:#b3261e; --on-bad:#fff; --ok:#146c2e; --warn:#7a4f00; --focus:#b06d00; --nav-current:#e3ecfb; }
@media (prefers-color-scheme: dark) {
  :root { --bg:${BASE.dark.bg}; --surface:${BASE.dark.surface}; --fg:${BASE.dark.fg}; --muted:#b0b5bc; --line:#3c424a; --field:#8a9099;
    --accent:#8ab4f8; --on-accent:${BASE.dark.onAccent}; --bad:#f28b82; --on-bad:#2b0b08; --ok:#81c995; --warn:#fdd663; --focus:#fdd663; --nav-current:#24324a; }
}
* { box-sizing: border-box; } [hidden] { display: none !important; }
body { margin:0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background:var(--bg); }
.skip { position:absolute; left:-999px; } .skip:focus { left:1rem; top:1rem; background:var(--surface); padding:.5rem; z-index:1; }
header { background:var(--surface); border-bottom:1px solid var(--line); padding:.75rem 1.5rem; display:flex; justify-content:space-between; align-items:center; gap:1rem; flex-wrap:wrap; }
header .brand { font-weight:700; text-decoration:none; color:var(--fg); }
/* The content uses the width of a wide screen; an organization's pages put their sections beside it. */
main { max-width: 1600px; padding: 1.5rem; overflow-wrap: break-word; min-width:0; }
.shell { display:grid; grid-template-columns: 15rem minmax(0, 1fr); align-items:start; }
nav.sections { padding:1.5rem 0 1.5rem 1rem; position:sticky; top:0; }
nav.sections p { margin:0 0 .5rem .75rem; font-weight:700; overflow-wrap:anywhere; }
nav.sections ul { list-style:none; margin:0; padding:0; }
nav.sections a { display:block; padding:.4rem .75rem; border-radius:6px; text-decoration:none; color:var(--fg); }
nav.sections a:hover { background:var(--surface); }
nav.sections a[aria-current=page] { background:var(--nav-current); color:var(--fg); font-weight:700; box-shadow: inset 3px 0 0 var(--accent); }
/* At phone widths the sections are a row of tabs that wrap, above the content: no sideways scroll. */
@media (max-width: 900px) {
  .shell { display:block; }
  nav.sections { position:static; padding:.75rem 1rem 0; border-bottom:1px solid var(--line); background:var(--surface); }
  nav.sections p { display:none; }
  nav.sections ul { display:flex; flex-wrap:wrap; gap:.25rem; }
  nav.sections a { padding:.25rem .6rem; font-size:.9rem; }
  nav.sections a[aria-current=page] { box-shadow: inset 0 -3px 0 var(--accent); }
}
@media (max-width: 480px) { header, main { padding-left: 1rem; padding-right: 1rem; } }
nav.crumbs ol { list-style:none; padding:0; margin:0 0 1rem; display:flex; flex-wrap:wrap; gap:.25rem; color:var(--muted); }
nav.crumbs li + li::before { content:"\\2192"; margin-right:.25rem; }
h1 { font-size:1.6rem; margin:.25rem 0 1rem; } h2 { font-size:1.2rem; margin-top:2rem; }
a { color: var(--accent); } a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible, .table-scroll:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.table-scroll { overflow-x:auto; max-width:100%; margin:1rem 0; }
table { border-collapse: collapse; width:100%; background:var(--surface); } th, td { text-align:left; padding:.5rem; border-bottom:1px solid var(--line); vertical-align: top; }
th { font-size:.85rem; color:var(--muted); text-transform: uppercase; letter-spacing:.03em; }
caption { text-align:left; padding:.25rem 0; }
/* Tables of many columns keep their columns readable on a tablet and scroll in their region there. */
@media (min-width: 641px) { table.wide { min-width:44rem; } .table-scroll caption { position:sticky; left:0; } }
/* Every table at phone widths: each row becomes a card of labelled fields (labels from
   data-label; the header row stays for screen readers) that flow side by side and wrap, the
   cells that matter first (class "lead": status, error), so nothing is off to the right and no
   row is a tall band of mostly empty lines. */
@media (max-width: 640px) {
  .table-scroll table thead { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
  .table-scroll table, .table-scroll tbody { display:block; }
  .table-scroll table tr { display:flex; flex-wrap:wrap; gap:0 .75rem; border-bottom:1px solid var(--line); padding:.3rem .5rem; }
  .table-scroll table td { display:block; border:0; padding:.05rem 0; min-width:0; max-width:100%; font-size:.9rem; line-height:1.3; }
  .table-scroll table td.lead { order:-1; } .table-scroll table td code { font-size:.8rem; }
  .table-scroll table td[data-label]::before { content: attr(data-label) ": "; font-weight:600; color:var(--muted); }
  .table-scroll caption { display:block; }
}
td p { margin:0; } td details { margin:0; }
code { font-family: ui-monospace, monospace; font-size:.9em; overflow-wrap: break-word; }
/* Ids and secrets may break anywhere (they have no words); URLs only where Url put a <wbr>. */
.id code, code.id, code.secret-text { overflow-wrap:anywhere; word-break:break-all; } code.url { overflow-wrap:normal; word-break:normal; }
.id { white-space:normal; } .nowrap { white-space:nowrap; } code.wrap { overflow-wrap:anywhere; }
form.card, .card { background:var(--surface); border:1px solid var(--line); border-radius:8px; padding:1rem; margin:1rem 0; } .card > h2:first-child { margin-top:0; }
label { display:block; font-weight:600; margin:.5rem 0 .25rem; } .hint { font-weight:400; color:var(--muted); font-size:.9rem; }
.check { display:flex; gap:.5rem; align-items:baseline; } .check input { width:auto; }
input[type=text], input[type=email], input[type=password], input[type=number], input[type=datetime-local], input[type=search], input[type=url] { display:block; width:100%; max-width:32rem; padding:.5rem; border:1px solid var(--field); border-radius:4px; font:inherit; background:var(--surface); color:var(--fg); }
select { display:block; max-width:100%; padding:.5rem; border:1px solid var(--field); border-radius:4px; font:inherit; background:var(--surface); color:var(--fg); }
button, .button { display:inline-block; margin-top:.75rem; padding:.5rem 1rem; border-radius:4px; border:1px solid var(--accent); background:var(--accent); color:var(--on-accent); font:inherit; cursor:pointer; text-decoration:none; }
button.secondary, .button.secondary { background:var(--surface); color:var(--accent); } button.danger, .button.danger { background:var(--bad); border-color:var(--bad); color:var(--on-bad); }
.inline { display:inline; } .inline button { margin:0; }
pre.excerpt { white-space:pre-wrap; overflow-wrap:anywhere; max-width:32rem; max-height:9rem; overflow:auto; margin:.25rem 0 0; font-size:.85em; }
.notice { border-left:4px solid var(--ok); background:var(--surface); padding:.75rem 1rem; margin:1rem 0; }
.warning { border-left:4px solid var(--bad); background:var(--surface); padding:.75rem 1rem; margin:1rem 0; }
textarea { display:block; width:100%; max-width:48rem; padding:.5rem; border:1px solid var(--field); border-radius:4px; font:.9rem/1.4 ui-monospace, monospace; background:var(--surface); color:var(--fg); }
textarea[aria-invalid=true] { border:2px solid var(--bad); } select[aria-invalid=true] { border:2px solid var(--bad); }
.field-error { color: var(--bad); font-weight:600; margin:.25rem 0; } input[aria-invalid=true] { border:2px solid var(--bad); }
input.secret { font-size:1rem; max-width:48rem; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
/* Status badges: a word in a pill; the colour repeats what the word says. */
.badge { display:inline-block; padding:0 .55rem; border-radius:999px; font-size:.85rem; font-weight:600; border:1px solid currentColor; white-space:nowrap; background:var(--surface); }
.status-active, .status-delivered, .status-done, .status-healthy { color: var(--ok); } .status-revoked, .status-failed, .status-disabled, .status-expired, .status-stopped, .status-ended, .status-failing { color: var(--bad); }
.status-pending, .status-retrying, .status-in_flight, .status-retry, .status-paused, .status-running, .status-deprecated { color: var(--warn); }
.copy { margin:0 0 0 .35rem; padding:0 .5rem; font-size:.8rem; vertical-align:baseline; }
.sr-only { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
time[title] { text-decoration: underline dotted; text-underline-offset: 2px; }
/* An audit entry's changes run on as "name: value" pairs at every width (one line per field made
   a change of many fields a tall band: 209 px at 1280 px), each pair kept whole where it fits; a
   long value is folded under its size (pages/audit.tsx), so no entry is taller than a few lines. */
table.audit td { font-size:.875rem; line-height:1.35; }
dl.changes { display:inline; margin:0; } dl.changes div { display:inline-block; margin-right:.75rem; max-width:100%; vertical-align:top; }
dl.changes dt, dl.changes dd { display:inline; margin:0; } dl.changes dt { color:var(--muted); } dl.changes dt::after { content:": "; }
dl.changes dd { overflow-wrap:anywhere; } dl.changes details { display:inline; } dl.changes summary { display:inline; cursor:pointer; }
dl.changes details[open] > .long { display:block; max-height:12rem; overflow:auto; }
@media (max-width: 640px) { table.audit td { font-size:.8rem; } }
/* The audit log at wide widths: fixed columns, most of the width for the changes. */
@media (min-width: 641px) { table.audit { table-layout:fixed; } table.audit th:nth-child(1) { width:8rem; } table.audit th:nth-child(2) { width:18%; }
  table.audit th:nth-child(3) { width:22%; } table.audit td { overflow-wrap:anywhere; } }
/* Charts (charts.tsx): inline SVG scaled to the column; each colour is a class. */
.charts { display:grid; gap:1rem; } @media (min-width: 1100px) { .charts { grid-template-columns: 1fr 1fr; } }
figure.chart { margin:0; background:var(--surface); border:1px solid var(--line); border-radius:8px; padding:.75rem; min-width:0; }
figure.chart figcaption { font-weight:600; } figure.chart svg { display:block; width:100%; height:auto; }
.bar-good { fill: var(--ok); background: var(--ok); } .bar-bad { fill: var(--bad); background: var(--bad); }
.bar-hit { fill: transparent; } g.bar { outline:none; } g.bar:hover .bar-hit, g.bar:focus .bar-hit { fill: var(--line); fill-opacity:.5; }
g.bar:focus .bar-hit { stroke: var(--focus); stroke-width:2; }
.axis { stroke:var(--muted); } .axis-label { font-size:11px; fill:var(--muted); }
.chart-readout { min-height:1.5em; margin:.25rem 0 0; color:var(--muted); font-size:.9rem; }
.legend { list-style:none; padding:0; margin:.25rem 0; display:flex; flex-wrap:wrap; gap:1rem; }
.swatch { display:inline-block; width:.8rem; height:.8rem; margin-right:.35rem; vertical-align:middle; }
dl.facts { display:grid; grid-template-columns:max-content minmax(0, 1fr); gap:.25rem 1rem; margin:0 0 1rem; } dl.facts dd { margin:0; min-width:0; }
@media (max-width: 480px) { dl.facts { grid-template-columns:1fr; } dl.facts dd { margin-bottom:.5rem; } }
.stats { display:flex; flex-wrap:wrap; gap:1rem 2rem; margin:.5rem 0; } .stats div { min-width:8rem; } .stats strong { display:block; font-size:1.4rem; }
form.filters { display:flex; flex-wrap:wrap; gap:.5rem 1rem; align-items:flex-end; } form.filters label { margin:0; }
form.filters input, form.filters select { max-width:14rem; } form.filters button { margin:0; }
nav.pager { display:flex; gap:1rem; margin:.5rem 0 1rem; }
pre.payload { background:var(--surface); border:1px solid var(--line); border-radius:8px; padding:.75rem; overflow:auto; max-height:24rem; white-space:pre-wrap; overflow-wrap:anywhere; }
ul.links { padding-left:1.2rem; } ul.links li { margin:.4rem 0; }

/* A form shows only the fields of the choice made (ShownFor): hidden while another is checked. */
${CHOICE_CSS}`;

/**
 * Copy buttons: `data-copy` copies a secret's field, `data-copy-text` an id. They are hidden in
 * the markup and shown here, so without scripts there is no button that does nothing.
 */
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

/** An organization's sections: a navigation landmark naming the organization, the current one marked. */
const Sections: FC<{ org: string; items: Section[] }> = ({ org, items }) => (
  <nav class="sections" aria-label="Organization sections">
    <p>{org}</p>
    <ul>
      {items.map((s) => (
        <li>
          <a href={s.href} aria-current={s.current ? "page" : undefined}>
            {s.label}
          </a>
        </li>
      ))}
    </ul>
  </nav>
);

export const Page: FC<PageProps> = ({ title, nonce, crumbs, sections, now, csrf, who, notice, children }) => (
  <>
    {raw("<!DOCTYPE html>")}
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${title} - keyway manager`}</title>
        {/* Constants, not user input: inserted raw, since JSX would entity-escape their quotes. */}
        <style nonce={nonce} dangerouslySetInnerHTML={{ __html: MANAGER_CSS }} />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header>
          <a class="brand" href="/manager">
            keyway manager
          </a>
          {csrf !== undefined && (
            <form class="inline" method="post" action="/manager/sign-out">
              <span>{who} </span>
              <input type="hidden" name="csrf" value={csrf} />
              <button type="submit" class="secondary">
                Sign out
              </button>
            </form>
          )}
        </header>
        <div class={sections ? "shell" : undefined}>
          {sections && <Sections org={sections.org} items={sections.items} />}
          <main id="main">
            {crumbs && crumbs.length > 0 && (
              <nav class="crumbs" aria-label="Breadcrumb">
                <ol>
                  {crumbs.map((c, i) => (
                    <li>{c.href && i < crumbs.length - 1 ? <a href={c.href}>{c.label}</a> : <span aria-current="page">{c.label}</span>}</li>
                  ))}
                </ol>
              </nav>
            )}
            <h1>{title}</h1>
            {notice && (
              <p class="notice" role="status">
                {notice}
              </p>
            )}
            <Clock.Provider value={now ?? null}>{children}</Clock.Provider>
            <p id="copied" class="sr-only" role="status" aria-live="polite"></p>
          </main>
        </div>
        <script nonce={nonce} dangerouslySetInnerHTML={{ __html: COPY_SCRIPT }} />
      </body>
    </html>
  </>
);

/** A POST form carrying the CSRF token. */
export const PostForm: FC<{ action: string; csrf: string; class?: string; label?: string; children?: Child }> = (props) => (
  <form method="post" action={props.action} class={props.class ?? "card"} aria-label={props.label}>
    <input type="hidden" name="csrf" value={props.csrf} />
    {props.children}
  </form>
);

/**
 * A labelled input. With `error`, the message sits between the label and the input (where the
 * eye goes next), is announced (role=alert) and is the input's description, so a screen reader
 * reads it again on focus; the input is marked invalid and focused, ready to be corrected.
 */
export const Field: FC<{
  id: string;
  label: string;
  hint?: string;
  type?: string;
  required?: boolean;
  value?: string;
  min?: number;
  error?: string;
}> = (p) => {
  const errorId = `${p.id}-error`;
  return (
    <>
      <label for={p.id}>
        {p.label} {p.hint && <span class="hint">({p.hint})</span>}
      </label>
      {p.error && (
        <p id={errorId} class="field-error" role="alert">
          {p.error}
        </p>
      )}
      <input
        id={p.id}
        name={p.id}
        type={p.type ?? "text"}
        required={p.required}
        value={p.value}
        min={p.min}
        aria-invalid={p.error ? "true" : undefined}
        aria-describedby={p.error ? errorId : undefined}
        autofocus={p.error ? true : undefined}
      />
    </>
  );
};

/**
 * A labelled multi-line input (JSON, one value a line), with its error message placed, announced
 * and attached as Field does it. `rows` sets its height; it grows with the page, not beyond it.
 */
export const TextArea: FC<{ id: string; label: string; hint?: string; value?: string; rows?: number; error?: string | undefined }> = (
  p,
) => {
  const errorId = `${p.id}-error`;
  return (
    <>
      <label for={p.id}>
        {p.label} {p.hint && <span class="hint">({p.hint})</span>}
      </label>
      {p.error && (
        <p id={errorId} class="field-error" role="alert">
          {p.error}
        </p>
      )}
      <textarea
        id={p.id}
        name={p.id}
        rows={p.rows ?? 8}
        spellcheck={false}
        aria-invalid={p.error ? "true" : undefined}
        aria-describedby={p.error ? errorId : undefined}
        autofocus={p.error ? true : undefined}
      >
        {p.value ?? ""}
      </textarea>
    </>
  );
};

/** A yes/no setting: posted as "on" when checked, absent when not (so a form that has it always says which). */
export const Checkbox: FC<{ id: string; label: string; hint?: string; checked: boolean }> = (p) => (
  <p class="check">
    <input id={p.id} name={p.id} type="checkbox" checked={p.checked} />
    <label for={p.id}>
      {p.label} {p.hint && <span class="hint">({p.hint})</span>}
    </label>
  </p>
);

/**
 * A table's region: at phone widths its table becomes cards of labelled fields (each cell's
 * data-label, MANAGER_CSS), so nothing scrolls; between phone and desktop widths a table of many
 * columns may scroll sideways inside it while the page keeps the screen's width. It is focusable
 * so keyboard users can scroll it (WCAG 2.1.1), and a named section (a landmark of role region) so
 * screen readers say what they landed in; being a landmark, its label must be unique on its page.
 */
export const TableRegion: FC<{ label: string; children?: Child }> = ({ label, children }) => (
  <section class="table-scroll" aria-label={label} tabindex={0}>
    {children}
  </section>
);

/** A secret shown exactly once, selectable without JavaScript, with a copy button when scripts run. */
export const SecretOnce: FC<{ id: string; label: string; value: string; stored?: "hash" | "sealed" }> = ({ id, label, value, stored }) => (
  <div class="card">
    <p class="warning" role="alert">
      <strong>Copy the {label} now.</strong> It is shown only this once and cannot be retrieved later;{" "}
      {stored === "sealed"
        ? "keyway keeps it encrypted and never shows it again. If it is lost, rotate it again."
        : "keyway stores only a hash of it. If it is lost, revoke it and create a new one."}
    </p>
    <label for={id}>{label}</label>
    <input id={id} class="secret" type="text" readonly value={value} />
    <button type="button" class="secondary" data-copy={id} hidden>
      Copy {label}
    </button>
    <p id="copy-status" role="status" aria-live="polite"></p>
  </div>
);

/** A status as a badge; the word is the information, the colour repeats it. */
export const Status: FC<{ value: string }> = ({ value }) => <span class={`badge status-${value}`}>{value.replace("_", " ")}</span>;

/** An id in monospace with a Copy button (shown when scripts run), e.g. a client_id or a delivery id. */
export const CopyId: FC<{ value: string; label?: string }> = ({ value, label }) => (
  <span class="id">
    <code>{value}</code>
    <button type="button" class="copy secondary" data-copy-text={value} aria-label={`Copy ${label ?? value}`} hidden>
      Copy
    </button>
  </span>
);

/** The one format of an exact time across the app: `2026-03-01 14:30:05 UTC`. */
/** "1 key", "3 keys": a count and its noun, singular for one. */
export const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

export const when = (iso: string | null): string => (iso === null ? "never" : iso.replace("T", " ").replace(/\.\d{3}Z$/, " UTC"));

/**
 * The request's time, given by the layout (Page, PortalPage) to every Time below it, so relative
 * times are counted from one clock passed in (deps.now()), not read again here and there.
 */
export const Clock = createContext<number | null>(null);

const RELATIVE = new Intl.RelativeTimeFormat("en", { numeric: "always" });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 86_400],
  ["month", 30 * 86_400],
  ["day", 86_400],
  ["hour", 3_600],
  ["minute", 60],
];

/** `at` from `now` in words: "3 minutes ago", "in 2 hours", "just now" within 45 seconds. */
export function relative(at: number, now: number): string {
  const seconds = (at - now) / 1000;
  if (Math.abs(seconds) < 45) return "just now";
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size * 0.75 || unit === "minute")
      return RELATIVE.format(Math.round(seconds / size) || Math.sign(seconds), unit);
  }
  return "just now";
}

/**
 * A timestamp: `<time datetime>` whose text is relative to the request's time (Clock), with the
 * exact UTC time (when()) as its title for hover and as hidden text for screen readers. Without a
 * clock (a page rendered outside a layout) the exact time is the text. `never` replaces null.
 */
export const Time: FC<{ at: string | null; never?: string }> = ({ at, never }) => {
  const now = useContext(Clock);
  if (at === null) return <>{never ?? "never"}</>;
  const exact = when(at);
  const ms = Date.parse(at);
  if (now === null || Number.isNaN(ms)) return <time datetime={at}>{exact}</time>;
  return (
    <time datetime={at} title={exact}>
      {relative(ms, now)}
      <span class="sr-only"> ({exact})</span>
    </time>
  );
};

/**
 * A URL in monospace that breaks only where a person would: after `/`, `?`, `&` and `=` (a <wbr>
 * there), never inside the host or the port.
 */
export const Url: FC<{ value: string }> = ({ value }) => (
  <code class="url">{value.split(/(?<=[/?&=])(?!\/)/).map((part, i) => (i === 0 ? part : [raw("<wbr>"), part]))}</code>
);

/**
 * "First page" and "Next page" links of a list paged with the API's cursors (an opaque string
 * from the previous page), so every row can be reached, however long the list. `path` may carry
 * the list's filters as a query string; the links keep them.
 */
export const Pager: FC<{ label: string; path: string; current?: string | undefined; next: string | null }> = ({
  label,
  path,
  current,
  next,
}) =>
  current === undefined && next === null ? null : (
    <nav class="pager" aria-label={`${label} pages`}>
      {current !== undefined && <a href={path}>First page</a>}
      {next !== null && <a href={`${path}${path.includes("?") ? "&" : "?"}cursor=${encodeURIComponent(next)}`}>Next page</a>}
    </nav>
  );

/**
 * Fields that serve only some values of a radio choice (CHOICE_FIELDS): hidden, by MANAGER_CSS,
 * while any other value is checked. The route sends only the chosen value's fields, so what a
 * hidden field still holds is never refused or stored.
 */
export function ShownFor<N extends ChoiceName>(props: {
  choice: N;
  values: readonly (typeof CHOICE_FIELDS)[N][number][];
  children?: Child;
}) {
  const all: readonly string[] = CHOICE_FIELDS[props.choice];
  const shown: readonly string[] = props.values;
  const hidden = all
    .filter((v) => !shown.includes(v))
    .map((v) => `${props.choice}:${v}`)
    .join(" ");
  return (
    <div class="shown-for" data-hidden-when={hidden}>
      {props.children}
    </div>
  );
}
