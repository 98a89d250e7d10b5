import { afterEach, describe, expect, it } from "vitest";
import { defineTool } from "../../src/index.js";
import { systemClock } from "../../src/clock.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { answerText, chat, get, makeApp, post, readUntil, waitFor, type TestApp } from "../helpers.js";

let app: TestApp;
let store: Store;
afterEach(async () => app?.close());

async function setup(env: Record<string, string> = {}, tools?: NonNullable<Parameters<typeof makeApp>[1]>["tools"]) {
  store = createMemoryStore();
  app = await makeApp(env, { store, ...(tools ? { tools } : {}) });
}

const metric = async (name: string) => {
  const text = await (await app.fetch(new Request("http://test/metrics"))).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
};

describe("run lifecycle", () => {
  it("writes a run record with every field and marks it ok", async () => {
    await setup();
    const { events } = await chat(app, { message: "hello", metadata: { source: "unit" } });
    const runId = events[0]!.data.run_id as string;
    const run = (await store.getRun(runId))!;
    expect(run).toMatchObject({
      run_id: runId,
      thread_id: events[0]!.data.thread_id,
      status: "ok",
      error_type: null,
      actor: null,
      metadata: { source: "unit" },
    });
    expect(run.principal_hash).toMatch(/^[0-9a-f]{32}$/);
    expect(run.principal_hash).not.toBe("shared");
    expect(run.created_at).toMatch(/\+00:00$/);
    expect(run.ended_at).toMatch(/\+00:00$/);
    expect(run.usage.input_tokens).toBeGreaterThan(0);
    expect(await metric('agent_runs_total{status="ok"}')).toBe(1);
    expect(await metric("agent_active_runs")).toBe(0);
  });

  it("keeps metadata out of the thread messages", async () => {
    await setup();
    const { events } = await chat(app, { message: "hello", metadata: { marker: "meta-only" } });
    const messages = await store.getMessages(events[0]!.data.thread_id);
    expect(JSON.stringify(messages)).not.toContain("meta-only");
  });

  it("continues a thread the caller owns and creates a named thread that does not exist", async () => {
    await setup();
    const first = await chat(app, { message: "one", thread_id: "my-thread.1" });
    expect(first.events[0]!.data.thread_id).toBe("my-thread.1");
    await chat(app, { message: "two", thread_id: "my-thread.1" });
    const res = await app.fetch(new Request("http://test/threads/my-thread.1/messages", { headers: { Authorization: "Bearer test-key-0123456789" } }));
    const messages = (await res.json()) as { role: string; content: string }[];
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "one"],
      ["assistant", "echo: one"],
      ["user", "two"],
      ["assistant", "echo: two"],
    ]);
  });

  it("refuses a second run on a busy thread: exactly one of two parallel chats gets 409", async () => {
    await setup();
    const body = { message: "/sleep 300\nhi", thread_id: "busy" };
    const [a, b] = await Promise.all([app.fetch(post("/chat", body)), app.fetch(post("/chat", body))]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([200, 409]);
    const busy = a.status === 409 ? a : b;
    expect(await busy.json()).toEqual({ code: "thread_busy", detail: "A run is in progress on this thread." });
    const ok = a.status === 200 ? a : b;
    expect(answerText((await import("../helpers.js")).parseSse(await ok.text()))).toBe("echo: hi");
  });

  it("stops a run past RUN_TIMEOUT_S with an error event timeout", async () => {
    await setup({ RUN_TIMEOUT_S: "1" });
    const { events } = await chat(app, { message: "/sleep 5000\nslow" });
    const last = events.at(-1)!;
    expect(last.event).toBe("error");
    expect(last.data).toMatchObject({ code: "timeout", run_id: events[0]!.data.run_id });
    expect(last.data.error_id).toMatch(/^[0-9a-f]{16}$/);
    // Generic, naming the reference; what happened is logged under it (spec 7.2); no detail outside dev.
    expect(last.data.message).toBe(`The run took longer than RUN_TIMEOUT_S and was stopped. Reference: ${last.data.error_id}.`);
    expect(last.data.detail).toBeUndefined();
    expect(app.logs.some((l) => l.error_id === last.data.error_id && l.level === "WARNING" && l.run_timeout_s === 1)).toBe(true);
    expect((await store.getRun(events[0]!.data.run_id))!.status).toBe("timeout");
    expect(await metric('agent_runs_total{status="timeout"}')).toBe(1);
    expect(await metric("agent_active_runs")).toBe(0);
  });

  it("marks a run cancelled when the client disconnects, and frees the thread", async () => {
    await setup();
    const res = await app.fetch(post("/chat", { message: "/sleep 5000\nbye", thread_id: "gone" }));
    const { reader, events } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    expect(await metric("agent_active_runs")).toBe(1);
    await reader.cancel();
    const runId = events[0]!.data.run_id as string;
    await waitFor(async () => (await store.getRun(runId))?.status === "cancelled");
    await waitFor(async () => (await metric("agent_active_runs")) === 0);
    expect(await metric('agent_runs_total{status="cancelled"}')).toBe(1);
    const again = await chat(app, { message: "back", thread_id: "gone" });
    expect(answerText(again.events)).toBe("echo: back");
  });

  it("a run stopped before anything asked for its signal hands out one already aborted (its model's wait ends at once)", async () => {
    // The run's AbortSignal is made only when a model, tool or sleep asks for it. Here the client
    // goes away while the run writes the user message (held back), before the model's turn: the
    // sleeping model must find the signal aborted, not wait its 60 s.
    await setup();
    await chat(app, { message: "first", thread_id: "held" });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const append = store.appendMessages.bind(store);
    store.appendMessages = async (...args) => {
      await gate;
      return append(...args);
    };
    const res = await app.fetch(post("/chat", { message: "/sleep 60000\nwait", thread_id: "held" }));
    const { reader, events } = await readUntil(res, (ev) => ev.some((e) => e.event === "message.start"));
    const runId = events[0]!.data.run_id as string;
    await reader.cancel();
    release();
    await waitFor(async () => (await store.getRun(runId))?.status === "cancelled", 3000);
    await waitFor(async () => (await metric("agent_active_runs")) === 0, 3000);
  });

  it.each([
    ["a timeout set again each period (the default)", false],
    ["one interval (repeatingRunTimers, the Node entry)", true],
  ])("renews the run's lease every renewal period while it waits, and still times out at its deadline: %s", async (_, repeatingRunTimers) => {
    // The run's one timer looks at it every renewal period, then waits out what is left to the
    // deadline (here 1 s: nine renewals of 100 ms, then the last 100 ms).
    store = createMemoryStore();
    const lease = createMemoryLease(systemClock);
    let renewals = 0;
    const renew = lease.renew.bind(lease);
    lease.renew = (...args) => (renewals++, renew(...args));
    app = await makeApp({ RUN_TIMEOUT_S: "1" }, { store, lease, leaseTimings: { renewMs: 100, ttlMs: 1_000 }, repeatingRunTimers });
    const { events } = await chat(app, { message: "/sleep 5000\nslow" });
    expect(events.at(-1)).toMatchObject({ event: "error", data: { code: "timeout" } });
    expect((await store.getRun(events[0]!.data.run_id as string))!.status).toBe("timeout");
    expect(renewals).toBeGreaterThanOrEqual(5);
    // A run that ends well before its deadline takes its timer with it: no renewal after.
    const quick = await chat(app, { message: "/sleep 350\nquick" });
    expect(answerText(quick.events)).toBe("echo: quick");
    const after = renewals;
    await new Promise((r) => setTimeout(r, 350));
    expect(renewals).toBe(after);
  });

  it("sends keep-alive comments on idle streams", async () => {
    await setup({ SSE_HEARTBEAT_S: "1" });
    const { text } = await chat(app, { message: "/sleep 2300\nzzz" });
    expect(text.split(": keep-alive\n\n").length - 1).toBeGreaterThanOrEqual(2);
    expect(text).toContain("echo: zzz");
  });

  it("fails a run with run_failed on a provider error, detail only in the log", async () => {
    await setup();
    const { events } = await chat(app, { message: "/error" });
    const last = events.at(-1)!;
    expect(last.event).toBe("error");
    expect(last.data.code).toBe("run_failed");
    expect(last.data.message).toBe(`The run failed. Reference: ${last.data.error_id}.`);
    expect(last.data.detail).toBeUndefined();
    expect((await store.getRun(last.data.run_id))).toMatchObject({ status: "error", error_type: "ModelError" });
    expect(app.logs.some((l) => l.error_id === last.data.error_id && l.level === "ERROR")).toBe(true);
  });

  it("adds the detail to error events under APP_ENV=dev", async () => {
    await setup({ APP_ENV: "dev" });
    const { events } = await chat(app, { message: "/error" });
    expect(events.at(-1)!.data.detail).toMatch(/ModelError/);
  });

  it("adds the detail to a timeout's error event under APP_ENV=dev", async () => {
    await setup({ APP_ENV: "dev", RUN_TIMEOUT_S: "1" });
    const { events } = await chat(app, { message: "/sleep 5000\nslow" });
    expect(events.at(-1)!.data).toMatchObject({ code: "timeout", detail: "Timeout: the run passed RUN_TIMEOUT_S (1 s)" });
  });

  it("fails runs naming MODEL_NAME when it is unset", async () => {
    store = createMemoryStore();
    app = await makeApp({ MODEL_PROVIDER: "openai", MODEL_NAME: "" }, { store });
    const { events } = await chat(app, { message: "hi" });
    expect(events.at(-1)!.event).toBe("error");
    expect(events.at(-1)!.data.message).toContain("MODEL_NAME");
  });
});

