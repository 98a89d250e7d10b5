import { describe, expect, it } from "vitest";
import { firstInOrder, firstInOrderFromEnd } from "../../src/store/memory/first.js";

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface Row {
  at: number;
  id: string;
  odd: boolean;
}

/** Later first, ties by id (as a page of threads is ordered). */
const newestFirst = (a: Row, b: Row) => (a.at !== b.at ? b.at - a.at : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

describe("firstInOrder", () => {
  it("gives what sorting them all and taking the first would, for any count, filter and arrangement", () => {
    const next = random(20261130);
    for (let round = 0; round < 300; round++) {
      const n = Math.floor(next() * 60);
      // Few distinct times, so ties are common; ascending, descending or shuffled.
      const rows: Row[] = Array.from({ length: n }, (_, i) => ({ at: Math.floor(next() * 8), id: `r${i}`, odd: next() < 0.5 }));
      const arrangement = round % 3;
      if (arrangement === 1) rows.sort((a, b) => a.at - b.at);
      if (arrangement === 2) rows.sort((a, b) => b.at - a.at);
      const count = Math.floor(next() * (n + 3));
      const keep = round % 2 === 0 ? (r: Row) => r.odd : undefined;
      const expected = [...rows].filter(keep ?? (() => true)).sort(newestFirst).slice(0, count);
      expect(firstInOrder(rows, count, newestFirst, keep)).toEqual(expected);
      expect(firstInOrder(rows.values(), count, newestFirst, keep)).toEqual(expected);
      expect(firstInOrderFromEnd(rows, count, newestFirst, keep)).toEqual(expected);
    }
  });

  it("gives nothing for a count of zero or less", () => {
    const rows: Row[] = [{ at: 1, id: "a", odd: true }];
    expect(firstInOrder(rows, 0, newestFirst)).toEqual([]);
    expect(firstInOrderFromEnd(rows, -1, newestFirst)).toEqual([]);
  });
});
