/**
 * Which requests are for people: the paths the people's Worker (src/people-worker.ts) serves,
 * GET / and /docs, the GraphQL explorer and its files, the manager and the receiver portal. The
 * API Worker's entry (src/index.ts) sends them on over the PEOPLE service binding before its own
 * router runs; everything else (/v1, /admin/v1, the OAuth metadata, /healthz, and any unknown
 * path, whose 404 is the API's envelope) it answers itself. Kept apart and tiny so that the API
 * Worker's check costs a few string comparisons and imports nothing of the pages.
 */

/** Whole paths, and path prefixes that own everything below them. */
const EXACT = new Set(["/", "/docs", "/explorer", "/manager", "/portal"]);
const PREFIXES = ["/manager/", "/portal/", "/explorer/"];

/** The path of a request URL, without its query (`https://h/a?b` -> `/a`). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  const hash = url.indexOf("#", start);
  const end = Math.min(query < 0 ? url.length : query, hash < 0 ? url.length : hash);
  return url.slice(start, end);
}

export function isPeoplePath(path: string): boolean {
  return EXACT.has(path) || PREFIXES.some((prefix) => path.startsWith(prefix));
}
