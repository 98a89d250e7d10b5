import { describe, expect, it } from "vitest";
import { createLogger, type LoggerOptions } from "../../src/observability/logger.js";

function capture(format: LoggerOptions["format"], level: LoggerOptions["level"] = "INFO", clock = { ms: Date.UTC(2026, 10, 29, 6, 56, 30, 81) }) {
  const lines: string[] = [];
  const logger = createLogger({ level, format, write: (line) => lines.push(line), now: () => clock.ms });
  return { lines, logger, clock };
}

describe("log lines", () => {
  it("json: the head, then the root's fields, a child's over its parent's, the line's own last; undefined clears, null stays", () => {
    const { lines, logger } = capture("json");
    const request = logger.child({ request_id: "r1", principal_hash: "p1", method: "POST" });
    const run = request.child({ run_id: "u1", method: undefined, thread_id: "t1" });
    run.info("run ended", { status: "ok", principal_hash: "p2", thread_id: undefined, steps: 2, cached: false, note: null });
    expect(lines).toHaveLength(1);
    // Key order matters to readers of the raw line: that of a merged copy.
    expect(lines[0]).toBe(
      '{"ts":"2026-11-29T06:56:30.081Z","level":"INFO","logger":"agent","message":"run ended","request_id":"r1","principal_hash":"p2",' +
        '"run_id":"u1","status":"ok","steps":2,"cached":false,"note":null}',
    );
    // The parent logger is unchanged by its child's and its lines' fields.
    request.info("request", { status: 200 });
    expect(JSON.parse(lines[1]!)).toEqual({ ts: "2026-11-29T06:56:30.081Z", level: "INFO", logger: "agent", message: "request", request_id: "r1", principal_hash: "p1", method: "POST", status: 200 });
  });

  it("text: the head, then every field that is neither null nor undefined, in the same order", () => {
    const { lines, logger } = capture("text");
    const run = logger.child({ request_id: "r1", method: "POST" }).child({ method: undefined, run_id: "u1" }, "runs");
    run.warning("slow", { duration_ms: 41, extra: null });
    logger.info("plain");
    expect(lines).toEqual(["2026-11-29T06:56:30.081Z WARNING  runs: slow request_id=r1 run_id=u1 duration_ms=41", "2026-11-29T06:56:30.081Z INFO     agent: plain"]);
  });

  it("text: a value or message with a line break or another control character stays on its line, escaped", () => {
    const { lines, logger } = capture("text");
    // An access line for GET /x%0A2026-... ERROR ...: the decoded path must not forge a record.
    logger.info("request", { path: "/x\n2026-11-29T00:00:00.000Z ERROR    agent: forged", note: "a\rb\tc\u0000d\u001be\u0085f\u2028g" });
    logger.warning("two\nlines");
    expect(lines).toEqual([
      "2026-11-29T06:56:30.081Z INFO     agent: request path=/x\\n2026-11-29T00:00:00.000Z ERROR    agent: forged note=a\\rb\\tc\\u0000d\\u001be\\u0085f\\u2028g",
      "2026-11-29T06:56:30.081Z WARNING  agent: two\\nlines",
    ]);
    for (const line of lines) expect(line.split("\n")).toHaveLength(1);
  });

  it("stamps each line with its own millisecond, also when lines share one", () => {
    const { lines, logger, clock } = capture("json");
    logger.info("a");
    logger.info("b");
    clock.ms += 1;
    logger.info("c");
    clock.ms += 59_999;
    logger.info("d");
    expect(lines.map((l) => (JSON.parse(l) as { ts: string }).ts)).toEqual([
      "2026-11-29T06:56:30.081Z",
      "2026-11-29T06:56:30.081Z",
      "2026-11-29T06:56:30.082Z",
      "2026-11-29T06:57:30.081Z",
    ]);
    // Another logger with another clock is not handed the first one's stamp.
    const other = capture("json", "INFO", { ms: Date.UTC(2020, 0, 1) });
    other.logger.info("e");
    expect((JSON.parse(other.lines[0]!) as { ts: string }).ts).toBe("2020-01-01T00:00:00.000Z");
  });

  it("writes nothing under its level", () => {
    const { lines, logger } = capture("json", "WARNING");
    logger.info("no");
    logger.child({ a: 1 }).debug("no");
    logger.error("yes");
    expect(lines.map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(["yes"]);
  });
});
