/**
 * The CI workflow a team copies (examples/ci/github-actions.yml, docs/deploy.md "Deploying from
 * CI") stays true to the project: it runs the README's test command, then deploys with the same
 * command as a deploy by hand, `npm run deploy -- --env production` (scripts/deploy.mjs: the
 * preflight with its remote checks before any upload, then the three Workers in its order, the API
 * Worker built, on the wrangler package-lock.json pins), never with wrangler commands of its own.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./server";

const workflow = readFileSync(join(ROOT, "examples/ci/github-actions.yml"), "utf8");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };

describe("the CI workflow example", () => {
  it("tests with the README's commands, then deploys with npm run deploy after npm ci", () => {
    expect(workflow).toMatch(/- run: npm ci\n\s+- run: npm test\n/);
    expect(workflow).toContain("needs: test");
    const deployJob = workflow.slice(workflow.indexOf("\n  deploy:\n"));
    expect(deployJob.length).toBeLessThan(workflow.length);
    expect(deployJob).toMatch(/- run: npm ci\n(?:\s+#[^\n]*\n)*\s+- run: npm run deploy -- --env production\n/);
    expect(deployJob).toMatch(/CLOUDFLARE_API_TOKEN: \$\{\{ secrets\.CLOUDFLARE_API_TOKEN \}\}/);
  });

  it("deploys through scripts/deploy.mjs (preflight, then the three Workers, the API Worker built), with no wrangler commands of its own", () => {
    expect(pkg.scripts.deploy).toBe("node scripts/deploy.mjs");
    expect(existsSync(join(ROOT, "scripts/deploy.mjs"))).toBe(true);
    // The pinned wrangler from npm ci, not another copy, and no list of uploads to drift from deploy.mjs.
    const steps = workflow.split("\n").filter((line) => !/^\s*#/.test(line));
    expect(steps.filter((line) => /wrangler-action|wrangler(?:@\S+)? deploy|\bdeploy -c\b|wrangler\.\w+\.toml/.test(line))).toEqual([]);
    expect(workflow).not.toContain("wrangler.docs.toml");
  });
});
