/**
 * The hot path's budget in counts, not times (issue 33, item 1): for token issuance, GET /v1/me
 * with a Bearer token, with a DPoP-bound token, under an organization's shared quota, and a
 * GraphQL `viewer` query, each request is measured after a warm-up request of the same kind (so
 * that per-isolate caches, the key's lease and the once-a-minute "last used" note are paid by the
 * warm-up, not counted here) and compared, exactly, with BUDGET below: the calls it makes to
 * Durable Objects (and to KV, Analytics Engine and the GraphQL engine), including the call a
 * KeyObject makes to its organization's QuotaObject; the SQL statements each object executes and
 * the rows they write; the bytes crossing each RPC boundary; the signature, HMAC and digest
 * operations; and the JSON serializations, with how many of them carry text already serialized
 * or parsed in the same request. Everything is observed from the test side, without a seam in
 * production code: the Worker's bindings and each object's `env` are proxies, each object's
 * `ctx.storage.sql.exec` is wrapped on the live instance, and crypto.subtle and JSON are spied on
 * (code inside the Durable Objects shares this isolate's globals in this pool: the first test
 * checks that rather than assuming it). A change that adds one call, statement, row, byte,
 * signature or serialization fails here; the last tests show that it does, by injecting an extra
 * write and an extra call into the live KeyObject.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env, RpcTarget } from "cloudflare:workers";
import { generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { createApp } from "../src/app";
import { sha256Hex } from "../src/lib/crypto";
import { canonicalJson } from "../src/lib/json";
import { PROOF_SHARDS, proofObjectName } from "../src/objects/proofs";
import { admin, athOf, authed, BASE, createTenant, dpopProof, type KeyPair, type Tenant, tokenRequest } from "./helpers";

/**
 * POST /v1/oauth, JSON body with client_secret. calls: the key's object (admit: key, limits,
 * credential revocation and version), the outcome's data point. sql: the windows row (windows and
 * the hour's traffic counts, one upsert). crypto: SHA-256 of the client secret (client-auth) and
 * of the API key (gate); the secret's hash compared with KV's copy (client-auth) and the key's
 * with the object's (the admission's core, ratelimit/admission.ts); the token's HMAC (signed.ts). json: the body parsed, the claims
 * stringified to sign, the envelope (hono's c.json), the outcome line (log.ts). Not counted: the
 * credential's KV lookup and its schema parse (cached per isolate for a minute).
 */
const TOKEN = {
  calls: { "KEYS.admit": 1, "METRICS.writeDataPoint": 1 },
  bytes: { "KEYS.admit": 684 },
  sql: { KeyObject: { statements: 1, rowsWritten: 1 } },
  crypto: {
    "digest src/lib/crypto.ts<src/auth/client-auth.ts": 1,
    "digest src/lib/crypto.ts<src/auth/gate.ts": 1,
    "timingSafeEqual src/lib/crypto.ts<src/auth/client-auth.ts": 1,
    "timingSafeEqual src/lib/crypto.ts<src/ratelimit/admission.ts": 1,
    "sign src/lib/signed.ts": 1,
  },
  json: {
    "parse src/http/body.ts": 1,
    "stringify src/lib/signed.ts<src/auth/access-token.ts": 1,
    "stringify hono": 1,
    "stringify src/log.ts": 1,
  },
  sameData: 0,
};

/**
 * What one request of each path costs (the "before" figures of issue 33; lower them as work is
 * removed). Keys of `calls` and `bytes`: `BINDING.method` for a call the Worker makes, and
 * `Object>BINDING.method` for one an object makes from inside its call. `bytes`: the JSON text of
 * the arguments plus that of the result (an RpcTarget passed by reference counts as a marker).
 * `sql`: per object, statements executed and rows written (the cursors' `rowsWritten`). `crypto`:
 * crypto.subtle calls by method and calling module. `json`: JSON.stringify / JSON.parse calls by
 * calling module; `sameData`: how many of them carry a text already stringified or parsed in the
 * same request.
 */
