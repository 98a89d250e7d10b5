import { describe, expect, it } from "vitest";
import { INVALID_ARGUMENTS_PREFIX, type ModelEvent } from "../../src/agent/model.js";
import { createFakeModel } from "../../src/agent/providers/fake.js";
import { ModelError } from "../../src/errors.js";
import type { Message, ToolCall } from "../../src/store/ports.js";

let seq = 0;
const nextId = () => `m${++seq}`;

const user = (content: string): Message => ({ id: nextId(), role: "user", content });
const assistant = (content: string, tool_calls?: ToolCall[]): Message =>
  tool_calls ? { id: nextId(), role: "assistant", content, tool_calls } : { id: nextId(), role: "assistant", content };
const call = (id: string, name: string, args: ToolCall["args"] = {}): ToolCall => ({ id, name, args });
const result = (callId: string, name: string, content: string, is_error = false): Message => ({
  id: nextId(),
  role: "tool",
  content,
  tool_call_id: callId,
  name,
  is_error,
});

async function run(messages: Message[], options: { system?: string; signal?: AbortSignal } = {}): Promise<ModelEvent[]> {
  const model = createFakeModel();
  const events: ModelEvent[] = [];
  for await (const e of model.stream({
    system: options.system ?? "",
    messages,
    tools: [],
    signal: options.signal ?? new AbortController().signal,
  }))
    events.push(e);
  return events;
}

const textOf = (events: ModelEvent[]) =>
  events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("");
const callsOf = (events: ModelEvent[]) =>
  events.flatMap((e) => (e.type === "tool_call" ? [{ name: e.name, arguments: e.arguments }] : []));
const usageOf = (events: ModelEvent[]) => {
  const u = events.at(-1);
  if (u?.type !== "usage") throw new Error("the last event is not usage");
  return { input_tokens: u.input_tokens, output_tokens: u.output_tokens };
};

describe("fake model: echo", () => {
  it("answers echo: + the message without directives, usage last", async () => {
    const events = await run([user("hello")]);
    expect(textOf(events)).toBe("echo: hello");
    expect(callsOf(events)).toEqual([]);
    expect(events.at(-1)?.type).toBe("usage");
    expect(events.filter((e) => e.type === "usage")).toHaveLength(1);
  });

  it("echoes only the last user message, keeping non-directive lines and unknown directives", async () => {
    const events = await run([user("/call calculator {}"), assistant("earlier"), user("line one\n/unknown thing\nline two")]);
    expect(textOf(events)).toBe("echo: line one\n/unknown thing\nline two");
    expect(callsOf(events)).toEqual([]);
  });

  it("drops directive lines from the echoed text", async () => {
    const events = await run([user("before\n/sleep 1\nafter")]);
    expect(textOf(events)).toBe("echo: before\nafter");
  });
});

describe("fake model: /call and /step", () => {
  it("makes consecutive /call lines parallel calls of one turn, with raw argument text", async () => {
    const events = await run([
      user('/call calculator {"expression":"1+1"}\n/call current_time {}\n/call broken {not json'),
    ]);
    expect(callsOf(events)).toEqual([
      { name: "calculator", arguments: '{"expression":"1+1"}' },
      { name: "current_time", arguments: "{}" },
      { name: "broken", arguments: "{not json" },
    ]);
    expect(textOf(events)).toBe("");
    const ids = events.flatMap((e) => (e.type === "tool_call" ? [e.id] : []));
    expect(new Set(ids).size).toBe(3);
  });

  it("chooses the next turn from the assistant tool-call messages already in the conversation", async () => {
    const script = user("/call a {}\n/step\n/call b {}\n/call c {}\n/step\n/call d {}");
    // Turn 0: nothing answered yet.
    expect(callsOf(await run([script])).map((c) => c.name)).toEqual(["a"]);
    // Turn 1: one assistant tool-call message after the user message.
    const turn0 = [assistant("", [call("1", "a")]), result("1", "a", "ra")];
    expect(callsOf(await run([script, ...turn0])).map((c) => c.name)).toEqual(["b", "c"]);
    // Turn 2.
    const turn1 = [assistant("", [call("2", "b"), call("3", "c")]), result("2", "b", "rb"), result("3", "c", "rc")];
    expect(callsOf(await run([script, ...turn0, ...turn1])).map((c) => c.name)).toEqual(["d"]);
  });

  it("does not count assistant messages without tool calls, nor tool calls before the user message", async () => {
    const old = [user("/call x {}"), assistant("", [call("0", "x")]), result("0", "x", "old"), assistant("done: old")];
    const script = user("/call a {}\n/step\n/call b {}");
    const events = await run([...old, script, assistant("thinking")]);
    expect(callsOf(events).map((c) => c.name)).toEqual(["a"]);
  });

  it("answers done: + the last turn's results joined with '; '", async () => {
    const script = user("/call a {}\n/step\n/call b {}\n/call c {}");
    const events = await run([
      script,
      assistant("", [call("1", "a")]),
      result("1", "a", "first"),
      assistant("", [call("2", "b"), call("3", "c")]),
      result("2", "b", "r1"),
      result("3", "c", "r2"),
    ]);
    expect(callsOf(events)).toEqual([]);
    expect(textOf(events)).toBe("done: r1; r2");
  });

  it("answers the /answer text after the last turn", async () => {
    const script = user("/call a {}\n/answer all finished");
    expect(callsOf(await run([script])).map((c) => c.name)).toEqual(["a"]);
    const events = await run([script, assistant("", [call("1", "a")]), result("1", "a", "ra")]);
    expect(callsOf(events)).toEqual([]);
    expect(textOf(events)).toBe("all finished");
  });

  it("answers the /answer text at once when there are no calls", async () => {
    expect(textOf(await run([user("ignored text\n/answer forty-two")]))).toBe("forty-two");
  });

  it("/loop calls the tool on every turn and never answers", async () => {
    const script = user('/loop calculator {"expression":"2"}');
    const history: Message[] = [script];
    for (let i = 0; i < 5; i++) {
      const events = await run(history);
      expect(callsOf(events)).toEqual([{ name: "calculator", arguments: '{"expression":"2"}' }]);
      expect(textOf(events)).toBe("");
      history.push(assistant("", [call(`l${i}`, "calculator", { expression: "2" })]), result(`l${i}`, "calculator", "2"));
    }
  });
});

