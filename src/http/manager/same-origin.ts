/**
 * A second layer against cross-site request forgery, beside the session's CSRF token that every
 * manager and portal form carries: Hono's csrf middleware (hono/csrf) refuses a form POST whose
 * `Sec-Fetch-Site` is not `same-origin` and whose `Origin` is not this request's origin. A
 * browser sends Origin with every POST (Fetch, "append a request Origin header") and Sec-Fetch-Site
 * with every request it makes, so a form another site submits is refused before its token is even
 * read. A request with neither header is let through to the token check: no current browser
 * sends such a POST, and a client that is not a browser can write whatever Origin it likes, so
 * refusing it would stop scripts and old browsers without stopping an attacker. The refusal is an
 * ApiError (403), which the manager's and the portal's error pages render as every other one.
 */
import type { Context, MiddlewareHandler, Next } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { ApiError } from "../../errors";

/** hono/csrf with its defaults: the request's own origin, or Sec-Fetch-Site: same-origin. */
const guard = csrf();

export const CROSS_SITE_REFUSAL = "The form was sent from another site, so it was not accepted. Open the page here and submit it again.";

export const sameOriginPosts: MiddlewareHandler = async (c: Context, next: Next) => {
  // `Origin: null` is what a browser sends on a same-origin form POST from a page whose
  // Referrer-Policy is no-referrer (ours: middleware/html.ts), so without Sec-Fetch-Site (Safari
  // before 16.4) it tells nothing, as no header does: the session token decides.
  const origin = c.req.header("origin");
  const fetchSite = c.req.header("sec-fetch-site");
  if (fetchSite !== undefined || (origin !== undefined && origin !== "null")) {
    // Run the guard alone (its `next` only records that it passed), so an error from the route
    // below is never mistaken for the guard's refusal.
    let passed = false;
    try {
      await guard(c, async () => {
        passed = true;
      });
    } catch (err) {
      if (!(err instanceof HTTPException)) throw err;
    }
    if (!passed) {
      await drain(c.req.raw);
      throw new ApiError("forbidden", CROSS_SITE_REFUSAL);
    }
  }
  await next();
};

/** As much of a refused form as any accepted one may hold (shared.tsx MAX_FORM_BYTES). */
const DRAIN_BYTES = 256 * 1024;

/**
 * Reads a refused request's body (at most DRAIN_BYTES, then gives up on it) before answering: the
 * API Worker forwards people's requests to this one as a stream, and an answer sent while it is
 * still writing the body makes it log "Can't read from request stream after response has been
 * sent" for every refusal.
 */
async function drain(request: Request): Promise<void> {
  // Already read (the portal reads a form before this check runs): nothing left to drain.
  if (request.bodyUsed || request.body === null) return;
  try {
    const reader = request.body.getReader();
    for (let seen = 0; seen <= DRAIN_BYTES; ) {
      const { done, value } = await reader.read();
      if (done) return;
      seen += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // A body that cannot be read is refused all the same.
  }
}
