/**
 * What the webhook-endpoint scenarios share (webhook-endpoints.test.ts, and lanes.quiet.test.ts,
 * which measures latencies on a quiet machine): an organization with a token and an API key that
 * allows bursts, scripted receivers on loopback closed after the file, and the figures taken from
 * the receivers' arrivals on one clock (publish's answer to first receipt).
 */
import { afterAll } from "vitest";
import { type Answer, type Keyway, type ScriptedReceiver, sleep, startScriptedReceiver } from "./server";

export async function json<T>(res: Response): Promise<T> {
  const body = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

export interface Client {
  api(path: string, init?: RequestInit): Promise<Response>;
  /** Publishes an event; resolves to its id and when the answer arrived (performance.now()). */
  publish(type?: string): Promise<{ id: string; answered: number }>;
  config(r: ScriptedReceiver, extra?: Record<string, unknown>): Promise<string>;
}

/**
 * Receivers and clients for one file, against `keyway`; the receivers are closed after the file.
 */
export function endpointsKit(keyway: Keyway) {
  const receivers: ScriptedReceiver[] = [];
  afterAll(async () => {
    for (const r of receivers) await r.close();
  });
  async function receiver(answer: (index: number) => Answer = () => ({ status: 204 }), options: { expiresIn?: number } = {}) {
    const r = await startScriptedReceiver((_a, i) => answer(i), options);
    receivers.push(r);
    return r;
  }

  /** A receiver scripted by the caller (it sees each arrival), closed with the others. */
  async function scripted(answer: Parameters<typeof startScriptedReceiver>[0], options: { expiresIn?: number } = {}) {
    const r = await startScriptedReceiver(answer, options);
    receivers.push(r);
    return r;
  }

  /** An organization with an API key that allows bursts, and a token. */
  async function client(): Promise<Client> {
    const admin = (path: string, body: unknown) =>
      fetch(`${keyway.baseUrl}/admin/v1${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${keyway.adminToken}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => json<Record<string, string>>(r));
    const org = await admin("/organizations", { name: "Lanes" });
    const user = await admin(`/organizations/${org.id}/users`, { name: "Ada" });
    const cred = await admin(`/organizations/${org.id}/users/${user.id}/client-credentials`, {});
    const key = await admin(`/organizations/${org.id}/api-keys`, { limits: { per_second: 1000, per_day: 1_000_000 } });
    const issued = await fetch(`${keyway.baseUrl}/v1/oauth`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "x-api-key": key.api_key ?? "" },
      body: JSON.stringify({ client_id: cred.client_id, client_secret: cred.client_secret, grant_type: "client_credentials" }),
    });
    const token = (await json<{ access_token: string }>(issued)).access_token;
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${keyway.baseUrl}${path}`, {
        ...init,
        headers: { "x-api-key": key.api_key ?? "", Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
      });
    return {
      api,
      publish: async (type = "order.created") => {
        const res = await api("/v1/events", { method: "POST", body: JSON.stringify({ type, data: { at: Date.now() } }) });
        const answered = performance.now();
        return { id: (await json<{ id: string }>(res)).id, answered };
      },
      config: async (r, extra = {}) => {
        const res = await api("/v1/webhook-configurations", {
          method: "POST",
          body: JSON.stringify({
            url: `${r.url}/hook`,
            oauth: { token_url: `${r.url}/token`, client_id: "keyway", client_secret: "loopback-secret" },
            ...extra,
          }),
        });
        return (await json<{ id: string }>(res)).id;
      },
    };
  }

  return { receiver, scripted, client };
}

/** What a lane held behind the throttling receiver would wait at least: its Retry-After. */
export const HELD_MS = 2_000;

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN);
};

/** Publish-answer-to-receipt latencies of the events a receiver got (first receipt of each). */
export function latencies(r: ScriptedReceiver, published: Map<string, number>): number[] {
  const first = new Map<string, number>();
  for (const a of r.arrivals) if (a.kind === "webhook" && !first.has(a.eventId)) first.set(a.eventId, a.at);
  return [...published].flatMap(([id, answered]) => (first.has(id) ? [(first.get(id) ?? 0) - answered] : []));
}

export async function until(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await sleep(50);
}

export const received = (r: ScriptedReceiver, ids: Iterable<string>) => {
  const got = new Set(r.arrivals.filter((a) => a.kind === "webhook" && a.status < 300).map((a) => a.eventId));
  return [...ids].filter((id) => got.has(id)).length;
};
