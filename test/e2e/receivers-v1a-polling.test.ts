/**
 * Issue 45 against a real `npm start`, as the demo tenant it prints, with receivers on loopback:
 * - a `v1a` configuration's webhook, received by a real local HTTP receiver, verifies with its
 *   `signing_public_key` through Node's `crypto.verify` (Ed25519), and with no other key (another
 *   configuration's public key fails); after a rotation, v1a to v1a and v1 to v1a, both keys'
 *   signatures are in the header during the grace, each verifying with its own key;
 * - a polling configuration: three events are read in order in one page with a `next_cursor`; the
 *   next read after it is empty (and keeps the cursor); after one more publish it holds exactly
 *   that event; a read with `wait=20` started before a publish answers as soon as the event is
 *   published (figure printed); another configuration's token reads 401 and its cursor 404; after a
 *   revocation the old token reads 401, and a read waiting with it ends;
 * - the two recipes docs/guides/receive-webhooks.md shows verbatim (examples/recipes/verify-v1a-node.mjs on a real
 *   webhook, its token from examples/oauth-server.mjs; examples/recipes/poll-events.mjs reading,
 *   keeping its cursor, resuming from it with a long poll and stopping on 401), run as files.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac, createPublicKey, randomBytes, verify } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Arrival,
  demoApi,
  demoToken,
  freePort,
  type Keyway,
  ROOT,
  type ScriptedReceiver,
  sharedKeywayWithOwnDemo,
  sleep,
  startScriptedReceiver,
} from "./server";

let keyway: Keyway;
let token = "";
const receivers: ScriptedReceiver[] = [];
const started: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  keyway = await sharedKeywayWithOwnDemo();
  token = await demoToken(keyway);
});

afterAll(async () => {
  for (const proc of started) proc.kill();
  for (const r of receivers) await r.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const api = <T>(method: string, path: string, body?: unknown) => demoApi<T>(keyway, token, method, path, body);

interface Config {
  id: string;
  delivery: "push" | "polling";
  signature_scheme: "v1" | "v1a" | null;
  signing_public_key: string | null;
  signing_secret?: string | null;
  previous_secret_expires_at?: string;
  polling: { url: string; token?: string; token_active: boolean; backlog: number; last_polled_at: string | null } | null;
}

async function create(body: Record<string, unknown>): Promise<Config> {
  const made = await api<Config>("POST", "/v1/webhook-configurations", body);
  expect(made.status, JSON.stringify(made.raw)).toBe(201);
  return made.data;
}

/** A push configuration at `r` (its /token is the receiver's OAuth server) for `events`. */
const pushTo = (r: ScriptedReceiver, events: string[], extra: Record<string, unknown> = {}) =>
  create({
    url: `${r.url}/hook`,
    oauth: { token_url: `${r.url}/token`, client_id: "keyway", client_secret: "receiver-secret" },
    events,
    ...extra,
  });

async function publish(type: string, data: unknown): Promise<string> {
  const published = await api<{ id: string }>("POST", "/v1/events", { type, data });
  expect(published.status, JSON.stringify(published.raw)).toBe(202);
  return published.data.id;
}

async function receiver(): Promise<ScriptedReceiver> {
  const r = await startScriptedReceiver(() => ({ status: 204 }));
  receivers.push(r);
  return r;
}

