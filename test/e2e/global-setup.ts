/**
 * The e2e and browser projects' global setup (vitest.config.ts): one `npm start` for every file
 * that only needs a running keyway, started once before the first file and stopped after the
 * last, instead of one per file (each start is about 15 s of bundling and two workerd processes).
 * Both projects name this file; the server is kept on the main process's globalThis, so a run of
 * both projects still starts one, and the last project's teardown stops it. Files get it with
 * sharedKeyway() (server.ts). Its output goes to a log file, since the files run in other
 * processes. For the browser project, one Chromium is started the same way (browser.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { type SharedBrowser, startSharedBrowser } from "./browser-server";
import { type Keyway, type SharedKeywayInfo, startKeyway } from "./server";

interface Shared {
  users: number;
  keyway: Promise<{ keyway: Keyway; info: SharedKeywayInfo; dir: string }>;
  browser?: Promise<SharedBrowser | undefined>;
}

const holder = globalThis as typeof globalThis & { __keywayShared?: Shared };

async function startShared(): Promise<{ keyway: Keyway; info: SharedKeywayInfo; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), "keyway-e2e-shared-"));
  const logFile = join(dir, "npm-start.log");
  // Successful requests' outcome lines are not printed (LOG_SUCCESS_SAMPLE_RATE=0; errors still
  // are): the files make tens of thousands of requests, and each printed line passes through
  // wrangler, npm start's log pipe and the test process, which was a tenth of the e2e tier's CPU.
  // No file reads this server's request lines; start.test.ts, which does, runs its own.
  const keyway = await startKeyway({ logFile, vars: { LOG_SUCCESS_SAMPLE_RATE: "0" } });
  const info: SharedKeywayInfo = {
    baseUrl: keyway.baseUrl,
    port: keyway.port,
    demo: keyway.demo,
    adminToken: keyway.adminToken,
    devVarsExisted: keyway.devVarsExisted,
    persistDir: keyway.persistDir,
    logFile,
  };
  return { keyway, info, dir };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  holder.__keywayShared ??= { users: 0, keyway: startShared() };
  const shared = holder.__keywayShared;
  shared.users += 1;
  const { info } = await shared.keyway;
  project.provide("keyway", info);
  if (project.name === "browser") {
    shared.browser ??= startSharedBrowser();
    const browser = await shared.browser;
    project.provide("chromium", browser?.wsEndpoint ?? "");
  }
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    holder.__keywayShared = undefined;
    await (await shared.browser)?.close();
    const { keyway, dir } = await shared.keyway;
    await keyway.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
