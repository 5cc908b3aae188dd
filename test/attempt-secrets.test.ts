/**
 * What one delivery attempt opens of its configuration's sealed values (src/webhooks/attempt-secrets.ts):
 * the real configuration as the organization's object keeps it, opened with the deployment's keys.
 * Each value is opened once per attempt (the same promise every time it is asked for), the
 * credentials of a token request are the client secret and keys as sealed, and an answer's excerpt
 * is checked against the token sent, the client secret and the signing secrets that signed.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { depsFromEnv } from "../src/deps";
import { unwrap, webhookObject } from "../src/objects/stubs";
import { AttemptSecrets } from "../src/webhooks/attempt-secrets";
import { createTenant, issueToken, type Tenant } from "./helpers";
import { createConfig } from "./webhook-helpers";

let t: Tenant;
let token: string;

beforeAll(async () => {
  t = await createTenant();
  token = await issueToken(t);
});

const CLIENT_SECRET = "receiver-secret-0123456789";

async function secretsOf(options: Parameters<typeof createConfig>[3] = {}) {
  const created = await createConfig(t, token, CLIENT_SECRET, options);
  const deps = depsFromEnv(env, Date.now);
  const record = unwrap(await webhookObject(deps, t.orgId).configurationForToken(created.id));
  return { secrets: new AttemptSecrets(deps, record), signingSecret: created.signing_secret as string };
}

describe("an attempt's secrets", () => {
  it("opens each sealed value once, however often the attempt asks for it", async () => {
    const { secrets } = await secretsOf();
    expect(secrets.clientSecret()).toBe(secrets.clientSecret());
    expect(secrets.signingSecrets()).toBe(secrets.signingSecrets());
    expect(secrets.dpopKey()).toBe(secrets.dpopKey());
  });

  it("hands the token request the client secret as sealed, and no keys it does not use", async () => {
    const { secrets } = await secretsOf();
    expect(await secrets.credentials()).toEqual({ clientSecret: CLIENT_SECRET, assertionKey: null, dpopKey: null });
  });

  it("checks an excerpt against the token sent, the client secret and the secret that signed", async () => {
    const { secrets, signingSecret } = await secretsOf();
    expect(await secrets.revealable("the-access-token")).toEqual(["the-access-token", CLIENT_SECRET, signingSecret]);
  });

  it("opens the endpoint's shared token as it sealed it, and no other configuration's", async () => {
    const { secrets } = await secretsOf({ token_cache: true });
    const sealed = await secrets.sealToken("shared-token");
    expect(await secrets.openToken(sealed)).toBe("shared-token");
    const other = (await secretsOf({ token_cache: true })).secrets;
    await expect(other.openToken(sealed)).rejects.toThrow();
  });
});
