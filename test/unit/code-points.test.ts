/** Code points as CONTRACT section 5 counts them: the fake model's pieces and codePointLength agree. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { pieces } from "../../src/agent/providers/fake.js";
import { codePointLength, nextCodePoint, singleUnits } from "../../src/json.js";

describe("code points", () => {
  it("counts a surrogate pair as one code point and a lone surrogate as one", () => {
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("abc")).toBe(3);
    expect(codePointLength("a😀b")).toBe(3);
    expect(codePointLength("\ud83d")).toBe(1);
    expect(codePointLength("\ude00x")).toBe(2);
    expect(singleUnits("abc\ude00")).toBe(true);
    expect(singleUnits("a😀")).toBe(false);
    expect(singleUnits("\ud83d")).toBe(false);
    expect(nextCodePoint("😀", 0)).toBe(2);
    expect(nextCodePoint("\ud83dx", 0)).toBe(1);
  });

  it("cuts text in pieces of at most 16 code points, never inside a surrogate pair", () => {
    const text = "😀".repeat(20) + "abc";
    const out = pieces(text);
    expect(out.join("")).toBe(text);
    expect(out.map(codePointLength)).toEqual([16, 7]);
    for (const p of out) expect(p.isWellFormed()).toBe(true);
    expect(pieces("")).toEqual([]);
    expect(pieces("a".repeat(32))).toEqual(["a".repeat(16), "a".repeat(16)]);
    expect(pieces("abcde", 2)).toEqual(["ab", "cd", "e"]);
  });

  it("gives what the string's own code point iteration gives, for text with and without surrogates (lone ones too)", () => {
    // Units drawn mostly from ASCII, with high and low surrogates (paired or not) and other BMP text.
    const unit = fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
      { weight: 2, arbitrary: fc.integer({ min: 0xd800, max: 0xdbff }) },
      { weight: 2, arbitrary: fc.integer({ min: 0xdc00, max: 0xdfff }) },
      { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xffff }) },
    );
    const text = fc.array(unit, { maxLength: 80 }).map((units) => String.fromCharCode(...units));
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 20 }), (t, size) => {
        // The string iterator yields code points, a lone surrogate as one of its own.
        const points = [...t];
        expect(codePointLength(t)).toBe(points.length);
        if (singleUnits(t)) expect(points.every((p) => p.length === 1)).toBe(true);
        const out = pieces(t, size);
        expect(out.join("")).toBe(t);
        const sizes: number[] = [];
        for (let left = points.length; left > 0; left -= size) sizes.push(Math.min(size, left));
        expect(out.map((p) => [...p].length)).toEqual(sizes);
      }),
      { numRuns: 2000 },
    );
  });
});
