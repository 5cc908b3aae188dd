/**
 * The portal app's Hono environment (routes.tsx and the pages that declare their own routes, such
 * as filter.tsx): the API's bindings and variables, the live session and a POST's fields.
 */
import type { PortalSession } from "../../webhooks/portal";
import type { AppEnv } from "../context";

export type PortalEnv = {
  Bindings: AppEnv["Bindings"];
  /** `portal`: the live session (absent on the open pages and once refused); `form`: a POST's fields, read once. */
  Variables: AppEnv["Variables"] & { portal?: PortalSession; form: Record<string, unknown> };
};
