/**
 * The history budget (MAX_HISTORY_TOKENS, issue 20) end to end: a real OpenAI client against a
 * loopback OpenAI-compatible server that records what the model is sent, over a thread of 300
 * turns of 32,000 characters with tool calls among them. A turn late in the thread costs what a
 * turn early in it costs (messages, characters, input tokens, messages read from the store), the
 * window always starts at a user message with every tool result beside its call, and the system
 * prompt says when earlier turns are left out.
 */
import { afterAll, describe, expect, it } from "vitest";
import { HISTORY_CUT_NOTE } from "../../src/agent/history.js";
import type { Model, ModelRequest } from "../../src/agent/model.js";
import { createFakeModel } from "../../src/agent/providers/fake.js";
import { defineTool } from "../../src/index.js";
import { createMemoryLease } from "../../src/store/memory/lease.js";
import { createMemoryStore } from "../../src/store/memory/store.js";
import type { Store } from "../../src/store/ports.js";
import { chat, makeApp, parseSse, post } from "../helpers.js";
import { loopbackUpstream, sse } from "../providers/support.js";
import { createOrder, ordersPolicy } from "../support/orders.js";
import { scratchDatabase, TEST_DSN } from "../support/postgres.js";

const model = loopbackUpstream({ basePath: "/v1" });

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** Answers in a line; a message that asks for the tool gets one call first, then its answer. */
function answer(body: { messages: { role: string; content: string | null }[] }, res: Parameters<typeof sse>[0]): void {
  const last = body.messages.at(-1)!;
  if (last.role === "user" && String(last.content).startsWith("use the tool")) {
    return sse(res, [chunk({ role: "assistant", tool_calls: [{ index: 0, id: `call-${body.messages.length}`, type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }] }), chunk({}, "tool_calls"), "data: [DONE]\n\n"]);
  }
  sse(res, [chunk({ role: "assistant", content: "noted" }), chunk({}, "stop"), "data: [DONE]\n\n"]);
}

const lookup = defineTool({
  name: "lookup",
  description: "Looks something up.",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  calls: [],
  run: async () => "found it",
});

/** A memory store that counts the messages each read hands back. */
function countingStore(): { store: Store; read: () => number } {
  const base = createMemoryStore();
  let read = 0;
  const store: Store = {
    ...base,
    getMessages: async (id) => {
      const all = await base.getMessages(id);
      read += all.length;
      return all;
    },
    getMessagePage: async (id, page) => {
      const got = await base.getMessagePage(id, page);
      read += got?.length ?? 0;
      return got;
    },
  };
  return { store, read: () => read };
}

