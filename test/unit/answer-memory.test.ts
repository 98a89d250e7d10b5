/**
 * What a stored answer costs the process. A model's answer arrives in deltas and is joined one
 * delta at a time; V8 keeps such a string as a tree of its parts (two small objects a delta) until
 * it is laid out in one piece. The thread keeps the answer, so in the memory store an answer of
 * many deltas would cost several times its text for as long as the thread lives.
 */
import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chat, makeApp, type TestApp } from "../helpers.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

let app: TestApp;
beforeAll(async () => {
  app = await makeApp();
});
afterAll(async () => {
  await app.close();
});

/** The heap a one-turn chat leaves behind (its thread, messages and run record), per chat. */
async function heapPerChat(message: string, chats: number): Promise<number> {
  const before = heapUsed();
  for (let i = 0; i < chats; i++) {
    const { events } = await chat(app, { message });
    expect(events.at(-1)?.event).toBe("message.end");
  }
  return (heapUsed() - before) / chats;
}

describe("a stored answer", () => {
  it("costs about its text, not a part per delta: 3,000 more characters asked (and echoed in about 190 more deltas) add about twice 3,000 bytes", async () => {
    const short = "s".repeat(200);
    const long = "l".repeat(3_200);
    // Warm up: compiled code and caches are not what a chat costs.
    await heapPerChat(short, 50);
    await heapPerChat(long, 50);
    const chats = 600;
    const small = await heapPerChat(short, chats);
    const large = await heapPerChat(long, chats);
    // The fake model answers "echo: <message>" in 16-character deltas: the longer question and
    // its answer are each 3,000 characters longer (one byte a character). Kept as a tree of its
    // parts, the answer alone would add about 64 bytes a delta on top (190 deltas: about 12 KB).
    // Measured: about 5.5 KB laid out, about 17.6 KB as a tree. The floor only shows that the
    // measure sees the texts at all.
    const extra = large - small;
    expect(extra).toBeGreaterThan(2_500);
    expect(extra).toBeLessThan(9_000);
  });
});
