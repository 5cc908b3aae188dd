/**
 * The routes whose views are answered as built, without a parse per request (`prebuilt` in
 * src/http/route.ts; issue 33: the parse was a third of keyway's own CPU on `GET /v1/me`): each
 * answer, in every shape it takes (a Bearer and a DPoP-bound token; a key with and without a
 * shared quota and credits), equals its parse through the route's response schema, so nothing is
 * missing, nothing extra is sent and every type is right. A route that adds a key to its view, or
 * builds one of the wrong type, fails here.
 */
import { describe, expect, it } from "vitest";
import { MeWithUsageView } from "../src/schemas/admin";
import { TokenData } from "../src/schemas/oauth";
import { admin, authed, body, call, createTenant, issueToken, tokenRequest } from "./helpers";

describe("prebuilt views", () => {
  it("POST /v1/oauth answers its view exactly as TokenData parses it", async () => {
    const t = await createTenant({ per_second: 100, per_day: 10_000 });
    const res = await call("/v1/oauth", tokenRequest(t));
    const json = await body(res);
    expect(res.status).toBe(200);
    expect(TokenData.strict().parse(json.data)).toEqual(json.data);
  });

  it("GET /v1/me answers its view exactly as MeWithUsageView parses it, plain and with a quota and credits", async () => {
    const t = await createTenant({ per_second: 100, per_day: 10_000 });
    const token = await issueToken(t);
    const plain = await body(await call("/v1/me", authed(t, token)));
    expect(MeWithUsageView.strict().parse(plain.data)).toEqual(plain.data);
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_day: 5_000 } });
    await admin("PATCH", `/organizations/${t.orgId}/api-keys/${t.apiKeyId}`, {
      credits: { remaining: 50, refill: { amount: 50, interval: "day" } },
    });
    const full = await body<{ usage: { quota: unknown; credits: unknown } }>(await call("/v1/me", authed(t, token)));
    expect(full.data.usage.quota).not.toBeNull();
    expect(full.data.usage.credits).not.toBeNull();
    expect(MeWithUsageView.strict().parse(full.data)).toEqual(full.data);
  });
});
