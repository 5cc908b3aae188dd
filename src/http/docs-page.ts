/**
 * The interactive API reference served at /docs, rendered on the server from the OpenAPI
 * document (openapi.ts): a table of contents by tag (plain in-page links, so it works without
 * JavaScript; a sticky sidebar on wide screens, above the content on narrow ones), the security
 * schemes, every operation with a "Try it" form, the webhooks keyway sends, and the shared error
 * responses. Self-contained so it works offline and under a strict Content-Security-Policy: no
 * external resources, one inline style and one inline script, both allowed by a nonce that is
 * fresh on every response, and no inline event handlers; everything taken from the document is
 * HTML-escaped. Light or dark follows the system's `prefers-color-scheme`. Scrollable code blocks are focusable, labelled regions, so keyboard users can
 * scroll them (WCAG 2.1.1; axe-core `scrollable-region-focusable`).
 */
import { derived } from "../lib/cache";
import {
  ERROR_RESPONSES,
  type JsonSchema,
  type OpenApiDocument,
  type OperationObject,
  type ParameterObject,
  type PathItemObject,
  type ResponseObject,
} from "./openapi";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for HTML element content and quoted attribute values alike. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);

/** Escaped text with `code` spans, the only markdown the document's descriptions use. */
const prose = (value: string): string => escapeHtml(value).replace(/`([^`]+)`/g, "<code>$1</code>");

const pretty = (value: unknown): string => escapeHtml(JSON.stringify(value, null, 2));

/** The page's body, rendered once per document (so once per isolate). */
const bodyOf = derived(renderBody);

/** The page for a document; everything but the nonce is rendered once. */
export function renderDocsPage(doc: OpenApiDocument, nonce: string): string {
  const body = bodyOf(doc);
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">` +
    `<title>keyway API reference</title>` +
    `<style nonce="${nonce}">${CSS}</style></head><body>${body}<script nonce="${nonce}">${SCRIPT}</script></body></html>`
  );
}

/** How each security scheme is sent, for the operations' "Auth" line. */
const AUTH_TEXT: Record<string, string> = {
  apiKey: "<code>x-api-key</code>",
  oauth2: "<code>Authorization: Bearer</code> access token",
  admin: "<code>Authorization: Bearer</code> ADMIN_TOKEN",
  receiverToken: "<code>Authorization: Bearer</code> token from the receiver's own token endpoint",
};

/** Which "Credentials" field a Try-it form sends for each scheme. */
const CREDENTIAL_FIELD: Record<string, { id: string; label: string }> = {
  apiKey: { id: "kw-key", label: "API key" },
  oauth2: { id: "kw-token", label: "access token" },
  admin: { id: "kw-admin", label: "operator token" },
};

/** An operation as the page lists it; `webhook` names an entry of the document's `webhooks`. */
interface Listed {
  method: string;
  path: string;
  op: OperationObject;
  webhook?: string;
}

const entries = (item: PathItemObject): [string, OperationObject][] =>
  Object.entries(item).filter((e): e is [string, OperationObject] => e[1] !== undefined);

