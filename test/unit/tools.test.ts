import { afterEach, describe, expect, it, vi } from "vitest";
import { calculator, evaluate } from "../../src/agent/tools/calculator.js";
import { currentTime } from "../../src/agent/tools/current-time.js";
import { defineTool, type ToolContext, type ToolDefinition } from "../../src/agent/tools/define.js";
import { noPolicyClient } from "../../src/policy/types.js";

const ctx: ToolContext = {
  principal: { id: "user-1", roles: [], attributes: {}, actor: null },
  threadId: "t1",
  runId: "r1",
  toolCallId: "c1",
  signal: new AbortController().signal,
  api: noPolicyClient,
  userMentioned: () => false,
};

const base = (): ToolDefinition => ({
  name: "lookup",
  description: "Looks something up.",
  parameters: {
    type: "object",
    properties: { q: { type: "string", minLength: 2 }, n: { type: "integer", minimum: 1 } },
    required: ["q"],
    additionalProperties: false,
  },
  calls: [],
  run: () => "ok",
});

describe("defineTool", () => {
  it("returns a frozen tool with the definition and a check()", async () => {
    const tool = defineTool(base());
    expect(tool.name).toBe("lookup");
    expect(tool.description).toBe("Looks something up.");
    expect(Object.isFrozen(tool)).toBe(true);
    expect(Object.isFrozen(tool.calls)).toBe(true);
    expect(await tool.run({ q: "hi" }, ctx)).toBe("ok");
  });

  it("copies the calls list so later changes to it do not leak in", () => {
    const calls = [{ api: "crm", method: "GET", path: "/x" }];
    const tool = defineTool({ ...base(), calls });
    calls.push({ api: "crm", method: "POST", path: "/y" });
    expect(tool.calls).toEqual([{ api: "crm", method: "GET", path: "/x" }]);
  });

  it.each(["", "1tool", "_tool", "has space", "dot.name", "a".repeat(65), "ümlaut"])("rejects the name %j", (name) => {
    expect(() => defineTool({ ...base(), name })).toThrow(TypeError);
  });

  it.each(["a", "tool_name", "Tool-2", "a".repeat(64)])("accepts the name %j", (name) => {
    expect(defineTool({ ...base(), name }).name).toBe(name);
  });

  it("rejects a missing or empty description", () => {
    expect(() => defineTool({ ...base(), description: "" })).toThrow(/description/);
    expect(() => defineTool({ ...base(), description: undefined as unknown as string })).toThrow(/description/);
  });

  it("rejects parameters that are not an object schema", () => {
    expect(() => defineTool({ ...base(), parameters: { type: "string" } })).toThrow(/parameters/);
    expect(() => defineTool({ ...base(), parameters: {} })).toThrow(/parameters/);
    expect(() => defineTool({ ...base(), parameters: null as never })).toThrow(/parameters/);
    expect(() => defineTool({ ...base(), parameters: "object" as never })).toThrow(/parameters/);
  });

  it("rejects a missing calls list", () => {
    expect(() => defineTool({ ...base(), calls: undefined as never })).toThrow(/calls/);
    expect(() => defineTool({ ...base(), calls: "none" as never })).toThrow(/calls/);
  });
});

