/**
 * The GraphQL explorer served at /explorer: GraphiQL (the npm package `graphiql`, its UMD build,
 * on React 18's UMD builds) pointed at POST /v1/graphql. It is rendered by the people's Worker
 * (src/people-worker.ts), like /docs, and its scripts and style sheet are that Worker's static
 * assets (/explorer/assets/*, copied from node_modules by scripts/explorer-assets.mjs): nothing
 * comes from a CDN, and none of it is in the API Worker's bundle. It works under a strict
 * Content-Security-Policy (EXPLORER_CSP): scripts only with this response's nonce, style sheets
 * from this origin or with the nonce, and requests to this origin only. GraphiQL's Headers tab is
 * prefilled with the two credentials every /v1 request needs, as placeholders; they are not
 * stored (`shouldPersistHeaders: false`). Light or dark follows `prefers-color-scheme`, as
 * GraphiQL's own style sheet and /docs do.
 *
 * Issue 43: the page can also sign in by itself. Opened as
 * `/explorer#api_key=...&client_id=...&client_secret=...` (the link `npm start` prints for its
 * demo client), its script takes the three from the URL fragment, which a browser never sends to
 * a server, removes them from the address bar (history.replaceState), keeps them in this tab's
 * sessionStorage (a reload keeps working; closing the tab or "Forget" ends it), fetches an access
 * token from POST /v1/oauth (same origin, spec 4.1's JSON body) and sends the API key and that
 * token with every query, fetching a new token a minute before the current one expires. Values
 * typed into the Headers tab win over them. Away from loopback (a deployed keyway) the page asks
 * first, naming the client: a link someone else made would otherwise sign a person in as that
 * someone, and what they then create (a webhook configuration with their receiver's secret, say)
 * would land in the link maker's organization, as a login CSRF does.
 */
import { type Csp, NONCE } from "./middleware/html";

/** Where the copied package files are served (wrangler.people.toml, `[assets]`). */
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

