/**
 * Rules about the source that keep KV a derived cache (docs/storage.md): its only entries are
 * written by objects/lookup.ts, which only the organization's object calls after its changes
 * commit (its propagation, objects/org/propagation.ts), and nothing else in src/ reads or writes KV. A new `kv.get`, `kv.put` or `kv.delete`
 * elsewhere fails here, so a read-modify-write of KV cannot creep back in unnoticed.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./server";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

const files = sources(join(ROOT, "src")).map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, "utf8") }));

describe("KV", () => {
  it("is read and written only by the lookup module", () => {
    const users = files.filter((f) => /\b(kv|KV)\.(get|put|delete|list|getWithMetadata)\(/.test(f.text)).map((f) => f.path);
    expect(users.sort()).toEqual(["src/objects/lookup.ts"]);
  });

  it("of identity entries are made by the organization's object only", () => {
    const callers = files.filter((f) => /\b(writeCredentialLookup|deleteCredentialLookup)\(/.test(f.text) && !f.path.endsWith("lookup.ts"));
    expect(callers.map((f) => f.path)).toEqual(["src/objects/org/propagation.ts"]);
  });
});
