/**
 * Registers a path's handlers by method and answers every other method with a 405 envelope and
 * an `Allow` header (RFC 9110 15.5.6), which Hono does not do by itself.
 */
import type { Handler, Hono } from "hono";
import { ApiError } from "../errors";
import type { AppEnv } from "./context";

type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

export function methods(app: Hono<AppEnv>, path: string, handlers: Partial<Record<Method, Handler<AppEnv>>>): void {
  const allowed = Object.keys(handlers) as Method[];
  for (const method of allowed) app.on(method, path, handlers[method] as Handler<AppEnv>);
  const allow = allowed.includes("GET") ? [...allowed, "HEAD"] : allowed;
  app.all(path, (c) => {
    throw new ApiError("method_not_allowed", `${c.req.method} is not allowed here; use ${allow.join(", ")}.`, {
      headers: { Allow: allow.join(", ") },
    });
  });
}
