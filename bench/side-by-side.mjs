/**
 * `node bench/side-by-side.mjs <other tree>`: this tree's keyway and another tree's (say a git
 * worktree of the commit before a change) under `wrangler dev` at once, each seeded alike, and
 * the token request and GET /v1/me loaded in turn, A B A B over the rounds (lib.mjs `alternate`):
 * the paired ratio of this tree's throughput over the other's, and the difference in CPU per
 * request. Only the API Worker comes from the other tree (its wrangler.toml); the people's and
 * the GraphQL Workers are this tree's, which neither route calls. Writes bench/results-side-by-side.json.
 */
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { alternate, ROOT, ROUNDS, runMain, scenarios, seed, startKeyway } from "./lib.mjs";

runMain(async () => {
  const other = process.argv[2];
  if (other === undefined) throw new Error("usage: node bench/side-by-side.mjs <other tree>");
  const before = await startKeyway([], { config: join(resolve(other), "wrangler.toml") });
  const after = await startKeyway();
  const targets = { before: scenarios(before.base, await seed(before.base)), after: scenarios(after.base, await seed(after.base)) };
  /** @type {Record<string, unknown>} */
  const results = { rounds: ROUNDS, other: resolve(other) };
  for (const name of /** @type {const} */ (["token", "me"])) {
    results[name] = await alternate(targets.before[name], before.server, targets.after[name], after.server);
    console.log(name, JSON.stringify(results[name]));
  }
  await writeFile(join(ROOT, "bench", "results-side-by-side.json"), `${JSON.stringify(results, null, 2)}\n`);
});
