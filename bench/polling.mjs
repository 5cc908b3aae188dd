/**
 * `npm run bench:polling`: polling configurations (issue 45) against keyway under `wrangler dev`,
 * started and seeded as the other benches do (bench/lib.mjs: the bench's measurement settings,
 * API keys at 1,000/s), in three parts (`BENCH_PARTS=publish,read,wake`, all by default):
 *
 * - publish: the existing `publish` scenario (POST /v1/events by an organization without any
 *   webhook configuration) beside its design-floor twin, and the same publish by an organization
 *   with one polling configuration subscribed to the type (each publish hands one delivery to
 *   that configuration's endpoint object within the publish's answer), in interleaved rounds
 *   (bench/lib.mjs `rotate`: 16 connections, 2 s runs, the three back to back, order reversed
 *   every other round). Run at the commit before issue 45 too (the script skips what that commit
 *   lacks), it gives the publish path's ratio to the design floor before and after.
 * - read: one receiver reads EVENTS events (published beforehand, not timed, into two
 *   configurations of their own per round, one per page size, so that every round reads events
 *   never read before and acknowledges them as a real receiver does) following `next_cursor`, one
 *   page after the other, with `limit=100` and with `limit=10`; events/s, pages/s, each page's
 *   latency (send to last byte) and the server's CPU per page. Beside them in each round, as many
 *   sequential requests to the design floor (one Durable Object call writing one row) as the
 *   `limit=10` reader makes: the per-call floor.
 *   The three go in alternating order, for READ_ROUNDS rounds; medians over the rounds with their
 *   spread.
 * - wake: a read with `wait=20` waiting at an empty cursor, then one publish; the time from the
 *   publish's answer (and from its start) to the read's answer, WAKES times.
 *
 * Results are added to bench/results-polling.json (`POLL_OUT` for another file: the runs of
 * several worktrees go into one), keyed by the commit measured, and bench/results-polling.md is
 * written again from all of them.
 */
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import {
  cpuJiffies,
  cpuMs,
  median,
  need,
  ORDER_DATA,
  p90,
  QUICK,
  ROOT,
  ROUNDS,
  rotate,
  round,
  runMain,
  scenarios,
  seed,
  sleep,
  spread,
  startFloorWorker,
  startKeyway,
} from "./lib.mjs";

const PARTS = (process.env.BENCH_PARTS ?? "publish,read,wake").split(",").filter(Boolean);
/** Events per configuration read in one round (a multiple of both page sizes). */
const EVENTS = Number(process.env.POLL_EVENTS ?? (QUICK ? 1000 : 2000));
/** Rounds of the read part: at least 3, at most 9 (two configurations a round, 20 an organization). */
const READ_ROUNDS = Math.min(9, Math.max(3, Number(process.env.POLL_ROUNDS) || (QUICK ? 3 : 5)));
const WAKES = Number(process.env.POLL_WAKES ?? (QUICK ? 9 : 15));
const PAGE_SIZES = [100, 10];
/** Concurrent publishes while filling a configuration (not measured). */
const FILL_CONCURRENCY = 16;
const OUT = process.env.POLL_OUT ?? join(ROOT, "bench/results-polling.json");

/** @typedef {Awaited<ReturnType<typeof seed>>} Tenant */
/** @typedef {{ id: string, token: string, url: string }} PollingConfig */

/** The API key and access token a tenant's calls use. @param {Tenant} t */
const auth = (t) => ({ "x-api-key": t.apiKey, Authorization: `Bearer ${t.token}`, "Content-Type": "application/json" });

/**
 * A polling configuration of `t`'s organization for `events`; null where the commit has none
 * (before issue 45 the request is refused).
 * @param {string} base @param {Tenant} t @param {string[]} events
 * @returns {Promise<PollingConfig | null>}
 */
async function pollingConfig(base, t, events) {
  const res = await fetch(`${base}/v1/webhook-configurations`, {
    method: "POST",
    headers: auth(t),
    body: JSON.stringify({ delivery: "polling", events, description: "bench" }),
  });
  const json = /** @type {{ data?: { id?: string, polling?: { token?: string, url?: string } } }} */ (await res.json());
  if (res.status !== 201 || !json.data?.polling) return null;
  const id = need(json.data.id, "id");
  return { id, token: need(json.data.polling.token, "polling.token"), url: `${base}/v1/polling-endpoints/${id}/events` };
}

