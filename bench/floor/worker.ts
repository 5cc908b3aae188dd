/**
 * The design's floor (issue 15): the least a keyway `/v1` request can cost, since every one makes
 * exactly one Durable Object call that writes one SQLite row (the API key's object counting it).
 * This Worker does only that: each request makes one RPC to one object (two in turn, as keyway's
 * bench spreads its load over two keys), which upserts one row, and answers a two-byte body. It runs under `wrangler dev` exactly as keyway does in the bench
 * (same compatibility date and flags, same observability settings, state on the same tmpfs), so
 * a scenario's ratio to it is what keyway adds beyond what its design requires.
 *
 * Its "answer floor" (issue 33): under `/__answer/<path>`, the same call, then a copy of what keyway
 * answered that request (status, header fields, body), registered by the bench before it measures
 * (`PUT /__bench/answers`). Against it, a scenario's ratio leaves out what carrying its answer
 * costs (the dev proxy and the load generator parse every field and byte), which the two-byte floor
 * charges to keyway; the copy is static, so building it costs nothing.
 */
import { DurableObject } from "cloudflare:workers";

interface FloorEnv {
  COUNTER: DurableObjectNamespace<Counter>;
}

export class Counter extends DurableObject<FloorEnv> {
  constructor(ctx: DurableObjectState, env: FloorEnv) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS counts (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL)");
  }

  hit(now: number): number {
    this.ctx.storage.sql.exec("INSERT INTO counts (one, n) VALUES (1, 1) ON CONFLICT (one) DO UPDATE SET n = n + 1");
    return now;
  }
}

// keyway's bench spreads every scenario's requests over two API keys, that is two objects
// (bench/lib.mjs, KEYS), so the floor spreads its requests over two objects, in turn.
const OBJECTS = 2;
let ids: DurableObjectId[] | undefined;
let turn = 0;

/** A recorded answer: keyway's status, header fields and body for one method and path. */
interface Answer {
  status: number;
  headers: [string, string][];
  body: string;
}
const ANSWER_PREFIX = "/__answer";
// Per isolate: a restarted Worker has none, and answers 500 until the bench registers them again.
let answers = new Map<string, Answer>();

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    // The design floor's own requests hold no "/__": they parse nothing for the answer floor.
    const path = request.url.includes("/__") ? new URL(request.url).pathname : null;
    if (path === "/__bench/answers" && request.method === "PUT") {
      answers = new Map(Object.entries((await request.json()) as Record<string, Answer>));
      return new Response(null, { status: 204 });
    }
    ids ??= Array.from({ length: OBJECTS }, (_, i) => env.COUNTER.idFromName(`floor-${i}`));
    const id = ids[turn++ % OBJECTS] as DurableObjectId;
    await env.COUNTER.get(id).hit(Date.now());
    if (path === null || !path.startsWith(`${ANSWER_PREFIX}/`)) return new Response("ok");
    const answer = answers.get(`${request.method} ${path.slice(ANSWER_PREFIX.length)}`);
    if (answer === undefined) return new Response("no answer registered", { status: 500 });
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  },
} satisfies ExportedHandler<FloorEnv>;
