/**
 * The service's single error type. Domain code throws ApiError; the HTTP layer maps it once
 * (http/errors.ts) to the response envelope, or to the plain RFC 6749 section 5.2 body on the
 * standard token endpoint. Codes follow RFC 6749 / RFC 6750 where they fit.
 */

export const ERROR_CODES = {
  invalid_request: { status: 400, user: "The request could not be processed. Please check it and try again." },
  invalid_client: { status: 401, user: "The application could not be authenticated." },
  unsupported_grant_type: { status: 400, user: "The request could not be processed. Please check it and try again." },
  invalid_token: { status: 401, user: "You are not signed in, or your session has expired." },
  invalid_api_key: { status: 401, user: "This application is not authorized to use the API." },
  forbidden: { status: 403, user: "You are not allowed to do this." },
  not_found: { status: 404, user: "The requested resource was not found." },
  method_not_allowed: { status: 405, user: "This operation is not supported." },
  conflict: { status: 409, user: "The request conflicts with the current state of the resource." },
  payload_too_large: { status: 413, user: "The request is too large." },
  unsupported_media_type: { status: 415, user: "The request could not be processed. Please check it and try again." },
  rate_limited: { status: 429, user: "Too many requests. Please wait a moment and try again." },
  server_error: { status: 500, user: "Something went wrong on our side. Please try again later." },
  service_unavailable: { status: 503, user: "The service is temporarily unavailable. Please try again later." },
} as const satisfies Record<string, { status: number; user: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ApiErrorOptions {
  /** Overrides the code's default status (e.g. 415 vs 400 for invalid_request). */
  status?: number;
  userMessage?: string;
  /** Response headers such as WWW-Authenticate or Retry-After. */
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly developerMessage: string;
  readonly userMessage: string;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, developerMessage: string, options: ApiErrorOptions = {}) {
    super(developerMessage);
    this.name = "ApiError";
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.developerMessage = developerMessage;
    this.userMessage = options.userMessage ?? ERROR_CODES[code].user;
    this.headers = options.headers ?? {};
  }
}

export const notFound = (what: string): ApiError => new ApiError("not_found", `${what} was not found.`);
