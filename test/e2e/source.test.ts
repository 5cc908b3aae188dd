/**
 * Rules about the source that keep KV a derived cache (docs/storage.md): identity entries are
 * written only by objects/lookup.ts, which only the organization's object calls after its changes
 * commit; nothing else in src/ writes to KV except the webhook records' store. A new `kv.put` or
 * `kv.delete` elsewhere fails here, so a read-modify-write of KV cannot creep back in unnoticed.
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

describe("KV writes", () => {
  it("happen only in the lookup module and the webhook records' store", () => {
    const writers = files.filter((f) => /\b(kv|KV)\.(put|delete)\(|\bputRecord\(/.test(f.text)).map((f) => f.path);
    expect(writers.sort()).toEqual([
      "src/objects/lookup.ts",
      "src/stores/kv.ts",
      "src/webhooks/configurations.ts",
      "src/webhooks/deliveries.ts",
    ]);
  });

  it("of identity entries are made by the organization's object only", () => {
    const callers = files.filter((f) => /\b(writeCredentialLookup|deleteCredentialLookup)\(/.test(f.text) && !f.path.endsWith("lookup.ts"));
    expect(callers.map((f) => f.path)).toEqual(["src/objects/organization.ts"]);
  });
});
