/** Requires the operator's `Authorization: Bearer <ADMIN_TOKEN>` on /admin/v1. */
import type { MiddlewareHandler } from "hono";
import { authenticateOperator } from "../../auth/admin";
import type { AppEnv } from "../context";

export const requireOperator: MiddlewareHandler<AppEnv> = async (c, next) => {
  await authenticateOperator(c.get("deps"), c.req.header("authorization"));
  c.set("actor", { type: "operator" });
  await next();
};
