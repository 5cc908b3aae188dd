/** GET /healthz: unauthenticated liveness probe, and the benchmark's floor. No I/O on purpose. */
import { Hono } from "hono";
import type { AppEnv } from "../context";
import { methods } from "../route";

export const health = new Hono<AppEnv>();

methods(health, "/healthz", { GET: (c) => c.text("ok") });
