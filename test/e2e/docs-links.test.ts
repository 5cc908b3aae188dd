/**
 * The documentation's links hold: every relative link in the README, docs/ and examples/README.md
 * names a file that exists, and a link with a `#fragment` names a heading of that file (GitHub's
 * anchors: lower-cased, punctuation dropped, spaces as hyphens). The README stays a short tour
 * (at most 250 lines) and reaches every page of docs/.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./server";

/** The Markdown files under `dir`, its subfolders' too (docs/guides/). */
function mdUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? mdUnder(`${dir}/${e.name}`) : e.name.endsWith(".md") ? [`${dir}/${e.name}`] : [],
  );
}

const pages = ["README.md", "examples/README.md", ...mdUnder("docs")];

/** GitHub's heading anchors, numbered when a heading repeats. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    const base = (m[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Markdown links outside code, as [page, target]. */
function linksOf(page: string): string[] {
  const text = readFileSync(join(ROOT, page), "utf8").replace(/```[\s\S]*?```/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? "").filter((t) => !/^[a-z]+:/.test(t));
}

describe("the documentation's links", () => {
  it.each(pages)("%s: every relative link names an existing file and heading", (page) => {
    for (const target of linksOf(page)) {
      const [path = "", fragment] = target.split("#");
      const file = path === "" ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(path));
      expect(existsSync(file), `${page} -> ${target}`).toBe(true);
      if (fragment !== undefined && file.endsWith(".md")) {
        expect(
          anchorsOf(readFileSync(file, "utf8")).has(fragment),
          `${page} -> ${target} (no such heading in ${relative(ROOT, file)})`,
        ).toBe(true);
      }
    }
  });

  it("keeps the README a short tour that reaches every page of docs/", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
    const linked = new Set(linksOf("README.md").map((t) => t.split("#")[0]));
    const index = new Set(linksOf("docs/README.md").map((t) => `docs/${t.split("#")[0]}`));
    for (const page of pages.filter((p) => p.startsWith("docs/"))) {
      expect(linked.has(page) || index.has(page), `${page} is reachable from the README or docs/README.md`).toBe(true);
    }
  });
});