describe("fake model: invalid-argument retry", () => {
  const script = () => user("/call a {bad\n/step\n/call b {}");

  it("repeats the same turn when every result after the call is an invalid-arguments error", async () => {
    const events = await run([
      script(),
      assistant("", [call("1", "a")]),
      result("1", "a", `${INVALID_ARGUMENTS_PREFIX} not JSON`, true),
    ]);
    expect(callsOf(events)).toEqual([{ name: "a", arguments: "{bad" }]);
  });

  it("repeats it again after a second invalid try", async () => {
    const events = await run([
      script(),
      assistant("", [call("1", "a")]),
      result("1", "a", `${INVALID_ARGUMENTS_PREFIX} not JSON`, true),
      assistant("", [call("2", "a")]),
      result("2", "a", `${INVALID_ARGUMENTS_PREFIX} not JSON`, true),
    ]);
    expect(callsOf(events).map((c) => c.name)).toEqual(["a"]);
  });

  it("moves on when the error result is some other error", async () => {
    const events = await run([script(), assistant("", [call("1", "a")]), result("1", "a", "The tool failed. Reference: x.", true)]);
    expect(callsOf(events).map((c) => c.name)).toEqual(["b"]);
  });

  it("moves on when the prefixed result is not marked as an error", async () => {
    const events = await run([script(), assistant("", [call("1", "a")]), result("1", "a", `${INVALID_ARGUMENTS_PREFIX} text`, false)]);
    expect(callsOf(events).map((c) => c.name)).toEqual(["b"]);
  });

  it("repeats the turn when any of the parallel results is an invalid-arguments error, as the loop asks again", async () => {
    const parallel = user("/call a {bad\n/call a2 {}\n/step\n/call b {}");
    const events = await run([
      parallel,
      assistant("", [call("1", "a"), call("2", "a2")]),
      result("1", "a", `${INVALID_ARGUMENTS_PREFIX} not JSON`, true),
      result("2", "a2", "fine"),
    ]);
    expect(callsOf(events).map((c) => c.name)).toEqual(["a", "a2"]);
  });

  it("moves on after two retries, as the loop does", async () => {
    const attempt = (id: string) => [assistant("", [call(id, "a")]), result(id, "a", `${INVALID_ARGUMENTS_PREFIX} not JSON`, true)];
    const events = await run([user("/call a {bad\n/step\n/call b {}"), ...attempt("1"), ...attempt("2"), ...attempt("3")]);
    expect(callsOf(events).map((c) => c.name)).toEqual(["b"]);
  });
});