const BUDGET = {
  token: TOKEN,
  /**
   * POST /v1/oauth with a new DPoP proof (issue 41): as `token`, and beside the key's call, in
   * parallel with it, the ProofObject the proof's id names records it (one INSERT: its row and its
   * expiry index entry); before issue 41 that was a second call after the admission, to the
   * organization's one object. crypto: the proof's signature (jose). json: the proof's header and
   * payload parsed (jose), the proof key's cache id (lib/jwt.ts).
   */
  tokenDpop: {
    ...TOKEN,
    calls: { ...TOKEN.calls, "PROOFS.record": 1 },
    bytes: { ...TOKEN.bytes, "PROOFS.record": 75 },
    sql: { ...TOKEN.sql, ProofObject: { statements: 1, rowsWritten: 2 } },
    crypto: { ...TOKEN.crypto, "verify jose": 1 },
    json: { ...TOKEN.json, "parse jose": 2, "stringify src/lib/jwt.ts<jose": 1 },
  },
  /**
   * GET /v1/me, Bearer token. calls: admit, the data point. sql: the windows row. crypto: SHA-256
   * of the API key (gate), compared in the key's object. json: the envelope, the outcome line. Not
   * counted: the token's HMAC verification and its payload's parse (verified tokens are cached per
   * isolate; a token's first request pays one `verify` and one `parse`).
   */
  meBearer: {
    calls: { "KEYS.admit": 1, "METRICS.writeDataPoint": 1 },
    bytes: { "KEYS.admit": 710 },
    sql: { KeyObject: { statements: 1, rowsWritten: 1 } },
    crypto: { "digest src/lib/crypto.ts<src/auth/gate.ts": 1, "timingSafeEqual src/lib/crypto.ts<src/ratelimit/admission.ts": 1 },
    json: { "stringify hono": 1, "stringify src/log.ts": 1 },
    sameData: 0,
  },
  /**
   * GET /v1/me, DPoP-bound token with a fresh proof. calls: admit, and beside it, in parallel, the
   * ProofObject the proof's id names (issue 41: before, the key's object recorded it, and a shard
   * count or limit change could send a replay elsewhere), the data point. sql: the key's windows
   * row; the proof's id (one INSERT: its row and its expiry index entry, 2 rows written): the same
   * statements and rows as before, in two objects. crypto: the proof's signature (jose), the API key's SHA-256 and
   * its comparison. json: the proof's header and payload parsed (jose), the proof key's cache id
   * stringified (lib/jwt.ts, from jose's key callback), the envelope, the outcome line. Not
   * counted: the token's verification, the proof key's import and thumbprint, the token's `ath`
   * digest (each cached per isolate).
   */
  meDpop: {
    calls: { "KEYS.admit": 1, "PROOFS.record": 1, "METRICS.writeDataPoint": 1 },
    bytes: { "KEYS.admit": 710, "PROOFS.record": 75 },
    sql: { KeyObject: { statements: 1, rowsWritten: 1 }, ProofObject: { statements: 1, rowsWritten: 2 } },
    crypto: {
      "verify jose": 1,
      "digest src/lib/crypto.ts<src/auth/gate.ts": 1,
      "timingSafeEqual src/lib/crypto.ts<src/ratelimit/admission.ts": 1,
    },
    json: { "parse jose": 2, "stringify src/lib/jwt.ts<jose": 1, "stringify hono": 1, "stringify src/log.ts": 1 },
    sameData: 0,
  },
  /**
   * GET /v1/me for a key whose organization has a shared quota (per_day). calls: admit, and from
   * inside it the key's object's `take` at the organization's QuotaObject; the data point. sql: the
   * key's windows row, the quota's windows row. crypto and json: as a Bearer /v1/me.
   */
  meQuota: {
    calls: { "KEYS.admit": 1, "KeyObject>QUOTAS.take": 1, "METRICS.writeDataPoint": 1 },
    bytes: { "KEYS.admit": 925, "KeyObject>QUOTAS.take": 390 },
    sql: { KeyObject: { statements: 1, rowsWritten: 1 }, QuotaObject: { statements: 1, rowsWritten: 1 } },
    crypto: { "digest src/lib/crypto.ts<src/auth/gate.ts": 1, "timingSafeEqual src/lib/crypto.ts<src/ratelimit/admission.ts": 1 },
    json: { "stringify hono": 1, "stringify src/log.ts": 1 },
    sameData: 0,
  },
  /**
   * POST /v1/graphql `{ viewer { organizationId } }`, Bearer token. calls: admit, the GraphQL
   * engine's `run` (Workers RPC over the GRAPHQL service binding; the backend goes by reference),
   * the data point. sql: the windows row. crypto: as a Bearer /v1/me. json: the body parsed (once,
   * for the cost check and the reply), the engine's answer stringified (graphql-worker.ts, sent as
   * text, not serialized again), the outcome line.
   */
  graphqlViewer: {
    calls: { "KEYS.admit": 1, "GRAPHQL.run": 1, "METRICS.writeDataPoint": 1 },
    bytes: { "KEYS.admit": 710, "GRAPHQL.run": 846 },
    sql: { KeyObject: { statements: 1, rowsWritten: 1 } },
    crypto: { "digest src/lib/crypto.ts<src/auth/gate.ts": 1, "timingSafeEqual src/lib/crypto.ts<src/ratelimit/admission.ts": 1 },
    json: { "parse src/http/body.ts": 1, "stringify src/graphql-worker.ts": 1, "stringify src/log.ts": 1 },
    sameData: 0,
  },
} satisfies Record<string, Measured>;

