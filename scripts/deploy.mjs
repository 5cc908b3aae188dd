/**
 * `npm run deploy` / `npm run check:deploy`: placeholder until the preflight lands (issue 16).
 */
import { spawnSync } from "node:child_process";
import { wranglerCommand } from "./wrangler.mjs";

const dryRun = process.argv.includes("--dry-run");
const rest = process.argv.slice(2).filter((a) => a !== "--dry-run");
const [bin, argv] = wranglerCommand(["deploy", ...(dryRun ? ["--dry-run", "--outdir", "dist"] : []), ...rest]);
process.exit(spawnSync(bin, argv, { stdio: "inherit" }).status ?? 1);
