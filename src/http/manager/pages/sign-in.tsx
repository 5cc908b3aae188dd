/**
 * The manager's sign-in pages and the error page: the form (with its anti-CSRF token and why the
 * last attempt failed), the page of a single-use sign-in link (one button; issue 43) and why a
 * link signed nobody in, and the one message an error shows. Plain data in, markup out (no request, no storage); routes load the
 * data. Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import { Field } from "../views";

/**
 * The sign-in form, also after a failed attempt: then with `error` attached to the token field.
 * The field is always empty: a token, right or wrong, is never written back into the page.
 * `loginCsrf` is the form's half of the anti-CSRF pair: a token the server signed over the nonce
 * in the form's cookie (login-csrf.ts).
 */
export const SignInForm: FC<{ loginCsrf: string; error?: string }> = ({ loginCsrf, error }) => (
  <form method="post" action="/manager/sign-in" class="card" aria-label="Sign in">
    <input type="hidden" name="csrf" value={loginCsrf} />
    <Field
      id="token"
      type="password"
      label="Administrator token"
      hint="the operator's ADMIN_TOKEN, or an organization's administrator token (kw_live_oa_...)"
      required
      error={error}
    />
    <button type="submit">Sign in</button>
  </form>
);

/** Why a sign-in failed, in words that do not tell a guesser which kind of token came close. */
export const SIGN_IN_ERRORS = {
  empty: "Enter an administrator token.",
  rejected: "That administrator token was not accepted: it is wrong, or it was revoked or has expired. Check it and try again.",
  expired: "The sign-in form expired. Enter the administrator token again.",
  /** A form token we did not sign for this browser's cookie (login-csrf.ts), or no cookie at all. */
  unverified:
    "The sign-in form could not be verified. Enter the administrator token again; if this keeps happening, allow cookies for this site.",
} as const;

/**
 * The page a sign-in link opens (GET): one button. Link scanners and previews GET links; only the
 * POST uses the ticket up. `loginCsrf` is as on the sign-in form.
 */
export const SignInLinkForm: FC<{ ticket: string; loginCsrf: string }> = ({ ticket, loginCsrf }) => (
  <form method="post" action="/manager/sign-in/link" class="card" aria-label="Sign in with this link">
    <input type="hidden" name="csrf" value={loginCsrf} />
    <input type="hidden" name="ticket" value={ticket} />
    <p>
      This link signs the operator in to the manager, <strong>once</strong>, within minutes of being made. The session lasts up to 8 hours
      in this browser.
    </p>
    <button type="submit">Sign in</button>
  </form>
);

/** Why a sign-in link signed nobody in, and what to do instead. */
export const SIGN_IN_LINK_REFUSALS = {
  used: "This sign-in link has already been used: a link signs in once. Get a new one (npm start prints one; npm run admin -- manager sign-in-link makes one) or sign in with the operator token.",
  expired:
    "This sign-in link has expired: links work for minutes. Get a new one (npm start prints one; npm run admin -- manager sign-in-link makes one) or sign in with the operator token.",
  unknown:
    "This sign-in link cannot be used: it has already been used, has expired, or is not a sign-in link. Get a new one (npm run admin -- manager sign-in-link) or sign in with the operator token.",
  form: "The page could not be verified (it may be too old, or cookies are blocked). Open the sign-in link again.",
} as const;

/** A refused sign-in link: why, and the way in that always works. */
export const SignInLinkRefused: FC<{ message: string }> = ({ message }) => (
  <>
    <p role="alert">{message}</p>
    <p>
      <a href="/manager/sign-in">Sign in with the operator token</a> (<code>ADMIN_TOKEN</code> in <code>.dev.vars</code> locally)
    </p>
  </>
);

export const ErrorMessage: FC<{ message: string }> = ({ message }) => (
  <>
    <p role="alert">{message}</p>
    <p>
      <a href="/manager">Back to the start</a>
    </p>
  </>
);
