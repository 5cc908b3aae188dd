/**
 * The unit tier alone, for `npm run test:mutation` (stryker.config.mjs): the "unit" project of
 * vitest.config.ts as a single-project config. Stryker's vitest runner starts vitest with every
 * project of the config it is given and adds its setup file to each; the main config's other
 * projects load @cloudflare/vitest-plugin and workerd, which the pure cores under mutation do not
 * need. Keep include, environment and setupFiles in step with the "unit" project there.
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "unit",
    include: ["test/unit/**/*.test.ts"],
    environment: "node",
    setupFiles: ["./test/setup/unit.ts"],
  },
});
