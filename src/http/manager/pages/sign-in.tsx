/**
 * The manager's The sign-in page and the error page: the form (with its anti-CSRF token and why the last attempt failed) and the one message an error shows. Plain data in, markup out (no request, no storage); routes load the
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

export const ErrorMessage: FC<{ message: string }> = ({ message }) => (
  <>
    <p role="alert">{message}</p>
    <p>
      <a href="/manager">Back to the start</a>
    </p>
  </>
);
