/**
 * `node bench/public-routes.mjs`: what a caller without a credential can do to an organization
 * through the polling read (docs/architecture.md, "Routes without an API key"), against keyway
 * under `wrangler dev` (bench/lib.mjs). One polling configuration; its receiver's reads (with its
 * own token, `wait=0`) and the organization's publishes (POST /v1/events, one delivery each to that
 * configuration's endpoint object), timed one at a time, first quiet, then while ATTACK reads with
 * made-up tokens (16 at a time, each a different client address) go at the same configuration id.
 * Prints the medians and p90s of each and their ratios to the quiet run, and the attack's answers.
 */
import { randomBytes } from "node:crypto";
import { median, need, ORDER_DATA, p90, runMain, seed, startKeyway } from "./lib.mjs";

const SAMPLES = Number(process.env.PUBLIC_SAMPLES ?? 100);
const ATTACK = Number(process.env.PUBLIC_ATTACK ?? 1000);
const CONCURRENCY = Number(process.env.PUBLIC_CONCURRENCY ?? 4);

runMain(async () => {
  const kw = await startKeyway();
  const t = await seed(kw.base);
  const auth = { "x-api-key": t.apiKey, Authorization: `Bearer ${t.token}`, "Content-Type": "application/json" };
  const created = await fetch(`${kw.base}/v1/webhook-configurations`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ delivery: "polling", description: "public-routes bench" }),
  });
  const config = /** @type {{ data: { id: string, polling: { token: string } } }} */ (await created.json()).data;
  const url = `${kw.base}/v1/polling-endpoints/${need(config.id, "id")}/events`;
  const body = JSON.stringify({ type: "order.created", data: ORDER_DATA });

  /** Times SAMPLES publishes and SAMPLES reads, alternating, one at a time. */
  const measure = async () => {
    const publishes = [];
    const reads = [];
    for (let i = 0; i < SAMPLES; i++) {
      let started = performance.now();
      const p = await fetch(`${kw.base}/v1/events`, { method: "POST", headers: auth, body });
      await p.text();
      if (p.status !== 202) throw new Error(`publish ${p.status}`);
      publishes.push(performance.now() - started);
      started = performance.now();
      const r = await fetch(url, { headers: { Authorization: `Bearer ${config.polling.token}` } });
      await r.text();
      if (r.status !== 200) throw new Error(`read ${r.status}`);
      reads.push(performance.now() - started);
    }
    return { publishes, reads };
  };

  await measure(); // warm-up
  const quiet = await measure();
  /**
   * `ATTACK` reads with made-up tokens at the configuration's id, CONCURRENCY at a time, while the
   * quiet run's measurement runs again; then the same flood at /healthz (no object, no KV) as the
   * control: what the runtime's own contention costs under `wrangler dev` (one process, one thread).
   */
  const flood = async (/** @type {string} */ target, /** @type {boolean} */ forged) => {
    /** @type {Record<number, number>} */
    const answers = {};
    let sent = 0;
    let measuring = true;
    const attacker = async () => {
      while (measuring || sent < ATTACK) {
        sent++;
        const headers = forged
          ? { Authorization: `Bearer kw_poll_${randomBytes(32).toString("base64url")}`, "cf-connecting-ip": `198.51.100.${sent % 250}` }
          : {};
        const res = await fetch(target, { headers });
        await res.text();
        answers[res.status] = (answers[res.status] ?? 0) + 1;
      }
    };
    const attackers = Array.from({ length: CONCURRENCY }, attacker);
    const loaded = await measure();
    measuring = false;
    await Promise.all(attackers);
    return { loaded, answers, sent };
  };
  const attack = await flood(url, true);
  const control = await flood(`${kw.base}/healthz`, false);
  const row = (/** @type {string} */ name, /** @type {number[]} */ q, /** @type {number[]} */ l) =>
    `${name.padEnd(10)} quiet median ${median(q).toFixed(1)} ms p90 ${p90(q).toFixed(1)} ms | under attack median ${median(l).toFixed(1)} ms p90 ${p90(l).toFixed(1)} ms | ratio ${(median(l) / median(q)).toFixed(2)}x`;
  console.log(`polling read with made-up tokens, ${CONCURRENCY} at a time: ${attack.sent} sent, answers ${JSON.stringify(attack.answers)}`);
  console.log(row("publish", quiet.publishes, attack.loaded.publishes));
  console.log(row("read", quiet.reads, attack.loaded.reads));
  console.log(`control, GET /healthz ${CONCURRENCY} at a time: ${control.sent} sent, answers ${JSON.stringify(control.answers)}`);
  console.log(row("publish", quiet.publishes, control.loaded.publishes));
  console.log(row("read", quiet.reads, control.loaded.reads));
});