describe("the agent loop", () => {
  it("runs parallel tool calls and answers done: with their results", async () => {
    await setup();
    const { events } = await chat(app, { message: '/call calculator {"expression":"6*7"}\n/call calculator {"expression":"1+1"}' });
    const kinds = events.map((e) => e.event);
    expect(kinds.filter((k) => k === "tool.call")).toHaveLength(2);
    expect(kinds.filter((k) => k === "tool.result")).toHaveLength(2);
    expect(answerText(events)).toBe("done: 42; 2");
  });

  it("runs sequential turns separated by /step and uses /answer", async () => {
    await setup();
    const { events } = await chat(app, { message: '/call calculator {"expression":"1+2"}\n/step\n/call calculator {"expression":"3*3"}\n/answer all done' });
    const results = events.filter((e) => e.event === "tool.result").map((e) => e.data.result);
    expect(results).toEqual(["3", "9"]);
    expect(answerText(events)).toBe("all done");
  });

  it("counts RECURSION_LIMIT as two steps to answer and two per tool turn", async () => {
    await setup({ RECURSION_LIMIT: "8" });
    const { events } = await chat(app, { message: '/loop calculator {"expression":"1+1"}' });
    expect(events.filter((e) => e.event === "tool.call")).toHaveLength(3);
    const end = events.at(-1)!;
    expect(end.event).toBe("message.end");
    expect(end.data.status).toBe("step_limit");
    expect(answerText(events)).toMatch(/continue/);
    expect((await store.getRun(end.data.run_id))!.status).toBe("step_limit");
    expect(await metric('agent_runs_total{status="step_limit"}')).toBe(1);
  });

  it("uses the whole default budget: 24 tool turns at RECURSION_LIMIT 50", async () => {
    await setup();
    const { events } = await chat(app, { message: '/loop calculator {"expression":"2"}' });
    expect(events.filter((e) => e.event === "tool.call")).toHaveLength(24);
    expect(events.at(-1)!.data.status).toBe("step_limit");
  });

  it("lets 'continue' resume with a fresh budget", async () => {
    await setup({ RECURSION_LIMIT: "6" });
    const first = await chat(app, { message: '/call calculator {"expression":"1"}\n/step\n/call calculator {"expression":"2"}\n/step\n/call calculator {"expression":"3"}\n/answer finished', thread_id: "long" });
    expect(first.events.at(-1)!.data.status).toBe("step_limit");
    const next = await chat(app, { message: "continue", thread_id: "long" });
    expect(next.events.at(-1)!.data.status).toBe("ok");
  });

  it("answers a call with invalid JSON arguments with an error result, runs no tool and asks again at most twice", async () => {
    let runs = 0;
    const probe = defineTool({
      name: "probe",
      description: "counts runs",
      parameters: { type: "object" },
      calls: [],
      run: () => String(++runs),
    });
    await setup({}, [probe]);
    const { events } = await chat(app, { message: "/call probe {not json" });
    const calls = events.filter((e) => e.event === "tool.call");
    const results = events.filter((e) => e.event === "tool.result");
    expect(runs).toBe(0);
    expect(calls.every((c) => JSON.stringify(c.data.args) === "{}")).toBe(true);
    expect(results.every((r) => r.data.is_error === true)).toBe(true);
    // the first try and two retries, then the turn counts and the model answers
    expect(calls).toHaveLength(3);
    expect(events.at(-1)!.event).toBe("message.end");
    expect(events.at(-1)!.data.status).toBe("ok");
  });

  it("a call answered without running a tool (no such tool, invalid or unfitting arguments) carries an error_id logged under it, and a text the model can act on", async () => {
    const item = defineTool({
      name: "make_item",
      description: "makes an item",
      parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      calls: [],
      run: () => "made",
    });
    await setup({}, [item]);
    const cases: [message: string, type: string, text: RegExp][] = [
      ["/call no_such_tool {}", "unknown_tool", /^There is no tool named "no_such_tool"\.$/],
      ["/call no_such_tool {not json", "invalid_arguments", /^Invalid tool arguments: /],
      ["/call make_item {not json", "invalid_arguments", /^Invalid tool arguments: /],
      ['/call make_item {"name":5}', "invalid_arguments", /^The arguments do not fit the tool's parameters: /],
    ];
    for (const [message, type, text] of cases) {
      const { events } = await chat(app, { message });
      const result = events.find((e) => e.event === "tool.result")!;
      expect(result.data, message).toMatchObject({ is_error: true, error_id: expect.stringMatching(/^[0-9a-f]{16}$/), result: expect.stringMatching(text) });
      const line = app.logs.find((l) => l.error_id === result.data.error_id);
      expect(line, message).toMatchObject({ level: "WARNING", message: "tool call refused", error_type: type });
      // Never the arguments, nor a name no tool has (the model's own text).
      expect(JSON.stringify(line)).not.toMatch(/not json|no_such_tool/);
      const stored = (await store.getMessages(events[0]!.data.thread_id as string)).find((m) => m.role === "tool");
      expect(stored, message).toMatchObject({ is_error: true, error_id: result.data.error_id });
    }
  });

  it("gives a failed tool an error_id, a generic text outside dev and one WARNING log", async () => {
    const boom = defineTool({
      name: "boom",
      description: "fails",
      parameters: { type: "object" },
      calls: [],
      run: () => {
        throw new Error("secret internals");
      },
    });
    await setup({}, [boom]);
    const { events } = await chat(app, { message: "/call boom {}" });
    const result = events.find((e) => e.event === "tool.result")!;
    expect(result.data.is_error).toBe(true);
    expect(result.data.error_id).toMatch(/^[0-9a-f]{16}$/);
    expect(result.data.result).toBe(`The tool failed. Reference: ${result.data.error_id}.`);
    const warnings = app.logs.filter((l) => l.level === "WARNING");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ error_id: result.data.error_id, tool: "boom", error_type: "Error" });
    expect(app.rawLogs.join("\n")).not.toContain("secret internals");
    const stored = (await store.getMessages(events[0]!.data.thread_id)).find((m) => m.role === "tool")!;
    expect(stored).toMatchObject({ is_error: true, error_id: result.data.error_id });
  });

  it("shows the failed tool's error under dev", async () => {
    const boom = defineTool({ name: "boom", description: "fails", parameters: { type: "object" }, calls: [], run: () => { throw new Error("visible in dev"); } });
    await setup({ APP_ENV: "dev" }, [boom]);
    const { events } = await chat(app, { message: "/call boom {}" });
    expect(events.find((e) => e.event === "tool.result")!.data.result).toContain("visible in dev");
  });

  it("replaces a lone surrogate in a tool result with U+FFFD and goes on", async () => {
    const odd = defineTool({ name: "odd", description: "odd text", parameters: { type: "object" }, calls: [], run: () => "a\ud800b" });
    await setup({}, [odd]);
    const { events } = await chat(app, { message: "/call odd {}" });
    expect(events.find((e) => e.event === "tool.result")!.data.result).toBe("a\ufffdb");
    expect(answerText(events)).toBe("done: a\ufffdb");
  });

  it("answers a tool call left open by a stop with an error result before the next run", async () => {
    const slow = defineTool({
      name: "slow",
      description: "waits",
      parameters: { type: "object" },
      calls: [],
      run: (_args, ctx) => new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(new Error("aborted")))),
    });
    await setup({}, [slow]);
    const res = await app.fetch(post("/chat", { message: "/call slow {}", thread_id: "open" }));
    const { reader } = await readUntil(res, (ev) => ev.some((e) => e.event === "tool.call"));
    await reader.cancel();
    await waitFor(async () => (await metric("agent_active_runs")) === 0);
    let messages = await store.getMessages("open");
    expect(messages.at(-1)).toMatchObject({ role: "assistant" });
    await chat(app, { message: "again", thread_id: "open" });
    messages = await store.getMessages("open");
    const call = messages.find((m) => m.role === "assistant" && m.tool_calls?.length)!;
    const answer = messages.find((m) => m.role === "tool")!;
    expect(answer).toMatchObject({ tool_call_id: (call as unknown as { tool_calls: { id: string }[] }).tool_calls[0]!.id, is_error: true, error_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(messages.indexOf(answer)).toBe(messages.indexOf(call) + 1);
    // Its error id leads to a log line, as every failed result's does (spec 2.2).
    expect(app.logs.some((l) => l.error_id === (answer as { error_id?: string }).error_id && l.level === "WARNING")).toBe(true);
  });

  it("checks arguments against the tool's parameters", async () => {
    await setup();
    const { events } = await chat(app, { message: '/call calculator {"expression": 5}' });
    const result = events.find((e) => e.event === "tool.result")!;
    expect(result.data.is_error).toBe(true);
    expect(result.data.result).toMatch(/parameters/);
  });
});

