/**
 * The service's single error type. Domain code throws ApiError; each adapter renders it once for
 * its surface: the REST envelope or the RFC 6749 5.2 body (http/errors.ts), a GraphQL error
 * (graphql/execute.ts), an HTML page (the manager). Codes follow RFC 6749 / RFC 6750 where they
 * fit. An error carries what the caller may see (code, developer message, the input fields at
 * fault) apart from what only the logs may see (`detail`), as workers-oauth-provider's errors do.
 */

export const ERROR_CODES = {
  invalid_request: { status: 400, user: "The request could not be processed. Please check it and try again." },
  invalid_client: { status: 401, user: "The application could not be authenticated." },
  unsupported_grant_type: { status: 400, user: "The request could not be processed. Please check it and try again." },
  invalid_token: { status: 401, user: "You are not signed in, or your session has expired." },
  invalid_api_key: { status: 401, user: "This application is not authorized to use the API." },
  /** RFC 6749 5.2: a scope that does not exist or that the client may not have. */
  invalid_scope: { status: 400, user: "The request could not be processed. Please check it and try again." },
  /** RFC 6750 3.1: the token is valid but lacks the scope this operation needs. */
  insufficient_scope: { status: 403, user: "You are not allowed to do this." },
  /**
   * RFC 9449 7.1: a DPoP proof that is missing, malformed, replayed or for another request (401
   * at a resource; the token endpoint answers it 400, as RFC 6749 5.2 errors are).
   */
  invalid_dpop_proof: { status: 401, user: "You are not signed in, or your session has expired." },
  forbidden: { status: 403, user: "You are not allowed to do this." },
  not_found: { status: 404, user: "The requested resource was not found." },
  method_not_allowed: { status: 405, user: "This operation is not supported." },
  conflict: { status: 409, user: "The request conflicts with the current state of the resource." },
  /** Issue 45: a polling cursor below what retention deleted (a read from it would skip events). */
  cursor_expired: { status: 410, user: "Some events are no longer available. Please start reading again." },
  payload_too_large: { status: 413, user: "The request is too large." },
  /** draft-ietf-httpapi-idempotency-key-header 2.7: a key reused with a different request. */
  idempotency_key_reused: { status: 422, user: "The request could not be processed. Please check it and try again." },
  unsupported_media_type: { status: 415, user: "The request could not be processed. Please check it and try again." },
  rate_limited: { status: 429, user: "Too many requests. Please wait a moment and try again." },
  credits_exhausted: { status: 429, user: "This API key has used up its credits." },
  server_error: { status: 500, user: "Something went wrong on our side. Please try again later." },
  service_unavailable: { status: 503, user: "The service is temporarily unavailable. Please try again later." },
} as const satisfies Record<string, { status: number; user: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * One problem with one field of the input. `path` names the field from the input's root (REST
 * spelling; adapters rename segments for their surface); `text` follows the field's name when
 * rendered (" is required", ": url must use https"); `unknownKeys` reports fields that should
 * not be there. Client values never appear: they may be secrets.
 */
export type InputIssue = { path: string[]; text: string } | { path: string[]; unknownKeys: string[] };

/** Invalid input: where it came from ("request body", "query string") and what is wrong. */
export interface InvalidInput {
  label: string;
  issues: InputIssue[];
}

export interface ApiErrorOptions {
  /** Response headers such as WWW-Authenticate or Retry-After. */
  headers?: Record<string, string>;
  /** For invalid_request on input: the fields at fault, so each surface can name them its way. */
  input?: InvalidInput;
  /** Internal detail for the logs (a setting's name, a stored record's kind); never sent. */
  detail?: string;
  /** Another status than the code's (invalid_dpop_proof at the token endpoint is a 400). */
  status?: number;
  /** Another user message than the code's, where its words would be wrong (a polling token is nobody's sign-in). */
  userMessage?: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly developerMessage: string;
  readonly userMessage: string;
  readonly headers: Record<string, string>;
  readonly input: InvalidInput | undefined;
  readonly detail: string | undefined;

  constructor(code: ErrorCode, developerMessage: string, options: ApiErrorOptions = {}) {
    super(developerMessage);
    this.name = "ApiError";
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.developerMessage = developerMessage;
    this.userMessage = options.userMessage ?? ERROR_CODES[code].user;
    this.headers = options.headers ?? {};
    this.input = options.input;
    this.detail = options.detail;
  }
}

export const notFound = (what: string): ApiError => new ApiError("not_found", `${what} was not found.`);

/** The same error with more response headers (e.g. the RateLimit fields of a counted request). */
export function withHeaders(err: ApiError, headers: Record<string, string>): ApiError {
  const copy = new ApiError(err.code, err.developerMessage, {
    headers: { ...headers, ...err.headers },
    ...(err.status !== ERROR_CODES[err.code].status ? { status: err.status } : {}),
    ...(err.input ? { input: err.input } : {}),
    ...(err.detail !== undefined ? { detail: err.detail } : {}),
    ...(err.userMessage !== ERROR_CODES[err.code].user ? { userMessage: err.userMessage } : {}),
  });
  return copy;
}

/** A 400 for invalid input, its message rendered with REST's field names. */
export function invalidInput(input: InvalidInput): ApiError {
  return new ApiError("invalid_request", describeInput(input), { input });
}

/** `Invalid <label>: <field> <problem>; ...`, naming fields through `rename` (GraphQL: camelCase). */
export function describeInput(input: InvalidInput, rename: (segment: string) => string = (s) => s): string {
  const name = (segment: string) => safeName(rename(segment));
  const parts = input.issues.map((issue) => {
    const where = issue.path.length > 0 ? issue.path.map(name).join(".") : input.label;
    if ("text" in issue) return `${where}${issue.text}`;
    const keys = issue.unknownKeys.slice(0, 3).map(name).join(", ");
    return `unknown field${issue.unknownKeys.length > 1 ? "s" : ""} ${keys} in ${where}`;
  });
  return `Invalid ${input.label}: ${parts.join("; ")}.`;
}

/** Field names come from the client: printable ASCII only, bounded, quoted when unusual. */
function safeName(name: string): string {
  if (/^[A-Za-z0-9_]{1,40}$/.test(name)) return name;
  const printable = name.replace(/[^\x20-\x7e]/g, "?");
  return JSON.stringify(printable.length > 40 ? `${printable.slice(0, 40)}...` : printable);
}
