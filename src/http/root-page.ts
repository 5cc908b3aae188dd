/**
 * What GET / answers (http/routes/service.ts): where everything is, for someone who opened the
 * service's origin in a browser and for a client that asked it for links. The same links both
 * ways, as paths on this origin: relative, so the JSON is one cacheable document whatever Host
 * it was asked under. A browser gets a page (light or dark, following `prefers-color-scheme`,
 * no script); anything that does not prefer HTML gets JSON, keyed by what each link is.
 */
import * as z from "zod";

const Link = z.object({
  href: z.string().describe("A path on this origin."),
  type: z.string().describe("The media type it answers with."),
  title: z.string(),
});

export const ServiceLinks = z.object({
  name: z.literal("keyway"),
  links: z.object({
    docs: Link,
    openapi: Link,
    oauth_metadata: Link,
    manager: Link,
    graphql_explorer: Link,
    graphql: Link,
    health: Link,
  }),
});
export type ServiceLinks = z.infer<typeof ServiceLinks>;

export const SERVICE_LINKS: ServiceLinks = {
  name: "keyway",
  links: {
    docs: { href: "/docs", type: "text/html", title: "API reference, with “Try it” forms" },
    openapi: { href: "/v1/openapi.json", type: "application/json", title: "API description (OpenAPI 3.1)" },
    oauth_metadata: {
      href: "/.well-known/oauth-authorization-server",
      type: "application/json",
      title: "OAuth authorization server metadata (RFC 8414)",
    },
    manager: { href: "/manager", type: "text/html", title: "Manager: organizations, keys, webhooks (operator sign-in)" },
    graphql_explorer: { href: "/explorer", type: "text/html", title: "GraphQL explorer (GraphiQL)" },
    graphql: { href: "/v1/graphql", type: "application/json", title: "GraphQL endpoint (API key and access token)" },
    health: { href: "/healthz", type: "text/plain", title: "Liveness probe" },
  },
};

/**
 * Whether an Accept header prefers HTML: `text/html` listed with a weight above zero and at least
 * that of `application/json` when both are named. Wildcards (`*` / `*`, `text/*`) do not count, so
 * curl, fetch and HTTP libraries, which send `*` / `*` or nothing, get JSON; browsers name text/html.
 */
export function wantsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const weights = new Map<string, number>();
  for (const part of accept.split(",")) {
    const [type = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    weights.set(type, Number.isFinite(weight) ? weight : 0);
  }
  const html = weights.get("text/html") ?? 0;
  return html > 0 && html >= (weights.get("application/json") ?? 0);
}

const CSS = `
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:40rem;padding:1.5rem 1rem;color:#1b1b1b;background:#fff}
a{color:#1d4ed8}code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.875rem}
li{margin:.4rem 0}
:focus-visible{outline:3px solid #b45309;outline-offset:2px}
@media (prefers-color-scheme:dark){body{color:#e4e4e7;background:#18181b}a{color:#93c5fd}}
`;

/** The page, with a CSP nonce on its one inline style. The links are constants above, HTML-safe as written. */
export function rootPage(nonce: string): string {
  const items = Object.values(SERVICE_LINKS.links)
    .map((l) => `<li><a href="${l.href}">${l.title}</a> <code>${l.href}</code></li>`)
    .join("");
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">` +
    `<title>keyway</title><style nonce="${nonce}">${CSS}</style></head><body><main>` +
    `<h1>keyway</h1><p>Access tokens for API clients and signed webhooks, on Cloudflare Workers.</p>` +
    `<ul>${items}</ul>` +
    `<p>Every <code>/v1</code> request needs <code>x-api-key</code>, and an access token from <code>POST /v1/oauth/token</code>. ` +
    `A client that does not ask for HTML gets these links as JSON from this same URL.</p></main></body></html>`
  );
}
