/** The one SSE decoder: comments dropped, lines split anywhere, the end of the input. */
import { describe, expect, it } from "vitest";
import { decodeSse, sseEvents } from "../../src/sse-decode.js";

function byteStream(pieces: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const p of pieces) controller.enqueue(typeof p === "string" ? bytes.encode(p) : p);
      controller.close();
    },
  });
}

async function all(stream: AsyncIterable<{ event: string; data: string }>) {
  const out: { event: string; data: string }[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

describe("sse decoder", () => {
  it("drops comments and names unnamed events message; joins multi-line data", () => {
    expect(decodeSse(': keep-alive\n\nevent: message.delta\ndata: {"text":"a"}\n\ndata: one\ndata: two\n\n')).toEqual([
      { event: "message.delta", data: '{"text":"a"}' },
      { event: "message", data: "one\ntwo" },
    ]);
  });

  it("drops a last event without its blank line unless asked to dispatch it", () => {
    expect(decodeSse("data: a\n\ndata: b")).toEqual([{ event: "message", data: "a" }]);
    expect(decodeSse("data: a\n\ndata: b", { dispatchUnterminated: true })).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "b" },
    ]);
  });

  it("reads a byte stream split inside lines, CRLF pairs and UTF-8 sequences", async () => {
    const whole = 'data: {"t":"é"}\r\n\r\n: c\r\nevent: x\r\ndata: 2\r\n\r\n';
    const bytes = new TextEncoder().encode(whole);
    const oneByteEach = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
    expect(await all(sseEvents(byteStream(oneByteEach)))).toEqual([
      { event: "message", data: '{"t":"é"}' },
      { event: "x", data: "2" },
    ]);
    expect(await all(sseEvents(byteStream(["data: a\n\nda", "ta: b\n"]), { dispatchUnterminated: true }))).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "b" },
    ]);
  });

  it("cancels the stream when the loop ends early", async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("data: a\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const e of sseEvents(stream)) {
      expect(e.data).toBe("a");
      break;
    }
    expect(cancelled).toBe(true);
  });
});
