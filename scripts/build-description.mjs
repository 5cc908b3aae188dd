/**
 * `npm run build`: writes the API description (the OpenAPI document and the /docs page) into the
 * Worker's static assets, build/assets (wrangler.toml `[assets]`), from the route declarations
 * (src/http/description.ts). It runs before everything that starts or bundles the Worker: npm
 * start, npm test, the bench and the deploy scripts, so the description always matches the code.
 * The description is built here, not in the Worker, to keep its generator and zod's JSON Schema
 * code out of the Worker's bundle (test/e2e/deploy.test.ts holds the bundle to its budget).
 *
 * The TypeScript is bundled with esbuild (the version wrangler uses) into a temporary module and
 * imported; each file is written next to its target and renamed over it, so a running `wrangler
 * dev` never serves half a file.
 */
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, stop } from "esbuild";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** wrangler.toml `[assets] directory`. */
export const ASSETS_DIR = join(ROOT, "build", "assets");

/**
 * Route declarations import constants from the Durable Object modules, which import the runtime's
 * `cloudflare:workers`; the description never constructs an object, so a stand-in base class does.
 * @type {import("esbuild").Plugin}
 */
const workersRuntimeStub = {
  name: "cloudflare-workers-stub",
  setup(b) {
    b.onResolve({ filter: /^cloudflare:workers$/ }, () => ({ path: "cloudflare:workers", namespace: "stub" }));
    b.onLoad({ filter: /.*/, namespace: "stub" }, () => ({
      contents: "export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }\nexport const env = {};",
      loader: "js",
    }));
  },
};

/** Builds the description files into build/assets; returns their paths. */
export async function buildDescription() {
  const scratch = await mkdtemp(join(tmpdir(), "keyway-description-"));
  try {
    const module = join(scratch, "description.mjs");
    await build({
      entryPoints: [join(ROOT, "src", "http", "description.ts")],
      outfile: module,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node22",
      logLevel: "error",
      plugins: [workersRuntimeStub],
    });
    const { descriptionFiles } = /** @type {{ descriptionFiles: () => Record<string, string> }} */ (
      await import(pathToFileURL(module).href)
    );
    const written = [];
    for (const [path, text] of Object.entries(descriptionFiles())) {
      const target = join(ASSETS_DIR, path);
      await mkdir(dirname(target), { recursive: true });
      const partial = `${target}.${process.pid}.tmp`;
      await writeFile(partial, text);
      await rename(partial, target);
      written.push(target);
    }
    return written;
  } finally {
    // esbuild keeps a service process for later builds; none follow, and a live child process
    // would outlast (and trouble) the scripts that build first (npm start, the bench).
    await stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  buildDescription().then(
    (files) => console.log(`API description written: ${files.map((f) => f.slice(ROOT.length)).join(", ")}`),
    (err) => {
      console.error(`npm run build: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