type Fn = (...args: unknown[]) => unknown;

interface Measured {
  calls: Record<string, number>;
  bytes: Record<string, number>;
  sql: Record<string, { statements: number; rowsWritten: number }>;
  crypto: Record<string, number>;
  json: Record<string, number>;
  sameData: number;
}

// The meter's own serializations go through these, captured before any spy is installed.
const stringify = JSON.stringify.bind(JSON);

/** Counts only while a measured request runs. */
let metering = false;
let measured: Measured = fresh();
/** Cursors of the measured request's statements, whose rowsWritten is read once it is done. */
let cursors: { object: string; cursor: SqlStorageCursor<Record<string, SqlStorageValue>> }[] = [];
/** The JSON texts seen in the measured request (stringify output, parse input). */
let texts = new Set<string>();

function fresh(): Measured {
  return { calls: {}, bytes: {}, sql: {}, crypto: {}, json: {}, sameData: 0 };
}

const bump = (table: Record<string, number>, key: string, by = 1) => {
  table[key] = (table[key] ?? 0) + by;
};

/** The JSON size of an RPC argument or result; an RpcTarget (passed by reference) as a marker. */
function sizeOf(value: unknown): number {
  const text = stringify(value, (_k, v: unknown) => (v instanceof RpcTarget ? "[RpcTarget]" : v));
  return text === undefined ? 0 : new TextEncoder().encode(text).byteLength;
}

/** The test harness's own modules: vitest, its module runner, the pool's Durable Object wrapper and its socket. */
const HARNESS = new Set(["vitest", "vite", "@vitest/spy", "@vitest/runner", "@vitest/utils", "tinyspy", "@cloudflare/vitest-plugin"]);

/** The module of a stack frame: `src/...` of this project, a package's name, "harness", or null (a native frame). */
function moduleOf(frame: string): string | null {
  // This file's meter and vitest's spy wrapper stand between the call and its caller.
  if (frame.includes("hot-path-budget.test") || /vitest\/dist\/chunks\/spy\./.test(frame)) return null;
  const pkg = /node_modules\/((?:@[\w.-]+\/)?[\w.-]+)\//.exec(frame);
  if (pkg?.[1]) return HARNESS.has(pkg[1]) ? "harness" : pkg[1];
  // The last `/src/` of the path: the project's, wherever it is checked out (CI clones elsewhere).
  const src = /.*\/(src\/[\w/.-]+\.ts)/.exec(frame);
  if (src?.[1]) return src[1];
  if (frame.includes("<anonymous>") || frame.includes("native")) return null;
  return "harness";
}