/**
 * Publishes `n` events of `type` (the bench's order as data), FILL_CONCURRENCY at a time; their ids.
 * @param {string} base @param {Tenant} t @param {string} type @param {number} n
 */
async function fill(base, t, type, n) {
  const body = JSON.stringify({ type, data: ORDER_DATA });
  /** @type {string[]} */
  const ids = [];
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const res = await fetch(`${base}/v1/events`, { method: "POST", headers: auth(t), body });
      const json = /** @type {{ data?: { id?: string } }} */ (await res.json());
      if (res.status !== 202) throw new Error(`publish: ${res.status} ${JSON.stringify(json)}`);
      ids.push(need(json.data?.id, "event id"));
    }
  };
  await Promise.all(Array.from({ length: FILL_CONCURRENCY }, worker));
  return ids;
}

/**
 * One read of a polling configuration, timed from the send to the answer's last byte.
 * @param {PollingConfig} c @param {string} query
 */
async function read(c, query) {
  const started = performance.now();
  const res = await fetch(`${c.url}?${query}`, { headers: { Authorization: `Bearer ${c.token}` } });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`read ${query}: ${res.status} ${text}`);
  const page = /** @type {{ data: { events: { id: string }[], next_cursor: string, has_more: boolean } }} */ (JSON.parse(text)).data;
  return { ms, page, answered: performance.now() };
}

/**
 * The receiver: every event of `c` from the oldest, page after page following next_cursor, as
 * fast as it can; checks it got exactly `expected`, each once.
 * @param {PollingConfig} c @param {number} limit @param {string[]} expected
 * @param {import("./lib.mjs").Server} server
 */
