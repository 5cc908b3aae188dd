/**
 * `node bench/side-by-side.mjs <other tree>`: this tree's keyway and another tree's (say a git
 * worktree of the commit before a change) under `wrangler dev` at once, each seeded alike, and
 * the token request and GET /v1/me loaded in turn, A B A B over the rounds (lib.mjs `alternate`):
 * the paired ratio of this tree's throughput over the other's, and the difference in CPU per
 * request. Only the API Worker comes from the other tree (its wrangler.toml); the people's and
 * the GraphQL Workers are this tree's, which neither route calls. Writes bench/results-side-by-side.json.
 *
 * `--webhooks`: the webhook throughput scenario instead (bench/webhooks.mjs `throughput`:
 * deliveries per second with 1, 10 and 20 endpoints), A B A B over the rounds, each pair's ratio
 * of this tree's deliveries per second over the other's, with the spread of the ratios. Writes
 * bench/results-side-by-side-webhooks.json.
 */
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { alternate, ROOT, ROUNDS, round, runMain, scenarios, seed, spread, startKeyway } from "./lib.mjs";
import { throughput } from "./webhooks.mjs";

runMain(async () => {
  const other = process.argv[2];
  if (other === undefined) throw new Error("usage: node bench/side-by-side.mjs <other tree>");
  const before = await startKeyway([], { config: join(resolve(other), "wrangler.toml") });
  const after = await startKeyway();
  if (process.argv.includes("--webhooks")) {
    /** @type {Record<string, unknown>} */
    const out = { rounds: ROUNDS, other: resolve(other) };
    for (const n of [1, 10, 20]) {
      await throughput(before.base, n); // warm-up, each side
      await throughput(after.base, n);
      const ratios = [];
      const a = [];
      const b = [];
      for (let i = 0; i < ROUNDS; i++) {
        const ra = (await throughput(before.base, n)).deliveries_per_s;
        const rb = (await throughput(after.base, n)).deliveries_per_s;
        a.push(ra);
        b.push(rb);
        ratios.push(rb / ra);
      }
      out[`endpoints_${n}`] = {
        before_per_s: spread(a, 1),
        after_per_s: spread(b, 1),
        ratio: spread(ratios),
        ratios: ratios.map((r) => round(r)),
      };
      console.log(`webhooks, ${n} endpoint(s):`, JSON.stringify(out[`endpoints_${n}`]));
    }
    await writeFile(join(ROOT, "bench", "results-side-by-side-webhooks.json"), `${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const targets = { before: scenarios(before.base, await seed(before.base)), after: scenarios(after.base, await seed(after.base)) };
  /** @type {Record<string, unknown>} */
  const results = { rounds: ROUNDS, other: resolve(other) };
  for (const name of /** @type {const} */ (["token", "me"])) {
    results[name] = await alternate(targets.before[name], before.server, targets.after[name], after.server);
    console.log(name, JSON.stringify(results[name]));
  }
  await writeFile(join(ROOT, "bench", "results-side-by-side.json"), `${JSON.stringify(results, null, 2)}\n`);
});
