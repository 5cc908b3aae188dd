/**
 * The GraphQL explorer served at /explorer: GraphiQL (the npm package `graphiql`, its UMD build,
 * on React 18's UMD builds) pointed at POST /v1/graphql. It is rendered by the keyway-docs Worker
 * (src/description.ts), like /docs, and its scripts and style sheet are that Worker's static
 * assets (/explorer/assets/*, copied from node_modules by scripts/explorer-assets.mjs): nothing
 * comes from a CDN, and none of it is in the API Worker's bundle. It works under a strict
 * Content-Security-Policy (EXPLORER_CSP): scripts only with this response's nonce, style sheets
 * from this origin or with the nonce, and requests to this origin only. GraphiQL's Headers tab is
 * prefilled with the two credentials every /v1 request needs, as placeholders; they are not
 * stored (`shouldPersistHeaders: false`). Light or dark follows `prefers-color-scheme`, as
 * GraphiQL's own style sheet and /docs do.
 */
import { type Csp, NONCE } from "./middleware/html";

/** Where the copied package files are served (wrangler.docs.toml, `[assets]`). */
export const EXPLORER_ASSETS = "/explorer/assets";

/**
 * Fonts and icons are data: URLs inside graphiql's style sheet. GraphiQL opens its dialogs with a
 * library that adds a <style> element; it takes the page's nonce from `__webpack_nonce__`.
 */
export const EXPLORER_CSP: Csp = {
  defaultSrc: ["'none'"],
  scriptSrc: [NONCE],
  styleSrc: ["'self'", NONCE],
  fontSrc: ["data:"],
  imgSrc: ["data:"],
  connectSrc: ["'self'"],
  baseUri: ["'none'"],
  formAction: ["'none'"],
  frameAncestors: ["'none'"],
};

/** The first query shown: who the credentials speak for (src/graphql/schema.ts, `Viewer`). */
export const EXPLORER_QUERY = `# Fill in Headers (below), then Ctrl-Enter
query Viewer {
  viewer {
    organizationId
    clientId
    token {
      expiresAt
    }
    rateLimit {
      day {
        limit
        remaining
      }
    }
  }
}
`;

/** The Headers tab's template: the API key and an access token (POST /v1/oauth/token). */
export const EXPLORER_HEADERS = `{
  "x-api-key": "<your API key, kw_live_ak_...>",
  "Authorization": "Bearer <an access token, kw_at_...>"
}`;

const CSS = `
html,body{height:100%;margin:0}
body{display:flex;flex-direction:column;font:15px/1.4 system-ui,sans-serif;color:#1b1b1b;background:#fff}
.bar{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:baseline;padding:.5rem 1rem;border-bottom:1px solid #d4d4d8}
.bar h1{font-size:1rem;margin:0}
.bar p{margin:0}
a{color:#1d4ed8}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em}
:focus-visible{outline:3px solid #b45309;outline-offset:2px}
main{flex:1;min-height:0;display:flex}
#explorer{flex:1;min-width:0}
/* GraphiQL's light palette, darkened to WCAG AA contrast on white (its dark palette overrides these). */
.graphiql-container,.CodeMirror-info,.CodeMirror-lint-tooltip,.graphiql-dialog,.graphiql-tooltip,[data-radix-popper-content-wrapper]{
--color-primary:320,95%,38%;--color-secondary:242,51%,50%;--color-tertiary:188,100%,27%;--color-info:208,100%,36%;
--color-success:158,60%,28%;--color-warning:36,100%,29%;--color-error:13,93%,40%;--alpha-secondary:.9;--alpha-tertiary:.75}
/* The documentation explorer's type links: underlined (not told apart by colour alone) and 24 px tall (WCAG 2.5.8). */
.graphiql-doc-explorer a{text-decoration:underline}.graphiql-doc-explorer-type-name{display:inline-block;min-height:24px}
.graphiql-container .CodeMirror-linenumber,.graphiql-container .CodeMirror-lines{color:#52525b}
@media (prefers-color-scheme:dark){body{color:#e4e4e7;background:#18181b}.bar{border-color:#3f3f46}a{color:#93c5fd}
.graphiql-container .CodeMirror-linenumber,.graphiql-container .CodeMirror-lines{color:#a1a1aa}}
`;