describe("fake model: /sleep and /error", () => {
  it("/sleep waits before the turn", async () => {
    const started = Date.now();
    const events = await run([user("/sleep 60\nhi")]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
    expect(textOf(events)).toBe("echo: hi");
  });

  it("/sleep honours an AbortSignal: aborting rejects quickly with the reason", async () => {
    const controller = new AbortController();
    const reason = new Error("cancelled by test");
    const started = Date.now();
    setTimeout(() => controller.abort(reason), 20);
    await expect(run([user("/sleep 30000\nhi")], { signal: controller.signal })).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("a sleeping turn rejects at once when the signal is already aborted; a turn that does not wait never reads the signal", async () => {
    const controller = new AbortController();
    const reason = new Error("already gone");
    controller.abort(reason);
    await expect(run([user("/sleep 30000")], { signal: controller.signal })).rejects.toBe(reason);
    // The loop checks the run's stop after each turn; a run's signal is made only when asked for.
    let asked = 0;
    const request = { system: "", messages: [user("hello")], tools: [], get signal() { asked++; return controller.signal; } };
    const events: ModelEvent[] = [];
    for await (const e of createFakeModel().stream(request)) events.push(e);
    expect(events[0]).toEqual({ type: "text", text: "echo: hello" });
    expect(asked).toBe(0);
  });

  it("/error throws a ModelError with code model_error and yields nothing", async () => {
    const model = createFakeModel();
    const seen: ModelEvent[] = [];
    const error = await (async () => {
      for await (const e of model.stream({ system: "", messages: [user("/error\nhi")], tools: [], signal: new AbortController().signal }))
        seen.push(e);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("model_error");
    expect(seen).toEqual([]);
  });
});

describe("fake model: streamed pieces", () => {
  it("splits the answer into pieces of at most 16 characters", async () => {
    const message = "abcdefghijklmnopqrstuvwxyz0123456789";
    const events = await run([user(message)]);
    const pieces = events.flatMap((e) => (e.type === "text" ? [e.text] : []));
    const answer = `echo: ${message}`;
    expect(pieces.join("")).toBe(answer);
    expect(pieces.length).toBe(Math.ceil(answer.length / 16));
    expect(pieces.slice(0, -1).every((p) => p.length === 16)).toBe(true);
  });

  it("counts code points, not UTF-16 units, and never splits a surrogate pair", async () => {
    const emoji = "😀".repeat(20);
    const events = await run([user(`/answer ${emoji}`)]);
    const pieces = events.flatMap((e) => (e.type === "text" ? [e.text] : []));
    expect(pieces).toEqual(["😀".repeat(16), "😀".repeat(4)]);
    expect(pieces[0]!.length).toBe(32);
    for (const p of pieces) expect(p.isWellFormed()).toBe(true);
  });
});

describe("fake model: usage", () => {
  it("counts the system prompt and message contents sent, and the answer produced", async () => {
    // Sent: "Be brief." (9) + "hello" (5) = 14 -> ceil(14/4) = 4. Produced: "echo: hello" (11) -> 3.
    const events = await run([user("hello")], { system: "Be brief." });
    expect(usageOf(events)).toEqual({ input_tokens: 4, output_tokens: 3 });
  });

  it("counts code points on both sides", async () => {
    // Sent: 8 emoji = 8 code points (16 UTF-16 units) -> 2. Produced: "echo: " + 8 emoji = 14 -> 4.
    const events = await run([user("😀".repeat(8))]);
    expect(usageOf(events)).toEqual({ input_tokens: 2, output_tokens: 4 });
  });

  it("counts earlier messages and the JSON of assistant tool calls; a tool turn produces name + arguments", async () => {
    // Sent: "/call a {}\n/step\n/call calc {\"x\":1}" (35) + "" (0)
    //   + JSON.stringify([{"id":"c1","name":"a","args":{}}]) (34) + "ra" (2) = 71 -> ceil(71/4) = 18.
    // Produced: "calc" (4) + '{"x":1}' (7) = 11 -> 3.
    const script = user('/call a {}\n/step\n/call calc {"x":1}');
    expect(script.content).toHaveLength(35);
    const events = await run([script, assistant("", [call("c1", "a")]), result("c1", "a", "ra")]);
    expect(callsOf(events)).toEqual([{ name: "calc", arguments: '{"x":1}' }]);
    expect(usageOf(events)).toEqual({ input_tokens: 18, output_tokens: 3 });
  });

  it("done: answer after a turn counts its text as produced", async () => {
    // Sent: "/call a {}" (10) + tool-call JSON (34) + "ok" (2) = 46 -> 12. Produced: "done: ok" (8) -> 2.
    const events = await run([user("/call a {}"), assistant("", [call("c1", "a")]), result("c1", "a", "ok")]);
    expect(textOf(events)).toBe("done: ok");
    expect(usageOf(events)).toEqual({ input_tokens: 12, output_tokens: 2 });
  });
});
