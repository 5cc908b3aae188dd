/**
 * Bench-only entry (bench/decompose.mjs, issue 33): keyway's own Worker with "lanes" that stop a
 * `GET /v1/me` at successive depths, chosen per request by the `x-bench-lane` header, so that
 * where keyway's cost beyond the design floor goes can be measured in ONE runtime process, each
 * lane interleaved with the others. Across two processes (the bench's floor Worker beside keyway)
 * the rounds of this 2-core VM spread by ±15 %, too much to see a tenth of a millisecond; within
 * one process, lanes a few seconds apart share everything but the work they differ by.
 *
 * - `floor`: the design floor inside keyway: the key's SHA-256, one RPC to the key's own object
 *   that upserts one row (a table of its own) and returns a number, a two-byte answer;
 * - `payload`: the floor with an admission's input and answer as its RPC's payload (the same
 *   upsert), so the RPC's payload costs apart from the admission's logic;
 * - `gate`: the credential checks as `/v1/me` runs them (auth/tokens.ts `authenticateRequest`:
 *   the token, the key, the one `KeyObject.admit` call), then a two-byte answer;
 * - `direct`: the gate, then `/v1/me`'s view and envelope written straight into one Response,
 *   no router or middleware;
 * - `framework`: the direct lane's work as the one route of a Hono app with keyway's router,
 *   behind as many pass-through middleware layers as a `/v1` request meets in keyway's app, so
 *   that Hono's own cost (router, context, compose) is measured apart from what keyway's
 *   middleware does in those layers;
 * - anything else (no header): keyway's app as deployed (Hono, every middleware).
 *
 * Never deployed: `wrangler dev bench/lanes/worker.ts` with keyway's configs replaces only `main`.
 * The lanes compose keyway's modules; they do not change them.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { createApp } from "../../src/app";
import type { Admitted } from "../../src/auth/gate";
import { authenticateRequest } from "../../src/auth/tokens";
import { depsFromEnv } from "../../src/deps";
import { envelope } from "../../src/http/envelope";
import { API_HEADERS, NO_SNIFF } from "../../src/http/middleware/headers";
import { REQUEST_ID_HEADER } from "../../src/http/middleware/observe";
import { meAnswer } from "../../src/http/routes/me";
import keyway from "../../src/index";
import { sha256Hex } from "../../src/lib/crypto";
import { type Admission, type AdmitInput, KeyObject as Key } from "../../src/objects/key";
import { rateLimitHeaders } from "../../src/ratelimit/service";

export { DirectoryObject, EndpointObject, OrganizationObject, ProofObject, QuotaObject, WebhookObject } from "../../src/index";

/** keyway's KeyObject with the floor's one-row upsert beside it (the floor Worker's `hit`). */
export class KeyObject extends Key {
  floorHit(now: number): number {
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS bench_floor (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL)");
    this.ctx.storage.sql.exec("INSERT INTO bench_floor (one, n) VALUES (1, 1) ON CONFLICT (one) DO UPDATE SET n = n + 1");
    return now;
  }

  /** The floor's upsert with an admission's payload both ways: what the RPC carries costs apart. */
  floorPayload(input: AdmitInput): Admission {
    this.floorHit(input.now);
    const window = (limit: number) => ({ limit, used: 1, remaining: limit - 1, resetAt: input.now + 1000 });
    return {
      status: "active",
      keyId: "key_00000000000000000000000000",
      organizationId: "org_00000000000000000000000000",
      decision: { allowed: true, exceeded: null, second: window(1000), day: window(100_000), now: input.now, cost: 1 },
      clientRevoked: false,
      clientStale: false,
      tokenRevoked: false,
      inspectedTokenRevoked: false,
    };
  }
}

