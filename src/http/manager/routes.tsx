/**
 * The manager app at /manager (spec 2.1, 5.3): sign-in (a token, or the operator's single-use
 * sign-in link) and sign-out, the session and CSRF checks
 * every other page passes, the error page, and the resources' sub-apps mounted with app.route():
 * organizations.tsx, users.tsx, trusted-issuers.tsx, keys.tsx, webhooks.tsx, receivers.tsx (recoveries and portal
 * links), event-types.tsx (the event catalog and webhook settings), audit.tsx (each with its
 * markup in pages/). Whatever removes or stops something (revocations, removing a user, disabling a
 * webhook configuration) and re-sends go through a confirmation page (a GET) that names the
 * thing; only its form POSTs. A failed sign-in answers with the sign-in form again and the reason.
 * Every page gets the security headers of middleware/html.ts (a nonce-based CSP); every POST
 * carries the session's CSRF token (the sign-in form a server-signed one, login-csrf.ts); every
 * cookie is a `__Host-` cookie; an organization administrator's session reaches its own
 * organization only (anything else is a 404, whatever the URL or form says). Actions call the
 * same domain functions as the operator API.
 */
import { Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { resume, SESSION_COOKIE, SESSION_TTL_SECONDS, signIn, signInWithTicket, signOut } from "../../auth/sessions";
import { ApiError } from "../../errors";
import { constantTimeEqual } from "../../lib/crypto";
import { describeError, log } from "../../log";
import { readFields } from "../body";
import { provideDeps } from "../middleware/deps";
import { type Csp, htmlSecurity, NONCE, pageNonce } from "../middleware/html";
import { auditRoutes } from "./audit";
import { eventTypeRoutes, SETTINGS_UPLOAD_BYTES, SETTINGS_UPLOAD_PATH } from "./event-types";
import { keyRoutes } from "./keys";
import { checkLoginCsrf, issueLoginCsrf, LOGIN_CSRF_COOKIE, LOGIN_CSRF_TTL_SECONDS } from "./login-csrf";
import { organizationRoutes } from "./organizations";
import { ErrorMessage, SIGN_IN_ERRORS, SIGN_IN_LINK_REFUSALS, SignInForm, SignInLinkForm, SignInLinkRefused } from "./pages/sign-in";
import { receiverRoutes } from "./receivers";
import { sameOriginPosts } from "./same-origin";
import { type C, form, home, type ManagerEnv, who } from "./shared";
import { trustedIssuerRoutes } from "./trusted-issuers";
import { userRoutes } from "./users";
import { Page } from "./views";
import { webhookRoutes } from "./webhooks";

/**
 * The attributes of every manager cookie. Their names carry the `__Host-` prefix (RFC 6265bis
 * section 4.1.3.2): a browser then stores the cookie only from a secure origin, with Secure,
 * Path=/ and no Domain, so a sibling subdomain or a plain-http man in the middle cannot plant or
 * overwrite it (cookie tossing, the route to login CSRF and session fixation). Path=/ is what the
 * prefix demands; SameSite=Strict keeps the cookies off cross-site requests, HttpOnly away from
 * scripts. Plain-http local runs (npm start on http://127.0.0.1) keep working in Chromium, which
 * treats loopback as a potentially trustworthy origin and so stores Secure and `__Host-` cookies
 * from it (test/e2e/manager.browser.test.ts checks it); a browser that does not needs https.
 */
const COOKIE = { httpOnly: true, secure: true, sameSite: "Strict", path: "/" } as const;
/** Forms post to this origin only; the one style and script carry the response's nonce. */
const MANAGER_CSP: Csp = {
  defaultSrc: ["'none'"],
  styleSrc: [NONCE],
  scriptSrc: [NONCE],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
};

export function managerApp(now: () => number): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();

  // Scoped to /manager: this app is mounted at the root, where "*" would mean every request.
  // sameOriginPosts (hono/csrf) refuses a form another site posts, sign-in included, before any
  // token is read: a second layer beside the session's CSRF token.
  app.use("/manager/*", provideDeps(now) as never, htmlSecurity(MANAGER_CSP), sameOriginPosts);

  app.onError((err, c) => {
    const e = err instanceof ApiError ? err : null;
    if (!e || e.detail !== undefined) log.error("manager error", { path: c.req.path, detail: describeError(err) });
    const status = e?.status ?? 500;
    const message = e ? e.developerMessage : "Something went wrong on our side. It has been logged.";
    const session = c.get("session");
    return c.html(
      <Page
        title={status === 404 ? "Not found" : status === 403 ? "Not allowed" : "That did not work"}
        nonce={pageNonce(c)}
        {...(session ? { csrf: session.csrf, who: who(session) } : {})}
      >
        <ErrorMessage message={message} />
      </Page>,
      status as 400,
    );
  });

  // Sign-in: the operator with ADMIN_TOKEN, an organization's administrator with a minted token.
  app.get("/manager/sign-in", (c) => signInPage(c, 200));

  // Every failure answers with the form again (a fresh double-submit pair, the field empty) and
  // the reason attached to the field, so the next attempt is one step away. A form whose token
  // we did not sign for this browser's cookie (a planted cookie with the same value in the form,
  // a forged or tampered token) is refused before the access token is even looked at.
  app.post("/manager/sign-in", async (c) => {
    const fields = await form(c);
    const deps = c.get("deps");
    const check = await checkLoginCsrf(deps.config.signingKeys, deps.now(), getCookie(c, LOGIN_CSRF_COOKIE), fields.csrf);
    if (check !== "ok") return signInPage(c, 403, check === "expired" ? SIGN_IN_ERRORS.expired : SIGN_IN_ERRORS.unverified);
    const token = typeof fields.token === "string" ? fields.token.trim() : "";
    if (token === "") return signInPage(c, 400, SIGN_IN_ERRORS.empty);
    const opened = await signIn(deps, token);
    // One message for a wrong, revoked or expired token: which one it was would help a guesser.
    if (!opened) return signInPage(c, 401, SIGN_IN_ERRORS.rejected);
    deleteCookie(c, LOGIN_CSRF_COOKIE, COOKIE);
    setCookie(c, SESSION_COOKIE, opened.cookie, { ...COOKIE, maxAge: SESSION_TTL_SECONDS });
    return c.redirect(home(opened.session), 303);
  });

  // A single-use sign-in link (issue 43; POST /admin/v1/manager-sign-in-links, printed by npm
  // start). The GET shows one button, so a link scanner or preview that fetches it uses nothing
  // up; the POST checks the login-CSRF pair (someone else's link submitted from this browser by a
  // forged form), then redeems the ticket once and opens the operator session the token sign-in
  // opens. A second use, an expired or unknown ticket is 410 Gone (RFC 9110 section 15.5.11), as
  // for the receivers' portal links.
  app.get("/manager/sign-in/link", async (c) => {
    const deps = c.get("deps");
    const { nonce, token } = await issueLoginCsrf(deps.config.signingKeys, deps.now());
    setCookie(c, LOGIN_CSRF_COOKIE, nonce, { ...COOKIE, maxAge: LOGIN_CSRF_TTL_SECONDS });
    return c.html(
      <Page title="Sign in to the manager" nonce={pageNonce(c)}>
        <SignInLinkForm ticket={c.req.query("ticket") ?? ""} loginCsrf={token} />
      </Page>,
    );
  });

  app.post("/manager/sign-in/link", async (c) => {
    const fields = await form(c);
    const deps = c.get("deps");
    const refused = (status: 403 | 410, message: string) =>
      c.html(
        <Page title="Not signed in" nonce={pageNonce(c)}>
          <SignInLinkRefused message={message} />
        </Page>,
        status,
      );
    const check = await checkLoginCsrf(deps.config.signingKeys, deps.now(), getCookie(c, LOGIN_CSRF_COOKIE), fields.csrf);
    if (check !== "ok") return refused(403, SIGN_IN_LINK_REFUSALS.form);
    const opened = await signInWithTicket(deps, typeof fields.ticket === "string" ? fields.ticket : "");
    if (!opened.ok) return refused(410, SIGN_IN_LINK_REFUSALS[opened.reason]);
    deleteCookie(c, LOGIN_CSRF_COOKIE, COOKIE);
    setCookie(c, SESSION_COOKIE, opened.cookie, { ...COOKIE, maxAge: SESSION_TTL_SECONDS });
    return c.redirect(home(opened.session), 303);
  });

  // Everything below needs a session; every POST its CSRF token.
  app.use("/manager/*", async (c, next) => {
    // The session lives on the server: a signed-out, revoked or rotated-away session is gone.
    const session = await resume(c.get("deps"), getCookie(c, SESSION_COOKIE));
    if (!session) return c.redirect("/manager/sign-in", 303);
    c.set("session", session);
    if (c.req.method === "POST") {
      // The webhook settings form may carry a logo (multipart): read here with its room, so form(c) finds it.
      if (SETTINGS_UPLOAD_PATH.test(c.req.path)) c.set("form", await readFields(c.req.raw, ["form", "multipart"], SETTINGS_UPLOAD_BYTES));
      const fields = await form(c);
      if (!(await constantTimeEqual(String(fields.csrf ?? ""), session.csrf))) {
        throw new ApiError("forbidden", "The form could not be verified (missing or stale CSRF token). Reload the page and try again.");
      }
    }
    await next();
  });

  app.post("/manager/sign-out", async (c) => {
    await signOut(c.get("deps"), c.get("session"));
    deleteCookie(c, SESSION_COOKIE, COOKIE);
    return c.redirect("/manager/sign-in", 303);
  });

  app.get("/manager", (c) => c.redirect(home(c.get("session")), 303));

  // The resources, each its own sub-app under /manager/organizations.
  app.route("/manager/organizations", organizationRoutes());
  app.route("/manager/organizations", auditRoutes());
  app.route("/manager/organizations", userRoutes());
  app.route("/manager/organizations", trustedIssuerRoutes());
  app.route("/manager/organizations", keyRoutes());
  app.route("/manager/organizations", webhookRoutes());
  app.route("/manager/organizations", receiverRoutes());
  app.route("/manager/organizations", eventTypeRoutes());

  app.all("/manager/*", () => {
    throw new ApiError("not_found", "There is no such page.");
  });
  return app;
}

/** The sign-in page, with a fresh double-submit pair (login-csrf.ts); after a failed attempt, with why. */
async function signInPage(c: C, status: 200 | 400 | 401 | 403, error?: string): Promise<Response> {
  const deps = c.get("deps");
  const { nonce, token } = await issueLoginCsrf(deps.config.signingKeys, deps.now());
  setCookie(c, LOGIN_CSRF_COOKIE, nonce, { ...COOKIE, maxAge: LOGIN_CSRF_TTL_SECONDS });
  return c.html(
    <Page title="Sign in" nonce={pageNonce(c)}>
      <SignInForm loginCsrf={token} error={error} />
    </Page>,
    status,
  );
}
