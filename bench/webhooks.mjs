/**
 * The bench's webhook scenarios (issue 20, item 10), against the same `wrangler dev` as the HTTP
 * scenarios, with receivers on loopback whose behaviour each scenario scripts:
 * - first delivery: one healthy endpoint, a steady stream of single events; publish answer to receipt;
 * - isolation: two organizations' healthy endpoints alone, then beside an endpoint that answers 503
 *   after 8 s and one that fails at once; the ratio of beside to alone is the isolation figure;
 * - throughput: deliveries per second with 1, 10 and 20 endpoints of one organization;
 * - tokens: token requests per delivery, with and without `token_cache`;
 * - receiver auth (issue 31): each way of authenticating at the receiver's token endpoint against the default.
 * Latencies are measured on one clock (performance.now() in this process) from the moment the
 * publish's answer arrived to the moment the receiver had the webhook's body.
 */
import { createServer } from "node:http";
import { api, cleanups, cpuMs, freePort, need, QUICK, round, seed, sleep } from "./lib.mjs";

/**
 * A receiver on loopback: `/token` issues tokens (counted); any other path is the webhook, answered
 * by `behave` (status and delay), its first receipt per event id recorded.
 * @param {() => { status: number, delayMs?: number }} [behave]
 */
async function receiver(behave = () => ({ status: 204 })) {
  /** @type {Map<string, number>} */
  const receipts = new Map();
  let tokens = 0;
  let webhooks = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.url === "/token") {
        tokens++;
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ access_token: `bench-${tokens}`, token_type: "Bearer", expires_in: 3600 }));
        return;
      }
      webhooks++;
      const at = performance.now();
      const answer = behave();
      const id = /** @type {{ id: string }} */ (JSON.parse(body)).id;
      if (answer.status < 300 && !receipts.has(id)) receipts.set(id, at);
      const send = () => {
        if (!res.destroyed) res.writeHead(answer.status).end();
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, "127.0.0.1", () => r(undefined)));
  cleanups.push(async () => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${port}`, receipts, tokens: () => tokens, webhooks: () => webhooks };
}

/** @param {string} base @param {Awaited<ReturnType<typeof seed>>} s */
const client = (base, s) => {
  const auth = { "x-api-key": s.apiKey, Authorization: `Bearer ${s.token}` };
  return {
    /** @param {Awaited<ReturnType<typeof receiver>>} r @param {Record<string, unknown>} [extra] */
    config: (r, extra = {}) =>
      api("POST", `${base}/v1/webhook-configurations`, auth, {
        url: `${r.url}/hook`,
        oauth: { token_url: `${r.url}/token`, client_id: "bench", client_secret: "bench-secret" },
        ...extra,
      }),
    /** Publishes one event; its id and when the answer arrived. */
    publish: async (/** @type {string} */ type = "bench.event") => {
      const event = await api("POST", `${base}/v1/events`, auth, { type, data: { at: Date.now() } });
      return { id: need(event.id, "event id"), answered: performance.now() };
    },
  };
};

/** @param {number[]} xs @param {number} p */
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN, 0);
};

/** @param {() => boolean} done @param {number} ms */
async function until(done, ms) {
  const deadline = performance.now() + ms;
  while (!done() && performance.now() < deadline) await sleep(25);
}

/** Publish-answer-to-receipt latencies of `published` at `r`. @param {Map<string, number>} published */
const latencies = (/** @type {{ receipts: Map<string, number> }} */ r, published) =>
  [...published].flatMap(([id, at]) => (r.receipts.has(id) ? [/** @type {number} */ (r.receipts.get(id)) - at] : []));

/** One event at a time to a healthy endpoint, nothing else running. @param {string} base */
export async function firstDelivery(base) {
  const c = client(base, await seed(base));
  const r = await receiver();
  await c.config(r);
  /** @type {Map<string, number>} */
  const published = new Map();
  const n = QUICK ? 20 : 60;
  for (let i = 0; i < n; i++) {
    const e = await c.publish();
    published.set(e.id, e.answered);
    await sleep(100);
  }
  await until(() => r.receipts.size >= n, 30_000);
  const l = latencies(r, published);
  return { events: n, received: l.length, publish_to_receipt_p50_ms: pct(l, 50), publish_to_receipt_p99_ms: pct(l, 99) };
}

/** Healthy endpoints of two organizations, alone and beside a hanging and a failing one. @param {string} base */
export async function isolation(base) {
  const [one, two] = [client(base, await seed(base)), client(base, await seed(base))];
  const a = await receiver();
  const b = await receiver();
  await one.config(a);
  await two.config(b);
  const n = QUICK ? 15 : 30;
  const run = async () => {
    /** @type {Map<string, number>[]} */
    const published = [new Map(), new Map()];
    for (let i = 0; i < n; i++) {
      const [e1, e2] = await Promise.all([one.publish(), two.publish()]);
      published[0]?.set(e1.id, e1.answered);
      published[1]?.set(e2.id, e2.answered);
      await sleep(150);
    }
    const got = () =>
      latencies(a, /** @type {Map<string, number>} */ (published[0])).length +
      latencies(b, /** @type {Map<string, number>} */ (published[1])).length;
    await until(() => got() >= 2 * n, 30_000);
    return [
      ...latencies(a, /** @type {Map<string, number>} */ (published[0])),
      ...latencies(b, /** @type {Map<string, number>} */ (published[1])),
    ];
  };
  const alone = await run();
  const hanging = await receiver(() => ({ status: 503, delayMs: 8_000 }));
  const failing = await receiver(() => ({ status: 500 }));
  await one.config(hanging);
  await two.config(failing);
  const beside = await run();
  const summary = (/** @type {number[]} */ l) => ({ received: l.length, p50_ms: pct(l, 50), p99_ms: pct(l, 99) });
  const s1 = summary(alone);
  const s2 = summary(beside);
  return {
    events_per_endpoint: n,
    alone: s1,
    beside_hanging_and_failing: s2,
    // The isolation figure: 1.0 means a hanging and a failing endpoint cost the healthy lanes nothing.
    // Latencies here are single milliseconds, so the difference says more than the ratio.
    p50_ratio: round(s2.p50_ms / Math.max(1, s1.p50_ms), 2),
    p99_ratio: round(s2.p99_ms / Math.max(1, s1.p99_ms), 2),
    p50_delta_ms: round(s2.p50_ms - s1.p50_ms, 0),
    p99_delta_ms: round(s2.p99_ms - s1.p99_ms, 0),
    hanging_requests: hanging.webhooks(),
  };
}

/** Deliveries per second with `endpoints` endpoints of one organization. @param {string} base @param {number} endpoints */
export async function throughput(base, endpoints) {
  const c = client(base, await seed(base));
  /** @type {Awaited<ReturnType<typeof receiver>>[]} */
  const receivers = [];
  const type = `bench.t${endpoints}`;
  for (let i = 0; i < endpoints; i++) {
    const r = await receiver();
    receivers.push(r);
    await c.config(r, { events: [type] });
  }
  const total = QUICK ? 200 : 600;
  const events = Math.max(10, Math.ceil(total / endpoints));
  const started = performance.now();
  // Eight publishers at once, so the client is not what limits.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < events) {
        next++;
        await c.publish(type);
      }
    }),
  );
  const expected = events * endpoints;
  const count = () => receivers.reduce((n, r) => n + r.receipts.size, 0);
  await until(() => count() >= expected, 120_000);
  const last = Math.max(...receivers.flatMap((r) => [...r.receipts.values()]));
  return {
    endpoints,
    events,
    deliveries_expected: expected,
    deliveries_received: count(),
    deliveries_per_s: round((count() * 1000) / (last - started), 1),
  };
}

/** Token requests per delivery, with and without token_cache. @param {string} base */
export async function tokens(base) {
  const c = client(base, await seed(base));
  const n = QUICK ? 20 : 50;
  /** @type {Record<string, unknown>} */
  const out = { deliveries: n };
  for (const cache of [false, true]) {
    const r = await receiver();
    const type = `bench.token.${cache}`;
    await c.config(r, { events: [type], token_cache: cache });
    await Promise.all(Array.from({ length: n }, () => c.publish(type)));
    await until(() => r.receipts.size >= n, 60_000);
    out[cache ? "with_token_cache" : "without_token_cache"] = {
      received: r.receipts.size,
      token_requests: r.tokens(),
      token_requests_per_delivery: round(r.tokens() / Math.max(1, r.receipts.size), 3),
    };
  }
  return out;
}

/**
 * Issue 31: what a delivery costs with each way of authenticating at the receiver's token
 * endpoint, against spec 4.3's default: `client_secret_post` (the default), `client_secret_basic`,
 * `private_key_jwt` (an ES256 assertion signed per token request) and `dpop` (a proof signed for
 * the token request and another for the webhook). Each mode has its own endpoint and receiver (its
 * token endpoint answers `token_type` DPoP for the DPoP one); events go one at a time, and the
 * modes take turns in rounds, their order rotated, so drift falls on all alike. Reported per
 * mode: publish request to receipt (p50, p99) and keyway's CPU per delivery (the whole delivery:
 * the publish request, the endpoint's calls, the token request and the webhook), and each mode's
 * ratio to the default.
 * @param {string} base
 * @param {import("./lib.mjs").Server} server
 */
export async function receiverAuthCost(base, server) {
  const c = client(base, await seed(base));
  const modes = /** @type {const} */ (["client_secret_post", "client_secret_basic", "private_key_jwt", "dpop"]);
  /** @type {Record<string, { r: Awaited<ReturnType<typeof receiver>>, type: string, latencies: number[], cpu: number, n: number }>} */
  const runs = {};
  for (const mode of modes) {
    const r = await receiverWithTokenType(mode === "dpop" ? "DPoP" : "Bearer");
    const type = `bench.${mode.replaceAll("_", "")}`;
    const oauth =
      mode === "private_key_jwt"
        ? { token_url: `${r.url}/token`, client_id: "bench", auth_method: "private_key_jwt" }
        : {
            token_url: `${r.url}/token`,
            client_id: "bench",
            client_secret: "bench-secret",
            ...(mode === "client_secret_basic" ? { auth_method: "client_secret_basic" } : {}),
            ...(mode === "dpop" ? { dpop: true } : {}),
          };
    await c.config(r, { events: [type], oauth });
    runs[mode] = { r, type, latencies: [], cpu: 0, n: 0 };
  }
  const rounds = QUICK ? 2 : 5;
  const perTurn = QUICK ? 5 : 10;
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < modes.length; i++) {
      const mode = modes[(i + round) % modes.length] ?? "client_secret_post";
      const run = runs[mode];
      if (run === undefined) continue;
      for (let k = 0; k < perTurn; k++) {
        const before = cpuMs(server.pids);
        // From the publish request's start: locally the webhook can arrive before the publish's answer.
        const started = performance.now();
        const e = await c.publish(run.type);
        await until(() => run.r.receipts.has(e.id), 10_000);
        await sleep(20); // the report after the receipt is the delivery's too
        run.cpu += cpuMs(server.pids) - before;
        run.n++;
        const at = run.r.receipts.get(e.id);
        if (at !== undefined) run.latencies.push(at - started);
      }
    }
  }
  const base0 = runs.client_secret_post;
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const mode of modes) {
    const run = runs[mode];
    if (run === undefined || base0 === undefined) continue;
    const p50 = pct(run.latencies, 50);
    const cpu = round(run.cpu / Math.max(1, run.n), 2);
    out[mode] = {
      deliveries: run.latencies.length,
      publish_start_to_receipt_p50_ms: p50,
      publish_start_to_receipt_p99_ms: pct(run.latencies, 99),
      cpu_ms_per_delivery: cpu,
      p50_vs_default: round(p50 / Math.max(1, pct(base0.latencies, 50)), 2),
      cpu_vs_default: round(cpu / Math.max(0.01, base0.cpu / Math.max(1, base0.n)), 2),
    };
  }
  return out;
}

/** A receiver like `receiver()` whose token endpoint answers `token_type` as given. @param {string} tokenType */
async function receiverWithTokenType(tokenType) {
  const r = await receiver();
  if (tokenType === "Bearer") return r;
  // The DPoP one: a server of its own, whose token answer says DPoP (keyway refuses a Bearer token when it asked for DPoP).
  /** @type {Map<string, number>} */
  const receipts = new Map();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (req.url === "/token") {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ access_token: "bench-dpop", token_type: tokenType, expires_in: 3600 }));
        return;
      }
      const id = /** @type {{ id: string }} */ (JSON.parse(body)).id;
      if (!receipts.has(id)) receipts.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  const port = await freePort();
  await new Promise((done) => server.listen(port, "127.0.0.1", () => done(undefined)));
  cleanups.push(async () => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${port}`, receipts, tokens: () => 0, webhooks: () => receipts.size };
}
