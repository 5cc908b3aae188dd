/**
 * The interactive API reference served at /docs, rendered on the server from the OpenAPI
 * document (openapi.ts). Self-contained so it works offline and under a strict
 * Content-Security-Policy: no external resources, one inline style and one inline script, both
 * allowed by a nonce that is fresh on every response; everything taken from the document is
 * HTML-escaped.
 */
import { derived } from "../lib/cache";
import {
  ERROR_RESPONSES,
  type JsonSchema,
  type MediaTypeObject,
  type OpenApiDocument,
  type OperationObject,
  type ParameterObject,
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
    `<meta name="viewport" content="width=device-width, initial-scale=1"><title>keyway API reference</title>` +
    `<style nonce="${nonce}">${CSS}</style></head><body>${body}<script nonce="${nonce}">${SCRIPT}</script></body></html>`
  );
}

const AUTH_TEXT: Record<string, string> = {
  apiKey: "<code>x-api-key</code>",
  bearer: "<code>Authorization: Bearer</code> access token",
  admin: "<code>Authorization: Bearer</code> ADMIN_TOKEN",
};

function renderBody(doc: OpenApiDocument): string {
  const byTag = new Map<string, { method: string; path: string; op: OperationObject }[]>(doc.tags.map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) byTag.get(op.tags[0] ?? "")?.push({ method, path, op });
  }
  const toc = doc.tags
    .map(
      (t) =>
        `<li><a href="#${slug(t.name)}">${escapeHtml(t.name)}</a><ul>` +
        (byTag.get(t.name) ?? [])
          .map((o) => `<li><a href="#${escapeHtml(o.op.operationId)}">${o.method.toUpperCase()} ${escapeHtml(o.path)}</a></li>`)
          .join("") +
        "</ul></li>",
    )
    .join("");
  const sections = doc.tags
    .map(
      (t) =>
        `<section aria-labelledby="${slug(t.name)}"><h2 id="${slug(t.name)}">${escapeHtml(t.name)}</h2><p>${prose(t.description)}</p>` +
        (byTag.get(t.name) ?? []).map((o) => renderOperation(doc, o.method, o.path, o.op)).join("") +
        "</section>",
    )
    .join("");
  return (
    `<header><h1>keyway API reference</h1>` +
    doc.info.description
      .split("\n\n")
      .map((p) => `<p>${prose(p)}</p>`)
      .join("") +
    `<p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI ${escapeHtml(doc.openapi)}).</p></header>` +
    `<nav aria-labelledby="toc"><h2 id="toc">Operations</h2><ul>${toc}</ul></nav>` +
    `<main><section aria-labelledby="creds"><h2 id="creds">Credentials for “Try it”</h2>` +
    `<p>Used only by this page's requests, never stored. The page may only call its own origin.</p><div class="grid">` +
    field("kw-base", "Base URL", "url", "") +
    field("kw-key", "API key (x-api-key)", "password", "kw_live_ak_...") +
    field("kw-token", "Access token (Bearer, /v1)", "password", "kw_at_...") +
    field("kw-admin", "Operator token (Bearer, /admin/v1)", "password", "ADMIN_TOKEN") +
    `</div></section>${sections}${renderErrors(doc)}</main>`
  );
}

const isShared = (response: unknown): boolean => typeof response === "object" && response !== null && "$ref" in response;

/** The shared error responses, once, with their codes; operations link here. */
function renderErrors(doc: OpenApiDocument): string {
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
    schemaDetails(doc, "Schema", { $ref: "#/components/schemas/ErrorEnvelope" }) +
    `<dl>${rows}</dl></section>`
  );
}

const field = (id: string, label: string, type: string, placeholder: string): string =>
  `<label for="${id}">${escapeHtml(label)}</label><input id="${id}" type="${type}" placeholder="${escapeHtml(placeholder)}" autocomplete="off" spellcheck="false">`;

const slug = (name: string): string => `tag-${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;

function renderOperation(doc: OpenApiDocument, method: string, path: string, op: OperationObject): string {
  const id = escapeHtml(op.operationId);
  const schemes = op.security.flatMap((req) => Object.keys(req));
  const auth = schemes.length > 0 ? schemes.map((s) => AUTH_TEXT[s] ?? escapeHtml(s)).join(" + ") : "none";
  const params = (op.parameters ?? []).map((p) => resolve<ParameterObject>(doc, p));
  const requestMedia = op.requestBody ? Object.entries(op.requestBody.content) : [];
  const [successStatus, successRef] = Object.entries(op.responses).find(([status]) => status.startsWith("2")) ?? [];
  const success = successRef ? resolve<{ description: string; content?: Record<string, MediaTypeObject> }>(doc, successRef) : undefined;
  const successMedia = success?.content ? Object.values(success.content)[0] : undefined;
  const errors = Object.keys(op.responses).filter((s) => !s.startsWith("2"));

  let html =
    `<article aria-labelledby="${id}"><h3 id="${id}"><span class="m m-${escapeHtml(method)}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>` +
    `<p class="summary">${prose(op.summary)}</p>${op.description ? `<p>${prose(op.description)}</p>` : ""}` +
    `<p><strong>Auth:</strong> ${auth}</p>`;
  if (params.length > 0) {
    html +=
      `<h4>Parameters</h4><ul>` +
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
      `<p>${requestMedia.map(([type]) => `<code>${escapeHtml(type)}</code>`).join(" or ")}</p>` +
      schemaDetails(doc, "Schema", media.schema) +
      exampleDetails(media.example);
  }
  if (success !== undefined && successStatus !== undefined) {
    html += `<h4>Response ${escapeHtml(successStatus)}</h4><p>${prose(success.description)}</p>`;
    if (successMedia !== undefined) {
      const data = envelopeData(successMedia.schema);
      html +=
        (data !== undefined ? schemaDetails(doc, "Schema of data", data) : schemaDetails(doc, "Schema", successMedia.schema)) +
        exampleDetails(successMedia.example);
    }
  }
  if (errors.length > 0) {
    const links = errors.map((s) => (isShared(op.responses[s]) ? `<a href="#error-${escapeHtml(s)}">${escapeHtml(s)}</a>` : escapeHtml(s)));
    html += `<p><strong>Errors:</strong> ${links.join(", ")}</p>`;
  }
  return `${html}${tryIt(method, path, op, params)}</article>`;
}