/**
 * Starts GraphiQL with a fetcher that sends the Headers tab's values with each request to
 * /v1/graphql. An answer that is not JSON (a proxy's error page) is shown as a GraphQL error
 * rather than as a parse failure; while the Headers tab still holds the template's placeholders,
 * nothing is sent (a sure 401) and the answer says what to fill in. GraphiQL 3's editors (CodeMirror 5) have unnamed text areas and
 * scroll areas the keyboard cannot reach (axe-core: label, scrollable-region-focusable); each
 * editor, as it appears, gets its name and a focusable scroll area.
 */
const script = (nonce: string): string => `
window.__webpack_nonce__=${JSON.stringify(nonce)};
const fetcher=async(params,opts)=>{const headers={"content-type":"application/json",accept:"application/json"};
for(const [k,v] of Object.entries((opts&&opts.headers)||{}))headers[k]=String(v);
if(Object.values(headers).some((v)=>/<[^>]*>/.test(v)))return{errors:[{message:"Put your API key and an access token in the Headers tab (replacing the <...> placeholders), then run the query or re-fetch the schema."}]};
const r=await fetch("/v1/graphql",{method:"POST",headers,body:JSON.stringify(params)}),t=await r.text();
try{return JSON.parse(t)}catch{return{errors:[{message:r.status+" "+r.statusText+": "+t.slice(0,500)}]}}};
const labelOf=(cm)=>{if(cm.closest(".graphiql-query-editor"))return"Query";if(cm.closest(".result-window"))return"Response";
const tool=cm.closest(".graphiql-editor-tool");if(!tool)return"Editor";
return [...tool.querySelectorAll(".CodeMirror")].indexOf(cm)===0?"Variables":"Headers";};
const name=()=>{for(const cm of document.querySelectorAll(".graphiql-container .CodeMirror")){
const label=labelOf(cm),ta=cm.querySelector("textarea"),sc=cm.querySelector(".CodeMirror-scroll");
if(ta&&!ta.hasAttribute("aria-label"))ta.setAttribute("aria-label",label);
if(sc&&sc.tabIndex<0){sc.tabIndex=0;sc.setAttribute("role","region");sc.setAttribute("aria-label",label+" (scroll)");}}};
new MutationObserver(name).observe(document.getElementById("explorer"),{childList:true,subtree:true});
ReactDOM.createRoot(document.getElementById("explorer")).render(React.createElement(GraphiQL,{fetcher,
defaultQuery:${JSON.stringify(EXPLORER_QUERY)},defaultHeaders:${JSON.stringify(EXPLORER_HEADERS)},
defaultEditorToolsVisibility:"headers",isHeadersEditorEnabled:true,shouldPersistHeaders:false}));
`;

/** The explorer page with a given CSP nonce. */
export function renderExplorerPage(nonce: string): string {
  const src = (file: string) => `<script nonce="${nonce}" src="${EXPLORER_ASSETS}/${file}"></script>`;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">` +
    `<title>keyway GraphQL explorer</title><link rel="stylesheet" href="${EXPLORER_ASSETS}/graphiql.min.css">` +
    `<style nonce="${nonce}">${CSS}</style></head><body>` +
    `<header class="bar"><h1>keyway GraphQL explorer</h1>` +
    `<p>Put your API key and an access token in the Headers tab, then run a query or re-fetch the schema; queries go to <code>POST /v1/graphql</code>.</p>` +
    `<p><a href="/docs">API reference</a> · <a href="/">keyway</a></p></header>` +
    `<main><div id="explorer"><noscript>The explorer needs JavaScript; <a href="/docs#tag-graphql">/docs</a> describes the endpoint.</noscript></div></main>` +
    src("react.production.min.js") +
    src("react-dom.production.min.js") +
    src("graphiql.min.js") +
    `<script nonce="${nonce}">${script(nonce)}</script></body></html>`
  );
}
