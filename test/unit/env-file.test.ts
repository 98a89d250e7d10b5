import { describe, expect, it } from "vitest";
import { layerEnv, parseEnvFile } from "../../src/settings/env-file.js";

describe("parseEnvFile", () => {
  it("reads KEY=value lines, skipping blanks and comments", () => {
    const text = ["# a comment", "", "   ", "A=1", "  # indented comment", "B = two ", "C="].join("\n");
    expect(parseEnvFile(text)).toEqual({ A: "1", B: "two", C: "" });
  });

  it("accepts an `export ` prefix", () => {
    expect(parseEnvFile("export API_KEY=abc\nexport   PORT=9000")).toEqual({ API_KEY: "abc", PORT: "9000" });
  });

  it("strips single and double quotes and keeps what is inside", () => {
    const text = [`S='single # not a comment'`, `D="double # not a comment"`, `E=""`, `F='  spaced  '`].join("\n");
    expect(parseEnvFile(text)).toEqual({
      S: "single # not a comment",
      D: "double # not a comment",
      E: "",
      F: "  spaced  ",
    });
  });

  it("turns \\n into a newline inside double quotes only", () => {
    const text = [String.raw`D="line1\nline2"`, String.raw`S='line1\nline2'`, String.raw`U=line1\nline2`].join("\n");
    const env = parseEnvFile(text);
    expect(env.D).toBe("line1\nline2");
    expect(env.S).toBe(String.raw`line1\nline2`);
    expect(env.U).toBe(String.raw`line1\nline2`);
  });

  it("unescapes \\\" and \\\\ inside double quotes", () => {
    expect(parseEnvFile(String.raw`Q="say \"hi\""`).Q).toBe('say "hi"');
    expect(parseEnvFile(String.raw`B="a\\b"`).B).toBe("a\\b");
  });

  it("drops an inline ` # comment` after an unquoted value, but not a # inside it", () => {
    const env = parseEnvFile("A=value # a comment\nB=color#blue\nC=x\t# tabbed comment");
    expect(env).toEqual({ A: "value", B: "color#blue", C: "x" });
  });

  it("accepts CRLF line endings", () => {
    expect(parseEnvFile("A=1\r\nB=2\r\n")).toEqual({ A: "1", B: "2" });
  });

  it("keeps `=` inside a value and lets a later line win", () => {
    expect(parseEnvFile("DSN=postgres://u:p@h/db?x=1\nA=1\nA=2")).toEqual({ DSN: "postgres://u:p@h/db?x=1", A: "2" });
  });

  it("throws on a bad line, naming its number but never its content", () => {
    const text = "A=1\n# comment\nthis-is-secret-zzz\nB=2";
    let error: unknown;
    try {
      parseEnvFile(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain("line 3");
    expect(message).not.toContain("secret");
    expect(message).not.toContain("zzz");
  });

  it.each(["1BAD=x", "BAD-NAME=x", "=value", "NOEQUALS"])("refuses %j", (line) => {
    expect(() => parseEnvFile(`OK=1\n${line}`)).toThrow(/line 2/);
  });
});

describe("parseEnvFile escapes and comments", () => {
  it("reads escapes in one pass: an escaped backslash before n stays", () => {
    expect(parseEnvFile('D="C:\\\\new"\nE="a\\nb"\nF="say \\"hi\\""')).toEqual({ D: "C:\\new", E: "a\nb", F: 'say "hi"' });
  });

  it("drops a comment after a quoted value", () => {
    expect(parseEnvFile("Q=\"x\" # note\nR='y'   # other")).toEqual({ Q: "x", R: "y" });
  });
});

describe("layerEnv", () => {
  it("lets later layers win for the keys they set", () => {
    expect(layerEnv({ A: "file", B: "file" }, { B: "process", C: "process" })).toEqual({ A: "file", B: "process", C: "process" });
  });

  it("does not let undefined override an earlier value", () => {
    expect(layerEnv({ A: "file" }, { A: undefined, B: undefined })).toEqual({ A: "file" });
  });

  it("lets an empty string override (it is a value)", () => {
    expect(layerEnv({ A: "file" }, { A: "" })).toEqual({ A: "" });
  });

  it("layers three and returns a fresh object", () => {
    const first = { A: "1" };
    const out = layerEnv(first, { A: "2" }, { A: "3" });
    expect(out).toEqual({ A: "3" });
    expect(first).toEqual({ A: "1" });
    expect(layerEnv()).toEqual({});
  });
});
