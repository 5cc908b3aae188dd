/**
 * The word a misspelling most likely meant: the "did you mean" of a refused schema keyword
 * (json-schema.ts) and of a filter's path or operator (event-filter.ts). Pure.
 */

/** The candidate within two edits of `word` (case aside counts as none), or undefined. */
export function nearestWord(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const known of candidates) {
    const d = known.toLowerCase() === word.toLowerCase() ? 0 : editDistance(known, word, bestDistance);
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance with transpositions counted as one edit, or `cap` once it is at least that. */
function editDistance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (prevPrev[j - 2] ?? 0) + 1);
      row.push(d);
    }
    prevPrev = prev;
    prev = row;
  }
  return Math.min(prev[b.length] ?? cap, cap);
}
