/**
 * The API Worker's side of the people's Worker: a request for a person's page (people-paths.ts)
 * goes over the PEOPLE service binding as the client sent it (method, URL, headers, body), and its
 * answer comes back as the people's Worker made it. When that Worker cannot be reached (not yet
 * deployed, or failing), the person gets a short 503 page with Retry-After, never a stack trace;
 * the log says why. No API request depends on it (docs/deploy.md, "The companions' contract").
 */
import { describeError, log } from "../log";
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from "../objects/stubs";

export async function forwardToPeople(request: Request, env: Env): Promise<Response> {
  try {
    return await env.PEOPLE.fetch(request);
  } catch (err) {
    log.error("people's Worker unreachable", { path: new URL(request.url).pathname, detail: describeError(err) });
    return new Response(
      `<!doctype html><meta charset="utf-8"><title>Temporarily unavailable</title><p>This page is temporarily unavailable. Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} s.</p>\n`,
      {
        status: 503,
        headers: {
          "Content-Type": "text/html; charset=utf-8",
          "Retry-After": String(UNAVAILABLE_RETRY_AFTER_SECONDS),
          "Cache-Control": "no-store",
          "X-Content-Type-Options": "nosniff",
          "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
        },
      },
    );
  }
}