/**
 * Which module made the call, from the stack: the first frame that is not this file's or native;
 * a helper of src/lib/ is named with the module that called it (`src/lib/crypto.ts<src/auth/gate.ts`).
 * "harness" for the test pool's own work (its Durable Object wrapper, its socket, source maps), which
 * production does not do and which is not counted.
 */
function caller(): string {
  const modules = (new Error().stack ?? "")
    .split("\n")
    .slice(1)
    .map(moduleOf)
    .filter((m): m is string => m !== null);
  const first = modules[0] ?? "harness";
  if (!first.startsWith("src/lib/")) return first;
  const by = modules.find((m) => !m.startsWith("src/lib/"));
  return by === undefined || by === "harness" ? first : `${first}<${by}`;
}

/** A call through a metered RPC endpoint: counted, and its arguments and awaited result sized. */
async function meteredCall(label: string, target: Record<string, Fn>, method: string, args: unknown[]): Promise<unknown> {
  if (metering) bump(measured.calls, label);
  const argBytes = metering ? sizeOf(args) : 0;
  // Called as a method: an RPC stub's members are not plain functions (`.apply` would be a remote call).
  const result = await Reflect.apply(target[method] as Fn, target, args);
  if (metering) bump(measured.bytes, label, argBytes + sizeOf(result));
  return result;
}

/** A Durable Object namespace whose stubs count their calls as `${prefix}${name}.method`. */
function meteredNamespace(prefix: string, name: string, ns: DurableObjectNamespace): DurableObjectNamespace {
  return new Proxy(ns, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (prop !== "get") return typeof value === "function" ? (value as Fn).bind(target) : value;
      return (...args: Parameters<DurableObjectNamespace["get"]>) => {
        const stub = target.get(...args) as unknown as Record<string, Fn>;
        return new Proxy(stub, {
          get(s, method) {
            if (typeof method !== "string" || method === "then" || method === "id" || method === "name") return Reflect.get(s, method);
            return (...a: unknown[]) => meteredCall(`${prefix}${name}.${method}`, s, method, a);
          },
        });
      };
    },
  });
}

/** Any other binding: the named methods counted (and sized, when `sized`). */
function meteredBinding<T extends object>(name: string, binding: T, methods: string[], sized: boolean): T {
  return new Proxy(binding, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof prop === "string" && methods.includes(prop)) {
        return (...a: unknown[]) => {
          const self = target as unknown as Record<string, Fn>;
          if (sized) return meteredCall(`${name}.${prop}`, self, prop, a);
          if (metering) bump(measured.calls, `${name}.${prop}`);
          return Reflect.apply(self[prop] as Fn, target, a);
        };
      }
      return typeof value === "function" ? (value as Fn).bind(target) : value;
    },
  });
}

const NAMESPACES = ["KEYS", "ORGS", "WEBHOOKS", "ENDPOINTS", "DIRECTORY", "QUOTAS", "PROOFS"] as const;

function meteredEnv(real: Env, prefix: string): Env {
  const bindings = { ...real } as Env & Record<string, unknown>;
  for (const name of NAMESPACES) {
    bindings[name] = meteredNamespace(prefix, name, real[name] as unknown as DurableObjectNamespace) as never;
  }
  bindings.KV = meteredBinding(`${prefix}KV`, real.KV, ["get", "getWithMetadata", "put", "delete", "list"], false);
  bindings.METRICS = meteredBinding(`${prefix}METRICS`, real.METRICS, ["writeDataPoint"], false);
  bindings.GRAPHQL = meteredBinding(`${prefix}GRAPHQL`, real.GRAPHQL, ["run", "cost", "fetch"], true);
  return bindings;
}

/**
 * Meters a live object: its `env` (the calls it makes) and its `ctx.storage.sql.exec` (each
 * statement, and its cursor for rowsWritten), on the instance itself, so that it holds for every
 * request this instance serves; then checks that the object's own `this.ctx.storage.sql` is the
 * wrapped one (the same SqlStorage on every access).
 */
