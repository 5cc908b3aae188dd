/**
 * `node bench/filters.mjs` (`npm run bench:filters`): `POST /v1/events` to an organization with 20
 * configurations each holding a payload filter, against the same publish to an organization with
 * 20 configurations without, side by side on one `wrangler dev` (A B A B, lib.mjs `alternate`):
 * the paired ratio of the filtered organization's publishes per second over the other's, with the
 * spread of the ratios. Every filter matches the order published, so both fan out to all 20 and
 * the difference is the filters' own cost (each compiled once, evaluated per publish in the
 * organization's object). The configurations are polling ones: what they keep is not sent, so
 * receivers are not what is measured. Writes bench/results-filters.json.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
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

runMain(async () => {
  const kw = await startKeyway();
  const server = kw.server;
  const plain = await organization(kw.base, false);
  const filtered = await organization(kw.base, true);
  const result = await alternate(plain, server, filtered, server);
  // The pairs' ratios again, for their spread (alternate reports their median).
  const ratios = [];
  for (let i = 0; i < ROUNDS; i++) {
    const a = await load(plain, server);
    const b = await load(filtered, server);
    ratios.push(b.rps / a.rps);
  }
  const out = {
    configurations: CONFIGURATIONS,
    rounds: ROUNDS,
    without_filters: result.a,
    with_filters: result.b,
    paired: result.paired,
    ratio: spread(ratios),
  };
  console.log(
    `publish to ${CONFIGURATIONS} configurations: without filters ${result.a.rps}/s, with filters ${result.b.rps}/s; paired ratio ${result.paired.throughput_ratio} (a second set of ${ROUNDS} pairs: median ${out.ratio.median}, quartiles ${out.ratio.q1}-${out.ratio.q3}, range ${out.ratio.min}-${out.ratio.max})`,
  );
  await writeFile(join(ROOT, "bench", "results-filters.json"), `${JSON.stringify(out, null, 2)}\n`);
});
