/**
 * The platform the project promises (README, "Requirements"): npm scripts run on a maintained
 * Node LTS brought in by `npm ci` even where the machine's own Node is older, wrangler is the
 * pinned version, and the deployed configuration keeps the settings the service's safety rests
 * on (strictly public egress, a recent compatibility date, the retry schedule and dead letters),
 * and the bench's design floor runs on the same compatibility date and flags.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");

/** The value of a top-level `key = ...` line of wrangler.toml. */
const setting = (key: string) => new RegExp(`^${key} = (.+)$`, "m").exec(toml)?.[1];

describe("toolchain", () => {
  it("runs npm scripts on Node 22 or later (the node devDependency, whatever the machine has)", () => {
    expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(22);
    expect(process.versions.node).toBe(pkg.devDependencies.node);
  });

  it("runs the pinned wrangler", () => {
    const version = execFileSync(process.execPath, [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "--version"], {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true" },
      encoding: "utf8",
    });
    expect(version.trim()).toContain(pkg.devDependencies.wrangler);
    // A 4.15x release: 4.155.0 is the newest whose lockfile `npm ci` installs from this project's registry (README).
    expect(pkg.devDependencies.wrangler).toMatch(/^4\.15\d\.\d+$/);
  });

  it("keeps src/worker-configuration.d.ts (the Env type) as `wrangler types` generates it from wrangler.toml", () => {
    const run = spawnSync("npm", ["run", "--silent", "types:check"], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true" },
      encoding: "utf8",
    });
    expect(run.status, `${run.stdout}${run.stderr}\nrun \`npm run types\` and commit the result`).toBe(0);
  }, 60_000);
});

describe("wrangler.toml", () => {
  it("confines outbound fetches to the public internet", () => {
    expect(setting("compatibility_flags")).toContain('"global_fetch_strictly_public"');
  });

  it("has a compatibility date of 2026-09-01 or later", () => {
    expect(setting("compatibility_date")?.replaceAll('"', "") >= "2026-09-01").toBe(true);
  });

  it("gives the deployed Worker a retry schedule, a recovery bound and a dead-letter queue", () => {
    expect(setting("WEBHOOK_RETRY_SCHEDULE")).toBe('"5s,5m,30m,2h,5h,10h,10h"');
    expect(setting("WEBHOOK_REDISPATCH_SECONDS")).toBe('"120"');
    expect(/queue = "keyway-webhooks"\n[^[]*?dead_letter_queue = "keyway-webhooks-dlq"/.test(toml)).toBe(true);
  });

  it("keeps the bench's design-floor Worker on keyway's compatibility date and flags", () => {
    const floor = readFileSync(join(ROOT, "bench/floor/wrangler.toml"), "utf8");
    for (const key of ["compatibility_date", "compatibility_flags"]) {
      expect(new RegExp(`^${key} = (.+)$`, "m").exec(floor)?.[1]).toBe(setting(key));
    }
  });

  it("never allows insecure webhook targets in the deployed configuration", () => {
    expect(setting("WEBHOOK_ALLOW_INSECURE_TARGETS")).toBe('"false"');
  });
});

describe("license", () => {
  it("is the same in LICENSE, package.json and the OpenAPI document's info.license", () => {
    const { license } = pkg as { license?: string };
    expect(license).toBe("MIT");
    expect(readFileSync(join(ROOT, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
    expect(readFileSync(join(ROOT, "src/http/openapi.ts"), "utf8")).toContain(`identifier: "${license}"`);
  });
});
