/** GET /v1/openapi.json and GET /docs: the API description and its reference page (no auth). */
import { Hono } from "hono";
import type { AppEnv } from "../context";

export const docs = new Hono<AppEnv>();
