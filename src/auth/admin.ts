/**
 * Operator authentication for /admin/v1: `Authorization: Bearer <ADMIN_TOKEN>`, compared in
 * constant time (both sides hashed, so not even the length leaks).
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { constantTimeEqual } from "../lib/crypto";

export async function authenticateOperator(deps: Deps, authorization: string | undefined): Promise<void> {
  const presented = authorization === undefined ? null : /^Bearer +(\S{1,512}) *$/i.exec(authorization)?.[1];
  if (!presented || !(await constantTimeEqual(presented, deps.config.adminToken))) {
    throw new ApiError("invalid_token", "The operator API needs `Authorization: Bearer <ADMIN_TOKEN>`.", {
      headers: { "WWW-Authenticate": 'Bearer realm="keyway-admin"' },
    });
  }
}
