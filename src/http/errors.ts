/**
 * The one place errors become HTTP API responses. ApiError maps to the envelope (or, on the
 * standard token endpoint, to RFC 6749 5.2 `{error, error_description}`); its internal detail,
 * if any, is logged here and never sent. On the /v1 routes that take an access token, Bearer and
 * DPoP challenges get RFC 9728's `resource_metadata` here (http/resource-metadata.ts), the one
 * place that knows both the challenge and the origin. Anything else is our own fault: logged,
 * and answered with a generic 500 that carries no internal detail.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError } from "../errors";
import { describeError, log } from "../log";
import { type AppEnv, keywayOrigin } from "./context";
import { resourceMetadataUrl, withResourceMetadata } from "./resource-metadata";

export function errorResponse(c: Context<AppEnv>, err: unknown): Response {
  const error = err instanceof ApiError ? err : internal(c, err);
  if (error.detail !== undefined) log.error("request failed", { code: error.code, path: c.req.path, detail: error.detail });
  const status = error.status as ContentfulStatusCode;
  const headers: Record<string, string> = { ...error.headers, "Cache-Control": "no-store" };
  // RFC 9728 5.1: the protected resource's challenges say where its metadata is.
  const challenge = headers["WWW-Authenticate"];
  const metadata = challenge !== undefined && c.get("protectedResource") === true ? metadataUrl(c) : null;
  if (challenge !== undefined && metadata !== null) headers["WWW-Authenticate"] = withResourceMetadata(challenge, metadata);
  if (c.get("errorStyle") === "oauth") {
    return c.json({ error: error.code, error_description: error.developerMessage }, status, headers);
  }
  return c.json(
    {
      response_status: error.status,
      developer_message: error.developerMessage,
      user_message: error.userMessage,
      data: null,
      error: error.code,
      _links: { self: { href: c.req.url } },
    },
    status,
    headers,
  );
}

function internal(c: Context<AppEnv>, err: unknown): ApiError {
  // Name and message of our own failures only: request data and secrets never reach this log.
  log.error("unhandled error", { method: c.req.method, path: c.req.path, detail: describeError(err) });
  return new ApiError("server_error", "An internal error occurred. It has been logged.");
}

export function notFoundResponse(c: Context<AppEnv>): Response {
  return errorResponse(c, new ApiError("not_found", `No route for ${c.req.method} ${c.req.path}.`));
}

/**
 * The URL of the protected resource's metadata (RFC 9728 3.1), its identifier being keyway's
 * origin; null with a malformed PUBLIC_BASE_URL, when the challenge goes without it rather than
 * the refusal failing.
 */
function metadataUrl(c: Context<AppEnv>): string | null {
  try {
    return resourceMetadataUrl(keywayOrigin(c));
  } catch (err) {
    if (err instanceof ApiError) return null;
    throw err;
  }
}