async function meterObject(label: string, stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>): Promise<void> {
  await runInDurableObject(stub, (instance: unknown) => {
    const self = instance as { env: Env; ctx: DurableObjectState };
    Object.defineProperty(instance, "env", { value: meteredEnv(self.env, `${label}>`), configurable: true });
    const sql = self.ctx.storage.sql as unknown as Record<string, Fn> & { __metered?: boolean };
    if (sql.__metered) return;
    const exec = (sql.exec as Fn).bind(sql);
    sql.exec = (...args: unknown[]) => {
      const cursor = exec(...args) as SqlStorageCursor<Record<string, SqlStorageValue>>;
      if (metering) {
        const entry = measured.sql[label] ?? { statements: 0, rowsWritten: 0 };
        entry.statements++;
        measured.sql[label] = entry;
        cursors.push({ object: label, cursor });
      }
      return cursor;
    };
    sql.__metered = true;
  });
  // The wrapper is what the object's own code reaches through this.ctx.storage.sql.
  await runInDurableObject(stub, (instance: unknown) => {
    const self = instance as { ctx: DurableObjectState };
    expect((self.ctx.storage.sql as unknown as { __metered?: boolean }).__metered).toBe(true);
  });
}

const spies: MockInstance[] = [];

/** Spies on `owner[name]`, recording each call made while metering through `onCall`. */
function tap(owner: object, name: string, onCall: (args: unknown[], result: unknown) => void): void {
  const target = owner as Record<string, Fn>;
  const original = target[name] as Fn;
  spies.push(
    vi.spyOn(target, name).mockImplementation(function (this: unknown, ...args: unknown[]) {
      const result = original.apply(this, args);
      if (metering) onCall(args, result);
      return result;
    }),
  );
}

function seen(text: unknown): void {
  if (typeof text !== "string") return;
  if (texts.has(text)) measured.sameData++;
  else texts.add(text);
}

beforeAll(() => {
  for (const method of ["digest", "sign", "verify", "importKey", "timingSafeEqual"]) {
    tap(crypto.subtle, method, () => {
      const by = caller();
      if (by !== "harness") bump(measured.crypto, `${method} ${by}`);
    });
  }
  tap(JSON, "stringify", (_args, result) => {
    const by = caller();
    if (by === "harness") return;
    bump(measured.json, `stringify ${by}`);
    seen(result);
  });
  tap(JSON, "parse", (args) => {
    const by = caller();
    if (by === "harness") return;
    bump(measured.json, `parse ${by}`);
    seen(args[0]);
  });
});

afterAll(() => {
  for (const spy of spies) spy.mockRestore();
});

/**
 * Runs one request through the app with `bindings` and the fixed clock `nowMs`, until its
 * waitUntil work is done; `metered` counts everything it causes. The clock is fixed so that every
 * request of a test falls in the same second and hour of the key's windows: the hour's traffic row
 * (written once when an hour ends) and the lengths of the numbers crossing RPC do not depend on
 * when the test runs.
 */
async function run(
  bindings: Env,
  nowMs: number,
  path: string,
  init: RequestInit,
  metered = false,
): Promise<{ res: Response; measured: Measured }> {
  measured = fresh();
  cursors = [];
  texts = new Set();
  metering = metered;
  let res: Response;
  try {
    const ctx = createExecutionContext();
    res = await createApp({ now: () => nowMs }).fetch(new Request(`${BASE}${path}`, init), bindings, ctx);
    res = new Response(await res.arrayBuffer(), res);
    await waitOnExecutionContext(ctx);
  } finally {
    metering = false;
  }
  for (const { object, cursor } of cursors) (measured.sql[object] as { rowsWritten: number }).rowsWritten += cursor.rowsWritten;
  return { res, measured };
}

const keyStub = async (t: Tenant) => env.KEYS.get(env.KEYS.idFromName(await sha256Hex(t.apiKey)));
const quotaStub = (t: Tenant) => env.QUOTAS.get(env.QUOTAS.idFromName(t.orgId));

