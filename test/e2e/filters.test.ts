/**
 * Payload filters and channels against a real `npm start` (docs/receivers.md, "Filters and
 * channels"), as the demo tenant it prints, with six receivers on loopback: 100 events across 3
 * accounts and 2 channels go to 6 configurations with different filters and channels, and each
 * receiver gets exactly the events they match, once each, and nothing else (counted). What each
 * should get is worked out here from the scenario itself, in plain terms, not by keyway's code.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoApi, demoToken, type Keyway, type ScriptedReceiver, sharedKeywayWithOwnDemo, sleep, startScriptedReceiver } from "./server";

let keyway: Keyway;
let token = "";
const receivers: ScriptedReceiver[] = [];

beforeAll(async () => {
  keyway = await sharedKeywayWithOwnDemo();
  token = await demoToken(keyway);
});

afterAll(async () => {
  for (const r of receivers) await r.close();
});

const api = <T>(method: string, path: string, body?: unknown) => demoApi<T>(keyway, token, method, path, body);

interface Order {
  account: string;
  amount: number;
}

/** The six configurations: their filter and channels, and what they mean, said plainly. */
const CONFIGS: { name: string; filter?: unknown; channels?: string[]; wants: (o: Order, channel: string) => boolean }[] = [
  { name: "everything", wants: () => true },
  { name: "account 1", filter: { data: { account: "acct_1" } }, wants: (o) => o.account === "acct_1" },
  { name: "500 and up", filter: { data: { amount: { $gte: 500 } } }, wants: (o) => o.amount >= 500 },
  { name: "eu", channels: ["eu"], wants: (_o, c) => c === "eu" },
  {
    name: "us, accounts 2 and 3",
    channels: ["us"],
    filter: { data: { account: { $in: ["acct_2", "acct_3"] } } },
    wants: (o, c) => c === "us" && o.account !== "acct_1",
  },
  {
    name: "account 3 or small, not in eu",
    filter: { $and: [{ $or: [{ data: { account: "acct_3" } }, { data: { amount: { $lt: 100 } } }] }, { $not: { channels: "eu" } }] },
    wants: (o, c) => (o.account === "acct_3" || o.amount < 100) && c !== "eu",
  },
];

describe("filters and channels against npm start", () => {
  it("delivers 100 events across 3 accounts and 2 channels to 6 configurations, each getting exactly what it matches", async () => {
    const type = `order.filtered${Date.now()}`;
    const schema = {
      type: "object",
      properties: { account: { type: "string" }, amount: { type: "integer" } },
      required: ["account", "amount"],
    };
    expect((await api("POST", "/v1/event-types", { name: type, schema })).status).toBe(201);
    const ids: string[] = [];
    for (const c of CONFIGS) {
      const r = await startScriptedReceiver(() => ({ status: 204 }));
      receivers.push(r);
      const created = await api<{ id: string }>("POST", "/v1/webhook-configurations", {
        url: `${r.url}/hook`,
        oauth: { token_url: `${r.url}/token`, client_id: "keyway", client_secret: "receiver-secret" },
        events: [type],
        description: c.name,
        ...(c.filter !== undefined ? { filter: c.filter } : {}),
        ...(c.channels !== undefined ? { channels: c.channels } : {}),
      });
      expect(created.status, JSON.stringify(created.raw)).toBe(201);
      ids.push(created.data.id);
    }

    const expected = CONFIGS.map(() => new Set<string>());
    const started = performance.now();
    for (let i = 0; i < 100; i++) {
      const order: Order = { account: `acct_${(i % 3) + 1}`, amount: (i * 37) % 1000 };
      const channel = i % 2 === 0 ? "eu" : "us";
      const published = await api<{ id: string; deliveries: { webhook_configuration_id: string }[] }>("POST", "/v1/events", {
        type,
        data: order,
        channels: [channel],
      });
      expect(published.status, JSON.stringify(published.raw)).toBe(202);
      // The publish's answer names exactly the configurations the event reached.
      const reached = new Set(published.data.deliveries.map((d) => d.webhook_configuration_id));
      CONFIGS.forEach((c, k) => {
        expect(reached.has(ids[k] ?? ""), `${c.name}: ${JSON.stringify(order)} on ${channel}`).toBe(c.wants(order, channel));
        if (c.wants(order, channel)) expected[k]?.add(published.data.id);
      });
    }

    const got = () => receivers.map((r) => new Set(r.arrivals.filter((a) => a.kind === "webhook").map((a) => a.eventId)));
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && got().some((s, k) => s.size < (expected[k]?.size ?? 0))) await sleep(200);
    // Then a moment more, for anything that should not come.
    await sleep(1_500);
    const seconds = (performance.now() - started) / 1000;
    CONFIGS.forEach((c, k) => {
      const arrivals = receivers[k]?.arrivals.filter((a) => a.kind === "webhook") ?? [];
      expect([...(got()[k] ?? [])].sort(), c.name).toEqual([...(expected[k] ?? [])].sort());
      expect(arrivals.length, `${c.name}: each event once`).toBe(expected[k]?.size);
    });
    const counts = CONFIGS.map((c, k) => `${c.name} ${expected[k]?.size}`).join(", ");
    console.log(`filters e2e: 100 events, 6 configurations in ${seconds.toFixed(1)} s; received: ${counts}`);
  });
});