describe("deep but legal tool arguments", () => {
  it("are refused before they are stored: the run answers, later runs and reading the thread work", async () => {
    const deep = `${"[".repeat(4500)}1${"]".repeat(4500)}`;
    const a = await makeApp();
    try {
      const first = await chat(a, { message: `/call calculator {"expression":${deep}}`, thread_id: "deep" });
      expect(first.res.status).toBe(200);
      expect(first.events.at(-1)!.event).toBe("message.end");
      const results = first.events.filter((e) => e.event === "tool.result");
      expect(results.length).toBeGreaterThan(0);
      for (const r of results) expect(r.data).toMatchObject({ is_error: true, result: expect.stringContaining("at most 64 levels") });
      const next = await chat(a, { message: "still there?", thread_id: "deep" });
      expect(next.events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      const messages = await a.fetch(get("/threads/deep/messages"));
      expect(messages.status).toBe(200);
      const stored = (await messages.json()) as { role: string; tool_calls?: { args: unknown }[] }[];
      // The call is kept without its arguments: nothing that deep is stored.
      for (const m of stored.filter((x) => x.role === "assistant" && x.tool_calls)) expect(m.tool_calls!.map((c) => c.args)).toEqual([{}]);
    } finally {
      await a.close();
    }
  });
});

describe("SSE recursion_limit (spec 7.2)", () => {
  it("a run at its step limit whose closing reply cannot be written ends with the recursion_limit error", async () => {
    const store = createMemoryStore();
    const failing: Store = { ...store, finishRun: async () => Promise.reject(new Error("disk full")) };
    const a = await makeApp({ RECURSION_LIMIT: "6" }, { store: failing });
    try {
      const { events } = await chat(a, { message: '/loop calculator {"expression":"1+1"}' });
      expect(events.at(-1)).toMatchObject({ event: "error", data: { code: "recursion_limit" } });
      expect(events.map((e) => e.event)).not.toContain("message.end");
      const runId = events[0]!.data.run_id as string;
      await waitFor(async () => (await store.getRun(runId))?.status === "step_limit");
      expect(a.logs.some((l) => l.error_id === events.at(-1)!.data.error_id && /disk full/.test(String(l.detail)))).toBe(true);
    } finally {
      await a.close();
    }
  });
});