async function readAll(c, limit, expected, server) {
  /** @type {number[]} */
  const pageMs = [];
  /** @type {string[]} */
  const ids = [];
  const cpu0 = cpuMs(server.pids);
  const worker0 = server.worker ? cpuMs(server.worker) : 0;
  const started = performance.now();
  let after = "";
  for (;;) {
    const { ms, page } = await read(c, `limit=${limit}${after ? `&after=${after}` : ""}`);
    pageMs.push(ms);
    for (const e of page.events) ids.push(e.id);
    after = page.next_cursor;
    if (!page.has_more) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuMs(server.pids) - cpu0;
  const workerCpu = server.worker ? cpuMs(server.worker) - worker0 : Number.NaN;
  const want = new Set(expected);
  const unique = new Set(ids);
  const missing = expected.filter((id) => !unique.has(id)).length;
  const extra = ids.filter((id) => !want.has(id)).length;
  if (missing > 0 || extra > 0 || unique.size !== ids.length) {
    throw new Error(`limit=${limit}: read ${ids.length} events (${unique.size} distinct), ${missing} missing, ${extra} not published`);
  }
  return {
    events: ids.length,
    pages: pageMs.length,
    seconds,
    events_per_s: ids.length / seconds,
    pages_per_s: pageMs.length / seconds,
    page_p50_ms: median(pageMs),
    page_p90_ms: p90(pageMs),
    cpu_ms_per_page: cpu / pageMs.length,
    worker_process_cpu_ms_per_page: workerCpu / pageMs.length,
  };
}

/**
 * `calls` sequential requests to the design floor (one Durable Object call writing one row), as
 * the receiver's reads are made: the per-call floor of the day.
 * @param {string} url @param {number} calls @param {import("./lib.mjs").Server} server
 */
async function floorCalls(url, calls, server) {
  /** @type {number[]} */
  const ms = [];
  const cpu0 = cpuMs(server.pids);
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    ms.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  return { calls, calls_per_s: calls / seconds, p50_ms: median(ms), p90_ms: p90(ms), cpu_ms_per_call: (cpuMs(server.pids) - cpu0) / calls };
}

/** @param {number[]} xs */
const sp = (xs) => spread(xs, 2);

/**
 * The read part: READ_ROUNDS rounds, each publishing EVENTS fresh events into one configuration
 * per page size (not timed), then reading each configuration to its end and the design floor as
 * many times, in alternating order.
 * @param {string} base @param {Tenant} t @param {{ base: string, server: import("./lib.mjs").Server }} floor
 * @param {import("./lib.mjs").Server} server
 */
async function readPart(base, t, floor, server) {
  /** @type {Record<string, ReturnType<typeof readAll> extends Promise<infer R> ? R[] : never>} */
  const runs = Object.fromEntries(PAGE_SIZES.map((l) => [`limit_${l}`, []]));
  /** @type {Awaited<ReturnType<typeof floorCalls>>[]} */
  const floors = [];
  /** @type {string[][]} */
  const orders = [];
  let fillSeconds = 0;
  let filled = 0;
  // A first configuration read once, outside the rounds: the warm-up.
  const warm = await pollingConfig(base, t, ["bench.read.warmup"]);
  if (warm === null) throw new Error("no polling configuration could be created");
  await readAll(warm, 100, await fill(base, t, "bench.read.warmup", 200), server);
  await floorCalls(`${floor.base}/`, 50, floor.server);
  for (let r = 0; r < READ_ROUNDS; r++) {
    /** @type {Record<string, { c: PollingConfig, ids: string[] }>} */
    const configs = {};
    // One configuration per page size, both subscribed to this round's type: each publish hands
    // one delivery to each (half the publishes of a type each).
    const type = `bench.read.r${r}`;
    for (const limit of PAGE_SIZES) {
      const c = await pollingConfig(base, t, [type]);
      if (c === null) throw new Error("no polling configuration could be created");
      configs[`limit_${limit}`] = { c, ids: [] };
    }
    const f0 = performance.now();
    const ids = await fill(base, t, type, EVENTS);
    for (const c of Object.values(configs)) c.ids = ids;
    fillSeconds += (performance.now() - f0) / 1000;
    filled += EVENTS;
    await sleep(1000); // the publishes' audit pushes and alarms settle
    const steps = [
      ...PAGE_SIZES.map((limit) => ({
        name: `limit_${limit}`,
        run: async () => {
          const { c, ids } = /** @type {{ c: PollingConfig, ids: string[] }} */ (configs[`limit_${limit}`]);
          const result = await readAll(c, limit, ids, server);
          runs[`limit_${limit}`]?.push(result);
          return result;
        },
      })),
      {
        name: "design_floor",
        run: async () => {
          const result = await floorCalls(`${floor.base}/`, EVENTS / 10, floor.server);
          floors.push(result);
          return result;
        },
      },
    ];
    const order = r % 2 ? [...steps].reverse() : steps;
    orders.push(order.map((s) => s.name));
    for (const step of order) await step.run();
    const line = PAGE_SIZES.map((l) => {
      const x = runs[`limit_${l}`]?.at(-1);
      return `limit=${l}: ${round(x?.events_per_s ?? 0, 0)} events/s, ${round(x?.pages_per_s ?? 0, 1)} pages/s, page p50 ${round(x?.page_p50_ms ?? 0, 1)} ms`;
    }).join("; ");
    console.log(`read round ${r + 1}/${READ_ROUNDS}: ${line}; floor ${round(floors.at(-1)?.p50_ms ?? 0, 1)} ms a call`);
  }
  const summary = Object.fromEntries(
    Object.entries(runs).map(([name, xs]) => [
      name,
      {
        events_per_s: sp(xs.map((x) => x.events_per_s)),
        pages_per_s: sp(xs.map((x) => x.pages_per_s)),
        page_p50_ms: sp(xs.map((x) => x.page_p50_ms)),
        page_p90_ms: sp(xs.map((x) => x.page_p90_ms)),
        cpu_ms_per_page: sp(xs.map((x) => x.cpu_ms_per_page)),
        worker_process_cpu_ms_per_page: sp(xs.map((x) => x.worker_process_cpu_ms_per_page)),
        // Within the round: the page's p50 over the floor call's p50, seconds apart.
        page_p50_of_floor_call: sp(xs.map((x, i) => x.page_p50_ms / (floors[i]?.p50_ms ?? Number.NaN))),
        per_round: xs.map((x) => ({
          events_per_s: round(x.events_per_s, 0),
          pages_per_s: round(x.pages_per_s, 1),
          page_p50_ms: round(x.page_p50_ms, 2),
          page_p90_ms: round(x.page_p90_ms, 2),
          cpu_ms_per_page: round(x.cpu_ms_per_page, 3),
          pages: x.pages,
        })),
      },
    ]),
  );
  return {
    events_per_round: EVENTS,
    rounds: READ_ROUNDS,
    ...summary,
    design_floor_sequential: {
      calls_per_round: EVENTS / 10,
      calls_per_s: sp(floors.map((x) => x.calls_per_s)),
      p50_ms: sp(floors.map((x) => x.p50_ms)),
      p90_ms: sp(floors.map((x) => x.p90_ms)),
      cpu_ms_per_call: sp(floors.map((x) => x.cpu_ms_per_call)),
    },
    orders,
    fill_publishes_per_s: round(filled / fillSeconds, 0),
  };
}

/**
 * The wake part: a read waiting (wait=20) at the configuration's end, then one publish; when the
 * read answered against when the publish did (negative: the read's answer came first) and
 * against when the publish was sent.
 * @param {string} base @param {Tenant} t
 */
async function wakePart(base, t) {
  const c = await pollingConfig(base, t, ["bench.wake"]);
  if (c === null) throw new Error("no polling configuration could be created");
  let after = (await read(c, "limit=100")).page.next_cursor;
  /** @type {number[]} */
  const fromAnswer = [];
  /** @type {number[]} */
  const fromSend = [];
  /** @type {number[]} */
  const publishMs = [];
  /** @type {number[]} */
  const waited = [];
  const body = JSON.stringify({ type: "bench.wake", data: ORDER_DATA });
  for (let i = 0; i < WAKES + 2; i++) {
    const readStarted = performance.now();
    const waiting = read(c, `limit=100&wait=20&after=${after}`);
    await sleep(500); // the read is waiting in the object
    const sent = performance.now();
    const res = await fetch(`${base}/v1/events`, { method: "POST", headers: auth(t), body });
    const json = /** @type {{ data?: { id?: string } }} */ (await res.json());
    const answered = performance.now();
    if (res.status !== 202) throw new Error(`publish: ${res.status} ${JSON.stringify(json)}`);
    const got = await waiting;
    const ids = got.page.events.map((e) => e.id);
    if (ids.length !== 1 || ids[0] !== json.data?.id)
      throw new Error(`the waiting read answered ${JSON.stringify(ids)}, not ${json.data?.id}`);
    after = got.page.next_cursor;
    if (i < 2) continue; // warm-up
    fromAnswer.push(got.answered - answered);
    fromSend.push(got.answered - sent);
    publishMs.push(answered - sent);
    waited.push(got.answered - readStarted);
    await sleep(100);
  }
  const r2 = (/** @type {number[]} */ xs) => xs.map((x) => round(x, 1));
  return {
    tries: WAKES,
    publish_answer_to_read_answer_ms: sp(fromAnswer),
    publish_sent_to_read_answer_ms: sp(fromSend),
    publish_ms: sp(publishMs),
    read_waited_ms: sp(waited),
    per_try: { publish_answer_to_read_answer_ms: r2(fromAnswer), publish_sent_to_read_answer_ms: r2(fromSend), publish_ms: r2(publishMs) },
  };
}

async function main() {
  const t0 = performance.now();
  const jiffies0 = cpuJiffies();
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  const machine = { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, node: process.version, date: new Date().toISOString() };
  console.log(`polling bench at ${commit} on ${machine.cpu} x${machine.cores}${QUICK ? " (quick)" : ""}; parts ${PARTS.join(",")}`);
  const load0 = loadavg().map((x) => round(x));
  const kw = await startKeyway();
  const floor = await startFloorWorker();
  /** @type {Record<string, unknown>} */
  const result = { commit, label: process.env.BENCH_LABEL ?? commit, machine, parts: PARTS, load_average_at_start: load0 };

  if (PARTS.includes("publish")) {
    // One organization without any webhook configuration (the bench's `publish`), one with a
    // single polling configuration subscribed to the type published.
    const none = await seed(kw.base);
    const withPolling = await seed(kw.base);
    // BENCH_PUBLISH_POLLING=0: the plain publish beside its twin alone, as at the commit before.
    const polled = process.env.BENCH_PUBLISH_POLLING === "0" ? null : await pollingConfig(kw.base, withPolling, ["bench.plain"]);
    const publish = scenarios(kw.base, none).publish;
    const twin = { ...publish, url: `${floor.base}/v1/events` };
    const group = [
      { name: "design_floor:publish", target: twin, server: floor.server },
      { name: "publish", target: publish, server: kw.server },
      ...(polled ? [{ name: "publish_polling", target: scenarios(kw.base, withPolling).publish, server: kw.server }] : []),
    ];
    console.log(`publish part: ${group.map((g) => g.name).join(", ")}, ${ROUNDS} rounds`);
    const measured = await rotate([group]);
    const vsFloor = measured.pair("design_floor:publish", "publish");
    /** @type {Record<string, unknown>} */
    const part = {
      rounds: ROUNDS,
      design_floor: measured.summary("design_floor:publish"),
      publish: {
        ...measured.summary("publish"),
        of_design_floor: vsFloor.throughput_spread,
        of_design_floor_per_round: vsFloor.throughput_per_round,
        drift: vsFloor.drift,
        cpu_ms_per_req_beyond_design_floor: vsFloor.cpu_ms_per_req_delta,
      },
      orders: measured.orders,
      reruns_after_restart: measured.reloads,
    };
    console.log(
      `publish (no configuration): ${measured.summary("publish").rps} req/s, ${vsFloor.throughput_spread.median} of the design floor (IQR ${vsFloor.throughput_spread.q1}-${vsFloor.throughput_spread.q3}; per round ${vsFloor.throughput_per_round.join(" ")}); floor ${measured.summary("design_floor:publish").rps} req/s`,
    );
    if (polled) {
      const pf = measured.pair("design_floor:publish", "publish_polling");
      const vsNone = measured.pair("publish", "publish_polling");
      part.publish_polling = {
        ...measured.summary("publish_polling"),
        of_design_floor: pf.throughput_spread,
        of_design_floor_per_round: pf.throughput_per_round,
        of_publish: vsNone.throughput_spread,
        of_publish_per_round: vsNone.throughput_per_round,
        p99_of_publish: vsNone.p99_spread,
        cpu_ms_per_req_beyond_publish: vsNone.cpu_ms_per_req_delta,
        worker_process_cpu_ms_per_req_beyond_publish: vsNone.worker_process_cpu_ms_per_req_delta,
      };
      const endpoint = await (await fetch(`${kw.base}/v1/webhook-configurations/${polled.id}`, { headers: auth(withPolling) })).json();
      part.publish_polling_backlog_after = /** @type {{ data?: { polling?: { backlog?: number } } }} */ (endpoint).data?.polling?.backlog;
      console.log(
        `publish (one polling configuration): ${measured.summary("publish_polling").rps} req/s, ${pf.throughput_spread.median} of the design floor, ${vsNone.throughput_spread.median} of the plain publish (IQR ${vsNone.throughput_spread.q1}-${vsNone.throughput_spread.q3}; per round ${vsNone.throughput_per_round.join(" ")}), ${vsNone.cpu_ms_per_req_delta} ms CPU/req more`,
      );
    } else {
      console.log("no polling configuration (this commit has none, or BENCH_PUBLISH_POLLING=0): publish_polling skipped");
    }
    result.publish = part;
    // Before issue 45 there is nothing to read.
    if (!polled && (await pollingConfig(kw.base, withPolling, ["bench.probe"])) === null) PARTS.splice(0, PARTS.length, "publish");
  }

  if (PARTS.includes("read") || PARTS.includes("wake")) {
    const t = await seed(kw.base);
    if (PARTS.includes("read")) {
      result.read = await readPart(kw.base, t, floor, kw.server);
      console.log(JSON.stringify(result.read, (k, v) => (k === "per_round" || k === "orders" ? undefined : v)));
    }
    if (PARTS.includes("wake")) {
      result.wake = await wakePart(kw.base, t);
      console.log(`wake: ${JSON.stringify(result.wake)}`);
    }
  }

  result.duration_s = round((performance.now() - t0) / 1000, 0);
  result.cpu_stolen_pct = round((100 * (cpuJiffies().steal - jiffies0.steal)) / Math.max(1, cpuJiffies().total - jiffies0.total), 1);
  result.load_average_at_end = loadavg().map((x) => round(x));
  const all = JSON.parse(await readFile(OUT, "utf8").catch(() => "{}"));
  const runs = [...(Array.isArray(all.runs) ? all.runs : []), result];
  await writeFile(OUT, `${JSON.stringify({ runs }, null, 2)}\n`);
  await writeFile(join(dirname(OUT), "results-polling.md"), report(runs));
  console.log(`written: ${OUT} (${runs.length} runs) and results-polling.md; ${result.duration_s} s`);
}

/** @param {{ median: number, q1: number, q3: number, min: number, max: number }} s @param {number} [d] */
const fmt = (s, d = 2) => `**${round(s.median, d)}** (IQR ${round(s.q1, d)}-${round(s.q3, d)}; ${round(s.min, d)}-${round(s.max, d)})`;

/**
 * bench/results-polling.md from every run in the JSON.
 * @param {Record<string, any>[]} runs
 */
function report(runs) {
  const lines = [
    "# Polling bench (issue 45)",
    "",
    '`npm run bench:polling` (bench/polling.mjs); medians over rounds, (IQR; range). docs/performance.md, "Issue 45", says how.',
    "",
  ];
  const pub = runs.filter((r) => r.publish);
  if (pub.length) {
    lines.push(
      "## The publish path",
      "",
      "| Run | commit | design floor req/s | publish (no configuration), of the design floor | per round | publish with one polling configuration, of the plain publish | per round | its CPU beyond the plain publish, ms/req |",
      "|---|---|---|---|---|---|---|---|",
    );
    for (const r of pub) {
      const p = r.publish;
      const pp = p.publish_polling;
      lines.push(
        `| ${r.label} (${r.machine.date.slice(0, 16)}, ${p.rounds} rounds, load ${r.load_average_at_start[0]} -> ${r.load_average_at_end[0]}) | ${r.commit} | ${p.design_floor.rps} | ${fmt(p.publish.of_design_floor)} | ${p.publish.of_design_floor_per_round.join(" ")} | ${pp ? fmt(pp.of_publish) : "-"} | ${pp ? pp.of_publish_per_round.join(" ") : "-"} | ${pp ? pp.cpu_ms_per_req_beyond_publish : "-"} |`,
      );
    }
    lines.push("");
  }
  for (const r of runs.filter((x) => x.read)) {
    const rd = r.read;
    lines.push(
      `## One receiver reading (${r.label}, ${r.machine.date.slice(0, 16)}): ${rd.events_per_round} events a round, ${rd.rounds} rounds`,
      "",
      "| Page size | events/s | pages/s | page p50 ms | page p90 ms | page p50 / floor call p50 | server CPU ms/page (keyway's process) |",
      "|---|---|---|---|---|---|---|",
    );
    for (const l of PAGE_SIZES) {
      const x = rd[`limit_${l}`];
      lines.push(
        `| limit=${l} | ${fmt(x.events_per_s, 0)} | ${fmt(x.pages_per_s, 0)} | ${fmt(x.page_p50_ms)} | ${fmt(x.page_p90_ms)} | ${fmt(x.page_p50_of_floor_call)} | ${x.cpu_ms_per_page.median} (${x.worker_process_cpu_ms_per_page.median}) |`,
      );
    }
    const f = rd.design_floor_sequential;
    lines.push(
      `| design floor, sequential calls | - | ${fmt(f.calls_per_s, 0)} | ${fmt(f.p50_ms)} | ${fmt(f.p90_ms)} | 1 | ${f.cpu_ms_per_call.median} |`,
      "",
      `Filling (not timed): ${rd.fill_publishes_per_s} publishes/s at ${FILL_CONCURRENCY} concurrent, each handing one delivery to each of the round's two configurations.`,
      "",
    );
  }
  for (const r of runs.filter((x) => x.wake)) {
    const w = r.wake;
    lines.push(
      `## Long-poll wake (${r.label}, ${r.machine.date.slice(0, 16)}): ${w.tries} tries`,
      "",
      `- publish answered -> waiting read answered: ${fmt(w.publish_answer_to_read_answer_ms, 1)} ms (negative: the read's answer came first)`,
      `- publish sent -> waiting read answered: ${fmt(w.publish_sent_to_read_answer_ms, 1)} ms; the publish itself: ${fmt(w.publish_ms, 1)} ms`,
      "",
    );
  }
  return `${lines.join("\n")}\n`;
}

// POLL_REPORT_ONLY=1: bench/results-polling.md written again from the JSON, nothing measured.
if (process.env.POLL_REPORT_ONLY === "1") {
  const { runs } = JSON.parse(await readFile(OUT, "utf8"));
  await writeFile(join(dirname(OUT), "results-polling.md"), report(runs));
} else {
  runMain(main);
}
