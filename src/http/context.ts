/** The Hono environment shared by every route and middleware: bindings plus per-request state. */
import type { Admitted } from "../auth/gate";
import type { Principal } from "../auth/tokens";
import { publicBaseUrl } from "../config";
import type { Deps } from "../deps";
import type { ApiError } from "../errors";
import type { Actor } from "../schemas/audit";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    deps: Deps;
    /** The API key's decision for this request (middleware/credentials.ts, or the token endpoints). */
    admitted: Admitted;
    /** Set by middleware/credentials.ts on /v1 routes that take an access token. */
    principal: Principal;
    /** Who is making changes, for the audit log (operator, administrator, API client). */
    actor: Actor;
    /** "oauth" renders errors as RFC 6749 5.2 bodies instead of the envelope. */
    errorStyle: "envelope" | "oauth";
    /**
     * Set by the router on the /v1 routes that take an access token (the protected resource):
     * http/errors.ts adds the URL of its metadata (RFC 9728 3.1) to their Bearer and DPoP
     * challenges (RFC 9728 5.1), built only when a refusal carries one.
     */
    protectedResource: true;
    /** A body read before admission (route `cost`), or the error reading it raised. */
    preread: Record<string, unknown> | ApiError;
  };
}

/**
 * keyway's public origin for URLs handed to others (a configuration's key set URL, portal links):
 * the configured PUBLIC_BASE_URL, or this request's origin. It is also keyway's OAuth issuer
 * identifier (RFC 8414 3.3) and the /v1 API's resource identifier (RFC 9728 `resource`). `parsed`:
 * the request's URL where the caller has parsed it already.
 */
export const keywayOrigin = (c: { env: Env; req: { url: string } }, parsed?: URL): string =>
  publicBaseUrl(c.env).url ?? (parsed ?? new URL(c.req.url)).origin;
