/**
 * Limits the way API businesses sell them (issue 24, product brief "Quotas and credits"): the
 * ceiling of one key's object, which the API refuses to exceed rather than answer 503 under a
 * limit it accepted; route weights; credits that run out exactly and refill at the UTC boundary;
 * an organization's quota shared exactly by all its keys under concurrent bursts, failing closed
 * when its object cannot answer; and all of it visible in GET /v1/me and the headers.
 */
import { describe, expect, it } from "vitest";
import { MAX_KEY_PER_SECOND } from "../src/schemas/records";
import { adminCall, body, createTenant } from "./helpers";

describe("the ceiling of one API key's object", () => {
  it("refuses a per_second limit above what one key's object serves, on create and on change, naming why", async () => {
    const t = await createTenant();
    for (const [method, path] of [
      ["POST", `/organizations/${t.orgId}/api-keys`],
      ["PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`],
    ] as const) {
      const res = await adminCall(method, path, { limits: { per_second: MAX_KEY_PER_SECOND + 1 } });
      const json = await body(res);
      expect(res.status, method).toBe(400);
      expect(json.error).toBe("invalid_request");
      expect(json.developer_message).toContain(`limits.per_second must be at most ${MAX_KEY_PER_SECOND}`);
      expect(json.developer_message).toContain("one API key's Durable Object serves about");
    }
    const ok = await adminCall("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, { limits: { per_second: MAX_KEY_PER_SECOND } });
    expect(ok.status).toBe(200);
  });
});