/** The Headers tab's template: the API key and an access token (POST /v1/oauth/token); empty when the page signs in itself. */
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
#auth-status:empty{display:none}
#auth-status button{font:inherit;padding:0 .4rem;margin-left:.25rem}
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
 * /v1/graphql; with client credentials from the URL fragment or this tab's sessionStorage (see
 * the top of this file), the API key and a fresh access token fill whatever the tab leaves out
 * (its placeholders included), the token fetched once and renewed a minute before it expires. An answer that is not JSON (a proxy's error page) is shown as a GraphQL error
 * rather than as a parse failure; while the Headers tab still holds the template's placeholders,
 * nothing is sent (a sure 401) and the answer says what to fill in. GraphiQL 3's editors (CodeMirror 5) have unnamed text areas and
 * scroll areas the keyboard cannot reach (axe-core: label, scrollable-region-focusable); each
 * editor, as it appears, gets its name and a focusable scroll area.
 */
const script = (nonce: string): string => `
window.__webpack_nonce__=${JSON.stringify(nonce)};
const STORE=${JSON.stringify(CREDENTIALS_STORE)};
const creds=(()=>{const f=new URLSearchParams(location.hash.slice(1));
if(f.get("api_key")&&f.get("client_id")&&f.get("client_secret")){const c={api_key:f.get("api_key"),client_id:f.get("client_id"),client_secret:f.get("client_secret")};
history.replaceState(null,"",location.pathname+location.search);
if(/^(localhost|127(\\.\\d{1,3}){3}|\\[::1\\])$/.test(location.hostname)||confirm("Sign this explorer in as the client "+c.client_id+" with the API key and secret this link carries? Accept only a link you made yourself: what you run here is done as that client.")){try{sessionStorage.setItem(STORE,JSON.stringify(c))}catch{}return c}}
try{const c=JSON.parse(sessionStorage.getItem(STORE)||"null");if(c&&c.api_key&&c.client_id&&c.client_secret)return c}catch{}return null})();
let token=null,renewal=0;
const renew=async()=>{const r=await fetch("/v1/oauth",{method:"POST",headers:{"content-type":"application/json",accept:"application/json","x-api-key":creds.api_key},
body:JSON.stringify({grant_type:"client_credentials",client_id:creds.client_id,client_secret:creds.client_secret})});
let b=null;try{b=await r.json()}catch{}
if(!r.ok||!b||!b.data||!b.data.access_token){token=null;throw new Error("The access token request (POST /v1/oauth) failed: "+r.status+(b&&b.error?" "+b.error+": "+(b.developer_message||""):""))}
const ttl=Number(b.data.expires_in)||60;token={value:b.data.access_token,until:Date.now()+Math.max(ttl-60,ttl/2)*1000};
clearTimeout(renewal);renewal=setTimeout(()=>{token=null;accessToken().catch(()=>{})},token.until-Date.now());return token.value};
let pending=null;
const accessToken=()=>token&&Date.now()<token.until?Promise.resolve(token.value):(pending||(pending=renew().finally(()=>{pending=null})));
const status=document.getElementById("auth-status");
const help=document.getElementById("explorer-help");
if(creds&&help)help.textContent="Signed in: run a query (Ctrl-Enter), or re-fetch the schema; queries go to POST /v1/graphql. Headers you type win over the sign-in's.";
if(creds&&status){status.textContent="Signed in as client "+creds.client_id+": the API key and an access token (renewed before it expires) go with every query.";
const forget=document.createElement("button");forget.type="button";forget.textContent="Forget";
forget.addEventListener("click",()=>{try{sessionStorage.removeItem(STORE)}catch{}location.reload()});status.append(forget)}
const fetcher=async(params,opts)=>{const headers={"content-type":"application/json",accept:"application/json"};
for(const [k,v] of Object.entries((opts&&opts.headers)||{}))headers[k.toLowerCase()]=String(v);
if(creds){const blank=(k)=>!headers[k]||/<[^>]*>/.test(headers[k]);
if(blank("x-api-key"))headers["x-api-key"]=creds.api_key;
if(blank("authorization")){try{headers.authorization="Bearer "+(await accessToken())}catch(e){return{errors:[{message:e.message}]}}}}
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
defaultQuery:creds?${JSON.stringify(EXPLORER_QUERY)}.replace(/^#.*/,"# Signed in: Ctrl-Enter runs it"):${JSON.stringify(EXPLORER_QUERY)},defaultHeaders:creds?"":${JSON.stringify(EXPLORER_HEADERS)},
defaultEditorToolsVisibility:"headers",isHeadersEditorEnabled:true,shouldPersistHeaders:false}));
`;

/** This tab's copy of the credentials from the URL fragment (sessionStorage key). */
const CREDENTIALS_STORE = "keyway-explorer-credentials";

/** The explorer page with a given CSP nonce. */
export function renderExplorerPage(nonce: string): string {
  const src = (file: string) => `<script nonce="${nonce}" src="${EXPLORER_ASSETS}/${file}"></script>`;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">` +
    `<title>keyway GraphQL explorer</title><link rel="stylesheet" href="${EXPLORER_ASSETS}/graphiql.min.css">` +
    `<style nonce="${nonce}">${CSS}</style></head><body>` +
    `<header class="bar"><h1>keyway GraphQL explorer</h1>` +
    `<p id="explorer-help">Put your API key and an access token in the Headers tab, then run a query or re-fetch the schema; queries go to <code>POST /v1/graphql</code>. The link <code>npm start</code> prints signs in by itself.</p>` +
    `<p id="auth-status" role="status"></p>` +
    `<p><a href="/docs">API reference</a> · <a href="/">keyway</a></p></header>` +
    `<main><div id="explorer"><noscript>The explorer needs JavaScript; <a href="/docs#tag-graphql">/docs</a> describes the endpoint.</noscript></div></main>` +
    src("react.production.min.js") +
    src("react-dom.production.min.js") +
    src("graphiql.min.js") +
    `<script nonce="${nonce}">${script(nonce)}</script></body></html>`
  );
}
