/**
 * Tests run inside workerd through @cloudflare/vitest-pool-workers, with the bindings declared
 * in wrangler.toml (real KV; storage isolated per test file). Secrets get fixed test values here
 * so the suite never depends on a developer's .dev.vars.
 */
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export const TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdefghijklmnopqrstuv";
// kid "t1": 32 bytes of 0x01; "t0": 32 bytes of 0x02 (a retired key that still verifies).
const TEST_SIGNING_KEYS = "t1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE,t0:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI";

export default defineConfig({
  plugins: [
    cloudflareTest({
      main: "./src/index.ts",
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          ADMIN_TOKEN: TEST_ADMIN_TOKEN,
          TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS,
        },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
