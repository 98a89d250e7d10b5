import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/agent/events.js";
import { formatEvent } from "../../src/http/sse.js";

/** What an event's frame must say: its type as the event name, the rest as the data line. */
function expected(event: Record<string, unknown>): string {
  const { type, ...data } = event;
  return `event: ${String(type)}\ndata: ${JSON.stringify(data)}\n\n`;
}

describe("formatEvent", () => {
  const approval = { approval_id: "ap_1", tool: "orders", method: "POST", url: "https://api.example/orders", reason: "needs a person" };
  const events: RunEvent[] = [
    { type: "message.start", thread_id: "t", run_id: "r" },
    { type: "message.delta", text: 'a "quoted"\nline \u2028 😀' },
    { type: "tool.call", id: "c1", name: "lookup", args: { q: "x", n: [1, 2] } },
    { type: "tool.result", id: "c1", name: "lookup", result: "{}", is_error: false },
    { type: "message.end", thread_id: "t", run_id: "r", usage: { input_tokens: 3, output_tokens: 4 }, latency_ms: 5, status: "ok" },
    {
      type: "message.end",
      thread_id: "t",
      run_id: "r",
      usage: { input_tokens: 0, output_tokens: 0 },
      latency_ms: 1,
      status: "awaiting_approval",
      approval: approval as never,
      approvals: [approval as never],
    },
    { type: "error", code: "unavailable", message: "The database is unreachable.", error_id: "e1", run_id: "r" },
  ];

  it("writes each event's type as the event name and the rest, in the event's order, as its data", () => {
    for (const event of events) expect(formatEvent(event)).toBe(expected(event as unknown as Record<string, unknown>));
  });

  it("is the same when the type is not the event's first field", () => {
    const event = { run_id: "r", thread_id: "t", type: "message.start" } as unknown as RunEvent;
    expect(formatEvent(event)).toBe("event: message.start\ndata: " + JSON.stringify({ run_id: "r", thread_id: "t" }) + "\n\n");
  });

  it("writes an event with nothing but its type as an empty object", () => {
    expect(formatEvent({ type: "message.start" } as unknown as RunEvent)).toBe("event: message.start\ndata: {}\n\n");
  });

  it("writes any delta's text as JSON.stringify would: quotes, backslashes, control characters, lone and paired surrogates", () => {
    // Units drawn to hit every kind JSON escapes or keeps: ASCII, controls, DEL, quotes and
    // backslashes, U+2028, surrogates paired and lone, other BMP text.
    const unit = fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7f }) },
      { weight: 2, arbitrary: fc.constantFrom(0x22, 0x5c, 0x2028, 0x2029) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 0x1f }) },
      { weight: 2, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }) },
      { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xffff }) },
    );
    const text = fc.array(unit, { maxLength: 24 }).map((units) => String.fromCharCode(...units));
    fc.assert(
      fc.property(text, (t) => {
        expect(formatEvent({ type: "message.delta", text: t })).toBe(expected({ type: "message.delta", text: t }));
      }),
      { numRuns: 3000 },
    );
    expect(formatEvent({ type: "message.delta", text: "plain words" })).toBe('event: message.delta\ndata: {"text":"plain words"}\n\n');
    expect(formatEvent({ type: "message.delta", text: "😀" })).toBe(`event: message.delta\ndata: {"text":"😀"}\n\n`);
    expect(formatEvent({ type: "message.delta", text: "\ud83d" })).toBe('event: message.delta\ndata: {"text":"\\ud83d"}\n\n');
  });
});
