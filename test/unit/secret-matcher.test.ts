/**
 * The constant-time comparison behind API_KEY and METRICS_TOKEN (src/auth/hashing.ts): equal
 * texts only, whatever the lengths, with no encoding in between that could make two texts one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { secretMatcher } from "../../src/auth/hashing.js";

describe("secretMatcher", () => {
  const matches = secretMatcher("s3cret-Key_42");

  it("matches the secret itself and nothing shorter, longer or different in one place", () => {
    expect(matches("s3cret-Key_42")).toBe(true);
    for (const other of ["", "s3cret-Key_4", "s3cret-Key_42 ", "s3cret-Key_43", "S3cret-Key_42", "s3cret-Key_42\u0000"]) expect(matches(other)).toBe(false);
  });

  it("tells two different lone surrogates apart (UTF-8 would write both as U+FFFD)", () => {
    expect(secretMatcher("key\uD800")("key\uD801")).toBe(false);
    expect(secretMatcher("key\uD800")("key\uFFFD")).toBe(false);
    expect(secretMatcher("key\uD800")("key\uD800")).toBe(true);
  });

  it("agrees with string equality on any pair of texts", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (secret, presented) => {
        expect(secretMatcher(secret)(presented)).toBe(secret === presented);
        expect(secretMatcher(secret)(secret)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
