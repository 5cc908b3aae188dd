/**
 * The design's floor (issue 15): the least a keyway `/v1` request can cost, since every one makes
 * exactly one Durable Object call that writes one SQLite row (the API key's object counting it).
 * This Worker does only that: each request makes one RPC to one object (two in turn, as keyway's
 * bench spreads its load over two keys), which upserts one row, and answers a two-byte body. It runs under `wrangler dev` exactly as keyway does in the bench
 * (same compatibility date and flags, same observability settings, state on the same tmpfs), so
 * a scenario's ratio to it is what keyway adds beyond what its design requires.
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

export default {
  async fetch(_request: Request, env: FloorEnv): Promise<Response> {
    ids ??= Array.from({ length: OBJECTS }, (_, i) => env.COUNTER.idFromName(`floor-${i}`));
    const id = ids[turn++ % OBJECTS] as DurableObjectId;
    await env.COUNTER.get(id).hit(Date.now());
    return new Response("ok");
  },
} satisfies ExportedHandler<FloorEnv>;
