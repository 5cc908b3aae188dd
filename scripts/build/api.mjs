/**
 * Builds the API Worker's bundle for upload (issue 43): src/index.ts bundled and minified by
 * esbuild as `wrangler deploy` would (ES modules, the workerd conditions, `cloudflare:` and `node:`
 * modules left to the runtime, an external source map), with two differences, both things no
 * request to this Worker runs: route declarations and schemas lose the text that only describes
 * the API (scripts/build/strip-docs.mjs), which the people's Worker serves instead; and zod's JSON
 * Schema conversion, which zod's classic API attaches to every schema it creates (`toJSONSchema`,
 * `~standard.jsonSchema`) and only the people's Worker calls (http/openapi.ts), is replaced by
 * stubs that throw if anything ever did (NOT_HERE), about 18 KiB minified. scripts/deploy.mjs runs it and uploads the result with
 * `wrangler deploy --no-bundle`, so `npm run check:deploy` (and its budget test) measures exactly
 * what is deployed; test/e2e/deploy.test.ts also serves this bundle and calls it. `npm start`
 * and the tests run the sources unchanged.
 *
 *   node scripts/build/api.mjs [outdir]     (default dist/api-build)
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { stripDocs } from "./strip-docs.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The files whose doc text goes: the route declarations and the schemas. */
const DOCUMENTED = /[\\/]src[\\/](?:http[\\/]routes|schemas)[\\/][^\\/]+\.ts$/;
/** zod's JSON Schema conversion (zod/v4/core), as zod's own modules import it. */
const CONVERSION = /^\.\.?\/(?:core\/)?(?:to-json-schema|json-schema-processors|json-schema-generator)\.js$/;
const NOT_HERE = "JSON Schema conversion is not part of the API Worker (scripts/build/api.mjs); the people's Worker converts";

/**
 * A module with every export of the real one (read from its source), each a function that returns
 * one that throws: zod calls the `create*Method` factories when it builds a schema and keeps what
 * they return; nothing here calls that.
 * @param {string} path
 */
async function conversionStub(path) {
  const source = await readFile(path, "utf8");
  /** @type {Set<string | undefined>} */
  const names = new Set();
  for (const m of source.matchAll(/^export (?:async )?(?:function|const|let|class) ([A-Za-z_$][\w$]*)/gm)) names.add(m[1] ?? "");
  for (const m of source.matchAll(/^export \{([^}]*)\}(?! from)/gm)) {
    for (const part of (m[1] ?? "").split(","))
      names.add(
        part
          .trim()
          .split(/\s+as\s+/)
          .pop(),
      );
  }
  const lines = [`const notHere = () => { throw new Error(${JSON.stringify(NOT_HERE)}); };`];
  for (const name of names) if (name) lines.push(`export const ${name} = () => notHere;`);
  return lines.join("\n");
}

/** @param {string} outdir */
export async function buildApi(outdir = join(ROOT, "dist", "api-build")) {
  let removed = 0;
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { index: join(ROOT, "src", "index.ts") },
    outdir,
    bundle: true,
    format: "esm",
    target: "es2024",
    platform: "neutral",
    // As wrangler bundles for workerd.
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    external: ["cloudflare:*", "node:*"],
    minify: true,
    keepNames: false,
    sourcemap: "external",
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
    plugins: [
      {
        name: "strip-docs",
        setup(build) {
          build.onResolve({ filter: CONVERSION }, (args) =>
            /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)
              ? { path: join(args.resolveDir, args.path), namespace: "zod-conversion-stub" }
              : undefined,
          );
          build.onLoad({ filter: /.*/, namespace: "zod-conversion-stub" }, async (args) => ({
            contents: await conversionStub(args.path),
            loader: "js",
          }));
          build.onLoad({ filter: DOCUMENTED }, async (args) => {
            const stripped = stripDocs(await readFile(args.path, "utf8"), args.path);
            removed += stripped.removed;
            return { contents: stripped.code, loader: "ts" };
          });
        },
      },
    ],
  });
  return { outdir, main: join(outdir, "index.js"), removed, metafile: result.metafile };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const built = await buildApi(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.error(`API Worker built into ${built.main} (${built.removed} doc fields left out).`);
}
