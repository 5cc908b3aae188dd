/**
 * The CI workflow a team copies (examples/ci/github-actions.yml, docs/deploy.md "Deploying from
 * CI") stays true to the project: it runs the README's test command, the preflight with its
 * remote checks before any upload, the official wrangler action on the wrangler version that
 * package.json pins, and deploys the three Workers' configurations (all present) companions first.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./server";

const workflow = readFileSync(join(ROOT, "examples/ci/github-actions.yml"), "utf8");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> };

describe("the CI workflow example", () => {
  it("tests with the README's commands, then runs the preflight before the wrangler action deploys", () => {
    expect(workflow).toMatch(/- run: npm ci\n\s+- run: npm test\n/);
    const preflight = workflow.indexOf("node scripts/preflight.mjs --env production");
    const action = workflow.indexOf("uses: cloudflare/wrangler-action@");
    expect(preflight).toBeGreaterThan(0);
    expect(action).toBeGreaterThan(preflight);
    expect(workflow).toContain("needs: test");
  });

  it("pins the wrangler the lockfile installs, and deploys the companions before the API Worker", () => {
    expect(workflow).toContain(`wranglerVersion: "${pkg.devDependencies.wrangler}"`);
    const configs = [...workflow.matchAll(/^\s+deploy -c (\S+) --env production$/gm)].map((m) => m[1] ?? "");
    expect(configs).toEqual(["wrangler.docs.toml", "wrangler.graphql.toml", "wrangler.toml"]);
    for (const config of configs) expect(existsSync(join(ROOT, config)), config).toBe(true);
  });
});
