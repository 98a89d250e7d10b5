/** Code points as CONTRACT section 5 counts them: the fake model's pieces and codePointLength agree. */
import { describe, expect, it } from "vitest";
import { pieces } from "../../src/agent/providers/fake.js";
import { codePointLength, nextCodePoint } from "../../src/json.js";

describe("code points", () => {
  it("counts a surrogate pair as one code point and a lone surrogate as one", () => {
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("abc")).toBe(3);
    expect(codePointLength("a😀b")).toBe(3);
    expect(codePointLength("\ud83d")).toBe(1);
    expect(codePointLength("\ude00x")).toBe(2);
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
});
