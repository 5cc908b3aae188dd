/**
 * The filters' cost, a scenario of `npm run bench` (run.mjs, under "Webhooks") and on its own with
 * `node bench/filters.mjs` (`npm run bench:filters`): `POST /v1/events` to an organization with 20
 * configurations each holding a payload filter, against the same publish to an organization with
 * 20 configurations without, side by side on one `wrangler dev` (A B A B, lib.mjs `alternate`):
 * the paired ratio of the filtered organization's publishes per second over the other's, with the
 * spread of the ratios. Every filter matches the order published, so both fan out to all 20 and
 * the difference is the filters' own cost (each compiled once, evaluated per publish in the
 * organization's object). The configurations are polling ones: what they keep is not sent, so
 * receivers are not what is measured. On its own it writes bench/results-filters.json; in
 * `npm run bench` its figures are results.json's `webhooks.filters`.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { alternate, api, load, ORDER_DATA, ROOT, ROUNDS, runMain, seed, spread, startKeyway } from "./lib.mjs";

const CONFIGURATIONS = 20;

/** Filters of the shapes receivers write, each matching ORDER_DATA (lib.mjs). */
const FILTERS = [
  { data: { status: "paid" } },
  { data: { total: { $gte: 100 }, currency: { $in: ["EUR", "USD"] } } },
  { data: { customer: { email: { $endsWith: "@example.com" } } } },
  { $or: [{ data: { paid: true } }, { data: { discount: { $gt: 0 } } }] },
  { data: { items: { sku: { $startsWith: "SKU-" } } } },
];

/** An organization with 20 polling configurations of `bench.validated`, filtered or not; its publish target. */
async function organization(/** @type {string} */ base, /** @type {boolean} */ filtered) {
  const s = await seed(base);
  const headers = { "x-api-key": s.apiKey, Authorization: `Bearer ${s.token}` };
  for (let i = 0; i < CONFIGURATIONS; i++) {
    await api("POST", `${base}/v1/webhook-configurations`, headers, {
      delivery: "polling",
      events: ["bench.validated"],
      ...(filtered ? { filter: FILTERS[i % FILTERS.length] } : {}),
    });
  }
  const body = JSON.stringify({ type: "bench.validated", data: ORDER_DATA });
  const check = await fetch(`${base}/v1/events`, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body });
  const answer = /** @type {{ data: { deliveries: unknown[] } }} */ (await check.json());
  if (answer.data.deliveries.length !== CONFIGURATIONS)
    throw new Error(`expected ${CONFIGURATIONS} deliveries, got ${answer.data.deliveries.length}`);
  /** @type {import("./lib.mjs").Target} */
  const target = { url: `${base}/v1/events`, method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body };
  return target;
}

/**
 * The side-by-side run on one keyway: its A B A B pairs (lib.mjs `alternate`), then a second set
 * of ROUNDS pairs for the ratios' spread.
 * @param {string} base
 * @param {import("./lib.mjs").Server} server
 */
export async function filterCost(base, server) {
  const plain = await organization(base, false);
  const filtered = await organization(base, true);
  const result = await alternate(plain, server, filtered, server);
  const ratios = [];
  for (let i = 0; i < ROUNDS; i++) {
    const a = await load(plain, server);
    const b = await load(filtered, server);
    ratios.push(b.rps / a.rps);
  }
  return {
    configurations: CONFIGURATIONS,
    rounds: ROUNDS,
    without_filters: result.a,
    with_filters: result.b,
    paired: result.paired,
    ratio: spread(ratios),
  };
}

/** The result in one line. @param {Awaited<ReturnType<typeof filterCost>>} out */
export const filterLine = (out) =>
  `publish to ${out.configurations} configurations: without filters ${out.without_filters.rps}/s, with filters ${out.with_filters.rps}/s; paired ratio ${out.paired.throughput_ratio} (a second set of ${out.rounds} pairs: median ${out.ratio.median}, quartiles ${out.ratio.q1}-${out.ratio.q3}, range ${out.ratio.min}-${out.ratio.max}; target >= 0.9)`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runMain(async () => {
    const kw = await startKeyway();
    const out = await filterCost(kw.base, kw.server);
    console.log(filterLine(out));
    await writeFile(join(ROOT, "bench", "results-filters.json"), `${JSON.stringify(out, null, 2)}\n`);
  });
}
