/**
 * A delivery's lifecycle (src/objects/endpoints/lifecycle.ts): every move tried from every place,
 * against the EndpointObject's own schema over an in-memory SQLite, so the table is what the
 * statement admits; the table as docs/webhooks.md shows it; and no statement elsewhere in src/
 * changes a delivery's place.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Db } from "../../src/objects/db";
import {
  edges,
  IllegalMove,
  MOVES,
  type Move,
  move,
  moveOne,
  PLACE_SQL,
  PLACES,
  type Place,
  placeAfter,
} from "../../src/objects/endpoints/lifecycle";
import { MIGRATIONS } from "../../src/objects/endpoints/schema";
import { migrate } from "../../src/objects/sql";
import { MemoryStorage } from "./memory-storage";

function database(): Db {
  const storage = new MemoryStorage();
  migrate(storage, MIGRATIONS);
  return new Db(storage as unknown as DurableObjectStorage);
}

function insertAt(db: Db, id: string, place: Place): void {
  const [status, state] = place.includes("/") ? place.split("/") : [place, null];
  db.run(
    `INSERT INTO deliveries (id, seq, event_id, event_type, body, status, series, series_attempts, attempts, due_ms, state,
      created_ms, created_at, updated_at) VALUES (?, 1, 'evt', 'order.created', '{}', ?, 1, 0, 0, 0, ?, 0, '', '')`,
    id,
    status ?? null,
    state === "kept" ? null : (state ?? null),
  );
}

const placeOf = (db: Db, id: string): string | null => db.value<string>(`SELECT ${PLACE_SQL} FROM deliveries WHERE id = ?`, id);

describe("a delivery's lifecycle", () => {
  it("moves a row only along the table: every move from every place, against the endpoint object's schema", () => {
    const db = database();
    let moved = 0;
    let refused = 0;
    for (const from of PLACES) {
      for (const name of Object.keys(MOVES) as Move[]) {
        const id = `d_${from}_${name}`;
        insertAt(db, id, from);
        const to = placeAfter(name, from);
        const ids = move(db, name, { id }, {}, 1_000);
        if (to === null) {
          expect(ids, `${name} from ${from}`).toEqual([]);
          expect(placeOf(db, id)).toBe(from);
          expect(() => moveOne(db, name, id, {}, 1_000)).toThrow(IllegalMove);
          refused++;
        } else {
          expect(ids, `${name} from ${from}`).toEqual([id]);
          expect(placeOf(db, id), `${name} from ${from}`).toBe(to);
          moved++;
        }
      }
    }
    expect(moved).toBe(edges().length);
    expect(moved + refused).toBe(PLACES.length * Object.keys(MOVES).length);
  });

  it("a refused move inside a transaction rolls back the writes before it", () => {
    const db = database();
    insertAt(db, "d1", "delivered");
    expect(() =>
      db.txn(() => {
        db.run("UPDATE deliveries SET attempts = 7 WHERE id = 'd1'");
        moveOne(db, "start", "d1", {}, 0);
      }),
    ).toThrow(IllegalMove);
    expect(db.value<number>("SELECT attempts FROM deliveries WHERE id = 'd1'")).toBe(0);
  });

  it("the ends are final within a series: only a re-send leaves delivered or failed, and nothing leaves a polled row but its read", () => {
    for (const end of ["delivered", "failed"] as const) {
      expect(edges().filter((e) => e.from === end)).toEqual([{ from: end, move: "resend", to: "pending/waiting" }]);
    }
    expect(edges().filter((e) => e.from === "pending/kept")).toEqual([{ from: "pending/kept", move: "read", to: "delivered" }]);
    // Nothing reaches pending from retrying within a series, and nothing sends a row back to kept.
    expect(edges().filter((e) => e.from.startsWith("retrying") && e.to.startsWith("pending"))).toEqual([]);
    expect(edges().filter((e) => e.to === "pending/kept")).toEqual([]);
  });

  it("is the table docs/webhooks.md shows", () => {
    const doc = readFileSync("docs/webhooks.md", "utf8");
    for (const [name, rule] of Object.entries(MOVES)) {
      const to: { status?: string; state: string | null } = rule.to;
      const row = `| \`${name}\` | ${rule.from.map((p) => `\`${p}\``).join(", ")} | ${to.status ?? "(kept)"} | ${to.state ?? "(none)"} |`;
      expect(doc, `docs/webhooks.md: the row of ${name}`).toContain(row);
    }
  });

  it("no statement outside lifecycle.ts changes a delivery's status or state", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith(".ts") && !path.endsWith("lifecycle.ts")) files.push(path);
      }
    };
    walk("src");
    const offenders = files.filter((f) => /UPDATE deliveries SET[^`"]*\b(status|state)\s*=/.test(readFileSync(f, "utf8")));
    expect(offenders).toEqual([]);
  });
});