/** A proof issued at the test's fixed clock. */
const proofAt = (pair: KeyPair, htm: string, htu: string, nowMs: number, extra: Record<string, unknown> = {}) =>
  dpopProof(pair, htm, htu, extra, nowMs);

interface Scenario {
  path: string;
  /** The request, made anew for each send (a DPoP proof is used once); made before metering starts. */
  request: () => Promise<RequestInit>;
}

/** Issues a token (unmetered) through `bindings`; `dpop` binds it to that key pair. */
async function tokenOf(bindings: Env, nowMs: number, t: Tenant, dpop?: KeyPair): Promise<string> {
  const init = tokenRequest(t);
  if (dpop !== undefined) {
    init.headers = { ...(init.headers as Record<string, string>), DPoP: await proofAt(dpop, "POST", `${BASE}/v1/oauth`, nowMs) };
  }
  const { res } = await run(bindings, nowMs, "/v1/oauth", init);
  const json = (await res.json()) as { data: { access_token: string; token_type: string } };
  expect(res.status, JSON.stringify(json)).toBe(200);
  expect(json.data.token_type).toBe(dpop === undefined ? "Bearer" : "DPoP");
  return json.data.access_token;
}

const SCENARIOS: Record<keyof typeof BUDGET, (bindings: Env, nowMs: number, t: Tenant) => Promise<Scenario>> = {
  token: async (_bindings, _nowMs, t) => ({ path: "/v1/oauth", request: async () => tokenRequest(t) }),
  tokenDpop: async (_bindings, nowMs, t) => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    return {
      path: "/v1/oauth",
      request: async () => {
        const init = tokenRequest(t);
        const proof = await proofAt(pair, "POST", `${BASE}/v1/oauth`, nowMs);
        return { ...init, headers: { ...(init.headers as Record<string, string>), DPoP: proof } };
      },
    };
  },
  meBearer: async (bindings, nowMs, t) => {
    const bearer = await tokenOf(bindings, nowMs, t);
    return { path: "/v1/me", request: async () => authed(t, bearer) };
  },
  meDpop: async (bindings, nowMs, t) => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const token = await tokenOf(bindings, nowMs, t, pair);
    const ath = await athOf(token);
    return {
      path: "/v1/me",
      request: async () => ({
        headers: {
          "x-api-key": t.apiKey,
          Authorization: `DPoP ${token}`,
          DPoP: await proofAt(pair, "GET", `${BASE}/v1/me`, nowMs, { ath }),
        },
      }),
    };
  },
  meQuota: async (bindings, nowMs, t) => {
    await admin("PATCH", `/organizations/${t.orgId}`, { limits: { per_day: 1000 } });
    const bearer = await tokenOf(bindings, nowMs, t);
    return { path: "/v1/me", request: async () => authed(t, bearer) };
  },
  graphqlViewer: async (bindings, nowMs, t) => {
    const bearer = await tokenOf(bindings, nowMs, t);
    const body = JSON.stringify({ query: "{ viewer { organizationId } }" });
    return {
      path: "/v1/graphql",
      request: async () => authed(t, bearer, { method: "POST", headers: { "Content-Type": "application/json" }, body }),
    };
  },
};

/**
 * A tenant and a scenario ready to measure: one request sent before the objects are metered (it
 * creates them and fills this isolate's caches), the objects metered, then a warm-up request that
 * must already be seen by the meters in the objects (so the wrapping holds across requests) and
 * that pays what a request does once a minute (the "last used" note) or once per token or key.
 */