describe("the history budget", () => {
  it("a 300-turn thread costs per turn what a 30-turn one does; windows start at a turn and keep calls with their results", async () => {
    model.handler = (req, res) => answer(req.body, res);
    const { store, read } = countingStore();
    const app = await makeApp(
      { MODEL_PROVIDER: "openai-compatible", MODEL_NAME: "m", MODEL_API_KEY: "k", OPENAI_BASE_URL: model.baseURL, MODEL_MAX_RETRIES: "0", MAX_HISTORY_TOKENS: "40000" },
      { tools: [lookup], storage: async (_s, { clock }) => ({ store, lease: createMemoryLease(clock) }) },
    );
    try {
      const big = "x".repeat(31_980);
      const costs: { messages: number; chars: number; read: number; input: number; cut: boolean }[] = [];
      for (let turn = 1; turn <= 300; turn++) {
        const before = { requests: model.requests.length, read: read() };
        // Every fifth turn asks for the tool: its call and result sit between the user message and the answer.
        const message = turn % 5 === 0 ? `use the tool ${turn}` : `${turn} ${big}`;
        const res = await app.fetch(post("/chat", { message, thread_id: "long" }));
        const end = parseSse(await res.text()).at(-1)!;
        expect(end, `turn ${turn}`).toMatchObject({ event: "message.end", data: { status: "ok" } });
        const sent = model.requests.slice(before.requests);
        const first = sent[0]!.body as { messages: { role: string; content: string | null; tool_calls?: { id: string }[]; tool_call_id?: string }[] };
        const [system, ...history] = first.messages;
        // The window starts at a user message, and every tool result follows its call.
        expect(history[0]!.role, `turn ${turn}`).toBe("user");
        const called = new Set<string>();
        for (const m of history) {
          for (const c of m.tool_calls ?? []) called.add(c.id);
          if (m.role === "tool") expect(called.has(m.tool_call_id!), `turn ${turn}`).toBe(true);
        }
        costs.push({
          messages: history.length,
          chars: history.reduce((n, m) => n + String(m.content ?? "").length, 0),
          read: read() - before.read,
          input: end.data.usage?.input_tokens ?? 0,
          cut: String(system!.content).includes("Earlier turns of this conversation are not shown here."),
        });
      }
      // Early turns fit whole and say nothing; from the budget on, older turns are left out and the prompt says so.
      expect(costs[0]!.cut).toBe(false);
      expect(costs[1]!.cut).toBe(false);
      expect(costs[29]!.cut).toBe(true);
      expect(costs[299]!.cut).toBe(true);
      // Turn 300 against turn 30 (both plain turns, the same distance from a tool turn): the same cost.
      const at = (turn: number) => costs[turn - 1]!;
      expect(at(299).messages).toBe(at(29).messages);
      // (The turn numbers in the messages are a digit longer.)
      expect(Math.abs(at(299).chars - at(29).chars)).toBeLessThanOrEqual(10);
      expect(at(299).input).toBeLessThanOrEqual(at(29).input * 1.1);
      // The store read grows with the budget, not with the thread: bounded, and turn 300 reads no more than turn 30.
      expect(at(299).read).toBeLessThanOrEqual(Math.max(at(29).read, 64));
      expect(Math.max(...costs.map((c) => c.chars))).toBeLessThan(40_000 * 4 + 32_000);
      // The whole thread is still there to read.
      expect((await store.getMessages("long")).length).toBeGreaterThan(600);
    } finally {
      await app.close();
    }
  });

  it("the current turn is sent whole even when it alone is over the budget", async () => {
    model.handler = (req, res) => answer(req.body, res);
    const app = await makeApp({ MODEL_PROVIDER: "openai-compatible", MODEL_NAME: "m", MODEL_API_KEY: "k", OPENAI_BASE_URL: model.baseURL, MODEL_MAX_RETRIES: "0", MAX_HISTORY_TOKENS: "100" });
    try {
      await app.fetch(post("/chat", { message: "first words", thread_id: "small" })).then((r) => r.text());
      const long = "y".repeat(2_000);
      await app.fetch(post("/chat", { message: long, thread_id: "small" })).then((r) => r.text());
      const last = model.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
      expect(last.messages.slice(1)).toEqual([{ role: "user", content: long }]);
      expect(last.messages[0]!.content).toContain("Earlier turns of this conversation are not shown here.");
    } finally {
      await app.close();
    }
  });
});

/** The fake model, recording what each turn is sent (the run goes on appending to its messages, so they are copied). */
function recordingFake(): { model: Model; sent: Pick<ModelRequest, "system" | "messages">[] } {
  const fake = createFakeModel();
  const sent: Pick<ModelRequest, "system" | "messages">[] = [];
  return { sent, model: { ...fake, stream: (request) => (sent.push({ system: request.system, messages: [...request.messages] }), fake.stream(request)) } };
}

/** Sends `message` on `thread`, checks its run waits on a decision, rejects it and checks the resumed run ends ok. */
async function holdThenReject(app: Awaited<ReturnType<typeof makeApp>>, thread: string, message: string): Promise<void> {
  const { events } = await chat(app, { message, thread_id: thread });
  const end = events.at(-1)!.data as { status: string; approval: { approval_id: string } };
  expect(end.status).toBe("awaiting_approval");
  const res = await app.fetch(post(`/threads/${thread}/approvals/${end.approval.approval_id}`, { decision: "reject" }));
  expect(parseSse(await res.text()).at(-1)!.data.status).toBe("ok");
}

