/**
 * The platform the project promises (README, "Requirements"): npm scripts run on a maintained
 * Node LTS brought in by `npm ci` even where the machine's own Node is older, wrangler is the
 * pinned version, and the deployed configuration keeps the settings the service's safety rests
 * on (strictly public egress, a recent compatibility date, the retry schedule and dead letters),
 * and the bench's design floor runs on the same compatibility date and flags. The README's account of
 * the EBADENGINE warnings `npm ci` prints under Node 20 counts the packages the lockfile holds.
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

/**
 * Whether a version satisfies an npm engines range, for the comparators lockfiles' engines use
 * (`>=`, `>`, `<`, `<=`, `^`, `~`, `=`, bare and `x` versions, `||`); anything else counts as allowed.
 */
function allows(range: string, version: [number, number, number]): boolean {
  const cmp = (a: number[], b: number[]) => (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0) || (a[2] ?? 0) - (b[2] ?? 0);
  const one = (comparator: string): boolean => {
    const m = /^(>=|<=|>|<|\^|~|=)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/.exec(comparator);
    if (m === null) return true;
    const parts = [m[2], m[3], m[4]].map((p) => (p === undefined || p === "x" || p === "*" ? 0 : Number(p)));
    const c = cmp(version, parts);
    switch (m[1]) {
      case ">=":
        return c >= 0;
      case ">":
        return c > 0;
      case "<=":
        return c <= 0;
      case "<":
        return c < 0;
      case "^":
        return c >= 0 && version[0] === parts[0];
      case "~":
        return c >= 0 && version[0] === parts[0] && version[1] === parts[1];
      default:
        return m[3] === undefined || m[3] === "x" ? version[0] === parts[0] : c === 0;
    }
  };
  return range.split("||").some((alternative) =>
    alternative
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, "$1")
      .split(/\s+/)
      .every(one),
  );
}

/** Words for the counts the README spells out (larger ones it writes in digits). */
const WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

describe("toolchain", () => {
  it("names, in the README, how many packages npm warns about under Node 20 (EBADENGINE) and why", () => {
    const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { engines?: { node?: string } }>;
    };
    // npm warns for each installed package whose engines.node the Node running npm does not satisfy.
    const warned = Object.entries(lock.packages).filter(([path, meta]) => {
      const range = meta.engines?.node;
      return path !== "" && range !== undefined && !allows(range, [20, 19, 0]);
    });
    const readme = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain("Node 20 is enough");
    const count = WORDS[warned.length] ?? String(warned.length);
    expect(readme).toContain(`\`npm warn EBADENGINE Unsupported engine\` for ${count} packages`);
  });

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