export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname === SEQUENTIAL_PATH && request.method === "POST") return sequential(request, env, ctx);
    return inLane(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;

/**
 * `POST /__bench/sequential` `{ lane, n, pairs, tokenBody }`: `n` requests of `lane`, one after the
 * other, inside this one invocation (each its own `GET /v1/me` Request, the keys and tokens of
 * `pairs` in turn; in the `token` lane, keyway's app answering `POST /v1/oauth` with `tokenBody`
 * and each key in turn), answered with the wall time they took. No HTTP, no dev proxy, no load
 * generator and no concurrency: what is left is the Worker's and its objects' own work. The app
 * lane's median ratio to the floor lane measured 0.61 to 0.68 over eight runs of 27 November,
 * where the HTTP lanes' measured 0.79 to 0.93 over six.
 * `Date.now()` advances across each request's I/O (the RPC), so the total is exact to 1 ms.
 */
const SEQUENTIAL_PATH = "/__bench/sequential";
async function sequential(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const job = (await request.json()) as { lane: string; n: number; pairs: { apiKey: string; token: string }[]; tokenBody: string };
  const me = new URL("/v1/me", request.url).href;
  const oauth = new URL("/v1/oauth", request.url).href;
  const tokenBytes = new TextEncoder().encode(job.tokenBody).byteLength;
  const started = Date.now();
  const failed: number[] = [];
  for (let i = 0; i < job.n; i++) {
    const pair = job.pairs[i % job.pairs.length];
    if (pair === undefined) break;
    const req =
      job.lane === "token"
        ? new Request(oauth, {
            method: "POST",
            // As over HTTP, where the client's Content-Length frames the body (http/body.ts reads it in one go).
            headers: { "x-api-key": pair.apiKey, "content-type": "application/json", "content-length": String(tokenBytes) },
            body: job.tokenBody,
          })
        : new Request(me, {
            headers: {
              "x-api-key": pair.apiKey,
              authorization: `Bearer ${pair.token}`,
              ...(job.lane === "app" ? {} : { "x-bench-lane": job.lane }),
            },
          });
    const res = await inLane(req, env, ctx);
    await res.arrayBuffer();
    if (res.status !== 200) failed.push(res.status);
  }
  return Response.json({ ms: Date.now() - started, failed });
}

/** One request in the lane its `x-bench-lane` header names (keyway's app without one). */
async function inLane(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const lane = request.headers.get("x-bench-lane");
  if (lane === null || request.method !== "GET" || !request.url.endsWith("/v1/me")) return keyway.fetch(request, env, ctx);
  const presented = request.headers.get("x-api-key") ?? undefined;
  if (lane === "floor" || lane === "payload") {
    // The object a first secret names (gate.ts: its hash), as keyway's gate reaches it.
    const hash = await sha256Hex(presented ?? "");
    const object = env.KEYS.get(env.KEYS.idFromName(hash)) as unknown as DurableObjectStub<KeyObject>;
    if (lane === "floor") await object.floorHit(Date.now());
    else {
      // An admission's input as the gate sends it for a Bearer read (gate.ts `admit`).
      await object.floorPayload({
        now: Date.now(),
        defaults: { per_second: 1, per_day: 1000 },
        secretHash: hash,
        clientId: "cli_00000000000000000000000000",
        tokenId: "tok_00000000000000000000000000",
      });
    }
    return new Response("ok");
  }
  if (lane === "framework") return framework.fetch(request, env, ctx);
  return direct(request, env, ctx, lane === "gate");
}

/**
 * The `framework` lane's app: keyway's router (app.ts), then one pass-through layer for each
 * path-wide middleware a `/v1/me` request meets in keyway's own app (counted from its routes:
 * five on 27 November, noSniff, observe, apiHeaders, provideDeps and requireCredentials), then the
 * route, which does the direct lane's work.
 */
const middlewareOfMe = createApp().routes.filter(
  (r) => r.method === "ALL" && r.path.endsWith("*") && "/v1/me".startsWith(r.path.slice(0, -1)),
).length;
if (middlewareOfMe === 0) throw new Error("no path-wide middleware found on /v1/me: the framework lane would measure nothing");
const framework = new Hono<{ Bindings: Env }>({ router: new RegExpRouter() });
const pass: MiddlewareHandler = async (_c, next) => {
  await next();
};
framework.use("*", ...Array.from({ length: middlewareOfMe }, () => pass));
framework.get("/v1/me", (c) => direct(c.req.raw, c.env, c.executionCtx as ExecutionContext, false));

/** The gate, then (unless `gateOnly`) the route's own answer and the headers its middleware would add. */
async function direct(request: Request, env: Env, ctx: ExecutionContext, gateOnly: boolean): Promise<Response> {
  const presented = request.headers.get("x-api-key") ?? undefined;
  const deps = depsFromEnv(env, Date.now, (work) => ctx.waitUntil(work));
  let admitted: Admitted | undefined;
  const principal = await authenticateRequest(
    deps,
    presented,
    {
      authorization: request.headers.get("authorization") ?? undefined,
      dpop: request.headers.get("dpop"),
      method: "GET",
      url: request.url,
      issuer: new URL(request.url).origin,
    },
    (a) => {
      admitted = a;
    },
  );
  if (gateOnly || admitted === undefined) return new Response("ok");
  const body = envelope(200, meAnswer(principal, admitted.decision, deps.now()), { self: { href: request.url } });
  return new Response(JSON.stringify(body), {
    headers: {
      "Content-Type": "application/json",
      ...API_HEADERS,
      ...NO_SNIFF,
      [REQUEST_ID_HEADER]: crypto.randomUUID(),
      ...rateLimitHeaders(admitted.decision),
    },
  });
}
