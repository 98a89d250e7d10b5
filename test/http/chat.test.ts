import { afterEach, describe, expect, it } from "vitest";
import { answerText, chat, makeApp, type TestApp } from "../helpers.js";

let app: TestApp;
afterEach(async () => app?.close());

describe("POST /chat", () => {
  it("streams echo: hello with start, deltas and end", async () => {
    app = await makeApp();
    const { res, events } = await chat(app, { message: "hello" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(events[0]!.event).toBe("message.start");
    expect(answerText(events)).toBe("echo: hello");
    const end = events.at(-1)!;
    expect(end.event).toBe("message.end");
    expect(end.data.status).toBe("ok");
    expect(end.data.thread_id).toBe(events[0]!.data.thread_id);
    expect(end.data.usage.input_tokens).toBeGreaterThan(0);
    expect(typeof end.data.latency_ms).toBe("number");
  });
});
