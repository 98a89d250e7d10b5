/**
 * A run's event stream (src/http/sse.ts) before and after its response is made: what a run says
 * before anything reads the stream is kept and goes out at once when a reader attaches, without a
 * flush timer set for it; after that, a burst goes out as one write on the next tick.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSseStream, type DirectSse, directSse, type SseSink } from "../../src/http/sse.js";

const direct = () => ({ agentDirectStreams: true }) as Record<string, unknown>;

function sink(paced: boolean): SseSink & { writes: string[]; ended: string[] } {
  const writes: string[] = [];
  const ended: string[] = [];
  return { paced, writes, ended, write: (text) => writes.push(text), end: (text) => ended.push(text) };
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("an event stream before its reader attaches", () => {
  it("keeps what the run says, sets no timer for it, and writes it in one piece at attach", () => {
    const env = direct();
    const stream = createSseStream({ heartbeatMs: 15_000, onCancel: () => {}, direct: env });
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    stream.send({ type: "message.start", thread_id: "t", run_id: "r" });
    stream.send({ type: "message.delta", text: "one" });
    stream.send({ type: "message.delta", text: "two" });
    expect(setTimeoutSpy).not.toHaveBeenCalled();

    const response = stream.response();
    const source = directSse(env, response) as DirectSse;
    const reader = sink(true);
    source.attach(reader);
    expect(reader.writes).toEqual([
      'event: message.start\ndata: {"thread_id":"t","run_id":"r"}\n\nevent: message.delta\ndata: {"text":"one"}\n\nevent: message.delta\ndata: {"text":"two"}\n\n',
    ]);
    expect(setTimeoutSpy).not.toHaveBeenCalled();
    stream.close();
    expect(reader.ended).toEqual([""]);
  });

  it("ends with what it had to say when it closed before a reader attached", () => {
    const env = direct();
    const stream = createSseStream({ heartbeatMs: 15_000, onCancel: () => {}, direct: env });
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    stream.send({ type: "message.delta", text: "all" });
    stream.close();
    const reader = sink(true);
    (directSse(env, stream.response()) as DirectSse).attach(reader);
    expect(reader.writes).toEqual([]);
    expect(reader.ended).toEqual(['event: message.delta\ndata: {"text":"all"}\n\n']);
    expect(setTimeoutSpy).not.toHaveBeenCalled();
  });

  it("after a reader that gathers nothing itself attached: a burst goes out as one write on the next tick", async () => {
    vi.useFakeTimers();
    const env = direct();
    const stream = createSseStream({ heartbeatMs: 15_000, onCancel: () => {}, direct: env });
    stream.send({ type: "message.delta", text: "early" });
    const reader = sink(false);
    (directSse(env, stream.response()) as DirectSse).attach(reader);
    expect(reader.writes).toEqual(['event: message.delta\ndata: {"text":"early"}\n\n']);
    stream.send({ type: "message.delta", text: "a" });
    stream.send({ type: "message.delta", text: "b" });
    expect(reader.writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(reader.writes).toEqual(['event: message.delta\ndata: {"text":"early"}\n\n', 'event: message.delta\ndata: {"text":"a"}\n\nevent: message.delta\ndata: {"text":"b"}\n\n']);
    stream.close();
  });
});