function renderBody(doc: OpenApiDocument): string {
  const byTag = new Map<string, Listed[]>(doc.tags.map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of entries(item)) byTag.get(op.tags[0] ?? "")?.push({ method, path, op });
  }
  for (const [name, item] of Object.entries(doc.webhooks)) {
    for (const [method, op] of entries(item)) byTag.get(op.tags[0] ?? "")?.push({ method, path: name, op, webhook: name });
  }
  const tags = doc.tags.filter((t) => (byTag.get(t.name) ?? []).length > 0);

  const toc =
    `<li><a href="#creds">Credentials for “Try it”</a></li><li><a href="#auth">Authentication</a></li>` +
    tags
      .map(
        (t) =>
          `<li><a href="#${slug(t.name)}">${escapeHtml(t.name)}</a><ul>` +
          (byTag.get(t.name) ?? [])
            .map(
              (o) =>
                `<li><a href="#${escapeHtml(o.op.operationId)}"><span class="m m-${escapeHtml(o.method)}">${o.method.toUpperCase()}</span> ` +
                `${o.webhook ? escapeHtml(o.op.summary) : `<code>${escapeHtml(o.path)}</code>`}</a></li>`,
            )
            .join("") +
          "</ul></li>",
      )
      .join("") +
    `<li><a href="#errors">Errors</a></li>`;
  const back = `<p class="back"><a href="#contents">Back to contents</a></p>`;
  const sections = tags
    .map(
      (t) =>
        `<section aria-labelledby="${slug(t.name)}"><h2 id="${slug(t.name)}">${escapeHtml(t.name)}</h2><p>${prose(t.description)}</p>` +
        (byTag.get(t.name) ?? []).map((o) => renderOperation(doc, o)).join("") +
        `${back}</section>`,
    )
    .join("");
  const license = doc.info.license;
  return (
    `<a class="skip" href="#main">Skip to the reference</a>` +
    `<header><h1>keyway API reference</h1>` +
    doc.info.description
      .split("\n\n")
      .map((p) => `<p>${prose(p)}</p>`)
      .join("") +
    `<p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI ${escapeHtml(doc.openapi)}). ` +
    `License: ${escapeHtml(license.name)} (<code>${escapeHtml(license.identifier)}</code>).</p>` +
    `<p>GraphQL: write and run queries in the <a href="/explorer">GraphQL explorer</a>. Everything else: <a href="/">the service's links</a>.</p></header>` +
    `<div class="layout"><nav id="contents" aria-labelledby="contents-title"><h2 id="contents-title">Contents</h2><ul>${toc}</ul></nav>` +
    `<main id="main"><section aria-labelledby="creds"><h2 id="creds">Credentials for “Try it”</h2>` +
    `<p>Used only by this page's requests, never stored. The page may only call its own origin. ` +
    `An access token (or API key) a “Try it” answer returns is copied here, so the next request sends it.</p><div class="grid">` +
    field("kw-base", "Base URL", "url", "") +
    field("kw-key", "API key (x-api-key)", "password", "kw_live_ak_...") +
    field("kw-token", "Access token (Bearer, /v1)", "password", "kw_at_...") +
    field("kw-admin", "Operator token (Bearer, /admin/v1)", "password", "ADMIN_TOKEN") +
    `</div>${back}</section>${renderAuthentication(doc, back)}${sections}${renderErrors(doc, back)}</main></div>`
  );
}

/** The security schemes: what each credential is and, for OAuth 2.0, where it comes from. */
function renderAuthentication(doc: OpenApiDocument, back: string): string {
  const rows = Object.entries(doc.components.securitySchemes)
    .map(([name, scheme]) => {
      const how =
        scheme.type === "apiKey"
          ? `API key in the <code>${escapeHtml(scheme.name)}</code> header`
          : scheme.type === "http"
            ? `HTTP <code>${escapeHtml(scheme.scheme)}</code>`
            : `OAuth 2.0 client credentials; token URL <code>${escapeHtml(scheme.flows.clientCredentials.tokenUrl)}</code>`;
      return `<dt><code>${escapeHtml(name)}</code>: ${how}</dt><dd>${prose(scheme.description)}</dd>`;
    })
    .join("");
  return (
    `<section aria-labelledby="auth"><h2 id="auth">Authentication</h2>` +
    `<p>The security schemes of the document. A <code>/v1</code> operation needs the API key and an access token together.</p>` +
    `<dl>${rows}</dl>${back}</section>`
  );
}

const isShared = (response: unknown): boolean => typeof response === "object" && response !== null && "$ref" in response;

/** The shared error responses, once, with their codes; operations link here. */
function renderErrors(doc: OpenApiDocument, back: string): string {
  const rows = Object.entries(ERROR_RESPONSES)
    .map(([status, name]) => {
      const response = doc.components.responses[name];
      if (response === undefined) return "";
      return `<dt id="error-${status}">${status} ${escapeHtml(name)}</dt><dd>${prose(response.description)}</dd>`;
    })
    .join("");
  return (
    `<section aria-labelledby="errors"><h2 id="errors">Errors</h2>` +
    `<p>Errors use the envelope with <code>data: null</code> and an <code>error</code> code, except on <code>/v1/oauth/token</code> ` +
    `(RFC 6749 <code>{error, error_description}</code>) and GraphQL request errors (GraphQL <code>errors</code>).</p>` +
    schemaDetails(doc, "Schema", "Error envelope schema", { $ref: "#/components/schemas/ErrorEnvelope" }) +
    `<dl>${rows}</dl>${back}</section>`
  );
}

const field = (id: string, label: string, type: string, placeholder: string): string =>
  `<label for="${id}">${escapeHtml(label)}</label><input id="${id}" type="${type}" placeholder="${escapeHtml(placeholder)}" autocomplete="off" spellcheck="false">`;