describe("Tool.check", () => {
  const tool = defineTool(base());

  it("returns no problems for arguments that fit", () => {
    expect(tool.check({ q: "hello" })).toEqual([]);
    expect(tool.check({ q: "hello", n: 3 })).toEqual([]);
  });

  it("reports a missing required property", () => {
    const problems = tool.check({});
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.join(" ")).toContain("q");
  });

  it("reports wrong types and ranges with the location of the value", () => {
    const problems = tool.check({ q: "x", n: 0 });
    expect(problems.some((p) => p.startsWith("/q:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("/n:"))).toBe(true);
    expect(tool.check({ q: 5 }).some((p) => p.startsWith("/q:"))).toBe(true);
    expect(tool.check({ q: "ok", n: 1.5 }).some((p) => p.startsWith("/n:"))).toBe(true);
  });

  it("reports additional properties", () => {
    expect(tool.check({ q: "ok", extra: true }).length).toBeGreaterThan(0);
  });
});

describe("calculator evaluate", () => {
  it.each([
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["10 - 4 - 3", 3],
    ["100 / 10 / 5", 2],
    ["7 % 4", 3],
    ["2 * (3 + (4 - 1)) / 3", 4],
    ["-3 + 5", 2],
    ["-(2 + 3)", -5],
    ["4 * -2", -8],
    ["--2", 2],
    ["+5", 5],
    ["2 ^ 10", 1024],
    ["2 ^ 3 ^ 2", 512],
    ["(2 ^ 3) ^ 2", 64],
    ["2 * 3 ^ 2", 18],
    ["2 ^ -1", 0.5],
    ["1.5 * 4", 6],
    ["0.1 + 0.2", 0.1 + 0.2],
    ["  42  ", 42],
  ])("%s = %d", (expression, expected) => {
    expect(evaluate(expression)).toBe(expected);
  });

  it.each(["1 / 0", "-1 / 0", "0 / 0", "5 % 0", "1/(1/0)", "2 / (1 - 1)"])("%s is an error: division by zero", (expression) => {
    expect(() => evaluate(expression)).toThrow("division by zero");
  });

  it("refuses a result that is not finite", () => {
    expect(() => evaluate("10 ^ 400")).toThrow("not a finite number");
  });

  it("binds ^ tighter than unary minus", () => {
    expect(evaluate("-2^2")).toBe(-4);
    expect(evaluate("(-2)^2")).toBe(4);
    expect(evaluate("2^-1")).toBe(0.5);
  });

  it.each(["", "1 +", "(1 + 2", "1 + 2)", "abc", "2 3", "1 ** 2", "1..2", ".5", "1e3", "Math.PI", "1; 2", "()"])(
    "%j is an error",
    (expression) => {
      expect(() => evaluate(expression)).toThrow(Error);
    },
  );

  describe("never evaluates JavaScript", () => {
    afterEach(() => vi.restoreAllMocks());

    it("reads ^ as power (JavaScript would read it as xor) and refuses JavaScript syntax", () => {
      expect(evaluate("6 ^ 2")).toBe(36);
      expect(() => evaluate("2 ** 3")).toThrow();
      expect(() => evaluate("(() => 1)()")).toThrow();
      expect(() => evaluate("globalThis")).toThrow();
    });

    it("does not call eval", () => {
      const spy = vi.spyOn(globalThis, "eval");
      expect(evaluate("(1 + 2) * 3 ^ 2")).toBe(27);
      expect(() => evaluate("1 / 0")).toThrow();
      expect(spy).not.toHaveBeenCalled();
    });
  });

  it("the tool returns the result as a string and refuses bad arguments by schema", async () => {
    expect(await calculator.run({ expression: "(2 + 3) * 4" }, ctx)).toBe("20");
    expect(calculator.check({ expression: "" }).length).toBeGreaterThan(0);
    expect(calculator.check({ expression: "1".repeat(201) }).length).toBeGreaterThan(0);
    expect(calculator.check({})).not.toEqual([]);
    expect(() => calculator.run({ expression: "1 / 0" }, ctx)).toThrow("division by zero");
  });
});

describe("current_time", () => {
  afterEach(() => vi.useRealTimers());

  it("answers UTC by default", async () => {
    vi.useFakeTimers({ now: new Date("2024-03-05T12:34:56.000Z"), toFake: ["Date"] });
    const value = (await currentTime.run({}, ctx)) as Record<string, string>;
    expect(value.utc).toBe("2024-03-05T12:34:56.000Z");
    expect(value.time_zone).toBe("UTC");
    expect(value.local).toContain("2024");
    expect(value.local).toContain("12:34:56");
  });

  it("answers in a named zone", async () => {
    vi.useFakeTimers({ now: new Date("2024-01-15T12:00:00.000Z"), toFake: ["Date"] });
    const value = (await currentTime.run({ time_zone: "Asia/Tokyo" }, ctx)) as Record<string, string>;
    expect(value.time_zone).toBe("Asia/Tokyo");
    expect(value.utc).toBe("2024-01-15T12:00:00.000Z");
    expect(value.local).toContain("21:00:00");
  });

  it("throws for an unknown zone without echoing it", () => {
    let error: unknown;
    try {
      currentTime.run({ time_zone: "Mars/Olympus_Mons" }, ctx);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe("unknown time zone");
  });

  it("checks the time_zone argument type", () => {
    expect(currentTime.check({ time_zone: 5 })).not.toEqual([]);
    expect(currentTime.check({ time_zone: "UTC" })).toEqual([]);
  });
});