/** A lookup whose result is about 400 estimated tokens: a turn that calls it grows past a small budget. */
const bigLookup = defineTool({
  name: "big_lookup",
  description: "Looks up a lot.",
  parameters: { type: "object", properties: {} },
  calls: [],
  run: async () => "r".repeat(1_600),
});

/** An app whose gated create_order waits on a decision, with the recording fake model (on PostgreSQL with `sqlSchema`). */
async function gatedApp(env: Record<string, string>, sqlSchema?: string) {
  const { model, sent } = recordingFake();
  const app = await makeApp(
    { ORDERS_URL: "http://127.0.0.1:9", ...env, ...(sqlSchema ? { CHECKPOINTER: "sql", SQLDB_DSN: TEST_DSN } : {}) },
    { model, policyText: ordersPolicy(), tools: [lookup, bigLookup, createOrder], ...(sqlSchema ? { sqlSchema } : {}) },
  );
  return { app, sent };
}

const pg = scratchDatabase();
afterAll(() => pg.cleanup());

describe("the history budget's edges", () => {
  it("counts characters as code points: a turn of emoji that fits is sent, and no note says otherwise", async () => {
    const { model, sent } = recordingFake();
    const app = await makeApp({ MAX_HISTORY_TOKENS: "250" }, { model });
    try {
      // 300 emoji and their echo: 160 estimated tokens as code points, 310 if counted in UTF-16 units (over the budget).
      await chat(app, { message: "😀".repeat(300), thread_id: "emoji" });
      await chat(app, { message: "hi", thread_id: "emoji" });
      const last = sent.at(-1)!;
      expect(last.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(last.system).not.toContain(HISTORY_CUT_NOTE);
    } finally {
      await app.close();
    }
  });

  it("a run resumed after an approval is sent the older turns its turn started with, however far the turn grew", async () => {
    const { app, sent } = await gatedApp({ MAX_HISTORY_TOKENS: "300" });
    try {
      // An older turn of about 215 estimated tokens: it fits beside a new turn's short message.
      const older = `older ${"a".repeat(400)}`;
      await chat(app, { message: older, thread_id: "grown" });
      // The turn's first step fetches about 400 tokens (now over the budget with the older turn), its second waits on a decision.
      const before = sent.length;
      await holdThenReject(app, "grown", '/call big_lookup {}\n/step\n/call create_order {"item":"book"}');
      const [first, second, resumed] = sent.slice(before);
      expect(sent.length - before).toBe(3);
      // Chosen as the turn started: the older turn, at each step of the run and in the run resumed after the decision.
      for (const step of [first!, second!, resumed!]) {
        expect(step.messages[0]).toMatchObject({ role: "user", content: older });
        expect(step.system).not.toContain(HISTORY_CUT_NOTE);
      }
      expect(resumed!.messages.slice(0, 3)).toEqual(first!.messages.slice(0, 3));
      // Its turn is sent whole: the big result, the rejected call and its result.
      expect(resumed!.messages.slice(2).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
      // The next turn chooses again: the older turn no longer fits beside the grown one.
      await chat(app, { message: "and now?", thread_id: "grown" });
      expect(sent.at(-1)!.messages.map((m) => m.content)).not.toContain(older);
      expect(sent.at(-1)!.system).toContain(HISTORY_CUT_NOTE);
    } finally {
      await app.close();
    }
  });

  for (const store of ["memory", "PostgreSQL"] as const) {
    it(`a resumed run reads as far back as its turn's start chose, past the first page (64 messages; ${store})`, async () => {
      const { app, sent } = await gatedApp({ MAX_HISTORY_TOKENS: "600" }, store === "PostgreSQL" ? pg.fresh() : undefined);
      try {
        // 70 short turns: at the next turn's start about 50 of them fit, over 64 messages.
        for (let i = 0; i < 70; i++) await chat(app, { message: `t${i}`, thread_id: "paged" });
        const before = sent.length;
        await holdThenReject(app, "paged", '/call big_lookup {}\n/step\n/call create_order {"item":"book"}');
        const [first, , resumed] = sent.slice(before);
        const olderOf = (step: { messages: readonly { role: string; content: string }[] }) => step.messages.slice(0, step.messages.findLastIndex((m) => m.role === "user"));
        expect(olderOf(first!).length).toBeGreaterThan(64);
        expect(olderOf(resumed!)).toEqual(olderOf(first!));
        expect(resumed!.system).toBe(first!.system);
      } finally {
        await app.close();
      }
    });
  }

  it("a run resumed on a thread of exactly one first page (64 messages) sends it whole without the note", async () => {
    const { app, sent } = await gatedApp({ MAX_HISTORY_TOKENS: "100", RECURSION_LIMIT: "100" });
    try {
      // One turn: the user message, 31 lookups with their results, then the held call: 64 messages.
      await holdThenReject(app, "page", `${'/call lookup {"q":"x"}\n/step\n'.repeat(31)}/call create_order {"item":"book"}`);
      const resumed = sent.at(-1)!;
      // The stored turn plus the rejected call's result: the whole thread, so no note.
      expect(resumed.messages).toHaveLength(65);
      expect(resumed.messages[0]!.role).toBe("user");
      expect(resumed.system).not.toContain(HISTORY_CUT_NOTE);
    } finally {
      await app.close();
    }
  });

  it("continue after the step limit is sent with the stopped turn, even when that turn is over the budget", async () => {
    const { model, sent } = recordingFake();
    const app = await makeApp({ MAX_HISTORY_TOKENS: "100", RECURSION_LIMIT: "6" }, { model, tools: [lookup] });
    try {
      const work = `/loop lookup {"q":"x"}\n${"z".repeat(600)}`;
      const first = await chat(app, { message: work, thread_id: "steps" });
      expect(first.events.at(-1)!.data.status).toBe("step_limit");
      await chat(app, { message: "continue", thread_id: "steps" });
      const resumed = sent.at(-1)!;
      expect(resumed.messages[0]).toMatchObject({ role: "user", content: work });
      expect(resumed.messages.at(-1)).toMatchObject({ role: "user", content: "continue" });
      // Turns before the stopped one are still left out by the budget.
      await chat(app, { message: "and then", thread_id: "steps" });
      expect(sent.at(-1)!.messages.map((m) => m.content)).not.toContain(work);
    } finally {
      await app.close();
    }
  });

  it("a run resumed after a stopped turn longer than the first page read (64 messages) is sent that turn from its start", async () => {
    const { app, sent } = await gatedApp({ MAX_HISTORY_TOKENS: "100", RECURSION_LIMIT: "100" });
    try {
      const work = `/loop lookup {"q":"y"}\n${"w".repeat(600)}`;
      const stopped = await chat(app, { message: work, thread_id: "many-steps" });
      expect(stopped.events.at(-1)!.data.status).toBe("step_limit");
      expect(stopped.events.filter((e) => e.event === "tool.call").length).toBeGreaterThan(40);
      // The turn after it (its continue) waits on a decision; the rejection resumes it.
      await holdThenReject(app, "many-steps", '/call create_order {"item":"book"}');
      const resumed = sent.at(-1)!;
      expect(resumed.messages[0]).toMatchObject({ role: "user", content: work });
      expect(resumed.messages.length).toBeGreaterThan(65);
    } finally {
      await app.close();
    }
  });

  it("a resumed turn of exactly one first page (64 messages) after a stopped turn is sent with it", async () => {
    const { app, sent } = await gatedApp({ MAX_HISTORY_TOKENS: "100", RECURSION_LIMIT: "100" });
    try {
      const work = `/loop lookup {"q":"y"}\nwork`;
      expect((await chat(app, { message: work, thread_id: "edge" })).events.at(-1)!.data.status).toBe("step_limit");
      await holdThenReject(app, "edge", `${'/call lookup {"q":"x"}\n/step\n'.repeat(31)}/call create_order {"item":"book"}`);
      expect(sent.at(-1)!.messages[0]).toMatchObject({ role: "user", content: work });
    } finally {
      await app.close();
    }
  });
});
