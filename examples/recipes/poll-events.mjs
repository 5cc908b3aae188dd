/**
 * Recipe: a receiver without a public URL reads a polling configuration's events with long
 * polling, processes each event once (by its id) and keeps the cursor in a file once the page is
 * processed, so a restart resumes where it stopped. It backs off on 429, 5xx and network errors
 * and stops on 401 (the token was revoked or rotated: a person must hand it a new one), 409 (the
 * configuration is disabled), 404 and 410 (the cursor is not this configuration's, or older than
 * retention: reconcile first). Each
 * event is printed as one line `<id> <type> <data>`. Run: POLLING_URL=<polling.url>
 * POLLING_TOKEN=kw_poll_... node poll-events.mjs (Node 20+, no package); CURSOR_FILE (default
 * ./keyway-cursor) is where the cursor is kept, STOP_AFTER=N stops after N new events.
 */
import { readFile, rename, writeFile } from "node:fs/promises";

const url = process.env.POLLING_URL;
const token = process.env.POLLING_TOKEN;
if (!url || !token?.startsWith("kw_poll_"))
  throw new Error("set POLLING_URL and POLLING_TOKEN to the configuration's polling.url and polling.token");
const cursorFile = process.env.CURSOR_FILE ?? "keyway-cursor";
const stopAfter = Number(process.env.STOP_AFTER ?? Number.POSITIVE_INFINITY);

/** @typedef {{ id: string, type: string, created_at: string, data: unknown }} KeywayEvent */

/**
 * Your handling of one event: here, one line on stdout. It must be safe to run twice for an id.
 * @param {KeywayEvent} event
 */
async function processEvent(event) {
  console.log(`${event.id} ${event.type} ${JSON.stringify(event.data)}`);
}

// Delivery is at least once: an event comes again if the process stopped after handling it and
// before keeping the cursor. A real receiver records the ids it handled with the handling itself
// (a unique key in its database); this one remembers the last ones in memory.
const handled = new Set();
let cursor = (await readFile(cursorFile, "utf8").catch(() => "")).trim();
let count = 0;
let backoff = 1;

while (count < stopAfter) {
  const query = new URLSearchParams({ limit: "100", wait: "20" });
  if (cursor) query.set("after", cursor);
  let res;
  try {
    // wait=20: an empty read is held until an event is published (at most 20 s), then answers at once.
    res = await fetch(`${url}?${query}`, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    res = null;
    console.error(`read failed (${err instanceof Error ? err.message : String(err)}), retrying in ${backoff} s`);
  }
  if (res !== null && (res.status === 401 || res.status === 404 || res.status === 409 || res.status === 410)) {
    const answer = /** @type {{ error?: string, developer_message?: string }} */ (await res.json().catch(() => ({})));
    console.error(`stopped: HTTP ${res.status} ${answer.error ?? ""}: ${answer.developer_message ?? ""}`);
    process.exit(1);
  }
  if (res === null || res.status === 429 || res.status >= 500) {
    // Retry-After when the server gives one; otherwise 1, 2, 4 ... 60 s.
    const wait = Number(res?.headers.get("retry-after")) || backoff;
    if (res !== null) console.error(`HTTP ${res.status}, retrying in ${wait} s`);
    await new Promise((done) => setTimeout(done, wait * 1000 + Math.random() * 250));
    backoff = Math.min(backoff * 2, 60);
    continue;
  }
  if (!res.ok) throw new Error(`unexpected HTTP ${res.status}: ${await res.text()}`);
  backoff = 1;
  const page = /** @type {{ data: { events: KeywayEvent[], next_cursor: string } }} */ (await res.json());
  const { events, next_cursor } = page.data;
  for (const event of events) {
    if (handled.has(event.id)) continue;
    await processEvent(event);
    handled.add(event.id);
    if (handled.size > 10_000) handled.delete(handled.values().next().value);
    count++;
  }
  // Kept only after the page is processed (and written whole: a new file renamed over the old).
  if (next_cursor !== cursor) {
    await writeFile(`${cursorFile}.tmp`, next_cursor);
    await rename(`${cursorFile}.tmp`, cursorFile);
    cursor = next_cursor;
  }
}