async function until<T>(what: string, read: () => T | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const arrivalOf = (r: ScriptedReceiver, eventId: string): Promise<Arrival> =>
  until(`the webhook of ${eventId}`, () => r.arrivals.find((a) => a.kind === "webhook" && a.eventId === eventId));

/** The signatures of a webhook's header, as [version, base64] pairs. */
const signaturesOf = (a: Arrival): [string, string][] =>
  (a.headers?.["webhook-signature"] ?? "").split(" ").map((entry) => entry.split(",", 2) as [string, string]);

/** Whether a v1a signature verifies a webhook with a `whpk_` key, with Node's crypto.verify (Ed25519). */
function ed25519Verifies(publicKey: string, a: Arrival, signature: string): boolean {
  const raw = Buffer.from(publicKey.slice("whpk_".length), "base64");
  expect(raw.length).toBe(32);
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  const content = Buffer.from(`${a.headers?.["webhook-id"]}.${a.headers?.["webhook-timestamp"]}.${a.body}`, "utf8");
  return verify(null, content, key, Buffer.from(signature, "base64"));
}

/** Which of a webhook's v1a signatures verify with `publicKey`. */
const v1aVerdicts = (publicKey: string, a: Arrival): boolean[] =>
  signaturesOf(a)
    .filter(([version]) => version === "v1a")
    .map(([, signature]) => ed25519Verifies(publicKey, a, signature));

/** A polling read: its status, `data`, the time it took and when it ended (performance.now()). */
async function poll(
  url: string,
  pollingToken: string,
  query: Record<string, string> = {},
): Promise<{
  status: number;
  error?: string;
  data: { events: { id: string; type: string; data: unknown }[]; next_cursor: string; has_more: boolean };
  ms: number;
  at: number;
}> {
  const startedAt = performance.now();
  const res = await fetch(`${url}?${new URLSearchParams(query)}`, { headers: { Authorization: `Bearer ${pollingToken}` } });
  const body = (await res.json()) as { data: never; error?: string };
  const at = performance.now();
  return { status: res.status, data: body.data, ms: at - startedAt, at, ...(body.error ? { error: body.error } : {}) };
}

/** A polling configuration for `events`, with its URL and token. */
async function pollingFor(events: string[]): Promise<{ id: string; url: string; token: string }> {
  const made = await create({ delivery: "polling", events });
  expect(made.delivery).toBe("polling");
  expect(made.signing_secret).toBeNull();
  expect(made.polling).toMatchObject({ token_active: true, backlog: 0, last_polled_at: null });
  expect(made.polling?.url).toBe(`${keyway.baseUrl}/v1/polling-endpoints/${made.id}/events`);
  expect(made.polling?.token).toMatch(/^kw_poll_/);
  return { id: made.id, url: made.polling?.url ?? "", token: made.polling?.token ?? "" };
}

/** The fenced code blocks of a Markdown file. */
async function codeBlocks(path: string): Promise<string[]> {
  const text = await readFile(join(ROOT, path), "utf8");
  return [...text.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
}

/** A source file as the docs show it: without its leading block comment. */
async function shown(path: string): Promise<string> {
  return (await readFile(join(ROOT, path), "utf8")).replace(/^\/\*\*[\s\S]*?\*\/\n/, "");
}

/** A recipe or example run as a file with this Node; its output grows, `exited` settles with its code. */
function spawnScript(script: string, env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const proc = spawn(process.execPath, [script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  started.push(proc);
  proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  proc.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((done) => proc.once("exit", (code) => done(code)));
  return { proc, stdout: () => stdout, stderr: () => stderr, exited };
}

describe("v1a (Ed25519) signatures", () => {
  it("a v1a configuration's webhook verifies with its public key through crypto.verify, and with no other configuration's key", async () => {
    const r = await receiver();
    const a = await pushTo(r, ["sig.a"], { signature_scheme: "v1a" });
    const b = await pushTo(r, ["sig.b"], { signature_scheme: "v1a" });
    for (const c of [a, b]) {
      expect(c.signature_scheme).toBe("v1a");
      expect(c.signing_secret).toBeNull();
      expect(c.signing_public_key).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    }
    expect(a.signing_public_key).not.toBe(b.signing_public_key);
    // The view shows the same public key, and never a secret.
    const view = await api<Config>("GET", `/v1/webhook-configurations/${a.id}`);
    expect(view.data).toMatchObject({ signature_scheme: "v1a", signing_public_key: a.signing_public_key });
    expect(view.data.signing_secret).toBeUndefined();

    const eventId = await publish("sig.a", { order_id: "v1a-1" });
    const arrival = await arrivalOf(r, eventId);
    const signatures = signaturesOf(arrival);
    expect(signatures.map(([version]) => version)).toEqual(["v1a"]);
    expect(Buffer.from(signatures[0]?.[1] ?? "", "base64")).toHaveLength(64);
    expect(v1aVerdicts(a.signing_public_key ?? "", arrival)).toEqual([true]);
    // Another configuration's public key does not verify it, nor does its own key a changed body.
    expect(v1aVerdicts(b.signing_public_key ?? "", arrival)).toEqual([false]);
    expect(v1aVerdicts(a.signing_public_key ?? "", { ...arrival, body: arrival.body?.replace("v1a-1", "v1a-2") })).toEqual([false]);
    // standardwebhooks 1.1.1 checks only v1 signatures: this header has none it can match.
    expect(() => new Webhook(randomBytes(32).toString("base64")).verify(arrival.body ?? "", arrival.headers ?? {})).toThrow(
      "No matching signature found",
    );
  });

  it("after a v1a -> v1a rotation both keys sign during the grace, each signature verifying with its own key only", async () => {
    const r = await receiver();
    const before = await pushTo(r, ["sig.rotate"], { signature_scheme: "v1a" });
    const rotatedAt = Date.now();
    const rotated = await api<Config>("POST", `/v1/webhook-configurations/${before.id}/rotate-signing-secret`);
    expect(rotated.status, JSON.stringify(rotated.raw)).toBe(200);
    expect(rotated.data.signature_scheme).toBe("v1a");
    expect(rotated.data.signing_secret).toBeNull();
    expect(rotated.data.signing_public_key).toMatch(/^whpk_/);
    expect(rotated.data.signing_public_key).not.toBe(before.signing_public_key);
    const grace = Date.parse(rotated.data.previous_secret_expires_at ?? "") - rotatedAt;
    expect(Math.abs(grace - 24 * 3600_000)).toBeLessThan(60_000);

    const eventId = await publish("sig.rotate", { n: 1 });
    const arrival = await arrivalOf(r, eventId);
    expect(signaturesOf(arrival).map(([version]) => version)).toEqual(["v1a", "v1a"]);
    const byOld = v1aVerdicts(before.signing_public_key ?? "", arrival);
    const byNew = v1aVerdicts(rotated.data.signing_public_key ?? "", arrival);
    // Each key verifies exactly one of the two, and not the same one.
    expect(byOld.filter(Boolean)).toHaveLength(1);
    expect(byNew.filter(Boolean)).toHaveLength(1);
    expect(byOld.map((v, i) => v && byNew[i])).toEqual([false, false]);
  });

  it("after a v1 -> v1a change of scheme the header carries a v1 and a v1a signature, each verifying with its own key", async () => {
    const r = await receiver();
    const before = await pushTo(r, ["sig.scheme"]);
    expect(before.signature_scheme).toBe("v1");
    expect(before.signing_secret).toMatch(/^whsec_/);
    expect(before.signing_public_key).toBeNull();
    const rotated = await api<Config>("POST", `/v1/webhook-configurations/${before.id}/rotate-signing-secret`, {
      signature_scheme: "v1a",
    });
    expect(rotated.status, JSON.stringify(rotated.raw)).toBe(200);
    expect(rotated.data).toMatchObject({ signature_scheme: "v1a", signing_secret: null });
    expect(rotated.data.signing_public_key).toMatch(/^whpk_/);

    const eventId = await publish("sig.scheme", { n: 2 });
    const arrival = await arrivalOf(r, eventId);
    const signatures = signaturesOf(arrival);
    expect(signatures.map(([version]) => version).sort()).toEqual(["v1", "v1a"]);
    // The v1 signature: HMAC-SHA256 with the old secret, by hand and by the Standard Webhooks library.
    const secret = Buffer.from((before.signing_secret ?? "").slice("whsec_".length), "base64");
    const content = `${arrival.headers?.["webhook-id"]}.${arrival.headers?.["webhook-timestamp"]}.${arrival.body}`;
    expect(signatures.find(([version]) => version === "v1")?.[1]).toBe(createHmac("sha256", secret).update(content).digest("base64"));
    expect(new Webhook(secret.toString("base64")).verify(arrival.body ?? "", arrival.headers ?? {})).toMatchObject({ id: eventId });
    // The v1a signature: the new public key.
    expect(v1aVerdicts(rotated.data.signing_public_key ?? "", arrival)).toEqual([true]);
  });

  it("verifies a real webhook with the recipe docs/guides/receive-webhooks.md shows (Node's crypto), and refuses one signed by another configuration", async () => {
    const file = "examples/recipes/verify-v1a-node.mjs";
    expect(await codeBlocks("docs/guides/receive-webhooks.md")).toContain(await shown(file));

    const oauthPort = await freePort();
    const receiverClientSecret = randomBytes(32).toString("base64url");
    const oauthServer = spawnScript("examples/oauth-server.mjs", {
      PORT: String(keyway.port),
      TOKEN_SERVER_PORT: String(oauthPort),
      CLIENT_SECRET: receiverClientSecret,
    });
    await until("the OAuth server", () => (oauthServer.stdout().includes("listening") ? true : undefined), 20_000);

    const receiverPort = await freePort();
    const oauth = {
      token_url: `http://127.0.0.1:${oauthPort}/oauth/token`,
      client_id: "demo-receiver",
      client_secret: receiverClientSecret,
    };
    const mine = await create({ url: `http://127.0.0.1:${receiverPort}/webhooks`, oauth, events: ["recipe.v1a"], signature_scheme: "v1a" });
    const other = await create({
      url: `http://127.0.0.1:${receiverPort}/webhooks`,
      oauth,
      events: ["recipe.other"],
      signature_scheme: "v1a",
    });

    const recipe = spawnScript(file, { SIGNING_PUBLIC_KEY: mine.signing_public_key ?? "", RECEIVER_PORT: String(receiverPort) });
    await until("the recipe", () => (recipe.stdout().includes("listening") ? true : undefined), 20_000);

    const eventId = await publish("recipe.v1a", { order_id: "1234" });
    const verified = await until("the verified webhook", () =>
      recipe
        .stdout()
        .split("\n")
        .find((l) => l.startsWith("verified ")),
    );
    expect(verified).toContain(eventId);
    expect(verified).toContain('"order_id":"1234"');

    // Signed by the other configuration's key: refused (400), so keyway records a failed attempt.
    const otherId = await publish("recipe.other", { order_id: "5678" });
    const refused = await until("the refused webhook", () =>
      recipe
        .stdout()
        .split("\n")
        .find((l) => l.startsWith("refused ")),
    );
    expect(refused).toContain("no v1a signature verifies with this public key");
    expect(recipe.stdout()).not.toContain(otherId);
    expect(
      recipe
        .stdout()
        .split("\n")
        .filter((l) => l.startsWith("verified ")),
    ).toHaveLength(1);
    expect(recipe.stderr()).toBe("");
    expect(oauthServer.stdout()).toMatch(/POST \/oauth\/token 200/);
    // Stop the other configuration's retries.
    expect((await api("DELETE", `/v1/webhook-configurations/${other.id}`)).status).toBe(200);
  });
});

describe("polling", () => {
  it("reads three events in order in one page, then an empty page keeping the cursor, then exactly the next event", async () => {
    const p = await pollingFor(["poll.order"]);
    const ids = [await publish("poll.order", { n: 1 }), await publish("poll.order", { n: 2 }), await publish("poll.order", { n: 3 })];

    const first = await poll(p.url, p.token);
    expect(first.status).toBe(200);
    expect(first.data.events.map((e) => e.id)).toEqual(ids);
    expect(first.data.events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(first.data.events[0]).toMatchObject({ type: "poll.order" });
    expect(first.data.has_more).toBe(false);
    expect(first.data.next_cursor).toMatch(/^\S+$/);

    const empty = await poll(p.url, p.token, { after: first.data.next_cursor });
    expect(empty.status).toBe(200);
    expect(empty.data.events).toEqual([]);
    expect(empty.data.next_cursor).toBe(first.data.next_cursor);
    expect(empty.data.has_more).toBe(false);

    const fourth = await publish("poll.order", { n: 4 });
    const next = await poll(p.url, p.token, { after: empty.data.next_cursor });
    expect(next.data.events.map((e) => e.id)).toEqual([fourth]);
    expect(next.data.next_cursor).not.toBe(first.data.next_cursor);

    // A smaller page says more are there; the view counts what is after the last cursor read.
    const paged = await poll(p.url, p.token, { limit: "2" });
    expect(paged.data.events.map((e) => e.id)).toEqual(ids.slice(0, 2));
    expect(paged.data.has_more).toBe(true);
    const view = await api<Config>("GET", `/v1/webhook-configurations/${p.id}`);
    expect(view.data.polling).toMatchObject({ url: p.url, token_active: true });
    expect(view.data.polling?.last_polled_at).not.toBeNull();
    expect(view.data.polling?.token).toBeUndefined();
  });

  it("a read with wait=20 started before a publish answers as soon as the event is published", async () => {
    const p = await pollingFor(["poll.wait"]);
    const start = (await poll(p.url, p.token)).data.next_cursor;
    const reading = poll(p.url, p.token, { after: start, wait: "20" });
    await sleep(1500);
    const publishStarted = performance.now();
    const eventId = await publish("poll.wait", { n: 1 });
    const publishAnswered = performance.now();
    const read = await reading;
    expect(read.status).toBe(200);
    expect(read.data.events.map((e) => e.id)).toEqual([eventId]);
    // It waited for the publish, then answered at once: well under its 20 s.
    expect(read.ms).toBeGreaterThan(1400);
    const afterPublish = read.at - publishStarted;
    console.log(
      `long poll: the read answered ${Math.round(afterPublish)} ms after the publish was sent ` +
        `(${Math.round(read.at - publishAnswered)} ms from the publish's answer, which took ${Math.round(publishAnswered - publishStarted)} ms; ` +
        `the read took ${Math.round(read.ms)} ms in all)`,
    );
    expect(afterPublish).toBeLessThan(3000);
  });

  it("at most 10 reads wait at once on one configuration: an eleventh is answered at once, empty", async () => {
    const p = await pollingFor(["poll.waiters"]);
    const start = (await poll(p.url, p.token)).data.next_cursor;
    const waiting = Array.from({ length: 10 }, () => poll(p.url, p.token, { after: start, wait: "20" }));
    await sleep(1500);
    const eleventh = await poll(p.url, p.token, { after: start, wait: "20" });
    expect(eleventh.status).toBe(200);
    expect(eleventh.data.events).toEqual([]);
    expect(eleventh.data.next_cursor).toBe(start);
    expect(eleventh.ms).toBeLessThan(1000);
    console.log(`waiters: with 10 reads waiting, an eleventh was answered in ${Math.round(eleventh.ms)} ms`);
    // The ten were waiting: one publish answers them all.
    const eventId = await publish("poll.waiters", { n: 1 });
    const answered = await Promise.all(waiting);
    expect(answered.map((r) => r.data.events.map((e) => e.id))).toEqual(Array.from({ length: 10 }, () => [eventId]));
  });

  it("another configuration's token reads 401 and another configuration's cursor 404", async () => {
    const p = await pollingFor(["poll.mine"]);
    const q = await pollingFor(["poll.theirs"]);
    await publish("poll.mine", { n: 1 });
    await publish("poll.theirs", { n: 1 });
    const theirCursor = (await poll(q.url, q.token)).data.next_cursor;

    const wrongToken = await poll(p.url, q.token);
    expect(wrongToken.status).toBe(401);
    expect(wrongToken.error).toBe("invalid_token");
    const wrongCursor = await poll(p.url, p.token, { after: theirCursor });
    expect(wrongCursor.status).toBe(404);
    expect(wrongCursor.error).toBe("not_found");
    // Its own token and cursor read.
    const mine = await poll(p.url, p.token);
    expect(mine.status).toBe(200);
    expect(mine.data.events.map((e) => e.type)).toEqual(["poll.mine"]);
  });

  it("after a revocation the old token reads 401 and a read waiting with it ends; a rotated-in token reads", async () => {
    const p = await pollingFor(["poll.revoke"]);
    const cursor = (await poll(p.url, p.token)).data.next_cursor;
    const waiting = poll(p.url, p.token, { after: cursor, wait: "20" });
    await sleep(1500);
    const revokedAt = performance.now();
    const revoked = await api<Config>("DELETE", `/v1/webhook-configurations/${p.id}/polling-token`);
    expect(revoked.status, JSON.stringify(revoked.raw)).toBe(200);
    expect(revoked.data.polling?.token_active).toBe(false);
    const ended = await waiting;
    const endedAfter = ended.at - revokedAt;
    expect(ended.status).toBe(401);
    expect(endedAfter).toBeLessThan(3000);
    console.log(`revocation: the read waiting with the token ended ${Math.round(endedAfter)} ms after the DELETE was sent (401)`);
    expect((await poll(p.url, p.token, { after: cursor })).status).toBe(401);

    const rotated = await api<Config>("POST", `/v1/webhook-configurations/${p.id}/rotate-polling-token`);
    expect(rotated.status, JSON.stringify(rotated.raw)).toBe(200);
    const fresh = rotated.data.polling?.token ?? "";
    expect(fresh).toMatch(/^kw_poll_/);
    expect(fresh).not.toBe(p.token);
    expect(rotated.data.polling?.token_active).toBe(true);
    const eventId = await publish("poll.revoke", { n: 1 });
    const read = await poll(p.url, fresh, { after: cursor });
    expect(read.status).toBe(200);
    expect(read.data.events.map((e) => e.id)).toEqual([eventId]);
    expect((await poll(p.url, p.token, { after: cursor })).status).toBe(401);
  });

  it("the polling recipe docs/guides/receive-webhooks.md shows reads events in order, keeps its cursor, resumes with a long poll and stops on 401", async () => {
    const file = "examples/recipes/poll-events.mjs";
    expect(await codeBlocks("docs/guides/receive-webhooks.md")).toContain(await shown(file));
    const p = await pollingFor(["poll.recipe"]);
    const dir = await mkdtemp(join(tmpdir(), "keyway-poll-"));
    dirs.push(dir);
    const env = { POLLING_URL: p.url, POLLING_TOKEN: p.token, CURSOR_FILE: join(dir, "cursor") };
    const ids = [await publish("poll.recipe", { n: 1 }), await publish("poll.recipe", { n: 2 }), await publish("poll.recipe", { n: 3 })];

    const first = spawnScript(file, { ...env, STOP_AFTER: "3" });
    expect(await first.exited).toBe(0);
    expect(first.stderr()).toBe("");
    expect(first.stdout().trim().split("\n")).toEqual(ids.map((id, i) => `${id} poll.recipe {"n":${i + 1}}`));
    // The cursor it kept is the one after the third event: a read from it is empty.
    const kept = (await readFile(join(dir, "cursor"), "utf8")).trim();
    const fromKept = await poll(p.url, p.token, { after: kept });
    expect(fromKept.data.events).toEqual([]);
    expect(fromKept.data.next_cursor).toBe(kept);

    // Started again, it resumes from the kept cursor and waits (wait=20) until the next publish.
    const second = spawnScript(file, { ...env, STOP_AFTER: "1" });
    await sleep(2000);
    expect(second.proc.exitCode).toBeNull();
    const fourth = await publish("poll.recipe", { n: 4 });
    const publishedAt = performance.now();
    expect(await second.exited).toBe(0);
    console.log(`poll recipe: printed the event and exited ${Math.round(performance.now() - publishedAt)} ms after the publish answered`);
    expect(second.stdout().trim().split("\n")).toEqual([`${fourth} poll.recipe {"n":4}`]);

    // The token revoked, it stops with the server's 401.
    expect((await api("DELETE", `/v1/webhook-configurations/${p.id}/polling-token`)).status).toBe(200);
    const third = spawnScript(file, env);
    expect(await third.exited).toBe(1);
    expect(third.stdout()).toBe("");
    expect(third.stderr()).toMatch(/^stopped: HTTP 401 invalid_token: /);
  });
});