async function prepared(name: keyof typeof BUDGET) {
  const t = await createTenant();
  const nowMs = Date.now();
  const bindings = meteredEnv(env, "");
  const scenario = await SCENARIOS[name](bindings, nowMs, t);
  expect((await run(bindings, nowMs, scenario.path, await scenario.request())).res.status).toBe(200);
  const key = await keyStub(t);
  await meterObject("KeyObject", key);
  if (name === "meQuota") await meterObject("QuotaObject", quotaStub(t));
  // A proof's id goes to the ProofObject its hash names: every one of them is metered.
  if (name === "meDpop" || name === "tokenDpop") {
    for (let i = 0; i < PROOF_SHARDS; i++) await meterObject("ProofObject", env.PROOFS.get(env.PROOFS.idFromName(proofObjectName(i))));
  }
  const warm = await run(bindings, nowMs, scenario.path, await scenario.request(), true);
  expect(warm.res.status).toBe(200);
  expect(warm.measured.sql.KeyObject?.statements).toBeGreaterThan(0);
  const send = async () => {
    const init = await scenario.request();
    const { res, measured } = await run(bindings, nowMs, scenario.path, init, true);
    expect(res.status, await res.clone().text()).toBe(200);
    return measured;
  };
  return { t, key, send };
}

describe("the hot path's budget (issue 33, item 1): one request after a warm-up", () => {
  it.each(Object.keys(BUDGET) as (keyof typeof BUDGET)[])("%s", async (name) => {
    const { send } = await prepared(name);
    expect(await send()).toEqual(BUDGET[name]);
  });
});

describe("the meters", () => {
  it("see what code inside the Durable Objects does: their globals are this isolate's", async () => {
    const { send } = await prepared("meQuota");
    const m = await send();
    // crypto.subtle.timingSafeEqual is called by the admission's core (answersTo) inside the
    // KeyObject: the spy on this isolate's crypto.subtle saw it, so objects and tests share globals.
    expect(m.crypto["timingSafeEqual src/lib/crypto.ts<src/ratelimit/admission.ts"]).toBe(1);
    // The nested call and both objects' statements went through the meters on the live instances.
    expect(m.calls["KeyObject>QUOTAS.take"]).toBe(1);
    expect(m.sql.QuotaObject).toEqual({ statements: 1, rowsWritten: 1 });
  });

  /**
   * Each assertion fails when one more call, statement, row or serialization is added: here they
   * are added, test-side, by an `admit` on the live KeyObject instance that runs the real one and
   * then does one extra thing; the budget's comparison must then fail, by exactly that much.
   */
  it.each([
    [
      "one more row written",
      (self: LiveKey) => self.ctx.storage.sql.exec("UPDATE windows SET second_count = second_count"),
      (m: Measured) => expect(m.sql.KeyObject).toEqual({ statements: 2, rowsWritten: 2 }),
    ],
    [
      "one more Durable Object call",
      async (self: LiveKey, t: Tenant) => self.env.QUOTAS.get(self.env.QUOTAS.idFromName(t.orgId)).usage({ per_day: 1 }, Date.now()),
      (m: Measured) => expect(m.calls["KeyObject>QUOTAS.usage"]).toBe(1),
    ],
    [
      // Through a production helper: a serialization is counted by the module that makes it.
      "one more serialization",
      (self: LiveKey) => canonicalJson(self.ctx.id.toString()),
      (m: Measured) => expect(m.json["stringify src/lib/json.ts"]).toBe(1),
    ],
  ] as const)("fail on %s", async (_name, extra, delta) => {
    const { t, key, send } = await prepared("meBearer");
    // The pool calls only prototype methods over RPC: the instance gets a prototype of its own.
    let original: object | null = null;
    await runInDurableObject(key, (instance: unknown) => {
      const self = instance as LiveKey;
      original = Object.getPrototypeOf(instance) as object;
      const real = (original as Record<string, Fn>).admit as Fn;
      const injected = Object.create(original, {
        admit: {
          value: async (...args: unknown[]) => {
            const answer = await Reflect.apply(real, instance, args);
            await extra(self, t);
            return answer;
          },
        },
      }) as object;
      Object.setPrototypeOf(instance, injected);
    });
    try {
      const m = await send();
      delta(m);
      expect(() => expect(m).toEqual(BUDGET.meBearer)).toThrow();
    } finally {
      await runInDurableObject(key, (instance: unknown) => {
        Object.setPrototypeOf(instance, original);
      });
    }
    // Without it, the same request is back on budget.
    expect(await send()).toEqual(BUDGET.meBearer);
  });
});

interface LiveKey {
  env: Env;
  ctx: DurableObjectState;
}
