/**
 * The GraphQL explorer's static files (GET /explorer, http/explorer-page.ts), copied from the npm
 * packages that ship them, graphiql's UMD build and the React 18 UMD builds it runs on, into the
 * directory the keyway-people Worker serves as Workers Static Assets (wrangler.people.toml, `[assets]`).
 * wrangler runs this as that Worker's build command, before `wrangler dev` and `wrangler deploy`
 * bundle it, so the files always match the installed, pinned versions (package-lock.json) and
 * nothing is fetched from a CDN. Static assets are not part of the Worker's script: about 620 KiB
 * gzipped of JavaScript and CSS stay out of its size budget (test/e2e/deploy.test.ts).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Where wrangler.people.toml's `[assets] directory` points; git-ignored (.wrangler/). */
export const ASSETS_DIR = join(ROOT, ".wrangler", "explorer-assets");

/** Served name (under /explorer/assets/) and the package file it is copied from. */
export const EXPLORER_FILES = {
  "graphiql.min.js": "graphiql/graphiql.min.js",
  "graphiql.min.css": "graphiql/graphiql.min.css",
  "react.production.min.js": "react/umd/react.production.min.js",
  "react-dom.production.min.js": "react-dom/umd/react-dom.production.min.js",
};

const target = join(ASSETS_DIR, "explorer", "assets");
await mkdir(target, { recursive: true });
// Several `wrangler dev` runs may build at once (the e2e tests start one per file, in parallel), so
// the directory is never emptied under another run's feet: each file that differs is written to a
// name of this process's own and renamed into place (atomic), identical ones are left alone, and
// a file dropped from the list is deleted (it must not go on being served).
for (const [name, from] of Object.entries(EXPLORER_FILES)) {
  const source = await readFile(join(ROOT, "node_modules", from));
  const dest = join(target, name);
  const current = await readFile(dest).catch(() => null);
  if (current?.equals(source)) continue;
  const temporary = join(target, `.${name}.${process.pid}.${Date.now()}.tmp`);
  await writeFile(temporary, source);
  await rename(temporary, dest);
}
for (const name of await readdir(target)) {
  if (!(name in EXPLORER_FILES) && !name.endsWith(".tmp")) await rm(join(target, name), { force: true });
}