function tryIt(method: string, path: string, op: OperationObject, params: ParameterObject[]): string {
  const id = escapeHtml(op.operationId);
  const scheme = op.security.flatMap((req) => Object.keys(req)).join(" ");
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
  return (
    `<form class="try" data-method="${method.toUpperCase()}" data-path="${escapeHtml(path)}" data-auth="${escapeHtml(scheme)}">` +
    `<fieldset><legend>Try ${method.toUpperCase()} ${escapeHtml(path)}</legend><div class="grid">${inputs}${textarea}</div>` +
    `<button type="submit">Send</button></fieldset><pre class="out"><output aria-live="polite"></output></pre></form>`
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

function schemaDetails(doc: OpenApiDocument, label: string, schema: JsonSchema): string {
  const name = typeof schema.$ref === "string" ? ` (${escapeHtml(schema.$ref.split("/").pop() ?? "")})` : "";
  return `<details><summary>${label}${name}</summary><pre>${pretty(inline(doc, schema))}</pre></details>`;
}

const exampleDetails = (example: unknown): string =>
  example === undefined ? "" : `<details open><summary>Example</summary><pre>${pretty(example)}</pre></details>`;

const CSS = `
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem;color:#1b1b1b;background:#fff}
code,pre,input,textarea{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.875rem}
pre{background:#f4f4f5;padding:.75rem;overflow:auto;border-radius:4px}
article{border-top:1px solid #d4d4d8;padding:.5rem 0 1rem}
h3{font-size:1.1rem;margin-bottom:.25rem}
.m{display:inline-block;min-width:4.5em;padding:0 .4em;border-radius:3px;color:#fff;font-size:.8rem;text-align:center}
.m-get{background:#1d4ed8}.m-post{background:#15803d}.m-patch{background:#a16207}.m-delete{background:#b91c1c}
.summary{font-weight:600}
.grid{display:grid;grid-template-columns:max-content 1fr;gap:.4rem .75rem;align-items:center;margin:.5rem 0}
input,textarea{width:100%;box-sizing:border-box;padding:.3rem}
fieldset{border:1px solid #d4d4d8;border-radius:4px}
button{padding:.35rem 1rem}
:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
nav ul ul{font-size:.9rem}
`;

/**
 * "Try it": one delegated submit handler. Path parameters are URL-encoded into the path, query
 * parameters appended, credentials sent as the operation's security asks. Kept short on purpose.
 */
const SCRIPT = `
const $=(id)=>document.getElementById(id);$("kw-base").value=location.origin;
document.addEventListener("submit",async(e)=>{const f=e.target;if(!f.matches("form.try"))return;e.preventDefault();
const out=f.querySelector("output"),d=f.dataset,auth=d.auth.split(" "),h={},q=new URLSearchParams();
const path=d.path.replace(/\\{(\\w+)\\}/g,(_,n)=>encodeURIComponent(f.elements["path:"+n].value));
for(const el of f.elements)if(el.name&&el.name.startsWith("query:")&&el.value)q.set(el.name.slice(6),el.value);
if(auth.includes("apiKey")&&$("kw-key").value)h["x-api-key"]=$("kw-key").value;
const bearer=auth.includes("admin")?$("kw-admin").value:auth.includes("bearer")?$("kw-token").value:"";
if(bearer)h.authorization="Bearer "+bearer;
const init={method:d.method,headers:h},b=f.elements.body;
if(b&&b.value.trim()){init.body=b.value;h["content-type"]="application/json";}
out.textContent="Sending...";
try{const r=await fetch($("kw-base").value.replace(/\\/$/,"")+path+(q.size?"?"+q:""),init),t=await r.text();
let s=t;try{s=JSON.stringify(JSON.parse(t),null,2)}catch{}
out.textContent=r.status+" "+r.statusText+"\\n"+[...r.headers].map(([k,v])=>k+": "+v).join("\\n")+"\\n\\n"+s;}
catch(err){out.textContent="Request failed: "+err.message;}});
`;
