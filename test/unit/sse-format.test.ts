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
});
