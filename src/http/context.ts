/** The Hono environment shared by every route and middleware: bindings plus per-request state. */
import type { Principal } from "../auth/tokens";
import type { Deps } from "../deps";
import type { ApiKeyRecord } from "../schemas/records";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    deps: Deps;
    /** Set by middleware/api-key.ts on /v1/*. */
    apiKey: ApiKeyRecord;
    /** Set by middleware/bearer.ts on protected /v1 routes. */
    principal: Principal;
    /** "oauth" renders errors as RFC 6749 5.2 bodies instead of the envelope. */
    errorStyle: "envelope" | "oauth";
  };
}