const slug = (name: string): string => `tag-${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;

function renderOperation(doc: OpenApiDocument, listed: Listed): string {
  const { method, path, op, webhook } = listed;
  const id = escapeHtml(op.operationId);
  const schemes = op.security.flatMap((req) => Object.keys(req));
  const auth = schemes.length > 0 ? schemes.map((s) => AUTH_TEXT[s] ?? escapeHtml(s)).join(" + ") : "none";
  const params = (op.parameters ?? []).map((p) => resolve<ParameterObject>(doc, p));
  const requestMedia = op.requestBody ? Object.entries(op.requestBody.content) : [];
  const [successStatus, successRef] = Object.entries(op.responses).find(([status]) => status.startsWith("2")) ?? [];
  const success = successRef ? resolve<ResponseObject>(doc, successRef) : undefined;
  const successMedia = success?.content ? Object.values(success.content)[0] : undefined;
  const errors = Object.keys(op.responses).filter((s) => !s.startsWith("2"));
  const target =
    webhook === undefined
      ? `<code>${escapeHtml(path)}</code>`
      : `${prose(op.summary)} <small>(webhook <code>${escapeHtml(webhook)}</code>)</small>`;

  let html =
    `<article aria-labelledby="${id}"><h3 id="${id}"><span class="m m-${escapeHtml(method)}">${method.toUpperCase()}</span> ${target}</h3>` +
    (webhook === undefined ? `<p class="summary">${prose(op.summary)}</p>` : "") +
    `${op.description ? `<p>${prose(op.description)}</p>` : ""}<p><strong>Auth:</strong> ${auth}</p>`;
  if (params.length > 0) {
    html +=
      `<h4>${webhook === undefined ? "Parameters" : "Headers"}</h4><ul>` +
      params
        .map((p) => `<li><code>${escapeHtml(p.name)}</code> (${p.in}${p.required ? ", required" : ""}): ${prose(p.description)}</li>`)
        .join("") +
      "</ul>";
  }
  const [firstMedia] = requestMedia;
  if (firstMedia !== undefined) {
    const [, media] = firstMedia;
    html +=
      `<h4>Request body${op.requestBody?.required ? "" : " (optional)"}</h4>` +
      `<p>${requestMedia.map(([type]) => `<code>${escapeHtml(type)}</code>`).join(" or ")}` +
      `${op.requestBody?.description ? ` ${prose(op.requestBody.description)}` : ""}</p>` +
      schemaDetails(doc, "Schema", `${op.operationId}: request body schema`, media.schema) +
      exampleDetails(`${op.operationId}: request body example`, media.example);
  }
  if (success !== undefined && successStatus !== undefined) {
    html += `<h4>Response ${escapeHtml(successStatus)}</h4><p>${prose(success.description)}</p>`;
    if (successMedia !== undefined) {
      const data = envelopeData(successMedia.schema);
      html +=
        (data !== undefined
          ? schemaDetails(doc, "Schema of data", `${op.operationId}: response data schema`, data)
          : schemaDetails(doc, "Schema", `${op.operationId}: response schema`, successMedia.schema)) +
        exampleDetails(`${op.operationId}: response example`, successMedia.example);
    }
  }
  if (webhook !== undefined) {
    // A webhook's other answers are what keyway does with them, so each is spelt out.
    const rows = errors.map((s) => `<dt>${escapeHtml(s)}</dt><dd>${prose(resolve<ResponseObject>(doc, op.responses[s]).description)}</dd>`);
    return `${html}<h4>Other answers</h4><dl>${rows.join("")}</dl></article>`;
  }
  if (errors.length > 0) {
    const links = errors.map((s) => (isShared(op.responses[s]) ? `<a href="#error-${escapeHtml(s)}">${escapeHtml(s)}</a>` : escapeHtml(s)));
    html += `<p><strong>Errors:</strong> ${links.join(", ")}</p>`;
  }
  return `${html}${tryIt(method, path, op, params, schemes)}</article>`;
}

function tryIt(method: string, path: string, op: OperationObject, params: ParameterObject[], schemes: string[]): string {
  const id = escapeHtml(op.operationId);
  const inputs = params
    .map((p) => {
      const inputId = `${id}-${p.in}-${escapeHtml(p.name)}`;
      // Path examples are made-up ids, so they only hint; a query example is worth sending as is.
      const example = typeof p.example === "string" ? escapeHtml(p.example) : "";
      const preset = p.in === "path" ? `placeholder="${example}"` : `value="${example}"`;
      return (
        `<label for="${inputId}">${escapeHtml(p.name)} (${p.in})</label>` +
        `<input id="${inputId}" name="${p.in}:${escapeHtml(p.name)}" ${preset}${p.required ? " required" : ""} spellcheck="false">`
      );
    })
    .join("");
  const media = op.requestBody ? Object.values(op.requestBody.content)[0] : undefined;
  const textarea =
    media !== undefined
      ? `<label for="${id}-body">Body (JSON)</label><textarea id="${id}-body" name="body" rows="6" spellcheck="false">` +
        `${media.example === undefined ? "" : pretty(media.example)}</textarea>`
      : "";
  const sends = schemes
    .map((s) => CREDENTIAL_FIELD[s])
    .filter((f) => f !== undefined)
    .map((f) => `the <a href="#${f.id}">${f.label}</a>`);
  return (
    `<form class="try" data-method="${method.toUpperCase()}" data-path="${escapeHtml(path)}" data-auth="${escapeHtml(schemes.join(" "))}">` +
    `<fieldset><legend>Try ${method.toUpperCase()} ${escapeHtml(path)}</legend>` +
    `<p>Sends ${sends.length > 0 ? `${sends.join(" and ")} from Credentials` : "no credentials"}.</p>` +
    `${inputs || textarea ? `<div class="grid">${inputs}${textarea}</div>` : ""}` +
    `<button type="submit">Send</button></fieldset>` +
    `<p class="status" role="status"></p>` +
    `<pre class="out" tabindex="0" role="region" aria-label="${id}: Try it response" hidden></pre></form>`
  );
}

/** A `$ref` within the document, resolved; anything else as it is. */
function resolve<T>(doc: OpenApiDocument, value: unknown): T {
  const ref = typeof value === "object" && value !== null && "$ref" in value ? value.$ref : undefined;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return value as T;
  let node: unknown = doc;
  for (const key of ref.slice(2).split("/"))
    node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[key] : undefined;
  return (node ?? value) as T;
}

/** The schema with component references inlined, for reading without jumping around. */
function inline(doc: OpenApiDocument, value: unknown, depth = 0): unknown {
  if (Array.isArray(value)) return value.map((v) => inline(doc, v, depth));
  if (typeof value !== "object" || value === null) return value;
  // The schemas have no cycles today; the bound only guards against one appearing.
  if ("$ref" in value && depth < 6) return inline(doc, resolve(doc, value), depth + 1);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inline(doc, v, depth)]));
}

/** `data` of an `allOf: [Envelope, {properties: {data}}]` response, which is what differs per operation. */
function envelopeData(schema: JsonSchema): JsonSchema | undefined {
  const [envelope, rest] = schema.allOf ?? [];
  if (envelope?.$ref !== "#/components/schemas/Envelope") return undefined;
  const data = rest?.properties?.data;
  return typeof data === "object" ? data : undefined;
}

/**
 * A code block that may scroll sideways: focusable so the keyboard can scroll it, and a region
 * named by `name` (unique on the page) so that what receives focus is announced.
 */
const codeBlock = (name: string, text: string): string => `<pre tabindex="0" role="region" aria-label="${escapeHtml(name)}">${text}</pre>`;

function schemaDetails(doc: OpenApiDocument, label: string, name: string, schema: JsonSchema): string {
  const component = typeof schema.$ref === "string" ? ` (${escapeHtml(schema.$ref.split("/").pop() ?? "")})` : "";
  return `<details><summary>${label}${component}</summary>${codeBlock(name, pretty(inline(doc, schema)))}</details>`;
}

const exampleDetails = (name: string, example: unknown): string =>
  example === undefined ? "" : `<details open><summary>Example</summary>${codeBlock(name, pretty(example))}</details>`;

/*
 * Narrow screens (down to 390 px and below) get one column: the contents above the reference,
 * labels above their fields, long paths and tokens broken anywhere, and code blocks that scroll
 * inside themselves. From 64rem the contents become a sticky sidebar.
 */
const CSS = `
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:84rem;padding:1rem;color:#1b1b1b;background:#fff}
code,pre,input,textarea{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.875rem}
code,a,h3,dt,dd,legend,.status{overflow-wrap:anywhere}
pre{background:#f4f4f5;padding:.75rem;overflow:auto;border-radius:4px;max-width:100%;box-sizing:border-box}
article{border-top:1px solid #d4d4d8;padding:.5rem 0 1rem}
h3{font-size:1.1rem;margin-bottom:.25rem}
[id]{scroll-margin-top:.5rem}
.m{display:inline-block;min-width:4.5em;padding:0 .4em;border-radius:3px;color:#fff;font-size:.8rem;text-align:center;font-family:system-ui,sans-serif}
.m-get{background:#1d4ed8}.m-post{background:#15803d}.m-patch{background:#a16207}.m-delete{background:#b91c1c}
.summary{font-weight:600}
.grid{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.4rem .75rem;align-items:center;margin:.5rem 0}
input,textarea{width:100%;box-sizing:border-box;padding:.3rem}
fieldset{border:1px solid #d4d4d8;border-radius:4px;min-width:0}
button{padding:.35rem 1rem}
:focus-visible{outline:3px solid #b45309;outline-offset:2px}
.skip{position:absolute;left:-999rem}.skip:focus{position:static}
nav ul{padding-left:1.25rem}nav ul ul{font-size:.9rem;padding-left:.5rem;list-style:none}
nav li{margin:.15rem 0}nav .m{min-width:3.8em;font-size:.7rem}
.back{font-size:.9rem}
main{min-width:0}
a{color:#1d4ed8}
/* Dark when the system is (the meta color-scheme darkens form controls and scrollbars to match). */
@media (prefers-color-scheme:dark){body{color:#e4e4e7;background:#18181b}pre{background:#27272a}
article,fieldset{border-color:#3f3f46}a{color:#93c5fd}:focus-visible{outline-color:#fbbf24}}
@media (max-width:40rem){.grid{grid-template-columns:minmax(0,1fr)}body{padding:.75rem}}
@media (min-width:64rem){.layout{display:grid;grid-template-columns:20rem minmax(0,1fr);gap:2rem;align-items:start}
nav{position:sticky;top:0;max-height:100vh;overflow-y:auto;box-sizing:border-box;padding:.5rem 0}}
`;

/**
 * "Try it": one delegated submit handler, no inline handlers (CSP). Path parameters are
 * URL-encoded into the path, query parameters appended, credentials sent as the operation's
 * security asks. What a successful answer issues is carried into Credentials (an access token,
 * from either token endpoint, envelope or plain RFC 6749 body; a new API key) and a new client
 * credential into the token requests' bodies, so the next operation can be tried at once.
 */
const SCRIPT = `
const $=(id)=>document.getElementById(id);$("kw-base").value=location.origin;
const carry=(j)=>{const d=j&&typeof j.data==="object"&&j.data?j.data:j,said=[];if(!d||typeof d!=="object")return said;
if(typeof d.access_token==="string"&&d.access_token){$("kw-token").value=d.access_token;said.push("access token");}
if(typeof d.api_key==="string"&&d.api_key){$("kw-key").value=d.api_key;said.push("API key");}
if(typeof d.client_id==="string"&&typeof d.client_secret==="string"){for(const t of document.querySelectorAll('form.try[data-auth="apiKey"] textarea')){
try{const b=JSON.parse(t.value);b.client_id=d.client_id;b.client_secret=d.client_secret;t.value=JSON.stringify(b,null,2);said.push("client credentials (into the token requests' bodies)");}catch{}}}
return said;};
document.addEventListener("submit",async(e)=>{const f=e.target;if(!f.matches("form.try"))return;e.preventDefault();
const out=f.querySelector("pre.out"),status=f.querySelector(".status"),d=f.dataset,auth=d.auth.split(" "),h={},q=new URLSearchParams();
const path=d.path.replace(/\\{(\\w+)\\}/g,(_,n)=>encodeURIComponent(f.elements["path:"+n].value));
for(const el of f.elements)if(el.name&&el.name.startsWith("query:")&&el.value)q.set(el.name.slice(6),el.value);
if(auth.includes("apiKey")&&$("kw-key").value)h["x-api-key"]=$("kw-key").value;
const bearer=auth.includes("admin")?$("kw-admin").value:auth.includes("oauth2")?$("kw-token").value:"";
if(bearer)h.authorization="Bearer "+bearer;
const init={method:d.method,headers:h},b=f.elements.body;
if(b&&b.value.trim()){init.body=b.value;h["content-type"]="application/json";}
status.textContent="Sending...";
try{const r=await fetch($("kw-base").value.replace(/\\/$/,"")+path+(q.size?"?"+q:""),init),t=await r.text();
let s=t,j;try{j=JSON.parse(t);s=JSON.stringify(j,null,2)}catch{}
const said=r.ok?[...new Set(carry(j))]:[];
out.textContent=r.status+" "+r.statusText+"\\n"+[...r.headers].map(([k,v])=>k+": "+v).join("\\n")+"\\n\\n"+s;out.hidden=false;
status.textContent=r.status+" "+r.statusText+(said.length?". Carried forward: "+said.join(", ")+".":"");}
catch(err){out.hidden=true;status.textContent="Request failed: "+err.message;}});
`;
